//! POST of a `Binding`: assign a pod to a node (`pods/{name}/binding`, or the namespace's
//! `bindings` collection).

use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, StatusCode};

use crate::error::{ApiError, ApiResult};
use crate::http::body::read_body;
use crate::http::decode::{decode_json, write_options};
use crate::http::encode::success;
use crate::http::handlers::ResourceRequest;
use crate::http::params::Params;
use crate::http::SharedState;
use crate::object;
use crate::rest;

/// `POST pods/{name}/binding`: the binding's name, when it has one, must be the pod's.
pub async fn bind(req: &ResourceRequest<'_>, name: &str, body: Body) -> ApiResult<Response> {
    let ns = req.namespace.ok_or_else(ApiError::no_route)?;
    let bytes = read_body(req.headers, body).await?;
    let binding = decode_json(req.headers, &bytes)?;
    let bind_name = object::name(&binding);
    if !bind_name.is_empty() && bind_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({bind_name}) does not match the name on the URL ({name})"
        )));
    }
    rest::bind(req.store(), ns, name, &binding, req.write_options()?).await?;
    Ok(success(StatusCode::CREATED))
}

/// `POST namespaces/{ns}/bindings`: binds the pod the binding names.
pub async fn bind_collection(
    state: &SharedState,
    ns: &str,
    headers: &HeaderMap,
    params: &Params,
    body: Body,
) -> ApiResult<Response> {
    let binding = decode_json(headers, &read_body(headers, body).await?)?;
    let name = object::name(&binding).to_string();
    rest::bind(state.store(), ns, &name, &binding, write_options(params)?).await?;
    Ok(success(StatusCode::CREATED))
}
