//! Discovery: `/version`, `/api`, `/apis`, the per-group-version resource lists, aggregated
//! discovery (`apidiscovery.k8s.io/v2`) and the OpenAPI endpoints.
//!
//! Mirrors `staging/src/k8s.io/apiserver/pkg/endpoints/discovery` (legacy lists and
//! `aggregated/`): all of it is derived from [`rkcm_apimachinery::catalog`].

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode};
use serde_json::{json, Value};

use rkcm_apimachinery::catalog::{self, ResourceInfo};
use rkcm_apimachinery::openapi;

use crate::aggregator;
use crate::error::ApiError;
use crate::http::{json_value, SharedState};
use crate::resource_metrics::serve as metrics;

/// Kubernetes version the server reports and whose types it serves.
pub const GIT_VERSION: &str = "v1.33.0-rkcm";

/// `GET /version`.
pub async fn version() -> Response {
    json_value(
        StatusCode::OK,
        &json!({
            "major": "1",
            "minor": "33",
            "gitVersion": GIT_VERSION,
            "gitCommit": "",
            "gitTreeState": "clean",
            "buildDate": "1970-01-01T00:00:00Z",
            "goVersion": "",
            "compiler": "rustc",
            "platform": format!("{}/{}", std::env::consts::OS, match std::env::consts::ARCH { "x86_64" => "amd64", "aarch64" => "arm64", other => other }),
        }),
    )
}

/// Which aggregated discovery version the client accepts, if any (`v2` preferred).
fn aggregated_version(headers: &HeaderMap) -> Option<&'static str> {
    let accept = headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    for media in accept.split(',') {
        let params: Vec<&str> = media.split(';').map(str::trim).collect();
        let has = |p: &str| params.contains(&p);
        if params.first() == Some(&"application/json")
            && has("g=apidiscovery.k8s.io")
            && has("as=APIGroupDiscoveryList")
        {
            if has("v=v2") {
                return Some("v2");
            }
            if has("v=v2beta1") {
                return Some("v2beta1");
            }
        }
    }
    None
}

fn verbs(v: &[&str]) -> Value {
    json!(v)
}

/// Legacy `APIResourceList` entries of one group version (resources and their subresources).
fn api_resources(group: &str, version: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for r in served_resources().filter(|r| r.group == group && r.version == version) {
        let mut entry = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced(),
            "kind": r.kind,
            "verbs": verbs(r.verbs),
        });
        if !r.short_names.is_empty() {
            entry["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            entry["categories"] = json!(r.categories);
        }
        out.push(entry);
        for s in r.subresources {
            let mut sub = json!({
                "name": format!("{}/{}", r.plural, s.name),
                "singularName": "",
                "namespaced": r.namespaced(),
                "kind": s.kind,
                "verbs": verbs(s.verbs),
            });
            if s.group != r.group || s.version != r.version {
                sub["group"] = json!(s.group);
                sub["version"] = json!(s.version);
            }
            out.push(sub);
        }
    }
    out
}

fn resource_list(group: &str, version: &str) -> Value {
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": api_resources(group, version),
    })
}

/// Aggregated discovery entry of one resource.
fn aggregated_resource(r: &ResourceInfo) -> Value {
    let mut entry = json!({
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": if r.namespaced() { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": verbs(r.verbs),
    });
    if !r.short_names.is_empty() {
        entry["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        entry["categories"] = json!(r.categories);
    }
    if !r.subresources.is_empty() {
        entry["subresources"] = Value::Array(
            r.subresources
                .iter()
                .map(|s| {
                    json!({
                        "subresource": s.name,
                        "responseKind": {"group": s.group, "version": s.version, "kind": s.kind},
                        "verbs": verbs(s.verbs),
                    })
                })
                .collect(),
        );
    }
    entry
}

fn aggregated_group(group: &str, versions: &[&str]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            json!({
                "version": v,
                "resources": served_resources()
                    .filter(|r| r.group == group && r.version == *v)
                    .map(aggregated_resource)
                    .collect::<Vec<_>>(),
                "freshness": "Current",
            })
        })
        .collect();
    let metadata = if group.is_empty() {
        json!({})
    } else {
        json!({"name": group})
    };
    json!({"metadata": metadata, "versions": versions})
}

fn aggregated_response(version: &str, items: Vec<Value>) -> Response {
    let body = json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    });
    match serde_json::to_vec(&body) {
        Ok(b) => Response::builder()
            .status(StatusCode::OK)
            .header(
                http::header::CONTENT_TYPE,
                format!(
                    "application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
                ),
            )
            .header(http::header::VARY, "Accept")
            .body(axum::body::Body::from(b))
            .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()),
        Err(e) => ApiError::internal("encoding discovery", e).into_response(),
    }
}

