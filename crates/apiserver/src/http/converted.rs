//! Resources served in a version other than the one they are stored in (autoscaling/v1
//! HorizontalPodAutoscalers, stored as autoscaling/v2): the request is converted to the storage
//! version and served there, and the objects of the answer are converted back, as kube's
//! codecs do around one storage (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers`).
//!
//! Bodies are converted (JSON or protobuf in, JSON to the storage version); a PATCH is applied
//! to the object in the request's version and stored with a PUT, retried on conflict as kube
//! retries patches; answers (objects, lists and watch events) are converted object by object.
//! Tables and Statuses are the same in every version and pass through.
//!
//! Custom resources whose CRD converts by webhook are converted by calling it: a failed
//! conversion fails the request with a 500 whose message is kube's, and ends a watch with an
//! `ERROR` event, as kube-apiserver answers an object its codec cannot convert.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use serde_json::Value;

use rkcm_apimachinery::patch::PatchType;

use crate::auth::UserInfo;
use crate::error::{ApiError, ApiResult};
use crate::http::body::read_body;
use crate::http::decode::{decode_json, patch_type};
use crate::http::encode::with_warnings;
use crate::http::field_validation::{
    check_fields, check_patched_fields, field_validation, remove_path, Decoding,
};
use crate::http::handlers::patch::{apply_patch, pin_resource_version};
use crate::http::negotiate::{IncludeObject, Output};
use crate::http::path::ResourcePath;
use crate::http::SharedState;
use crate::rest;
pub use rkcm_registry::conversion::{
    conversion, stored_version_conversion, Conversion, ConversionFailed,
};
use rkcm_storage::store::Store;

/// Serves a request on a converted resource by serving its storage version.
#[allow(clippy::too_many_arguments)]
pub async fn serve(
    state: &SharedState,
    conversion: Conversion,
    path: &ResourcePath,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Body,
    user: Option<&UserInfo>,
) -> ApiResult<Response> {
    let storage_uri = storage_uri(&conversion, uri)?;
    let mut inner_headers = headers.clone();
    inner_headers.remove(header::CONTENT_LENGTH);
    let params = crate::http::params::Params::parse(uri.query())?;
    let watch = *method == Method::GET && (path.watch || params.flag("watch"));
    let (resp, warnings) = match *method {
        Method::POST | Method::PUT => {
            let bytes = read_body(headers, body).await?;
            let obj = decode_json(headers, &bytes)?;
            if !obj.is_object() {
                return Err(ApiError::bad_request(
                    "the request body must be a JSON object",
                ));
            }
            let (obj, warnings) = checked(
                state.scope.resources.as_ref(),
                &conversion,
                obj,
                Some(&bytes),
                &params,
                Decoding::Object,
            )?;
            let stored = conversion
                .to_storage(state.store(), &obj)
                .await
                .map_err(failed)?;
            let body = to_json_body(&stored)?;
            inner_headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            let resp = crate::http::resource::dispatch_stored(
                state,
                method,
                &storage_uri,
                &inner_headers,
                Body::from(body),
                user,
            )
            .await?;
            (resp, warnings)
        }
        Method::PATCH => {
            let name = path.name.as_deref().ok_or_else(ApiError::no_route)?;
            let bytes = read_body(headers, body).await?;
            patch(
                state,
                &conversion,
                path,
                name,
                &storage_uri,
                inner_headers,
                &bytes,
                &params,
                user,
            )
            .await?
        }
        _ => {
            // A webhook changes more than apiVersion, so a Table is printed from the objects
            // once converted, with the served version's columns.
            let table = match crate::http::negotiate::output(headers, &params)? {
                Output::Table(include)
                    if conversion.webhook.is_some() && *method == Method::GET && !watch =>
                {
                    inner_headers
                        .insert(header::ACCEPT, HeaderValue::from_static("application/json"));
                    Some(include)
                }
                _ => None,
            };
            let resp = crate::http::resource::dispatch_stored(
                state,
                method,
                &storage_uri,
                &inner_headers,
                body,
                user,
            )
            .await?;
            if let Some(include) = table {
                let resp =
                    convert_response(conversion.clone(), state.store().clone(), resp, false).await;
                return Ok(as_table(state, &conversion, resp, include).await);
            }
            (resp, Vec::new())
        }
    };
    Ok(with_warnings(
        convert_response(conversion, state.store().clone(), resp, watch).await,
        &warnings,
    ))
}

