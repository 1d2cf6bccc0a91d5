//! The canonical layout of Endpoints subsets (`RepackSubsets`, `SortSubsets` of
//! k8s.io/kubernetes `pkg/api/v1/endpoints`).
//!
//! Every address that offers the same set of ports ends up in one subset; an address that is not
//! ready on some port is not ready on it. kube orders ports and subsets by an MD5 hash of their Go
//! dump; rkcm orders them by their fields instead, which is as canonical (equal inputs give equal
//! outputs) but may list subsets in another order than kube would.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{EndpointAddress, EndpointPort, EndpointSubset};

/// Identity of an address: its IP and the UID of the object it points to.
type AddressKey = (String, String);

/// A port as a sortable, hashable value: (port, name, protocol, appProtocol).
type PortKey = (i32, String, String, Option<String>);

/// Stands in for "no port" so that the addresses of a headless Service without ports are kept.
const NO_PORTS: i32 = -1;

fn address_key(a: &EndpointAddress) -> AddressKey {
    let uid = a.target_ref.as_ref().and_then(|r| r.uid.clone());
    (a.ip.clone(), uid.unwrap_or_default())
}

fn port_key(p: &EndpointPort) -> PortKey {
    (
        p.port,
        p.name.clone().unwrap_or_default(),
        p.protocol.clone().unwrap_or_default(),
        p.app_protocol.clone(),
    )
}

fn port_of(key: &PortKey) -> EndpointPort {
    EndpointPort {
        port: key.0,
        name: (!key.1.is_empty()).then(|| key.1.clone()),
        protocol: (!key.2.is_empty()).then(|| key.2.clone()),
        app_protocol: key.3.clone(),
    }
}

/// Orders addresses by IP (bytewise), then by the UID of their target (none first)
/// (`LessEndpointAddress`).
pub fn compare_addresses(a: &EndpointAddress, b: &EndpointAddress) -> Ordering {
    a.ip.as_bytes().cmp(b.ip.as_bytes()).then_with(|| {
        let uid = |x: &EndpointAddress| {
            x.target_ref
                .as_ref()
                .map(|r| r.uid.clone().unwrap_or_default())
        };
        uid(a).cmp(&uid(b))
    })
}

/// Expands `subsets` to (address, port, ready) and packs them again in canonical form.
pub fn repack_subsets(subsets: &[EndpointSubset]) -> Vec<EndpointSubset> {
    let mut addresses: BTreeMap<AddressKey, EndpointAddress> = BTreeMap::new();
    let mut by_port: BTreeMap<PortKey, BTreeMap<AddressKey, bool>> = BTreeMap::new();
    for subset in subsets {
        let ports: Vec<PortKey> = match subset.ports.as_deref() {
            None | Some([]) => vec![(NO_PORTS, String::new(), String::new(), None)],
            Some(ports) => ports.iter().map(port_key).collect(),
        };
        let listed = [
            (subset.addresses.iter().flatten(), true),
            (subset.not_ready_addresses.iter().flatten(), false),
        ];
        for (list, ready) in listed {
            for address in list {
                let key = address_key(address);
                addresses
                    .entry(key.clone())
                    .or_insert_with(|| address.clone());
                for port in &ports {
                    let state = by_port.entry(port.clone()).or_default();
                    // Not ready on a port trumps ready.
                    let was = state.entry(key.clone()).or_insert(ready);
                    *was = *was && ready;
                }
            }
        }
    }
    // Ports offered by the same addresses (with the same readiness) share a subset.
    let mut by_addresses: BTreeMap<Vec<(AddressKey, bool)>, Vec<PortKey>> = BTreeMap::new();
    for (port, state) in by_port {
        by_addresses
            .entry(state.into_iter().collect())
            .or_default()
            .push(port);
    }
    let mut subsets: Vec<EndpointSubset> = by_addresses
        .into_iter()
        .map(|(members, ports)| {
            let pick = |ready: bool| -> Option<Vec<EndpointAddress>> {
                let mut list: Vec<EndpointAddress> = members
                    .iter()
                    .filter(|(_, r)| *r == ready)
                    .filter_map(|(k, _)| addresses.get(k).cloned())
                    .collect();
                list.sort_by(compare_addresses);
                (!list.is_empty()).then_some(list)
            };
            let ports: Vec<EndpointPort> = ports
                .iter()
                .filter(|p| p.0 != NO_PORTS)
                .map(port_of)
                .collect();
            EndpointSubset {
                addresses: pick(true),
                not_ready_addresses: pick(false),
                ports: (!ports.is_empty()).then_some(ports),
            }
        })
        .collect();
    subsets.sort_by(compare_subsets);
    subsets
}

fn compare_subsets(a: &EndpointSubset, b: &EndpointSubset) -> Ordering {
    let first = |s: &EndpointSubset| {
        s.addresses
            .iter()
            .chain(s.not_ready_addresses.iter())
            .flatten()
            .next()
            .cloned()
    };
    let ports =
        |s: &EndpointSubset| -> Vec<PortKey> { s.ports.iter().flatten().map(port_key).collect() };
    match (first(a), first(b)) {
        (Some(x), Some(y)) => compare_addresses(&x, &y),
        (x, y) => x.is_some().cmp(&y.is_some()),
    }
    .then_with(|| ports(a).cmp(&ports(b)))
}

