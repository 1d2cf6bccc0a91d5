//! GET of one object (and of its `/status`, which is the same object).

use axum::body::Body;
use axum::response::Response;

use crate::error::ApiResult;
use crate::http::encode::cached_response;
use crate::http::handlers::ResourceRequest;
use crate::rest;

/// The object `name` in the asked-for representation, or 404.
pub fn get(req: &ResourceRequest<'_>, name: &str) -> ApiResult<Response<Body>> {
    let obj = rest::get(req.store(), req.info, req.namespace, name)?;
    Ok(cached_response(req.resources(), req.info, &obj, req.out))
}
