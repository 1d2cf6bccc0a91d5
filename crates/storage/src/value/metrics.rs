//! The transformations of stored values, with kube-apiserver's metric names
//! (`value/metrics.go`): `apiserver_storage_transformation_operations_total` and
//! `apiserver_storage_transformation_duration_seconds`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

/// Buckets of the duration histogram: kube's `ExponentialBuckets(5e-6, 2, 25)`.
const BUCKETS: usize = 25;

fn bucket_bound(i: usize) -> f64 {
    5e-6 * f64::powi(2.0, i as i32)
}

/// Which way a value was transformed (the `transformation_type` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Direction {
    /// Read: `from_storage`.
    FromStorage,
    /// Written: `to_storage`.
    ToStorage,
}

impl Direction {
    fn label(self) -> &'static str {
        match self {
            Direction::FromStorage => "from_storage",
            Direction::ToStorage => "to_storage",
        }
    }
}

#[derive(Debug, Default)]
struct Latency {
    buckets: [u64; BUCKETS],
    count: u64,
    sum: f64,
}

#[derive(Debug, Default)]
struct Series {
    /// Operations by status (`OK`, or `unknown-non-grpc` for a failure, as kube labels errors
    /// that are not a KMS plugin's gRPC status).
    operations: BTreeMap<&'static str, u64>,
    /// Latencies of the successful ones.
    latency: Latency,
}

/// Counts of value transformations by direction and transformer prefix; cloned handles share
/// them.
#[derive(Clone, Debug, Default)]
pub struct TransformationMetrics {
    series: Arc<Mutex<BTreeMap<(Direction, String), Series>>>,
}

impl TransformationMetrics {
    /// Records one transformation by the transformer of `prefix` (`identity` for the identity
    /// provider, `unknown` when no prefix matched), as `RecordTransformation`.
    pub fn record(&self, direction: Direction, prefix: &str, elapsed: Duration, ok: bool) {
        let mut series = self.series.lock();
        let s = series.entry((direction, prefix.to_string())).or_default();
        *s.operations
            .entry(if ok { "OK" } else { "unknown-non-grpc" })
            .or_default() += 1;
        if ok {
            let seconds = elapsed.as_secs_f64();
            for (i, bucket) in s.latency.buckets.iter_mut().enumerate() {
                if seconds <= bucket_bound(i) {
                    *bucket += 1;
                }
            }
            s.latency.count += 1;
            s.latency.sum += seconds;
        }
    }

    /// How many transformations of `direction` by `prefix` ended with `status`.
    pub fn operations(&self, direction: Direction, prefix: &str, status: &str) -> u64 {
        self.series
            .lock()
            .get(&(direction, prefix.to_string()))
            .and_then(|s| s.operations.get(status).copied())
            .unwrap_or(0)
    }

    /// Both metrics in the Prometheus text format, appended to `out` (nothing when no value was
    /// transformed, as kube's series appear with their first observation).
    pub fn encode(&self, out: &mut String) {
        let series = self.series.lock();
        if series.is_empty() {
            return;
        }
        out.push_str(
            "# HELP apiserver_storage_transformation_duration_seconds [ALPHA] Latencies in seconds of value transformation operations.\n\
             # TYPE apiserver_storage_transformation_duration_seconds histogram\n",
        );
        for ((direction, prefix), s) in series.iter().filter(|(_, s)| s.latency.count > 0) {
            let labels = format!(
                "transformation_type=\"{}\",transformer_prefix=\"{}\"",
                direction.label(),
                escape(prefix)
            );
            for (i, n) in s.latency.buckets.iter().enumerate() {
                let _ = writeln!(
                    out,
                    "apiserver_storage_transformation_duration_seconds_bucket{{{labels},le=\"{}\"}} {n}",
                    bucket_bound(i)
                );
            }
            let _ = writeln!(
                out,
                "apiserver_storage_transformation_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}\n\
                 apiserver_storage_transformation_duration_seconds_sum{{{labels}}} {}\n\
                 apiserver_storage_transformation_duration_seconds_count{{{labels}}} {}",
                s.latency.count, s.latency.sum, s.latency.count
            );
        }
        out.push_str(
            "# HELP apiserver_storage_transformation_operations_total [ALPHA] Total number of transformations.\n\
             # TYPE apiserver_storage_transformation_operations_total counter\n",
        );
        for ((direction, prefix), s) in series.iter() {
            for (status, n) in &s.operations {
                let _ = writeln!(
                    out,
                    "apiserver_storage_transformation_operations_total{{status=\"{status}\",transformation_type=\"{}\",transformer_prefix=\"{}\"}} {n}",
                    direction.label(),
                    escape(prefix)
                );
            }
        }
    }
}

/// A label value in the text format: backslash, quote and newline escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_counted_by_direction_prefix_and_status() {
        let m = TransformationMetrics::default();
        let mut out = String::new();
        m.encode(&mut out);
        assert!(out.is_empty());
        m.record(
            Direction::ToStorage,
            "k8s:enc:aescbc:v1:",
            Duration::from_micros(20),
            true,
        );
        m.record(Direction::FromStorage, "unknown", Duration::ZERO, false);
        m.encode(&mut out);
        assert!(out.contains(
            "apiserver_storage_transformation_operations_total{status=\"OK\",transformation_type=\"to_storage\",transformer_prefix=\"k8s:enc:aescbc:v1:\"} 1"
        ));
        assert!(out.contains(
            "apiserver_storage_transformation_operations_total{status=\"unknown-non-grpc\",transformation_type=\"from_storage\",transformer_prefix=\"unknown\"} 1"
        ));
        assert!(out.contains(
            "apiserver_storage_transformation_duration_seconds_bucket{transformation_type=\"to_storage\",transformer_prefix=\"k8s:enc:aescbc:v1:\",le=\"0.00004\"} 1"
        ));
        assert!(!out.contains("duration_seconds_count{transformation_type=\"from_storage\""));
    }
}
