//! What the IPAddress repair finds wrong between Services and IPAddress objects, and how it
//! fixes it (`ipallocator/controller/repairip.go`: `syncService`, `syncIPAddress`), as a pure
//! decision over stored objects.
//!
//! Every cluster IP of a Service needs an IPAddress naming that Service: a missing one is
//! created (`ClusterIPNotAllocated`), one naming something else is recreated unless another
//! Service holds the address (`ClusterIPAlreadyAllocated`), and an address outside every
//! ServiceCIDR is reported (`ClusterIPOutOfRange`). Every IPAddress the allocator manages needs
//! a Service holding its address: one whose Service is gone is removed once it is older than
//! [`LEAK_GRACE`] (`IPAddressNotAllocated`), one whose Service does not hold it is removed at
//! once (`IPAddressWrongReference`).

use std::collections::HashMap;
use std::net::Ipv4Addr;

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use super::ip::{IpRange, Ipv4Cidr};
use super::service::cluster_ips;
use rkcm_storage::object;

/// How old an IPAddress without its Service must be before it is removed: a Service being
/// created has its address before it is stored (kube-apiserver's default request timeout).
pub const LEAK_GRACE: SignedDuration = SignedDuration::from_secs(60);

/// `ipallocator.ControllerName`.
const IP_ALLOCATOR: &str = "ipallocator.k8s.io";

/// One write of the repair.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fix {
    /// Create the IPAddress of `ip` for Service `namespace/name`, deleting any first.
    Allocate {
        /// The address.
        ip: Ipv4Addr,
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// Whether an IPAddress of that name exists and must go first.
        recreate: bool,
    },
    /// Delete the IPAddress named `ip`.
    Remove {
        /// The IPAddress's name.
        ip: String,
    },
}

/// The object an [`Finding`] is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Regarding {
    /// A Service.
    Service {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// UID.
        uid: String,
    },
    /// An IPAddress.
    IpAddress {
        /// Name.
        name: String,
        /// UID.
        uid: String,
    },
}

/// A Warning event the repair records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// About what.
    pub regarding: Regarding,
    /// kube's reason.
    pub reason: &'static str,
    /// kube's message.
    pub message: String,
}

/// What one repair pass does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Writes, in order.
    pub fixes: Vec<Fix>,
    /// Events to record.
    pub findings: Vec<Finding>,
}

fn service_ref(svc: &Value) -> Regarding {
    Regarding::Service {
        namespace: object::namespace(svc).to_string(),
        name: object::name(svc).to_string(),
        uid: object::meta_str(svc, "uid").unwrap_or_default().to_string(),
    }
}

fn ip_ref(ip: &Value) -> Regarding {
    Regarding::IpAddress {
        name: object::name(ip).to_string(),
        uid: object::meta_str(ip, "uid").unwrap_or_default().to_string(),
    }
}

fn parent(ip: &Value) -> (&str, &str, &str, &str) {
    let p = &ip["spec"]["parentRef"];
    let s = |f: &str| p[f].as_str().unwrap_or_default();
    (s("group"), s("resource"), s("namespace"), s("name"))
}

fn managed(ip: &Value) -> bool {
    ip.pointer("/metadata/labels/ipaddress.kubernetes.io~1managed-by")
        .and_then(Value::as_str)
        == Some(IP_ALLOCATOR)
}

/// `verifyIPAddressLabels`: managed by the allocator and labelled with its family.
fn labels_ok(ip: &Value) -> bool {
    let family = ip
        .pointer("/metadata/labels/ipaddress.kubernetes.io~1ip-family")
        .and_then(Value::as_str);
    let want = if object::name(ip).contains(':') {
        "IPv6"
    } else {
        "IPv4"
    };
    managed(ip) && family == Some(want)
}

fn created(ip: &Value) -> Option<Timestamp> {
    object::meta_str(ip, "creationTimestamp")?.parse().ok()
}

