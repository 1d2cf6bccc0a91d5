//! Pod IP allocation per node from the node's /24, remembering what this process handed out.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;

use crate::node_set::SimNode;
use crate::scheduler::predicates::is_terminal;

/// Hands out pod IPs `10.244.<node>.2` … `.254`, skipping those held by running pods on the node.
#[derive(Debug, Default)]
pub struct PodIps {
    /// Pod UID → (node name, IP) for every IP this process handed out and has not released.
    given: Mutex<HashMap<String, (String, String)>>,
}

impl PodIps {
    /// The IP for the pod `uid` on `node`: the one it already got, else the lowest free one.
    /// `pods_on_node` are the cached pods bound to the node, whose reported IPs are taken.
    pub fn ip_for<'a>(
        &self,
        node: &SimNode,
        uid: &str,
        pods_on_node: impl IntoIterator<Item = &'a Pod>,
    ) -> String {
        let mut given = self.given.lock();
        if let Some((_, ip)) = given.get(uid) {
            return ip.clone();
        }
        let mut used: BTreeSet<String> = pods_on_node
            .into_iter()
            .filter(|p| !is_terminal(p))
            .filter_map(|p| p.status.as_ref().and_then(|s| s.pod_ip.clone()))
            .collect();
        used.extend(
            given
                .values()
                .filter(|(n, _)| *n == node.name)
                .map(|(_, ip)| ip.clone()),
        );
        let free = (2..=254u8)
            .map(|host| node.pod_ip(host))
            .find(|ip| !used.contains(ip));
        // TODO: more than 253 live pods on one node reuse addresses; max-pods defaults to 110.
        let ip = free.unwrap_or_else(|| node.pod_ip(2 + (used.len() % 253) as u8));
        given.insert(uid.to_string(), (node.name.clone(), ip.clone()));
        ip
    }

    /// Releases the IP of pod `uid` (deleted or finished).
    pub fn release(&self, uid: &str) {
        self.given.lock().remove(uid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jiff::Timestamp;
    use k8s_openapi::api::core::v1::PodStatus;

    fn node() -> SimNode {
        SimNode {
            name: "rkcm-node-1".into(),
            index: 1,
            uid: String::new(),
            registered_at: Timestamp::UNIX_EPOCH,
        }
    }

    fn pod_with_ip(ip: &str) -> Pod {
        Pod {
            status: Some(PodStatus {
                pod_ip: Some(ip.into()),
                phase: Some("Running".into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn hands_out_the_lowest_free_address_and_keeps_it_per_pod() {
        let ips = PodIps::default();
        let existing = [pod_with_ip("10.244.1.2")];
        assert_eq!(ips.ip_for(&node(), "a", &existing), "10.244.1.3");
        assert_eq!(ips.ip_for(&node(), "a", &existing), "10.244.1.3");
        assert_eq!(ips.ip_for(&node(), "b", &existing), "10.244.1.4");
        ips.release("a");
        assert_eq!(ips.ip_for(&node(), "c", &existing), "10.244.1.3");
    }
}
