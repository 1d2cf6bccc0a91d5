//! The `/scale` subresource: an `autoscaling/v1` Scale read from and written to `spec.replicas`.

use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;

use rkcm_apimachinery::field::FieldError;
use rkcm_storage as storage;
use rkcm_storage::object;
use rkcm_storage::store::Store;

use super::keys::{key, UPDATE_ATTEMPTS};
use super::request_checks::check_uid_precondition;
use super::resources::Resources;
use super::system_metadata::{keep_system_metadata, same_content};
use super::update::UpdateSource;
use super::write::{storage_error, WriteOptions};
use crate::error::{ApiError, ApiResult};

/// The `autoscaling/v1` Scale of an object.
pub fn scale_of(resources: &dyn Resources, info: &ResourceInfo, obj: &Value) -> ApiResult<Value> {
    let strategy = resources.strategy(info);
    let (spec, status, selector) = strategy
        .scale_replicas(obj)
        .ok_or_else(ApiError::no_route)?;
    let meta = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut scale_meta = serde_json::Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(field) {
            scale_meta.insert(field.into(), v.clone());
        }
    }
    let mut status_obj = json!({"replicas": status});
    if !selector.is_empty() {
        status_obj["selector"] = json!(selector);
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": Value::Object(scale_meta),
        "spec": {"replicas": spec},
        "status": status_obj,
    }))
}

/// Writes `spec.replicas` of object `name` from a Scale (PUT `/scale`, or the result of a PATCH
/// as `source` says); returns the new Scale. A PUT's `metadata.uid` is a precondition (409); the
/// uid of a patched Scale is not looked at, as kube's `scaleUpdatedObjectInfo` ignores it.
#[allow(clippy::too_many_arguments)]
pub async fn update_scale(
    store: &Store,
    resources: &dyn Resources,
    info: &'static ResourceInfo,
    namespace: Option<&str>,
    name: &str,
    scale: &Value,
    source: UpdateSource,
    opts: WriteOptions,
) -> ApiResult<Value> {
    let strategy = resources.strategy(info);
    if scale
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k != "Scale")
    {
        return Err(ApiError::bad_request(
            "the body of a scale request must be a Scale",
        ));
    }
    let replicas = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if replicas < 0 || replicas > i64::from(i32::MAX) {
        let mut e = ApiError::invalid(
            info,
            name,
            &[FieldError::invalid(
                "spec.replicas",
                &json!(replicas),
                "must be greater than or equal to 0",
            )],
        );
        e.message = e.message.replacen(
            &format!(
                "{}{}",
                info.kind,
                if info.group.is_empty() {
                    String::new()
                } else {
                    format!(".{}", info.group)
                }
            ),
            "Scale.autoscaling",
            1,
        );
        e.details.kind = Some("Scale".into());
        e.details.group = Some("autoscaling".into());
        return Err(e);
    }
    let key = key(info, namespace, name);
    for _ in 0..UPDATE_ATTEMPTS {
        let current = store
            .get(&key)
            .ok_or_else(|| ApiError::not_found(info, name))?;
        let old = &current.value();
        if source == UpdateSource::Put {
            check_uid_precondition(info, name, scale, old)?;
        }
        match object::resource_version(scale) {
            Ok(Some(rv)) if rv != current.revision => return Err(ApiError::conflict(info, name)),
            Ok(_) => {}
            Err(bad) => {
                return Err(ApiError::bad_request(format!(
                    "invalid resourceVersion {bad:?}"
                )))
            }
        }
        let mut new = old.clone();
        strategy
            .set_scale_replicas(&mut new, replicas as i32)
            .map_err(|e| ApiError::invalid(info, name, &[e]))?;
        strategy.prepare_for_update(&mut new, old);
        super::managed_fields::track_update(resources, info, Some(old), &mut new, &opts, "scale");
        keep_system_metadata(&mut new, old);
        let errors = strategy.validate_update(&new, old);
        if !errors.is_empty() {
            return Err(ApiError::invalid(info, name, &errors));
        }
        if same_content(&new, old) || opts.dry_run {
            let mut out = new;
            object::set_resource_version(&mut out, current.revision);
            return scale_of(resources, info, &out);
        }
        match store.update(&key, new, current.revision).await {
            Ok(stored) => return scale_of(resources, info, &stored.value()),
            Err(storage::Error::Conflict { .. }) => continue,
            Err(e) => return Err(storage_error(info, name, e)),
        }
    }
    Err(ApiError::conflict(info, name))
}
