//! Pod IP allocation per node from the node's `spec.podCIDR` (else `10.244.<n>.0/24`),
//! remembering what this process handed out.

use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;

use crate::node_set::SimNode;
use crate::scheduler::predicates::is_terminal;

/// The host addresses of an IPv4 CIDR a pod may get, in order: from the second address (the
/// first is the network's, the next the gateway's, as bridge CNIs do) to the one before the
/// broadcast, at most 65,534 of them. `None` for IPv6 or an unparsable CIDR.
fn host_addresses(cidr: &str) -> Option<impl Iterator<Item = Ipv4Addr>> {
    let (addr, prefix) = cidr.split_once('/')?;
    let base = u32::from(addr.parse::<Ipv4Addr>().ok()?);
    let prefix: u32 = prefix.parse().ok().filter(|p| *p <= 30)?;
    let size = 1u64 << (32 - prefix);
    let base = base & !((size - 1) as u32);
    let last = (size - 2).min(65_535);
    Some(
        (2..=last)
            .filter_map(|h| u32::try_from(h).ok())
            .map(move |h| Ipv4Addr::from(base.wrapping_add(h))),
    )
}

/// Hands out pod IPs from the node's pod CIDR (`10.244.<node>.2` … `.254` when it has none),
/// skipping those held by running pods on the node.
#[derive(Debug, Default)]
pub struct PodIps {
    given: Mutex<Given>,
}

/// Every IP this process handed out and has not released, by pod and by node.
#[derive(Debug, Default)]
struct Given {
    /// Pod UID → (node name, IP).
    by_pod: HashMap<String, (String, String)>,
    /// Node name → the IPs given on it, with how many pods hold each.
    by_node: HashMap<String, HashMap<String, usize>>,
}

impl PodIps {
    /// The IP for the pod `uid` on `node`: the one it already got, else the lowest free one.
    /// `pods_on_node` are the cached pods bound to the node, whose reported IPs are taken.
    /// Costs what the node holds, not what the cluster holds.
    pub fn ip_for<'a>(
        &self,
        node: &SimNode,
        pod_cidr: Option<&str>,
        uid: &str,
        pods_on_node: impl IntoIterator<Item = &'a Pod>,
    ) -> String {
        let mut given = self.given.lock();
        if let Some((_, ip)) = given.by_pod.get(uid) {
            return ip.clone();
        }
        let reported: HashSet<&str> = pods_on_node
            .into_iter()
            .filter(|p| !is_terminal(p))
            .filter_map(|p| p.status.as_ref().and_then(|s| s.pod_ip.as_deref()))
            .collect();
        let on_node = given.by_node.get(&node.name);
        let used = |ip: &String| {
            reported.contains(ip.as_str()) || on_node.is_some_and(|g| g.contains_key(ip))
        };
        let hosts = || -> Box<dyn Iterator<Item = String>> {
            match pod_cidr.and_then(host_addresses) {
                Some(hosts) => Box::new(hosts.map(|ip| ip.to_string())),
                None => Box::new((2..=254u8).map(|host| node.pod_ip(host))),
            }
        };
        let ip = match hosts().find(|ip| !used(ip)) {
            Some(free) => free,
            None => {
                // More live pods than addresses reuse addresses; max-pods defaults to 110.
                let in_use = reported.len()
                    + on_node.map_or(0, |g| {
                        g.keys()
                            .filter(|ip| !reported.contains(ip.as_str()))
                            .count()
                    });
                let all: Vec<String> = hosts().collect();
                all[in_use % all.len()].clone()
            }
        };
        given
            .by_node
            .entry(node.name.clone())
            .or_default()
            .entry(ip.clone())
            .and_modify(|holders| *holders += 1)
            .or_insert(1);
        given
            .by_pod
            .insert(uid.to_string(), (node.name.clone(), ip.clone()));
        ip
    }

    /// Releases the IP of pod `uid` (deleted or finished).
    pub fn release(&self, uid: &str) {
        let mut given = self.given.lock();
        let Some((node, ip)) = given.by_pod.remove(uid) else {
            return;
        };
        if let Some(ips) = given.by_node.get_mut(&node) {
            if let Some(holders) = ips.get_mut(&ip) {
                *holders -= 1;
                if *holders == 0 {
                    ips.remove(&ip);
                }
            }
            if ips.is_empty() {
                given.by_node.remove(&node);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cidr_hosts(cidr: &str) -> Option<Vec<String>> {
        Some(host_addresses(cidr)?.map(|ip| ip.to_string()).collect())
    }
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
    fn other_nodes_addresses_do_not_count_and_released_ones_come_back() {
        let ips = PodIps::default();
        let other = SimNode {
            name: "rkcm-node-2".into(),
            index: 2,
            ..node()
        };
        let cidr = Some("10.9.0.0/24");
        assert_eq!(ips.ip_for(&other, cidr, "x", []), "10.9.0.2");
        assert_eq!(ips.ip_for(&node(), cidr, "a", []), "10.9.0.2");
        assert_eq!(ips.ip_for(&node(), cidr, "b", []), "10.9.0.3");
        ips.release("x");
        ips.release("a");
        assert_eq!(ips.ip_for(&node(), cidr, "c", []), "10.9.0.2");
        // Addresses are reused once all are taken, and stay held while a pod holds them.
        let tiny = Some("10.1.0.0/30");
        assert_eq!(ips.ip_for(&other, tiny, "p", []), "10.1.0.2");
        assert_eq!(ips.ip_for(&other, tiny, "q", []), "10.1.0.2");
        ips.release("p");
        assert_eq!(ips.ip_for(&other, tiny, "r", []), "10.1.0.2");
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
