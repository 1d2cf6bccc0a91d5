//! Metrics of admission webhooks, with kube-apiserver's names and labels
//! (`staging/src/k8s.io/apiserver/pkg/admission/metrics/metrics.go`):
//! - `apiserver_admission_webhook_admission_duration_seconds` by webhook name, type (`admit`
//!   for mutating webhooks, `validating`), operation and whether the request was rejected;
//! - `apiserver_admission_webhook_request_total` by the same and the response code;
//! - `apiserver_admission_webhook_rejection_count` by name, type, operation, error type and
//!   rejection code;
//! - `apiserver_admission_webhook_fail_open_count` by name and type.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

/// Bounds of the duration histogram (kube's `Buckets` of the webhook histogram).
const BUCKETS: [f64; 8] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0];

/// Why a webhook rejected a request (`WebhookRejectionErrorType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RejectionKind {
    /// The webhook could not be called and its failure policy is `Fail`.
    CallingWebhookError,
    /// The webhook answered with a refusal.
    NoError,
    /// The server failed (a patch that does not apply, ...).
    ApiserverInternalError,
}

impl RejectionKind {
    fn as_str(self) -> &'static str {
        match self {
            RejectionKind::CallingWebhookError => "calling_webhook_error",
            RejectionKind::NoError => "no_error",
            RejectionKind::ApiserverInternalError => "apiserver_internal_error",
        }
    }
}

#[derive(Clone, Debug, Default)]
struct Histogram {
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// name, type, operation, rejected.
type CallLabels = (String, &'static str, &'static str, bool);

#[derive(Default)]
struct Series {
    durations: BTreeMap<CallLabels, Histogram>,
    requests: BTreeMap<(CallLabels, u16), u64>,
    rejections: BTreeMap<(String, &'static str, &'static str, RejectionKind, u16), u64>,
    fail_open: BTreeMap<(String, &'static str), u64>,
}

/// The webhook metrics of one server; cloned handles share them.
#[derive(Clone, Default)]
pub struct AdmissionMetrics {
    series: Arc<Mutex<Series>>,
}

impl std::fmt::Debug for AdmissionMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionMetrics").finish_non_exhaustive()
    }
}

