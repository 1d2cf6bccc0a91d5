//! The storage of namespaces (`pkg/registry/core/namespace/storage`): the system namespaces, a
//! new namespace's finalizer, phase and name label, `/finalize`, and a delete that waits for
//! `spec.finalizers`. NamespaceLifecycle admission is in [`crate::admission`].

use async_trait::async_trait;
use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;

use crate::error::ApiResult;
use crate::object;
use crate::store::Store;
use rkcm_server::rest::{create, key, Resources, WriteHooks, WriteOptions};

/// Namespaces that exist from the start and may not be deleted.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

/// The finalizer the namespace controller removes once a namespace is empty.
pub const NAMESPACE_FINALIZER: &str = "kubernetes";

/// The catalog entry of namespaces.
fn namespace_info() -> &'static ResourceInfo {
    rkcm_apimachinery::catalog::by_kind("v1", "Namespace").expect("namespaces are in the catalog")
}

/// The hooks of namespaces' storage.
pub struct NamespaceHooks;

#[async_trait]
impl WriteHooks for NamespaceHooks {
    fn prepare_for_create(&self, obj: &mut Value, requested_name: &str) {
        prepare_namespace_for_create(obj, requested_name);
    }

    /// Only `/finalize` changes `spec.finalizers`; only the server changes the phase.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        for field in ["spec", "status"] {
            match (old.get(field), new.as_object_mut()) {
                (Some(v), Some(m)) => {
                    m.insert(field.into(), v.clone());
                }
                (None, Some(m)) => {
                    m.remove(field);
                }
                _ => {}
            }
        }
    }

    /// `/finalize` takes `spec.finalizers` alone from the new object.
    fn prepare_for_subresource_update(
        &self,
        subresource: &str,
        new: &mut Value,
        old: &Value,
    ) -> bool {
        if subresource != "finalize" {
            return false;
        }
        let finalizers = new.pointer("/spec/finalizers").cloned();
        let mut merged = old.clone();
        match (merged.as_object_mut(), finalizers) {
            (Some(m), Some(f)) => {
                let spec = m.entry("spec").or_insert_with(|| json!({}));
                if let Some(spec) = spec.as_object_mut() {
                    spec.insert("finalizers".into(), f);
                }
            }
            (Some(m), None) => {
                if let Some(spec) = m.get_mut("spec").and_then(Value::as_object_mut) {
                    spec.remove("finalizers");
                }
            }
            (None, _) => {}
        }
        *new = merged;
        true
    }

    /// A namespace being deleted is `Terminating` until it is removed.
    fn prepare_for_delete(&self, next: &mut Value, _finalizers: &mut Vec<String>) {
        if let Some(m) = next.as_object_mut() {
            let status = m.entry("status").or_insert_with(|| json!({}));
            if let Some(s) = status.as_object_mut() {
                s.insert("phase".into(), json!("Terminating"));
            }
        }
    }

    /// The namespace controller empties `spec.finalizers` once the namespace's content is gone.
    fn holds(&self, obj: &Value) -> bool {
        obj.pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| !f.is_empty())
    }
}

/// Namespace `PrepareForCreate`: phase Active, the `kubernetes` finalizer, and the
/// `kubernetes.io/metadata.name` label.
fn prepare_namespace_for_create(obj: &mut Value, name: &str) {
    let Some(m) = obj.as_object_mut() else { return };
    m.insert("status".into(), json!({"phase": "Active"}));
    let spec = m.entry("spec").or_insert_with(|| json!({}));
    if !spec.is_object() {
        *spec = json!({});
    }
    let finalizers = spec
        .as_object_mut()
        .map(|s| s.entry("finalizers").or_insert_with(|| json!([])));
    if let Some(f) = finalizers {
        if !f.is_array() {
            *f = json!([]);
        }
        if let Some(a) = f.as_array_mut() {
            if !a.iter().any(|x| x.as_str() == Some(NAMESPACE_FINALIZER)) {
                a.push(json!(NAMESPACE_FINALIZER));
            }
        }
    }
    if !name.is_empty() {
        if let Some(meta) = object::metadata_mut(obj) {
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            if let Some(l) = labels.as_object_mut() {
                l.insert("kubernetes.io/metadata.name".into(), json!(name));
            }
        }
    }
}

/// Creates the system namespaces that do not exist yet.
pub async fn ensure_system_namespaces(store: &Store, resources: &dyn Resources) -> ApiResult<()> {
    let info = namespace_info();
    for ns in SYSTEM_NAMESPACES {
        if store.get(&key(info, None, ns)).is_some() {
            continue;
        }
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        match create(store, resources, info, None, obj, WriteOptions::default()).await {
            Ok(_) => {}
            Err(e) if e.reason == "AlreadyExists" => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
