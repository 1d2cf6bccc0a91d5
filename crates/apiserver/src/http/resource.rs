//! Handlers of resource paths: get, list, create, update, patch, delete, deletecollection and the
//! `status`, `scale`, `binding`, `eviction` and `finalize` subresources (the pod streams are
//! [`crate::http::pod_streams`]).
//!
//! Mirrors `staging/src/k8s.io/apiserver/pkg/endpoints/handlers` (get.go, create.go, update.go,
//! patch.go, delete.go): decode, call the registry ([`crate::rest`]), encode.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::patch::{self, PatchType};
use rkcm_apimachinery::validation;
use rkcm_labels::{FieldSelector, Selector};

use crate::error::{ApiError, ApiResult};
use crate::http::negotiate::{self, Output};
use crate::http::params::Params;
use crate::http::path::{self, ResourcePath};
use crate::http::pod_streams::{self, PodStream};
use crate::http::{json_response, json_value, read_body, table, watch, SharedState};
use crate::object;
use crate::protobuf;
use crate::registry::{self, Strategy};
use crate::rest::{self, DeleteOptions, Deleted, UpdateSource, UpdateTarget, WriteOptions};
use crate::watch_cache::CachedObject;

/// Entry point for every path that is not discovery, health or OpenAPI.
pub async fn handle(State(state): State<SharedState>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    match dispatch(&state, &parts.method, &parts.uri, &parts.headers, body).await {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

/// `POST /api/v1/namespaces/{ns}/bindings` (the collection form of `pods/{name}/binding`).
fn bindings_namespace(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/api/v1/namespaces/")?;
    let (ns, tail) = rest.split_once('/')?;
    (tail.trim_end_matches('/') == "bindings" && !ns.is_empty()).then_some(ns)
}

fn require_verb(info: &ResourceInfo, verb: &str, method: &Method) -> ApiResult<()> {
    if info.verbs.contains(&verb) {
        Ok(())
    } else {
        Err(ApiError::method_not_allowed(method.as_str()))
    }
}

async fn dispatch(
    state: &SharedState,
    method: &Method,
    uri: &http::Uri,
    headers: &HeaderMap,
    body: Body,
) -> ApiResult<Response> {
    let params = Params::parse(uri.query())?;
    if let Some(ns) = bindings_namespace(uri.path()) {
        if method != Method::POST {
            return Err(ApiError::method_not_allowed(method.as_str()));
        }
        let binding = decode_json(headers, &read_body(headers, body).await?)?;
        let name = object::name(&binding).to_string();
        rest::bind(&state.store, ns, &name, &binding, write_options(&params)?).await?;
        return Ok(success(StatusCode::CREATED));
    }
    let path = path::parse(uri.path()).ok_or_else(ApiError::no_route)?;
    let info = path.info;
    let ns = path.namespace.as_deref();
    if let (Some(name), Some(sub)) = (path.name.as_deref(), path.subresource.as_deref()) {
        if let Some(stream) = PodStream::from_subresource(info, sub) {
            // Answered before content negotiation: these requests accept streams, not objects.
            return pod_streams::serve(&state.store, info, ns, name, stream, method, &params);
        }
    }
    let out = negotiate::output(headers, &params)?;
    match (path.name.as_deref(), path.subresource.as_deref()) {
        (None, None) => match *method {
            Method::GET => {
                if path.watch || params.flag("watch") {
                    require_verb(info, "watch", method)?;
                    watch::serve(state, info, ns, None, &params, out)
                } else {
                    require_verb(info, "list", method)?;
                    list(state, info, ns, &params, out)
                }
            }
            Method::POST => {
                require_verb(info, "create", method)?;
                if info.namespaced() && ns.is_none() {
                    return Err(ApiError::method_not_allowed(method.as_str()));
                }
                let bytes = read_body(headers, body).await?;
                let (obj, warnings) = decode_object(info, headers, &bytes, &params)?;
                let created =
                    rest::create(&state.store, info, ns, obj, write_options(&params)?).await?;
                Ok(with_warnings(
                    object_response(info, StatusCode::CREATED, &created, out),
                    &warnings,
                ))
            }
            Method::DELETE => {
                require_verb(info, "deletecollection", method)?;
                let bytes = read_body(headers, body).await?;
                delete_collection(state, info, ns, headers, &params, &bytes).await
            }
            _ => Err(ApiError::method_not_allowed(method.as_str())),
        },
        (Some(name), None) => match *method {
            Method::GET if path.watch => {
                require_verb(info, "watch", method)?;
                watch::serve(state, info, ns, Some(name), &params, out)
            }
            Method::GET => {
                require_verb(info, "get", method)?;
                let obj = rest::get(&state.store, info, ns, name)?;
                Ok(cached_response(info, &obj, out))
            }
            Method::PUT => {
                require_verb(info, "update", method)?;
                let bytes = read_body(headers, body).await?;
                let (obj, warnings) = decode_object(info, headers, &bytes, &params)?;
                let updated = rest::update(
                    &state.store,
                    info,
                    ns,
                    name,
                    obj,
                    UpdateTarget::Main,
                    UpdateSource::Put,
                    write_options(&params)?,
                )
                .await?;
                let code = if updated.created {
                    StatusCode::CREATED
                } else {
                    StatusCode::OK
                };
                Ok(with_warnings(
                    object_response(info, code, &updated.object, out),
                    &warnings,
                ))
            }
            Method::PATCH => {
                require_verb(info, "patch", method)?;
                let bytes = read_body(headers, body).await?;
                let (patched, warnings) = patch_object(
                    state,
                    info,
                    ns,
                    name,
                    headers,
                    &bytes,
                    &params,
                    UpdateTarget::Main,
                )
                .await?;
                Ok(with_warnings(
                    object_response(info, StatusCode::OK, &patched, out),
                    &warnings,
                ))
            }
            Method::DELETE => {
                require_verb(info, "delete", method)?;
                let bytes = read_body(headers, body).await?;
                let opts = delete_options(headers, &params, &bytes)?;
                match rest::delete(&state.store, info, ns, name, &opts).await? {
                    Deleted::Gone(obj) => Ok(deleted_response(info, &obj)),
                    Deleted::Pending(obj) => Ok(json_value(StatusCode::OK, &obj)),
                }
            }
            _ => Err(ApiError::method_not_allowed(method.as_str())),
        },
        (Some(name), Some(sub)) => {
            subresource(
                state, info, &path, name, sub, method, headers, body, &params, out,
            )
            .await
        }
        (None, Some(_)) => Err(ApiError::no_route()),
    }
}

#[allow(clippy::too_many_arguments)]
async fn subresource(
    state: &SharedState,
    info: &'static ResourceInfo,
    path: &ResourcePath,
    name: &str,
    sub: &str,
    method: &Method,
    headers: &HeaderMap,
    body: Body,
    params: &Params,
    out: Output,
) -> ApiResult<Response> {
    let ns = path.namespace.as_deref();
    let sub_verbs = info.subresource(sub).map(|s| s.verbs).unwrap_or(&[]);
    let verb = match *method {
        Method::GET => "get",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::POST => "create",
        _ => "",
    };
    if !sub_verbs.contains(&verb) {
        return Err(ApiError::method_not_allowed(method.as_str()));
    }
    let opts = write_options(params)?;
    match (sub, verb) {
        ("status", "get") => {
            let obj = rest::get(&state.store, info, ns, name)?;
            Ok(cached_response(info, &obj, out))
        }
        ("status", "update") | ("finalize", "update") => {
            let target = if sub == "status" {
                UpdateTarget::Status
            } else {
                UpdateTarget::Finalize
            };
            let bytes = read_body(headers, body).await?;
            let (obj, warnings) = decode_object(info, headers, &bytes, params)?;
            let updated = rest::update(
                &state.store,
                info,
                ns,
                name,
                obj,
                target,
                UpdateSource::Put,
                opts,
            )
            .await?;
            Ok(with_warnings(
                json_response(StatusCode::OK, updated.object.json().clone()),
                &warnings,
            ))
        }
        ("status", "patch") => {
            let bytes = read_body(headers, body).await?;
            let (patched, warnings) = patch_object(
                state,
                info,
                ns,
                name,
                headers,
                &bytes,
                params,
                UpdateTarget::Status,
            )
            .await?;
            Ok(with_warnings(
                json_response(StatusCode::OK, patched.json().clone()),
                &warnings,
            ))
        }
        ("scale", "get") => {
            let obj = rest::get(&state.store, info, ns, name)?;
            Ok(json_value(
                StatusCode::OK,
                &rest::scale_of(info, &obj.value)?,
            ))
        }
        ("scale", "update") => {
            let bytes = read_body(headers, body).await?;
            let scale = decode_json(headers, &bytes)?;
            let new = rest::update_scale(
                &state.store,
                info,
                ns,
                name,
                &scale,
                UpdateSource::Put,
                opts,
            )
            .await?;
            Ok(json_value(StatusCode::OK, &new))
        }
        ("scale", "patch") => {
            let bytes = read_body(headers, body).await?;
            let patch_type = patch_type(headers)?;
            let mut last = None;
            for _ in 0..rest::UPDATE_ATTEMPTS {
                let current = rest::get(&state.store, info, ns, name)?;
                let scale = rest::scale_of(info, &current.value)?;
                let mut patched =
                    apply_patch(patch_type, &scale, &bytes, "autoscaling/v1", "Scale")?;
                let pinned = match patched.pointer("/metadata/resourceVersion") {
                    Some(v) if !v.is_null() => {
                        Some(v) != scale.pointer("/metadata/resourceVersion")
                    }
                    _ => false,
                };
                if !pinned {
                    object::set_resource_version(&mut patched, current.revision);
                }
                let updated = rest::update_scale(
                    &state.store,
                    info,
                    ns,
                    name,
                    &patched,
                    UpdateSource::Patch,
                    opts,
                )
                .await;
                match updated {
                    Err(e) if e.reason == "Conflict" && !pinned => last = Some(e),
                    r => return r.map(|s| json_value(StatusCode::OK, &s)),
                }
            }
            Err(last.unwrap_or_else(|| ApiError::conflict(info, name)))
        }
        ("binding", "create") => {
            let ns = ns.ok_or_else(ApiError::no_route)?;
            let bytes = read_body(headers, body).await?;
            let binding = decode_json(headers, &bytes)?;
            let bind_name = object::name(&binding);
            if !bind_name.is_empty() && bind_name != name {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({bind_name}) does not match the name on the URL ({name})"
                )));
            }
            rest::bind(&state.store, ns, name, &binding, opts).await?;
            Ok(success(StatusCode::CREATED))
        }
        ("eviction", "create") => {
            // No PodDisruptionBudgets are served, so every eviction is allowed: it is a delete
            // with the eviction's DeleteOptions.
            let bytes = read_body(headers, body).await?;
            let eviction = decode_json(headers, &bytes)?;
            let mut del = DeleteOptions {
                dry_run: opts.dry_run,
                ..DeleteOptions::default()
            };
            if let Some(o) = eviction.get("deleteOptions").filter(|v| v.is_object()) {
                del.merge_body(o)?;
            }
            rest::delete(&state.store, info, ns, name, &del).await?;
            Ok(success(StatusCode::CREATED))
        }
        _ => Err(ApiError::method_not_allowed(method.as_str())),
    }
}

