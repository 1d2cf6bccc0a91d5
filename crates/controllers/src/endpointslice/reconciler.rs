//! The EndpointSlice reconciler: from a Service, its pods and its current slices to the slices
//! to create, update and delete (`Reconciler.Reconcile`, `reconcileByAddressType`,
//! `reconcileByPortMapping` and the recycling step of `finalize` in k8s.io/endpointslice
//! `reconciler.go`). Pure: the caller writes the plan.
//!
//! Per address type and set of ports, endpoints that are still desired stay in the slice that
//! holds them (updated if they changed); slices that lost endpoints are filled up first (fullest
//! first), then leftovers go to the unchanged slice they fill closest to full, and only then to
//! new slices of at most `max_endpoints_per_slice`. A Service with no endpoints keeps one empty
//! placeholder slice. Creates that would sit next to deletes of the same address type reuse the
//! deleted slices' names as updates instead.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::{EndpointPort, EndpointSlice};

use super::endpoints::{
    endpoint_ports, endpoints_equal_beyond_hash, pod_to_endpoint, sorted_ports, EndpointKey,
    EndpointSet, PortMapKey,
};
use super::slices::{new_endpoint_slice, owned_by, slice_labels, slice_to_fill};
use crate::podendpoints::service::{ip_families, IpFamily};
use crate::podendpoints::should_pod_be_in_endpoints;
use crate::replicaset::pod_state::node_name;

/// What to write to bring a Service's slices in line.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Plan {
    /// New slices (with `generateName`).
    pub to_create: Vec<EndpointSlice>,
    /// Changed slices (with their name and resourceVersion).
    pub to_update: Vec<EndpointSlice>,
    /// Slices to delete.
    pub to_delete: Vec<EndpointSlice>,
    /// Pods left out because their node is not in the cache; the Service is retried.
    pub errors: Vec<String>,
    /// Desired endpoints not in a slice before (for metrics).
    pub added: usize,
    /// Endpoints no longer desired (for metrics).
    pub removed: usize,
}

/// Reconciles one Service's slices; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct Reconciler {
    /// The managed-by value of the slices (`endpointslice-controller.k8s.io`).
    pub controller_name: String,
    /// `--max-endpoints-per-slice`.
    pub max_endpoints_per_slice: usize,
}

impl Reconciler {
    /// The plan for `service` selecting `pods`, given the `existing` slices this controller
    /// manages for it and the cached nodes (`node`).
    pub fn reconcile(
        &self,
        service: &Service,
        pods: &[Arc<Pod>],
        existing: &[Arc<EndpointSlice>],
        node: impl Fn(&str) -> Option<Arc<Node>>,
    ) -> Plan {
        let families = ip_families(service);
        let mut plan = Plan::default();
        let mut by_family: BTreeMap<IpFamily, Vec<EndpointSlice>> = BTreeMap::new();
        for slice in existing {
            match IpFamily::from_address_type(&slice.address_type) {
                Some(f) if families.contains(&f) => {
                    by_family.entry(f).or_default().push((**slice).clone())
                }
                // The Service no longer has this address type.
                _ => plan.to_delete.push((**slice).clone()),
            }
        }
        for family in families {
            let existing = by_family.remove(&family).unwrap_or_default();
            let part = self.reconcile_by_address_type(service, pods, existing, family, &node);
            plan.to_create.extend(part.to_create);
            plan.to_update.extend(part.to_update);
            plan.to_delete.extend(part.to_delete);
            plan.errors.extend(part.errors);
            plan.added += part.added;
            plan.removed += part.removed;
        }
        plan
    }

