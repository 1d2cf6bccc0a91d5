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
use crate::object;
use crate::rest::UpdateTarget;
use crate::watch_cache::CachedObject;

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
pub(crate) fn success(code: StatusCode) -> Response {
    json_value(
        code,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code.as_u16()}),
    )
}

/// `resp` with one `Warning: 299` header per warning.
pub(crate) fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = http::HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            resp.headers_mut().append(http::header::WARNING, v);
        }
    }
    resp
}

/// An object with 200 OK in the asked-for representation.
pub(crate) fn cached_response(
    info: &ResourceInfo,
    obj: &Arc<CachedObject>,
    out: Output,
) -> Response {
    object_response(info, StatusCode::OK, obj, out)
}

/// An object in the asked-for representation; plain JSON reuses the cached serialization.
pub(crate) fn object_response(
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
pub(crate) fn written_response(
    info: &ResourceInfo,
    code: StatusCode,
    obj: &Arc<CachedObject>,
    target: UpdateTarget,
    out: Output,
) -> Response {
    match target {
        UpdateTarget::Main => object_response(info, code, obj, out),
        UpdateTarget::Status | UpdateTarget::Subresource(_) => {
            json_response(code, obj.json().clone())
        }
    }
}

/// Response to a DELETE that removed the object: the object for kinds whose storage returns it
/// (`ReturnDeletedObject`), a success Status otherwise.
pub(crate) fn deleted_response(info: &ResourceInfo, obj: &Value) -> Response {
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