fn success(code: StatusCode) -> Response {
    json_value(
        code,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": code.as_u16()}),
    )
}

fn with_warnings(mut resp: Response, warnings: &[String]) -> Response {
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = http::HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            resp.headers_mut().append(http::header::WARNING, v);
        }
    }
    resp
}

fn write_options(params: &Params) -> ApiResult<WriteOptions> {
    Ok(WriteOptions {
        dry_run: params.dry_run()?,
    })
}

/// Decodes a JSON body (400 when malformed, 415 for media types other than JSON).
pub fn decode_json(headers: &HeaderMap, bytes: &Bytes) -> ApiResult<Value> {
    let ct = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let media = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if media == "application/vnd.kubernetes.protobuf" {
        return protobuf::decode(bytes).map_err(|e| match e {
            protobuf::Error::UnknownKind(_) => ApiError::unsupported_media_type(e.to_string()),
            _ => ApiError::bad_request(format!("error decoding request body: {e}")),
        });
    }
    if !(media.is_empty() || media == "application/json" || media == "*/*" || media == "text/plain")
    {
        return Err(ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json (got {ct})"
        )));
    }
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::bad_request(format!("error decoding request body: {e}")))
}

/// Decodes an object body and applies `fieldValidation` (Strict → 400, Warn → warnings).
fn decode_object(
    info: &ResourceInfo,
    headers: &HeaderMap,
    bytes: &Bytes,
    params: &Params,
) -> ApiResult<(Value, Vec<String>)> {
    let obj = decode_json(headers, bytes)?;
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    let mode = field_validation(params)?;
    // Protobuf bodies cannot carry unknown or duplicate fields.
    if bytes.starts_with(protobuf::MAGIC) {
        return Ok((obj, Vec::new()));
    }
    let check = check_fields(info, bytes, mode)?;
    let mut obj = obj;
    for path in &check.unknown {
        remove_path(&mut obj, path);
    }
    Ok((obj, check.warnings))
}

