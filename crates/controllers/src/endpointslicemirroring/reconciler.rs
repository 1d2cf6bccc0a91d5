//! The mirroring reconciler: from a custom Endpoints object and the slices mirrored for it to
//! the slices to create, update and delete (`reconciler.reconcile`, `reconcileByPortMapping`,
//! `recycleSlices`, `desiredCalc` and `addressToEndpoint` of k8s.io/kubernetes
//! `pkg/controller/endpointslicemirroring`). Pure: the caller writes the plan.
//!
//! Each subset maps to one slice per address type, holding at most `max_endpoints_per_subset`
//! of its addresses (ready first); invalid IPs are skipped. Subsets with the same ports share a
//! slice.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{EndpointAddress, Endpoints};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::endpointslice::endpoints::{
    endpoints_equal_beyond_hash, sorted_ports, EndpointKey, EndpointSet, PortMapKey,
};
use crate::endpointslice::slices::{slice_prefix, MANAGED_BY_LABEL, SERVICE_NAME_LABEL};
use crate::podendpoints::service::IpFamily;
use crate::podendpoints::LAST_CHANGE_TRIGGER_TIME;

/// The `endpointslice.kubernetes.io/managed-by` value of mirrored slices.
pub const MANAGED_BY: &str = "endpointslicemirroring-controller.k8s.io";
/// Annotation `kubectl apply` keeps its last configuration in; not mirrored.
pub const LAST_APPLIED_CONFIG: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// What to write to mirror one Endpoints object.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Plan {
    /// New slices (with `generateName`).
    pub to_create: Vec<EndpointSlice>,
    /// Changed slices (with their name).
    pub to_update: Vec<EndpointSlice>,
    /// Slices to delete.
    pub to_delete: Vec<EndpointSlice>,
    /// Addresses that are not IPs.
    pub invalid_addresses: usize,
    /// Addresses not mirrored: invalid ones and those over the per-subset maximum.
    pub skipped_addresses: usize,
}

/// The endpoint an Endpoints address becomes and its address type; `None` if the address is
/// not an IP (`addressToEndpoint`).
pub fn address_to_endpoint(address: &EndpointAddress, ready: bool) -> Option<(Endpoint, IpFamily)> {
    let ip: IpAddr = address.ip.parse().ok()?;
    let family = if ip.is_ipv4() {
        IpFamily::V4
    } else {
        IpFamily::V6
    };
    let endpoint = Endpoint {
        addresses: vec![ip.to_string()],
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            ..EndpointConditions::default()
        }),
        target_ref: address.target_ref.clone(),
        node_name: address.node_name.clone(),
        hostname: address.hostname.clone().filter(|h| !h.is_empty()),
        ..Endpoint::default()
    };
    Some((endpoint, family))
}

/// The ports of a slice mirroring a subset with `ports` (`epPortsToEpsPorts`).
fn slice_ports(ports: &[k8s_openapi::api::core::v1::EndpointPort]) -> Vec<EndpointPort> {
    let ports: Vec<EndpointPort> = ports
        .iter()
        .map(|p| EndpointPort {
            name: Some(p.name.clone().unwrap_or_default()),
            port: Some(p.port),
            protocol: Some(p.protocol.clone().unwrap_or_else(|| "TCP".into())),
            app_protocol: p.app_protocol.clone(),
        })
        .collect();
    sorted_ports(&ports)
}

/// The labels of a slice mirroring `endpoints`: its labels with the service name and manager
/// set.
fn mirrored_labels(endpoints: &Endpoints) -> BTreeMap<String, String> {
    let mut labels = endpoints.metadata.labels.clone().unwrap_or_default();
    labels.insert(
        SERVICE_NAME_LABEL.into(),
        endpoints.metadata.name.clone().unwrap_or_default(),
    );
    labels.insert(MANAGED_BY_LABEL.into(), MANAGED_BY.into());
    labels
}

/// The annotations of a slice mirroring `endpoints`: all but the trigger time and the applied
/// configuration.
fn mirrored_annotations(endpoints: &Endpoints) -> BTreeMap<String, String> {
    let mut annotations = endpoints.metadata.annotations.clone().unwrap_or_default();
    annotations.remove(LAST_CHANGE_TRIGGER_TIME);
    annotations.remove(LAST_APPLIED_CONFIG);
    annotations
}

