//! PATCH of an object or of its `/status`: apply the patch to the stored object and update.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::StatusCode;
use serde_json::Value;

use rkcm_apimachinery::patch::{self, PatchType};

use crate::error::{ApiError, ApiResult};
use crate::http::body::read_body;
use crate::http::decode::patch_type;
use crate::http::encode::{with_warnings, written_response};
use crate::http::field_manager::{self, OptionsKind};
use crate::http::field_validation::{
    check_patched_fields, field_validation, remove_path, Decoding, FieldCheck,
};
use crate::http::handlers::{apply, ResourceRequest};
use crate::rest::{self, UpdateSource, UpdateTarget};
use rkcm_storage::object;
use rkcm_storage::watch_cache::CachedObject;

/// Patches the part of object `name` that `target` names. A patch of the object answers in
/// the asked-for representation, one of `/status` with the object as JSON.
pub async fn patch(
    req: &ResourceRequest<'_>,
    name: &str,
    body: Body,
    target: UpdateTarget,
) -> ApiResult<Response> {
    let bytes = read_body(req.headers, body).await?;
    if patch_type(req.info, req.headers)? == PatchType::Apply {
        let applied = apply::apply(req, name, &bytes, target).await?;
        let code = if applied.created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        return Ok(written_response(
            req.resources(),
            req.info,
            code,
            &applied.object,
            target,
            req.out,
        ));
    }
    field_manager::validate(req.params, OptionsKind::Patch { apply: false })?;
    let (patched, warnings) = patch_object(req, name, &bytes, target).await?;
    Ok(with_warnings(
        written_response(
            req.resources(),
            req.info,
            StatusCode::OK,
            &patched,
            target,
            req.out,
        ),
        &warnings,
    ))
}

/// Applies a patch of `patch_type` to `original`, an object of `api_version`/`kind`; errors
/// as kube answers them (400 malformed, 415 unsupported, 422 failed).
pub fn apply_patch(
    patch_type: PatchType,
    original: &Value,
    bytes: &[u8],
    api_version: &str,
    kind: &str,
) -> ApiResult<Value> {
    patch::apply(patch_type, original, bytes, api_version, kind).map_err(|e| {
        match e.status_code() {
            400 => ApiError::bad_request(e.to_string()),
            415 => ApiError::unsupported_media_type(e.to_string()),
            _ => ApiError::new(422, "Invalid", e.to_string()),
        }
    })
}

/// Whether `patched` sets another resourceVersion than `original` (the object the patch was
/// applied to) has: such a patch is a precondition, not retried on conflict. Otherwise the
/// update is pinned to `revision`, the revision the patch was applied to.
pub fn pin_resource_version(patched: &mut Value, original: &Value, revision: i64) -> bool {
    let pinned = match patched.pointer("/metadata/resourceVersion") {
        Some(v) if !v.is_null() => Some(v) != original.pointer("/metadata/resourceVersion"),
        _ => false,
    };
    if !pinned {
        object::set_resource_version(patched, revision);
    }
    pinned
}

/// PATCH other than an apply: applies the body to the current object and updates it, retrying on conflicts with
/// other writers unless the patch pins a resourceVersion.
async fn patch_object(
    req: &ResourceRequest<'_>,
    name: &str,
    bytes: &Bytes,
    target: UpdateTarget,
) -> ApiResult<(Arc<CachedObject>, Vec<String>)> {
    let (info, ns) = (req.info, req.namespace);
    let patch_type = patch_type(req.info, req.headers)?;
    let opts = req.write_options()?;
    let mode = field_validation(req.params)?;
    let api_version = info.api_version();
    let mut last = None;
    let mut checked: Option<FieldCheck> = None;
    for _ in 0..rest::UPDATE_ATTEMPTS {
        let original = rest::Parsed::new(rest::get(req.store(), info, ns, name)?);
        let mut patched = apply_patch(patch_type, &original.value, bytes, &api_version, info.kind)?;
        if !patched.is_object() {
            return Err(ApiError::bad_request(
                "the patched object is not a JSON object",
            ));
        }
        if checked.is_none() {
            let decoding = match patch_type {
                PatchType::StrategicMerge => Decoding::StrategicPatch(bytes),
                _ => Decoding::Patched,
            };
            checked = Some(check_patched_fields(
                req.resources(),
                info,
                &patched,
                mode,
                decoding,
            )?);
        }
        for path in checked.iter().flat_map(|c| &c.unknown) {
            remove_path(&mut patched, path);
        }
        if target == UpdateTarget::Main {
            req.check_write(name, &patched)?;
        }
        let pinned = pin_resource_version(&mut patched, &original.value, original.object.revision);
        let updated = rest::update_from(
            req.store(),
            req.resources(),
            info,
            ns,
            name,
            patched,
            target,
            UpdateSource::Patch,
            opts.clone(),
            Some(original),
        )
        .await;
        match updated {
            Err(e) if e.reason == "Conflict" && !pinned => last = Some(e),
            r => return r.map(|v| (v.object, checked.map(|c| c.warnings).unwrap_or_default())),
        }
    }
    Err(last.unwrap_or_else(|| ApiError::conflict(info, name)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patches_pin_the_revision_they_were_applied_to_unless_they_name_another() {
        let original = json!({"metadata": {"name": "a", "resourceVersion": "5"}});
        let mut same = original.clone();
        assert!(!pin_resource_version(&mut same, &original, 5));
        assert_eq!(same["metadata"]["resourceVersion"], "5");
        let mut unset = json!({"metadata": {"name": "a", "resourceVersion": null}});
        assert!(!pin_resource_version(&mut unset, &original, 5));
        assert_eq!(unset["metadata"]["resourceVersion"], "5");
        let mut other = json!({"metadata": {"name": "a", "resourceVersion": "3"}});
        assert!(pin_resource_version(&mut other, &original, 5));
        assert_eq!(other["metadata"]["resourceVersion"], "3");
    }
}
