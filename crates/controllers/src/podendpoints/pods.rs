//! Whether a pod is an endpoint of a Service at all (`ShouldPodBeInEndpoints`,
//! `ShouldSetHostname` of k8s.io/endpointslice `util`).

use k8s_openapi::api::core::v1::{Pod, Service};

use crate::replicaset::pod_state::{phase, PHASE_FAILED, PHASE_SUCCEEDED};

/// Whether `pod` belongs in an Endpoints object or EndpointSlice: not terminal (Succeeded or
/// Failed), with an IP, and not terminating unless `include_terminating`.
pub fn should_pod_be_in_endpoints(pod: &Pod, include_terminating: bool) -> bool {
    let phase = phase(pod);
    if phase == PHASE_SUCCEEDED || phase == PHASE_FAILED {
        return false;
    }
    let status = pod.status.as_ref();
    let has_ip = status
        .and_then(|s| s.pod_ip.as_deref())
        .is_some_and(|ip| !ip.is_empty())
        || status
            .and_then(|s| s.pod_ips.as_ref())
            .is_some_and(|ips| !ips.is_empty());
    if !has_ip {
        return false;
    }
    include_terminating || pod.metadata.deletion_timestamp.is_none()
}

/// Whether the endpoint of `pod` carries its hostname: the pod sets `hostname` and its
/// `subdomain` is the Service's name, in the Service's namespace.
pub fn should_set_hostname(pod: &Pod, service: &Service) -> bool {
    let spec = pod.spec.as_ref();
    let hostname = spec.and_then(|s| s.hostname.as_deref()).unwrap_or("");
    let subdomain = spec.and_then(|s| s.subdomain.as_deref()).unwrap_or("");
    !hostname.is_empty()
        && Some(subdomain) == service.metadata.name.as_deref()
        && service.metadata.namespace == pod.metadata.namespace
}

/// The pod's IPs, `status.podIPs` (or `status.podIP` when the list is empty).
pub fn pod_ips(pod: &Pod) -> Vec<&str> {
    let Some(status) = pod.status.as_ref() else {
        return Vec::new();
    };
    let ips: Vec<&str> = status
        .pod_ips
        .iter()
        .flatten()
        .map(|ip| ip.ip.as_str())
        .filter(|ip| !ip.is_empty())
        .collect();
    if !ips.is_empty() {
        return ips;
    }
    status
        .pod_ip
        .as_deref()
        .filter(|ip| !ip.is_empty())
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::podendpoints::fixtures::{pod, service};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    /// Ported from k8s.io/endpointslice util `TestShouldPodBeInEndpoints`.
    #[test]
    fn terminal_pods_pods_without_ip_and_terminating_pods_are_left_out() {
        let running = pod("a", "10.0.0.1", true);
        assert!(should_pod_be_in_endpoints(&running, false));

        let mut no_ip = running.clone();
        no_ip.status.as_mut().unwrap().pod_ip = None;
        no_ip.status.as_mut().unwrap().pod_ips = None;
        assert!(!should_pod_be_in_endpoints(&no_ip, true));

        for terminal in ["Succeeded", "Failed"] {
            let mut p = running.clone();
            p.status.as_mut().unwrap().phase = Some(terminal.into());
            assert!(!should_pod_be_in_endpoints(&p, true), "{terminal}");
        }

        let mut pending = running.clone();
        pending.status.as_mut().unwrap().phase = Some("Pending".into());
        assert!(should_pod_be_in_endpoints(&pending, false));

        let mut terminating = running.clone();
        terminating.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert!(!should_pod_be_in_endpoints(&terminating, false));
        assert!(should_pod_be_in_endpoints(&terminating, true));

        // podIPs alone is enough.
        let mut ips_only = running.clone();
        ips_only.status.as_mut().unwrap().pod_ip = None;
        assert!(should_pod_be_in_endpoints(&ips_only, false));
    }

    /// Ported from k8s.io/endpointslice util `TestShouldSetHostname`.
    #[test]
    fn the_hostname_is_set_only_for_pods_in_the_services_subdomain() {
        let svc = service("web", Some(&[("app", "web")]));
        let mut p = pod("a", "10.0.0.1", true);
        assert!(!should_set_hostname(&p, &svc));
        p.spec.as_mut().unwrap().hostname = Some("host".into());
        assert!(!should_set_hostname(&p, &svc));
        p.spec.as_mut().unwrap().subdomain = Some("web".into());
        assert!(should_set_hostname(&p, &svc));
        p.metadata.namespace = Some("other".into());
        assert!(!should_set_hostname(&p, &svc));
        p.metadata.namespace = Some("ns".into());
        p.spec.as_mut().unwrap().hostname = None;
        assert!(!should_set_hostname(&p, &svc));
    }
}