    fn reconcile_by_address_type(
        &self,
        service: &Service,
        pods: &[Arc<Pod>],
        existing: Vec<EndpointSlice>,
        family: IpFamily,
        node: &impl Fn(&str) -> Option<Arc<Node>>,
    ) -> Plan {
        let mut plan = Plan::default();
        let existing_count = existing.len();
        let mut existing_by_ports: BTreeMap<PortMapKey, Vec<EndpointSlice>> = BTreeMap::new();
        for slice in existing {
            if owned_by(&slice, service) {
                let key = PortMapKey::new(slice.ports.as_deref().unwrap_or_default());
                existing_by_ports.entry(key).or_default().push(slice);
            } else {
                plan.to_delete.push(slice);
            }
        }

        let publish = service
            .spec
            .as_ref()
            .and_then(|s| s.publish_not_ready_addresses)
            .unwrap_or(false);
        let mut desired: BTreeMap<PortMapKey, (Vec<EndpointPort>, EndpointSet)> = BTreeMap::new();
        for pod in pods {
            if !should_pod_be_in_endpoints(pod, true) {
                continue;
            }
            let ports = endpoint_ports(service, pod);
            let key = PortMapKey::new(&ports);
            let entry = desired
                .entry(key)
                .or_insert_with(|| (sorted_ports(&ports), EndpointSet::new()));
            let node_name = node_name(pod);
            let pod_node = node(node_name);
            if pod_node.is_none() && !publish {
                plan.errors.push(format!(
                    "skipping Pod {} for Service {}/{}: Node {} Not Found",
                    pod.metadata.name.as_deref().unwrap_or_default(),
                    service.metadata.namespace.as_deref().unwrap_or_default(),
                    service.metadata.name.as_deref().unwrap_or_default(),
                    node_name
                ));
                continue;
            }
            let endpoint = pod_to_endpoint(pod, pod_node.as_deref(), service, family);
            if !endpoint.addresses.is_empty() {
                entry.1.insert(EndpointKey::of(&endpoint), endpoint);
            }
        }

        for (key, (ports, endpoints)) in &desired {
            let slices = existing_by_ports.get(key).cloned().unwrap_or_default();
            let part = self.reconcile_by_port_mapping(
                service,
                slices,
                endpoints.clone(),
                ports.clone(),
                family,
            );
            plan.added += part.added;
            plan.removed += part.removed;
            plan.to_create.extend(part.to_create);
            plan.to_update.extend(part.to_update);
            plan.to_delete.extend(part.to_delete);
        }
        // Sets of ports no longer desired.
        for (key, slices) in existing_by_ports.iter() {
            if !desired.contains_key(key) {
                plan.to_delete.extend(slices.iter().cloned());
            }
        }
        // A Service with no slices left keeps an empty placeholder.
        if existing_count == plan.to_delete.len() && plan.to_create.is_empty() {
            let placeholder =
                new_endpoint_slice(service, Vec::new(), family, &self.controller_name);
            if plan.to_delete.len() == 1 && same_placeholder(&plan.to_delete[0], &placeholder) {
                // The placeholder is already there.
                plan.to_delete.clear();
            } else {
                plan.to_create.push(placeholder);
            }
        }
        // Hints are not used (topology-aware routing is off): none may remain.
        remove_hints(&mut plan, existing_by_ports.into_values().flatten());
        recycle(&mut plan, service);
        plan
    }