/// `fieldValidation`: unknown and duplicate fields are an error (`Strict`), warnings (`Warn`,
/// the default) or ignored (`Ignore`).
fn field_validation(params: &Params) -> ApiResult<&str> {
    let mode = params.non_empty("fieldValidation").unwrap_or("Warn");
    if !matches!(mode, "Strict" | "Warn" | "Ignore") {
        return Err(ApiError::bad_request(format!(
            "fieldValidation parameter unsupported: {mode:?}; supported values: \"Ignore\", \"Warn\", \"Strict\""
        )));
    }
    Ok(mode)
}

/// What strict decoding found in a body.
#[derive(Default)]
struct FieldCheck {
    /// `Warning` headers to send (`Warn` mode).
    warnings: Vec<String>,
    /// Paths of unknown fields, dropped from the object as kube's decoder drops them.
    unknown: Vec<String>,
}

/// Checks `body` (an object of `info`) for unknown and duplicate fields according to `mode`.
fn check_fields(info: &ResourceInfo, body: &[u8], mode: &str) -> ApiResult<FieldCheck> {
    let problems = validation::check_fields(&info.api_version(), info.kind, body)
        .map_err(|e| ApiError::bad_request(format!("error decoding request body: {e}")))?;
    if problems.is_empty() {
        return Ok(FieldCheck::default());
    }
    if mode == "Strict" {
        return Err(ApiError::bad_request(validation::strict_decoding_message(
            &problems,
        )));
    }
    let unknown = problems
        .iter()
        .filter_map(|p| match p {
            validation::FieldProblem::Unknown(path) => Some(path.clone()),
            validation::FieldProblem::Duplicate(_) => None,
        })
        .collect();
    let warnings = if mode == "Warn" {
        problems.iter().map(ToString::to_string).collect()
    } else {
        Vec::new()
    };
    Ok(FieldCheck { warnings, unknown })
}

