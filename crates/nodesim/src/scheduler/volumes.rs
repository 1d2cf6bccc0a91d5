//! The scheduler's VolumeBinding plugin, for the simulated scheduler: which claims a pod waits
//! for, which nodes its volumes allow, and what to do for claims that wait for their first
//! consumer (`pkg/scheduler/framework/plugins/volumebinding`).
//!
//! A pod whose claim is missing, being deleted, or unbound with an Immediate class is
//! unschedulable (PreFilter). A bound claim's volume must admit the node through its node
//! affinity. A `WaitForFirstConsumer` claim that is not yet bound can use a node where an
//! Available volume matches it there, or any node when its class provisions dynamically; once a
//! node is chosen, such a volume is bound to the claim (its `claimRef` set, as kube's scheduler
//! does) or the claim gets `volume.kubernetes.io/selected-node`, and the pod is bound only when
//! every claim is Bound.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use rkcm_runtime::storage::*;

use super::predicates::Reason;

/// The message of a pod with an unbound claim whose class binds immediately.
pub const UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// The state of a pod's claims.
#[derive(Debug, Default)]
pub struct PodVolumes {
    /// Volumes of the fully bound claims.
    pub bound: Vec<Arc<PersistentVolume>>,
    /// A bound claim names a volume that does not exist.
    pub missing_volume: bool,
    /// Claims waiting for their first consumer, not yet fully bound.
    pub delayed: Vec<Arc<PersistentVolumeClaim>>,
}

/// Whether the claim went through binding (`isPVCFullyBound`).
pub fn is_fully_bound(claim: &PersistentVolumeClaim) -> bool {
    !claim_volume_name(claim).is_empty()
        && has_annotation(claim.metadata.annotations.as_ref(), ANN_BIND_COMPLETED)
}

/// What the pod's claims need (PreFilter): `Err` with kube's message when the pod cannot be
/// scheduled anywhere yet.
pub fn pod_volumes(
    pod: &Pod,
    claim: impl Fn(&str) -> Option<Arc<PersistentVolumeClaim>>,
    volume: impl Fn(&str) -> Option<Arc<PersistentVolume>>,
    class: impl Fn(&str) -> Option<Arc<StorageClass>>,
) -> Result<PodVolumes, String> {
    let mut out = PodVolumes::default();
    let mut unbound_immediate = false;
    for name in pod_claim_names(pod) {
        let Some(c) = claim(&name) else {
            return Err(format!("persistentvolumeclaim {name:?} not found"));
        };
        if c.metadata.deletion_timestamp.is_some() {
            return Err(format!("persistentvolumeclaim {name:?} is being deleted"));
        }
        if is_fully_bound(&c) {
            match volume(claim_volume_name(&c)) {
                Some(v) => out.bound.push(v),
                None => out.missing_volume = true,
            }
            continue;
        }
        let class_name = claim_class(&c);
        let delayed = !class_name.is_empty()
            && class(class_name).is_some_and(|k| is_wait_for_first_consumer(&k));
        if delayed {
            out.delayed.push(c);
        } else {
            unbound_immediate = true;
        }
    }
    if unbound_immediate {
        return Err(UNBOUND_IMMEDIATE.into());
    }
    Ok(out)
}

/// What a delayed claim gets on a node.
#[derive(Clone, Debug)]
pub enum Provision {
    /// Bind this Available volume (or finish a pre-binding).
    Volume(Arc<PersistentVolume>),
    /// Ask the class's provisioner (selected-node annotation).
    Dynamic,
}

/// Whether the pod's volumes allow `node` (Filter), and for each delayed claim what it would get
/// there. `volumes` are all the cached volumes, `class` looks classes up.
pub fn node_fits(
    pod_volumes: &PodVolumes,
    node: &Node,
    volumes: &[Arc<PersistentVolume>],
    class: impl Fn(&str) -> Option<Arc<StorageClass>>,
) -> Result<Vec<Provision>, Reason> {
    if pod_volumes.missing_volume {
        return Err(Reason::VolumeNotExist);
    }
    if !pod_volumes.bound.iter().all(|v| volume_fits_node(v, node)) {
        return Err(Reason::VolumeNodeAffinityConflict);
    }
    let node_name = node.metadata.name.as_deref().unwrap_or_default();
    let mut chosen: Vec<String> = Vec::new();
    let mut plan = Vec::new();
    for claim in &pod_volumes.delayed {
        let selected = claim
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANN_SELECTED_NODE));
        if selected.is_some_and(|s| s != node_name) {
            return Err(Reason::VolumeBindConflict);
        }
        let excluded: Vec<&str> = chosen.iter().map(String::as_str).collect();
        let found = find_matching_volume(claim, volumes, Some(node), &excluded, true)
            .map_err(|_| Reason::VolumeBindConflict)?;
        if let Some(v) = found {
            chosen.push(v.metadata.name.clone().unwrap_or_default());
            plan.push(Provision::Volume(v));
            continue;
        }
        if !claim_volume_name(claim).is_empty() {
            // Pre-bound to a volume that does not fit here.
            return Err(Reason::VolumeBindConflict);
        }
        let provisionable =
            class(claim_class(claim)).is_some_and(|k| k.provisioner != NOT_SUPPORTED_PROVISIONER);
        if !provisionable {
            return Err(Reason::VolumeBindConflict);
        }
        plan.push(Provision::Dynamic);
    }
    Ok(plan)
}