    fn reconcile_by_port_mapping(
        &self,
        service: &Service,
        existing: Vec<EndpointSlice>,
        mut desired: EndpointSet,
        ports: Vec<EndpointPort>,
        family: IpFamily,
    ) -> Plan {
        let max = self.max_endpoints_per_slice;
        let mut plan = Plan::default();
        let mut by_name: BTreeMap<String, EndpointSlice> = BTreeMap::new();
        let mut unchanged: BTreeSet<String> = BTreeSet::new();
        let mut to_update: BTreeSet<String> = BTreeSet::new();
        let mut to_delete: BTreeSet<String> = BTreeSet::new();

        // 1. Keep the endpoints still desired where they are, updated if they changed.
        for slice in existing {
            let name = slice.metadata.name.clone().unwrap_or_default();
            let mut kept = Vec::new();
            let mut endpoint_updated = false;
            for endpoint in &slice.endpoints {
                if let Some(want) = desired.remove(&EndpointKey::of(endpoint)) {
                    if !endpoints_equal_beyond_hash(&want, endpoint) {
                        endpoint_updated = true;
                    }
                    kept.push(want);
                }
            }
            let (labels, labels_changed) = slice_labels(&slice, service, &self.controller_name);
            if endpoint_updated || kept.len() != slice.endpoints.len() {
                plan.removed += slice.endpoints.len().saturating_sub(kept.len());
                if kept.is_empty() {
                    to_delete.insert(name.clone());
                    by_name.insert(name, slice);
                } else {
                    let mut slice = slice;
                    slice.endpoints = kept;
                    slice.metadata.labels = Some(labels);
                    to_update.insert(name.clone());
                    by_name.insert(name, slice);
                }
            } else if labels_changed {
                let mut slice = slice;
                slice.metadata.labels = Some(labels);
                to_update.insert(name.clone());
                by_name.insert(name, slice);
            } else {
                unchanged.insert(name.clone());
                by_name.insert(name, slice);
            }
        }
        plan.added = desired.len();

        // 2. Fill the slices being updated anyway, fullest first.
        if !desired.is_empty() && !to_update.is_empty() {
            let mut names: Vec<&String> = to_update.iter().collect();
            names.sort_by_key(|n| std::cmp::Reverse(by_name[*n].endpoints.len()));
            let names: Vec<String> = names.into_iter().cloned().collect();
            for name in names {
                let slice = by_name.get_mut(&name).expect("slices to update are known");
                while slice.endpoints.len() < max {
                    let Some((_, endpoint)) = desired.pop_first() else {
                        break;
                    };
                    slice.endpoints.push(endpoint);
                }
            }
        }

        // 3. Leftovers: into the unchanged slice they fill closest to full, else new slices.
        while !desired.is_empty() {
            let mut target: Option<EndpointSlice> = None;
            if desired.len() < max && !unchanged.is_empty() {
                let candidates: Vec<EndpointSlice> =
                    unchanged.iter().map(|n| by_name[n].clone()).collect();
                if let Some(i) = slice_to_fill(&candidates, desired.len(), max) {
                    target = Some(candidates[i].clone());
                }
            }
            let mut slice = target.unwrap_or_else(|| {
                new_endpoint_slice(service, ports.clone(), family, &self.controller_name)
            });
            while slice.endpoints.len() < max {
                let Some((_, endpoint)) = desired.pop_first() else {
                    break;
                };
                slice.endpoints.push(endpoint);
            }
            match slice.metadata.name.clone() {
                Some(name) => {
                    unchanged.remove(&name);
                    to_update.insert(name.clone());
                    by_name.insert(name, slice);
                }
                None => plan.to_create.push(slice),
            }
        }

        plan.to_update = to_update.iter().map(|n| by_name[n].clone()).collect();
        plan.to_delete = to_delete.iter().map(|n| by_name[n].clone()).collect();
        plan
    }
}

/// Whether `existing` is the placeholder `placeholder` would be: same namespace, labels, owners,
/// address type, and no ports or endpoints (`placeholderSliceCompare`).
fn same_placeholder(existing: &EndpointSlice, placeholder: &EndpointSlice) -> bool {
    existing.metadata.namespace == placeholder.metadata.namespace
        && existing.metadata.labels.clone().unwrap_or_default()
            == placeholder.metadata.labels.clone().unwrap_or_default()
        && existing
            .metadata
            .owner_references
            .clone()
            .unwrap_or_default()
            == placeholder
                .metadata
                .owner_references
                .clone()
                .unwrap_or_default()
        && existing.address_type == placeholder.address_type
        && existing.endpoints.is_empty()
        && existing.ports.as_deref().unwrap_or_default().is_empty()
}

/// Clears hints on the slices being written and queues for update the unchanged ones that still
/// carry hints (`RemoveHintsFromSlices`).
fn remove_hints(plan: &mut Plan, existing: impl Iterator<Item = EndpointSlice>) {
    for slice in plan.to_create.iter_mut().chain(plan.to_update.iter_mut()) {
        for endpoint in &mut slice.endpoints {
            endpoint.hints = None;
        }
    }
    let changed: BTreeSet<Option<String>> = plan
        .to_update
        .iter()
        .chain(plan.to_delete.iter())
        .map(|s| s.metadata.name.clone())
        .collect();
    for mut slice in existing {
        if changed.contains(&slice.metadata.name) {
            continue;
        }
        if slice.endpoints.iter().any(|e| e.hints.is_some()) {
            for endpoint in &mut slice.endpoints {
                endpoint.hints = None;
            }
            plan.to_update.push(slice);
        }
    }
}

