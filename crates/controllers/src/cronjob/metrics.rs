//! The CronJob controller's Prometheus metric, named as kube's (`pkg/controller/cronjob/metrics`),
//! in the process-wide registry.

use std::sync::OnceLock;

use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

/// `cronjob_controller_job_creation_skew_duration_seconds`: time between when a CronJob is
/// scheduled to run and when its Job is created (buckets 1 s doubling, ten of them, as kube's).
pub fn job_creation_skew() -> &'static Histogram {
    static METRIC: OnceLock<Histogram> = OnceLock::new();
    METRIC.get_or_init(|| {
        rkcm_runtime::metrics::register(
            "cronjob_controller_job_creation_skew_duration_seconds",
            "Time between when a cronjob is scheduled to be run, and when the corresponding job is created",
            Histogram::new(exponential_buckets(1.0, 2.0, 10)),
        )
    })
}
