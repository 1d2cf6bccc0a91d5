//! The annotations and predicates of `k8s.io/component-helpers/storage/volume` (`pv_helpers.go`,
//! `helpers.go`) that the binder, the scheduler and provisioners share.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ObjectReference, PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::StorageClass;
use rkcm_apimachinery::quantity::Quantity;

/// On a claim: its lifecycle passed the initial binding (`AnnBindCompleted`).
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// On a volume or claim: the binding was made by the controller, not pre-bound by a user
/// (`AnnBoundByController`).
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// On a claim: the node the scheduler chose for a `WaitForFirstConsumer` claim (`AnnSelectedNode`).
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// On a volume: the provisioner that created it (`AnnDynamicallyProvisioned`).
pub const ANN_DYNAMICALLY_PROVISIONED: &str = "pv.kubernetes.io/provisioned-by";
/// On a claim: the provisioner asked to provision it (`AnnStorageProvisioner`).
pub const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
/// The beta spelling of [`ANN_STORAGE_PROVISIONER`], still written (`AnnBetaStorageProvisioner`).
pub const ANN_BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
/// The beta storage-class annotation of claims and volumes, read before `storageClassName`.
pub const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";
/// A class whose volumes are not provisioned dynamically (`NotSupportedProvisioner`).
pub const NOT_SUPPORTED_PROVISIONER: &str = "kubernetes.io/no-provisioner";
/// Marks the default StorageClass.
pub const IS_DEFAULT_CLASS_ANNOTATION: &str = "storageclass.kubernetes.io/is-default-class";
/// The beta spelling of [`IS_DEFAULT_CLASS_ANNOTATION`].
pub const BETA_IS_DEFAULT_CLASS_ANNOTATION: &str =
    "storageclass.beta.kubernetes.io/is-default-class";

/// Claim phases.
pub mod claim_phase {
    /// Not bound yet.
    pub const PENDING: &str = "Pending";
    /// Bound to a volume.
    pub const BOUND: &str = "Bound";
    /// Its volume went away.
    pub const LOST: &str = "Lost";
}

/// Volume phases.
pub mod volume_phase {
    /// Free for a claim.
    pub const AVAILABLE: &str = "Available";
    /// Bound to a claim.
    pub const BOUND: &str = "Bound";
    /// Its claim was deleted; the reclaim policy applies.
    pub const RELEASED: &str = "Released";
    /// Reclaiming failed.
    pub const FAILED: &str = "Failed";
}

/// Whether `annotations` has `key` (any value).
pub fn has_annotation(annotations: Option<&BTreeMap<String, String>>, key: &str) -> bool {
    annotations.is_some_and(|a| a.contains_key(key))
}

/// The class a claim asks for: the beta annotation, else `spec.storageClassName`, else ""
/// (`GetPersistentVolumeClaimClass`).
pub fn claim_class(claim: &PersistentVolumeClaim) -> &str {
    if let Some(class) = claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(BETA_STORAGE_CLASS_ANNOTATION))
    {
        return class;
    }
    claim
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or_default()
}

/// Whether the claim names a class at all, even "" (`PersistentVolumeClaimHasClass`).
pub fn claim_has_class(claim: &PersistentVolumeClaim) -> bool {
    has_annotation(
        claim.metadata.annotations.as_ref(),
        BETA_STORAGE_CLASS_ANNOTATION,
    ) || claim
        .spec
        .as_ref()
        .is_some_and(|s| s.storage_class_name.is_some())
}

/// The class of a volume, read as [`claim_class`] (`GetPersistentVolumeClass`).
pub fn volume_class(volume: &PersistentVolume) -> &str {
    if let Some(class) = volume
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(BETA_STORAGE_CLASS_ANNOTATION))
    {
        return class;
    }
    volume
        .spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .unwrap_or_default()
}

/// The claim's `spec.volumeName`, "" when unset.
pub fn claim_volume_name(claim: &PersistentVolumeClaim) -> &str {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_name.as_deref())
        .unwrap_or_default()
}

/// The volume's `spec.claimRef`.
pub fn claim_ref(volume: &PersistentVolume) -> Option<&ObjectReference> {
    volume.spec.as_ref().and_then(|s| s.claim_ref.as_ref())
}

