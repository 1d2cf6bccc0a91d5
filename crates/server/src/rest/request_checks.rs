//! Checks of a request body against the request it came with: apiVersion, kind, namespace and the
//! uid precondition.

use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;

use crate::error::{ApiError, ApiResult};
use rkcm_storage::object;

/// Checks `apiVersion` and `kind` of a request body against the resource.
pub fn check_type(info: &ResourceInfo, obj: &mut Value) -> ApiResult<()> {
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    };
    let api_version = info.api_version();
    match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("apiVersion".into(), Value::String(api_version));
        }
        Some(v) if v == api_version => {}
        Some(v) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({api_version})"
            )))
        }
    }
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".into(), Value::String(info.kind.to_string()));
        }
        Some(k) if k == info.kind => {}
        Some(k) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                info.kind
            )))
        }
    }
    Ok(())
}

/// Reconciles the namespace of a body with the one of the request path.
pub fn check_namespace(
    info: &ResourceInfo,
    obj: &mut Value,
    namespace: Option<&str>,
) -> ApiResult<()> {
    if !info.namespaced() {
        object::remove_meta(obj, "namespace");
        return Ok(());
    }
    let Some(ns) = namespace else {
        return Err(ApiError::bad_request(
            "a namespace must be specified for namespaced resources",
        ));
    };
    match object::meta_str(obj, "namespace") {
        None | Some("") => object::set_meta(obj, "namespace", json!(ns)),
        Some(body_ns) if body_ns == ns => {}
        Some(_) => return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
    }
    Ok(())
}

/// The precondition a PUT body's `metadata.uid` sets (`defaultUpdatedObjectInfo.Preconditions`):
/// 409 Conflict when it names another object than `current`.
pub fn check_uid_precondition(
    info: &ResourceInfo,
    name: &str,
    body: &Value,
    current: &Value,
) -> ApiResult<()> {
    match object::meta_str(body, "uid").filter(|u| !u.is_empty()) {
        Some(uid) if uid != object::uid(current) => Err(ApiError::conflict_with(
            info,
            name,
            &format!(
                "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                object::uid(current)
            ),
        )),
        _ => Ok(()),
    }
}
