//! Facts about a Service that decide its endpoints: whether it selects pods, whether it is
//! headless, which IP families it serves.

use std::collections::BTreeMap;
use std::net::IpAddr;

use k8s_openapi::api::core::v1::Service;

/// `spec.type` of a Service that only aliases a DNS name and never gets endpoints.
pub const TYPE_EXTERNAL_NAME: &str = "ExternalName";

/// The Service's selector when it selects pods: `None` for a Service without one (its endpoints
/// are written by hand), and for an ExternalName Service.
pub fn selects_pods(service: &Service) -> Option<&BTreeMap<String, String>> {
    let spec = service.spec.as_ref()?;
    if spec.type_.as_deref() == Some(TYPE_EXTERNAL_NAME) {
        return None;
    }
    spec.selector.as_ref()
}

/// The Service's cluster IP, `""` when unset.
pub fn cluster_ip(service: &Service) -> &str {
    service
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.as_deref())
        .unwrap_or("")
}

/// Whether the Service has a cluster IP: neither unset nor `None` (headless) (`IsServiceIPSet`).
pub fn is_service_ip_set(service: &Service) -> bool {
    let ip = cluster_ip(service);
    !ip.is_empty() && ip != "None"
}

/// Whether `ip` is an IPv6 address (`utilnet.IsIPv6String`).
pub fn is_ipv6(ip: &str) -> bool {
    matches!(ip.parse::<IpAddr>(), Ok(IpAddr::V6(_)))
}

/// The IP families the Service serves, from `spec.ipFamilies`; without them (an old API server)
/// the family of the cluster IP, or both for a headless Service (`getAddressTypesForService`).
pub fn ip_families(service: &Service) -> Vec<IpFamily> {
    let declared: Vec<IpFamily> = service
        .spec
        .as_ref()
        .and_then(|s| s.ip_families.as_ref())
        .into_iter()
        .flatten()
        .filter_map(|f| match f.as_str() {
            "IPv4" => Some(IpFamily::V4),
            "IPv6" => Some(IpFamily::V6),
            _ => None,
        })
        .collect();
    if !declared.is_empty() {
        let mut families = declared;
        families.dedup();
        return families;
    }
    if is_service_ip_set(service) {
        return vec![if is_ipv6(cluster_ip(service)) {
            IpFamily::V6
        } else {
            IpFamily::V4
        }];
    }
    vec![IpFamily::V4, IpFamily::V6]
}

/// An IP family, which is also an EndpointSlice address type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IpFamily {
    /// IPv4, address type `IPv4`.
    V4,
    /// IPv6, address type `IPv6`.
    V6,
}

impl IpFamily {
    /// The EndpointSlice `addressType` of this family.
    pub fn address_type(self) -> &'static str {
        match self {
            IpFamily::V4 => "IPv4",
            IpFamily::V6 => "IPv6",
        }
    }

    /// The family an EndpointSlice `addressType` names (`FQDN` and unknown types have none).
    pub fn from_address_type(address_type: &str) -> Option<Self> {
        match address_type {
            "IPv4" => Some(IpFamily::V4),
            "IPv6" => Some(IpFamily::V6),
            _ => None,
        }
    }

    /// Whether `ip` is of this family.
    pub fn matches(self, ip: &str) -> bool {
        is_ipv6(ip) == (self == IpFamily::V6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::podendpoints::fixtures::service;

    /// Ported from k8s.io/endpointslice `TestGetAddressTypesForService` (utils_test.go).
    #[test]
    fn address_types_come_from_ip_families_then_from_the_cluster_ip() {
        let mut svc = service("web", None);
        assert_eq!(ip_families(&svc), [IpFamily::V4]);
        let spec = svc.spec.as_mut().unwrap();
        spec.ip_families = Some(vec!["IPv6".into(), "IPv4".into()]);
        assert_eq!(ip_families(&svc), [IpFamily::V6, IpFamily::V4]);
        let spec = svc.spec.as_mut().unwrap();
        spec.ip_families = None;
        spec.cluster_ip = Some("fd00::1".into());
        assert_eq!(ip_families(&svc), [IpFamily::V6]);
        let spec = svc.spec.as_mut().unwrap();
        spec.cluster_ip = Some("None".into());
        assert_eq!(ip_families(&svc), [IpFamily::V4, IpFamily::V6]);
        assert!(!is_service_ip_set(&svc));
    }

    #[test]
    fn external_name_services_and_services_without_selector_select_no_pods() {
        let svc = service("web", Some(&[("app", "web")]));
        assert!(selects_pods(&svc).is_some());
        assert!(selects_pods(&service("web", None)).is_none());
        let mut external = svc.clone();
        external.spec.as_mut().unwrap().type_ = Some(TYPE_EXTERNAL_NAME.into());
        assert!(selects_pods(&external).is_none());
        // An empty selector is a selector: it selects every pod of the namespace.
        assert!(selects_pods(&service("web", Some(&[]))).is_some());
    }
}
