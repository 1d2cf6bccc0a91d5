//! The authorization filter (`filters/authorization.go`): every request, resource or not, watch
//! included, is allowed by the authorizer or refused with kube's 403. The decision and its
//! reason are noted for the request's audit events (`audit_annotations.go`).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::is_public;
use crate::audit::AuditContext;
use crate::auth::authorization::{forbidden, Attributes, Authorize};
use crate::auth::UserInfo;

/// Lets the request through when the authorizer allows its user to do what it asks; 403 with
/// kube's message otherwise. The anonymous user reaches only the public paths, which
/// authentication already checked.
pub async fn authorize(
    State(authorizer): State<Arc<dyn Authorize>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(user) = req.extensions().get::<UserInfo>() else {
        return next.run(req).await;
    };
    if user.is_anonymous() && is_public(req.uri().path()) {
        return next.run(req).await;
    }
    let attrs = Attributes::from_request(
        user.clone(),
        req.method(),
        req.uri().path(),
        req.uri().query(),
    );
    let decision = authorizer.authorize(&attrs);
    if let Some(audit) = req.extensions().get::<AuditContext>() {
        audit.record_authorization(decision.is_allowed(), decision.reason());
    }
    if decision.is_allowed() {
        // The filters after this one (priority and fairness) read what the request asks for.
        let mut req = req;
        req.extensions_mut().insert(Arc::new(attrs));
        return next.run(req).await;
    }
    tracing::debug!(uri = %req.uri(), reason = decision.reason(), user = %attrs.user.name, "forbidden");
    forbidden(&attrs, decision.reason()).into_response()
}
