//! Settings of the node controllers (lifecycle, taint eviction, TTL, IPAM), from
//! kube-controller-manager's flags, with kube's defaults.

use std::time::Duration;

/// kube-controller-manager's node flags.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeOptions {
    /// `--node-monitor-period`: how often node health is checked (5s).
    pub node_monitor_period: Duration,
    /// `--node-monitor-grace-period`: how long a node may go without heartbeat before it is
    /// marked unhealthy (50s in 1.33).
    pub node_monitor_grace_period: Duration,
    /// `--node-startup-grace-period`: the same for a node that never posted status (1m).
    pub node_startup_grace_period: Duration,
    /// `--node-eviction-rate`: nodes per second tainted NoExecute in a healthy zone (0.1).
    pub node_eviction_rate: f32,
    /// `--secondary-node-eviction-rate`: the same in a large, partially disrupted zone (0.01).
    pub secondary_node_eviction_rate: f32,
    /// `--large-cluster-size-threshold`: nodes above which a zone is large (50).
    pub large_cluster_size_threshold: i32,
    /// `--unhealthy-zone-threshold`: share of not-ready nodes (at least 3) that makes a zone
    /// partially disrupted (0.55).
    pub unhealthy_zone_threshold: f32,
    /// `--allocate-node-cidrs` (false).
    pub allocate_node_cidrs: bool,
    /// `--cluster-cidr`: the pod network CIDRs, comma separated (at most one per family).
    pub cluster_cidr: String,
    /// `--service-cluster-ip-range`: excluded from node CIDRs.
    pub service_cluster_ip_range: String,
    /// `--node-cidr-mask-size-ipv4` (or `--node-cidr-mask-size`): 24.
    pub node_cidr_mask_size_ipv4: u8,
    /// `--node-cidr-mask-size-ipv6`: 64.
    pub node_cidr_mask_size_ipv6: u8,
}

impl Default for NodeOptions {
    fn default() -> Self {
        Self {
            node_monitor_period: Duration::from_secs(5),
            node_monitor_grace_period: Duration::from_secs(50),
            node_startup_grace_period: Duration::from_secs(60),
            node_eviction_rate: 0.1,
            secondary_node_eviction_rate: 0.01,
            large_cluster_size_threshold: 50,
            unhealthy_zone_threshold: 0.55,
            allocate_node_cidrs: false,
            cluster_cidr: String::new(),
            service_cluster_ip_range: String::new(),
            node_cidr_mask_size_ipv4: 24,
            node_cidr_mask_size_ipv6: 64,
        }
    }
}
