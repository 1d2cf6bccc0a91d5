//! Claims, volumes and classes for the binder's tests.

use k8s_openapi::api::core::v1::{
    ObjectReference, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeSpec, PersistentVolumeStatus, VolumeResourceRequirements,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A ReadWriteOnce claim `default/<name>` with UID `uid-<name>` requesting `size`.
pub fn claim(name: &str, size: &str) -> PersistentVolumeClaim {
    let mut c = PersistentVolumeClaim::default();
    c.metadata.name = Some(name.into());
    c.metadata.namespace = Some("default".into());
    c.metadata.uid = Some(format!("uid-{name}"));
    c.spec = Some(PersistentVolumeClaimSpec {
        access_modes: Some(vec!["ReadWriteOnce".into()]),
        resources: Some(VolumeResourceRequirements {
            requests: Some([("storage".to_string(), Quantity(size.into()))].into()),
            ..Default::default()
        }),
        ..Default::default()
    });
    c
}

/// The claim with `spec.volumeName`.
pub fn with_volume(mut c: PersistentVolumeClaim, volume: &str) -> PersistentVolumeClaim {
    c.spec.get_or_insert_with(Default::default).volume_name = Some(volume.into());
    c
}

/// The claim with `spec.storageClassName`.
pub fn with_class(mut c: PersistentVolumeClaim, class: &str) -> PersistentVolumeClaim {
    c.spec
        .get_or_insert_with(Default::default)
        .storage_class_name = Some(class.into());
    c
}

/// An Available ReadWriteOnce volume of `size`.
pub fn volume(name: &str, size: &str) -> PersistentVolume {
    let mut v = PersistentVolume::default();
    v.metadata.name = Some(name.into());
    v.spec = Some(PersistentVolumeSpec {
        access_modes: Some(vec!["ReadWriteOnce".into()]),
        capacity: Some([("storage".to_string(), Quantity(size.into()))].into()),
        ..Default::default()
    });
    v.status = Some(PersistentVolumeStatus {
        phase: Some("Available".into()),
        ..Default::default()
    });
    v
}

/// The volume with `spec.storageClassName`.
pub fn with_volume_class(mut v: PersistentVolume, class: &str) -> PersistentVolume {
    v.spec
        .get_or_insert_with(Default::default)
        .storage_class_name = Some(class.into());
    v
}

/// The volume with a `claimRef` to `default/<claim>` (UID `uid`, none when empty).
pub fn pre_bound(mut v: PersistentVolume, claim: &str, uid: &str) -> PersistentVolume {
    v.spec.get_or_insert_with(Default::default).claim_ref = Some(ObjectReference {
        kind: Some("PersistentVolumeClaim".into()),
        api_version: Some("v1".into()),
        name: Some(claim.into()),
        namespace: Some("default".into()),
        uid: (!uid.is_empty()).then(|| uid.to_string()),
        ..Default::default()
    });
    v
}

/// Sets annotation `key` to `"yes"`.
pub fn annotate(meta: &mut ObjectMeta, key: &str) {
    meta.annotations
        .get_or_insert_with(Default::default)
        .insert(key.into(), "yes".into());
}

/// A class with `provisioner`, WaitForFirstConsumer when `wait`, Immediate otherwise.
pub fn class(name: &str, provisioner: &str, wait: bool) -> StorageClass {
    StorageClass {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        provisioner: provisioner.into(),
        volume_binding_mode: Some(
            if wait {
                "WaitForFirstConsumer"
            } else {
                "Immediate"
            }
            .into(),
        ),
        ..Default::default()
    }
}