impl AdmissionMetrics {
    /// One call of webhook `name` (`type_`: `admit` or `validating`) that took `elapsed` and
    /// was answered with `code` (0 when there was no answer).
    pub fn observe_webhook(
        &self,
        name: &str,
        type_: &'static str,
        operation: &'static str,
        rejected: bool,
        code: u16,
        elapsed: Duration,
    ) {
        let labels = (name.to_string(), type_, operation, rejected);
        let seconds = elapsed.as_secs_f64();
        let mut series = self.series.lock();
        let h = series.durations.entry(labels.clone()).or_default();
        for (bucket, bound) in h.buckets.iter_mut().zip(BUCKETS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
        h.count += 1;
        h.sum += seconds;
        *series.requests.entry((labels, code)).or_insert(0) += 1;
    }

    /// One rejection by webhook `name`.
    pub fn webhook_rejection(
        &self,
        name: &str,
        type_: &'static str,
        operation: &'static str,
        kind: RejectionKind,
        code: u16,
    ) {
        *self
            .series
            .lock()
            .rejections
            .entry((name.to_string(), type_, operation, kind, code))
            .or_insert(0) += 1;
    }

    /// One failed call of webhook `name` that its failure policy ignored.
    pub fn webhook_fail_open(&self, name: &str, type_: &'static str) {
        *self
            .series
            .lock()
            .fail_open
            .entry((name.to_string(), type_))
            .or_insert(0) += 1;
    }

    /// Appends the metrics in the Prometheus text format to `out`; nothing before the first
    /// webhook call.
    pub fn encode(&self, out: &mut String) {
        let series = self.series.lock();
        if !series.durations.is_empty() {
            out.push_str(
                "# HELP apiserver_admission_webhook_admission_duration_seconds [STABLE] Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).\n\
                 # TYPE apiserver_admission_webhook_admission_duration_seconds histogram\n",
            );
        }
        for ((name, type_, operation, rejected), h) in &series.durations {
            let labels = format!(
                "name=\"{name}\",operation=\"{operation}\",rejected=\"{rejected}\",type=\"{type_}\""
            );
            for (n, bound) in h.buckets.iter().zip(BUCKETS) {
                let _ = writeln!(
                    out,
                    "apiserver_admission_webhook_admission_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "apiserver_admission_webhook_admission_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}\n\
                 apiserver_admission_webhook_admission_duration_seconds_sum{{{labels}}} {}\n\
                 apiserver_admission_webhook_admission_duration_seconds_count{{{labels}}} {}",
                h.count, h.sum, h.count
            );
        }
        if !series.requests.is_empty() {
            out.push_str(
                "# HELP apiserver_admission_webhook_request_total [ALPHA] Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.\n\
                 # TYPE apiserver_admission_webhook_request_total counter\n",
            );
        }
        for (((name, type_, operation, rejected), code), n) in &series.requests {
            let _ = writeln!(
                out,
                "apiserver_admission_webhook_request_total{{code=\"{code}\",name=\"{name}\",operation=\"{operation}\",rejected=\"{rejected}\",type=\"{type_}\"}} {n}"
            );
        }
        if !series.rejections.is_empty() {
            out.push_str(
                "# HELP apiserver_admission_webhook_rejection_count [ALPHA] Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.\n\
                 # TYPE apiserver_admission_webhook_rejection_count counter\n",
            );
        }
        for ((name, type_, operation, kind, code), n) in &series.rejections {
            let _ = writeln!(
                out,
                "apiserver_admission_webhook_rejection_count{{error_type=\"{}\",name=\"{name}\",operation=\"{operation}\",rejection_code=\"{code}\",type=\"{type_}\"}} {n}",
                kind.as_str()
            );
        }
        if !series.fail_open.is_empty() {
            out.push_str(
                "# HELP apiserver_admission_webhook_fail_open_count [ALPHA] Admission webhook fail open count, identified by name and broken out for each admission type (validating or admit).\n\
                 # TYPE apiserver_admission_webhook_fail_open_count counter\n",
            );
        }
        for ((name, type_), n) in &series.fail_open {
            let _ = writeln!(
                out,
                "apiserver_admission_webhook_fail_open_count{{name=\"{name}\",type=\"{type_}\"}} {n}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_are_written_with_kubes_names_and_labels() {
        let m = AdmissionMetrics::default();
        let mut empty = String::new();
        m.encode(&mut empty);
        assert!(empty.is_empty());
        m.observe_webhook(
            "w",
            "validating",
            "CREATE",
            true,
            200,
            Duration::from_millis(20),
        );
        m.webhook_rejection("w", "validating", "CREATE", RejectionKind::NoError, 403);
        m.webhook_fail_open("x", "admit");
        let mut out = String::new();
        m.encode(&mut out);
        assert!(out.contains(
            "apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"w\",operation=\"CREATE\",rejected=\"true\",type=\"validating\",le=\"0.025\"} 1\n"
        ));
        assert!(out.contains(
            "apiserver_admission_webhook_admission_duration_seconds_bucket{name=\"w\",operation=\"CREATE\",rejected=\"true\",type=\"validating\",le=\"0.005\"} 0\n"
        ));
        assert!(out.contains(
            "apiserver_admission_webhook_request_total{code=\"200\",name=\"w\",operation=\"CREATE\",rejected=\"true\",type=\"validating\"} 1\n"
        ));
        assert!(out.contains(
            "apiserver_admission_webhook_rejection_count{error_type=\"no_error\",name=\"w\",operation=\"CREATE\",rejection_code=\"403\",type=\"validating\"} 1\n"
        ));
        assert!(out.contains(
            "apiserver_admission_webhook_fail_open_count{name=\"x\",type=\"admit\"} 1\n"
        ));
    }
}
