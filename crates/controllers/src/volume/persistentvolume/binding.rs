//! The objects the binder writes when it binds: `bindVolumeToClaim`, `bindClaimToVolume` and
//! `updateClaimStatus` of `pv_controller.go` (`GetBindVolumeToClaim` in `pv_helpers.go`), as pure
//! functions returning the changed object, or `None` when nothing changes.

use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimStatus,
};
use rkcm_apimachinery::quantity::Quantity;
use rkcm_runtime::storage::*;

fn set_annotation(
    meta: &mut k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    key: &str,
) {
    meta.annotations
        .get_or_insert_with(Default::default)
        .insert(key.to_string(), "yes".to_string());
}

/// The reference a volume's `claimRef` holds (`reference.GetReference`).
pub fn claim_reference(claim: &PersistentVolumeClaim) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("PersistentVolumeClaim".into()),
        namespace: claim.metadata.namespace.clone(),
        name: claim.metadata.name.clone(),
        uid: claim.metadata.uid.clone(),
        resource_version: claim.metadata.resource_version.clone(),
        ..Default::default()
    }
}

/// The volume bound to the claim: `claimRef` set to it (with its UID) and, when the volume was
/// not pre-bound to it, `pv.kubernetes.io/bound-by-controller`.
pub fn bound_volume(
    volume: &PersistentVolume,
    claim: &PersistentVolumeClaim,
) -> Option<PersistentVolume> {
    let set_by_controller = !is_volume_bound_to_claim(volume, claim);
    let mut v = volume.clone();
    let mut dirty = false;
    let current = claim_ref(volume);
    let same = current.is_some_and(|r| {
        r.name == claim.metadata.name
            && r.namespace == claim.metadata.namespace
            && r.uid == claim.metadata.uid
    });
    if !same {
        v.spec.get_or_insert_with(Default::default).claim_ref = Some(claim_reference(claim));
        dirty = true;
    }
    if set_by_controller
        && !has_annotation(v.metadata.annotations.as_ref(), ANN_BOUND_BY_CONTROLLER)
    {
        set_annotation(&mut v.metadata, ANN_BOUND_BY_CONTROLLER);
        dirty = true;
    }
    dirty.then_some(v)
}

/// The claim bound to the volume: `volumeName`, `pv.kubernetes.io/bind-completed` and, when it
/// did not name the volume itself, `pv.kubernetes.io/bound-by-controller`.
pub fn bound_claim(
    claim: &PersistentVolumeClaim,
    volume: &PersistentVolume,
) -> Option<PersistentVolumeClaim> {
    let volume_name = volume.metadata.name.clone().unwrap_or_default();
    let set_by_controller = claim_volume_name(claim) != volume_name;
    let mut c = claim.clone();
    let mut dirty = false;
    if set_by_controller {
        c.spec.get_or_insert_with(Default::default).volume_name = Some(volume_name);
        dirty = true;
        if !has_annotation(c.metadata.annotations.as_ref(), ANN_BOUND_BY_CONTROLLER) {
            set_annotation(&mut c.metadata, ANN_BOUND_BY_CONTROLLER);
        }
    }
    if !has_annotation(c.metadata.annotations.as_ref(), ANN_BIND_COMPLETED) {
        set_annotation(&mut c.metadata, ANN_BIND_COMPLETED);
        dirty = true;
    }
    dirty.then_some(c)
}

/// The claim's status in `phase`, with the volume's access modes and capacity when bound to one
/// (cleared without), or `None` when it already is so (`updateClaimStatus`).
pub fn claim_status(
    claim: &PersistentVolumeClaim,
    phase: &str,
    volume: Option<&PersistentVolume>,
) -> Option<PersistentVolumeClaimStatus> {
    let mut status = claim.status.clone().unwrap_or_default();
    let mut dirty = false;
    if status.phase.as_deref() != Some(phase) {
        status.phase = Some(phase.to_string());
        dirty = true;
    }
    match volume {
        None => {
            if status.access_modes.take().is_some() {
                dirty = true;
            }
            if status.capacity.take().is_some() {
                dirty = true;
            }
        }
        Some(volume) => {
            let modes = volume.spec.as_ref().and_then(|s| s.access_modes.clone());
            if status.access_modes != modes {
                status.access_modes = modes;
                dirty = true;
            }
            let claim_capacity = status
                .capacity
                .as_ref()
                .and_then(|c| c.get("storage"))
                .and_then(|q| Quantity::parse(&q.0).ok());
            if claim_capacity != Some(volume_capacity(volume)) {
                status.capacity = volume.spec.as_ref().and_then(|s| s.capacity.clone());
                dirty = true;
            }
        }
    }
    dirty.then_some(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::volume::persistentvolume::fixtures::*;

    // binder_test.go: a controller binding is annotated on both sides, a user's is not.
    #[test]
    fn binding_annotates_what_the_controller_chose() {
        let c = claim("c", "1Gi");
        let v = volume("v", "5Gi");
        let bv = bound_volume(&v, &c).expect("changed");
        assert_eq!(claim_ref(&bv).unwrap().uid.as_deref(), Some("uid-c"));
        assert!(has_annotation(
            bv.metadata.annotations.as_ref(),
            ANN_BOUND_BY_CONTROLLER
        ));
        assert!(
            bound_volume(&bv, &c).is_none(),
            "binding twice changes nothing"
        );
        // Pre-bound by the user without UID: the UID is added, no annotation.
        let pre = pre_bound(volume("v", "5Gi"), "c", "");
        let bv = bound_volume(&pre, &c).expect("changed");
        assert!(!has_annotation(
            bv.metadata.annotations.as_ref(),
            ANN_BOUND_BY_CONTROLLER
        ));

        let bc = bound_claim(&c, &v).expect("changed");
        assert_eq!(claim_volume_name(&bc), "v");
        assert!(has_annotation(
            bc.metadata.annotations.as_ref(),
            ANN_BOUND_BY_CONTROLLER
        ));
        assert!(has_annotation(
            bc.metadata.annotations.as_ref(),
            ANN_BIND_COMPLETED
        ));
        assert!(bound_claim(&bc, &v).is_none());
        let named = with_volume(claim("c", "1Gi"), "v");
        let bc = bound_claim(&named, &v).expect("changed");
        assert!(!has_annotation(
            bc.metadata.annotations.as_ref(),
            ANN_BOUND_BY_CONTROLLER
        ));
    }

    #[test]
    fn the_claim_status_takes_the_volumes_capacity_and_modes() {
        let c = claim("c", "1Gi");
        let v = volume("v", "5Gi");
        let status = claim_status(&c, "Bound", Some(&v)).expect("changed");
        assert_eq!(status.phase.as_deref(), Some("Bound"));
        assert_eq!(status.capacity.as_ref().unwrap()["storage"].0, "5Gi");
        let mut bound = c.clone();
        bound.status = Some(status);
        assert!(claim_status(&bound, "Bound", Some(&v)).is_none());
        let lost = claim_status(&bound, "Lost", None).expect("changed");
        assert!(lost.capacity.is_none() && lost.access_modes.is_none());
    }
}
