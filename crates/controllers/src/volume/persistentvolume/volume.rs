//! What the binder does with a volume: the decisions of `syncVolume` and `reclaimVolume`
//! (`pkg/controller/volume/persistentvolume/pv_controller.go`), as pure functions.

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use rkcm_runtime::storage::*;
use rkcm_runtime::ObjectKey;

use super::claim::BinderEvent;

/// What to do with a volume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VolumeAction {
    /// Set this phase (without message) unless the volume has it.
    SetPhase(&'static str),
    /// The claim finishes the binding: sync it soon.
    SyncClaim(ObjectKey),
    /// The claim and the volume disagree on the volume mode: record both events, nothing else.
    ModeMismatch {
        /// About the volume.
        volume_event: BinderEvent,
        /// About the claim.
        claim_event: BinderEvent,
    },
    /// Its claim is gone: mark it Released (unless Released or Failed already) and reclaim it.
    Release(Reclaim),
    /// Roll back a binding the claim does not share (`unbindVolume`), then Available.
    Unbind,
}

/// What the reclaim policy asks for (`reclaimVolume`, `deleteVolumeOperation`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reclaim {
    /// `Retain`, or `Delete` of a volume an external provisioner deletes: nothing to do here.
    Nothing,
    /// Mark the volume Failed with this event (no deleter or recycler, unknown policy).
    Fail(BinderEvent),
}

/// The reclaim step for a released volume. rkcm has no in-tree volume plugins: a volume
/// provisioned by an external provisioner is deleted by it; any other cannot be deleted or
/// recycled.
pub fn reclaim(volume: &PersistentVolume) -> Reclaim {
    let name = volume.metadata.name.as_deref().unwrap_or_default();
    match reclaim_policy(volume) {
        "Retain" => Reclaim::Nothing,
        "Delete" => {
            let provisioner = volume
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(ANN_DYNAMICALLY_PROVISIONED))
                .map(String::as_str)
                .unwrap_or_default();
            if !provisioner.is_empty() && !provisioner.starts_with("kubernetes.io/") {
                Reclaim::Nothing
            } else {
                Reclaim::Fail(BinderEvent {
                    type_: rkcm_runtime::events::EventType::Warning,
                    reason: "VolumeFailedDelete",
                    message: format!(
                        "error getting deleter volume plugin for volume {name:?}: no deletable volume plugin matched"
                    ),
                })
            }
        }
        "Recycle" => Reclaim::Fail(BinderEvent {
            type_: rkcm_runtime::events::EventType::Warning,
            reason: "VolumeFailedRecycle",
            message: "No recycler plugin found for the volume!".into(),
        }),
        _ => Reclaim::Fail(BinderEvent {
            type_: rkcm_runtime::events::EventType::Warning,
            reason: "VolumeUnknownReclaimPolicy",
            message: "Volume has unrecognized PersistentVolumeReclaimPolicy".into(),
        }),
    }
}

/// Decides what to do with `volume` given the claim its `claimRef` names, if that claim exists
/// (`syncVolume`). A claim with another UID than the reference counts as gone.
pub fn sync_volume(
    volume: &PersistentVolume,
    claim: Option<&PersistentVolumeClaim>,
) -> VolumeAction {
    let Some(claim_ref) = claim_ref(volume) else {
        return VolumeAction::SetPhase(volume_phase::AVAILABLE);
    };
    let ref_uid = claim_ref.uid.as_deref().unwrap_or_default();
    if ref_uid.is_empty() {
        // Pre-bound to a claim that has not bound to it yet: the claim's sync does it.
        return VolumeAction::SetPhase(volume_phase::AVAILABLE);
    }
    let claim = claim.filter(|c| c.metadata.uid.as_deref() == Some(ref_uid));
    let Some(claim) = claim else {
        return VolumeAction::Release(reclaim(volume));
    };
    let volume_name = volume.metadata.name.as_deref().unwrap_or_default();
    let bound_to = claim_volume_name(claim);
    if bound_to.is_empty() {
        if volume_mode_mismatch(claim, volume) {
            let claim_name = claim.metadata.name.as_deref().unwrap_or_default();
            let warning = |message: String| BinderEvent {
                type_: rkcm_runtime::events::EventType::Warning,
                reason: "VolumeMismatch",
                message,
            };
            return VolumeAction::ModeMismatch {
                volume_event: warning(format!(
                    "Cannot bind PersistentVolume to requested PersistentVolumeClaim {claim_name:?} due to incompatible volumeMode."
                )),
                claim_event: warning(format!(
                    "Cannot bind PersistentVolume {volume_name:?} to requested PersistentVolumeClaim due to incompatible volumeMode."
                )),
            };
        }
        return VolumeAction::SyncClaim(ObjectKey::from_obj(claim));
    }
    if bound_to == volume_name {
        return VolumeAction::SetPhase(volume_phase::BOUND);
    }
    // The claim is bound to another volume.
    let provisioned = has_annotation(
        volume.metadata.annotations.as_ref(),
        ANN_DYNAMICALLY_PROVISIONED,
    );
    if provisioned && reclaim_policy(volume) == "Delete" {
        return VolumeAction::Release(reclaim(volume));
    }
    VolumeAction::Unbind
}