/// Removes the field at `path` (`spec.template.spec.containers[0].imagee`) from `obj`.
fn remove_path(obj: &mut Value, path: &str) {
    let mut segments: Vec<(String, Vec<usize>)> = Vec::new();
    for seg in path.split('.') {
        let (name, rest) = seg.split_once('[').map_or((seg, ""), |(n, r)| (n, r));
        let indexes = rest
            .split('[')
            .filter_map(|i| i.trim_end_matches(']').parse().ok())
            .collect();
        segments.push((name.to_string(), indexes));
    }
    let Some(((last, last_idx), parents)) = segments.split_last() else {
        return;
    };
    if !last_idx.is_empty() {
        return;
    }
    let mut cur = obj;
    for (name, indexes) in parents {
        let Some(next) = cur.get_mut(name.as_str()) else {
            return;
        };
        cur = next;
        for i in indexes {
            let Some(next) = cur.get_mut(*i) else { return };
            cur = next;
        }
    }
    if let Some(m) = cur.as_object_mut() {
        m.remove(last);
    }
}

fn patch_type(headers: &HeaderMap) -> ApiResult<PatchType> {
    let ct = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    PatchType::from_content_type(ct).ok_or_else(|| {
        ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {ct:?})"
        ))
    })
}

fn apply_patch(
    patch_type: PatchType,
    original: &Value,
    bytes: &[u8],
    api_version: &str,
    kind: &str,
) -> ApiResult<Value> {
    patch::apply(patch_type, original, bytes, api_version, kind).map_err(|e| {
        match e.status_code() {
            400 => ApiError::bad_request(e.to_string()),
            415 => ApiError::unsupported_media_type(e.to_string()),
            _ => ApiError::new(422, "Invalid", e.to_string()),
        }
    })
}

