//! One pod as an EndpointSlice endpoint, endpoint identity and port sets (`podToEndpoint`,
//! `getEndpointPorts`, `EndpointSet`, `PortMapKey`, `EndpointsEqualBeyondHash` of
//! k8s.io/endpointslice).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort};

use crate::podendpoints::pods::pod_ips;
use crate::podendpoints::service::IpFamily;
use crate::podendpoints::{find_port, should_set_hostname};
use crate::replicaset::pod_state::{is_pod_ready, node_name};

/// Label of the zone a node is in (`v1.LabelTopologyZone`).
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// The endpoint of `pod` for `service` in the slices of `family`: the pod's IPs of that family,
/// conditions (`serving` = Ready, `terminating` = being deleted, `ready` = serving and not
/// terminating, or always with `publishNotReadyAddresses`), node, zone (from the node's
/// `topology.kubernetes.io/zone`), hostname for the Service's subdomain, and a reference to the
/// pod. No hints: topology-aware routing is not enabled.
pub fn pod_to_endpoint(
    pod: &Pod,
    node: Option<&Node>,
    service: &Service,
    family: IpFamily,
) -> Endpoint {
    let serving = is_pod_ready(pod);
    let terminating = pod.metadata.deletion_timestamp.is_some();
    let publish = service
        .spec
        .as_ref()
        .and_then(|s| s.publish_not_ready_addresses)
        .unwrap_or(false);
    let ready = publish || (serving && !terminating);
    let addresses = pod_ips(pod)
        .into_iter()
        .filter(|ip| family.matches(ip))
        .map(|ip| {
            // Re-printed as kube does (`ParseIPSloppy(..).String()`), when it parses.
            ip.parse::<std::net::IpAddr>()
                .map_or_else(|_| ip.to_string(), |parsed| parsed.to_string())
        })
        .collect();
    let node_name = Some(node_name(pod).to_string()).filter(|n| !n.is_empty());
    let zone = node
        .and_then(|n| n.metadata.labels.as_ref())
        .and_then(|l| l.get(ZONE_LABEL))
        .filter(|z| !z.is_empty())
        .cloned();
    let hostname = should_set_hostname(pod, service)
        .then(|| pod.spec.as_ref().and_then(|s| s.hostname.clone()))
        .flatten();
    Endpoint {
        addresses,
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        }),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".into()),
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            ..ObjectReference::default()
        }),
        node_name,
        zone,
        hostname,
        ..Endpoint::default()
    }
}

/// The ports of `pod`'s endpoint: one per Service port the pod has (see [`find_port`]); none
/// for a headless Service without ports.
pub fn endpoint_ports(service: &Service, pod: &Pod) -> Vec<EndpointPort> {
    let Some(spec) = service.spec.as_ref() else {
        return Vec::new();
    };
    spec.ports
        .iter()
        .flatten()
        .filter_map(|sp| {
            let port = find_port(pod, sp)?;
            Some(EndpointPort {
                name: Some(sp.name.clone().unwrap_or_default()),
                port: Some(port),
                protocol: Some(sp.protocol.clone().unwrap_or_else(|| "TCP".into())),
                app_protocol: sp.app_protocol.clone(),
            })
        })
        .collect()
}

/// A set of endpoint ports as a sortable value, equal for equal sets in any order
/// (`NewPortMapKey`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PortMapKey(Vec<(String, i32, String, String)>);

fn port_tuple(p: &EndpointPort) -> (String, i32, String, String) {
    (
        p.name.clone().unwrap_or_default(),
        p.port.unwrap_or(0),
        p.protocol.clone().unwrap_or_default(),
        p.app_protocol.clone().unwrap_or_default(),
    )
}

impl PortMapKey {
    /// The key of `ports`.
    pub fn new(ports: &[EndpointPort]) -> Self {
        let mut tuples: Vec<_> = ports.iter().map(port_tuple).collect();
        tuples.sort();
        Self(tuples)
    }
}

/// `ports` in the order their keys sort, so that equal sets are written alike.
pub fn sorted_ports(ports: &[EndpointPort]) -> Vec<EndpointPort> {
    let mut ports = ports.to_vec();
    ports.sort_by_key(port_tuple);
    ports
}

/// What identifies an endpoint across syncs: its addresses, hostname and the namespace and name
/// it points to (`hashEndpoint`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EndpointKey {
    addresses: Vec<String>,
    hostname: String,
    namespace: String,
    name: String,
}

impl EndpointKey {
    /// The key of `endpoint`.
    pub fn of(endpoint: &Endpoint) -> Self {
        let mut addresses = endpoint.addresses.clone();
        addresses.sort();
        let target = endpoint.target_ref.as_ref();
        Self {
            addresses,
            hostname: endpoint.hostname.clone().unwrap_or_default(),
            namespace: target.and_then(|t| t.namespace.clone()).unwrap_or_default(),
            name: target.and_then(|t| t.name.clone()).unwrap_or_default(),
        }
    }
}

/// Desired endpoints by identity; popped in key order, so that packing is deterministic.
pub type EndpointSet = BTreeMap<EndpointKey, Endpoint>;

