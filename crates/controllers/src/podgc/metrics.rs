//! PodGC's Prometheus counters, named as kube's (`pod_gc_collector_force_delete_pods_total`,
//! `pod_gc_collector_force_delete_pod_errors_total`), in the process-wide registry.

use std::sync::OnceLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;

use super::rules::Reason;

/// Labels of the PodGC counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ForceDeleteLabels {
    /// Namespace of the pod.
    pub namespace: String,
    /// Which rule deleted it ([`Reason::as_str`]).
    pub reason: String,
}

/// The PodGC counters.
#[derive(Clone, Debug)]
pub struct Metrics {
    /// Pods force-deleted since start.
    pub deleting_pods: Family<ForceDeleteLabels, Counter>,
    /// Errors while force-deleting pods since start.
    pub deleting_pod_errors: Family<ForceDeleteLabels, Counter>,
}

/// The counters, registered on first use.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| Metrics {
        deleting_pods: rkcm_runtime::metrics::register(
            "pod_gc_collector_force_delete_pods",
            "Number of pods that are being forcefully deleted since the Pod GC Controller started.",
            Family::default(),
        ),
        deleting_pod_errors: rkcm_runtime::metrics::register(
            "pod_gc_collector_force_delete_pod_errors",
            "Number of errors encountered when forcefully deleting the pods since the Pod GC Controller started.",
            Family::default(),
        ),
    })
}

/// Labels for a pod in `namespace` deleted for `reason`.
pub fn labels(namespace: &str, reason: Reason) -> ForceDeleteLabels {
    ForceDeleteLabels {
        namespace: namespace.to_string(),
        reason: reason.as_str().to_string(),
    }
}
