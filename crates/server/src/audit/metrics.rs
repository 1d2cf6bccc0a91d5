//! The audit metrics of `staging/src/k8s.io/apiserver/pkg/audit/metrics.go`:
//! `apiserver_audit_event_total`, `apiserver_audit_error_total{plugin}`,
//! `apiserver_audit_level_total{level}` and `apiserver_audit_requests_rejected_total`.
//!
//! Process-wide, as kube registers them in its legacy registry.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use super::policy::Level;

static EVENTS: AtomicU64 = AtomicU64::new(0);
static LOG_ERRORS: AtomicU64 = AtomicU64::new(0);
static REJECTED: AtomicU64 = AtomicU64::new(0);
static LEVELS: [AtomicU64; 4] = [
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
    AtomicU64::new(0),
];

/// One event handed to the backend (`ObserveEvent`).
pub fn observe_event() {
    EVENTS.fetch_add(1, Ordering::Relaxed);
}

/// Events the log backend lost: dropped because its buffer was full, or not written
/// (`HandlePluginError` with plugin `log`).
pub fn observe_log_errors(n: u64) {
    LOG_ERRORS.fetch_add(n, Ordering::Relaxed);
}

/// One audited request at `level` (`ObservePolicyLevel`).
pub fn observe_policy_level(level: Level) {
    LEVELS[level as usize].fetch_add(1, Ordering::Relaxed);
}

/// Events the log backend lost so far.
pub fn log_errors() -> u64 {
    LOG_ERRORS.load(Ordering::Relaxed)
}

/// Appends the series in the Prometheus text format to `out`.
pub fn encode(out: &mut String) {
    let _ = writeln!(
        out,
        "# HELP apiserver_audit_event_total [ALPHA] Counter of audit events generated and sent to the audit backend.\n\
         # TYPE apiserver_audit_event_total counter\n\
         apiserver_audit_event_total {}",
        EVENTS.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        out,
        "# HELP apiserver_audit_error_total [ALPHA] Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error.\n\
         # TYPE apiserver_audit_error_total counter\n\
         apiserver_audit_error_total{{plugin=\"log\"}} {}",
        LOG_ERRORS.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        out,
        "# HELP apiserver_audit_level_total [ALPHA] Counter of policy levels for audit events (1 per request).\n\
         # TYPE apiserver_audit_level_total counter"
    );
    for level in [
        Level::None,
        Level::Metadata,
        Level::Request,
        Level::RequestResponse,
    ] {
        let _ = writeln!(
            out,
            "apiserver_audit_level_total{{level=\"{}\"}} {}",
            level.as_str(),
            LEVELS[level as usize].load(Ordering::Relaxed)
        );
    }
    // Events are never waited for, so no request is refused for them; kube's counter is kept
    // for dashboards that read it.
    let _ = writeln!(
        out,
        "# HELP apiserver_audit_requests_rejected_total [ALPHA] Counter of apiserver requests rejected due to an error in audit logging backend.\n\
         # TYPE apiserver_audit_requests_rejected_total counter\n\
         apiserver_audit_requests_rejected_total {}",
        REJECTED.load(Ordering::Relaxed)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_series_have_kubes_names_and_labels() {
        observe_event();
        observe_policy_level(Level::Request);
        let mut out = String::new();
        encode(&mut out);
        for series in [
            "apiserver_audit_event_total ",
            "apiserver_audit_error_total{plugin=\"log\"} ",
            "apiserver_audit_level_total{level=\"Request\"} ",
            "apiserver_audit_requests_rejected_total 0",
        ] {
            assert!(out.contains(series), "{series} missing from\n{out}");
        }
    }
}