/// A converted answer (an object or a list of them) as a Table of the served version; other
/// answers (Statuses) as they are.
async fn as_table(
    state: &SharedState,
    conversion: &Conversion,
    resp: Response,
    include: IncludeObject,
) -> Response {
    let (parts, body) = resp.into_parts();
    let bytes = match axum::body::to_bytes(body, crate::http::MAX_BODY_BYTES * 64).await {
        Ok(b) => b,
        Err(e) => return ApiError::internal("reading the answer to print", e).into_response(),
    };
    let value: Value = match serde_json::from_slice(&bytes) {
        Ok(v) if parts.status.is_success() => v,
        _ => return Response::from_parts(parts, Body::from(bytes)),
    };
    let served = conversion.served;
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    let table = if kind == served.kind {
        let rv = value
            .pointer("/metadata/resourceVersion")
            .cloned()
            .unwrap_or(Value::Null);
        crate::http::table::table(
            state.scope.resources.as_ref(),
            served,
            &[&value],
            include,
            serde_json::json!({"resourceVersion": rv}),
        )
    } else if kind == format!("{}List", served.kind) {
        let items: Vec<&Value> = value
            .get("items")
            .and_then(Value::as_array)
            .map(|items| items.iter().collect())
            .unwrap_or_default();
        crate::http::table::table(
            state.scope.resources.as_ref(),
            served,
            &items,
            include,
            value.get("metadata").cloned().unwrap_or_default(),
        )
    } else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    crate::http::json_value(parts.status, &table)
}

/// A conversion that failed, answered as kube answers an error that is no API status: 500,
/// without a reason, the message as it is.
fn failed(e: ConversionFailed) -> ApiError {
    ApiError::new(500, "", e.0)
}

/// The `ERROR` event ending a watch whose object could not be converted: kube's watchers
/// send `NewInternalError(err)`.
fn failed_event(e: &ConversionFailed) -> Value {
    serde_json::json!({"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": format!("Internal error occurred: {}", e.0), "reason": "InternalError",
        "details": {"causes": [{"message": e.0}]}, "code": 500}})
}

fn storage_uri(conversion: &Conversion, uri: &Uri) -> ApiResult<Uri> {
    let path = conversion.storage_path(uri.path());
    let full = match uri.query() {
        Some(q) => format!("{path}?{q}"),
        None => path,
    };
    full.parse()
        .map_err(|e| ApiError::bad_request(format!("invalid request path: {e}")))
}

fn to_json_body(obj: &Value) -> ApiResult<Vec<u8>> {
    serde_json::to_vec(obj).map_err(|e| ApiError::internal("encoding the converted object", e))
}

/// `fieldValidation` against the served version's schema of `obj`, parsed from the request
/// body `bytes`, or made by a patch when there is none (protobuf bodies carry no unknown
/// fields); unknown fields are dropped before conversion.
fn checked(
    resources: &dyn rest::Resources,
    conversion: &Conversion,
    mut obj: Value,
    bytes: Option<&[u8]>,
    params: &crate::http::params::Params,
    decoding: Decoding<'_>,
) -> ApiResult<(Value, Vec<String>)> {
    if bytes.is_some_and(|b| b.starts_with(crate::protobuf::MAGIC)) {
        return Ok((obj, Vec::new()));
    }
    let mode = field_validation(params)?;
    let served = conversion.served;
    let check = match bytes {
        Some(bytes) => check_fields(resources, served, bytes, &obj, mode, decoding)?,
        None => check_patched_fields(resources, served, &obj, mode, decoding)?,
    };
    for path in &check.unknown {
        remove_path(&mut obj, path);
    }
    Ok((obj, check.warnings))
}