/// The claim's `status.phase`, "" when unset.
pub fn claim_phase(claim: &PersistentVolumeClaim) -> &str {
    claim
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

/// The volume's `status.phase`, "" when unset.
pub fn volume_phase(volume: &PersistentVolume) -> &str {
    volume
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default()
}

/// The volume's reclaim policy, "" when unset.
pub fn reclaim_policy(volume: &PersistentVolume) -> &str {
    volume
        .spec
        .as_ref()
        .and_then(|s| s.persistent_volume_reclaim_policy.as_deref())
        .unwrap_or_default()
}

/// `namespace/name` of a claim, as kube's messages print it (`claimToClaimKey`).
pub fn claim_key(claim: &PersistentVolumeClaim) -> String {
    format!(
        "{}/{}",
        claim.metadata.namespace.as_deref().unwrap_or_default(),
        claim.metadata.name.as_deref().unwrap_or_default()
    )
}

/// `namespace/name` of a claim reference (`claimrefToClaimKey`).
pub fn claim_ref_key(claim_ref: &ObjectReference) -> String {
    format!(
        "{}/{}",
        claim_ref.namespace.as_deref().unwrap_or_default(),
        claim_ref.name.as_deref().unwrap_or_default()
    )
}

/// Whether the volume is pre-bound or bound to this claim: same name and namespace, and the same
/// UID when the reference has one (`IsVolumeBoundToClaim`).
pub fn is_volume_bound_to_claim(volume: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let Some(r) = claim_ref(volume) else {
        return false;
    };
    if r.name != claim.metadata.name || r.namespace != claim.metadata.namespace {
        return false;
    }
    let ref_uid = r.uid.as_deref().unwrap_or_default();
    ref_uid.is_empty() || Some(ref_uid) == claim.metadata.uid.as_deref()
}

/// `storage` of a resource list, zero when absent or unreadable.
fn storage_of(
    list: Option<&BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>,
) -> Quantity {
    list.and_then(|l| l.get("storage"))
        .and_then(|q| Quantity::parse(&q.0).ok())
        .unwrap_or_default()
}

/// What the claim requests (`spec.resources.requests.storage`), zero when absent.
pub fn requested_storage(claim: &PersistentVolumeClaim) -> Quantity {
    storage_of(
        claim
            .spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref()),
    )
}

/// The volume's `spec.capacity.storage`, zero when absent.
pub fn volume_capacity(volume: &PersistentVolume) -> Quantity {
    storage_of(volume.spec.as_ref().and_then(|s| s.capacity.as_ref()))
}

/// Whether the claim's and the volume's volume modes differ, an unset mode reading as
/// `Filesystem` (`CheckVolumeModeMismatches`).
pub fn volume_mode_mismatch(claim: &PersistentVolumeClaim, volume: &PersistentVolume) -> bool {
    let claim_mode = claim
        .spec
        .as_ref()
        .and_then(|s| s.volume_mode.as_deref())
        .unwrap_or("Filesystem");
    let volume_mode = volume
        .spec
        .as_ref()
        .and_then(|s| s.volume_mode.as_deref())
        .unwrap_or("Filesystem");
    claim_mode != volume_mode
}

/// The claim's requested access modes.
pub fn claim_access_modes(claim: &PersistentVolumeClaim) -> &[String] {
    claim
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or_default()
}

/// The volume's access modes.
pub fn volume_access_modes(volume: &PersistentVolume) -> &[String] {
    volume
        .spec
        .as_ref()
        .and_then(|s| s.access_modes.as_deref())
        .unwrap_or_default()
}

/// Whether the volume offers every access mode the claim asks for (`CheckAccessModes`).
pub fn check_access_modes(claim: &PersistentVolumeClaim, volume: &PersistentVolume) -> bool {
    let offered = volume_access_modes(volume);
    claim_access_modes(claim)
        .iter()
        .all(|m| offered.contains(m))
}

/// Why a volume the claim names in `volumeName` cannot be bound to it, in kube's words
/// (`checkVolumeSatisfyClaim`).
pub fn check_volume_satisfies_claim(
    volume: &PersistentVolume,
    claim: &PersistentVolumeClaim,
) -> Result<(), String> {
    if volume.metadata.deletion_timestamp.is_some() {
        return Err(format!(
            "the volume is marked for deletion {:?}",
            volume.metadata.name.as_deref().unwrap_or_default()
        ));
    }
    if volume_capacity(volume).value() < requested_storage(claim).value() {
        return Err("requested PV is too small".into());
    }
    if volume_class(volume) != claim_class(claim) {
        return Err("storageClassName does not match".into());
    }
    if volume_mode_mismatch(claim, volume) {
        return Err("incompatible volumeMode and requested volumeMode".into());
    }
    if !check_access_modes(claim, volume) {
        return Err("incompatible accessMode".into());
    }
    Ok(())
}

/// Whether the class binds when the first pod using the claim is scheduled.
pub fn is_wait_for_first_consumer(class: &StorageClass) -> bool {
    class.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer")
}