/// Turns creates into updates of slices otherwise deleted, when they have the address type and
/// are owned by the Service (so as not to touch the slices of an older Service of the same name
/// being garbage collected) (the first loop of `finalize`).
fn recycle(plan: &mut Plan, service: &Service) {
    let mut i = 0;
    while i < plan.to_delete.len() {
        let Some(last) = plan.to_create.last() else {
            break;
        };
        let old = &plan.to_delete[i];
        if old.address_type == last.address_type && owned_by(old, service) {
            let mut slice = plan.to_create.pop().expect("checked above");
            let old = plan.to_delete.remove(i);
            slice.metadata.name = old.metadata.name;
            slice.metadata.generate_name = None;
            slice.metadata.resource_version = old.metadata.resource_version;
            slice.metadata.uid = old.metadata.uid;
            plan.to_update.push(slice);
        } else {
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpointslice::slices::{MANAGED_BY_LABEL, SERVICE_NAME_LABEL};
    use crate::podendpoints::fixtures::{node, pod, service};
    use k8s_openapi::api::core::v1::ServicePort;
    use k8s_openapi::api::discovery::v1::{Endpoint, EndpointHints, ForZone};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    const CONTROLLER: &str = "endpointslice-controller.k8s.io";

    fn reconciler(max: usize) -> Reconciler {
        Reconciler {
            controller_name: CONTROLLER.into(),
            max_endpoints_per_slice: max,
        }
    }

    fn web() -> Service {
        service("web", Some(&[("app", "web")]))
    }

    fn pods(n: usize) -> Vec<Arc<Pod>> {
        (0..n)
            .map(|i| {
                Arc::new(pod(
                    &format!("p{i}"),
                    &format!("10.0.{}.{}", i / 250, i % 250 + 1),
                    true,
                ))
            })
            .collect()
    }

    fn nodes(name: &str) -> Option<Arc<Node>> {
        (name == "node-1").then(|| Arc::new(node("node-1", Some("zone-a"))))
    }

    fn run(r: &Reconciler, svc: &Service, pods: &[Arc<Pod>], existing: &[EndpointSlice]) -> Plan {
        let existing: Vec<Arc<EndpointSlice>> = existing.iter().cloned().map(Arc::new).collect();
        r.reconcile(svc, pods, &existing, nodes)
    }

    /// What the API server would return for `slice` created as `name`.
    fn stored(mut slice: EndpointSlice, name: &str) -> EndpointSlice {
        slice.metadata.name = Some(name.into());
        slice.metadata.generate_name = None;
        slice.metadata.uid = Some(format!("uid-{name}"));
        slice.metadata.resource_version = Some("1".into());
        slice
    }

    fn sizes(slices: &[EndpointSlice]) -> Vec<usize> {
        slices.iter().map(|s| s.endpoints.len()).collect()
    }

    /// Ported from reconciler_test.go `TestReconcileEmpty`.
    #[test]
    fn a_service_without_pods_gets_one_empty_placeholder_slice() {
        let plan = run(&reconciler(100), &web(), &[], &[]);
        assert_eq!(sizes(&plan.to_create), [0]);
        assert!(plan.to_update.is_empty() && plan.to_delete.is_empty());
        let slice = &plan.to_create[0];
        assert_eq!(slice.address_type, "IPv4");
        assert!(slice.ports.as_ref().unwrap().is_empty());
        let labels = slice.metadata.labels.as_ref().unwrap();
        assert_eq!(labels[SERVICE_NAME_LABEL], "web");
        assert_eq!(labels[MANAGED_BY_LABEL], CONTROLLER);
        assert_eq!(slice.metadata.generate_name.as_deref(), Some("web-"));

        // The placeholder exists already: nothing to do.
        let placeholder = stored(plan.to_create[0].clone(), "web-abc");
        let plan = run(&reconciler(100), &web(), &[], &[placeholder]);
        assert_eq!(plan, Plan::default());
    }

    /// Ported from `TestReconcile1Pod`.
    #[test]
    fn one_pod_makes_one_slice_with_its_endpoint_and_ports() {
        let plan = run(&reconciler(100), &web(), &pods(1), &[]);
        assert_eq!(sizes(&plan.to_create), [1]);
        let slice = &plan.to_create[0];
        let port = &slice.ports.as_ref().unwrap()[0];
        assert_eq!(
            (port.port, port.protocol.as_deref()),
            (Some(8080), Some("TCP"))
        );
        let e = &slice.endpoints[0];
        assert_eq!(e.addresses, ["10.0.0.1"]);
        assert_eq!(e.zone.as_deref(), Some("zone-a"));
        assert_eq!(e.node_name.as_deref(), Some("node-1"));
        assert_eq!(plan.added, 1);
    }

    /// Ported from `TestReconcileManyPods` and `TestReconcileMaxEndpointsPerSlice`.
    #[test]
    fn pods_are_packed_into_slices_of_at_most_max_endpoints() {
        assert_eq!(
            sizes(&run(&reconciler(100), &web(), &pods(250), &[]).to_create),
            [100, 100, 50]
        );
        assert_eq!(
            sizes(&run(&reconciler(50), &web(), &pods(250), &[]).to_create),
            [50; 5]
        );
        assert_eq!(
            sizes(&run(&reconciler(1), &web(), &pods(3), &[]).to_create),
            [1, 1, 1]
        );
        assert_eq!(
            sizes(&run(&reconciler(1000), &web(), &pods(250), &[]).to_create),
            [250]
        );
    }

    /// Ported from `TestReconcileEndpointSlicesSomePreexisting`: slices that lose endpoints are
    /// refilled (fullest first) before anything new is created.
    #[test]
    fn slices_that_lose_endpoints_are_refilled_first() {
        let svc = web();
        let all = pods(250);
        let first = run(&reconciler(100), &svc, &all[..200], &[]);
        let existing: Vec<EndpointSlice> = first
            .to_create
            .into_iter()
            .enumerate()
            .map(|(i, s)| stored(s, &format!("web-{i}")))
            .collect();
        assert_eq!(sizes(&existing), [100, 100]);
        // Drop 10 pods of the first slice and add 30 new ones.
        let dropped: Vec<String> = existing[0].endpoints[..10]
            .iter()
            .filter_map(|e| e.target_ref.as_ref()?.name.clone())
            .collect();
        let mut now: Vec<Arc<Pod>> = all[..200]
            .iter()
            .filter(|p| !dropped.contains(p.metadata.name.as_ref().unwrap()))
            .cloned()
            .collect();
        now.extend_from_slice(&all[200..230]);
        let plan = run(&reconciler(100), &svc, &now, &existing);
        // The first slice is refilled to 100; 20 left go to a new slice.
        assert_eq!(sizes(&plan.to_update), [100]);
        assert_eq!(sizes(&plan.to_create), [20]);
        assert!(plan.to_delete.is_empty());
        assert_eq!((plan.added, plan.removed), (30, 10));
    }

    /// Ported from `TestReconcileEndpointSlicesSomePreexisting` (unchanged slices part): leftovers
    /// go to the unchanged slice they fill closest to full.
    #[test]
    fn leftovers_fill_the_unchanged_slice_closest_to_full() {
        let svc = web();
        let all = pods(100);
        let a = stored(
            run(&reconciler(100), &svc, &all[..60], &[])
                .to_create
                .remove(0),
            "web-a",
        );
        let b = stored(
            run(&reconciler(100), &svc, &all[60..90], &[])
                .to_create
                .remove(0),
            "web-b",
        );
        let plan = run(&reconciler(100), &svc, &all, &[a, b]);
        assert!(plan.to_create.is_empty());
        assert_eq!(plan.to_update.len(), 1);
        assert_eq!(plan.to_update[0].metadata.name.as_deref(), Some("web-a"));
        assert_eq!(plan.to_update[0].endpoints.len(), 70);
    }

    /// Ported from `TestReconcileEndpointSlicesUpdating` and
    /// `TestReconcile1EndpointSlicePublishNotReadyAddresses`: a changed endpoint updates its slice.
    #[test]
    fn a_readiness_change_updates_the_slice_in_place() {
        let svc = web();
        let existing = stored(
            run(&reconciler(100), &svc, &pods(3), &[])
                .to_create
                .remove(0),
            "web-a",
        );
        assert_eq!(
            run(
                &reconciler(100),
                &svc,
                &pods(3),
                std::slice::from_ref(&existing)
            ),
            Plan::default()
        );
        let mut now = pods(3);
        now[1] = Arc::new(pod("p1", "10.0.0.2", false));
        let plan = run(&reconciler(100), &svc, &now, &[existing]);
        assert_eq!(plan.to_update.len(), 1);
        let ready: Vec<Option<bool>> = plan.to_update[0]
            .endpoints
            .iter()
            .map(|e| e.conditions.as_ref().unwrap().ready)
            .collect();
        assert_eq!(ready.iter().filter(|r| **r == Some(false)).count(), 1);
        assert_eq!(plan.to_update[0].metadata.name.as_deref(), Some("web-a"));
    }

    /// Ported from `TestReconcileEndpointSlicesRecycling`: when the ports change, the old slices
    /// are reused by name rather than deleted and created.
    #[test]
    fn slices_of_old_ports_are_recycled_into_the_new_ones() {
        let svc = web();
        let existing: Vec<EndpointSlice> = run(&reconciler(100), &svc, &pods(200), &[])
            .to_create
            .into_iter()
            .enumerate()
            .map(|(i, s)| stored(s, &format!("web-{i}")))
            .collect();
        let mut renamed = svc.clone();
        renamed.spec.as_mut().unwrap().ports = Some(vec![ServicePort {
            name: Some("http".into()),
            port: 80,
            protocol: Some("TCP".into()),
            target_port: Some(IntOrString::Int(9090)),
            ..ServicePort::default()
        }]);
        let plan = run(&reconciler(100), &renamed, &pods(200), &existing);
        assert!(plan.to_create.is_empty());
        assert!(plan.to_delete.is_empty());
        assert_eq!(sizes(&plan.to_update), [100, 100]);
        let mut names: Vec<_> = plan
            .to_update
            .iter()
            .filter_map(|s| s.metadata.name.clone())
            .collect();
        names.sort();
        assert_eq!(names, ["web-0", "web-1"]);
        assert!(plan
            .to_update
            .iter()
            .all(|s| s.ports.as_ref().unwrap()[0].port == Some(9090)));
    }

    /// Ported from `TestReconcileEndpointSlicesReplaceDeprecated` and the ownership check:
    /// slices of another address type or not owned by the Service are replaced.
    #[test]
    fn slices_of_another_family_or_owner_go() {
        let svc = web();
        let mut foreign = stored(
            run(&reconciler(100), &svc, &pods(2), &[])
                .to_create
                .remove(0),
            "web-old",
        );
        foreign.metadata.owner_references.as_mut().unwrap()[0].uid = "older-service".into();
        let mut v6 = stored(
            run(&reconciler(100), &svc, &pods(2), &[])
                .to_create
                .remove(0),
            "web-v6",
        );
        v6.address_type = "IPv6".into();
        let plan = run(&reconciler(100), &svc, &pods(2), &[foreign, v6]);
        assert_eq!(sizes(&plan.to_create), [2]);
        let mut deleted: Vec<_> = plan
            .to_delete
            .iter()
            .filter_map(|s| s.metadata.name.clone())
            .collect();
        deleted.sort();
        // Neither is recycled: one has another owner, the other another address type.
        assert_eq!(deleted, ["web-old", "web-v6"]);
    }

    /// Ported from `TestReconcileEndpointSlicesServicesLabelsUpdating`.
    #[test]
    fn a_service_label_change_updates_the_slices_labels() {
        let svc = web();
        let existing = stored(
            run(&reconciler(100), &svc, &pods(2), &[])
                .to_create
                .remove(0),
            "web-a",
        );
        let mut labelled = svc.clone();
        labelled.metadata.labels = Some([("team".to_string(), "b".to_string())].into());
        let plan = run(&reconciler(100), &labelled, &pods(2), &[existing]);
        assert_eq!(plan.to_update.len(), 1);
        assert_eq!(
            plan.to_update[0].metadata.labels.as_ref().unwrap()["team"],
            "b"
        );
        assert_eq!(plan.to_update[0].endpoints.len(), 2);
    }

    /// Ported from `TestReconcilerPodMissingNode`.
    #[test]
    fn pods_on_unknown_nodes_are_skipped_with_an_error_unless_published() {
        let mut lost = pod("lost", "10.0.9.9", true);
        lost.spec.as_mut().unwrap().node_name = Some("gone".into());
        let mut all = pods(1);
        all.push(Arc::new(lost));
        let plan = run(&reconciler(100), &web(), &all, &[]);
        assert_eq!(sizes(&plan.to_create), [1]);
        assert_eq!(
            plan.errors,
            ["skipping Pod lost for Service ns/web: Node gone Not Found"]
        );
        let mut publish = web();
        publish.spec.as_mut().unwrap().publish_not_ready_addresses = Some(true);
        let plan = run(&reconciler(100), &publish, &all, &[]);
        assert_eq!(sizes(&plan.to_create), [2]);
        assert!(plan.errors.is_empty());
    }

    /// Ported from `TestReconcileEndpointSlicesDeletes…`: no pods left deletes all but one slice,
    /// which becomes the placeholder.
    #[test]
    fn losing_every_pod_leaves_a_placeholder() {
        let svc = web();
        let existing: Vec<EndpointSlice> = run(&reconciler(100), &svc, &pods(150), &[])
            .to_create
            .into_iter()
            .enumerate()
            .map(|(i, s)| stored(s, &format!("web-{i}")))
            .collect();
        let plan = run(&reconciler(100), &svc, &[], &existing);
        // The placeholder reuses one of the two slices; the other is deleted.
        assert!(plan.to_create.is_empty());
        assert_eq!(sizes(&plan.to_update), [0]);
        assert_eq!(plan.to_delete.len(), 1);
    }

    /// Hints are off: none survive a sync (`RemoveHintsFromSlices`).
    #[test]
    fn hints_are_removed_from_unchanged_slices() {
        let svc = web();
        let mut existing = stored(
            run(&reconciler(100), &svc, &pods(1), &[])
                .to_create
                .remove(0),
            "web-a",
        );
        existing.endpoints[0].hints = Some(EndpointHints {
            for_zones: Some(vec![ForZone {
                name: "zone-a".into(),
            }]),
            ..EndpointHints::default()
        });
        let plan = run(&reconciler(100), &svc, &pods(1), &[existing]);
        assert_eq!(plan.to_update.len(), 1);
        assert_eq!(
            plan.to_update[0].endpoints,
            vec![Endpoint {
                hints: None,
                ..plan.to_update[0].endpoints[0].clone()
            }]
        );
        assert!(plan.to_update[0].endpoints[0].hints.is_none());
    }

    /// Ported from `TestReconcile1Pod` (dual-stack cases): one slice per IP family.
    #[test]
    fn a_dual_stack_service_gets_a_slice_per_family() {
        let mut svc = web();
        svc.spec.as_mut().unwrap().ip_families = Some(vec!["IPv4".into(), "IPv6".into()]);
        let mut p = pod("a", "10.0.0.1", true);
        p.status.as_mut().unwrap().pod_ips = Some(vec![
            k8s_openapi::api::core::v1::PodIP {
                ip: "10.0.0.1".into(),
            },
            k8s_openapi::api::core::v1::PodIP {
                ip: "fd00::1".into(),
            },
        ]);
        let plan = run(&reconciler(100), &svc, &[Arc::new(p)], &[]);
        let types: Vec<&str> = plan
            .to_create
            .iter()
            .map(|s| s.address_type.as_str())
            .collect();
        assert_eq!(types, ["IPv4", "IPv6"]);
        assert_eq!(plan.to_create[1].endpoints[0].addresses, ["fd00::1"]);
    }
}
