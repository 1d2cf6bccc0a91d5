//! Quota usage of Services: `pkg/quota/v1/evaluator/core/services.go` (`services`,
//! `count/services`, `services.nodeports`, `services.loadbalancers`).

use k8s_openapi::api::core::v1::Service;

use super::resources::{intersection, ResourceList};
use crate::quantity::{Format, Quantity};

/// `count/services`.
pub const SERVICE_OBJECT_COUNT_NAME: &str = "count/services";

/// `serviceResources`.
pub const SERVICE_RESOURCES: &[&str] = &[
    SERVICE_OBJECT_COUNT_NAME,
    "services",
    "services.nodeports",
    "services.loadbalancers",
];

/// `MatchingResources` of the service evaluator.
pub fn matching_resources<S: AsRef<str>>(input: &[S]) -> Vec<String> {
    intersection(input, SERVICE_RESOURCES)
}

fn count(n: usize) -> Quantity {
    Quantity::new(i64::try_from(n).unwrap_or(i64::MAX), Format::DecimalSI)
}

/// `Usage`: one service; its ports as node ports when it is a NodePort or LoadBalancer Service
/// (only ports with an explicit `nodePort` when a load balancer allocates none); one load
/// balancer for a LoadBalancer Service.
pub fn usage(svc: &Service) -> ResourceList {
    let spec = svc.spec.as_ref();
    let ports = spec.and_then(|s| s.ports.as_ref());
    let n_ports = ports.map_or(0, Vec::len);
    let mut result = ResourceList::new();
    result.insert(SERVICE_OBJECT_COUNT_NAME.into(), count(1));
    result.insert("services".into(), count(1));
    result.insert("services.loadbalancers".into(), count(0));
    result.insert("services.nodeports".into(), count(0));
    match spec.and_then(|s| s.type_.as_deref()) {
        Some("NodePort") => {
            result.insert("services.nodeports".into(), count(n_ports));
        }
        Some("LoadBalancer") => {
            let node_ports =
                if spec.and_then(|s| s.allocate_load_balancer_node_ports) == Some(false) {
                    ports
                        .into_iter()
                        .flatten()
                        .filter(|p| p.node_port.is_some_and(|n| n != 0))
                        .count()
                } else {
                    n_ports
                };
            result.insert("services.nodeports".into(), count(node_ports));
            result.insert("services.loadbalancers".into(), count(1));
        }
        _ => {}
    }
    result
}

/// `GetQuotaServiceType`: the type when it is one quota counts (NodePort, LoadBalancer).
pub fn quota_service_type(svc: &Service) -> Option<&str> {
    match svc.spec.as_ref().and_then(|s| s.type_.as_deref()) {
        Some(t @ ("NodePort" | "LoadBalancer")) => Some(t),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::resources::{equals, list};
    use k8s_openapi::api::core::v1::{ServicePort, ServiceSpec};

    fn service(type_: &str, node_ports: &[i32], allocate: Option<bool>) -> Service {
        Service {
            spec: Some(ServiceSpec {
                type_: Some(type_.into()),
                allocate_load_balancer_node_ports: allocate,
                ports: Some(
                    node_ports
                        .iter()
                        .enumerate()
                        .map(|(i, n)| ServicePort {
                            port: 27443 + i as i32,
                            node_port: (*n != 0).then_some(*n),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    // TestServiceEvaluatorMatchesResources
    #[test]
    fn matching_resources_keeps_service_names() {
        assert_eq!(
            matching_resources(&[
                "services.nodeports",
                "services.loadbalancers",
                "services",
                "count/services",
                "cpu"
            ]),
            [
                "count/services",
                "services",
                "services.loadbalancers",
                "services.nodeports"
            ]
        );
    }

    // TestServiceEvaluatorUsage
    #[test]
    fn usage_counts_node_ports_and_load_balancers() {
        let cases = [
            (
                "loadbalancer",
                service("LoadBalancer", &[0], None),
                list(&[
                    ("services.nodeports", "1"),
                    ("services.loadbalancers", "1"),
                    ("services", "1"),
                    ("count/services", "1"),
                ]),
            ),
            (
                "loadbalancer_ports",
                service("LoadBalancer", &[32001], None),
                list(&[
                    ("services.nodeports", "1"),
                    ("services.loadbalancers", "1"),
                    ("services", "1"),
                    ("count/services", "1"),
                ]),
            ),
            (
                "clusterip",
                service("ClusterIP", &[0], None),
                list(&[
                    ("services", "1"),
                    ("services.nodeports", "0"),
                    ("services.loadbalancers", "0"),
                    ("count/services", "1"),
                ]),
            ),
            (
                "nodeports",
                service("NodePort", &[0], None),
                list(&[
                    ("services", "1"),
                    ("services.nodeports", "1"),
                    ("services.loadbalancers", "0"),
                    ("count/services", "1"),
                ]),
            ),
            (
                "multi-nodeports",
                service("NodePort", &[0, 0], None),
                list(&[
                    ("services", "1"),
                    ("services.nodeports", "2"),
                    ("services.loadbalancers", "0"),
                    ("count/services", "1"),
                ]),
            ),
            (
                "nodeports-disabled",
                service("LoadBalancer", &[0, 0], Some(false)),
                list(&[
                    ("services", "1"),
                    ("services.nodeports", "0"),
                    ("services.loadbalancers", "1"),
                    ("count/services", "1"),
                ]),
            ),
            (
                "nodeports-default-enabled",
                service("LoadBalancer", &[0, 0], None),
                list(&[
                    ("services", "1"),
                    ("services.nodeports", "2"),
                    ("services.loadbalancers", "1"),
                    ("count/services", "1"),
                ]),
            ),
            (
                "nodeports-explicitly-enabled",
                service("LoadBalancer", &[0, 0], Some(true)),
                list(&[
                    ("services", "1"),
                    ("services.nodeports", "2"),
                    ("services.loadbalancers", "1"),
                    ("count/services", "1"),
                ]),
            ),
            (
                "nodeports-disabled-but-specified",
                service("LoadBalancer", &[32001, 32002], Some(false)),
                list(&[
                    ("services", "1"),
                    ("services.nodeports", "2"),
                    ("services.loadbalancers", "1"),
                    ("count/services", "1"),
                ]),
            ),
        ];
        for (name, svc, want) in cases {
            assert!(equals(&usage(&svc), &want), "{name}: {:?}", usage(&svc));
        }
    }

    #[test]
    fn only_node_port_and_load_balancer_types_are_quota_types() {
        assert_eq!(
            quota_service_type(&service("NodePort", &[], None)),
            Some("NodePort")
        );
        assert_eq!(quota_service_type(&service("ClusterIP", &[], None)), None);
    }
}
