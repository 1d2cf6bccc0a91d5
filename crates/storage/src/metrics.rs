//! The store's requests to its backend, with kube-apiserver's metric names
//! (`staging/src/k8s.io/apiserver/pkg/storage/etcd3/metrics/metrics.go`):
//! `etcd_request_duration_seconds`, `etcd_requests_total` and `etcd_request_errors_total` by
//! operation, group and resource, on either backend.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use parking_lot::Mutex;

/// Upper bounds of `apiserver_request_duration_seconds`' buckets, as kube's.
pub const DURATION_BUCKETS: [f64; 23] = [
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0,
    10.0, 15.0, 20.0, 30.0, 45.0, 60.0,
];

/// Observations of one duration series.
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    /// Observations at or under each bound.
    pub buckets: [u64; DURATION_BUCKETS.len()],
    /// Observations.
    pub count: u64,
    /// Their sum, in seconds.
    pub sum: f64,
}

impl Histogram {
    /// Counts one observation.
    pub fn observe(&mut self, seconds: f64) {
        for (bucket, bound) in self.buckets.iter_mut().zip(DURATION_BUCKETS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
        self.count += 1;
        self.sum += seconds;
    }
}

/// Labels of the storage request series: operation (`create`, `update`, `delete`, `get`), group
/// (empty for the core group) and resource.
type StorageRequestLabels = (&'static str, String, String);

/// One storage request series: its latencies, and how many of its requests failed.
#[derive(Clone, Debug, Default)]
struct StorageRequestSeries {
    latency: Histogram,
    errors: u64,
}

/// The store's requests to its backend, as kube-apiserver's `etcd_request_duration_seconds`,
/// `etcd_requests_total` and `etcd_request_errors_total` count its requests to etcd (the names
/// are kube's for either backend); cloned handles share them.
#[derive(Clone, Debug, Default)]
pub struct StorageRequestMetrics {
    series: Arc<Mutex<BTreeMap<StorageRequestLabels, StorageRequestSeries>>>,
}

impl StorageRequestMetrics {
    /// Records one request of `operation` on the object under storage `key`
    /// (`/{group or core}/{resource}/…`), how long it took and whether it failed.
    pub fn record(
        &self,
        operation: &'static str,
        key: &str,
        elapsed: std::time::Duration,
        failed: bool,
    ) {
        let (group, resource) = group_resource_of_key(key);
        let mut series = self.series.lock();
        let entry = series
            .entry((operation, group.to_string(), resource.to_string()))
            .or_default();
        entry.latency.observe(elapsed.as_secs_f64());
        if failed {
            entry.errors += 1;
        }
    }

    /// The three metrics in the Prometheus text format, appended to `out`.
    pub fn encode(&self, out: &mut String) {
        let series = self.series.lock();
        out.push_str(
            "# HELP etcd_request_duration_seconds [ALPHA] Etcd request latency in seconds for each operation and object type.\n\
             # TYPE etcd_request_duration_seconds histogram\n",
        );
        for ((op, group, resource), s) in series.iter() {
            let labels = format!("group=\"{group}\",operation=\"{op}\",resource=\"{resource}\"");
            for (n, bound) in s.latency.buckets.iter().zip(DURATION_BUCKETS) {
                let _ = writeln!(
                    out,
                    "etcd_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "etcd_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}\n\
                 etcd_request_duration_seconds_sum{{{labels}}} {}\n\
                 etcd_request_duration_seconds_count{{{labels}}} {}",
                s.latency.count, s.latency.sum, s.latency.count
            );
        }
        out.push_str(
            "# HELP etcd_requests_total [ALPHA] Etcd request counts for each operation and object type.\n\
             # TYPE etcd_requests_total counter\n",
        );
        for ((op, group, resource), s) in series.iter() {
            let _ = writeln!(
                out,
                "etcd_requests_total{{group=\"{group}\",operation=\"{op}\",resource=\"{resource}\"}} {}",
                s.latency.count
            );
        }
        out.push_str(
            "# HELP etcd_request_errors_total [ALPHA] Etcd failed request counts for each operation and object type.\n\
             # TYPE etcd_request_errors_total counter\n",
        );
        for ((op, group, resource), s) in series.iter().filter(|(_, s)| s.errors > 0) {
            let _ = writeln!(
                out,
                "etcd_request_errors_total{{group=\"{group}\",operation=\"{op}\",resource=\"{resource}\"}} {}",
                s.errors
            );
        }
    }
}

/// The group (empty for `core`) and resource of a storage key `/{group}/{resource}/…`.
fn group_resource_of_key(key: &str) -> (&str, &str) {
    let mut segments = key.trim_start_matches('/').split('/');
    let group = segments.next().unwrap_or_default();
    let resource = segments.next().unwrap_or_default();
    (if group == "core" { "" } else { group }, resource)
}
