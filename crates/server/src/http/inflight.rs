//! The in-flight request limit: kube-apiserver's `WithMaxInFlightLimit` filter
//! (`staging/src/k8s.io/apiserver/pkg/server/filters/maxinflight.go`), which runs in place of
//! API Priority and Fairness ([`crate::flowcontrol`]) when that is off.
//!
//! Read-only requests (`get`, `list`, `watch` and non-resource `GET`s) and mutating requests each
//! have their own pool (`--max-requests-inflight`, `--max-mutating-requests-inflight`; 0 means no
//! limit). A request that finds its pool full is not queued: it gets 429 with `Retry-After: 1`
//! and kube's plain-text body, and the client retries. Long-running requests (watches, `proxy`,
//! `exec`, `attach`, `portforward`, `log`) hold no seat, and members of `system:masters` are
//! never refused, as kube's filter lets the privileged group through when the pool is full.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{header, Method, StatusCode};
use tokio::sync::Semaphore;

use crate::auth::user::SYSTEM_MASTERS;
use crate::auth::UserInfo;
use crate::metrics;

/// kube-apiserver's default `--max-requests-inflight`.
pub const DEFAULT_MAX_REQUESTS_INFLIGHT: usize = 400;
/// kube-apiserver's default `--max-mutating-requests-inflight`.
pub const DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT: usize = 200;

/// The body kube's filter answers a refused request with (`tooManyRequests`).
pub const TOO_MANY_REQUESTS: &str = "Too many requests, please try again later.\n";

/// The two pools of seats.
#[derive(Debug)]
pub struct InFlightLimits {
    read_only: Option<Arc<Semaphore>>,
    mutating: Option<Arc<Semaphore>>,
}

impl InFlightLimits {
    /// Pools of `read_only` and `mutating` seats; a zero leaves that kind of request unlimited.
    pub fn new(read_only: usize, mutating: usize) -> Self {
        let pool = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        Self {
            read_only: pool(read_only),
            mutating: pool(mutating),
        }
    }
}

/// How the filter treats a request.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    LongRunning,
    ReadOnly,
    Mutating,
}

/// kube's `BasicLongRunningRequestCheck(watch, proxy; attach, exec, proxy, log, portforward)` and
/// `nonMutatingRequestVerbs` (get, list, watch), over the request's method, path and query.
fn classify(method: &Method, path: &str, query: Option<&str>) -> Kind {
    match metrics::labels_for(method, path, query, None) {
        Some(l)
            if l.verb == "WATCH"
                || l.verb == "CONNECT"
                || matches!(l.subresource, "proxy" | "log" | "portforward") =>
        {
            Kind::LongRunning
        }
        Some(l) if matches!(l.verb, "GET" | "LIST") => Kind::ReadOnly,
        Some(_) => Kind::Mutating,
        // Non-resource requests: the verb is the lower-cased method.
        None if matches!(*method, Method::GET | Method::HEAD) => Kind::ReadOnly,
        None => Kind::Mutating,
    }
}

/// The middleware; it runs after authentication, which put the [`UserInfo`] in the request.
pub async fn limit(
    State(limits): State<Arc<InFlightLimits>>,
    req: Request,
    next: Next,
) -> Response {
    let pool = match classify(req.method(), req.uri().path(), req.uri().query()) {
        Kind::LongRunning => None,
        Kind::ReadOnly => limits.read_only.as_ref(),
        Kind::Mutating => limits.mutating.as_ref(),
    };
    let Some(pool) = pool else {
        return next.run(req).await;
    };
    match Arc::clone(pool).try_acquire_owned() {
        // The seat is held until the body has been sent, as kube's handler writes it first.
        Ok(seat) => crate::http::held::hold_until_sent(next.run(req).await, seat),
        Err(_) if privileged(&req) => next.run(req).await,
        Err(_) => too_many_requests(),
    }
}

fn privileged(req: &Request) -> bool {
    req.extensions()
        .get::<UserInfo>()
        .is_some_and(|u| u.groups.iter().any(|g| g == SYSTEM_MASTERS))
}

