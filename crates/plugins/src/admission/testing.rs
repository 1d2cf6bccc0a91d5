//! Fixtures for the plugins' unit tests: a memory store holding given objects, and attributes.

use std::sync::Arc;

use serde_json::Value;

use crate::auth::UserInfo;
use rkcm_server::admission::attributes::{Attributes, Operation};
use rkcm_server::rest;
use rkcm_storage::memory::MemoryBackend;
use rkcm_storage::store::Store;

/// A memory store holding `objects` (each with `apiVersion`, `kind` and metadata).
pub(crate) async fn store_with(objects: &[Value]) -> Store {
    let store = Store::new(Arc::new(MemoryBackend::new()), 100)
        .await
        .expect("memory store");
    for obj in objects {
        let api_version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("v1");
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
        let info = rkcm_apimachinery::catalog::by_kind(api_version, kind).expect("served kind");
        let ns = rkcm_storage::object::meta_str(obj, "namespace").filter(|_| info.namespaced());
        store
            .create(
                &rest::key(info, ns, rkcm_storage::object::name(obj)),
                obj.clone(),
            )
            .await
            .expect("stored");
    }
    store
}

/// Attributes of `operation` on an object of core `kind` in `namespace`.
pub(crate) fn attributes(
    operation: Operation,
    kind: &str,
    namespace: &str,
    object: Option<Value>,
    old: Option<Value>,
) -> Attributes {
    let info = rkcm_apimachinery::catalog::by_kind("v1", kind).expect("core kind");
    let name = object
        .as_ref()
        .or(old.as_ref())
        .map(|o| rkcm_storage::object::name(o).to_string())
        .unwrap_or_default();
    Attributes::new(
        operation,
        info,
        "",
        Some(namespace).filter(|n| !n.is_empty()),
        &name,
        object,
        old.map(Arc::new),
        Arc::new(UserInfo::default()),
        false,
    )
}
