//! The container port a Service port targets on one pod (`FindPort`).

use k8s_openapi::api::core::v1::{Pod, ServicePort};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// The port of `pod` that `service_port` targets: a numeric `targetPort` as is (the API server
/// defaults an absent one to `port`); a named one looked up among the pod's containers' ports
/// with the same protocol, then among its sidecars (init containers with `restartPolicy:
/// Always`). `None` when the pod has no such port.
pub fn find_port(pod: &Pod, service_port: &ServicePort) -> Option<i32> {
    let name = match &service_port.target_port {
        None => return Some(service_port.port),
        Some(IntOrString::Int(port)) => return Some(*port),
        Some(IntOrString::String(name)) => name,
    };
    let protocol = service_port.protocol.as_deref().unwrap_or("TCP");
    let spec = pod.spec.as_ref()?;
    let sidecars = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    spec.containers
        .iter()
        .chain(sidecars)
        .flat_map(|c| c.ports.iter().flatten())
        .find(|p| {
            p.name.as_deref() == Some(name.as_str())
                && p.protocol.as_deref().unwrap_or("TCP") == protocol
        })
        .map(|p| p.container_port)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::podendpoints::fixtures::pod;
    use k8s_openapi::api::core::v1::{Container, ContainerPort};

    fn port(target: Option<IntOrString>, protocol: &str) -> ServicePort {
        ServicePort {
            port: 80,
            protocol: Some(protocol.into()),
            target_port: target,
            ..ServicePort::default()
        }
    }

    /// Ported from pkg/api/v1/pod `TestFindPort`.
    #[test]
    fn named_ports_resolve_through_the_containers_with_the_same_protocol() {
        let p = pod("a", "10.0.0.1", true);
        assert_eq!(
            find_port(&p, &port(Some(IntOrString::Int(9376)), "TCP")),
            Some(9376)
        );
        assert_eq!(find_port(&p, &port(None, "TCP")), Some(80));
        assert_eq!(
            find_port(&p, &port(Some(IntOrString::String("http".into())), "TCP")),
            Some(8080)
        );
        assert_eq!(
            find_port(&p, &port(Some(IntOrString::String("http".into())), "UDP")),
            None
        );
        assert_eq!(
            find_port(&p, &port(Some(IntOrString::String("nope".into())), "TCP")),
            None
        );
    }

    #[test]
    fn sidecar_ports_count_but_plain_init_container_ports_do_not() {
        let mut p = pod("a", "10.0.0.1", true);
        let init = |restart: Option<&str>| Container {
            name: "init".into(),
            restart_policy: restart.map(Into::into),
            ports: Some(vec![ContainerPort {
                name: Some("metrics".into()),
                container_port: 9090,
                ..ContainerPort::default()
            }]),
            ..Container::default()
        };
        let target = port(Some(IntOrString::String("metrics".into())), "TCP");
        p.spec.as_mut().unwrap().init_containers = Some(vec![init(None)]);
        assert_eq!(find_port(&p, &target), None);
        p.spec.as_mut().unwrap().init_containers = Some(vec![init(Some("Always"))]);
        assert_eq!(find_port(&p, &target), Some(9090));
    }
}