/// kube's `tooManyRequests`: 429, `Retry-After: 1`, a plain-text body (`http.Error`).
fn too_many_requests() -> Response {
    (
        StatusCode::TOO_MANY_REQUESTS,
        [
            (header::RETRY_AFTER, "1"),
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        TOO_MANY_REQUESTS,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_classified_as_kube_filter_does() {
        let pods = "/api/v1/namespaces/ns/pods";
        assert_eq!(classify(&Method::GET, pods, None), Kind::ReadOnly);
        assert_eq!(
            classify(&Method::GET, pods, Some("watch=true")),
            Kind::LongRunning
        );
        assert_eq!(
            classify(&Method::GET, "/api/v1/watch/namespaces/ns/pods", None),
            Kind::LongRunning
        );
        assert_eq!(
            classify(&Method::GET, "/api/v1/namespaces/ns/pods/p/log", None),
            Kind::LongRunning
        );
        assert_eq!(
            classify(&Method::POST, "/api/v1/namespaces/ns/pods/p/exec", None),
            Kind::LongRunning
        );
        assert_eq!(
            classify(&Method::GET, "/api/v1/namespaces/ns/pods/p", None),
            Kind::ReadOnly
        );
        assert_eq!(classify(&Method::POST, pods, None), Kind::Mutating);
        assert_eq!(
            classify(&Method::PATCH, "/api/v1/namespaces/ns/pods/p/status", None),
            Kind::Mutating
        );
        assert_eq!(classify(&Method::DELETE, pods, None), Kind::Mutating);
        assert_eq!(classify(&Method::GET, "/apis", None), Kind::ReadOnly);
        assert_eq!(classify(&Method::GET, "/healthz", None), Kind::ReadOnly);
    }

    #[test]
    fn zero_leaves_a_pool_unlimited() {
        let limits = InFlightLimits::new(0, 3);
        assert!(limits.read_only.is_none());
        assert_eq!(
            limits.mutating.as_ref().map(|s| s.available_permits()),
            Some(3)
        );
    }

    #[tokio::test]
    async fn a_full_pool_answers_429_but_lets_system_masters_through() {
        use axum::body::{to_bytes, Body};
        use tower::ServiceExt;

        let gate = crate::http::gate::Gate::default();
        let app = gate.router().layer(axum::middleware::from_fn_with_state(
            Arc::new(InFlightLimits::new(0, 1)),
            limit,
        ));
        let request = |method: Method, user: UserInfo| {
            let mut req = Request::builder()
                .method(method)
                .uri("/api/v1/namespaces/ns/configmaps")
                .body(Body::empty())
                .expect("request");
            req.extensions_mut().insert(user);
            req
        };
        let jane = UserInfo::new("jane", &["system:authenticated"]);
        let admin = UserInfo::new("admin", &[SYSTEM_MASTERS, "system:authenticated"]);

        let first = tokio::spawn(app.clone().oneshot(request(Method::POST, jane.clone())));
        gate.entered().await;

        let refused = app
            .clone()
            .oneshot(request(Method::POST, jane.clone()))
            .await
            .expect("answered");
        assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            refused
                .headers()
                .get(header::RETRY_AFTER)
                .map(|v| v.as_bytes()),
            Some(&b"1"[..])
        );
        let body = to_bytes(refused.into_body(), 1024).await.expect("body");
        assert_eq!(&body[..], TOO_MANY_REQUESTS.as_bytes());

        // Reads have their own (here unlimited) pool; the privileged group is never refused.
        let read = tokio::spawn(app.clone().oneshot(request(Method::GET, jane)));
        let privileged = tokio::spawn(app.clone().oneshot(request(Method::POST, admin)));
        gate.entered().await;
        gate.entered().await;
        gate.open(3);
        for task in [first, read, privileged] {
            let resp = task.await.expect("joined").expect("answered");
            assert_eq!(resp.status(), StatusCode::OK);
        }
    }

    #[tokio::test]
    async fn a_seat_is_held_until_the_body_has_been_read() {
        use axum::body::{to_bytes, Body};
        use tower::ServiceExt;

        let gate = crate::http::gate::Gate::default();
        let limits = Arc::new(InFlightLimits::new(0, 1));
        let app = gate.router().layer(axum::middleware::from_fn_with_state(
            Arc::clone(&limits),
            limit,
        ));
        let mut req = Request::builder()
            .method(Method::POST)
            .uri("/api/v1/namespaces/ns/configmaps")
            .body(Body::empty())
            .expect("request");
        req.extensions_mut()
            .insert(UserInfo::new("jane", &["system:authenticated"]));
        gate.open(1);
        let answered = app.oneshot(req).await.expect("answered");
        let free = || limits.mutating.as_ref().map(|s| s.available_permits());
        assert_eq!(free(), Some(0));
        let body = to_bytes(answered.into_body(), 1024).await.expect("body");
        assert_eq!(&body[..], b"served");
        assert_eq!(free(), Some(1));
    }
}
