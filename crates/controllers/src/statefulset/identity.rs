//! A StatefulSet pod's identity: its ordinal and name, labels, hostname and claims, and the pod
//! predicates the controller decides by (the pod half of kube's `stateful_set_utils.go`).

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimVolumeSource, Pod, Volume,
};
use rkcm_runtime::controller_ref::OwnerInfo;
use rkcm_runtime::pod_control::pod_from_template;

use crate::replicaset::pod_state;

/// Label with the pod's own name (`apps.StatefulSetPodNameLabel`).
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// Label with the pod's ordinal (`apps.PodIndexLabel`; `PodIndexLabel` is GA-on in 1.33).
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
/// Label with the name of the ControllerRevision the pod was made from
/// (`apps.StatefulSetRevisionLabel`).
pub const REVISION_LABEL: &str = "controller-revision-hash";

/// The parent name and ordinal encoded in `name` (`<parent>-<ordinal>`), as kube's
/// `getParentNameAndOrdinal` with the regex `(.*)-([0-9]+)$`: `("", -1)` when the name has no
/// ordinal, `(parent, -1)` when the ordinal overflows an int32.
#[doc(alias = "getParentNameAndOrdinal")]
pub fn parent_and_ordinal(name: &str) -> (&str, i64) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let split = name.len() - digits;
    if digits == 0 || split == 0 || !name[..split].ends_with('-') {
        return ("", -1);
    }
    let parent = &name[..split - 1];
    let ordinal = name[split..].parse::<i32>().map_or(-1, i64::from);
    (parent, ordinal)
}

/// The pod's ordinal, -1 when it has none (`getOrdinal`).
pub fn ordinal(pod: &Pod) -> i64 {
    parent_and_ordinal(name(pod)).1
}

/// Name of a pod.
pub fn name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

/// The first ordinal of the set (`spec.ordinals.start`, else 0).
#[doc(alias = "getStartOrdinal")]
pub fn start_ordinal(set: &StatefulSet) -> i64 {
    set.spec
        .as_ref()
        .and_then(|s| s.ordinals.as_ref())
        .and_then(|o| o.start)
        .map_or(0, i64::from)
}

/// `spec.replicas` (defaulted to 1 by the API server).
pub fn replicas(set: &StatefulSet) -> i64 {
    set.spec
        .as_ref()
        .and_then(|s| s.replicas)
        .map_or(1, i64::from)
}

/// The last ordinal of the set, inclusive (`getEndOrdinal`).
#[doc(alias = "getEndOrdinal")]
pub fn end_ordinal(set: &StatefulSet) -> i64 {
    start_ordinal(set) + replicas(set) - 1
}

/// Whether the pod's ordinal is one the set currently wants (`podInOrdinalRange`).
pub fn in_ordinal_range(pod: &Pod, set: &StatefulSet) -> bool {
    let o = ordinal(pod);
    o >= start_ordinal(set) && o <= end_ordinal(set)
}

fn set_name(set: &StatefulSet) -> &str {
    set.metadata.name.as_deref().unwrap_or_default()
}

fn set_namespace(set: &StatefulSet) -> &str {
    set.metadata.namespace.as_deref().unwrap_or_default()
}

/// `<set>-<ordinal>` (`getPodName`).
pub fn pod_name(set: &StatefulSet, ordinal: i64) -> String {
    format!("{}-{ordinal}", set_name(set))
}

/// `<template>-<set>-<ordinal>` (`getPersistentVolumeClaimName`).
pub fn claim_name(set: &StatefulSet, template: &PersistentVolumeClaim, ordinal: i64) -> String {
    format!(
        "{}-{}-{ordinal}",
        template.metadata.name.as_deref().unwrap_or_default(),
        set_name(set)
    )
}

/// Whether the pod's name says it belongs to the set (`isMemberOf`).
pub fn is_member_of(set: &StatefulSet, pod: &Pod) -> bool {
    parent_and_ordinal(name(pod)).0 == set_name(set)
}