/// PATCH: applies the body to the current object and updates it, retrying on conflicts with
/// other writers unless the patch pins a resourceVersion.
#[allow(clippy::too_many_arguments)]
async fn patch_object(
    state: &SharedState,
    info: &'static ResourceInfo,
    ns: Option<&str>,
    name: &str,
    headers: &HeaderMap,
    bytes: &Bytes,
    params: &Params,
    target: UpdateTarget,
) -> ApiResult<(Arc<CachedObject>, Vec<String>)> {
    let patch_type = patch_type(headers)?;
    let opts = write_options(params)?;
    let mode = field_validation(params)?;
    let api_version = info.api_version();
    let mut last = None;
    let mut checked: Option<FieldCheck> = None;
    for _ in 0..rest::UPDATE_ATTEMPTS {
        let current = rest::get(&state.store, info, ns, name)?;
        let mut patched = apply_patch(patch_type, &current.value, bytes, &api_version, info.kind)?;
        if !patched.is_object() {
            return Err(ApiError::bad_request(
                "the patched object is not a JSON object",
            ));
        }
        if checked.is_none() {
            let bytes = serde_json::to_vec(&patched)
                .map_err(|e| ApiError::internal("encoding the patched object", e))?;
            checked = Some(check_fields(info, &bytes, mode)?);
        }
        for path in checked.iter().flat_map(|c| &c.unknown) {
            remove_path(&mut patched, path);
        }
        // A patch that sets another resourceVersion is a precondition (no retry on conflict).
        let pinned = match patched.pointer("/metadata/resourceVersion") {
            Some(v) if !v.is_null() => {
                Some(v) != current.value.pointer("/metadata/resourceVersion")
            }
            _ => false,
        };
        if !pinned {
            object::set_resource_version(&mut patched, current.revision);
        }
        let updated = rest::update(
            &state.store,
            info,
            ns,
            name,
            patched,
            target,
            UpdateSource::Patch,
            opts,
        )
        .await;
        match updated {
            Err(e) if e.reason == "Conflict" && !pinned => last = Some(e),
            r => return r.map(|v| (v.object, checked.map(|c| c.warnings).unwrap_or_default())),
        }
    }
    Err(last.unwrap_or_else(|| ApiError::conflict(info, name)))
}

fn delete_options(headers: &HeaderMap, params: &Params, body: &Bytes) -> ApiResult<DeleteOptions> {
    let mut opts = DeleteOptions {
        grace_period_seconds: params.int("gracePeriodSeconds")?,
        propagation_policy: params.non_empty("propagationPolicy").map(str::to_string),
        orphan_dependents: params.non_empty("orphanDependents").map(|v| v == "true"),
        dry_run: params.dry_run()?,
        ..DeleteOptions::default()
    };
    if !body.iter().all(u8::is_ascii_whitespace) {
        let v = decode_json(headers, body)?;
        opts.merge_body(&v)?;
    }
    Ok(opts)
}

/// Label and field selectors of a list or watch.
pub struct Filter {
    labels: Option<Selector>,
    fields: Option<FieldSelector>,
    strategy: &'static dyn Strategy,
}