/// The volume with a binding the claim does not share rolled back (`unbindVolume`): a binding
/// made by the controller is removed with its annotation; a user's pre-binding keeps the claim
/// name and loses only the UID.
pub fn unbound_volume(volume: &PersistentVolume) -> PersistentVolume {
    let mut v = volume.clone();
    if has_annotation(v.metadata.annotations.as_ref(), ANN_BOUND_BY_CONTROLLER) {
        if let Some(spec) = v.spec.as_mut() {
            spec.claim_ref = None;
        }
        if let Some(a) = v.metadata.annotations.as_mut() {
            a.remove(ANN_BOUND_BY_CONTROLLER);
            if a.is_empty() {
                v.metadata.annotations = None;
            }
        }
    } else if let Some(r) = v.spec.as_mut().and_then(|s| s.claim_ref.as_mut()) {
        r.uid = None;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::volume::persistentvolume::fixtures::*;

    fn bound_claim(name: &str, uid: &str, volume: &str) -> PersistentVolumeClaim {
        let mut c = with_volume(claim(name, "1Gi"), volume);
        c.metadata.uid = Some(uid.into());
        c
    }

    // binder_test.go TestSync 4-1 .. 4-8: the volume side.
    #[test]
    fn volumes_follow_their_claims() {
        // 4-1: unused volume: Available.
        assert_eq!(
            sync_volume(&volume("v", "1Gi"), None),
            VolumeAction::SetPhase("Available")
        );
        // 4-2: pre-bound without UID: Available.
        let pre = pre_bound(volume("v", "1Gi"), "c", "");
        assert_eq!(sync_volume(&pre, None), VolumeAction::SetPhase("Available"));
        // 4-3: bound, claim not bound yet: the claim is synced.
        let v = pre_bound(volume("v", "1Gi"), "c", "uid-c");
        let unbound = claim("c", "1Gi");
        assert_eq!(
            sync_volume(&v, Some(&unbound)),
            VolumeAction::SyncClaim(ObjectKey::new("default", "c"))
        );
        // 4-4: both bound: Bound.
        assert_eq!(
            sync_volume(&v, Some(&bound_claim("c", "uid-c", "v"))),
            VolumeAction::SetPhase("Bound")
        );
        // 4-5: the claim is gone: released, Retain does nothing more.
        let mut retain = v.clone();
        retain
            .spec
            .as_mut()
            .unwrap()
            .persistent_volume_reclaim_policy = Some("Retain".into());
        assert_eq!(
            sync_volume(&retain, None),
            VolumeAction::Release(Reclaim::Nothing)
        );
        // 4-6: a claim with the same name but another UID is another claim.
        assert_eq!(
            sync_volume(&retain, Some(&bound_claim("c", "uid-new", "v"))),
            VolumeAction::Release(Reclaim::Nothing)
        );
        // 4-7: bound by the controller to a claim bound elsewhere: unbind.
        let mut by_controller = v.clone();
        annotate(&mut by_controller.metadata, ANN_BOUND_BY_CONTROLLER);
        assert_eq!(
            sync_volume(&by_controller, Some(&bound_claim("c", "uid-c", "other"))),
            VolumeAction::Unbind
        );
        let rolled_back = unbound_volume(&by_controller);
        assert!(claim_ref(&rolled_back).is_none());
        assert!(rolled_back.metadata.annotations.is_none());
        // 4-8: pre-bound by the user: only the UID goes.
        let rolled_back = unbound_volume(&v);
        assert_eq!(claim_ref(&rolled_back).unwrap().name.as_deref(), Some("c"));
        assert!(claim_ref(&rolled_back).unwrap().uid.is_none());
    }

    // binder_test.go 8-x and provision_test.go deletion cases: reclaim policies.
    #[test]
    fn released_volumes_are_reclaimed_by_policy() {
        let v = pre_bound(volume("v", "1Gi"), "c", "uid-c");
        let mut delete = v.clone();
        delete
            .spec
            .as_mut()
            .unwrap()
            .persistent_volume_reclaim_policy = Some("Delete".into());
        let Reclaim::Fail(event) = reclaim(&delete) else {
            panic!()
        };
        assert_eq!(event.reason, "VolumeFailedDelete");
        let mut external = delete.clone();
        external.metadata.annotations = Some(
            [(
                ANN_DYNAMICALLY_PROVISIONED.to_string(),
                "rkcm.io/simulated".to_string(),
            )]
            .into(),
        );
        assert_eq!(reclaim(&external), Reclaim::Nothing);
        // A provisioned Delete volume whose claim got bound elsewhere is released too.
        assert_eq!(
            sync_volume(&external, Some(&bound_claim("c", "uid-c", "other"))),
            VolumeAction::Release(Reclaim::Nothing)
        );
        let mut recycle = v.clone();
        recycle
            .spec
            .as_mut()
            .unwrap()
            .persistent_volume_reclaim_policy = Some("Recycle".into());
        let Reclaim::Fail(event) = reclaim(&recycle) else {
            panic!()
        };
        assert_eq!(event.message, "No recycler plugin found for the volume!");
        let mut unknown = v.clone();
        unknown
            .spec
            .as_mut()
            .unwrap()
            .persistent_volume_reclaim_policy = Some("Keep".into());
        let Reclaim::Fail(event) = reclaim(&unknown) else {
            panic!()
        };
        assert_eq!(event.reason, "VolumeUnknownReclaimPolicy");
    }

    #[test]
    fn a_volume_mode_mismatch_is_reported_on_both_sides() {
        let mut v = pre_bound(volume("v", "1Gi"), "c", "uid-c");
        v.spec.as_mut().unwrap().volume_mode = Some("Block".into());
        let VolumeAction::ModeMismatch { claim_event, .. } =
            sync_volume(&v, Some(&claim("c", "1Gi")))
        else {
            panic!()
        };
        assert_eq!(
            claim_event.message,
            "Cannot bind PersistentVolume \"v\" to requested PersistentVolumeClaim due to incompatible volumeMode."
        );
    }
}
