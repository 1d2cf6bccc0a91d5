//! The first DELETE of a CustomResourceDefinition (`pkg/registry/customresourcedefinition/etcd.go`):
//! instead of removing it, the server adds the `customresourcecleanup.apiextensions.k8s.io`
//! finalizer and the Terminating condition; [`super::controller`] then deletes the custom
//! resources and removes the finalizer.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

/// The finalizer that holds a CRD until its objects are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Whether `info` is `customresourcedefinitions`.
pub fn is_crd(info: &ResourceInfo) -> bool {
    (info.group, info.kind) == ("apiextensions.k8s.io", "CustomResourceDefinition")
}

/// Sets the condition `type_` of the CRD `obj`, keeping its transition time when the status
/// does not change (`SetCRDCondition`).
pub fn set_condition(obj: &mut Value, type_: &str, status: &str, reason: &str, message: &str) {
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    let st = m.entry("status").or_insert_with(|| json!({}));
    if !st.is_object() {
        *st = json!({});
    }
    let conditions = &mut st["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let now = json!(rkcm_storage::object::now_rfc3339(jiff::Timestamp::now()));
    let new = |time: Value| {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
               "lastTransitionTime": time})
    };
    match list
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
    {
        Some(c) => {
            let time = if c.get("status").and_then(Value::as_str) == Some(status) {
                c.get("lastTransitionTime").cloned().unwrap_or(now)
            } else {
                now
            };
            *c = new(time);
        }
        None => list.push(new(now)),
    }
}

/// On a DELETE of a CRD: adds the cleanup finalizer to `finalizers` and the Terminating
/// condition to `next` (the object to store), so that the CRD stays until its objects are gone.
pub fn mark_terminating(info: &ResourceInfo, next: &mut Value, finalizers: &mut Vec<String>) {
    if !is_crd(info) {
        return;
    }
    if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        finalizers.push(CLEANUP_FINALIZER.to_string());
    }
    let already = next
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.get("type").and_then(Value::as_str) == Some("Terminating"))
        });
    if !already {
        set_condition(
            next,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; instance deletion will begin soon",
        );
    }
}
