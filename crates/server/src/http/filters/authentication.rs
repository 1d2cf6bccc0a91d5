//! The authentication filter (`filters/authentication.go`): every request is authenticated and
//! carries its [`UserInfo`] on; credentials go no further.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::header;

use crate::auth::{Authenticator, ClientCertificate, UserInfo};
use crate::error::ApiError;

/// Paths the anonymous user may read: kube's `system:public-info-viewer` (health and version).
/// The issuer discovery documents are not among them: kube binds
/// `system:service-account-issuer-discovery` to `system:serviceaccounts` only and leaves opening
/// it to anonymous callers to the cluster admin.
pub fn is_public(path: &str) -> bool {
    matches!(
        path,
        "/healthz" | "/livez" | "/readyz" | "/version" | "/version/"
    )
}

/// Marks the responses of requests whose authentication failed, for the audit filter outside
/// (kube's failed-authentication handler, `filters/authn_audit.go`).
#[derive(Clone, Copy, Debug)]
pub struct AuthenticationFailed;

/// Authenticates every request and puts its [`UserInfo`] in the request's extensions. Bad
/// credentials get 401 Unauthorized anywhere; the anonymous user gets 401 except on the public
/// paths. What the user may do is [`super::authorize`]'s decision.
pub async fn authenticate(
    State(auth): State<Arc<Authenticator>>,
    mut req: Request,
    next: Next,
) -> Response {
    let user: Result<UserInfo, _> = auth.authenticate(
        req.headers(),
        req.extensions().get::<ClientCertificate>(),
        jiff::Timestamp::now(),
    );
    let user = match user {
        Ok(user) => user,
        Err(why) => {
            tracing::debug!(uri = %req.uri(), reason = %why, "unable to authenticate the request");
            return unauthorized();
        }
    };
    if user.is_anonymous() && !is_public(req.uri().path()) {
        return unauthorized();
    }
    // As kube, credentials do not travel further than authentication.
    req.headers_mut().remove(header::AUTHORIZATION);
    req.extensions_mut().insert(user);
    let method = req.method().clone();
    let uri = req.uri().clone();
    let resp = next.run(req).await;
    tracing::debug!(%method, %uri, status = resp.status().as_u16(), "request");
    resp
}

/// kube's 401, marked as a failed authentication.
fn unauthorized() -> Response {
    let mut resp = ApiError::unauthorized().into_response();
    resp.extensions_mut().insert(AuthenticationFailed);
    resp
}
