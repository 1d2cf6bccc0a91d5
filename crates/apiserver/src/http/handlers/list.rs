//! GET on a collection: one page of the objects the selectors pick, with its continue token.

use axum::response::Response;
use base64::Engine;
use http::StatusCode;
use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};
use crate::http::encode::{json_response, json_value};
use crate::http::filter::Filter;
use crate::http::handlers::ResourceRequest;
use crate::http::negotiate::Output;
use crate::http::table;
use crate::rest;
use crate::watch_cache::CachedObject;

/// Continue token: `{rv, start}` as base64 JSON (`start` = last key returned).
fn encode_continue(revision: i64, last_key: &str) -> String {
    let token = json!({"v": "meta.k8s.io/v1", "rv": revision, "start": last_key});
    base64::engine::general_purpose::STANDARD.encode(token.to_string())
}

/// The revision and start key of a continue token for the collection at `prefix`.
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

/// One page of the collection the selectors pick, in the asked-for representation.
pub fn list(req: &ResourceRequest<'_>) -> ApiResult<Response> {
    let (info, ns, params, state) = (req.info, req.namespace, req.params, req.state);
    let filter = Filter::from_params(info, params, None)?;
    let prefix = rest::prefix(info, ns);
    // resourceVersion=0 is answered from the watch cache, whole: kube's cache does not page, so
    // the limit is ignored (client-go's reflector relies on it for its first list).
    let limit = match params.non_empty("resourceVersion") {
        Some("0") if params.non_empty("continue").is_none() => 0,
        _ => params.int("limit")?.unwrap_or(0).max(0) as usize,
    };
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
    let keep = |o: &CachedObject| filter.matches(o);
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
            let key = rest::key(info, Some(last.namespace()), last.name());
            meta.insert("continue".into(), json!(encode_continue(revision, &key)));
        }
    }
    match req.out {
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
            let decoded: Vec<Value> = items.iter().map(|o| o.value()).collect();
            let objs: Vec<&Value> = decoded.iter().collect();
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
                "items": items.iter().map(|o| table::partial_metadata(&o.value())).collect::<Vec<_>>(),
            });
            Ok(json_value(StatusCode::OK, &list))
        }
    }
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
}
