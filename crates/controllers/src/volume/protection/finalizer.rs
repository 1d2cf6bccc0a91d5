//! Whether a protection finalizer is to be added or removed (`pkg/controller/util/protection`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The claim protection finalizer (`PVCProtectionFinalizer`).
pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";
/// The volume protection finalizer (`PVProtectionFinalizer`).
pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";

/// What the protection controllers do with an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Alive without the finalizer: add it (`NeedToAddFinalizer`).
    AddFinalizer,
    /// Being deleted with the finalizer: remove it if nothing uses the object
    /// (`IsDeletionCandidate`).
    RemoveIfUnused,
    /// Nothing to do.
    Nothing,
}

fn has_finalizer(meta: &ObjectMeta, finalizer: &str) -> bool {
    meta.finalizers.iter().flatten().any(|f| f == finalizer)
}

/// The step for an object with `meta`.
pub fn step(meta: &ObjectMeta, finalizer: &str) -> Step {
    match (
        meta.deletion_timestamp.is_some(),
        has_finalizer(meta, finalizer),
    ) {
        (false, false) => Step::AddFinalizer,
        (true, true) => Step::RemoveIfUnused,
        _ => Step::Nothing,
    }
}

/// `meta`'s finalizers with `finalizer` added.
pub fn with_finalizer(meta: &ObjectMeta, finalizer: &str) -> Vec<String> {
    let mut finalizers = meta.finalizers.clone().unwrap_or_default();
    if !finalizers.iter().any(|f| f == finalizer) {
        finalizers.push(finalizer.to_string());
    }
    finalizers
}

/// `meta`'s finalizers without `finalizer`.
pub fn without_finalizer(meta: &ObjectMeta, finalizer: &str) -> Vec<String> {
    meta.finalizers
        .iter()
        .flatten()
        .filter(|f| *f != finalizer)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    // protection util_test.go: NeedToAddFinalizer and IsDeletionCandidate.
    #[test]
    fn finalizers_are_added_to_live_objects_and_removed_from_deleted_ones() {
        let mut meta = ObjectMeta::default();
        assert_eq!(step(&meta, PVC_PROTECTION_FINALIZER), Step::AddFinalizer);
        meta.finalizers = Some(with_finalizer(&meta, PVC_PROTECTION_FINALIZER));
        assert_eq!(step(&meta, PVC_PROTECTION_FINALIZER), Step::Nothing);
        meta.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert_eq!(step(&meta, PVC_PROTECTION_FINALIZER), Step::RemoveIfUnused);
        // Another finalizer is not ours.
        assert_eq!(step(&meta, PV_PROTECTION_FINALIZER), Step::Nothing);
        meta.finalizers = Some(vec![
            "a".into(),
            PVC_PROTECTION_FINALIZER.into(),
            "b".into(),
        ]);
        assert_eq!(
            without_finalizer(&meta, PVC_PROTECTION_FINALIZER),
            ["a", "b"]
        );
        assert_eq!(with_finalizer(&meta, PVC_PROTECTION_FINALIZER).len(), 3);
    }
}
