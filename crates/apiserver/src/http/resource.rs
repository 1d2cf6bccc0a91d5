//! Entry point of resource paths: parses the path and routes the request to the handler of
//! its verb and subresource ([`crate::http::handlers`]); the pod streams are
//! [`crate::http::pod_streams`].

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, Method};

use rkcm_apimachinery::catalog::ResourceInfo;

use crate::auth::UserInfo;
use crate::error::{ApiError, ApiResult};
use crate::http::handlers::{
    access_reviews, binding, component_statuses, create, delete, delete_collection, eviction, get,
    list, patch, reviews, scale, token_request, update, watch, ResourceRequest,
};
use crate::http::negotiate;
use crate::http::params::Params;
use crate::http::path;
use crate::http::pod_streams::{self, PodStream};
use crate::http::{AppState, SharedState};
use crate::rest::UpdateTarget;

/// Entry point for every path that is not discovery, health or OpenAPI.
pub async fn handle(State(state): State<SharedState>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let user = parts.extensions.get::<UserInfo>();
    // kube warns on every request to a deprecated kind (`installer.go`) and to a deprecated
    // version of a custom resource (`customresource_handler.go`).
    let deprecation = path::parse(parts.uri.path())
        .and_then(|p| state.scope.resources.deprecation_warning(p.info));
    let served = dispatch(
        &state,
        &parts.method,
        &parts.uri,
        &parts.headers,
        body,
        user,
    );
    let (served, recorded) =
        rkcm_server::warning::scope(crate::auth::request_user::scope(user.cloned(), served)).await;
    let resp = match served {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    };
    // The deprecation warning first, as kube records it before the request is served.
    let warnings: Vec<String> = deprecation.into_iter().chain(recorded).collect();
    crate::http::encode::with_warnings(resp, &warnings)
}

/// `POST /api/v1/namespaces/{ns}/bindings` (the collection form of `pods/{name}/binding`).
fn bindings_namespace(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("/api/v1/namespaces/")?;
    let (ns, tail) = rest.split_once('/')?;
    (tail.trim_end_matches('/') == "bindings" && !ns.is_empty()).then_some(ns)
}

/// 405 unless the resource serves `verb`.
fn require_verb(info: &ResourceInfo, verb: &str, method: &Method) -> ApiResult<()> {
    if info.verbs.contains(&verb) {
        Ok(())
    } else {
        Err(ApiError::method_not_allowed(method.as_str()))
    }
}

/// Routes one resource request: a version served through a conversion to
/// [`crate::http::converted`], anything else to [`dispatch_stored`].
pub(crate) async fn dispatch(
    state: &SharedState,
    method: &Method,
    uri: &http::Uri,
    headers: &HeaderMap,
    body: Body,
    user: Option<&UserInfo>,
) -> ApiResult<Response> {
    if let Some(path) = path::parse(uri.path()) {
        // Reads in the storage version of a CRD converting by webhook convert what is stored
        // in an older version; writes store the storage version they are given.
        let conversion = crate::http::converted::conversion(path.info).or_else(|| {
            (*method == Method::GET)
                .then(|| crate::http::converted::stored_version_conversion(path.info))
                .flatten()
        });
        if let Some(conversion) = conversion {
            return Box::pin(crate::http::converted::serve(
                state, conversion, &path, method, uri, headers, body, user,
            ))
            .await;
        }
    }
    dispatch_stored(state, method, uri, headers, body, user).await
}

