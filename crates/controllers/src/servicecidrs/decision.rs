//! What the ServiceCIDR controller does with one ServiceCIDR: which ServiceCIDRs a change
//! concerns, whether a deleted one may go, and the finalizer and `Ready` condition it should
//! carry (`servicecidrs_controller.go`: `overlappingServiceCIDRs`, `containingServiceCIDRs`,
//! `canDeleteCIDR`, `sync`).

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::networking::v1::{IPAddress, ServiceCIDR};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::prefix::{parse_all, Prefix};

/// The finalizer that keeps a ServiceCIDR while IPAddresses depend on it
/// (`ServiceCIDRProtectionFinalizer`).
pub const SERVICE_CIDR_FINALIZER: &str = "networking.k8s.io/service-cidr-finalizer";
/// Label naming who manages an IPAddress (`LabelManagedBy`).
pub const LABEL_MANAGED_BY: &str = "ipaddress.kubernetes.io/managed-by";
/// Label naming an IPAddress's family (`LabelIPAddressFamily`).
pub const LABEL_IP_FAMILY: &str = "ipaddress.kubernetes.io/ip-family";
/// The manager of the IPAddresses kube-apiserver allocates (`ipallocator.ControllerName`).
pub const IP_ALLOCATOR: &str = "ipallocator.k8s.io";
/// The condition type (`ServiceCIDRConditionReady`).
pub const CONDITION_READY: &str = "Ready";
/// The reason of a ServiceCIDR that cannot go yet (`ServiceCIDRReasonTerminating`).
pub const REASON_TERMINATING: &str = "Terminating";
/// The message of a Ready ServiceCIDR.
pub const MESSAGE_READY: &str = "Kubernetes Service CIDR is ready";
/// The message of a deleted ServiceCIDR that IPAddresses still hold.
pub const MESSAGE_TERMINATING: &str =
    "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR";
/// How long a deleted ServiceCIDR keeps its finalizer once nothing holds it, so that the API
/// servers' allocators see the deletion before the range goes (`deletionGracePeriod`).
pub const DELETION_GRACE_PERIOD: Duration = Duration::from_secs(10);

fn name_of(cidr: &ServiceCIDR) -> &str {
    cidr.metadata.name.as_deref().unwrap_or_default()
}

fn prefixes(cidr: &ServiceCIDR) -> Vec<Prefix> {
    parse_all(cidr.spec.iter().flat_map(|s| s.cidrs.iter().flatten()))
}

fn label<'a>(ip: &'a IPAddress, key: &str) -> Option<&'a str> {
    ip.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

/// The address of an IPAddress managed by the API servers' allocator, else `None`.
fn managed_address(ip: &IPAddress) -> Option<IpAddr> {
    if label(ip, LABEL_MANAGED_BY) != Some(IP_ALLOCATOR) {
        return None;
    }
    ip.metadata.name.as_deref()?.parse().ok()
}

/// Names of the ServiceCIDRs of `all` whose ranges overlap one of `cidr`'s (itself included when
/// it is in `all`): adding or removing `cidr` may unblock their deletion.
pub fn overlapping_service_cidrs(cidr: &ServiceCIDR, all: &[Arc<ServiceCIDR>]) -> BTreeSet<String> {
    let mine = prefixes(cidr);
    all.iter()
        .filter(|other| {
            prefixes(other)
                .iter()
                .any(|p| mine.iter().any(|m| p.overlaps(m)))
        })
        .map(|other| name_of(other).to_string())
        .collect()
}

/// The ServiceCIDRs of `all` that could have allocated `address` (`servicecidr.ContainsAddress`),
/// one entry per containing range.
fn containing_address(address: IpAddr, all: &[Arc<ServiceCIDR>]) -> Vec<&str> {
    all.iter()
        .flat_map(|c| {
            prefixes(c)
                .into_iter()
                .filter(move |p| p.contains_ip(address))
                .map(move |_| name_of(c))
        })
        .collect()
}

/// Names of the ServiceCIDRs that contain `ip`, for an IPAddress the API servers allocated (others
/// never block a deletion): its creation or removal may block or unblock them.
pub fn containing_service_cidrs(ip: &IPAddress, all: &[Arc<ServiceCIDR>]) -> BTreeSet<String> {
    let Some(address) = managed_address(ip) else {
        return BTreeSet::new();
    };
    containing_address(address, all)
        .into_iter()
        .map(str::to_string)
        .collect()
}