/// The repair of `services` against `ip_addresses`, `cidrs` being every ServiceCIDR's IPv4 range
/// (ready or not), at `now`.
pub fn plan(
    services: &[&Value],
    ip_addresses: &[&Value],
    cidrs: &[Ipv4Cidr],
    now: Timestamp,
) -> Plan {
    let mut out = Plan::default();
    let by_name: HashMap<&str, &Value> = ip_addresses
        .iter()
        .map(|ip| (object::name(ip), *ip))
        .collect();
    let by_service: HashMap<(&str, &str), &Value> = services
        .iter()
        .map(|s| ((object::namespace(s), object::name(s)), *s))
        .collect();
    let ranges: Vec<IpRange> = cidrs
        .iter()
        .filter(|c| c.prefix() >= super::cluster_ips::SHORTEST_PREFIX)
        .map(|c| IpRange::new(*c))
        .collect();
    let in_range = |ip: Ipv4Addr| ranges.iter().any(|r| r.check(ip).is_ok() || r.has(ip));
    let holds = |svc: &Value, ip: &str| cluster_ips(svc).iter().any(|a| a.to_string() == ip);

    for svc in services {
        let (ns, name) = (object::namespace(svc), object::name(svc));
        for ip in cluster_ips(svc) {
            let finding = |reason, message| Finding {
                regarding: service_ref(svc),
                reason,
                message,
            };
            if !in_range(ip) {
                out.findings.push(finding(
                    "ClusterIPOutOfRange",
                    format!("Cluster IP [IPv4]: {ip} is not within any configured Service CIDR; please recreate service"),
                ));
                continue;
            }
            let allocate = |recreate| Fix::Allocate {
                ip,
                namespace: ns.to_string(),
                name: name.to_string(),
                recreate,
            };
            let Some(existing) = by_name.get(ip.to_string().as_str()) else {
                out.findings.push(finding(
                    "ClusterIPNotAllocated",
                    format!("Cluster IP [IPv4]: {ip} is not allocated; repairing"),
                ));
                out.fixes.push(allocate(false));
                continue;
            };
            let (group, resource, pns, pname) = parent(existing);
            let wrong_reference = || {
                finding(
                    "ClusterIPNotAllocated",
                    format!("the ClusterIP [IPv4]: {ip} for Service {ns}/{name} has a wrong reference; repairing"),
                )
            };
            if !group.is_empty() || resource != "services" {
                out.findings.push(wrong_reference());
                out.fixes.push(allocate(true));
                continue;
            }
            if (pns, pname) != (ns, name) {
                match by_service.get(&(pns, pname)) {
                    None => {
                        out.findings.push(wrong_reference());
                        out.fixes.push(allocate(true));
                        continue;
                    }
                    Some(other) if holds(other, &ip.to_string()) => {
                        out.findings.push(finding(
                            "ClusterIPAlreadyAllocated",
                            format!("Cluster IP [IPv4]:{ip} was assigned to multiple services; please recreate service"),
                        ));
                    }
                    Some(_) => {}
                }
            }
            if !labels_ok(existing) {
                out.fixes.push(allocate(true));
            }
        }
    }

    for ip in ip_addresses.iter().filter(|ip| managed(ip)) {
        let name = object::name(ip);
        // The Services' pass recreates it for the Service that holds its address.
        let replaced = out.fixes.iter().any(
            |f| matches!(f, Fix::Allocate { ip, recreate: true, .. } if ip.to_string() == name),
        );
        if replaced {
            continue;
        }
        let (group, resource, pns, pname) = parent(ip);
        let remove = Fix::Remove {
            ip: name.to_string(),
        };
        let finding = |reason, message| Finding {
            regarding: ip_ref(ip),
            reason,
            message,
        };
        if !group.is_empty() || resource != "services" {
            out.findings.push(finding(
                "IPAddressNotAllocated",
                format!("IPAddress {name} appears to have been modified, not referencing a Service: cleaning up"),
            ));
            out.fixes.push(remove);
            continue;
        }
        match by_service.get(&(pns, pname)) {
            None => {
                let age = created(ip).map(|t| now.duration_since(t));
                if age.is_some_and(|a| a > LEAK_GRACE) {
                    out.findings.push(finding(
                        "IPAddressNotAllocated",
                        format!("IPAddress: {name} for Service {pns}/{pname} appears to have leaked: cleaning up"),
                    ));
                    out.fixes.push(remove);
                }
            }
            Some(svc) if holds(svc, name) => {}
            Some(_) => {
                out.findings.push(finding(
                    "IPAddressWrongReference",
                    format!("IPAddress: {name} for Service {pns}/{pname} has a wrong reference; cleaning up"),
                ));
                out.fixes.push(remove);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2024-01-01T00:10:00Z".parse().expect("valid")
    }

    fn svc(ns: &str, name: &str, ip: &str) -> Value {
        json!({"metadata": {"namespace": ns, "name": name, "uid": format!("uid-{name}")},
               "spec": {"type": "ClusterIP", "clusterIP": ip, "clusterIPs": [ip]}})
    }

    fn ip_address(ip: &str, ns: &str, name: &str, created: &str) -> Value {
        json!({"metadata": {"name": ip, "uid": format!("uid-{ip}"), "creationTimestamp": created,
                            "labels": {"ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io",
                                       "ipaddress.kubernetes.io/ip-family": "IPv4"}},
               "spec": {"parentRef": {"group": "", "resource": "services", "namespace": ns, "name": name}}})
    }

    fn cidrs() -> Vec<Ipv4Cidr> {
        vec!["10.0.0.0/24".parse().expect("valid")]
    }

    fn reasons(p: &Plan) -> Vec<&str> {
        p.findings.iter().map(|f| f.reason).collect()
    }

    const OLD: &str = "2024-01-01T00:00:00Z";
    const YOUNG: &str = "2024-01-01T00:09:30Z";

    #[test]
    fn a_service_without_its_ip_address_gets_one() {
        // TestRepairServiceIP "Registry with IPs and no IPAddresses".
        let s = svc("ns", "a", "10.0.0.1");
        let p = plan(&[&s], &[], &cidrs(), now());
        assert_eq!(reasons(&p), ["ClusterIPNotAllocated"]);
        assert_eq!(
            p.findings[0].message,
            "Cluster IP [IPv4]: 10.0.0.1 is not allocated; repairing"
        );
        assert_eq!(
            p.fixes,
            [Fix::Allocate {
                ip: "10.0.0.1".parse().expect("ip"),
                namespace: "ns".into(),
                name: "a".into(),
                recreate: false
            }]
        );
    }

    #[test]
    fn consistent_services_and_ip_addresses_need_nothing() {
        let s = svc("ns", "a", "10.0.0.1");
        let ip = ip_address("10.0.0.1", "ns", "a", OLD);
        assert_eq!(plan(&[&s], &[&ip], &cidrs(), now()), Plan::default());
    }

    #[test]
    fn an_address_outside_every_service_cidr_is_reported_only() {
        // "Registry with IPs out of range".
        let s = svc("ns", "a", "192.168.0.1");
        let p = plan(&[&s], &[], &cidrs(), now());
        assert_eq!(reasons(&p), ["ClusterIPOutOfRange"]);
        assert_eq!(
            p.findings[0].message,
            "Cluster IP [IPv4]: 192.168.0.1 is not within any configured Service CIDR; please recreate service"
        );
        assert!(p.fixes.is_empty());
    }

    #[test]
    fn two_services_with_one_address_are_reported() {
        // "Registry with duplicate IP": the second Service's address names the first.
        let a = svc("ns", "a", "10.0.0.1");
        let b = svc("ns", "b", "10.0.0.1");
        let ip = ip_address("10.0.0.1", "ns", "a", OLD);
        let p = plan(&[&a, &b], &[&ip], &cidrs(), now());
        assert_eq!(reasons(&p), ["ClusterIPAlreadyAllocated"]);
        assert_eq!(
            p.findings[0].message,
            "Cluster IP [IPv4]:10.0.0.1 was assigned to multiple services; please recreate service"
        );
        assert_eq!(p.findings[0].regarding, service_ref(&b));
        assert!(p.fixes.is_empty());
    }

    #[test]
    fn an_address_naming_a_missing_service_is_given_to_the_one_holding_it() {
        // "Registry with IPAddress with wrong reference".
        let s = svc("ns", "a", "10.0.0.1");
        let ip = ip_address("10.0.0.1", "ns", "gone", OLD);
        let p = plan(&[&s], &[&ip], &cidrs(), now());
        assert_eq!(reasons(&p), ["ClusterIPNotAllocated"]);
        assert_eq!(
            p.findings[0].message,
            "the ClusterIP [IPv4]: 10.0.0.1 for Service ns/a has a wrong reference; repairing"
        );
        assert!(matches!(
            p.fixes[..],
            [Fix::Allocate { recreate: true, .. }]
        ));
    }

    #[test]
    fn an_address_with_wrong_labels_is_recreated_quietly() {
        let s = svc("ns", "a", "10.0.0.1");
        let mut ip = ip_address("10.0.0.1", "ns", "a", OLD);
        ip["metadata"]["labels"]["ipaddress.kubernetes.io/ip-family"] = json!("IPv6");
        let p = plan(&[&s], &[&ip], &cidrs(), now());
        assert!(p.findings.is_empty());
        assert!(matches!(
            p.fixes[..],
            [Fix::Allocate { recreate: true, .. }]
        ));
    }

    #[test]
    fn leaked_ip_addresses_go_after_the_grace_period() {
        // TestRepairIPAddress_syncIPAddress: orphaned, and orphaned but young.
        let old = ip_address("10.0.0.2", "ns", "gone", OLD);
        let young = ip_address("10.0.0.3", "ns", "gone", YOUNG);
        let p = plan(&[], &[&old, &young], &cidrs(), now());
        assert_eq!(reasons(&p), ["IPAddressNotAllocated"]);
        assert_eq!(
            p.findings[0].message,
            "IPAddress: 10.0.0.2 for Service ns/gone appears to have leaked: cleaning up"
        );
        assert_eq!(
            p.fixes,
            [Fix::Remove {
                ip: "10.0.0.2".into()
            }]
        );
    }

    #[test]
    fn ip_addresses_whose_service_holds_another_address_or_that_name_no_service_go() {
        let s = svc("ns", "a", "10.0.0.1");
        let own = ip_address("10.0.0.1", "ns", "a", OLD);
        let wrong = ip_address("10.0.0.9", "ns", "a", YOUNG);
        let mut modified = ip_address("10.0.0.8", "ns", "a", YOUNG);
        modified["spec"]["parentRef"]["resource"] = json!("gateways");
        let p = plan(&[&s], &[&own, &wrong, &modified], &cidrs(), now());
        assert_eq!(
            reasons(&p),
            ["IPAddressWrongReference", "IPAddressNotAllocated"]
        );
        assert_eq!(
            p.findings[0].message,
            "IPAddress: 10.0.0.9 for Service ns/a has a wrong reference; cleaning up"
        );
        assert_eq!(
            p.fixes,
            [
                Fix::Remove {
                    ip: "10.0.0.9".into()
                },
                Fix::Remove {
                    ip: "10.0.0.8".into()
                }
            ]
        );
        // Addresses others manage are left alone.
        let mut foreign = ip_address("10.0.0.7", "ns", "gone", OLD);
        foreign["metadata"]["labels"]["ipaddress.kubernetes.io/managed-by"] = json!("someone");
        assert_eq!(plan(&[], &[&foreign], &cidrs(), now()), Plan::default());
    }
}