#[cfg(test)]
// One-address lists read best as `&[a.clone()]` in these tables.
#[allow(clippy::cloned_ref_to_slice_refs)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;

    fn addr(ip: &str, uid: &str) -> EndpointAddress {
        EndpointAddress {
            ip: ip.into(),
            target_ref: Some(ObjectReference {
                uid: Some(uid.into()),
                ..ObjectReference::default()
            }),
            ..EndpointAddress::default()
        }
    }

    fn port(name: &str, number: i32) -> EndpointPort {
        EndpointPort {
            name: Some(name.into()),
            port: number,
            protocol: Some("TCP".into()),
            app_protocol: None,
        }
    }

    fn subset(
        ready: &[EndpointAddress],
        not_ready: &[EndpointAddress],
        ports: &[EndpointPort],
    ) -> EndpointSubset {
        EndpointSubset {
            addresses: (!ready.is_empty()).then(|| ready.to_vec()),
            not_ready_addresses: (!not_ready.is_empty()).then(|| not_ready.to_vec()),
            ports: (!ports.is_empty()).then(|| ports.to_vec()),
        }
    }

    /// Ported from pkg/api/v1/endpoints `TestPackSubsets`.
    #[test]
    fn addresses_offering_the_same_ports_share_a_subset() {
        let (a, b) = (addr("1.2.3.4", "a"), addr("5.6.7.8", "b"));
        let p = port("http", 80);
        let q = port("https", 443);
        // One address per port, merged.
        assert_eq!(
            repack_subsets(&[
                subset(&[b.clone()], &[], &[p.clone()]),
                subset(&[a.clone()], &[], &[p.clone()])
            ]),
            [subset(&[a.clone(), b.clone()], &[], &[p.clone()])]
        );
        // Same address, two ports.
        assert_eq!(
            repack_subsets(&[
                subset(&[a.clone()], &[], &[p.clone()]),
                subset(&[a.clone()], &[], &[q.clone()])
            ]),
            [subset(&[a.clone()], &[], &[p.clone(), q.clone()])]
        );
        // Duplicates collapse.
        assert_eq!(
            repack_subsets(&[subset(&[a.clone(), a.clone()], &[], &[p.clone()])]),
            [subset(&[a.clone()], &[], &[p.clone()])]
        );
        // Same IP, different targets: two addresses.
        let a2 = addr("1.2.3.4", "z");
        assert_eq!(
            repack_subsets(&[
                subset(&[a2.clone()], &[], &[p.clone()]),
                subset(&[a.clone()], &[], &[p.clone()])
            ]),
            [subset(&[a.clone(), a2.clone()], &[], &[p.clone()])]
        );
        // Different ports on different addresses: two subsets.
        assert_eq!(
            repack_subsets(&[
                subset(&[b.clone()], &[], &[q.clone()]),
                subset(&[a.clone()], &[], &[p.clone()])
            ]),
            [
                subset(&[a.clone()], &[], &[p.clone()]),
                subset(&[b.clone()], &[], &[q.clone()])
            ]
        );
        // Not ready on one listing wins over ready on another.
        assert_eq!(
            repack_subsets(&[
                subset(&[a.clone()], &[], &[p.clone()]),
                subset(&[], &[a.clone()], &[p.clone()])
            ]),
            [subset(&[], &[a.clone()], &[p.clone()])]
        );
        // Ready and not-ready addresses of the same port share the subset.
        assert_eq!(
            repack_subsets(&[
                subset(&[a.clone()], &[], &[p.clone()]),
                subset(&[], &[b.clone()], &[p.clone()])
            ]),
            [subset(&[a.clone()], &[b.clone()], &[p.clone()])]
        );
        // Nothing in, nothing out.
        assert!(repack_subsets(&[]).is_empty());
    }

    #[test]
    fn addresses_without_ports_are_kept() {
        let a = addr("1.2.3.4", "a");
        assert_eq!(
            repack_subsets(&[subset(&[a.clone()], &[], &[])]),
            [subset(&[a], &[], &[])]
        );
    }

    #[test]
    fn repacking_is_canonical() {
        let (a, b) = (addr("1.2.3.4", "a"), addr("5.6.7.8", "b"));
        let (p, q) = (port("http", 80), port("https", 443));
        let one = repack_subsets(&[
            subset(&[b.clone()], &[], &[q.clone()]),
            subset(&[a.clone()], &[], &[p.clone(), q.clone()]),
        ]);
        let two = repack_subsets(&[
            subset(&[a.clone()], &[], &[q.clone(), p.clone()]),
            subset(&[b.clone()], &[], &[q.clone()]),
        ]);
        assert_eq!(one, two);
        assert_eq!(repack_subsets(&one), one);
    }
}
