//! `apiserver_crd_conversion_webhook_duration_seconds` by `crd_name`, `from_version`,
//! `to_version` and `succeeded`: how long the conversion webhooks of CRDs took
//! (`staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/conversion/metrics.go`).
//!
//! Process-wide, as kube registers it in its legacy registry: every API server of the process
//! reports the same series.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use parking_lot::Mutex;

/// kube's `ExponentialBuckets(0.001, 2, 15)`.
const BUCKETS: [f64; 15] = [
    0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.512, 1.024, 2.048, 4.096,
    8.192, 16.384,
];

#[derive(Clone, Debug, Default)]
struct Histogram {
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// crd_name, from_version, to_version, succeeded.
type Labels = (String, String, String, bool);

static SERIES: Mutex<BTreeMap<Labels, Histogram>> = Mutex::new(BTreeMap::new());

/// One conversion of CRD `crd_name`'s objects from `from` to `to` that took `elapsed`; not
/// recorded when the versions are the same, as kube does not.
pub fn observe(crd_name: &str, from: &str, to: &str, succeeded: bool, elapsed: Duration) {
    if from == to {
        return;
    }
    let seconds = elapsed.as_secs_f64();
    let mut series = SERIES.lock();
    let h = series
        .entry((
            crd_name.to_string(),
            from.to_string(),
            to.to_string(),
            succeeded,
        ))
        .or_default();
    for (bucket, bound) in h.buckets.iter_mut().zip(BUCKETS) {
        if seconds <= bound {
            *bucket += 1;
        }
    }
    h.count += 1;
    h.sum += seconds;
}

/// Appends the series in the Prometheus text format to `out`; nothing before the first call.
pub fn encode(out: &mut String) {
    let series = SERIES.lock();
    if series.is_empty() {
        return;
    }
    out.push_str(
        "# HELP apiserver_crd_conversion_webhook_duration_seconds [ALPHA] CRD webhook conversion duration in seconds\n\
         # TYPE apiserver_crd_conversion_webhook_duration_seconds histogram\n",
    );
    for ((crd, from, to, succeeded), h) in series.iter() {
        let labels = format!(
            "crd_name=\"{crd}\",from_version=\"{from}\",succeeded=\"{succeeded}\",to_version=\"{to}\""
        );
        for (n, bound) in h.buckets.iter().zip(BUCKETS) {
            let _ = writeln!(
                out,
                "apiserver_crd_conversion_webhook_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "apiserver_crd_conversion_webhook_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}\n\
             apiserver_crd_conversion_webhook_duration_seconds_sum{{{labels}}} {}\n\
             apiserver_crd_conversion_webhook_duration_seconds_count{{{labels}}} {}",
            h.count, h.sum, h.count
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_are_observed_by_crd_and_versions_but_not_between_one_version() {
        observe(
            "metrictests.example.com",
            "v1",
            "v1",
            true,
            Duration::from_millis(3),
        );
        observe(
            "metrictests.example.com",
            "v1",
            "v2",
            false,
            Duration::from_millis(3),
        );
        let mut out = String::new();
        encode(&mut out);
        assert!(out.contains(
            "apiserver_crd_conversion_webhook_duration_seconds_bucket{crd_name=\"metrictests.example.com\",from_version=\"v1\",succeeded=\"false\",to_version=\"v2\",le=\"0.004\"} 1"
        ), "{out}");
        assert!(!out.contains("from_version=\"v1\",succeeded=\"true\",to_version=\"v1\""));
    }
}
