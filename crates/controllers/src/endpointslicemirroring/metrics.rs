//! The mirroring controller's histograms, named as kube's
//! (`pkg/controller/endpointslicemirroring/metrics`), in the process-wide registry.

use std::sync::OnceLock;

use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};

/// The mirroring controller's histograms.
#[derive(Clone, Debug)]
pub struct Metrics {
    /// Endpoints added on each Endpoints sync.
    pub endpoints_added_per_sync: Histogram,
    /// Endpoints removed on each Endpoints sync.
    pub endpoints_removed_per_sync: Histogram,
    /// Addresses not mirrored on each Endpoints sync (invalid or over the per-subset maximum).
    pub addresses_skipped_per_sync: Histogram,
}

fn buckets() -> Histogram {
    Histogram::new(exponential_buckets(2.0, 2.0, 15))
}

/// The histograms, registered on first use.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| Metrics {
        endpoints_added_per_sync: rkcm_runtime::metrics::register(
            "endpoint_slice_mirroring_controller_endpoints_added_per_sync",
            "Number of endpoints added on each Endpoints sync",
            buckets(),
        ),
        endpoints_removed_per_sync: rkcm_runtime::metrics::register(
            "endpoint_slice_mirroring_controller_endpoints_removed_per_sync",
            "Number of endpoints removed on each Endpoints sync",
            buckets(),
        ),
        addresses_skipped_per_sync: rkcm_runtime::metrics::register(
            "endpoint_slice_mirroring_controller_addresses_skipped_per_sync",
            "Number of addresses skipped on each Endpoints sync due to being invalid or exceeding MaxEndpointsPerSubset",
            buckets(),
        ),
    })
}
