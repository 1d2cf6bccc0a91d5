//! Pod IP allocation per node from the node's `spec.podCIDR` (else `10.244.<n>.0/24`),
//! remembering what this process handed out.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;
use rkcm_runtime::informer::Store;

use crate::node_set::SimNode;
use crate::scheduler::predicates::is_terminal;

/// Name of the kubelet's pod index of reported IPs: `<node>/<podIP>` for each pod bound to a
/// node that is not terminal and reports an IP ([`reported_ip_index`]), so that allocating an IP
/// asks whether an address is taken without reading the node's pods.
pub const REPORTED_IP_INDEX: &str = "nodeName/podIP";

/// The [`REPORTED_IP_INDEX`] value of `ip` reported on `node`. Node names hold no `/`.
fn reported_ip_value(node: &str, ip: &str) -> String {
    format!("{node}/{ip}")
}

/// Index function of [`REPORTED_IP_INDEX`].
pub fn reported_ip_index(pod: &Pod) -> Vec<String> {
    if is_terminal(pod) {
        return Vec::new();
    }
    let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
    let ip = pod.status.as_ref().and_then(|s| s.pod_ip.as_deref());
    match (node, ip) {
        (Some(node), Some(ip)) if !node.is_empty() => vec![reported_ip_value(node, ip)],
        _ => Vec::new(),
    }
}

/// The IPs the cached pods of one node report, read from a pod store with [`REPORTED_IP_INDEX`].
#[derive(Debug, Clone, Copy)]
pub struct ReportedIps<'a> {
    pods: &'a Store<Pod>,
    node: &'a str,
}

impl<'a> ReportedIps<'a> {
    /// The IPs reported on `node` by the pods of `pods`, which must have [`REPORTED_IP_INDEX`].
    pub fn new(pods: &'a Store<Pod>, node: &'a str) -> Self {
        Self { pods, node }
    }

    /// Whether a non-terminal pod of the node reports `ip`.
    fn contains(&self, ip: &str) -> bool {
        self.pods
            .has_index_value(REPORTED_IP_INDEX, &reported_ip_value(self.node, ip))
    }

