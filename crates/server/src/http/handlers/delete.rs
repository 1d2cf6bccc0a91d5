//! DELETE of one object.

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;

use crate::error::ApiResult;
use crate::http::body::read_body;
use crate::http::encode::{deleted_response, json_value};
use crate::http::handlers::ResourceRequest;
use crate::rest::{self, Deleted};

/// Deletes object `name` with the `DeleteOptions` of the query and body: the object (or a
/// success Status) once it is gone, the object while finalizers or a grace period hold it.
pub async fn delete(req: &ResourceRequest<'_>, name: &str, body: Body) -> ApiResult<Response> {
    let bytes = read_body(req.headers, body).await?;
    let opts = req.delete_options(&bytes)?;
    match rest::delete(
        req.store(),
        req.resources(),
        req.info,
        req.namespace,
        name,
        &opts,
    )
    .await?
    {
        Deleted::Gone(obj) => Ok(deleted_response(req.info, &obj)),
        Deleted::Pending(obj) => Ok(json_value(StatusCode::OK, &obj)),
    }
}
