//! The node lifecycle controller's Prometheus metrics, named as kube's (`node_collector_*`).

use std::sync::OnceLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use std::sync::atomic::AtomicU64;

/// The `zone` label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ZoneLabel {
    /// The zone key.
    pub zone: String,
}

/// The node lifecycle metrics.
#[derive(Clone, Debug)]
pub struct Metrics {
    /// `node_collector_zone_health`: percentage of healthy nodes per zone.
    pub zone_health: Family<ZoneLabel, Gauge<f64, AtomicU64>>,
    /// `node_collector_zone_size`: nodes per zone.
    pub zone_size: Family<ZoneLabel, Gauge>,
    /// `node_collector_unhealthy_nodes_in_zone`.
    pub unhealthy_nodes: Family<ZoneLabel, Gauge>,
    /// `node_collector_evictions_total`: NoExecute taints added per zone.
    pub evictions: Family<ZoneLabel, Counter>,
}

/// The metrics, registered on first use.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| Metrics {
        zone_health: rkcm_runtime::metrics::register(
            "node_collector_zone_health",
            "Gauge measuring percentage of healthy nodes per zone.",
            Family::default(),
        ),
        zone_size: rkcm_runtime::metrics::register(
            "node_collector_zone_size",
            "Gauge measuring number of registered Nodes per zones.",
            Family::default(),
        ),
        unhealthy_nodes: rkcm_runtime::metrics::register(
            "node_collector_unhealthy_nodes_in_zone",
            "Gauge measuring number of not Ready Nodes per zones.",
            Family::default(),
        ),
        evictions: rkcm_runtime::metrics::register(
            "node_collector_evictions",
            "Number of Node evictions that happened since current instance of NodeController started.",
            Family::default(),
        ),
    })
}

/// The label of `zone`.
pub fn zone(zone: &str) -> ZoneLabel {
    ZoneLabel { zone: zone.into() }
}