    /// How many distinct IPs the node's non-terminal pods report. Lists the index's values of
    /// every node: only asked when all of the node's addresses are taken.
    fn count(&self) -> usize {
        let prefix = reported_ip_value(self.node, "");
        self.pods
            .index_values(REPORTED_IP_INDEX)
            .iter()
            .filter(|value| value.starts_with(&prefix))
            .count()
    }
}

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
    /// `reported` are the IPs the node's non-terminal cached pods report, which are taken.
    /// Costs an index lookup per address tried, not a read of the node's pods.
    pub fn ip_for(
        &self,
        node: &SimNode,
        pod_cidr: Option<&str>,
        uid: &str,
        reported: ReportedIps<'_>,
    ) -> String {
        let mut given = self.given.lock();
        if let Some((_, ip)) = given.by_pod.get(uid) {
            return ip.clone();
        }
        let on_node = given.by_node.get(&node.name);
        let used =
            |ip: &String| on_node.is_some_and(|g| g.contains_key(ip)) || reported.contains(ip);
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
                let in_use = reported.count()
                    + on_node.map_or(0, |g| g.keys().filter(|ip| !reported.contains(ip)).count());
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
    use std::sync::Arc;

    fn cidr_hosts(cidr: &str) -> Option<Vec<String>> {
        Some(host_addresses(cidr)?.map(|ip| ip.to_string()).collect())
    }
    use jiff::Timestamp;
    use k8s_openapi::api::core::v1::{PodSpec, PodStatus};

    fn node() -> SimNode {
        SimNode {
            name: "rkcm-node-1".into(),
            index: 1,
            uid: String::new(),
            registered_at: Timestamp::UNIX_EPOCH,
        }
    }

    /// A pod named `name` bound to `node`, in `phase`, reporting `ip`.
    fn pod_on(node: &str, name: &str, phase: &str, ip: Option<&str>) -> Pod {
        let mut pod = Pod {
            spec: Some(PodSpec {
                node_name: Some(node.into()),
                ..Default::default()
            }),
            status: Some(PodStatus {
                pod_ip: ip.map(Into::into),
                phase: Some(phase.into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        pod.metadata.namespace = Some("default".into());
        pod.metadata.name = Some(name.into());
        pod
    }

    fn pod_with_ip(ip: &str) -> Pod {
        pod_on(&node().name, ip, "Running", Some(ip))
    }

    /// A kubelet's pod cache holding `pods`.
    fn cached<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Store<Pod> {
        let store = Store::new();
        store.add_indexer(REPORTED_IP_INDEX, reported_ip_index);
        for pod in pods {
            store.insert(Arc::new(pod.clone()));
        }
        store
    }

    /// The IPs `pods` report on `node`.
    fn on<'a>(pods: &'a Store<Pod>, node: &'a SimNode) -> ReportedIps<'a> {
        ReportedIps::new(pods, &node.name)
    }

    #[test]
    fn hands_out_the_lowest_free_address_and_keeps_it_per_pod() {
        let ips = PodIps::default();
        let existing = cached(&[pod_with_ip("10.244.1.2")]);
        let node = node();
        assert_eq!(
            ips.ip_for(&node, None, "a", on(&existing, &node)),
            "10.244.1.3"
        );
        assert_eq!(
            ips.ip_for(&node, None, "a", on(&existing, &node)),
            "10.244.1.3"
        );
        assert_eq!(
            ips.ip_for(&node, None, "b", on(&existing, &node)),
            "10.244.1.4"
        );
        ips.release("a");
        assert_eq!(
            ips.ip_for(&node, None, "c", on(&existing, &node)),
            "10.244.1.3"
        );
    }

    #[test]
    fn other_nodes_addresses_do_not_count_and_released_ones_come_back() {
        let ips = PodIps::default();
        let none = cached([]);
        let other = SimNode {
            name: "rkcm-node-2".into(),
            index: 2,
            ..node()
        };
        let node = node();
        let cidr = Some("10.9.0.0/24");
        assert_eq!(ips.ip_for(&other, cidr, "x", on(&none, &other)), "10.9.0.2");
        assert_eq!(ips.ip_for(&node, cidr, "a", on(&none, &node)), "10.9.0.2");
        assert_eq!(ips.ip_for(&node, cidr, "b", on(&none, &node)), "10.9.0.3");
        ips.release("x");
        ips.release("a");
        assert_eq!(ips.ip_for(&node, cidr, "c", on(&none, &node)), "10.9.0.2");
        // Addresses are reused once all are taken, and stay held while a pod holds them.
        let tiny = Some("10.1.0.0/30");
        assert_eq!(ips.ip_for(&other, tiny, "p", on(&none, &other)), "10.1.0.2");
        assert_eq!(ips.ip_for(&other, tiny, "q", on(&none, &other)), "10.1.0.2");
        ips.release("p");
        assert_eq!(ips.ip_for(&other, tiny, "r", on(&none, &other)), "10.1.0.2");
    }

    #[test]
    fn addresses_come_from_the_nodes_pod_cidr_when_it_has_one() {
        let ips = PodIps::default();
        let node = node();
        let cidr = Some("10.244.7.0/24");
        let existing = cached(&[pod_with_ip("10.244.7.2")]);
        assert_eq!(
            ips.ip_for(&node, cidr, "a", on(&existing, &node)),
            "10.244.7.3"
        );
        let hosts = cidr_hosts("10.1.0.0/30").unwrap();
        assert_eq!(hosts, ["10.1.0.2"]);
        assert_eq!(cidr_hosts("10.244.0.0/24").unwrap().len(), 253);
        assert!(cidr_hosts("fd00::/64").is_none());
        // A tiny CIDR still gives an address, reused when all are taken.
        let full = cached(&[pod_with_ip("10.1.0.2")]);
        assert_eq!(
            ips.ip_for(&node, Some("10.1.0.0/30"), "b", on(&full, &node)),
            "10.1.0.2"
        );
    }

    /// Only the node's pods that are not terminal and report an IP take it, read from the index
    /// as the cache changes.
    #[test]
    fn reported_addresses_come_from_the_index_of_live_pods_on_the_node() {
        let ips = PodIps::default();
        let node = node();
        let cidr = Some("10.1.0.0/29"); // 10.1.0.2 to 10.1.0.6
        let pods = cached(&[
            pod_on(&node.name, "running", "Running", Some("10.1.0.2")),
            pod_on(&node.name, "done", "Succeeded", Some("10.1.0.3")),
            pod_on("rkcm-node-2", "elsewhere", "Running", Some("10.1.0.4")),
            pod_on(&node.name, "pending", "Pending", None),
        ]);
        let mut values = pods.index_values(REPORTED_IP_INDEX);
        values.sort();
        assert_eq!(values, ["rkcm-node-1/10.1.0.2", "rkcm-node-2/10.1.0.4"]);
        assert_eq!(ips.ip_for(&node, cidr, "a", on(&pods, &node)), "10.1.0.3");
        assert_eq!(ips.ip_for(&node, cidr, "b", on(&pods, &node)), "10.1.0.4");
        // The running pod fails: its address is free again.
        pods.insert(Arc::new(pod_on(
            &node.name,
            "running",
            "Failed",
            Some("10.1.0.2"),
        )));
        assert_eq!(ips.ip_for(&node, cidr, "c", on(&pods, &node)), "10.1.0.2");
        // Two more live pods report addresses: .6 is the last free one, then every address is
        // taken and one is reused by how many are in use.
        pods.insert(Arc::new(pod_on(
            &node.name,
            "r1",
            "Running",
            Some("10.1.0.5"),
        )));
        pods.insert(Arc::new(pod_on(
            &node.name,
            "r2",
            "Running",
            Some("10.1.0.2"),
        )));
        assert_eq!(ips.ip_for(&node, cidr, "d", on(&pods, &node)), "10.1.0.6");
        assert_eq!(on(&pods, &node).count(), 2);
        // Reported: .5 and .2; given and not reported: .3, .4, .6 — 5 in use.
        assert_eq!(ips.ip_for(&node, cidr, "e", on(&pods, &node)), "10.1.0.2");
    }
}
