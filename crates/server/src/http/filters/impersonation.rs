//! The impersonation filter (`filters/impersonation.go`): a request with `Impersonate-*`
//! headers continues as the user they name, once the authorizer allowed the caller to
//! impersonate each part of it ([`crate::auth::impersonation`]).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::audit::AuditContext;
use crate::auth::authorization::Authorize;
use crate::auth::{impersonation, UserInfo};

/// Replaces the request's user by the impersonated one, or answers kube's 403 (500 for
/// groups or extras without a user).
pub async fn impersonate(
    State(authorizer): State<Arc<dyn Authorize>>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(requestor) = req.extensions().get::<UserInfo>().cloned() else {
        return next.run(req).await;
    };
    match impersonation::impersonate(&requestor, req.headers(), |a| authorizer.authorize(a)) {
        Ok(None) => next.run(req).await,
        Ok(Some(user)) => {
            tracing::debug!(requestor = %requestor.name, user = %user.name, "impersonating");
            impersonation::strip_headers(req.headers_mut());
            if let Some(audit) = req.extensions().get::<AuditContext>() {
                audit.set_impersonated_user(user.clone());
            }
            req.extensions_mut().insert(user);
            next.run(req).await
        }
        Err(e) => e.into_response(),
    }
}