impl Filter {
    /// Parses `labelSelector` and `fieldSelector` (400 when malformed or unsupported), adding
    /// `metadata.name=<name>` when a single object is watched.
    pub fn from_params(
        info: &ResourceInfo,
        params: &Params,
        name: Option<&str>,
    ) -> ApiResult<Self> {
        let strategy = registry::strategy(info);
        let labels = params
            .non_empty("labelSelector")
            .map(|s| {
                Selector::parse(s)
                    .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))
            })
            .transpose()?
            .filter(|s| !s.is_empty());
        let mut field_str = params.non_empty("fieldSelector").unwrap_or("").to_string();
        if let Some(name) = name {
            if !field_str.is_empty() {
                field_str.push(',');
            }
            field_str.push_str(&format!("metadata.name={name}"));
        }
        let fields = if field_str.is_empty() {
            None
        } else {
            let fs = FieldSelector::parse(&field_str)
                .map_err(|e| ApiError::bad_request(format!("invalid field selector: {e}")))?;
            let probe = json!({});
            for r in fs.requirements() {
                let known = matches!(r.field.as_str(), "metadata.name" | "metadata.namespace")
                    || strategy.field_value(&probe, &r.field).is_some();
                if !known {
                    return Err(ApiError::bad_request(format!(
                        "field label not supported: {}",
                        r.field
                    )));
                }
            }
            Some(fs).filter(|f| !f.is_empty())
        };
        Ok(Self {
            labels,
            fields,
            strategy,
        })
    }

    /// Whether the filter selects everything.
    pub fn is_everything(&self) -> bool {
        self.labels.is_none() && self.fields.is_none()
    }

    /// Whether `obj` is selected.
    pub fn matches(&self, obj: &Value) -> bool {
        if let Some(l) = &self.labels {
            if !l.matches(&object::labels(obj)) {
                return false;
            }
        }
        if let Some(f) = &self.fields {
            let value = |field: &str| match field {
                "metadata.name" => Some(object::name(obj).to_string()),
                "metadata.namespace" => Some(object::namespace(obj).to_string()),
                other => self.strategy.field_value(obj, other),
            };
            if !f.matches(value) {
                return false;
            }
        }
        true
    }
}

/// Continue token: `{rv, start}` as base64 JSON (`start` = last key returned).
fn encode_continue(revision: i64, last_key: &str) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": revision, "start": last_key});
    base64::engine::general_purpose::STANDARD.encode(token.to_string())
}

fn decode_continue(token: &str, prefix: &str) -> ApiResult<(i64, String)> {
    let invalid = || {
        ApiError::bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    };
    let raw = base64::engine::general_purpose::STANDARD
        .decode(token)
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(token))
        .map_err(|_| invalid())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| invalid())?;
    let rv = v.get("rv").and_then(Value::as_i64).ok_or_else(invalid)?;
    let start = v.get("start").and_then(Value::as_str).ok_or_else(invalid)?;
    if !start.starts_with(prefix) {
        return Err(invalid());
    }
    Ok((rv, start.to_string()))
}

fn list(
    state: &SharedState,
    info: &'static ResourceInfo,
    ns: Option<&str>,
    params: &Params,
    out: Output,
) -> ApiResult<Response> {
    let filter = Filter::from_params(info, params, None)?;
    let prefix = rest::prefix(info, ns);
    let limit = params.int("limit")?.unwrap_or(0).max(0) as usize;
    if params.non_empty("resourceVersionMatch").is_some()
        && params.non_empty("resourceVersion").is_none()
    {
        return Err(ApiError::bad_request(
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ));
    }
    let (start, pinned_rv) = match params.non_empty("continue") {
        Some(token) => {
            let (rv, start) = decode_continue(token, &prefix)?;
            (Some(start), Some(rv))
        }
        None => (None, None),
    };
    let keep = |o: &CachedObject| filter.matches(&o.value);
    let (items, revision, more) = state
        .store
        .cache()
        .list(&prefix, start.as_deref(), limit, &keep);
    // Pages after the first report the first page's revision, as kube does.
    let revision = pinned_rv.unwrap_or(revision);
    let mut meta = serde_json::Map::new();
    meta.insert("resourceVersion".into(), json!(revision.to_string()));
    if more {
        if let Some(last) = items.last() {
            let key = rest::key(
                info,
                Some(object::namespace(&last.value)),
                object::name(&last.value),
            );
            meta.insert("continue".into(), json!(encode_continue(revision, &key)));
        }
    }
    match out {
        Output::Object => {
            // Assemble the list from each object's cached JSON.
            let mut buf =
                Vec::with_capacity(128 + items.iter().map(|o| o.json().len() + 1).sum::<usize>());
            buf.extend_from_slice(b"{\"kind\":");
            buf.extend_from_slice(json!(format!("{}List", info.kind)).to_string().as_bytes());
            buf.extend_from_slice(b",\"apiVersion\":");
            buf.extend_from_slice(json!(info.api_version()).to_string().as_bytes());
            buf.extend_from_slice(b",\"metadata\":");
            buf.extend_from_slice(Value::Object(meta).to_string().as_bytes());
            buf.extend_from_slice(b",\"items\":[");
            for (i, o) in items.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                buf.extend_from_slice(o.json());
            }
            buf.extend_from_slice(b"]}");
            Ok(json_response(StatusCode::OK, buf))
        }
        Output::Table(include) => {
            let objs: Vec<&Value> = items.iter().map(|o| &o.value).collect();
            Ok(json_value(
                StatusCode::OK,
                &table::table(info, &objs, include, Value::Object(meta)),
            ))
        }
        Output::Metadata => {
            let list = json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": Value::Object(meta),
                "items": items.iter().map(|o| table::partial_metadata(&o.value)).collect::<Vec<_>>(),
            });
            Ok(json_value(StatusCode::OK, &list))
        }
    }
}