/// An empty slice mirroring `endpoints` (owned by it) for `ports` and `family`, named `name` or
/// by `generateName` (`newEndpointSlice`).
pub fn new_endpoint_slice(
    endpoints: &Endpoints,
    ports: Vec<EndpointPort>,
    family: IpFamily,
    name: Option<String>,
) -> EndpointSlice {
    let endpoints_name = endpoints.metadata.name.clone().unwrap_or_default();
    EndpointSlice {
        metadata: ObjectMeta {
            generate_name: name.is_none().then(|| slice_prefix(&endpoints_name)),
            name,
            namespace: endpoints.metadata.namespace.clone(),
            labels: Some(mirrored_labels(endpoints)),
            annotations: Some(mirrored_annotations(endpoints)),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Endpoints".into(),
                name: endpoints_name,
                uid: endpoints.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        address_type: family.address_type().into(),
        endpoints: Vec::new(),
        ports: Some(ports),
    }
}

type SliceKey = (IpFamily, PortMapKey);

/// The mirroring plan for `endpoints` given the `existing` slices mirrored for it.
pub fn reconcile(
    endpoints: &Endpoints,
    existing: &[Arc<EndpointSlice>],
    max_endpoints_per_subset: usize,
) -> Plan {
    let mut plan = Plan::default();
    let mut desired: BTreeMap<SliceKey, (Vec<EndpointPort>, EndpointSet)> = BTreeMap::new();
    for subset in endpoints.subsets.iter().flatten() {
        let ports = slice_ports(subset.ports.as_deref().unwrap_or_default());
        let port_key = PortMapKey::new(&ports);
        for family in [IpFamily::V4, IpFamily::V6] {
            desired
                .entry((family, port_key.clone()))
                .or_insert_with(|| (ports.clone(), EndpointSet::new()));
        }
        let listed = subset.addresses.iter().flatten().map(|a| (a, true)).chain(
            subset
                .not_ready_addresses
                .iter()
                .flatten()
                .map(|a| (a, false)),
        );
        let total = subset.addresses.as_ref().map_or(0, Vec::len)
            + subset.not_ready_addresses.as_ref().map_or(0, Vec::len);
        let mut added = 0;
        for (address, ready) in listed {
            if added >= max_endpoints_per_subset {
                break;
            }
            match address_to_endpoint(address, ready) {
                Some((endpoint, family)) => {
                    let set = &mut desired
                        .get_mut(&(family, port_key.clone()))
                        .expect("both families initialised above")
                        .1;
                    set.insert(EndpointKey::of(&endpoint), endpoint);
                    added += 1;
                }
                None => plan.invalid_addresses += 1,
            }
        }
        plan.skipped_addresses += total - added;
    }

    let mut existing_by_key: BTreeMap<SliceKey, Vec<EndpointSlice>> = BTreeMap::new();
    for slice in existing {
        let family = IpFamily::from_address_type(&slice.address_type).unwrap_or(IpFamily::V4);
        let key = (
            family,
            PortMapKey::new(slice.ports.as_deref().unwrap_or_default()),
        );
        existing_by_key
            .entry(key)
            .or_default()
            .push((**slice).clone());
    }
    for (key, (ports, set)) in desired.iter() {
        let slices = existing_by_key.remove(key).unwrap_or_default();
        reconcile_by_port_mapping(
            &mut plan,
            endpoints,
            slices,
            set.clone(),
            ports.clone(),
            key.0,
            max_endpoints_per_subset,
        );
    }
    // Sets of ports no longer desired.
    plan.to_delete
        .extend(existing_by_key.into_values().flatten());
    recycle(&mut plan);
    plan
}

/// Whether `slice`'s endpoints, labels and annotations already mirror `desired` and
/// `endpoints` (`totalChanges` plus the label and annotation check).
fn mirrors(slice: &EndpointSlice, desired: &EndpointSet, endpoints: &Endpoints) -> bool {
    let mut matched = 0;
    for endpoint in &slice.endpoints {
        match desired.get(&EndpointKey::of(endpoint)) {
            Some(want) if endpoints_equal_beyond_hash(want, endpoint) => matched += 1,
            _ => return false,
        }
    }
    let mut labels = slice.metadata.labels.clone().unwrap_or_default();
    labels.remove(MANAGED_BY_LABEL);
    labels.remove(SERVICE_NAME_LABEL);
    matched == desired.len()
        && labels == endpoints.metadata.labels.clone().unwrap_or_default()
        && slice.metadata.annotations.clone().unwrap_or_default() == mirrored_annotations(endpoints)
}

fn reconcile_by_port_mapping(
    plan: &mut Plan,
    endpoints: &Endpoints,
    existing: Vec<EndpointSlice>,
    mut desired: EndpointSet,
    ports: Vec<EndpointPort>,
    family: IpFamily,
    max: usize,
) {
    if desired.is_empty() {
        plan.to_delete.extend(existing);
        return;
    }
    let mut existing = existing.into_iter();
    let first = existing.next();
    // Every slice but the first goes.
    plan.to_delete.extend(existing);
    if let Some(first) = &first {
        if mirrors(first, &desired, endpoints) {
            return;
        }
    }
    let name = first.as_ref().and_then(|s| s.metadata.name.clone());
    let mut slice = new_endpoint_slice(endpoints, ports, family, name);
    while slice.endpoints.len() < max {
        let Some((_, endpoint)) = desired.pop_first() else {
            break;
        };
        slice.endpoints.push(endpoint);
    }
    if slice.metadata.name.is_some() {
        plan.to_update.push(slice);
    } else {
        plan.to_create.push(slice);
    }
}

/// Turns creates into updates of slices of the same address type otherwise deleted
/// (`recycleSlices`).
fn recycle(plan: &mut Plan) {
    for family in ["IPv4", "IPv6"] {
        loop {
            let create = plan.to_create.iter().position(|s| s.address_type == family);
            let delete = plan.to_delete.iter().position(|s| s.address_type == family);
            let (Some(c), Some(d)) = (create, delete) else {
                break;
            };
            let mut slice = plan.to_create.remove(c);
            let old = plan.to_delete.remove(d);
            slice.metadata.name = old.metadata.name;
            slice.metadata.generate_name = None;
            plan.to_update.push(slice);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{EndpointPort as CorePort, EndpointSubset};

    fn address(ip: &str) -> EndpointAddress {
        EndpointAddress {
            ip: ip.into(),
            ..EndpointAddress::default()
        }
    }

    fn endpoints(subsets: Vec<EndpointSubset>) -> Endpoints {
        Endpoints {
            metadata: ObjectMeta {
                name: Some("ext".into()),
                namespace: Some("ns".into()),
                uid: Some("uid-ext".into()),
                labels: Some([("team".to_string(), "a".to_string())].into()),
                annotations: Some(
                    [
                        ("note".to_string(), "x".to_string()),
                        (LAST_CHANGE_TRIGGER_TIME.to_string(), "t".to_string()),
                    ]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            subsets: Some(subsets),
        }
    }

    fn subset(ready: &[&str], not_ready: &[&str], port: i32) -> EndpointSubset {
        EndpointSubset {
            addresses: Some(ready.iter().map(|ip| address(ip)).collect()),
            not_ready_addresses: Some(not_ready.iter().map(|ip| address(ip)).collect()),
            ports: Some(vec![CorePort {
                name: Some("http".into()),
                port,
                protocol: Some("TCP".into()),
                app_protocol: None,
            }]),
        }
    }

    fn stored(mut slice: EndpointSlice, name: &str) -> Arc<EndpointSlice> {
        slice.metadata.name = Some(name.into());
        slice.metadata.generate_name = None;
        Arc::new(slice)
    }

    fn ready_of(slice: &EndpointSlice) -> Vec<(String, Option<bool>)> {
        slice
            .endpoints
            .iter()
            .map(|e| (e.addresses[0].clone(), e.conditions.as_ref().unwrap().ready))
            .collect()
    }

    /// Ported from mirroring reconciler_test.go `TestReconcile` ("Endpoints with 1 subset, port,
    /// and address", "…not ready address", "…with 2 subsets, multiple ports and addresses").
    #[test]
    fn a_subset_becomes_a_slice_labelled_and_annotated_like_its_endpoints() {
        let ep = endpoints(vec![subset(&["10.0.0.1"], &["10.0.0.2"], 80)]);
        let plan = reconcile(&ep, &[], 1000);
        assert_eq!(plan.to_create.len(), 1);
        let slice = &plan.to_create[0];
        assert_eq!(slice.address_type, "IPv4");
        assert_eq!(slice.metadata.generate_name.as_deref(), Some("ext-"));
        let labels = slice.metadata.labels.as_ref().unwrap();
        assert_eq!(labels[SERVICE_NAME_LABEL], "ext");
        assert_eq!(labels[MANAGED_BY_LABEL], MANAGED_BY);
        assert_eq!(labels["team"], "a");
        let annotations = slice.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations.get("note").map(String::as_str), Some("x"));
        assert!(!annotations.contains_key(LAST_CHANGE_TRIGGER_TIME));
        let owner = &slice.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("Endpoints", "uid-ext")
        );
        assert_eq!(
            ready_of(slice),
            [
                ("10.0.0.1".to_string(), Some(true)),
                ("10.0.0.2".to_string(), Some(false))
            ]
        );
        assert_eq!(slice.ports.as_ref().unwrap()[0].port, Some(80));

        // Two subsets with different ports: two slices; IPv6 addresses in their own slice.
        let ep = endpoints(vec![
            subset(&["10.0.0.1"], &[], 80),
            subset(&["10.0.0.2", "fd00::2"], &[], 443),
        ]);
        let plan = reconcile(&ep, &[], 1000);
        let mut shapes: Vec<(String, Option<i32>, usize)> = plan
            .to_create
            .iter()
            .map(|s| {
                (
                    s.address_type.clone(),
                    s.ports.as_ref().unwrap()[0].port,
                    s.endpoints.len(),
                )
            })
            .collect();
        shapes.sort();
        assert_eq!(
            shapes,
            [
                ("IPv4".to_string(), Some(80), 1),
                ("IPv4".to_string(), Some(443), 1),
                ("IPv6".to_string(), Some(443), 1)
            ]
        );
    }

    /// Ported from `TestReconcile` ("Endpoints with 1 subset and invalid addresses", "…more
    /// addresses than MaxEndpointsPerSubset").
    #[test]
    fn invalid_addresses_and_those_over_the_maximum_are_skipped() {
        let ep = endpoints(vec![subset(
            &["10.0.0.1", "not-an-ip", "10.0.0.3"],
            &["10.0.0.4"],
            80,
        )]);
        let plan = reconcile(&ep, &[], 2);
        assert_eq!(plan.invalid_addresses, 1);
        assert_eq!(plan.skipped_addresses, 2);
        assert_eq!(
            ready_of(&plan.to_create[0]),
            [
                ("10.0.0.1".to_string(), Some(true)),
                ("10.0.0.3".to_string(), Some(true))
            ]
        );
    }

    /// Ported from `TestReconcile` ("existing EndpointSlice that matches", "…needs update",
    /// "…extra slices", "no addresses").
    #[test]
    fn an_existing_slice_is_kept_updated_or_deleted() {
        let ep = endpoints(vec![subset(&["10.0.0.1"], &[], 80)]);
        let first = stored(reconcile(&ep, &[], 1000).to_create.remove(0), "ext-a");
        assert_eq!(
            reconcile(&ep, std::slice::from_ref(&first), 1000),
            Plan::default()
        );

        // A changed address: the same slice, updated.
        let changed = endpoints(vec![subset(&["10.0.0.9"], &[], 80)]);
        let plan = reconcile(&changed, std::slice::from_ref(&first), 1000);
        assert!(plan.to_create.is_empty() && plan.to_delete.is_empty());
        assert_eq!(plan.to_update[0].metadata.name.as_deref(), Some("ext-a"));
        assert_eq!(plan.to_update[0].endpoints[0].addresses, ["10.0.0.9"]);

        // A label change alone updates too.
        let mut relabelled = ep.clone();
        relabelled.metadata.labels = Some([("team".to_string(), "b".to_string())].into());
        let plan = reconcile(&relabelled, std::slice::from_ref(&first), 1000);
        assert_eq!(plan.to_update.len(), 1);

        // An extra slice for the same ports goes.
        let second = stored((*first).clone(), "ext-b");
        let plan = reconcile(&ep, &[first.clone(), second], 1000);
        assert!(plan.to_update.is_empty());
        assert_eq!(plan.to_delete[0].metadata.name.as_deref(), Some("ext-b"));

        // No addresses left: the slice goes.
        let empty = endpoints(vec![]);
        let plan = reconcile(&empty, std::slice::from_ref(&first), 1000);
        assert_eq!(plan.to_delete.len(), 1);
        assert!(plan.to_create.is_empty());
    }

    /// Ported from `TestRecycleSlices`: a slice of old ports is reused for the new ones.
    #[test]
    fn slices_of_old_ports_are_recycled() {
        let ep = endpoints(vec![subset(&["10.0.0.1"], &[], 80)]);
        let first = stored(reconcile(&ep, &[], 1000).to_create.remove(0), "ext-a");
        let moved = endpoints(vec![subset(&["10.0.0.1"], &[], 8080)]);
        let plan = reconcile(&moved, &[first], 1000);
        assert!(plan.to_create.is_empty() && plan.to_delete.is_empty());
        assert_eq!(plan.to_update[0].metadata.name.as_deref(), Some("ext-a"));
        assert_eq!(
            plan.to_update[0].ports.as_ref().unwrap()[0].port,
            Some(8080)
        );
    }

    /// Ported from utils_test.go `TestAddressToEndpoint`.
    #[test]
    fn addresses_keep_their_node_hostname_and_target() {
        let mut a = address("2001:db8:0::1");
        a.node_name = Some("node-1".into());
        a.hostname = Some("h".into());
        let (e, family) = address_to_endpoint(&a, true).unwrap();
        assert_eq!(family, IpFamily::V6);
        assert_eq!(e.addresses, ["2001:db8::1"]);
        assert_eq!(e.node_name.as_deref(), Some("node-1"));
        assert_eq!(e.hostname.as_deref(), Some("h"));
        assert!(address_to_endpoint(&address("nope"), true).is_none());
    }
}