/// `GET /api`.
pub async fn api(headers: HeaderMap) -> Response {
    if let Some(v) = aggregated_version(&headers) {
        return aggregated_response(v, vec![aggregated_group("", &["v1"])]);
    }
    json_value(
        StatusCode::OK,
        &json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
        }),
    )
}

/// `GET /api/v1`.
pub async fn core_v1() -> Response {
    json_value(StatusCode::OK, &resource_list("", "v1"))
}

fn api_group<V: AsRef<str>>(name: &str, versions: &[V]) -> Value {
    let gvs: Vec<Value> = versions
        .iter()
        .map(|v| {
            let v = v.as_ref();
            json!({"groupVersion": format!("{name}/{v}"), "version": v})
        })
        .collect();
    json!({
        "name": name,
        "versions": gvs,
        "preferredVersion": gvs.first().cloned().unwrap_or(Value::Null),
    })
}

/// Groups served besides the catalog's: `metrics.k8s.io` when a metrics source is plugged in,
/// listed last as kube lists aggregated APIServices after the built-in groups.
fn extra_groups(state: &SharedState) -> Vec<(&'static str, Vec<&'static str>)> {
    // An APIService with a service for the group-version takes it over.
    let taken_over = state
        .aggregator
        .remote(
            crate::resource_metrics::GROUP,
            crate::resource_metrics::VERSION,
        )
        .is_some();
    match state.metrics_source {
        Some(_) if !taken_over => vec![(
            crate::resource_metrics::GROUP,
            vec![crate::resource_metrics::VERSION],
        )],
        _ => Vec::new(),
    }
}

/// Every group listed in `/apis`: the served ones, then those of remote APIServices (a version
/// served remotely in a served group is added to it).
fn listed_groups(state: &SharedState) -> Vec<(String, Vec<String>)> {
    let owned = |(g, vs): (&str, Vec<&str>)| {
        (
            g.to_string(),
            vs.into_iter().map(str::to_string).collect::<Vec<_>>(),
        )
    };
    let mut groups: Vec<(String, Vec<String>)> = served_groups()
        .into_iter()
        .chain(extra_groups(state))
        .map(owned)
        .collect();
    for (g, vs) in aggregator::discovery::groups(&state.aggregator.all()) {
        match groups.iter_mut().find(|(name, _)| *name == g) {
            Some((_, versions)) => {
                for v in vs {
                    if !versions.contains(&v) {
                        versions.push(v);
                    }
                }
            }
            None => groups.push((g, vs)),
        }
    }
    groups
}

/// The built-in resources, then the custom resources of established CRDs.
fn served_resources() -> impl Iterator<Item = &'static ResourceInfo> {
    catalog::all()
        .iter()
        .chain(rkcm_apimachinery::custom_resources::all())
}

/// The built-in groups, then the groups of custom resources (kube lists CRD groups after the
/// built-in ones, as their APIServices have lower priority).
fn served_groups() -> Vec<(&'static str, Vec<&'static str>)> {
    let mut groups = catalog::groups();
    for (g, vs) in rkcm_apimachinery::custom_resources::groups() {
        match groups.iter_mut().find(|(name, _)| *name == g) {
            Some((_, versions)) => versions.extend(
                vs.into_iter()
                    .filter(|v| !versions.contains(v))
                    .collect::<Vec<_>>(),
            ),
            None => groups.push((g, vs)),
        }
    }
    groups
}

/// `GET /apis`.
pub async fn apis(State(state): State<SharedState>, headers: HeaderMap) -> Response {
    if let Some(v) = aggregated_version(&headers) {
        let groups = served_groups();
        let extra = extra_groups(&state);
        let mut items: Vec<Value> = groups
            .iter()
            .map(|(g, vs)| aggregated_group(g, vs))
            .collect();
        items.extend(extra.iter().map(|_| metrics::aggregated_group()));
        // The groups served remotely only, with the resources their servers listed.
        let remotes = state.aggregator.all();
        for (g, _) in aggregator::discovery::groups(&remotes) {
            if groups
                .iter()
                .chain(extra.iter())
                .any(|(name, _)| *name == g)
            {
                continue;
            }
            items.extend(aggregator::discovery::aggregated_group(&g, &remotes));
        }
        return aggregated_response(v, items);
    }
    json_value(
        StatusCode::OK,
        &json!({
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": listed_groups(&state).iter().map(|(g, vs)| api_group(g, vs)).collect::<Vec<_>>(),
        }),
    )
}

/// `GET /apis/{group}`.
pub async fn group(State(state): State<SharedState>, Path(group): Path<String>) -> Response {
    match listed_groups(&state).into_iter().find(|(g, _)| *g == group) {
        Some((g, vs)) => {
            let mut body = api_group(&g, &vs);
            body["kind"] = json!("APIGroup");
            body["apiVersion"] = json!("v1");
            json_value(StatusCode::OK, &body)
        }
        None => ApiError::no_route().into_response(),
    }
}

