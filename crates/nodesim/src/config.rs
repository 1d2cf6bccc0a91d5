//! Settings of the simulated nodes.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rkcm_runtime::{Clock, SystemClock};

/// How many nodes to simulate and how they behave. `Config::default()` gives three nodes of
/// 8 CPUs, 32Gi of memory and 110 pods each.
#[derive(Clone)]
pub struct Config {
    /// Number of nodes, named `<node_name_prefix>1` … `<node_name_prefix>N`.
    pub nodes: usize,
    /// Prefix of the node names (`rkcm-node-`).
    pub node_name_prefix: String,
    /// CPU capacity of each node, as a quantity (`"8"`).
    pub cpu: String,
    /// Memory capacity of each node, as a quantity (`"32Gi"`).
    pub memory: String,
    /// How many pods each node runs at most (`"110"`, kubelet's `--max-pods` default).
    pub pods: String,
    /// How long a bound pod stays in ContainerCreating before its containers start
    /// (per pod: annotation `rkcm.io/ready-delay`).
    pub pod_ready_delay: Duration,
    /// Upper bound on how long a deleted pod keeps running. `None` (the default) honours each pod's
    /// grace period as a kubelet does; `Some(Duration::ZERO)` removes deleted pods at once.
    pub termination_grace_cap: Option<Duration>,
    /// `leaseDurationSeconds` of the node leases (kubelet: 40s).
    pub lease_duration: Duration,
    /// How often node leases in `kube-node-lease` are renewed (kubelet: a quarter of the lease duration, 10s).
    pub lease_renew_interval: Duration,
    /// How often each node's conditions get a fresh `lastHeartbeatTime`.
    pub node_status_interval: Duration,
    /// Run the scheduler. Turn off when the cluster has its own scheduler.
    pub scheduler: bool,
    /// The `spec.schedulerName` the scheduler serves (an empty name means this one too).
    pub scheduler_name: String,
    /// How many pods the kubelet stand-in works on at once.
    pub kubelet_workers: usize,
    /// How often the resource metrics are snapshotted (metrics-server's `--metric-resolution`);
    /// used when [`crate::NodeSim::with_metrics`] asked for them.
    pub metric_resolution: Duration,
    /// Run the simulated provisioner `rkcm.io/simulated` and create its default StorageClass
    /// `standard` (see [`crate::provisioner`]).
    pub provisioner: bool,
    /// Wall clock for timestamps and deadlines.
    pub clock: Arc<dyn Clock>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            nodes: 3,
            node_name_prefix: "rkcm-node-".into(),
            cpu: "8".into(),
            memory: "32Gi".into(),
            pods: "110".into(),
            pod_ready_delay: Duration::from_millis(500),
            termination_grace_cap: None,
            lease_duration: Duration::from_secs(40),
            lease_renew_interval: Duration::from_secs(10),
            node_status_interval: Duration::from_secs(50),
            scheduler: true,
            scheduler_name: "default-scheduler".into(),
            kubelet_workers: 4,
            metric_resolution: crate::metrics::DEFAULT_METRIC_RESOLUTION,
            provisioner: true,
            clock: Arc::new(SystemClock),
        }
    }
}

impl Config {
    /// The name of node number `index` (1-based).
    pub fn node_name(&self, index: usize) -> String {
        format!("{}{index}", self.node_name_prefix)
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("nodes", &self.nodes)
            .field("node_name_prefix", &self.node_name_prefix)
            .field("cpu", &self.cpu)
            .field("memory", &self.memory)
            .field("pods", &self.pods)
            .field("pod_ready_delay", &self.pod_ready_delay)
            .field("termination_grace_cap", &self.termination_grace_cap)
            .field("lease_duration", &self.lease_duration)
            .field("lease_renew_interval", &self.lease_renew_interval)
            .field("node_status_interval", &self.node_status_interval)
            .field("scheduler", &self.scheduler)
            .field("scheduler_name", &self.scheduler_name)
            .field("kubelet_workers", &self.kubelet_workers)
            .field("metric_resolution", &self.metric_resolution)
            .field("provisioner", &self.provisioner)
            .finish_non_exhaustive()
    }
}
