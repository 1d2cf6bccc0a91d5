//! PUT of an object, of its `/status` or of a namespace's `/finalize`.

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;

use crate::error::ApiResult;
use crate::http::body::read_body;
use crate::http::decode::decode_object;
use crate::http::encode::{with_warnings, written_response};
use crate::http::field_manager::{self, OptionsKind};
use crate::http::handlers::ResourceRequest;
use crate::rest::{self, UpdateSource, UpdateTarget};

/// Replaces the part of object `name` that `target` names with the body. An update of the
/// object answers in the asked-for representation, 201 Created when it created the object;
/// `/status` and `/finalize` answer with the object as JSON.
pub async fn update(
    req: &ResourceRequest<'_>,
    name: &str,
    body: Body,
    target: UpdateTarget,
) -> ApiResult<Response> {
    let info = req.info;
    field_manager::validate(req.params, OptionsKind::Update)?;
    let bytes = read_body(req.headers, body).await?;
    let (obj, warnings) = decode_object(req.resources(), info, req.headers, &bytes, req.params)?;
    if target == UpdateTarget::Main {
        req.check_write(name, &obj)?;
    }
    let updated = rest::update(
        req.store(),
        req.resources(),
        info,
        req.namespace,
        name,
        obj,
        target,
        UpdateSource::Put,
        req.write_options()?,
    )
    .await?;
    let code = if updated.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let resp = written_response(
        req.resources(),
        info,
        code,
        &updated.object,
        target,
        req.out,
    );
    Ok(with_warnings(resp, &warnings))
}