/// `GET /apis/{group}/{version}`.
pub async fn group_version(
    State(state): State<SharedState>,
    Path((group, version)): Path<(String, String)>,
) -> Response {
    if !extra_groups(&state).is_empty()
        && (group.as_str(), version.as_str())
            == (
                crate::resource_metrics::GROUP,
                crate::resource_metrics::VERSION,
            )
    {
        return json_value(
            StatusCode::OK,
            &json!({
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": metrics::GROUP_VERSION,
                "resources": metrics::api_resources(),
            }),
        );
    }
    let served = served_groups()
        .into_iter()
        .any(|(g, vs)| g == group && vs.contains(&version.as_str()));
    if !served {
        return ApiError::no_route().into_response();
    }
    json_value(StatusCode::OK, &resource_list(&group, &version))
}

fn openapi_json(bytes: &'static [u8], etag: Option<&str>) -> Response {
    let mut b = Response::builder()
        .status(StatusCode::OK)
        .header(http::header::CONTENT_TYPE, "application/json");
    if let Some(tag) = etag {
        b = b
            .header(http::header::ETAG, format!("\"{tag}\""))
            .header(http::header::CACHE_CONTROL, "public, immutable");
    }
    b.body(axum::body::Body::from(bytes))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// Media types asking for the protobuf form of the v2 document (kube-openapi's handler accepts
/// both and answers with the second: Go's `mime.ParseMediaType` refuses the `@`).
const OPENAPI_V2_PROTOBUF: &[&str] = &[
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
];

/// `GET /openapi/v2`: JSON, or gnostic's protobuf encoding for clients that ask for it
/// (kubectl ≤ 1.28 validating client-side or computing `apply` patches); 406 for anything else.
pub async fn openapi_v2(headers: HeaderMap) -> Response {
    let accept = headers
        .get_all(http::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    if accept.trim().is_empty() {
        return match crate::crd::openapi::v2(openapi::v2()) {
            Some(doc) => json_document(doc),
            None => openapi_json(openapi::v2(), None),
        };
    }
    // The first acceptable media type wins, as kube-openapi's negotiation does.
    for m in accept.split(',') {
        let mime = m.split(';').next().unwrap_or("").trim();
        if matches!(mime, "application/json" | "*/*" | "application/*") {
            return match crate::crd::openapi::v2(openapi::v2()) {
                // With custom resources, the document changes with the CRDs.
                Some(doc) => json_document(doc),
                None => openapi_json(openapi::v2(), None),
            };
        }
        if OPENAPI_V2_PROTOBUF.contains(&mime) {
            // With custom resources, the document is built and encoded for this request.
            let body = match crate::crd::openapi::v2(openapi::v2())
                .and_then(|doc| openapi::v2_protobuf_of(&doc))
            {
                Some(doc) => axum::body::Body::from(doc),
                None => axum::body::Body::from(openapi::v2_protobuf()),
            };
            return Response::builder()
                .status(StatusCode::OK)
                .header(http::header::CONTENT_TYPE, OPENAPI_V2_PROTOBUF[1])
                .body(body)
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response());
        }
    }
    ApiError::new(
        406,
        "NotAcceptable",
        "only application/json and application/com.github.proto-openapi.spec.v2@v1.0+protobuf are served for /openapi/v2",
    )
    .into_response()
}

/// `GET /openapi/v3`.
pub async fn openapi_v3_index() -> Response {
    json_document(crate::crd::openapi::v3_index(openapi::v3_index()))
}

/// A JSON OpenAPI document built for this request (it changes with the CRDs, so it carries no
/// ETag).
fn json_document(doc: Vec<u8>) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(axum::body::Body::from(doc))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// `GET /openapi/v3/{path}` (`api/v1`, `apis/apps/v1`).
pub async fn openapi_v3_document(Path(path): Path<String>) -> Response {
    match openapi::v3_document(&path) {
        Some(doc) => openapi_json(doc, openapi::v3_hash(&path)),
        None => match crate::crd::openapi::v3_document(&path) {
            Some(doc) => json_document(doc),
            None => ApiError::no_route().into_response(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_subresources_name_the_autoscaling_kind() {
        let list = api_resources("apps", "v1");
        let scale = list
            .iter()
            .find(|r| r["name"] == "deployments/scale")
            .expect("deployments/scale advertised");
        assert_eq!(scale["group"], "autoscaling");
        assert_eq!(scale["kind"], "Scale");
        let deploy = list
            .iter()
            .find(|r| r["name"] == "deployments")
            .expect("deployments");
        assert_eq!(deploy["shortNames"][0], "deploy");
    }

    #[test]
    fn aggregated_discovery_is_chosen_by_accept() {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::ACCEPT,
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
                .parse()
                .expect("header"),
        );
        assert_eq!(aggregated_version(&h), Some("v2"));
        h.insert(
            http::header::ACCEPT,
            "application/json".parse().expect("header"),
        );
        assert_eq!(aggregated_version(&h), None);
    }
}