/// Whether deleting `cidr` leaves no allocated IPAddress without a ServiceCIDR
/// (`canDeleteCIDR`): each of its ranges lies inside another ServiceCIDR's, or no allocated
/// address of its families is covered by it alone.
pub fn can_delete(cidr: &ServiceCIDR, all: &[Arc<ServiceCIDR>], ips: &[Arc<IPAddress>]) -> bool {
    let name = name_of(cidr);
    let mine = prefixes(cidr);
    let has_parent = mine.iter().all(|prefix| {
        let parents: Vec<&str> = all
            .iter()
            .flat_map(|c| {
                prefixes(c)
                    .into_iter()
                    .filter(move |p| p.contains_prefix(prefix))
                    .map(move |_| name_of(c))
            })
            .collect();
        !(parents.is_empty() || parents == [name])
    });
    if has_parent {
        return true;
    }
    for prefix in &mine {
        let family = if prefix.is_ipv6() { "IPv6" } else { "IPv4" };
        for ip in ips
            .iter()
            .filter(|ip| label(ip, LABEL_IP_FAMILY) == Some(family))
        {
            let Some(address) = managed_address(ip) else {
                continue;
            };
            if containing_address(address, all) == [name] {
                tracing::info!(ipaddress = %address, "Deleting ServiceCIDR blocked by IP address");
                return false;
            }
        }
    }
    true
}

/// The `Ready` condition a ServiceCIDR should carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Readiness {
    /// Ready=True: the allocators may use it.
    Ready,
    /// Ready=False, reason `Terminating`: deleted, but allocated addresses depend on it.
    Terminating,
}

impl Readiness {
    /// The condition, `now` as its transition time unless `current` already says the same.
    pub fn condition(self, current: Option<&Condition>, now: Timestamp) -> Condition {
        let (status, reason, message) = match self {
            Readiness::Ready => ("True", "", MESSAGE_READY),
            Readiness::Terminating => ("False", REASON_TERMINATING, MESSAGE_TERMINATING),
        };
        let last_transition_time = match current {
            Some(c) if c.status == status => c.last_transition_time.clone(),
            _ => Time(now),
        };
        Condition {
            type_: CONDITION_READY.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
            last_transition_time,
            observed_generation: None,
        }
    }

    /// Whether `current` already says what this readiness does.
    pub fn satisfied_by(self, current: Option<&Condition>) -> bool {
        let want = self.condition(current, Timestamp::UNIX_EPOCH);
        current.is_some_and(|c| {
            c.status == want.status && c.reason == want.reason && c.message == want.message
        })
    }
}

/// The current `Ready` condition of `cidr`.
pub fn ready_condition(cidr: &ServiceCIDR) -> Option<&Condition> {
    cidr.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == CONDITION_READY)
}

/// The writes one sync of a ServiceCIDR makes, in this order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Add [`SERVICE_CIDR_FINALIZER`].
    pub add_finalizer: bool,
    /// Write this `Ready` condition to `/status`.
    pub status: Option<Readiness>,
    /// Remove [`SERVICE_CIDR_FINALIZER`].
    pub remove_finalizer: bool,
    /// Look again after this long (the deletion grace period is not over).
    pub requeue_after: Option<Duration>,
}

fn has_finalizer(cidr: &ServiceCIDR) -> bool {
    cidr.metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == SERVICE_CIDR_FINALIZER)
}

