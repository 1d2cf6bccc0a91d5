//! What the generic registry does for namespaces itself: the system namespaces, and a new
//! namespace's finalizer, phase and name label. NamespaceLifecycle admission is in
//! [`crate::admission`].

use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;

use super::create::create;
use super::write::WriteOptions;
use crate::allocators::ServiceAllocators;
use crate::error::ApiResult;
use crate::object;
use crate::store::Store;
use rkcm_server::rest::key;

/// Namespaces that exist from the start and may not be deleted.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

/// The finalizer the namespace controller removes once a namespace is empty.
pub const NAMESPACE_FINALIZER: &str = "kubernetes";

/// The catalog entry of namespaces.
fn namespace_info() -> &'static ResourceInfo {
    rkcm_apimachinery::catalog::by_kind("v1", "Namespace").expect("namespaces are in the catalog")
}

/// Whether `info` is the core/v1 namespaces.
pub(crate) fn is_namespace(info: &ResourceInfo) -> bool {
    info.kind == "Namespace" && info.group.is_empty()
}

/// Namespace `PrepareForCreate`: phase Active, the `kubernetes` finalizer, and the
/// `kubernetes.io/metadata.name` label.
pub(crate) fn prepare_namespace_for_create(obj: &mut Value, name: &str) {
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
pub async fn ensure_system_namespaces(
    store: &Store,
    allocators: &ServiceAllocators,
) -> ApiResult<()> {
    let info = namespace_info();
    for ns in SYSTEM_NAMESPACES {
        if store.get(&key(info, None, ns)).is_some() {
            continue;
        }
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        match create(store, allocators, info, None, obj, WriteOptions::default()).await {
            Ok(_) => {}
            Err(e) if e.reason == "AlreadyExists" => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