/// Whether the pod has the name, namespace and pod-name label of a member of the set
/// (`identityMatches`).
pub fn identity_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let (parent, ordinal) = parent_and_ordinal(name(pod));
    ordinal >= 0
        && parent == set_name(set)
        && name(pod) == pod_name(set, ordinal)
        && pod.metadata.namespace.as_deref().unwrap_or_default() == set_namespace(set)
        && pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(POD_NAME_LABEL))
            .map(String::as_str)
            == Some(name(pod))
}

fn claim_templates(set: &StatefulSet) -> &[PersistentVolumeClaim] {
    set.spec
        .as_ref()
        .and_then(|s| s.volume_claim_templates.as_deref())
        .unwrap_or_default()
}

/// Whether the pod's volumes mount every claim of the set's templates under the template's name
/// (`storageMatches`).
pub fn storage_matches(set: &StatefulSet, pod: &Pod) -> bool {
    let ordinal = ordinal(pod);
    if ordinal < 0 {
        return false;
    }
    let volumes: BTreeMap<&str, &Volume> = pod
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_deref())
        .unwrap_or_default()
        .iter()
        .map(|v| (v.name.as_str(), v))
        .collect();
    claim_templates(set).iter().all(|template| {
        let wanted = claim_name(set, template, ordinal);
        volumes
            .get(template.metadata.name.as_deref().unwrap_or_default())
            .and_then(|v| v.persistent_volume_claim.as_ref())
            .is_some_and(|c| c.claim_name == wanted)
    })
}

/// The claims the pod needs, keyed by template name, each named for the pod and labelled with the
/// template's labels plus the set's `matchLabels` (`getPersistentVolumeClaims`).
pub fn claims_for(set: &StatefulSet, pod: &Pod) -> BTreeMap<String, PersistentVolumeClaim> {
    let ordinal = ordinal(pod);
    let match_labels = set
        .spec
        .as_ref()
        .and_then(|s| s.selector.match_labels.clone())
        .unwrap_or_default();
    claim_templates(set)
        .iter()
        .map(|template| {
            let mut claim = template.clone();
            claim.metadata.name = Some(claim_name(set, template, ordinal));
            claim.metadata.namespace = Some(set_namespace(set).to_string());
            let labels = claim.metadata.labels.get_or_insert_with(BTreeMap::new);
            labels.extend(match_labels.clone());
            (template.metadata.name.clone().unwrap_or_default(), claim)
        })
        .collect()
}

/// Points the pod's volumes named after claim templates at the pod's claims, keeping its other
/// volumes (`updateStorage`).
pub fn update_storage(set: &StatefulSet, pod: &mut Pod) {
    let claims = claims_for(set, pod);
    let spec = pod.spec.get_or_insert_with(Default::default);
    let current = spec.volumes.take().unwrap_or_default();
    let mut volumes: Vec<Volume> = claims
        .iter()
        .map(|(name, claim)| Volume {
            name: name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: claim.metadata.name.clone().unwrap_or_default(),
                read_only: Some(false),
            }),
            ..Default::default()
        })
        .collect();
    volumes.extend(
        current
            .into_iter()
            .filter(|v| !claims.contains_key(&v.name)),
    );
    spec.volumes = Some(volumes);
}

/// Sets the pod's name, namespace, pod-name and pod-index labels from its ordinal
/// (`updateIdentity`).
pub fn update_identity(set: &StatefulSet, pod: &mut Pod) {
    let ordinal = ordinal(pod);
    let name = pod_name(set, ordinal);
    pod.metadata.namespace = Some(set_namespace(set).to_string());
    let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(POD_NAME_LABEL.to_string(), name.clone());
    labels.insert(POD_INDEX_LABEL.to_string(), ordinal.to_string());
    pod.metadata.name = Some(name);
}

/// [`update_identity`] plus the fields fixed at creation: hostname and subdomain from
/// `serviceName` (`initIdentity`).
pub fn init_identity(set: &StatefulSet, pod: &mut Pod) {
    update_identity(set, pod);
    let service = set
        .spec
        .as_ref()
        .and_then(|s| s.service_name.clone())
        .filter(|s| !s.is_empty());
    let spec = pod.spec.get_or_insert_with(Default::default);
    spec.hostname = pod.metadata.name.clone();
    spec.subdomain = service;
}

