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
use rkcm_storage::watch_cache::{CachedObject, RevisionError};

/// A list at a revision the event window no longer holds (etcd3 store `expired`).
const EXPIRED: &str = "The resourceVersion for the provided list is too old.";
/// A continue token whose revision the event window no longer holds, answered with a token that
/// goes on at the latest revision (etcd3 store `inconsistentContinue`).
const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";
/// The revision of a continue token that goes on at the latest revision.
const LATEST: i64 = -1;

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
    // As `storage.DecodeContinue`: 0 is no revision; -1 goes on at the latest one.
    if rv == 0 || rv < LATEST {
        return Err(invalid());
    }
    let start = v.get("start").and_then(Value::as_str).ok_or_else(invalid)?;
    if !start.starts_with(prefix) {
        return Err(invalid());
    }
    Ok((rv, start.to_string()))
}

/// Which state of the collection a list reads.
enum ReadAt {
    /// The current state, once the cache has reached the revision given, if any
    /// (`resourceVersionMatch=NotOlderThan`, and no resourceVersion or "0").
    NotOlderThan(Option<i64>),
    /// Exactly this revision (`resourceVersionMatch=Exact`, a continue token, and a
    /// resourceVersion with a limit, which kube reads from etcd at that revision).
    Exact(i64),
}

/// One page of the collection the selectors pick, in the asked-for representation.
pub async fn list(req: &ResourceRequest<'_>) -> ApiResult<Response> {
    let (info, ns, params, scope) = (req.info, req.namespace, req.params, req.scope);
    let filter = Filter::from_params(req.resources(), info, params, None)?;
    let prefix = rest::prefix(info, ns);
    // resourceVersion=0 is answered from the watch cache, whole: kube's cache does not page, so
    // the limit is ignored (client-go's reflector relies on it for its first list).
    let limit = match params.non_empty("resourceVersion") {
        Some("0") if params.non_empty("continue").is_none() => 0,
        _ => params.int("limit")?.unwrap_or(0).max(0) as usize,
    };
    let rv_match = params.non_empty("resourceVersionMatch");
    let rv = params.non_empty("resourceVersion");
    if rv_match.is_some() && rv.is_none() {
        return Err(ApiError::bad_request(
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ));
    }
    if rv_match == Some("Exact") && rv == Some("0") {
        return Err(ApiError::bad_request(
            "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ));
    }
    let requested = match rv {
        None | Some("0") => None,
        Some(s) => Some(
            s.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {s}")))?,
        ),
    };
    let (start, read_at) = match params.non_empty("continue") {
        Some(token) => {
            let (rv, start) = decode_continue(token, &prefix)?;
            let at = if rv == LATEST {
                ReadAt::NotOlderThan(None)
            } else {
                ReadAt::Exact(rv)
            };
            (Some(start), at)
        }
        None => match (rv_match, requested) {
            (Some("Exact"), Some(rv)) => (None, ReadAt::Exact(rv)),
            (None, Some(rv)) if limit > 0 => (None, ReadAt::Exact(rv)),
            (_, rv) => (None, ReadAt::NotOlderThan(rv)),
        },
    };
    let cache = scope.store.cache();
    let wanted = match read_at {
        ReadAt::NotOlderThan(rv) => rv,
        ReadAt::Exact(rv) => Some(rv),
    };
    if let Some(rv) = wanted.filter(|rv| *rv > cache.revision()) {
        cache.wait_until_fresh(rv).await.map_err(|e| match e {
            RevisionError::TooLarge { requested, current } => {
                ApiError::too_large_resource_version(requested, current)
            }
            RevisionError::Expired { .. } => ApiError::expired(EXPIRED),
        })?;
    }
    let keep = |o: &CachedObject| filter.matches(o);
    let (items, revision, more) = match read_at {
        ReadAt::NotOlderThan(_) => cache.list(&prefix, start.as_deref(), limit, &keep),
        ReadAt::Exact(rv) => match cache.list_at(rv, &prefix, start.as_deref(), limit, &keep) {
            Ok(page) => page,
            Err(_) if start.is_some() => {
                // The first page's revision left the window: offer to go on at the latest.
                let mut e = ApiError::expired(INCONSISTENT_CONTINUE);
                e.details.list_continue = start.as_deref().map(|key| encode_continue(LATEST, key));
                return Err(e);
            }
            Err(_) => return Err(ApiError::expired(EXPIRED)),
        },
    };
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
                &table::table(req.resources(), info, &objs, include, Value::Object(meta)),
            ))
        }
        Output::Metadata => {
            let list = json!({
                "kind": "PartialObjectMetadataList",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": Value::Object(meta),
                "items": items.iter().map(|o| table::partial_metadata(&o.metadata_only())).collect::<Vec<_>>(),
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
