//! The EndpointSlice controller's histograms, named as kube's
//! (`k8s.io/endpointslice/metrics`), in the process-wide registry.
//!
//! kube's counters `endpoint_slice_controller_changes` and `…_syncs` are not exported: the
//! OpenMetrics encoder would add a `_total` suffix kube's names do not have.

use std::sync::OnceLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

/// Labels of `endpoint_slice_controller_endpointslices_changed_per_sync`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ChangedLabels {
    /// `Auto` with topology-aware hints, else `Disabled` (always `Disabled` here).
    pub topology: String,
    /// The Service's `trafficDistribution` in use (always empty here).
    pub traffic_distribution: String,
}

/// The EndpointSlice controller's histograms.
#[derive(Clone, Debug)]
pub struct Metrics {
    /// Endpoints added on each Service sync.
    pub endpoints_added_per_sync: Histogram,
    /// Endpoints removed on each Service sync.
    pub endpoints_removed_per_sync: Histogram,
    /// Slices created, updated or deleted on each Service sync.
    pub endpointslices_changed_per_sync: Family<ChangedLabels, Histogram>,
}

fn buckets() -> Histogram {
    Histogram::new(exponential_buckets(2.0, 2.0, 15))
}

/// The histograms, registered on first use.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| Metrics {
        endpoints_added_per_sync: rkcm_runtime::metrics::register(
            "endpoint_slice_controller_endpoints_added_per_sync",
            "Number of endpoints added on each Service sync",
            buckets(),
        ),
        endpoints_removed_per_sync: rkcm_runtime::metrics::register(
            "endpoint_slice_controller_endpoints_removed_per_sync",
            "Number of endpoints removed on each Service sync",
            buckets(),
        ),
        endpointslices_changed_per_sync: rkcm_runtime::metrics::register(
            "endpoint_slice_controller_endpointslices_changed_per_sync",
            "Number of EndpointSlices changed on each Service sync",
            Family::new_with_constructor(buckets as fn() -> Histogram),
        ),
    })
}