/// Routes one resource request as it is stored (also used by [`crate::http::converted`] to
/// serve a converted version through its storage version).
pub(crate) async fn dispatch_stored(
    state: &SharedState,
    method: &Method,
    uri: &http::Uri,
    headers: &HeaderMap,
    body: Body,
    user: Option<&UserInfo>,
) -> ApiResult<Response> {
    let params = Params::parse(uri.query())?;
    if crate::resource_metrics::serve::is_metrics_path(uri.path()) {
        let source = state
            .metrics_source
            .as_deref()
            .ok_or_else(ApiError::no_route)?;
        let body = crate::resource_metrics::serve::serve(
            source,
            method,
            uri.path(),
            params.non_empty("labelSelector"),
            params.non_empty("fieldSelector"),
        )?;
        return Ok(crate::http::json_value(http::StatusCode::OK, &body));
    }
    if let Some(ns) = bindings_namespace(uri.path()) {
        if method != Method::POST {
            return Err(ApiError::method_not_allowed(method.as_str()));
        }
        return binding::bind_collection(state, ns, headers, &params, body).await;
    }
    let path = path::parse(uri.path()).ok_or_else(ApiError::no_route)?;
    let info = path.info;
    let ns = path.namespace.as_deref();
    if let (Some(name), Some(sub)) = (path.name.as_deref(), path.subresource.as_deref()) {
        if let Some(stream) = PodStream::from_subresource(info, sub) {
            // Answered before content negotiation: these requests accept streams, not objects.
            return pod_streams::serve(
                state.store(),
                &state.scope.shutdown,
                info,
                ns,
                name,
                stream,
                method,
                &params,
            );
        }
        if (info.group, info.kind, sub) == ("", "Service", "proxy") {
            return Err(service_proxy(state, info, ns, name));
        }
    }
    let out = negotiate::output(headers, &params)?;
    let req = ResourceRequest {
        scope: &state.scope,
        info,
        namespace: ns,
        headers,
        params: &params,
        out,
        user,
    };
    if (info.group, info.kind) == ("", "ComponentStatus") {
        return match (path.name.as_deref(), path.subresource.as_deref(), method) {
            (None, None, &Method::GET) if !(path.watch || params.flag("watch")) => {
                component_statuses::list(state, &req).await
            }
            (Some(name), None, &Method::GET) if !path.watch => {
                component_statuses::get(state, &req, name).await
            }
            _ => Err(ApiError::method_not_allowed(method.as_str())),
        };
    }
    match (path.name.as_deref(), path.subresource.as_deref()) {
        (None, None) => match *method {
            Method::GET if path.watch || params.flag("watch") => {
                require_verb(info, "watch", method)?;
                watch::serve(&state.scope, info, ns, None, &params, out).await
            }
            Method::GET => {
                require_verb(info, "list", method)?;
                list::list(&req).await
            }
            Method::POST if info.group == "authentication.k8s.io" => {
                require_verb(info, "create", method)?;
                reviews::create(state, &req, user, body).await
            }
            Method::POST if info.group == "authorization.k8s.io" => {
                require_verb(info, "create", method)?;
                access_reviews::create(state, &req, user, body).await
            }
            Method::POST => {
                require_verb(info, "create", method)?;
                create::create(&req, body).await
            }
            Method::DELETE => {
                require_verb(info, "deletecollection", method)?;
                delete_collection::delete_collection(&req, body).await
            }
            _ => Err(ApiError::method_not_allowed(method.as_str())),
        },
        (Some(name), None) => match *method {
            Method::GET if path.watch => {
                require_verb(info, "watch", method)?;
                watch::serve(&state.scope, info, ns, Some(name), &params, out).await
            }
            Method::GET => {
                require_verb(info, "get", method)?;
                get::get(&req, name)
            }
            Method::PUT => {
                require_verb(info, "update", method)?;
                update::update(&req, name, body, UpdateTarget::Main).await
            }
            Method::PATCH => {
                require_verb(info, "patch", method)?;
                patch::patch(&req, name, body, UpdateTarget::Main).await
            }
            Method::DELETE => {
                require_verb(info, "delete", method)?;
                delete::delete(&req, name, body).await
            }
            _ => Err(ApiError::method_not_allowed(method.as_str())),
        },
        (Some(name), Some(sub)) => subresource(state, &req, name, sub, method, body).await,
        (None, Some(_)) => Err(ApiError::no_route()),
    }
}