/// A new pod of the set with the given ordinal, from the set's template (`newStatefulSetPod`).
pub fn new_pod(set: &StatefulSet, ordinal: i64) -> Pod {
    let template = set
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let owner = OwnerInfo::from_resource(set);
    let mut pod = pod_from_template(&template, set_name(set), Some(&owner.controller_ref()));
    pod.metadata.generate_name = None;
    pod.metadata.name = Some(pod_name(set, ordinal));
    init_identity(set, &mut pod);
    update_storage(set, &mut pod);
    pod
}

/// The revision label of the pod, `""` without one (`getPodRevision`).
pub fn pod_revision(pod: &Pod) -> &str {
    pod.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(REVISION_LABEL))
        .map_or("", String::as_str)
}

/// Sets the pod's revision label (`setPodRevision`).
pub fn set_pod_revision(pod: &mut Pod, revision: &str) {
    pod.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(REVISION_LABEL.to_string(), revision.to_string());
}

fn rolling_partition(set: &StatefulSet) -> Option<i64> {
    let strategy = set.spec.as_ref()?.update_strategy.as_ref()?;
    let rolling = strategy.rolling_update.as_ref()?;
    Some(rolling.partition.map_or(0, i64::from))
}

fn strategy_type(set: &StatefulSet) -> &str {
    set.spec
        .as_ref()
        .and_then(|s| s.update_strategy.as_ref())
        .and_then(|u| u.type_.as_deref())
        .unwrap_or("RollingUpdate")
}

/// Whether the set rolls pods (`RollingUpdate`, the default) rather than waiting for deletions.
pub fn is_rolling_update(set: &StatefulSet) -> bool {
    strategy_type(set) == "RollingUpdate"
}

/// Whether the set waits for pods to be deleted by hand to update them (`OnDelete`).
pub fn is_on_delete(set: &StatefulSet) -> bool {
    strategy_type(set) == "OnDelete"
}

/// The partition of a rolling update: pods with a lower ordinal index stay at the current
/// revision (0 without a `rollingUpdate`).
pub fn partition(set: &StatefulSet) -> i64 {
    rolling_partition(set).unwrap_or(0)
}

/// A new pod at `ordinal`, at the current revision if the rolling update has not reached it, else
/// at the update revision (`newVersionedStatefulSetPod`). Kube's condition reads
/// `RollingUpdate && (no rollingUpdate && ordinal < start + currentReplicas) || (rollingUpdate &&
/// ordinal < start + partition)`; Go's precedence makes the partition test apply whatever the
/// strategy type, which is kept.
pub fn new_versioned_pod(
    current_set: &StatefulSet,
    update_set: &StatefulSet,
    current_revision: &str,
    update_revision: &str,
    ordinal: i64,
) -> Pod {
    let start = start_ordinal(current_set);
    let current_replicas = current_set
        .status
        .as_ref()
        .and_then(|s| s.current_replicas)
        .map_or(0, i64::from);
    let rolling = rolling_partition(current_set);
    let use_current =
        (is_rolling_update(current_set) && rolling.is_none() && ordinal < start + current_replicas)
            || rolling.is_some_and(|p| ordinal < start + p);
    if use_current {
        let mut pod = new_pod(current_set, ordinal);
        set_pod_revision(&mut pod, current_revision);
        pod
    } else {
        let mut pod = new_pod(update_set, ordinal);
        set_pod_revision(&mut pod, update_revision);
        pod
    }
}

/// Whether the pod exists on the server: it has a phase (`isCreated`).
pub fn is_created(pod: &Pod) -> bool {
    !pod_state::phase(pod).is_empty()
}

/// Phase `Pending`.
pub fn is_pending(pod: &Pod) -> bool {
    pod_state::phase(pod) == "Pending"
}

