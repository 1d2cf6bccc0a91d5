//! The secure port's request filters, as kube's `WithAuthentication` and `WithAuthorization`:
//! 401 with kube's `Unauthorized` Status, 403 with its `Forbidden` Status naming the user, verb
//! and path, 500 when the access review failed.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{header, StatusCode};
use serde_json::json;

use super::authz::Decision;
use super::{Endpoint, PeerCertificates};

/// Authenticates, then authorizes, then passes the request on.
pub async fn authenticate_and_authorize(
    State(endpoint): State<Arc<Endpoint>>,
    request: Request,
    next: Next,
) -> Response {
    let peer = request
        .extensions()
        .get::<PeerCertificates>()
        .cloned()
        .unwrap_or_default();
    let user = match endpoint
        .authn
        .authenticate(request.headers(), &peer.0)
        .await
    {
        Ok(user) => user,
        Err(err) => {
            tracing::debug!(%err, "unable to authenticate the request");
            return unauthorized();
        }
    };
    let verb = request.method().as_str().to_ascii_lowercase();
    let path = request.uri().path().to_string();
    match endpoint.authz.authorize(&user, &verb, &path).await {
        Decision::Allow => next.run(request).await,
        Decision::Deny(reason) => forbidden(&user.name, &verb, &path, &reason),
        Decision::Error(err) => {
            let uri = request
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_string())
                .unwrap_or(path);
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                format!("Internal Server Error: {uri:?}: {err}\n"),
            )
                .into_response()
        }
    }
}

fn status(code: StatusCode, body: serde_json::Value) -> Response {
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = code;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

/// kube's `responsewriters.Unauthorized`.
pub fn unauthorized() -> Response {
    status(
        StatusCode::UNAUTHORIZED,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Unauthorized", "reason": "Unauthorized", "code": 401}),
    )
}

/// kube's `responsewriters.Forbidden` for a non-resource request.
pub fn forbidden(user: &str, verb: &str, path: &str, reason: &str) -> Response {
    status(
        StatusCode::FORBIDDEN,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": forbidden_message(user, verb, path, reason),
               "reason": "Forbidden", "details": {}, "code": 403}),
    )
}

/// `forbidden: User "u" cannot get path "/metrics"`, with the authorizer's reason after a colon.
pub fn forbidden_message(user: &str, verb: &str, path: &str, reason: &str) -> String {
    let message = format!("forbidden: User {user:?} cannot {verb} path {path:?}");
    if reason.is_empty() {
        message
    } else {
        format!("{message}: {reason}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_names_user_verb_and_path_as_kube() {
        assert_eq!(
            forbidden_message("system:anonymous", "get", "/metrics", ""),
            "forbidden: User \"system:anonymous\" cannot get path \"/metrics\""
        );
        assert_eq!(
            forbidden_message("bob", "get", "/configz", "no RBAC policy matched"),
            "forbidden: User \"bob\" cannot get path \"/configz\": no RBAC policy matched"
        );
    }
}