/// PATCH: the patch is applied to the object in the served version, which is then stored with
/// a PUT of its storage version pinned to the revision patched; retried when another writer
/// got in between, unless the patch names a resourceVersion itself.
#[allow(clippy::too_many_arguments)]
async fn patch(
    state: &SharedState,
    conversion: &Conversion,
    path: &ResourcePath,
    name: &str,
    storage_uri: &Uri,
    mut headers: HeaderMap,
    bytes: &Bytes,
    params: &crate::http::params::Params,
    user: Option<&UserInfo>,
) -> ApiResult<(Response, Vec<String>)> {
    let patch_type = patch_type(conversion.served, &headers)?;
    let api_version = conversion.served.api_version();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let mut last = None;
    for _ in 0..rest::UPDATE_ATTEMPTS {
        let current = rest::get(
            state.store(),
            conversion.storage,
            path.namespace.as_deref(),
            name,
        )?;
        let original = conversion
            .to_served(state.store(), &current.value())
            .await
            .map_err(failed)?;
        let mut patched = apply_patch(
            patch_type,
            &original,
            bytes,
            &api_version,
            conversion.served.kind,
        )?;
        if !patched.is_object() {
            return Err(ApiError::bad_request(
                "the patched object is not a JSON object",
            ));
        }
        let (checked_obj, warnings) = checked(
            state.scope.resources.as_ref(),
            conversion,
            patched,
            None,
            params,
            match patch_type {
                PatchType::StrategicMerge => Decoding::StrategicPatch(bytes),
                _ => Decoding::Patched,
            },
        )?;
        patched = checked_obj;
        let pinned = pin_resource_version(&mut patched, &original, current.revision);
        let stored = conversion
            .to_storage(state.store(), &patched)
            .await
            .map_err(failed)?;
        let body = to_json_body(&stored)?;
        let resp = crate::http::resource::dispatch_stored(
            state,
            &Method::PUT,
            storage_uri,
            &headers,
            Body::from(body),
            user,
        )
        .await;
        match resp {
            Err(e) if e.reason == "Conflict" && !pinned => last = Some(e),
            Ok(r) if r.status() == StatusCode::CONFLICT && !pinned => {
                last = Some(ApiError::conflict(conversion.served, name))
            }
            Ok(r) if r.status() == StatusCode::CREATED => {
                // A patch never creates: the object went away in between.
                return Err(ApiError::not_found(conversion.served, name));
            }
            r => return r.map(|r| (r, warnings)),
        }
    }
    Err(last.unwrap_or_else(|| ApiError::conflict(conversion.served, name)))
}

