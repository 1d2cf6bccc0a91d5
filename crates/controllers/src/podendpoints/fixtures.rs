//! Services, pods and nodes for the tests of the endpoint controllers.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Container, ContainerPort, Node, Pod, PodCondition, PodIP, PodSpec, PodStatus, Service,
    ServicePort, ServiceSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The time fixtures are created at.
pub(crate) fn t0() -> Timestamp {
    "2025-01-01T00:00:00Z".parse().expect("a timestamp")
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A ClusterIP Service `name` in `ns` (uid `uid-<name>`), IPv4, selecting `selector`, with one
/// TCP port 80 → 8080.
pub(crate) fn service(name: &str, selector: Option<&[(&str, &str)]>) -> Service {
    Service {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            uid: Some(format!("uid-{name}")),
            creation_timestamp: Some(Time(t0())),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            selector: selector.map(labels),
            cluster_ip: Some("10.96.0.10".into()),
            ip_families: Some(vec!["IPv4".into()]),
            ports: Some(vec![ServicePort {
                port: 80,
                protocol: Some("TCP".into()),
                target_port: Some(IntOrString::Int(8080)),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    }
}

/// A pod `name` in `ns` labelled `app=web`, on node `node-1`, Running with IP `ip`, Ready or not.
pub(crate) fn pod(name: &str, ip: &str, ready: bool) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("ns".into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("1".into()),
            labels: Some(labels(&[("app", "web")])),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: Some("node-1".into()),
            containers: vec![Container {
                name: "c".into(),
                ports: Some(vec![ContainerPort {
                    name: Some("http".into()),
                    container_port: 8080,
                    protocol: Some("TCP".into()),
                    ..ContainerPort::default()
                }]),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: Some("Running".into()),
            pod_ip: Some(ip.into()),
            pod_ips: Some(vec![PodIP { ip: ip.into() }]),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                last_transition_time: Some(Time(t0())),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        }),
    }
}

/// A node `name`, in `zone` when given.
pub(crate) fn node(name: &str, zone: Option<&str>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: zone.map(|z| labels(&[("topology.kubernetes.io/zone", z)])),
            ..ObjectMeta::default()
        },
        ..Node::default()
    }
}