/// Whether two endpoints with the same identity differ in what the key leaves out: node, zone,
/// conditions, or the target reference (its resourceVersion aside) (`EndpointsEqualBeyondHash`).
pub fn endpoints_equal_beyond_hash(a: &Endpoint, b: &Endpoint) -> bool {
    let target = |e: &Endpoint| {
        e.target_ref.clone().map(|mut r| {
            r.resource_version = None;
            r
        })
    };
    let conditions = |e: &Endpoint| {
        let c = e.conditions.clone().unwrap_or_default();
        (c.ready, c.serving, c.terminating)
    };
    a.node_name == b.node_name
        && a.zone == b.zone
        && conditions(a) == conditions(b)
        && target(a) == target(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::podendpoints::fixtures::{node, pod, service};
    use k8s_openapi::api::core::v1::PodIP;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn conditions(e: &Endpoint) -> (Option<bool>, Option<bool>, Option<bool>) {
        let c = e.conditions.clone().unwrap();
        (c.ready, c.serving, c.terminating)
    }

    /// Ported from k8s.io/endpointslice utils_test.go `TestPodToEndpoint`.
    #[test]
    fn a_pod_becomes_an_endpoint_with_conditions_node_zone_and_reference() {
        let svc = service("web", Some(&[("app", "web")]));
        let n = node("node-1", Some("zone-a"));
        let ready = pod("a", "1.2.3.4", true);
        let e = pod_to_endpoint(&ready, Some(&n), &svc, IpFamily::V4);
        assert_eq!(e.addresses, ["1.2.3.4"]);
        assert_eq!(conditions(&e), (Some(true), Some(true), Some(false)));
        assert_eq!(e.node_name.as_deref(), Some("node-1"));
        assert_eq!(e.zone.as_deref(), Some("zone-a"));
        assert_eq!(e.hints, None);
        let target = e.target_ref.unwrap();
        assert_eq!(
            (
                target.kind.as_deref(),
                target.name.as_deref(),
                target.uid.as_deref()
            ),
            (Some("Pod"), Some("a"), Some("uid-a"))
        );

        // Not ready.
        let unready = pod("b", "1.2.3.5", false);
        let e = pod_to_endpoint(&unready, None, &svc, IpFamily::V4);
        assert_eq!(conditions(&e), (Some(false), Some(false), Some(false)));
        assert_eq!(e.zone, None);

        // Terminating but still serving: not ready.
        let mut terminating = ready.clone();
        terminating.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        let e = pod_to_endpoint(&terminating, Some(&n), &svc, IpFamily::V4);
        assert_eq!(conditions(&e), (Some(false), Some(true), Some(true)));

        // publishNotReadyAddresses: always ready.
        let mut publish = svc.clone();
        publish.spec.as_mut().unwrap().publish_not_ready_addresses = Some(true);
        let e = pod_to_endpoint(&terminating, Some(&n), &publish, IpFamily::V4);
        assert_eq!(conditions(&e), (Some(true), Some(true), Some(true)));
        let e = pod_to_endpoint(&unready, Some(&n), &publish, IpFamily::V4);
        assert_eq!(conditions(&e), (Some(true), Some(false), Some(false)));

        // Only addresses of the slice's family.
        let mut dual = ready.clone();
        dual.status.as_mut().unwrap().pod_ips = Some(vec![
            PodIP {
                ip: "1.2.3.4".into(),
            },
            PodIP {
                ip: "2000:0::1".into(),
            },
        ]);
        assert_eq!(
            pod_to_endpoint(&dual, None, &svc, IpFamily::V6).addresses,
            ["2000::1"]
        );
        assert_eq!(
            pod_to_endpoint(&dual, None, &svc, IpFamily::V4).addresses,
            ["1.2.3.4"]
        );
    }

    /// Ported from utils_test.go `TestGetEndpointPorts`.
    #[test]
    fn endpoint_ports_follow_the_service_ports_the_pod_has() {
        let svc = service("web", Some(&[("app", "web")]));
        let ports = endpoint_ports(&svc, &pod("a", "1.2.3.4", true));
        assert_eq!(
            ports,
            [EndpointPort {
                name: Some(String::new()),
                port: Some(8080),
                protocol: Some("TCP".into()),
                app_protocol: None
            }]
        );
        let mut headless = svc.clone();
        headless.spec.as_mut().unwrap().ports = None;
        assert!(endpoint_ports(&headless, &pod("a", "1.2.3.4", true)).is_empty());
    }

    #[test]
    fn equal_port_sets_have_equal_keys_and_endpoint_identity_ignores_conditions() {
        let p = |name: &str, port: i32| EndpointPort {
            name: Some(name.into()),
            port: Some(port),
            protocol: Some("TCP".into()),
            app_protocol: None,
        };
        assert_eq!(
            PortMapKey::new(&[p("a", 1), p("b", 2)]),
            PortMapKey::new(&[p("b", 2), p("a", 1)])
        );
        assert_ne!(PortMapKey::new(&[p("a", 1)]), PortMapKey::new(&[p("a", 2)]));

        let svc = service("web", Some(&[("app", "web")]));
        let ready = pod_to_endpoint(&pod("a", "1.2.3.4", true), None, &svc, IpFamily::V4);
        let unready = pod_to_endpoint(&pod("a", "1.2.3.4", false), None, &svc, IpFamily::V4);
        assert_eq!(EndpointKey::of(&ready), EndpointKey::of(&unready));
        assert!(!endpoints_equal_beyond_hash(&ready, &unready));
        let mut with_rv = ready.clone();
        with_rv.target_ref.as_mut().unwrap().resource_version = Some("9".into());
        assert!(endpoints_equal_beyond_hash(&ready, &with_rv));
    }
}
