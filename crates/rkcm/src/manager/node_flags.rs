//! The node controllers' flags (lifecycle, IPAM), named and defaulted as kube-controller-manager's;
//! shared by `rkcm controller-manager` and `rkcm up`.

use std::time::Duration;

use clap::{ArgAction, Args};
use rkcm_controllers::node_options::NodeOptions;

/// kube-controller-manager's node lifecycle and node IPAM flags.
#[derive(Debug, Clone, Args)]
pub struct NodeArgs {
    /// The period for syncing NodeStatus in cloud-node-lifecycle-controller and node lifecycle.
    #[arg(long, default_value = "5s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Nodelifecycle controller flags")]
    pub node_monitor_period: Duration,

    /// Amount of time which we allow running Node to be unresponsive before marking it unhealthy.
    /// Must be N times more than kubelet's nodeStatusUpdateFrequency, where N means number of
    /// retries allowed for kubelet to post node status.
    #[arg(long, default_value = "50s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Nodelifecycle controller flags")]
    pub node_monitor_grace_period: Duration,

    /// Amount of time which we allow starting Node to be unresponsive before marking it unhealthy.
    #[arg(long, default_value = "1m0s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Nodelifecycle controller flags")]
    pub node_startup_grace_period: Duration,

    /// Number of nodes per second on which pods are deleted in case of node failure when a zone
    /// is healthy (see --unhealthy-zone-threshold for definition of healthy/unhealthy).
    #[arg(
        long,
        default_value_t = 0.1,
        help_heading = "Nodelifecycle controller flags"
    )]
    pub node_eviction_rate: f32,

    /// Number of nodes per second on which pods are deleted in case of node failure when a zone
    /// is unhealthy. This value is implicitly overridden to 0 if the cluster size is smaller than
    /// --large-cluster-size-threshold.
    #[arg(
        long,
        default_value_t = 0.01,
        help_heading = "Nodelifecycle controller flags"
    )]
    pub secondary_node_eviction_rate: f32,

    /// Number of nodes from which node-lifecycle-controller treats the cluster as large for the
    /// eviction logic purposes.
    #[arg(
        long,
        default_value_t = 50,
        help_heading = "Nodelifecycle controller flags"
    )]
    pub large_cluster_size_threshold: i32,

    /// Fraction of Nodes in a zone which needs to be not Ready (minimum 3) for zone to be
    /// treated as unhealthy.
    #[arg(
        long,
        default_value_t = 0.55,
        help_heading = "Nodelifecycle controller flags"
    )]
    pub unhealthy_zone_threshold: f32,

    /// Should CIDRs for Pods be allocated and set on the cloud provider (kube-controller-manager's
    /// default: false; `rkcm up`'s: true).
    #[arg(long, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true",
          value_name = "BOOL", help_heading = "Generic flags")]
    pub allocate_node_cidrs: Option<bool>,

    /// CIDR Range for Pods in cluster (`rkcm up`'s default: 10.244.0.0/16). Requires
    /// --allocate-node-cidrs to be true.
    #[arg(long, value_name = "CIDR", help_heading = "Generic flags")]
    pub cluster_cidr: Option<String>,

    /// Mask size for node cidr in cluster. Default is 24 for IPv4 and 64 for IPv6.
    #[arg(long, default_value_t = 0, help_heading = "Nodeipam controller flags")]
    pub node_cidr_mask_size: u8,

    /// Mask size for IPv4 node cidr in dual-stack cluster. Default is 24.
    #[arg(long, default_value_t = 0, help_heading = "Nodeipam controller flags")]
    pub node_cidr_mask_size_ipv4: u8,

    /// Mask size for IPv6 node cidr in dual-stack cluster. Default is 64.
    #[arg(long, default_value_t = 0, help_heading = "Nodeipam controller flags")]
    pub node_cidr_mask_size_ipv6: u8,
}