/// Routes a subresource request (`status`, `scale`, `binding`, `eviction`, `finalize`,
/// `approval`) to its handler; 405 for verbs the subresource does not serve.
async fn subresource(
    state: &AppState,
    req: &ResourceRequest<'_>,
    name: &str,
    sub: &str,
    method: &Method,
    body: Body,
) -> ApiResult<Response> {
    let sub_verbs = req.info.subresource(sub).map(|s| s.verbs).unwrap_or(&[]);
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
    // A malformed dryRun is refused on every subresource request, reads included.
    req.write_options()?;
    match (sub, verb) {
        ("status", "get") => get::get(req, name),
        ("status", "update") => update::update(req, name, body, UpdateTarget::Status).await,
        ("finalize", "update") => {
            update::update(req, name, body, UpdateTarget::Subresource("finalize")).await
        }
        ("status", "patch") => patch::patch(req, name, body, UpdateTarget::Status).await,
        ("approval", "get") => get::get(req, name),
        ("approval", "update") => {
            update::update(req, name, body, UpdateTarget::Subresource("approval")).await
        }
        ("approval", "patch") => {
            patch::patch(req, name, body, UpdateTarget::Subresource("approval")).await
        }
        ("scale", "get") => scale::get(req, name),
        ("scale", "update") => scale::update(req, name, body).await,
        ("scale", "patch") => scale::patch(req, name, body).await,
        ("binding", "create") => binding::bind(req, name, body).await,
        ("eviction", "create") => eviction::evict(req, name, body).await,
        ("token", "create") => token_request::create_token(state, req, name, body).await,
        _ => Err(ApiError::method_not_allowed(method.as_str())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindings_collection_path() {
        assert_eq!(
            bindings_namespace("/api/v1/namespaces/ns/bindings"),
            Some("ns")
        );
        assert_eq!(bindings_namespace("/api/v1/namespaces/ns/pods"), None);
    }
}

/// `services/{[scheme:]name[:port]}/proxy`: after checking that the Service exists, kube's
/// answer for a Service without ready endpoints, or, when its Endpoints list ready addresses
/// (the endpoints controller keeps them), a 503 saying that those pods run on simulated nodes,
/// which run no containers to proxy to.
fn service_proxy(
    state: &SharedState,
    info: &'static ResourceInfo,
    ns: Option<&str>,
    name: &str,
) -> ApiError {
    let service = service_name(name);
    if state
        .store()
        .get(&crate::rest::key(info, ns, service))
        .is_none()
    {
        return ApiError::not_found(info, service);
    }
    let ready = rkcm_apimachinery::catalog::by_kind("v1", "Endpoints")
        .and_then(|endpoints| state.store().get(&crate::rest::key(endpoints, ns, service)))
        .map(|e| ready_endpoints(&e.value()))
        .unwrap_or_default();
    let message = match ready.as_slice() {
        [] => format!("no endpoints available for service {service:?}"),
        [first, rest @ ..] => {
            let more = match rest.len() {
                0 => String::new(),
                n => format!(" and {n} more"),
            };
            format!(
                "error trying to reach service {service:?}: its endpoints ({first}{more}) are pods \
                 on simulated nodes, which run no containers"
            )
        }
    };
    ApiError::new(503, "ServiceUnavailable", message)
}

/// The ready `ip:port` pairs (`ip` alone for a subset without ports) of an Endpoints object.
fn ready_endpoints(endpoints: &serde_json::Value) -> Vec<String> {
    let empty = Vec::new();
    let list =
        |v: Option<&serde_json::Value>| v.and_then(|v| v.as_array()).unwrap_or(&empty).clone();
    let mut out = Vec::new();
    for subset in list(endpoints.get("subsets")) {
        let ports: Vec<i64> = list(subset.get("ports"))
            .iter()
            .filter_map(|p| p.get("port").and_then(serde_json::Value::as_i64))
            .collect();
        for address in list(subset.get("addresses")) {
            let Some(ip) = address.get("ip").and_then(serde_json::Value::as_str) else {
                continue;
            };
            match ports.first() {
                Some(port) => out.push(format!("{ip}:{port}")),
                None => out.push(ip.to_string()),
            }
        }
    }
    out
}

/// The Service name of a proxy path segment `[scheme:]name[:port]`.
fn service_name(segment: &str) -> &str {
    let parts: Vec<&str> = segment.split(':').collect();
    match parts.as_slice() {
        [name] | [name, _] if !matches!(*name, "http" | "https") => name,
        [_, name] | [_, name, _] => name,
        _ => segment,
    }
}

#[cfg(test)]
mod proxy_tests {
    use super::{ready_endpoints, service_name};

    #[test]
    fn ready_endpoints_are_the_ready_addresses_with_their_first_port() {
        let endpoints = serde_json::json!({"subsets": [
            {"addresses": [{"ip": "10.0.0.1"}], "notReadyAddresses": [{"ip": "10.0.0.2"}],
             "ports": [{"port": 8080}]},
            {"addresses": [{"ip": "10.0.0.3"}]},
        ]});
        assert_eq!(ready_endpoints(&endpoints), ["10.0.0.1:8080", "10.0.0.3"]);
        assert!(ready_endpoints(&serde_json::json!({})).is_empty());
    }

    #[test]
    fn proxy_segments_name_the_service_with_an_optional_scheme_and_port() {
        assert_eq!(service_name("web"), "web");
        assert_eq!(service_name("web:80"), "web");
        assert_eq!(service_name("https:web:"), "web");
        assert_eq!(service_name("http:web:8080"), "web");
        assert_eq!(service_name("https:web"), "web");
    }
}
