//! Response encoding: objects in the representation asked for (JSON, Table, metadata),
//! `Status` bodies and `Warning` headers.

use std::sync::Arc;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{header, StatusCode};
use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;

use crate::error::ApiError;
use crate::http::negotiate::Output;
use crate::http::table;
use crate::rest::{Resources, UpdateTarget};
use rkcm_storage::object;
use rkcm_storage::watch_cache::CachedObject;

/// A JSON response.
pub fn json_response(code: StatusCode, body: impl Into<Body>) -> Response {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body.into())
        .unwrap_or_else(|_| code.into_response())
}

/// A JSON response of a value.
pub fn json_value(code: StatusCode, value: &serde_json::Value) -> Response {
    match serde_json::to_vec(value) {
        Ok(b) => json_response(code, b),
        Err(e) => ApiError::internal("encoding the response", e).into_response(),
    }
}

/// A success `Status` with `code`.
pub fn success(code: StatusCode) -> Response {
    json_value(
        code,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code.as_u16()}),
    )
}

/// `resp` with one `Warning: 299` header per warning.
pub fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = http::HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            resp.headers_mut().append(http::header::WARNING, v);
        }
    }
    resp
}

/// An object with 200 OK in the asked-for representation.
pub fn cached_response(
    resources: &dyn Resources,
    info: &ResourceInfo,
    obj: &Arc<CachedObject>,
    out: Output,
) -> Response {
    object_response(resources, info, StatusCode::OK, obj, out)
}

/// An object in the asked-for representation; plain JSON reuses the cached serialization.
pub fn object_response(
    resources: &dyn Resources,
    info: &ResourceInfo,
    code: StatusCode,
    obj: &Arc<CachedObject>,
    out: Output,
) -> Response {
    match out {
        Output::Object => json_response(code, obj.json().clone()),
        Output::Table(include) => {
            let rv = obj.revision.to_string();
            json_value(
                code,
                &table::table(
                    resources,
                    info,
                    &[&obj.value()],
                    include,
                    json!({"resourceVersion": rv}),
                ),
            )
        }
        Output::Metadata => json_value(code, &table::partial_metadata(&obj.metadata_only())),
    }
}

/// The answer to a write of `target`: the object in the asked-for representation, but plain
/// JSON for `/status`, `/finalize` and `/approval`.
pub fn written_response(
    resources: &dyn Resources,
    info: &ResourceInfo,
    code: StatusCode,
    obj: &Arc<CachedObject>,
    target: UpdateTarget,
    out: Output,
) -> Response {
    match target {
        UpdateTarget::Main => object_response(resources, info, code, obj, out),
        UpdateTarget::Status | UpdateTarget::Subresource(_) => {
            json_response(code, obj.json().clone())
        }
    }
}

/// Response to a DELETE that removed the object: the object for kinds whose storage returns it
/// (`ReturnDeletedObject`), a success Status otherwise.
pub fn deleted_response(info: &ResourceInfo, obj: &Value) -> Response {
    let returns_object =
        info.group.is_empty() && matches!(info.kind, "Pod" | "Namespace" | "Node" | "Service");
    if returns_object {
        return json_value(StatusCode::OK, obj);
    }
    let mut details =
        json!({"name": object::name(obj), "kind": info.plural, "uid": object::uid(obj)});
    if !info.group.is_empty() {
        details["group"] = json!(info.group);
    }
    json_value(
        StatusCode::OK,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}),
    )
}