/// Whether the class is marked default, by the GA or the beta annotation (`IsDefaultAnnotation`).
pub fn is_default_class(class: &StorageClass) -> bool {
    class.metadata.annotations.as_ref().is_some_and(|a| {
        a.get(IS_DEFAULT_CLASS_ANNOTATION).map(String::as_str) == Some("true")
            || a.get(BETA_IS_DEFAULT_CLASS_ANNOTATION).map(String::as_str) == Some("true")
    })
}

/// The default class: of the classes marked default, the newest, ties broken by name
/// (`GetDefaultClass`).
pub fn default_class<'a>(
    classes: impl IntoIterator<Item = &'a StorageClass>,
) -> Option<&'a StorageClass> {
    classes
        .into_iter()
        .filter(|c| is_default_class(c))
        .min_by(|a, b| {
            let created = |c: &StorageClass| c.metadata.creation_timestamp.as_ref().map(|t| t.0);
            created(b)
                .cmp(&created(a))
                .then_with(|| a.metadata.name.cmp(&b.metadata.name))
        })
}

/// Pod index by the claims its volumes use, `namespace/claim` (kube's `common.PodPVCIndex`).
pub const POD_PVC_INDEX: &str = "pod-pvc-index";

/// The claims a pod's volumes use: `persistentVolumeClaim.claimName`, and `<pod>-<volume>` for
/// generic ephemeral volumes (`ephemeral.VolumeClaimName`).
pub fn pod_claim_names(pod: &k8s_openapi::api::core::v1::Pod) -> Vec<String> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    pod.spec
        .iter()
        .flat_map(|s| s.volumes.iter().flatten())
        .filter_map(|v| {
            if let Some(claim) = &v.persistent_volume_claim {
                Some(claim.claim_name.clone())
            } else {
                v.ephemeral
                    .as_ref()
                    .map(|_| format!("{pod_name}-{}", v.name))
            }
        })
        .collect()
}

/// Index function of [`POD_PVC_INDEX`] (`PodPVCIndexFunc`).
pub fn pod_pvc_index(pod: &k8s_openapi::api::core::v1::Pod) -> Vec<String> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    pod_claim_names(pod)
        .into_iter()
        .map(|claim| format!("{namespace}/{claim}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn class(name: &str, default: bool, created: &str) -> StorageClass {
        let mut c = StorageClass::default();
        c.metadata.name = Some(name.into());
        c.metadata.creation_timestamp = Some(Time(created.parse().unwrap()));
        if default {
            c.metadata.annotations =
                Some([(IS_DEFAULT_CLASS_ANNOTATION.to_string(), "true".to_string())].into());
        }
        c
    }

    // storageclass_test.go TestGetDefaultClass: the newest default wins, then the first name.
    #[test]
    fn the_default_class_is_the_newest_marked_one_ties_by_name() {
        let t1 = "2025-01-01T00:00:00Z";
        let t2 = "2025-01-02T00:00:00Z";
        let none = [class("a", false, t1), class("b", false, t2)];
        assert!(default_class(&none).is_none());
        let one = [class("a", true, t1), class("b", false, t2)];
        assert_eq!(
            default_class(&one).unwrap().metadata.name.as_deref(),
            Some("a")
        );
        let newest = [class("a", true, t1), class("b", true, t2)];
        assert_eq!(
            default_class(&newest).unwrap().metadata.name.as_deref(),
            Some("b")
        );
        let tie = [
            class("c", true, t2),
            class("b", true, t2),
            class("a", true, t1),
        ];
        assert_eq!(
            default_class(&tie).unwrap().metadata.name.as_deref(),
            Some("b")
        );
        let mut beta = class("beta", false, t1);
        beta.metadata.annotations = Some(
            [(
                BETA_IS_DEFAULT_CLASS_ANNOTATION.to_string(),
                "true".to_string(),
            )]
            .into(),
        );
        assert!(is_default_class(&beta));
    }

    #[test]
    fn the_beta_class_annotation_wins_over_the_field() {
        let mut claim = PersistentVolumeClaim::default();
        assert_eq!(claim_class(&claim), "");
        assert!(!claim_has_class(&claim));
        claim.spec = Some(Default::default());
        claim.spec.as_mut().unwrap().storage_class_name = Some(String::new());
        assert!(claim_has_class(&claim));
        claim.spec.as_mut().unwrap().storage_class_name = Some("gold".into());
        assert_eq!(claim_class(&claim), "gold");
        claim.metadata.annotations = Some(
            [(
                BETA_STORAGE_CLASS_ANNOTATION.to_string(),
                "silver".to_string(),
            )]
            .into(),
        );
        assert_eq!(claim_class(&claim), "silver");
    }
}
