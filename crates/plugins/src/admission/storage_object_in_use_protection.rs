//! `StorageObjectInUseProtection`: new PersistentVolumes and claims carry the protection
//! finalizer that the pv-protection and pvc-protection controllers remove once nothing uses
//! them.
//!
//! Mirrors `plugin/pkg/admission/storage/storageobjectinuseprotection/admission.go`.

use async_trait::async_trait;
use serde_json::{json, Value};

use super::plugins::STORAGE_OBJECT_IN_USE_PROTECTION;
use rkcm_server::admission::attributes::{Attributes, Operation};
use rkcm_server::admission::plugin::Plugin;
use rkcm_server::error::ApiResult;

/// The finalizer of claims (`PVCProtectionFinalizer`).
pub const PVC_PROTECTION_FINALIZER: &str = "kubernetes.io/pvc-protection";
/// The finalizer of volumes (`PVProtectionFinalizer`).
pub const PV_PROTECTION_FINALIZER: &str = "kubernetes.io/pv-protection";

/// The plugin.
pub struct StorageObjectInUseProtection;

/// Adds `finalizer` to `obj` unless it is there.
pub fn add_finalizer(obj: &mut Value, finalizer: &str) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let list = meta.entry("finalizers").or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(list) = list.as_array_mut() {
        if !list.iter().any(|f| f.as_str() == Some(finalizer)) {
            list.push(json!(finalizer));
        }
    }
}

#[async_trait]
impl Plugin for StorageObjectInUseProtection {
    fn name(&self) -> &'static str {
        STORAGE_OBJECT_IN_USE_PROTECTION
    }

    fn handles(&self, operation: Operation) -> bool {
        operation == Operation::Create
    }

    async fn admit(&self, attrs: &mut Attributes) -> ApiResult<()> {
        let finalizer = if attrs.is_core_resource("persistentvolumeclaims") {
            PVC_PROTECTION_FINALIZER
        } else if attrs.is_core_resource("persistentvolumes") {
            PV_PROTECTION_FINALIZER
        } else {
            return Ok(());
        };
        if let Some(obj) = attrs.object_mut() {
            add_finalizer(obj, finalizer);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admission::testing::attributes;

    async fn admit(kind: &str, ns: &str, obj: Value) -> Value {
        let mut attrs = attributes(Operation::Create, kind, ns, Some(obj), None);
        StorageObjectInUseProtection
            .admit(&mut attrs)
            .await
            .expect("admitted");
        attrs.into_object().expect("object")
    }

    #[tokio::test]
    async fn claims_and_volumes_get_their_finalizer_once() {
        let claim = admit(
            "PersistentVolumeClaim",
            "ns",
            json!({"metadata": {"name": "c"}}),
        )
        .await;
        assert_eq!(
            claim["metadata"]["finalizers"],
            json!([PVC_PROTECTION_FINALIZER])
        );
        let volume = admit(
            "PersistentVolume",
            "",
            json!({"metadata": {"name": "v", "finalizers": ["other"]}}),
        )
        .await;
        assert_eq!(
            volume["metadata"]["finalizers"],
            json!(["other", PV_PROTECTION_FINALIZER])
        );
        let again = admit("PersistentVolumeClaim", "ns", claim).await;
        assert_eq!(
            again["metadata"]["finalizers"],
            json!([PVC_PROTECTION_FINALIZER])
        );
        let pod = admit("Pod", "ns", json!({"metadata": {"name": "p"}})).await;
        assert!(pod["metadata"].get("finalizers").is_none());
    }
}
