//! Binding a pod to a node (`pods/{name}/binding`): `spec.nodeName` once, and the `PodScheduled`
//! condition.

use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::registry;
use crate::storage;
use crate::store::Store;
use rkcm_server::rest::key;
use rkcm_server::rest::{storage_error, WriteOptions, UPDATE_ATTEMPTS};

/// Binds pod `name` to a node (POST `pods/{name}/binding` or `bindings`): sets `spec.nodeName`
/// once and the `PodScheduled` condition.
pub async fn bind(
    store: &Store,
    namespace: &str,
    name: &str,
    binding: &Value,
    opts: WriteOptions,
) -> ApiResult<()> {
    let pods = rkcm_apimachinery::catalog::by_kind("v1", "Pod").expect("pods are in the catalog");
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| {
            ApiError::invalid(
                pods,
                name,
                &[registry::FieldError::required("target.name", "")],
            )
        })?
        .to_string();
    let key = key(pods, Some(namespace), name);
    for _ in 0..UPDATE_ATTEMPTS {
        let current = store
            .get(&key)
            .ok_or_else(|| ApiError::not_found(pods, name))?;
        let old = &current.value();
        if object::is_deleting(old) {
            return Err(ApiError::conflict_with(
                pods,
                name,
                &format!("pod {name} is being deleted, cannot be assigned to a host"),
            ));
        }
        if let Some(uid) = binding
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
        {
            if uid != object::uid(old) {
                return Err(ApiError::conflict_with(
                    pods,
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                        object::uid(old)
                    ),
                ));
            }
        }
        let bound = old
            .pointer("/spec/nodeName")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !bound.is_empty() {
            return Err(ApiError::conflict_with(
                pods,
                name,
                &format!("pod {name} is already assigned to node {bound:?}"),
            ));
        }
        let mut new = old.clone();
        if let Some(spec) = new.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("nodeName".into(), json!(node));
        } else if let Some(m) = new.as_object_mut() {
            m.insert("spec".into(), json!({"nodeName": node}));
        }
        if let Some(annotations) = binding
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
        {
            let meta = object::metadata_mut(&mut new)
                .ok_or_else(|| ApiError::internal("bind", "pod is not an object"))?;
            let target = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(t) = target.as_object_mut() {
                for (k, v) in annotations {
                    t.insert(k.clone(), v.clone());
                }
            }
        }
        set_pod_scheduled(&mut new);
        if opts.dry_run {
            return Ok(());
        }
        match store.update(&key, new, current.revision).await {
            Ok(_) => return Ok(()),
            Err(storage::Error::Conflict { .. }) => continue,
            Err(e) => return Err(storage_error(pods, name, e)),
        }
    }
    Err(ApiError::conflict(pods, name))
}

/// Sets the `PodScheduled` condition of `pod` to `True`, as the scheduler's binding does.
fn set_pod_scheduled(pod: &mut Value) {
    let Some(m) = pod.as_object_mut() else { return };
    let status = m.entry("status").or_insert_with(|| json!({}));
    let Some(status) = status.as_object_mut() else {
        return;
    };
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    let Some(conditions) = conditions.as_array_mut() else {
        return;
    };
    let now = object::now_rfc3339(jiff::Timestamp::now());
    if let Some(c) = conditions
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("PodScheduled"))
    {
        if c.get("status").and_then(Value::as_str) != Some("True") {
            c["status"] = json!("True");
            c["lastTransitionTime"] = json!(now);
        }
        if let Some(o) = c.as_object_mut() {
            o.remove("reason");
            o.remove("message");
        }
    } else {
        conditions.push(json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now}));
    }
}
