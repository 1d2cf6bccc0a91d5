//! The nodes this simulator serves, shared by registration, leases, heartbeats and the kubelet.
//!
//! A node leaves the set when its Node object is deleted (`kubectl delete node`): from then on the
//! simulator no longer renews its lease or moves its pods, which are left for PodGC.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use jiff::Timestamp;
use parking_lot::RwLock;

/// One simulated node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimNode {
    /// Node name.
    pub name: String,
    /// 1-based position, which picks the node's addresses.
    pub index: usize,
    /// UID of the registered Node object (owner of its lease).
    pub uid: String,
    /// Since when the node is Ready (`lastTransitionTime` of its conditions): when this process
    /// registered it, or when its heartbeat last resumed.
    pub registered_at: Timestamp,
}

impl SimNode {
    /// The node's InternalIP: `10.0.0.<index>` for the first 254 nodes, then on through `10.0.<x>.<y>`.
    pub fn internal_ip(&self) -> String {
        internal_ip(self.index)
    }

    /// The node's pod CIDR: `10.244.<index>.0/24` for the first 255 nodes.
    pub fn pod_cidr(&self) -> String {
        let (second, third) = pod_subnet(self.index);
        format!("10.{second}.{third}.0/24")
    }

    /// The address of pod number `host` (2..=254) on this node.
    pub fn pod_ip(&self, host: u8) -> String {
        let (second, third) = pod_subnet(self.index);
        format!("10.{second}.{third}.{host}")
    }
}

/// InternalIP of node number `index` (1-based).
pub fn internal_ip(index: usize) -> String {
    format!("10.0.{}.{}", (index / 255) % 256, index % 255)
}

fn pod_subnet(index: usize) -> (usize, usize) {
    (244 + (index / 256) % 12, index % 256)
}

/// The served nodes by name, with what the simulation reads off their Node objects (the
/// heartbeat switch, the pod CIDR). Clones share the same set.
#[derive(Clone, Debug, Default)]
pub struct NodeSet {
    nodes: Arc<RwLock<BTreeMap<String, SimNode>>>,
    /// Nodes annotated [`HEARTBEAT_ANNOTATION`]` = "stopped"`.
    stopped: Arc<RwLock<BTreeSet<String>>>,
    /// `spec.podCIDR` by node name, for the nodes that have one.
    pod_cidrs: Arc<RwLock<BTreeMap<String, String>>>,
}

/// Node annotation that stops the simulated kubelet of that node: `rkcm.io/heartbeat: "stopped"`.
pub const HEARTBEAT_ANNOTATION: &str = "rkcm.io/heartbeat";

impl NodeSet {
    /// Starts serving `node`.
    pub fn insert(&self, node: SimNode) {
        self.nodes.write().insert(node.name.clone(), node);
    }

    /// Stops serving the node named `name`; returns whether it was served.
    pub fn remove(&self, name: &str) -> bool {
        self.nodes.write().remove(name).is_some()
    }

    /// The served node named `name`.
    pub fn get(&self, name: &str) -> Option<SimNode> {
        self.nodes.read().get(name).cloned()
    }

    /// Whether the node named `name` is served.
    pub fn contains(&self, name: &str) -> bool {
        self.nodes.read().contains_key(name)
    }

    /// Every served node, by name.
    pub fn list(&self) -> Vec<SimNode> {
        self.nodes.read().values().cloned().collect()
    }

    /// Every served node whose kubelet is not stopped, by name.
    pub fn beating(&self) -> Vec<SimNode> {
        let stopped = self.stopped.read();
        self.nodes
            .read()
            .values()
            .filter(|n| !stopped.contains(&n.name))
            .cloned()
            .collect()
    }

    /// Records whether the kubelet of `name` is stopped; returns whether that changed.
    pub fn set_stopped(&self, name: &str, stopped: bool) -> bool {
        let mut set = self.stopped.write();
        if stopped {
            set.insert(name.to_string())
        } else {
            set.remove(name)
        }
    }

    /// Whether the kubelet of `name` is stopped.
    pub fn is_stopped(&self, name: &str) -> bool {
        self.stopped.read().contains(name)
    }

    /// Records the node's `spec.podCIDR` (`None`: it has none).
    pub fn set_pod_cidr(&self, name: &str, cidr: Option<String>) {
        let mut map = self.pod_cidrs.write();
        match cidr {
            Some(c) => map.insert(name.to_string(), c),
            None => map.remove(name),
        };
    }

    /// The node's `spec.podCIDR`, if it has one.
    pub fn pod_cidr(&self, name: &str) -> Option<String> {
        self.pod_cidrs.read().get(name).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_follow_the_node_index() {
        let node = SimNode {
            name: "rkcm-node-3".into(),
            index: 3,
            uid: String::new(),
            registered_at: Timestamp::UNIX_EPOCH,
        };
        assert_eq!(node.internal_ip(), "10.0.0.3");
        assert_eq!(node.pod_cidr(), "10.244.3.0/24");
        assert_eq!(node.pod_ip(7), "10.244.3.7");
    }
}
