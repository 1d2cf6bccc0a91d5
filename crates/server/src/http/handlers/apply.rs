//! Server-side apply: PATCH with `Content-Type: application/apply-patch+yaml`.
//!
//! Mirrors `applyPatcher` of kube's `handlers/patch.go`: the body (YAML or JSON) is the
//! manager's whole intent for the object; the field manager merges it into the stored object,
//! removes what the manager stopped applying, and refuses with 409 the fields other managers
//! own unless `force=true`. An object that does not exist is created (`forceAllowCreate`).

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use rkcm_apimachinery::apply::ApplyError;

use crate::error::{ApiError, ApiResult, Cause};
use crate::http::field_manager::{self, OptionsKind};
use crate::http::field_validation::field_validation;
use crate::http::handlers::patch::pin_resource_version;
use crate::http::handlers::ResourceRequest;
use crate::rest::{self, UpdateSource, UpdateTarget};
use rkcm_storage::object;
use rkcm_storage::watch_cache::CachedObject;

/// What an apply wrote.
pub(crate) struct Applied {
    /// The stored object.
    pub object: Arc<CachedObject>,
    /// Whether the apply created the object (kube answers 201 then).
    pub created: bool,
}

/// Decodes an apply body: JSON, else YAML (400 `error decoding YAML` when neither).
pub(crate) fn decode_apply_body(bytes: &[u8]) -> ApiResult<Value> {
    let value = match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => v,
        Err(_) => serde_norway::from_slice::<Value>(bytes)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?,
    };
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: the apply patch must be an object",
        ));
    }
    Ok(value)
}

/// The API error of a refused apply: 400, or 409 Conflict with one `FieldManagerConflict`
/// cause per field (`NewApplyConflict`).
fn apply_error(e: ApplyError) -> ApiError {
    match e {
        ApplyError::BadRequest(m) => ApiError::bad_request(m),
        // A plain error in kube: `ErrorToAPIStatus` makes it a 500 without a reason.
        ApplyError::TypedPatch(m) => ApiError::new(500, "", m),
        ApplyError::Conflicts { message, causes } => {
            let mut err = ApiError::new(409, "Conflict", message);
            err.details.causes = causes
                .into_iter()
                .map(|(message, field)| Cause {
                    reason: "FieldManagerConflict".into(),
                    message,
                    field,
                })
                .collect();
            err
        }
    }
}

/// Applies `bytes` for the request's field manager to the part of object `name` that `target`
/// names, creating the object when it does not exist.
pub(crate) async fn apply(
    req: &ResourceRequest<'_>,
    name: &str,
    bytes: &Bytes,
    target: UpdateTarget,
) -> ApiResult<Applied> {
    let (info, ns) = (req.info, req.namespace);
    field_manager::validate(req.params, OptionsKind::Patch { apply: true })?;
    let force = field_manager::force(req.params)?;
    let manager = req.params.non_empty("fieldManager").unwrap_or_default();
    let patch = decode_apply_body(bytes)?;
    // Unknown fields are not a matter of `fieldValidation` here: the field manager refuses
    // them whatever it says, as kube's type converter does (`applyPatcher` only checks the
    // YAML for duplicate keys, which decoding it has already collapsed).
    field_validation(req.params)?;
    let fm = rest::Resources::field_manager(req.resources(), info, target.subresource());
    let mut opts = req.write_options()?;
    // The field manager below records the apply; the update path must not record it again.
    opts.field_manager = None;
    let mut last = None;
    for _ in 0..rest::UPDATE_ATTEMPTS {
        let now = jiff::Timestamp::now();
        let current = match rest::get(req.store(), info, ns, name) {
            Ok(c) => c,
            Err(e) if e.code == 404 && target == UpdateTarget::Main => {
                let mut obj = fm
                    .apply(None, &patch, manager, force, now)
                    .map_err(apply_error)?;
                match object::meta_str(&obj, "name") {
                    None | Some("") => object::set_meta(&mut obj, "name", name.into()),
                    Some(n) if n == name => {}
                    Some(n) => {
                        return Err(ApiError::bad_request(format!(
                        "the name of the object ({n}) does not match the name on the URL ({name})"
                    )))
                    }
                }
                req.check_write("", &obj)?;
                match rest::create(req.store(), req.resources(), info, ns, obj, opts.clone()).await
                {
                    // Someone created it in between: apply to theirs.
                    Err(e) if e.reason == "AlreadyExists" => {
                        last = Some(e);
                        continue;
                    }
                    r => {
                        return r.map(|object| Applied {
                            object,
                            created: true,
                        })
                    }
                }
            }
            Err(e) => return Err(e),
        };
        let live = rest::Parsed::new(current);
        let mut applied = fm
            .apply(Some(&live.value), &patch, manager, force, now)
            .map_err(apply_error)?;
        if target == UpdateTarget::Main {
            req.check_write(name, &applied)?;
        }
        let pinned = pin_resource_version(&mut applied, &live.value, live.object.revision);
        let updated = rest::update_from(
            req.store(),
            req.resources(),
            info,
            ns,
            name,
            applied,
            target,
            UpdateSource::Patch,
            opts.clone(),
            Some(live),
        )
        .await;
        match updated {
            Err(e) if e.reason == "Conflict" && !pinned => last = Some(e),
            r => {
                return r.map(|u| Applied {
                    object: u.object,
                    created: false,
                })
            }
        }
    }
    Err(last.unwrap_or_else(|| ApiError::conflict(info, name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn apply_bodies_are_json_or_yaml_objects() {
        let json = decode_apply_body(br#"{"apiVersion":"v1","kind":"ConfigMap"}"#).unwrap();
        assert_eq!(json["kind"], "ConfigMap");
        let yaml =
            decode_apply_body(b"apiVersion: v1\nkind: ConfigMap\ndata:\n  a: \"1\"\n").unwrap();
        assert_eq!(yaml["data"]["a"], "1");
        let e = decode_apply_body(b"- a\n- b\n").unwrap_err();
        assert_eq!(e.code, 400);
        let e = decode_apply_body(b"a: [").unwrap_err();
        assert!(
            e.message.starts_with("error decoding YAML"),
            "{}",
            e.message
        );
    }
}
