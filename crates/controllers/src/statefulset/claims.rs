//! `persistentVolumeClaimRetentionPolicy`: which owner references a pod's claims carry so that
//! the garbage collector deletes them with the set (`whenDeleted: Delete`) or with a scaled-down
//! pod (`whenScaled: Delete`). Pure functions of kube's `stateful_set_utils.go`
//! (`isClaimOwnerUpToDate`, `updateClaimOwnerRefForSetAndPod`, `hasStaleOwnerRef`, …); the
//! feature (`StatefulSetAutoDeletePVC`) is GA and always on in 1.33.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::identity::in_ordinal_range;

const RETAIN: &str = "Retain";
const DELETE: &str = "Delete";

/// The set's policy as `(whenDeleted, whenScaled)`, `Retain` for what is unset
/// (`getPersistentVolumeClaimRetentionPolicy`).
pub fn retention_policy(set: &StatefulSet) -> (&str, &str) {
    let policy = set
        .spec
        .as_ref()
        .and_then(|s| s.persistent_volume_claim_retention_policy.as_ref());
    let when_deleted = policy
        .and_then(|p| p.when_deleted.as_deref())
        .unwrap_or(RETAIN);
    let when_scaled = policy
        .and_then(|p| p.when_scaled.as_deref())
        .unwrap_or(RETAIN);
    (when_deleted, when_scaled)
}

fn refs(meta: &ObjectMeta) -> &[OwnerReference] {
    meta.owner_references.as_deref().unwrap_or_default()
}

fn uid(meta: &ObjectMeta) -> &str {
    meta.uid.as_deref().unwrap_or_default()
}

fn name(meta: &ObjectMeta) -> &str {
    meta.name.as_deref().unwrap_or_default()
}

/// `(apiVersion, kind)` of an owner.
type Gvk = (&'static str, &'static str);
const SET_KIND: Gvk = ("apps/v1", "StatefulSet");
const POD_KIND: Gvk = ("v1", "Pod");

fn matches_ref(r: &OwnerReference, owner: &ObjectMeta, gvk: Gvk) -> bool {
    r.api_version == gvk.0 && r.kind == gvk.1 && r.name == name(owner)
}

/// Whether the claim has a reference to an object named and typed as `owner` but with another
/// UID: left by a deleted predecessor (`hasStaleOwnerRef`).
fn has_stale_owner_ref(claim: &PersistentVolumeClaim, owner: &ObjectMeta, gvk: Gvk) -> bool {
    refs(&claim.metadata)
        .iter()
        .find(|r| matches_ref(r, owner, gvk))
        .is_some_and(|r| r.uid != uid(owner))
}

/// Whether the claim has a stale reference to the pod (`PodClaimIsStale` for one claim).
pub fn claim_is_stale_for_pod(claim: &PersistentVolumeClaim, pod: &Pod) -> bool {
    has_stale_owner_ref(claim, &pod.metadata, POD_KIND)
}

fn has_owner_ref(claim: &PersistentVolumeClaim, owner: &ObjectMeta) -> bool {
    refs(&claim.metadata).iter().any(|r| r.uid == uid(owner))
}

/// Whether some other controller owns the claim, or our refs have stale UIDs, when the policy
/// deletes anything (`hasUnexpectedController`).
fn has_unexpected_controller(claim: &PersistentVolumeClaim, set: &StatefulSet, pod: &Pod) -> bool {
    if retention_policy(set) == (RETAIN, RETAIN) {
        return false;
    }
    for r in refs(&claim.metadata) {
        if matches_ref(r, &set.metadata, SET_KIND) {
            if r.uid != uid(&set.metadata) {
                return true;
            }
            continue;
        }
        if matches_ref(r, &pod.metadata, POD_KIND) {
            if r.uid != uid(&pod.metadata) {
                return true;
            }
            continue;
        }
        if r.controller == Some(true) {
            return true;
        }
    }
    false
}

fn has_non_controller_owner(claim: &PersistentVolumeClaim, set: &StatefulSet, pod: &Pod) -> bool {
    refs(&claim.metadata).iter().any(|r| {
        (r.uid == uid(&set.metadata) || r.uid == uid(&pod.metadata)) && r.controller != Some(true)
    })
}

/// Whether the claim's owner references agree with the policy (`isClaimOwnerUpToDate`):
/// Retain/Retain none; whenDeleted Delete the set; whenScaled Delete the pod once scaled down;
/// both the set while in range and the pod once scaled down. Stale or foreign controllers are
/// left alone (reported up to date).
pub fn claim_owner_up_to_date(claim: &PersistentVolumeClaim, set: &StatefulSet, pod: &Pod) -> bool {
    if has_stale_owner_ref(claim, &set.metadata, SET_KIND)
        || has_stale_owner_ref(claim, &pod.metadata, POD_KIND)
    {
        return true;
    }
    if has_unexpected_controller(claim, set, pod) {
        return !(has_owner_ref(claim, &set.metadata) || has_owner_ref(claim, &pod.metadata));
    }
    if has_non_controller_owner(claim, set, pod) {
        return false;
    }
    let has_set = has_owner_ref(claim, &set.metadata);
    let has_pod = has_owner_ref(claim, &pod.metadata);
    let scaled_down = !in_ordinal_range(pod, set);
    match retention_policy(set) {
        (RETAIN, DELETE) => !has_set && scaled_down == has_pod,
        (DELETE, RETAIN) => has_set && !has_pod,
        (DELETE, DELETE) => scaled_down != has_set && scaled_down == has_pod,
        // Retain/Retain, and unknown policies treated as Retain.
        _ => !has_set && !has_pod,
    }
}

