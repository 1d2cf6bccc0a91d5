//! `metrics.k8s.io/v1beta1`, the resource metrics API that metrics-server serves through the
//! aggregation layer: PodMetrics and NodeMetrics.
//!
//! The API server runs no control loop and measures nothing itself: a [`MetricsSource`] plugged in
//! with the API server's `with_metrics_source` stands in for the aggregated APIService, and the
//! server only routes `/apis/metrics.k8s.io/v1beta1/...` to the source's latest [`UsageSnapshot`]
//! (list and get, namespaced pods, label and field selectors) and lists the group in discovery.
//! Without a source the group is not served, as on a cluster without metrics-server.

pub mod serve;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;

/// `metrics.k8s.io`.
pub const GROUP: &str = "metrics.k8s.io";
/// The only served version.
pub const VERSION: &str = "v1beta1";

/// Usage of one container, over the snapshot's window.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ContainerUsage {
    /// Container name.
    pub name: String,
    /// CPU, in nanocores (`usage.cpu`).
    pub cpu_nanocores: i64,
    /// Working-set memory, in bytes (`usage.memory`).
    pub memory_bytes: i64,
}

/// Usage of one pod, container by container (a PodMetrics).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodUsage {
    /// Namespace.
    pub namespace: String,
    /// Pod name.
    pub name: String,
    /// The pod's labels (PodMetrics carry them; label selectors match them).
    pub labels: BTreeMap<String, String>,
    /// Its containers' usage.
    pub containers: Vec<ContainerUsage>,
}

/// Usage of one node (a NodeMetrics).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeUsage {
    /// Node name.
    pub name: String,
    /// The node's labels.
    pub labels: BTreeMap<String, String>,
    /// CPU, in nanocores.
    pub cpu_nanocores: i64,
    /// Memory, in bytes.
    pub memory_bytes: i64,
}

/// What a source measured at one time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageSnapshot {
    /// When the figures were taken (`timestamp` of every item).
    pub timestamp: Timestamp,
    /// The interval they cover (`window`).
    pub window: Duration,
    /// Pods with figures.
    pub pods: Vec<PodUsage>,
    /// Nodes with figures.
    pub nodes: Vec<NodeUsage>,
}

/// Where the resource metrics come from: metrics-server's place behind the aggregation layer.
///
/// Called from request handlers, concurrently: implementations answer from memory, quickly, and
/// never block on I/O.
pub trait MetricsSource: Send + Sync {
    /// The latest snapshot; `None` before the first one is taken (every list is then empty and
    /// every get 404, as metrics-server before its first scrape).
    fn snapshot(&self) -> Option<Arc<UsageSnapshot>>;
}