/// What a sync of `cidr` does at `now`, given every ServiceCIDR and IPAddress of the caches.
///
/// A status is written only when the condition it carries says something else (kube applies
/// it on every sync, which changes nothing but the transition time).
pub fn plan(
    cidr: &ServiceCIDR,
    all: &[Arc<ServiceCIDR>],
    ips: &[Arc<IPAddress>],
    now: Timestamp,
) -> Plan {
    let current = ready_condition(cidr);
    let wanted = |r: Readiness| (!r.satisfied_by(current)).then_some(r);
    let Some(deleted) = &cidr.metadata.deletion_timestamp else {
        return Plan {
            add_finalizer: !has_finalizer(cidr),
            status: wanted(Readiness::Ready),
            ..Plan::default()
        };
    };
    if !can_delete(cidr, all, ips) {
        return Plan {
            status: wanted(Readiness::Terminating),
            ..Plan::default()
        };
    }
    let grace = jiff::SignedDuration::try_from(DELETION_GRACE_PERIOD).unwrap_or_default();
    let left = (deleted.0 + grace).duration_since(now);
    if left.is_positive() {
        return Plan {
            requeue_after: Duration::try_from(left).ok(),
            ..Plan::default()
        };
    }
    Plan {
        remove_finalizer: has_finalizer(cidr),
        ..Plan::default()
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use k8s_openapi::api::networking::v1::ServiceCIDRSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    /// `makeServiceCIDR`.
    pub fn service_cidr(name: &str, primary: &str, secondary: &str) -> Arc<ServiceCIDR> {
        let mut cidrs = vec![primary.to_string()];
        if !secondary.is_empty() {
            cidrs.push(secondary.to_string());
        }
        Arc::new(ServiceCIDR {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            spec: Some(ServiceCIDRSpec { cidrs: Some(cidrs) }),
            status: None,
        })
    }

    /// `makeIPAddress`: managed by the allocator, labelled with its family.
    pub fn ip_address(name: &str) -> Arc<IPAddress> {
        let family = if name.contains(':') { "IPv6" } else { "IPv4" };
        Arc::new(IPAddress {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    [
                        (LABEL_IP_FAMILY.to_string(), family.to_string()),
                        (LABEL_MANAGED_BY.to_string(), IP_ALLOCATOR.to_string()),
                    ]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            spec: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::{ip_address, service_cidr};
    use super::*;

    const DEFAULT: &str = "kubernetes";

    fn names(v: &[&str]) -> BTreeSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).expect("valid")
    }

    #[test]
    fn can_delete_cidr_cases_of_kube() {
        // TestController_canDeleteCIDR.
        let default = || service_cidr(DEFAULT, "192.168.0.0/24", "2001:db2::/64");
        type Case<'a> = (&'a str, Vec<Arc<ServiceCIDR>>, Vec<&'a str>, bool);
        let cases: &[Case] = &[
            ("empty", vec![], vec![], true),
            ("CIDR and no IPs", vec![default()], vec![], true),
            (
                "CIDR with IPs",
                vec![default()],
                vec!["192.168.0.24"],
                false,
            ),
            (
                "CIDR without IPs",
                vec![default()],
                vec!["192.168.1.24"],
                true,
            ),
            (
                "IPv4 subnet address",
                vec![default()],
                vec!["192.168.0.0"],
                true,
            ),
            (
                "IPv4 broadcast address",
                vec![default()],
                vec!["192.168.0.255"],
                true,
            ),
            (
                "IPv6 broadcast address",
                vec![default()],
                vec!["2001:0db2::ffff:ffff:ffff:ffff"],
                false,
            ),
            (
                "same range overlapping and IPs",
                vec![
                    default(),
                    service_cidr("overlapping", "192.168.0.0/24", "2001:db2::/64"),
                ],
                vec!["192.168.0.23"],
                true,
            ),
            (
                "smaller range overlapping and IPs",
                vec![
                    default(),
                    service_cidr("overlapping", "192.168.0.0/26", "2001:db2::/64"),
                ],
                vec!["192.168.0.23"],
                true,
            ),
            (
                "smaller range overlapping but IPs orphan",
                vec![
                    default(),
                    service_cidr("overlapping", "192.168.0.0/28", "2001:db2::/64"),
                ],
                vec!["192.168.0.23"],
                false,
            ),
            (
                "larger range overlapping and IPs",
                vec![
                    default(),
                    service_cidr("overlapping", "192.168.0.0/16", "2001:db2::/64"),
                ],
                vec!["192.168.0.23"],
                true,
            ),
        ];
        for (name, cidrs, ips, want) in cases {
            let ips: Vec<_> = ips.iter().map(|i| ip_address(i)).collect();
            assert_eq!(can_delete(&default(), cidrs, &ips), *want, "{name}");
        }
    }

    #[test]
    fn an_address_not_managed_by_the_allocator_blocks_nothing() {
        let cidr = service_cidr(DEFAULT, "192.168.0.0/24", "");
        let mut ip = (*ip_address("192.168.0.24")).clone();
        ip.metadata
            .labels
            .as_mut()
            .expect("labels")
            .insert(LABEL_MANAGED_BY.into(), "someone-else".into());
        assert!(can_delete(
            &cidr,
            std::slice::from_ref(&cidr),
            &[Arc::new(ip.clone())]
        ));
        assert!(containing_service_cidrs(&ip, &[cidr]).is_empty());
    }

    fn related() -> Vec<Arc<ServiceCIDR>> {
        vec![
            service_cidr(DEFAULT, "192.168.0.0/24", "2001:db2::/64"),
            service_cidr("overlapping", "192.168.0.0/24", "2001:db2::/64"),
            service_cidr("overlapping2", "192.168.0.0/26", "2001:db2::/96"),
            service_cidr("unrelated", "10.0.0.0/24", ""),
            service_cidr("unrelated2", "10.0.0.0/16", ""),
        ]
    }

    #[test]
    fn ip_to_cidrs_cases_of_kube() {
        // TestController_ipToCidrs.
        assert!(containing_service_cidrs(&ip_address("192.168.0.23"), &[]).is_empty());
        let one = vec![
            service_cidr(DEFAULT, "192.168.0.0/24", "2001:db2::/64"),
            service_cidr("unrelated", "10.0.0.0/24", ""),
            service_cidr("unrelated2", "10.0.0.0/16", ""),
        ];
        assert_eq!(
            containing_service_cidrs(&ip_address("192.168.0.23"), &one),
            names(&[DEFAULT])
        );
        let two_equal = vec![
            service_cidr(DEFAULT, "192.168.0.0/24", "2001:db2::/64"),
            service_cidr("overlapping", "192.168.0.0/24", "2001:db2::/96"),
            service_cidr("unrelated", "10.0.0.0/24", ""),
        ];
        assert_eq!(
            containing_service_cidrs(&ip_address("192.168.0.23"), &two_equal),
            names(&[DEFAULT, "overlapping"])
        );
        let all = related();
        for (ip, want) in [
            ("192.168.0.23", vec![DEFAULT, "overlapping", "overlapping2"]),
            ("192.168.0.0", vec![]),
            ("192.168.0.63", vec![DEFAULT, "overlapping"]),
            ("2001:db2::", vec![]),
            (
                "2001:0db2::ffff:ffff:ffff:ffff",
                vec![DEFAULT, "overlapping"],
            ),
        ] {
            assert_eq!(
                containing_service_cidrs(&ip_address(ip), &all),
                names(&want),
                "{ip}"
            );
        }
    }

    #[test]
    fn cidr_to_cidrs_cases_of_kube() {
        // TestController_cidrToCidrs.
        let cidr = service_cidr(DEFAULT, "192.168.0.0/24", "2001:db2::/64");
        assert!(overlapping_service_cidrs(&cidr, &[]).is_empty());
        let one = vec![
            cidr.clone(),
            service_cidr("unrelated", "10.0.0.0/24", ""),
            service_cidr("unrelated2", "10.0.0.0/16", ""),
        ];
        assert_eq!(overlapping_service_cidrs(&cidr, &one), names(&[DEFAULT]));
        let two_equal = vec![
            cidr.clone(),
            service_cidr("overlapping", "192.168.0.0/24", "2001:db2::/96"),
            service_cidr("unrelated", "10.0.0.0/24", ""),
        ];
        assert_eq!(
            overlapping_service_cidrs(&cidr, &two_equal),
            names(&[DEFAULT, "overlapping"])
        );
        assert_eq!(
            overlapping_service_cidrs(&cidr, &related()),
            names(&[DEFAULT, "overlapping", "overlapping2"])
        );
    }

    fn deleting(name: &str, since: jiff::SignedDuration) -> Arc<ServiceCIDR> {
        let mut c = (*service_cidr(name, "192.168.0.0/24", "2001:db2::/64")).clone();
        c.metadata.finalizers = Some(vec![SERVICE_CIDR_FINALIZER.into()]);
        c.metadata.deletion_timestamp = Some(Time(now() - since));
        Arc::new(c)
    }

    #[test]
    fn controller_sync_cases_of_kube() {
        // TestControllerSync: the writes each case makes.
        let deleted = deleting("deleted-cidr", jiff::SignedDuration::from_secs(11));
        let just_deleted = deleting("deleting-cidr", jiff::SignedDuration::ZERO);
        let ready = Plan {
            add_finalizer: true,
            status: Some(Readiness::Ready),
            ..Plan::default()
        };
        let remove = Plan {
            remove_finalizer: true,
            ..Plan::default()
        };
        let terminating = Plan {
            status: Some(Readiness::Terminating),
            ..Plan::default()
        };
        let ov = |v4: &str, v6: &str| service_cidr("overlapping", v4, v6);
        type Case<'a> = (
            &'a str,
            Arc<ServiceCIDR>,
            Vec<Arc<ServiceCIDR>>,
            Vec<&'a str>,
            Plan,
        );
        let cases: Vec<Case> = vec![
            (
                "default service CIDR must have finalizer",
                service_cidr(DEFAULT, "192.168.0.0/24", "2001:db2::/64"),
                vec![],
                vec![],
                ready.clone(),
            ),
            (
                "service CIDR must have finalizer",
                service_cidr("no-finalizer", "192.168.0.0/24", "2001:db2::/64"),
                vec![],
                vec![],
                ready,
            ),
            (
                "deleted must remove the finalizer",
                deleted.clone(),
                vec![],
                vec![],
                remove.clone(),
            ),
            (
                "deleted within the grace period is requeued",
                just_deleted.clone(),
                vec![],
                vec![],
                Plan {
                    requeue_after: Some(DELETION_GRACE_PERIOD),
                    ..Plan::default()
                },
            ),
            (
                "deleted with IPv4 addresses",
                deleted.clone(),
                vec![],
                vec!["192.168.0.1"],
                terminating.clone(),
            ),
            (
                "deleted, overlapping same range, IPv4",
                deleted.clone(),
                vec![ov("192.168.0.0/24", "2001:db2::/64")],
                vec!["192.168.0.1"],
                remove.clone(),
            ),
            (
                "deleted, overlapping larger, IPv4",
                deleted.clone(),
                vec![ov("192.168.0.0/16", "2001:db2::/64")],
                vec!["192.168.0.1"],
                remove.clone(),
            ),
            (
                "deleted, not overlapping, IPv4",
                deleted.clone(),
                vec![ov("192.168.255.0/26", "2001:db2::/64")],
                vec!["192.168.0.1"],
                terminating.clone(),
            ),
            (
                "deleted with IPv6 addresses",
                deleted.clone(),
                vec![],
                vec!["2001:db2::1"],
                terminating.clone(),
            ),
            (
                "deleted, overlapping same range, IPv6",
                deleted.clone(),
                vec![ov("192.168.0.0/24", "2001:db2::/64")],
                vec!["2001:db2::1"],
                remove.clone(),
            ),
            (
                "deleted, overlapping larger, IPv6",
                deleted.clone(),
                vec![ov("192.168.0.0/16", "2001:db2::/48")],
                vec!["2001:db2::1"],
                remove,
            ),
            (
                "deleted, not overlapping, IPv6",
                deleted.clone(),
                vec![ov("192.168.255.0/26", "2001:db2:a:b::/64")],
                vec!["2001:db2::1"],
                terminating,
            ),
        ];
        for (name, cidr, others, ips, want) in cases {
            let mut all = vec![cidr.clone()];
            all.extend(others);
            let ips: Vec<_> = ips.iter().map(|i| ip_address(i)).collect();
            assert_eq!(plan(&cidr, &all, &ips, now()), want, "{name}");
        }
    }

    #[test]
    fn a_status_already_written_is_not_written_again() {
        let mut cidr = (*service_cidr("c", "10.0.0.0/24", "")).clone();
        cidr.metadata.finalizers = Some(vec![SERVICE_CIDR_FINALIZER.into()]);
        let earlier = Timestamp::from_second(1_600_000_000).expect("valid");
        let cond = Readiness::Ready.condition(None, earlier);
        cidr.status = Some(k8s_openapi::api::networking::v1::ServiceCIDRStatus {
            conditions: Some(vec![cond.clone()]),
        });
        let cidr = Arc::new(cidr);
        assert_eq!(
            plan(&cidr, std::slice::from_ref(&cidr), &[], now()),
            Plan::default()
        );
        // The transition time moves only when the status does.
        assert_eq!(
            Readiness::Ready
                .condition(Some(&cond), now())
                .last_transition_time,
            Time(earlier)
        );
        let terminating = Readiness::Terminating.condition(Some(&cond), now());
        assert_eq!(terminating.last_transition_time, Time(now()));
        assert_eq!(terminating.reason, REASON_TERMINATING);
        // The default ServiceCIDR as the API server writes it is not Ready in the controller's words.
        let mut default_message = cond;
        default_message.message = "Kubernetes default Service CIDR is ready".into();
        assert!(!Readiness::Ready.satisfied_by(Some(&default_message)));
    }
}