fn controller_ref(owner: &ObjectMeta, gvk: Gvk) -> OwnerReference {
    OwnerReference {
        api_version: gvk.0.into(),
        kind: gvk.1.into(),
        name: name(owner).into(),
        uid: uid(owner).into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn add_controller_ref(refs: &mut Vec<OwnerReference>, owner: &ObjectMeta, gvk: Gvk) {
    if !refs.iter().any(|r| r.uid == uid(owner)) {
        refs.push(controller_ref(owner, gvk));
    }
}

/// Rewrites the claim's references to the set and the pod as the policy wants
/// (`updateClaimOwnerRefForSetAndPod`).
pub fn update_claim_owner_refs(claim: &mut PersistentVolumeClaim, set: &StatefulSet, pod: &Pod) {
    let unexpected = has_unexpected_controller(claim, set, pod);
    let mut refs: Vec<OwnerReference> = refs(&claim.metadata)
        .iter()
        .filter(|r| {
            !(matches_ref(r, &set.metadata, SET_KIND) || matches_ref(r, &pod.metadata, POD_KIND))
        })
        .cloned()
        .collect();
    if !unexpected {
        let scaled_down = !in_ordinal_range(pod, set);
        match retention_policy(set) {
            (DELETE, RETAIN) => add_controller_ref(&mut refs, &set.metadata, SET_KIND),
            (RETAIN, DELETE) if scaled_down => {
                add_controller_ref(&mut refs, &pod.metadata, POD_KIND)
            }
            (DELETE, DELETE) if scaled_down => {
                add_controller_ref(&mut refs, &pod.metadata, POD_KIND)
            }
            (DELETE, DELETE) => add_controller_ref(&mut refs, &set.metadata, SET_KIND),
            _ => {}
        }
    }
    claim.metadata.owner_references = Some(refs);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statefulset::fixtures::{new_stateful_set, pod_of, set_policy};
    use crate::statefulset::identity::claims_for;

    fn claim_of(set: &StatefulSet, pod: &Pod) -> PersistentVolumeClaim {
        claims_for(set, pod).into_values().next().unwrap()
    }

    #[test]
    fn owner_refs_follow_the_retention_policy() {
        // TestClaimOwnerMatchesSetAndPod and TestUpdateClaimOwnerRefForSetAndPod: for each policy,
        // a claim of a pod in range and of a scaled-down pod gets exactly the expected refs, and
        // is then up to date.
        for (deleted, scaled, in_range_refs, scaled_down_refs) in [
            ("Retain", "Retain", (false, false), (false, false)),
            ("Delete", "Retain", (true, false), (true, false)),
            ("Retain", "Delete", (false, false), (false, true)),
            ("Delete", "Delete", (true, false), (false, true)),
        ] {
            let mut set = new_stateful_set("foo", 3);
            set_policy(&mut set, deleted, scaled);
            for (ordinal, (want_set, want_pod)) in [(1, in_range_refs), (5, scaled_down_refs)] {
                let pod = pod_of(&set, ordinal);
                let mut claim = claim_of(&set, &pod);
                let case = format!("{deleted}/{scaled} ordinal {ordinal}");
                let needs_refs = want_set || want_pod;
                assert_eq!(
                    claim_owner_up_to_date(&claim, &set, &pod),
                    !needs_refs,
                    "{case}"
                );
                update_claim_owner_refs(&mut claim, &set, &pod);
                assert_eq!(has_owner_ref(&claim, &set.metadata), want_set, "{case}");
                assert_eq!(has_owner_ref(&claim, &pod.metadata), want_pod, "{case}");
                assert!(
                    claim_owner_up_to_date(&claim, &set, &pod),
                    "{case} after update"
                );
                assert!(refs(&claim.metadata)
                    .iter()
                    .all(|r| r.controller == Some(true)));
            }
        }
    }

    #[test]
    fn stale_and_foreign_owners_are_left_alone() {
        let mut set = new_stateful_set("foo", 3);
        set_policy(&mut set, "Delete", "Delete");
        let pod = pod_of(&set, 1);
        let mut claim = claim_of(&set, &pod);
        // A ref to a former pod of the same name: stale, not touched.
        let mut former = pod.clone();
        former.metadata.uid = Some("old-uid".into());
        claim.metadata.owner_references = Some(vec![controller_ref(&former.metadata, POD_KIND)]);
        assert!(claim_is_stale_for_pod(&claim, &pod));
        assert!(claim_owner_up_to_date(&claim, &set, &pod));
        // Another controller: up to date while we hold no ref, ours are scrubbed otherwise.
        let foreign = OwnerReference {
            api_version: "v1".into(),
            kind: "Other".into(),
            name: "x".into(),
            uid: "x".into(),
            controller: Some(true),
            ..Default::default()
        };
        claim.metadata.owner_references = Some(vec![foreign.clone()]);
        assert!(claim_owner_up_to_date(&claim, &set, &pod));
        claim.metadata.owner_references = Some(vec![
            foreign.clone(),
            controller_ref(&set.metadata, SET_KIND),
        ]);
        assert!(!claim_owner_up_to_date(&claim, &set, &pod));
        update_claim_owner_refs(&mut claim, &set, &pod);
        assert_eq!(claim.metadata.owner_references, Some(vec![foreign]));
        // A non-controller ref of ours needs an update.
        let mut weak = controller_ref(&set.metadata, SET_KIND);
        weak.controller = None;
        claim.metadata.owner_references = Some(vec![weak]);
        assert!(!claim_owner_up_to_date(&claim, &set, &pod));
    }
}
