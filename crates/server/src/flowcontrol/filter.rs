//! The API Priority and Fairness filter (`staging/src/k8s.io/apiserver/pkg/server/filters/priority-and-fairness.go`).
//!
//! Long-running requests other than watches (`proxy`, and the `attach`, `exec`, `log`,
//! `portforward` subresources) bypass it. A watch holds its seat until its handler answers,
//! that is until the watch is set up and its response starts, as kube holds one until the
//! watch's initialization; the events that follow hold none.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::auth::authorization::Attributes;
use crate::auth::UserInfo;

use super::controller::FlowControl;

/// Subresources of long-running requests (`BasicLongRunningRequestCheck`).
const LONG_RUNNING_SUBRESOURCES: [&str; 5] = ["attach", "exec", "proxy", "log", "portforward"];

/// Whether `request` is long-running and not a watch: such requests are not limited.
pub fn bypasses(request: &Attributes) -> bool {
    request.verb == "proxy"
        || (request.resource_request
            && LONG_RUNNING_SUBRESOURCES.contains(&request.subresource.as_str()))
}

/// The middleware; it runs after authentication and authorization, which leave the request's
/// [`Attributes`] in its extensions (they are derived here otherwise).
pub async fn priority_and_fairness(
    State(fc): State<Arc<FlowControl>>,
    req: Request,
    next: Next,
) -> Response {
    let attributes = match req.extensions().get::<Arc<Attributes>>() {
        Some(a) => Arc::clone(a),
        None => {
            let user = req
                .extensions()
                .get::<UserInfo>()
                .cloned()
                .unwrap_or_else(UserInfo::anonymous);
            Arc::new(Attributes::from_request(
                user,
                req.method(),
                req.uri().path(),
                req.uri().query(),
            ))
        }
    };
    if bypasses(&attributes) {
        return next.run(req).await;
    }
    fc.handle(attributes, next.run(req)).await
}