/// Phase `Failed`.
pub fn is_failed(pod: &Pod) -> bool {
    pod_state::phase(pod) == "Failed"
}

/// Phase `Succeeded`.
pub fn is_succeeded(pod: &Pod) -> bool {
    pod_state::phase(pod) == "Succeeded"
}

/// Has a deletion timestamp (`isTerminating`).
pub fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// Phase `Running` and condition `Ready` (`isRunningAndReady`).
pub fn is_running_and_ready(pod: &Pod) -> bool {
    pod_state::phase(pod) == "Running" && pod_state::is_pod_ready(pod)
}

/// Ready for at least `min_ready_seconds` at `now` (`isRunningAndAvailable`, `IsPodAvailable`).
pub fn is_running_and_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    pod_state::is_pod_available(pod, min_ready_seconds, now)
}

/// Running, ready and not being deleted (`isHealthy`).
pub fn is_healthy(pod: &Pod) -> bool {
    is_running_and_ready(pod) && !is_terminating(pod)
}

/// Not available, or being deleted (`isUnavailable`).
pub fn is_unavailable(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    !is_running_and_available(pod, min_ready_seconds, now) || is_terminating(pod)
}

/// Sorts pods by descending ordinal (pods without one last).
pub fn sort_descending(pods: &mut [Arc<Pod>]) {
    pods.sort_by_key(|p| std::cmp::Reverse(ordinal(p)));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statefulset::fixtures::{new_stateful_set, pod_of};

    #[test]
    fn parent_and_ordinal_come_from_the_name() {
        // TestGetParentNameAndOrdinal, TestIsMemberOf.
        assert_eq!(parent_and_ordinal("foo-1"), ("foo", 1));
        assert_eq!(parent_and_ordinal("foo-bar-12"), ("foo-bar", 12));
        assert_eq!(parent_and_ordinal("-3"), ("", 3));
        assert_eq!(parent_and_ordinal("foo"), ("", -1));
        assert_eq!(parent_and_ordinal("foo1"), ("", -1));
        assert_eq!(parent_and_ordinal("foo-"), ("", -1));
        assert_eq!(parent_and_ordinal("foo-99999999999"), ("foo", -1));
        let set = new_stateful_set("foo", 3);
        let other = new_stateful_set("foo2", 3);
        let pod = pod_of(&set, 1);
        assert!(is_member_of(&set, &pod));
        assert!(!is_member_of(&other, &pod));
    }

    #[test]
    fn identity_needs_name_namespace_and_pod_name_label() {
        // TestIdentityMatches and TestUpdateIdentity.
        let set = new_stateful_set("foo", 3);
        let pod = pod_of(&set, 1);
        assert!(identity_matches(&set, &pod));
        let mut renamed = pod.clone();
        renamed.metadata.name = Some("bar-1".into());
        assert!(!identity_matches(&set, &renamed));
        let mut moved = pod.clone();
        moved.metadata.namespace = Some("other".into());
        assert!(!identity_matches(&set, &moved));
        update_identity(&set, &mut moved);
        assert!(identity_matches(&set, &moved));
        let mut unlabelled = pod.clone();
        unlabelled
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .remove(POD_NAME_LABEL);
        assert!(!identity_matches(&set, &unlabelled));
        update_identity(&set, &mut unlabelled);
        assert!(identity_matches(&set, &unlabelled));
        assert_eq!(
            unlabelled.metadata.labels.as_ref().unwrap()[POD_INDEX_LABEL],
            "1"
        );
    }

    #[test]
    fn storage_needs_every_claim_mounted_under_its_template_name() {
        // TestStorageMatches and TestUpdateStorage.
        let set = new_stateful_set("foo", 3);
        let pod = pod_of(&set, 1);
        assert!(storage_matches(&set, &pod));
        let volumes = pod.spec.as_ref().unwrap().volumes.as_ref().unwrap();
        assert_eq!(
            volumes[0]
                .persistent_volume_claim
                .as_ref()
                .unwrap()
                .claim_name,
            "datadir-foo-1"
        );
        let mut wrong = pod.clone();
        wrong.spec.as_mut().unwrap().volumes.as_mut().unwrap()[0]
            .persistent_volume_claim
            .as_mut()
            .unwrap()
            .claim_name = "other".into();
        assert!(!storage_matches(&set, &wrong));
        let mut extra = wrong.clone();
        extra
            .spec
            .as_mut()
            .unwrap()
            .volumes
            .as_mut()
            .unwrap()
            .push(Volume {
                name: "scratch".into(),
                ..Default::default()
            });
        update_storage(&set, &mut extra);
        assert!(storage_matches(&set, &extra));
        let names: Vec<_> = extra
            .spec
            .as_ref()
            .unwrap()
            .volumes
            .as_ref()
            .unwrap()
            .iter()
            .map(|v| v.name.clone())
            .collect();
        assert_eq!(names, ["datadir", "scratch"], "other volumes are kept");
        let mut none = pod.clone();
        none.spec.as_mut().unwrap().volumes = None;
        assert!(!storage_matches(&set, &none));
    }

    #[test]
    fn new_pods_carry_identity_owner_and_claims() {
        // TestNewPodControllerRef, TestCreatesPodsWithHostnameAndSubdomain.
        let set = new_stateful_set("foo", 3);
        let pod = new_pod(&set, 2);
        assert_eq!(pod.metadata.name.as_deref(), Some("foo-2"));
        assert_eq!(pod.metadata.generate_name, None);
        let owner = rkcm_runtime::controller_ref::controller_of(&pod.metadata).unwrap();
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("StatefulSet", "foo-uid")
        );
        assert_eq!(
            pod.spec.as_ref().unwrap().hostname.as_deref(),
            Some("foo-2")
        );
        assert_eq!(
            pod.spec.as_ref().unwrap().subdomain.as_deref(),
            Some("governingsvc")
        );
        assert_eq!(pod.metadata.labels.as_ref().unwrap()["foo"], "bar");
        let claims = claims_for(&set, &pod);
        let claim = &claims["datadir"];
        assert_eq!(claim.metadata.name.as_deref(), Some("datadir-foo-2"));
        assert_eq!(claim.metadata.labels.as_ref().unwrap()["foo"], "bar");
    }

    #[test]
    fn versioned_pods_below_the_partition_stay_at_the_current_revision() {
        let mut set = new_stateful_set("foo", 5);
        set.spec
            .as_mut()
            .unwrap()
            .update_strategy
            .as_mut()
            .unwrap()
            .rolling_update
            .as_mut()
            .unwrap()
            .partition = Some(3);
        for (ordinal, want) in [(0, "current"), (2, "current"), (3, "update"), (4, "update")] {
            let pod = new_versioned_pod(&set, &set, "current", "update", ordinal);
            assert_eq!(pod_revision(&pod), want, "ordinal {ordinal}");
        }
        // No rollingUpdate: the current revision up to status.currentReplicas.
        set.spec
            .as_mut()
            .unwrap()
            .update_strategy
            .as_mut()
            .unwrap()
            .rolling_update = None;
        set.status = Some(k8s_openapi::api::apps::v1::StatefulSetStatus {
            current_replicas: Some(2),
            ..Default::default()
        });
        assert_eq!(
            pod_revision(&new_versioned_pod(&set, &set, "c", "u", 1)),
            "c"
        );
        assert_eq!(
            pod_revision(&new_versioned_pod(&set, &set, "c", "u", 2)),
            "u"
        );
    }

    #[test]
    fn pods_sort_by_descending_ordinal() {
        // TestAscendingOrdinal, reversed.
        let set = new_stateful_set("foo", 3);
        let mut pods: Vec<Arc<Pod>> = [2, 10, 0, 7]
            .iter()
            .map(|&i| Arc::new(pod_of(&set, i)))
            .collect();
        sort_descending(&mut pods);
        let got: Vec<_> = pods.iter().map(|p| ordinal(p)).collect();
        assert_eq!(got, [10, 7, 2, 0]);
    }
}