impl NodeArgs {
    /// The options, with `allocate_default` and `cluster_cidr_default` where the flags are unset
    /// and `service_range` excluded from node CIDRs.
    pub fn options(
        &self,
        allocate_default: bool,
        cluster_cidr_default: &str,
        service_range: &str,
    ) -> anyhow::Result<NodeOptions> {
        let cluster_cidr = self
            .cluster_cidr
            .clone()
            .unwrap_or_else(|| cluster_cidr_default.to_string());
        let (mask_v4, mask_v6) = self.mask_sizes(&cluster_cidr)?;
        Ok(NodeOptions {
            node_monitor_period: self.node_monitor_period,
            node_monitor_grace_period: self.node_monitor_grace_period,
            node_startup_grace_period: self.node_startup_grace_period,
            node_eviction_rate: self.node_eviction_rate,
            secondary_node_eviction_rate: self.secondary_node_eviction_rate,
            large_cluster_size_threshold: self.large_cluster_size_threshold,
            unhealthy_zone_threshold: self.unhealthy_zone_threshold,
            allocate_node_cidrs: self.allocate_node_cidrs.unwrap_or(allocate_default),
            cluster_cidr,
            service_cluster_ip_range: service_range.to_string(),
            node_cidr_mask_size_ipv4: mask_v4,
            node_cidr_mask_size_ipv6: mask_v6,
        })
    }

    /// The node mask of each family (`setNodeCIDRMaskSizes`).
    fn mask_sizes(&self, cluster_cidr: &str) -> anyhow::Result<(u8, u8)> {
        let cidrs: Vec<&str> = cluster_cidr
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let (mut v4, mut v6) = (24, 64);
        let (mask, mask_v4, mask_v6) = (
            self.node_cidr_mask_size,
            self.node_cidr_mask_size_ipv4,
            self.node_cidr_mask_size_ipv6,
        );
        if cidrs.len() > 1 {
            if mask != 0 {
                anyhow::bail!(
                    "usage of --node-cidr-mask-size is not allowed with dual-stack clusters"
                );
            }
        } else if mask != 0 {
            if mask_v4 != 0 || mask_v6 != 0 {
                anyhow::bail!("usage of --node-cidr-mask-size-ipv4 and --node-cidr-mask-size-ipv6 is not allowed if --node-cidr-mask-size is set. For dual-stack clusters please unset it and use IPFamily specific flags");
            }
            return Ok((mask, mask));
        } else {
            let single_v6 = cidrs.first().is_some_and(|c| c.contains(':'));
            if mask_v4 != 0 && single_v6 {
                anyhow::bail!("usage of --node-cidr-mask-size-ipv4 is not allowed for a single-stack IPv6 cluster");
            }
            if mask_v6 != 0 && !single_v6 && !cidrs.is_empty() {
                anyhow::bail!("usage of --node-cidr-mask-size-ipv6 is not allowed for a single-stack IPv4 cluster");
            }
        }
        if mask_v4 != 0 {
            v4 = mask_v4;
        }
        if mask_v6 != 0 {
            v6 = mask_v6;
        }
        Ok((v4, v6))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        nodes: NodeArgs,
    }

    fn parse(args: &[&str]) -> NodeArgs {
        Cli::parse_from(std::iter::once("x").chain(args.iter().copied())).nodes
    }

    #[test]
    fn defaults_are_kubes() {
        let o = parse(&[]).options(false, "", "").unwrap();
        assert_eq!(o, NodeOptions::default());
    }

    #[test]
    fn flags_override_and_masks_follow_kubes_rules() {
        let a = parse(&[
            "--node-monitor-grace-period=10s",
            "--allocate-node-cidrs",
            "--cluster-cidr=10.244.0.0/16",
            "--node-cidr-mask-size=26",
        ]);
        let o = a.options(false, "", "10.96.0.0/12").unwrap();
        assert_eq!(o.node_monitor_grace_period, Duration::from_secs(10));
        assert!(o.allocate_node_cidrs);
        assert_eq!(o.node_cidr_mask_size_ipv4, 26);
        assert_eq!(o.service_cluster_ip_range, "10.96.0.0/12");
        let a = parse(&["--allocate-node-cidrs=false"]);
        assert!(
            !a.options(true, "10.244.0.0/16", "")
                .unwrap()
                .allocate_node_cidrs
        );
        let a = parse(&[
            "--cluster-cidr=10.244.0.0/16,fd00::/48",
            "--node-cidr-mask-size=24",
        ]);
        assert!(a.options(true, "", "").is_err());
        let a = parse(&[
            "--cluster-cidr=10.244.0.0/16",
            "--node-cidr-mask-size-ipv6=80",
        ]);
        assert!(a.options(true, "", "").is_err());
    }
}