/// The volume bound to the claim as kube's scheduler writes it (`GetBindVolumeToClaim`), or
/// `None` when it already is.
pub fn volume_bound_to(
    volume: &PersistentVolume,
    claim: &PersistentVolumeClaim,
) -> Option<PersistentVolume> {
    let current = claim_ref(volume);
    let by_controller = !is_volume_bound_to_claim(volume, claim);
    let same = current.is_some_and(|r| {
        r.name == claim.metadata.name
            && r.namespace == claim.metadata.namespace
            && r.uid == claim.metadata.uid
    });
    let mut v = volume.clone();
    let mut dirty = false;
    if !same {
        v.spec.get_or_insert_with(Default::default).claim_ref =
            Some(k8s_openapi::api::core::v1::ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("PersistentVolumeClaim".into()),
                namespace: claim.metadata.namespace.clone(),
                name: claim.metadata.name.clone(),
                uid: claim.metadata.uid.clone(),
                resource_version: claim.metadata.resource_version.clone(),
                ..Default::default()
            });
        dirty = true;
    }
    if by_controller && !has_annotation(v.metadata.annotations.as_ref(), ANN_BOUND_BY_CONTROLLER) {
        v.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
        dirty = true;
    }
    dirty.then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PersistentVolumeClaimSpec,
        PersistentVolumeClaimVolumeSource, PersistentVolumeSpec, PersistentVolumeStatus, PodSpec,
        Volume, VolumeNodeAffinity, VolumeResourceRequirements,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use std::collections::BTreeMap;

    fn pod(claims: &[&str]) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some("p".into());
        p.metadata.namespace = Some("ns".into());
        p.spec = Some(PodSpec {
            volumes: Some(
                claims
                    .iter()
                    .map(|c| Volume {
                        name: format!("v-{c}"),
                        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                            claim_name: c.to_string(),
                            read_only: None,
                        }),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        });
        p
    }

    fn claim(name: &str, class: &str, bound_to: Option<&str>) -> Arc<PersistentVolumeClaim> {
        let mut c = PersistentVolumeClaim::default();
        c.metadata.name = Some(name.into());
        c.metadata.namespace = Some("ns".into());
        c.metadata.uid = Some(format!("uid-{name}"));
        c.spec = Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            storage_class_name: Some(class.into()),
            volume_name: bound_to.map(String::from),
            resources: Some(VolumeResourceRequirements {
                requests: Some([("storage".to_string(), Quantity("1Gi".into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        });
        if bound_to.is_some() {
            c.metadata.annotations =
                Some([(ANN_BIND_COMPLETED.to_string(), "yes".to_string())].into());
        }
        Arc::new(c)
    }

    fn class(name: &str, mode: &str, provisioner: &str) -> Arc<StorageClass> {
        let mut c = StorageClass::default();
        c.metadata.name = Some(name.into());
        c.provisioner = provisioner.into();
        c.volume_binding_mode = Some(mode.into());
        Arc::new(c)
    }

    fn volume(name: &str, class: &str, node: Option<&str>) -> Arc<PersistentVolume> {
        let mut v = PersistentVolume::default();
        v.metadata.name = Some(name.into());
        v.spec = Some(PersistentVolumeSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            capacity: Some([("storage".to_string(), Quantity("1Gi".into()))].into()),
            storage_class_name: Some(class.into()),
            node_affinity: node.map(|n| VolumeNodeAffinity {
                required: Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_expressions: Some(vec![NodeSelectorRequirement {
                            key: "kubernetes.io/hostname".into(),
                            operator: "In".into(),
                            values: Some(vec![n.into()]),
                        }]),
                        match_fields: None,
                    }],
                }),
            }),
            ..Default::default()
        });
        v.status = Some(PersistentVolumeStatus {
            phase: Some("Available".into()),
            ..Default::default()
        });
        Arc::new(v)
    }

    fn node(name: &str) -> Node {
        let mut n = Node::default();
        n.metadata.name = Some(name.into());
        n.metadata.labels = Some(BTreeMap::from([(
            "kubernetes.io/hostname".to_string(),
            name.to_string(),
        )]));
        n
    }

    struct World {
        claims: Vec<Arc<PersistentVolumeClaim>>,
        volumes: Vec<Arc<PersistentVolume>>,
        classes: Vec<Arc<StorageClass>>,
    }

    impl World {
        fn check(&self, pod: &Pod) -> Result<PodVolumes, String> {
            pod_volumes(
                pod,
                |n| {
                    self.claims
                        .iter()
                        .find(|c| c.metadata.name.as_deref() == Some(n))
                        .cloned()
                },
                |n| {
                    self.volumes
                        .iter()
                        .find(|v| v.metadata.name.as_deref() == Some(n))
                        .cloned()
                },
                |n| {
                    self.classes
                        .iter()
                        .find(|c| c.metadata.name.as_deref() == Some(n))
                        .cloned()
                },
            )
        }

        fn fits(&self, pv: &PodVolumes, node_name: &str) -> Result<Vec<Provision>, Reason> {
            node_fits(pv, &node(node_name), &self.volumes, |n| {
                self.classes
                    .iter()
                    .find(|c| c.metadata.name.as_deref() == Some(n))
                    .cloned()
            })
        }
    }

    fn world() -> World {
        World {
            claims: vec![
                claim("immediate", "fast", None),
                claim("wait", "standard", None),
                claim("local", "local", None),
                claim("bound", "standard", Some("pv-node2")),
                claim("dangling", "standard", Some("gone")),
            ],
            volumes: vec![
                volume("pv-node2", "standard", Some("node2")),
                volume("local-node1", "local", Some("node1")),
            ],
            classes: vec![
                class("fast", "Immediate", "example.com/csi"),
                class("standard", "WaitForFirstConsumer", "rkcm.io/simulated"),
                class("local", "WaitForFirstConsumer", NOT_SUPPORTED_PROVISIONER),
            ],
        }
    }

    // volume_binding_test.go PreFilter cases.
    #[test]
    fn missing_deleted_and_unbound_immediate_claims_block_the_pod() {
        let w = world();
        assert_eq!(
            w.check(&pod(&["nope"])).unwrap_err(),
            "persistentvolumeclaim \"nope\" not found"
        );
        assert_eq!(
            w.check(&pod(&["immediate"])).unwrap_err(),
            UNBOUND_IMMEDIATE
        );
        let mut deleting = w.claims[1].as_ref().clone();
        deleting.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
        );
        let w2 = World {
            claims: vec![Arc::new(deleting)],
            ..world()
        };
        assert_eq!(
            w2.check(&pod(&["wait"])).unwrap_err(),
            "persistentvolumeclaim \"wait\" is being deleted"
        );
    }

    // volume_binding_test.go Filter cases: bound volumes pin the node, delayed claims provision
    // or take a local volume where one is.
    #[test]
    fn bound_volumes_pin_the_node_and_delayed_claims_find_volumes() {
        let w = world();
        let pv = w.check(&pod(&["bound"])).unwrap();
        assert_eq!(
            w.fits(&pv, "node1").unwrap_err(),
            Reason::VolumeNodeAffinityConflict
        );
        assert!(w.fits(&pv, "node2").is_ok());
        let pv = w.check(&pod(&["dangling"])).unwrap();
        assert_eq!(w.fits(&pv, "node1").unwrap_err(), Reason::VolumeNotExist);
        let pv = w.check(&pod(&["wait"])).unwrap();
        assert!(matches!(
            w.fits(&pv, "node1").unwrap()[..],
            [Provision::Dynamic]
        ));
        let pv = w.check(&pod(&["local"])).unwrap();
        assert!(matches!(
            w.fits(&pv, "node1").unwrap()[..],
            [Provision::Volume(_)]
        ));
        assert_eq!(
            w.fits(&pv, "node2").unwrap_err(),
            Reason::VolumeBindConflict
        );
        // A claim with a selected node only fits that node.
        let mut selected = w.claims[1].as_ref().clone();
        selected.metadata.annotations =
            Some([(ANN_SELECTED_NODE.to_string(), "node3".to_string())].into());
        let w3 = World {
            claims: vec![Arc::new(selected)],
            ..world()
        };
        let pv = w3.check(&pod(&["wait"])).unwrap();
        assert_eq!(
            w3.fits(&pv, "node1").unwrap_err(),
            Reason::VolumeBindConflict
        );
        assert!(w3.fits(&pv, "node3").is_ok());
        assert_eq!(
            Reason::VolumeNodeAffinityConflict.to_string(),
            "node(s) had volume node affinity conflict"
        );
    }

    #[test]
    fn binding_a_volume_sets_the_claim_ref_and_the_controller_annotation() {
        let c = claim("wait", "standard", None);
        let v = volume("local-node1", "local", Some("node1"));
        let bound = volume_bound_to(&v, &c).expect("changed");
        assert_eq!(claim_ref(&bound).unwrap().uid.as_deref(), Some("uid-wait"));
        assert!(has_annotation(
            bound.metadata.annotations.as_ref(),
            ANN_BOUND_BY_CONTROLLER
        ));
        assert!(volume_bound_to(&bound, &c).is_none());
    }
}