/// The answer with its objects in the served version: whole JSON bodies are converted, watch
/// streams line by line; other media types pass through.
async fn convert_response(
    conversion: Conversion,
    store: Store,
    resp: Response,
    watch: bool,
) -> Response {
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    if !is_json {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    if watch && parts.status == StatusCode::OK {
        let stream = watch_lines(conversion, store, body);
        return Response::from_parts(parts, Body::from_stream(stream));
    }
    let bytes = match axum::body::to_bytes(body, crate::http::MAX_BODY_BYTES * 64).await {
        Ok(b) => b,
        Err(e) => return ApiError::internal("reading the answer to convert", e).into_response(),
    };
    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    let converted = match conversion.convert_answer(&store, value).await {
        Ok(v) => v,
        Err(e) => return failed(e).into_response(),
    };
    match serde_json::to_vec(&converted) {
        Ok(b) => Response::from_parts(parts, Body::from(b)),
        Err(e) => ApiError::internal("encoding the converted answer", e).into_response(),
    }
}

/// The state of a converted watch: the body, the bytes of an incomplete line, and whether
/// the stream ended (after a conversion failed).
struct WatchLines<S> {
    body: S,
    pending: BytesMut,
    conversion: Conversion,
    store: Store,
    done: bool,
}

/// The watch body with each complete line's event converted; a failed conversion sends an
/// `ERROR` event and ends the stream.
fn watch_lines(
    conversion: Conversion,
    store: Store,
    body: Body,
) -> impl futures::Stream<Item = Result<Bytes, axum::Error>> + Send {
    let state = WatchLines {
        body: body.into_data_stream(),
        pending: BytesMut::new(),
        conversion,
        store,
        done: false,
    };
    futures::stream::unfold(state, |mut st| async move {
        if st.done {
            return None;
        }
        let chunk = match st.body.next().await? {
            Ok(chunk) => chunk,
            Err(e) => {
                st.done = true;
                return Some((Err(e), st));
            }
        };
        st.pending.extend_from_slice(&chunk);
        let mut out = BytesMut::new();
        while let Some(pos) = st.pending.iter().position(|b| *b == b'\n') {
            let line = st.pending.split_to(pos + 1);
            let Ok(event) = serde_json::from_slice::<Value>(&line[..pos]) else {
                out.extend_from_slice(&line);
                continue;
            };
            let converted = match st.conversion.convert_watch_event(&st.store, event).await {
                Ok(converted) => converted,
                Err(e) => {
                    st.done = true;
                    failed_event(&e)
                }
            };
            out.extend_from_slice(converted.to_string().as_bytes());
            out.extend_from_slice(b"\n");
            if st.done {
                break;
            }
        }
        Some((Ok(out.freeze()), st))
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rkcm_apimachinery::catalog;
    use serde_json::json;

    use super::*;

    fn hpa_v1() -> Conversion {
        conversion(catalog::by_kind("autoscaling/v1", "HorizontalPodAutoscaler").expect("served"))
            .expect("converted")
    }

    fn stored() -> Value {
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default", "resourceVersion": "5"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                     "minReplicas": 1, "maxReplicas": 3,
                     "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                         "target": {"type": "Utilization", "averageUtilization": 80}}}]},
            "status": {"currentReplicas": 1, "desiredReplicas": 1}})
    }

    #[test]
    fn only_autoscaling_v1_hpas_are_converted() {
        assert!(conversion(
            catalog::by_kind("autoscaling/v2", "HorizontalPodAutoscaler").expect("served")
        )
        .is_none());
        assert!(conversion(catalog::by_kind("apps/v1", "Deployment").expect("served")).is_none());
        let c = hpa_v1();
        assert_eq!(c.storage.version, "v2");
        assert_eq!(
            c.storage_path("/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/web"),
            "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/web"
        );
    }

    #[test]
    fn objects_and_lists_are_answered_in_v1() {
        let c = hpa_v1();
        let obj = c.answer(stored());
        assert_eq!(obj["apiVersion"], "autoscaling/v1");
        assert_eq!(obj["spec"]["targetCPUUtilizationPercentage"], 80);
        assert_eq!(obj["metadata"]["resourceVersion"], "5");
        let list = c.answer(
            json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscalerList",
            "metadata": {"resourceVersion": "9"}, "items": [stored()]}),
        );
        assert_eq!(list["apiVersion"], "autoscaling/v1");
        assert_eq!(
            list["items"][0]["spec"]["targetCPUUtilizationPercentage"],
            80
        );
        let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure"});
        assert_eq!(c.answer(status.clone()), status);
        let table = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "rows": []});
        assert_eq!(c.answer(table.clone()), table);
    }

    #[test]
    fn watch_events_and_bookmarks_are_answered_in_v1() {
        let c = hpa_v1();
        let added = c.watch_event(json!({"type": "ADDED", "object": stored()}));
        assert_eq!(added["object"]["apiVersion"], "autoscaling/v1");
        assert_eq!(
            added["object"]["spec"]["targetCPUUtilizationPercentage"],
            80
        );
        let bookmark = c.watch_event(
            json!({"type": "BOOKMARK", "object": {"apiVersion": "autoscaling/v2",
            "kind": "HorizontalPodAutoscaler", "metadata": {"resourceVersion": "12"}}}),
        );
        assert_eq!(
            bookmark["object"],
            json!({"apiVersion": "autoscaling/v1",
            "kind": "HorizontalPodAutoscaler", "metadata": {"resourceVersion": "12"}})
        );
        let error = json!({"type": "ERROR", "object": {"kind": "Status", "code": 410}});
        assert_eq!(c.watch_event(error.clone()), error);
    }

    #[tokio::test]
    async fn watch_lines_split_across_chunks_are_converted_whole() {
        let c = hpa_v1();
        let line = format!("{}\n", json!({"type": "MODIFIED", "object": stored()}));
        let (a, b) = line.split_at(20);
        let chunks: Vec<Result<Bytes, std::io::Error>> = vec![
            Ok(Bytes::from(a.to_string())),
            Ok(Bytes::from(b.to_string())),
        ];
        let body = Body::from_stream(futures::stream::iter(chunks));
        let store = Store::new(Arc::new(crate::storage::memory::MemoryBackend::new()), 16)
            .await
            .expect("memory store");
        let out: Vec<Bytes> = watch_lines(c, store, body)
            .map(|r| r.expect("chunk"))
            .collect()
            .await;
        let joined: Vec<u8> = out.concat();
        let text = String::from_utf8(joined).expect("utf-8");
        assert_eq!(text.lines().count(), 1);
        let event: Value = serde_json::from_str(text.trim_end()).expect("json line");
        assert_eq!(event["object"]["apiVersion"], "autoscaling/v1");
    }
}
