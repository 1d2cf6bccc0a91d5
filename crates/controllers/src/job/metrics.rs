//! The Job controller's Prometheus metrics, named as kube's `job_controller_*` (pkg/controller/job/metrics),
//! in the process-wide registry.

use std::sync::OnceLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

/// What a sync did, the `action` label (`JobSyncActionReconciling`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncAction {
    /// Nothing beyond reconciling the status.
    Reconciling,
    /// Pods were counted; none created or deleted.
    Tracking,
    /// Pods were created.
    PodsCreated,
    /// Pods were deleted.
    PodsDeleted,
}

impl SyncAction {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            SyncAction::Reconciling => "reconciling",
            SyncAction::Tracking => "tracking",
            SyncAction::PodsCreated => "pods_created",
            SyncAction::PodsDeleted => "pods_deleted",
        }
    }
}

/// Labels of the sync metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SyncLabels {
    /// `NonIndexed` or `Indexed`.
    pub completion_mode: String,
    /// `success` or `error`.
    pub result: String,
    /// [`SyncAction::as_str`].
    pub action: String,
}

/// Labels of `job_controller_jobs_finished_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FinishedLabels {
    /// `NonIndexed` or `Indexed`.
    pub completion_mode: String,
    /// `succeeded` or `failed`.
    pub result: String,
    /// The reason of the `Failed` condition; empty for success.
    pub reason: String,
}

/// Labels of `job_controller_job_pods_finished_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PodsFinishedLabels {
    /// `NonIndexed` or `Indexed`.
    pub completion_mode: String,
    /// `succeeded` or `failed`.
    pub result: String,
}

/// Labels of `job_controller_pod_failures_handled_by_failure_policy_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ActionLabels {
    /// The rule's action.
    pub action: String,
}

/// Histogram of sync durations.
type DurationFamily = Family<SyncLabels, Histogram, fn() -> Histogram>;

/// The Job controller's metrics.
#[derive(Clone, Debug)]
pub struct Metrics {
    /// `job_controller_job_sync_duration_seconds`.
    pub sync_duration: DurationFamily,
    /// `job_controller_job_syncs_total`.
    pub syncs: Family<SyncLabels, Counter>,
    /// `job_controller_jobs_finished_total`.
    pub jobs_finished: Family<FinishedLabels, Counter>,
    /// `job_controller_job_pods_finished_total`.
    pub pods_finished: Family<PodsFinishedLabels, Counter>,
    /// `job_controller_pod_failures_handled_by_failure_policy_total`.
    pub failure_policy_actions: Family<ActionLabels, Counter>,
}

fn sync_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.004, 2.0, 15))
}

/// The metrics, registered on first use.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| {
        use rkcm_runtime::metrics::register;
        Metrics {
            sync_duration: register(
                "job_controller_job_sync_duration_seconds",
                "The time it took to sync a job",
                Family::new_with_constructor(sync_histogram as fn() -> Histogram),
            ),
            syncs: register(
                "job_controller_job_syncs",
                "The number of job syncs",
                Family::default(),
            ),
            jobs_finished: register(
                "job_controller_jobs_finished",
                "The number of finished jobs",
                Family::default(),
            ),
            pods_finished: register(
                "job_controller_job_pods_finished",
                "The number of finished Pods that are fully tracked",
                Family::default(),
            ),
            failure_policy_actions: register(
                "job_controller_pod_failures_handled_by_failure_policy",
                "The number of failed Pods handled by failure policy with respect to the failure policy action applied based on the matched rule",
                Family::default(),
            ),
        }
    })
}

/// Records one sync.
pub fn record_sync(completion_mode: &str, ok: bool, action: SyncAction, seconds: f64) {
    let labels = SyncLabels {
        completion_mode: completion_mode.to_string(),
        result: if ok { "success" } else { "error" }.to_string(),
        action: action.as_str().to_string(),
    };
    let m = metrics();
    m.sync_duration.get_or_create(&labels).observe(seconds);
    m.syncs.get_or_create(&labels).inc();
}

/// Records pods newly counted as succeeded or failed.
pub fn record_pods_finished(completion_mode: &str, succeeded: u64, failed: u64) {
    for (result, n) in [("succeeded", succeeded), ("failed", failed)] {
        if n > 0 {
            let labels = PodsFinishedLabels {
                completion_mode: completion_mode.to_string(),
                result: result.to_string(),
            };
            metrics().pods_finished.get_or_create(&labels).inc_by(n);
        }
    }
}

/// Records a finished Job; `failed_reason` is `None` for success.
pub fn record_job_finished(completion_mode: &str, failed_reason: Option<&str>) {
    let labels = FinishedLabels {
        completion_mode: completion_mode.to_string(),
        result: if failed_reason.is_some() {
            "failed"
        } else {
            "succeeded"
        }
        .to_string(),
        reason: failed_reason.unwrap_or("").to_string(),
    };
    metrics().jobs_finished.get_or_create(&labels).inc();
}

/// Records a failed pod handled by a pod failure policy rule with `action`.
pub fn record_failure_policy_action(action: &str) {
    let labels = ActionLabels {
        action: action.to_string(),
    };
    metrics()
        .failure_policy_actions
        .get_or_create(&labels)
        .inc();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_are_encoded_with_kube_names() {
        record_sync("Indexed", true, SyncAction::PodsCreated, 0.01);
        record_job_finished("NonIndexed", Some("BackoffLimitExceeded"));
        record_pods_finished("NonIndexed", 2, 0);
        record_failure_policy_action("Ignore");
        let text = rkcm_runtime::metrics::encode_text();
        for needle in [
            "job_controller_job_syncs_total{completion_mode=\"Indexed\",result=\"success\",action=\"pods_created\"}",
            "job_controller_job_sync_duration_seconds_bucket",
            "job_controller_jobs_finished_total{completion_mode=\"NonIndexed\",result=\"failed\",reason=\"BackoffLimitExceeded\"}",
            "job_controller_job_pods_finished_total{completion_mode=\"NonIndexed\",result=\"succeeded\"}",
            "job_controller_pod_failures_handled_by_failure_policy_total{action=\"Ignore\"}",
        ] {
            assert!(text.contains(needle), "missing {needle} in\n{text}");
        }
    }
}
