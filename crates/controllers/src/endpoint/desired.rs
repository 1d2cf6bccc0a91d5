//! The subsets a Service's Endpoints should hold, from the pods it selects (the loop of kube's
//! `syncService`, `podToEndpointAddressForService`, `addEndpointSubset`).

use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    EndpointAddress, EndpointPort, EndpointSubset, ObjectReference, Pod, Service,
};

use super::repack::repack_subsets;
use crate::podendpoints::pods::pod_ips;
use crate::podendpoints::service::{cluster_ip, is_ipv6, is_service_ip_set};
use crate::podendpoints::{find_port, should_pod_be_in_endpoints, should_set_hostname};
use crate::replicaset::pod_state::{is_pod_ready, node_name};

/// The subsets of the Endpoints of `service` and how many ready and not-ready addresses went in
/// (one per pod and port).
#[derive(Debug, Default, PartialEq)]
pub struct Desired {
    /// Subsets in canonical form.
    pub subsets: Vec<EndpointSubset>,
    /// Ready (address, port) pairs.
    pub ready: usize,
    /// Not-ready (address, port) pairs.
    pub not_ready: usize,
}

/// The address of `pod` for `service`: its first IP of the Service's family (the first of
/// `ipFamilies`; without them the cluster IP's, or for a headless Service the pod's primary IP's),
/// with the node and a reference to the pod. `None` when the pod has no IP of that family.
pub fn pod_address(service: &Service, pod: &Pod) -> Option<EndpointAddress> {
    let spec = service.spec.as_ref();
    let ipv6 = match spec
        .and_then(|s| s.ip_families.as_ref())
        .and_then(|f| f.first())
    {
        Some(family) => family == "IPv6",
        None if is_service_ip_set(service) => is_ipv6(cluster_ip(service)),
        None => pod
            .status
            .as_ref()
            .and_then(|s| s.pod_ip.as_deref())
            .is_some_and(is_ipv6),
    };
    let ip = pod_ips(pod).into_iter().find(|ip| is_ipv6(ip) == ipv6)?;
    Some(EndpointAddress {
        ip: ip.to_string(),
        hostname: None,
        node_name: Some(node_name(pod).to_string()),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".into()),
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            ..ObjectReference::default()
        }),
    })
}

