//! Pod IP allocation per node from the node's `spec.podCIDR` (else `10.244.<n>.0/24`),
//! remembering what this process handed out.

use std::collections::{BTreeSet, HashMap};
use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;

use crate::node_set::SimNode;
use crate::scheduler::predicates::is_terminal;

/// The host addresses of an IPv4 CIDR a pod may get: from the second address (the first is the
/// network's, the next the gateway's, as bridge CNIs do) to the one before the broadcast, at
/// most 65,534 of them. `None` for IPv6 or an unparsable CIDR.
pub fn cidr_hosts(cidr: &str) -> Option<Vec<String>> {
    let (addr, prefix) = cidr.split_once('/')?;
    let base = u32::from(addr.parse::<Ipv4Addr>().ok()?);
    let prefix: u32 = prefix.parse().ok().filter(|p| *p <= 30)?;
    let size = 1u64 << (32 - prefix);
    let base = base & !((size - 1) as u32);
    let last = (size - 2).min(65_535);
    Some(
        (2..=last)
            .filter_map(|h| u32::try_from(h).ok())
            .map(|h| Ipv4Addr::from(base.wrapping_add(h)).to_string())
            .collect(),
    )
}

/// Hands out pod IPs from the node's pod CIDR (`10.244.<node>.2` … `.254` when it has none),
/// skipping those held by running pods on the node.
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
        pod_cidr: Option<&str>,
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
        let hosts = pod_cidr
            .and_then(cidr_hosts)
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| (2..=254u8).map(|host| node.pod_ip(host)).collect());
        let free = hosts.iter().find(|ip| !used.contains(*ip)).cloned();
        // More live pods than addresses reuse addresses; max-pods defaults to 110.
        let ip = free.unwrap_or_else(|| hosts[used.len() % hosts.len()].clone());
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
        assert_eq!(ips.ip_for(&node(), None, "a", &existing), "10.244.1.3");
        assert_eq!(ips.ip_for(&node(), None, "a", &existing), "10.244.1.3");
        assert_eq!(ips.ip_for(&node(), None, "b", &existing), "10.244.1.4");
        ips.release("a");
        assert_eq!(ips.ip_for(&node(), None, "c", &existing), "10.244.1.3");
    }

    #[test]
    fn addresses_come_from_the_nodes_pod_cidr_when_it_has_one() {
        let ips = PodIps::default();
        let cidr = Some("10.244.7.0/24");
        let existing = [pod_with_ip("10.244.7.2")];
        assert_eq!(ips.ip_for(&node(), cidr, "a", &existing), "10.244.7.3");
        let hosts = cidr_hosts("10.1.0.0/30").unwrap();
        assert_eq!(hosts, ["10.1.0.2"]);
        assert_eq!(cidr_hosts("10.244.0.0/24").unwrap().len(), 253);
        assert!(cidr_hosts("fd00::/64").is_none());
        // A tiny CIDR still gives an address, reused when all are taken.
        let full = [pod_with_ip("10.1.0.2")];
        assert_eq!(
            ips.ip_for(&node(), Some("10.1.0.0/30"), "b", &full),
            "10.1.0.2"
        );
    }
}
