//! What the generic registry does for namespaces itself: the system namespaces, NamespaceLifecycle
//! admission of creates, and a new namespace's finalizer, phase and name label.

use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;

use super::create::create;
use super::keys::key;
use super::write::WriteOptions;
use crate::allocators::ServiceAllocators;
use crate::error::{ApiError, ApiResult, Cause};
use crate::object;
use crate::store::Store;

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

/// NamespaceLifecycle admission for creates: the namespace must exist and not be terminating.
pub(crate) fn admit_create(
    store: &Store,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
) -> ApiResult<()> {
    let ns_info = namespace_info();
    let Some(ns) = store.get(&key(ns_info, None, namespace)) else {
        return Err(ApiError::not_found(ns_info, namespace));
    };
    let terminating = object::is_deleting(&ns.value)
        || ns.value.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating");
    if terminating {
        let why = format!(
            "unable to create new content in namespace {namespace} because it is being terminated"
        );
        let mut err = if name.is_empty() {
            let mut e = ApiError::new(
                403,
                "Forbidden",
                format!("{} is forbidden: {why}", info.qualified_plural()),
            );
            e.details.group = Some(info.group.to_string());
            e.details.kind = Some(info.plural.to_string());
            e
        } else {
            ApiError::forbidden(info, name, &why)
        };
        err.details.causes.push(Cause {
            reason: "NamespaceTerminating".into(),
            message: format!("namespace {namespace} is being terminated"),
            field: "metadata.namespace".into(),
        });
        return Err(err);
    }
    Ok(())
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
