//! The nodes this simulator serves, shared by registration, leases, heartbeats and the kubelet.
//!
//! A node leaves the set when its Node object is deleted (`kubectl delete node`): from then on the
//! simulator no longer renews its lease or moves its pods, which are left for PodGC.

use std::collections::BTreeMap;
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
    /// When this process registered the node (`lastTransitionTime` of its conditions).
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

/// The served nodes by name. Clones share the same set.
#[derive(Clone, Debug, Default)]
pub struct NodeSet {
    nodes: Arc<RwLock<BTreeMap<String, SimNode>>>,
}

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