/// The subsets of `service`'s Endpoints: each selected pod that
/// [should be in endpoints](should_pod_be_in_endpoints) (terminating pods only with
/// `publishNotReadyAddresses`), once per Service port it has (ports resolved by
/// [`find_port`]; a headless Service may have none), as a ready address if it is Ready or the
/// Service publishes not-ready addresses, else as a not-ready one.
pub fn desired_subsets(service: &Service, pods: &[Arc<Pod>]) -> Desired {
    let spec = service.spec.clone().unwrap_or_default();
    let publish_not_ready = spec.publish_not_ready_addresses.unwrap_or(false);
    let service_ports = spec.ports.unwrap_or_default();
    let mut subsets = Vec::new();
    let (mut ready, mut not_ready) = (0, 0);
    for pod in pods {
        if !should_pod_be_in_endpoints(pod, publish_not_ready) {
            continue;
        }
        let Some(mut address) = pod_address(service, pod) else {
            tracing::debug!(
                service = %rkcm_runtime::ObjectKey::from_obj(service),
                pod = pod.metadata.name.as_deref().unwrap_or(""),
                "failed to find an endpoint of the service's IP family on the pod"
            );
            continue;
        };
        if should_set_hostname(pod, service) {
            address.hostname = pod.spec.as_ref().and_then(|s| s.hostname.clone());
        }
        let is_ready = publish_not_ready || is_pod_ready(pod);
        let mut add = |ports: Option<Vec<EndpointPort>>| {
            let (addresses, not_ready_addresses) = if is_ready {
                ready += 1;
                (Some(vec![address.clone()]), None)
            } else {
                not_ready += 1;
                (None, Some(vec![address.clone()]))
            };
            subsets.push(EndpointSubset {
                addresses,
                not_ready_addresses,
                ports,
            });
        };
        if service_ports.is_empty() {
            // A headless Service may have no ports; any other gets no endpoints without one.
            if spec.cluster_ip.as_deref() == Some("None") {
                add(None);
            }
            continue;
        }
        for service_port in &service_ports {
            let Some(port) = find_port(pod, service_port) else {
                tracing::trace!(
                    service = %rkcm_runtime::ObjectKey::from_obj(service),
                    pod = pod.metadata.name.as_deref().unwrap_or(""),
                    "failed to find port for service"
                );
                continue;
            };
            add(Some(vec![EndpointPort {
                name: service_port.name.clone(),
                port,
                protocol: service_port.protocol.clone(),
                app_protocol: service_port.app_protocol.clone(),
            }]));
        }
    }
    Desired {
        subsets: repack_subsets(&subsets),
        ready,
        not_ready,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::podendpoints::fixtures::{pod, service};
    use k8s_openapi::api::core::v1::{PodIP, ServicePort};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn ips(list: &Option<Vec<EndpointAddress>>) -> Vec<&str> {
        list.iter().flatten().map(|a| a.ip.as_str()).collect()
    }

    fn web() -> Service {
        service("web", Some(&[("app", "web")]))
    }

    fn pods(list: &[Pod]) -> Vec<Arc<Pod>> {
        list.iter().cloned().map(Arc::new).collect()
    }

    /// Ported from endpoints_controller_test.go `TestSyncEndpointsItemsEmptySelectorSelectsAll`,
    /// `…NotReady` and `…Mixed`: ready pods are addresses, unready ones not-ready addresses.
    #[test]
    fn ready_pods_are_addresses_and_unready_pods_not_ready_addresses() {
        let d = desired_subsets(
            &web(),
            &pods(&[pod("a", "1.2.3.4", true), pod("b", "1.2.3.5", false)]),
        );
        assert_eq!(d.subsets.len(), 1);
        let subset = &d.subsets[0];
        assert_eq!(ips(&subset.addresses), ["1.2.3.4"]);
        assert_eq!(ips(&subset.not_ready_addresses), ["1.2.3.5"]);
        assert_eq!(
            subset.ports.as_deref().unwrap(),
            [EndpointPort {
                name: None,
                port: 8080,
                protocol: Some("TCP".into()),
                app_protocol: None
            }]
        );
        assert_eq!((d.ready, d.not_ready), (1, 1));
        let address = &subset.addresses.as_ref().unwrap()[0];
        assert_eq!(address.node_name.as_deref(), Some("node-1"));
        let target = address.target_ref.as_ref().unwrap();
        assert_eq!(target.kind.as_deref(), Some("Pod"));
        assert_eq!(target.name.as_deref(), Some("a"));
        assert_eq!(target.namespace.as_deref(), Some("ns"));
        assert_eq!(target.uid.as_deref(), Some("uid-a"));
    }

    /// Ported from `TestSyncEndpointsItemsExcludeNotReadyPodsWithRestartPolicyNeverAndPhaseFailed`
    /// and `…Succeeded`, and `TestSyncServiceAddresses`: terminal pods, pods without an IP and
    /// terminating pods (unless published) are left out.
    #[test]
    fn terminal_ipless_and_terminating_pods_are_left_out() {
        let mut failed = pod("f", "1.2.3.6", false);
        failed.status.as_mut().unwrap().phase = Some("Failed".into());
        let mut no_ip = pod("n", "", false);
        no_ip.status.as_mut().unwrap().pod_ips = None;
        let mut terminating = pod("t", "1.2.3.7", true);
        terminating.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        let all = pods(&[pod("a", "1.2.3.4", true), failed, no_ip, terminating]);
        let d = desired_subsets(&web(), &all);
        assert_eq!(ips(&d.subsets[0].addresses), ["1.2.3.4"]);
        assert_eq!(d.subsets[0].not_ready_addresses, None);

        // publishNotReadyAddresses: terminating and unready pods are ready addresses.
        let mut publish = web();
        publish.spec.as_mut().unwrap().publish_not_ready_addresses = Some(true);
        let mut all = all;
        all.push(Arc::new(pod("u", "1.2.3.8", false)));
        let d = desired_subsets(&publish, &all);
        assert_eq!(
            ips(&d.subsets[0].addresses),
            ["1.2.3.4", "1.2.3.7", "1.2.3.8"]
        );
        assert_eq!(d.not_ready, 0);
    }

    /// Ported from `TestSyncEndpointsItems`: several ports, named target ports resolved per pod.
    #[test]
    fn named_target_ports_resolve_per_pod_and_pods_without_them_are_skipped_for_that_port() {
        let mut svc = web();
        svc.spec.as_mut().unwrap().ports = Some(vec![
            ServicePort {
                name: Some("port0".into()),
                port: 80,
                protocol: Some("TCP".into()),
                target_port: Some(IntOrString::String("http".into())),
                ..ServicePort::default()
            },
            ServicePort {
                name: Some("port1".into()),
                port: 88,
                protocol: Some("UDP".into()),
                target_port: Some(IntOrString::Int(8088)),
                ..ServicePort::default()
            },
        ]);
        let mut other = pod("b", "1.2.3.5", true);
        other.spec.as_mut().unwrap().containers[0].ports = None;
        let d = desired_subsets(&svc, &pods(&[pod("a", "1.2.3.4", true), other]));
        // a offers both ports, b only the numeric one: the addresses of each port make a subset.
        type Ports<'a> = Vec<(Option<&'a str>, i32)>;
        let shape: Vec<(Vec<&str>, Ports)> = d
            .subsets
            .iter()
            .map(|s| {
                let ports = s.ports.iter().flatten();
                (
                    ips(&s.addresses),
                    ports.map(|p| (p.name.as_deref(), p.port)).collect(),
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                (vec!["1.2.3.4"], vec![(Some("port0"), 8080)]),
                (vec!["1.2.3.4", "1.2.3.5"], vec![(Some("port1"), 8088)]),
            ]
        );
        assert_eq!(
            d.subsets[1].ports.as_ref().unwrap()[0].protocol.as_deref(),
            Some("UDP")
        );
        assert_eq!(d.ready, 3);
    }

    /// Ported from `TestSyncEndpointsHeadlessWithoutPort` and `TestSyncEndpointsHeadlessService`:
    /// a headless Service without ports still gets addresses, a ClusterIP one does not.
    #[test]
    fn a_headless_service_without_ports_gets_addresses_without_ports() {
        let mut svc = web();
        let spec = svc.spec.as_mut().unwrap();
        spec.ports = None;
        spec.cluster_ip = Some("None".into());
        let d = desired_subsets(&svc, &pods(&[pod("a", "1.2.3.4", true)]));
        assert_eq!(d.subsets.len(), 1);
        assert_eq!(ips(&d.subsets[0].addresses), ["1.2.3.4"]);
        assert_eq!(d.subsets[0].ports, None);

        svc.spec.as_mut().unwrap().cluster_ip = Some("10.96.0.10".into());
        assert!(desired_subsets(&svc, &pods(&[pod("a", "1.2.3.4", true)]))
            .subsets
            .is_empty());
    }

    /// Ported from `TestPodToEndpointAddressForService`.
    #[test]
    fn the_address_is_the_pods_ip_of_the_services_family() {
        let mut dual = pod("a", "1.2.3.4", true);
        dual.status.as_mut().unwrap().pod_ips = Some(vec![
            PodIP {
                ip: "1.2.3.4".into(),
            },
            PodIP {
                ip: "2000::1".into(),
            },
        ]);
        let mut svc = web();
        assert_eq!(pod_address(&svc, &dual).unwrap().ip, "1.2.3.4");
        svc.spec.as_mut().unwrap().ip_families = Some(vec!["IPv6".into()]);
        assert_eq!(pod_address(&svc, &dual).unwrap().ip, "2000::1");
        // No ipFamilies: the cluster IP's family.
        let spec = svc.spec.as_mut().unwrap();
        spec.ip_families = None;
        spec.cluster_ip = Some("fd00::10".into());
        assert_eq!(pod_address(&svc, &dual).unwrap().ip, "2000::1");
        // Headless without ipFamilies: the pod's primary IP's family.
        svc.spec.as_mut().unwrap().cluster_ip = Some("None".into());
        assert_eq!(pod_address(&svc, &dual).unwrap().ip, "1.2.3.4");
        // An IPv6 Service and an IPv4-only pod: no address.
        svc.spec.as_mut().unwrap().ip_families = Some(vec!["IPv6".into()]);
        assert!(pod_address(&svc, &pod("b", "1.2.3.5", true)).is_none());
    }

    /// Ported from `TestSyncEndpointsHeadlessService` (hostname part).
    #[test]
    fn pods_in_the_services_subdomain_carry_their_hostname() {
        let mut p = pod("a", "1.2.3.4", true);
        let spec = p.spec.as_mut().unwrap();
        spec.hostname = Some("a-host".into());
        spec.subdomain = Some("web".into());
        let d = desired_subsets(&web(), &pods(&[p]));
        let address = &d.subsets[0].addresses.as_ref().unwrap()[0];
        assert_eq!(address.hostname.as_deref(), Some("a-host"));
    }
}
