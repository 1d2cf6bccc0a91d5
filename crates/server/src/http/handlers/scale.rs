//! The `/scale` subresource: an `autoscaling/v1` `Scale` view of a workload's replicas.

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;

use crate::error::{ApiError, ApiResult};
use crate::http::body::read_body;
use crate::http::decode::{decode_json, patch_type};
use crate::http::encode::json_value;
use crate::http::handlers::patch::{apply_patch, pin_resource_version};
use crate::http::handlers::ResourceRequest;
use crate::rest::{self, UpdateSource};

/// The Scale of object `name`.
pub fn get(req: &ResourceRequest<'_>, name: &str) -> ApiResult<Response> {
    let obj = rest::get(req.store(), req.info, req.namespace, name)?;
    Ok(json_value(
        StatusCode::OK,
        &rest::scale_of(req.resources(), req.info, &obj.value())?,
    ))
}

/// PUT of a Scale: sets `spec.replicas`; the new Scale.
pub async fn update(req: &ResourceRequest<'_>, name: &str, body: Body) -> ApiResult<Response> {
    let bytes = read_body(req.headers, body).await?;
    let scale = decode_json(req.headers, &bytes)?;
    let new = rest::update_scale(
        req.store(),
        req.resources(),
        req.info,
        req.namespace,
        name,
        &scale,
        UpdateSource::Put,
        req.write_options()?,
    )
    .await?;
    Ok(json_value(StatusCode::OK, &new))
}

/// PATCH of a Scale: the patch applies to the current Scale, retried on conflicts with other
/// writers unless it pins a resourceVersion; the new Scale.
pub async fn patch(req: &ResourceRequest<'_>, name: &str, body: Body) -> ApiResult<Response> {
    let (info, ns) = (req.info, req.namespace);
    let bytes = read_body(req.headers, body).await?;
    let patch_type = patch_type(req.info, req.headers)?;
    let opts = req.write_options()?;
    let mut last = None;
    for _ in 0..rest::UPDATE_ATTEMPTS {
        let current = rest::get(req.store(), info, ns, name)?;
        let scale = rest::scale_of(req.resources(), info, &current.value())?;
        let mut patched = apply_patch(patch_type, &scale, &bytes, "autoscaling/v1", "Scale")?;
        let pinned = pin_resource_version(&mut patched, &scale, current.revision);
        let updated = rest::update_scale(
            req.store(),
            req.resources(),
            info,
            ns,
            name,
            &patched,
            UpdateSource::Patch,
            opts.clone(),
        )
        .await;
        match updated {
            Err(e) if e.reason == "Conflict" && !pinned => last = Some(e),
            r => return r.map(|s| json_value(StatusCode::OK, &s)),
        }
    }
    Err(last.unwrap_or_else(|| ApiError::conflict(info, name)))
}
