//! POST on a collection: create an object.

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;

use crate::error::{ApiError, ApiResult};
use crate::http::body::read_body;
use crate::http::decode::decode_object;
use crate::http::encode::{object_response, with_warnings};
use crate::http::field_manager::{self, OptionsKind};
use crate::http::handlers::ResourceRequest;
use crate::rest;

/// Creates the object of the body; 201 Created with the stored object.
pub async fn create(req: &ResourceRequest<'_>, body: Body) -> ApiResult<Response> {
    let info = req.info;
    if info.namespaced() && req.namespace.is_none() {
        return Err(ApiError::method_not_allowed("POST"));
    }
    field_manager::validate(req.params, OptionsKind::Create)?;
    let bytes = read_body(req.headers, body).await?;
    let (obj, warnings) = decode_object(req.resources(), info, req.headers, &bytes, req.params)?;
    req.check_write("", &obj)?;
    let created = rest::create(
        req.store(),
        req.resources(),
        info,
        req.namespace,
        obj,
        req.write_options()?,
    )
    .await?;
    Ok(with_warnings(
        object_response(
            req.resources(),
            info,
            StatusCode::CREATED,
            &created,
            req.out,
        ),
        &warnings,
    ))
}
