//! The proxy of `handler_proxy.go`: a request under `/apis/<group>/<version>` of a remote
//! APIService, authenticated and authorized by rkcm, goes to a ready endpoint of the
//! APIService's Service over HTTPS, with the user in `X-Remote-*` headers; the response, watch
//! streams and chunked lists included, comes back as it arrives.
//!
//! Errors read as kube's: plain text from Go's `http.Error`, 503 `service unavailable` while
//! the APIService is not `Available` or its Service has no endpoint, 503 with the dial error
//! when the server cannot be reached. A redirect from the aggregated server is not passed on
//! (kube-apiserver's `--aggregator-reject-forwarding-redirect`, on by default): the client
//! gets 502.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{header, HeaderValue, StatusCode};

use rkcm_server::webhook::{dial, service};

use super::headers;
use super::remote::Remote;
use crate::auth::UserInfo;
use crate::http::SharedState;

/// How long connecting to the aggregated server and receiving a response's head may take
/// (kube-apiserver's default `--request-timeout`); a watch then streams for as long as it lasts.
const RESPONSE_HEAD_TIMEOUT: Duration = Duration::from_secs(60);

/// The group and version of a path under `/apis/<group>/<version>`; `None` elsewhere (`/api`
/// is always served locally).
pub fn group_version(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("/apis/")?;
    let mut segments = rest.splitn(3, '/');
    let group = segments.next().filter(|g| !g.is_empty())?;
    let version = segments.next().filter(|v| !v.is_empty())?;
    Some((group, version))
}

/// The body of the 502 answered in place of a redirect.
const REDIRECT_REFUSED: &str =
    "the backend attempted to redirect this request, which is not permitted";

/// Whether an answer of the aggregated server is a redirect, which is not passed on: a 3xx
/// status with a `Location`.
pub fn is_redirect(status: StatusCode, headers: &http::HeaderMap) -> bool {
    status.is_redirection()
        && headers
            .get(header::LOCATION)
            .is_some_and(|l| !l.as_bytes().is_empty())
}

/// Middleware: sends requests of remote APIServices on, leaves the others to the local
/// handlers. Runs after authentication and authorization.
pub async fn proxy(State(state): State<SharedState>, req: Request, next: Next) -> Response {
    let remote = group_version(req.uri().path())
        .and_then(|(group, version)| state.aggregator.remote(group, version));
    match remote {
        Some(remote) => forward(&state, &remote, req).await,
        None => next.run(req).await,
    }
}

/// Go's `http.Error`: the text and a newline, as plain text.
fn plain_error(code: StatusCode, text: &str) -> Response {
    (
        code,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            ),
            (
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            ),
        ],
        format!("{text}\n"),
    )
        .into_response()
}

async fn forward(state: &SharedState, remote: &Remote, req: Request) -> Response {
    if !remote.available {
        return plain_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
    }
    let tls = match &remote.tls {
        Ok(tls) => Arc::clone(tls),
        Err(e) => return plain_error(StatusCode::INTERNAL_SERVER_ERROR, e),
    };
    let Some(user) = req.extensions().get::<UserInfo>().cloned() else {
        return plain_error(StatusCode::INTERNAL_SERVER_ERROR, "missing user");
    };
    let addr = match service::resolve(state.store(), &remote.service) {
        Ok(addr) => addr,
        Err(e) => {
            tracing::warn!(
                namespace = %remote.service.namespace,
                service = %remote.service.name,
                error = %e,
                "cannot resolve the service of an APIService"
            );
            return plain_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
        }
    };
    let (parts, body) = req.into_parts();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    let mut outbound = match http::Request::builder()
        .method(parts.method)
        .uri(path_and_query)
        .body(body)
    {
        Ok(r) => r,
        Err(e) => return plain_error(StatusCode::BAD_REQUEST, &e.to_string()),
    };
    let mut sent = parts.headers;
    headers::strip_hop_by_hop(&mut sent);
    headers::set_remote_user(&mut sent, &user);
    if let Ok(host) = HeaderValue::from_str(&addr.to_string()) {
        sent.insert(header::HOST, host);
    }
    *outbound.headers_mut() = sent;
    let server_name = remote.service.host();
    let answer = tokio::time::timeout(
        RESPONSE_HEAD_TIMEOUT,
        dial::send(addr, &server_name, tls, outbound),
    )
    .await;
    match answer {
        Err(_) => plain_error(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("dial tcp {addr}: i/o timeout"),
        ),
        Ok(Err(e)) => {
            tracing::debug!(apiservice = %remote.name, error = %e, "proxying failed");
            plain_error(StatusCode::SERVICE_UNAVAILABLE, &e)
        }
        Ok(Ok(response)) if is_redirect(response.status(), response.headers()) => (
            StatusCode::BAD_GATEWAY,
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            )],
            REDIRECT_REFUSED,
        )
            .into_response(),
        Ok(Ok(response)) => {
            let (mut parts, body) = response.into_parts();
            headers::strip_hop_by_hop(&mut parts.headers);
            parts.version = http::Version::default();
            Response::from_parts(parts, Body::new(body))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_under_a_group_version_are_matched() {
        assert_eq!(
            group_version("/apis/metrics.k8s.io/v1beta1"),
            Some(("metrics.k8s.io", "v1beta1"))
        );
        assert_eq!(
            group_version("/apis/wardle.example.com/v1alpha1/namespaces/a/flunders/b"),
            Some(("wardle.example.com", "v1alpha1"))
        );
        assert_eq!(group_version("/apis/a.io/v1/"), Some(("a.io", "v1")));
        assert_eq!(group_version("/apis/a.io"), None);
        assert_eq!(group_version("/apis/a.io/"), None);
        assert_eq!(group_version("/apis"), None);
        assert_eq!(group_version("/api/v1/pods"), None);
        assert_eq!(group_version("/apisx/a/v1"), None);
    }

    #[test]
    fn redirects_are_3xx_answers_with_a_location() {
        let mut headers = http::HeaderMap::new();
        assert!(!is_redirect(StatusCode::FOUND, &headers));
        headers.insert(
            header::LOCATION,
            HeaderValue::from_static("https://elsewhere/"),
        );
        assert!(is_redirect(StatusCode::FOUND, &headers));
        assert!(is_redirect(StatusCode::PERMANENT_REDIRECT, &headers));
        assert!(!is_redirect(StatusCode::OK, &headers));
        assert!(!is_redirect(
            StatusCode::NOT_MODIFIED,
            &http::HeaderMap::new()
        ));
    }

    #[test]
    fn errors_are_plain_text_as_go_writes_them() {
        let r = plain_error(StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
        assert_eq!(r.status(), 503);
        assert_eq!(
            r.headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok()),
            Some("text/plain; charset=utf-8")
        );
    }
}