fn cached_response(info: &ResourceInfo, obj: &Arc<CachedObject>, out: Output) -> Response {
    object_response(info, StatusCode::OK, obj, out)
}

/// An object in the asked-for representation; plain JSON reuses the cached serialization.
fn object_response(
    info: &ResourceInfo,
    code: StatusCode,
    obj: &Arc<CachedObject>,
    out: Output,
) -> Response {
    let value = &obj.value;
    match out {
        Output::Object => json_response(code, obj.json().clone()),
        Output::Table(include) => {
            let rv = value
                .pointer("/metadata/resourceVersion")
                .cloned()
                .unwrap_or(Value::Null);
            json_value(
                code,
                &table::table(info, &[value], include, json!({"resourceVersion": rv})),
            )
        }
        Output::Metadata => json_value(code, &table::partial_metadata(value)),
    }
}

/// Response to a DELETE that removed the object: the object for kinds whose storage returns it
/// (`ReturnDeletedObject`), a success Status otherwise.
fn deleted_response(info: &ResourceInfo, obj: &Value) -> Response {
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

async fn delete_collection(
    state: &SharedState,
    info: &'static ResourceInfo,
    ns: Option<&str>,
    headers: &HeaderMap,
    params: &Params,
    body: &Bytes,
) -> ApiResult<Response> {
    let filter = Filter::from_params(info, params, None)?;
    let opts = delete_options(headers, params, body)?;
    let prefix = rest::prefix(info, ns);
    let keep = |o: &CachedObject| filter.matches(&o.value);
    let (items, revision, _) = state.store.cache().list(&prefix, None, 0, &keep);
    let mut deleted = Vec::with_capacity(items.len());
    for item in items {
        let name = object::name(&item.value).to_string();
        let item_ns = object::namespace(&item.value).to_string();
        let item_ns = (!item_ns.is_empty()).then_some(item_ns);
        match rest::delete(&state.store, info, item_ns.as_deref(), &name, &opts).await {
            Ok(Deleted::Gone(o)) | Ok(Deleted::Pending(o)) => deleted.push(o),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let list = json!({
        "kind": format!("{}List", info.kind),
        "apiVersion": info.api_version(),
        "metadata": {"resourceVersion": revision.to_string()},
        "items": deleted,
    });
    Ok(json_value(StatusCode::OK, &list))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip_and_are_checked() {
        let t = encode_continue(42, "/core/pods/ns/p1");
        assert_eq!(
            decode_continue(&t, "/core/pods/ns/").expect("ok"),
            (42, "/core/pods/ns/p1".to_string())
        );
        assert!(decode_continue(&t, "/core/nodes/").is_err());
        assert!(decode_continue("garbage!", "/").is_err());
    }

    #[test]
    fn unknown_fields_are_removed_by_path() {
        let mut obj = json!({"spec": {"foo": 1, "template": {"spec": {"containers": [{"name": "c", "imagee": "x"}]}}}});
        remove_path(&mut obj, "spec.foo");
        remove_path(&mut obj, "spec.template.spec.containers[0].imagee");
        remove_path(&mut obj, "spec.missing.deeper");
        assert_eq!(
            obj,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}})
        );
    }

    #[test]
    fn bindings_collection_path() {
        assert_eq!(
            bindings_namespace("/api/v1/namespaces/ns/bindings"),
            Some("ns")
        );
        assert_eq!(bindings_namespace("/api/v1/namespaces/ns/pods"), None);
    }
}
