//! The HTTP endpoints of Kubernetes' API: the router with its filters, discovery and OpenAPI,
//! the dispatch of resource requests to their handlers (the generic ones of
//! [`rkcm_server::http::handlers`], and the subresources with rules of their own), the pod
//! streams and the versions served through a conversion. The generic parts (filters, bodies,
//! parameters, negotiation, encoding, the verbs' handlers) are [`rkcm_server::http`]'s.

pub mod converted;
pub mod discovery;
pub mod handlers;
pub mod pod_log_follow;
pub mod pod_streams;
pub mod resource;

pub use rkcm_server::http::filters::is_public;
pub use rkcm_server::http::{
    body, decode, encode, field_manager, field_validation, filter, inflight, negotiate, params,
    path, table,
};

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::header;

use crate::allocators::ServiceAllocators;
use crate::auth::{oidc, Authenticator};
use crate::store::Store;
use rkcm_server::auth::authorization::Authorize;
use rkcm_server::http::filters;
use rkcm_server::http::handlers::Scope;

pub use body::{read_body, MAX_BODY_BYTES};
pub use encode::{json_response, json_value};

/// What every handler shares: the generic handlers' [`Scope`] and what the kind-specific
/// endpoints need besides.
pub struct AppState {
    /// The store, the API served, admission, write checks, metrics and the server's lifetime,
    /// as the generic resource handlers take them.
    pub scope: Arc<Scope>,
    /// Cluster IPs and node ports of Services.
    pub services: Arc<ServiceAllocators>,
    /// The API served, with the hooks of its storages (the same as the scope's).
    pub resources: Arc<crate::rest::KubeResources>,
    /// Who sent a request.
    pub auth: Arc<Authenticator>,
    /// Whether the user may do what they ask.
    pub authorizer: Arc<crate::auth::Authorizer>,
    /// Limits of requested service-account tokens.
    pub token_expiration: TokenExpiration,
    /// The `/.well-known/openid-configuration` document.
    pub openid_configuration: serde_json::Value,
    /// Seats for requests in flight (`--max-requests-inflight`,
    /// `--max-mutating-requests-inflight`).
    pub inflight: Arc<inflight::InFlightLimits>,
    /// API Priority and Fairness; `None` when off, and then `inflight` limits requests.
    pub flowcontrol: Option<Arc<rkcm_server::flowcontrol::FlowControl>>,
    /// What serves `metrics.k8s.io` (the group is not served without one).
    pub metrics_source: Option<Arc<dyn crate::resource_metrics::MetricsSource>>,
    /// The components `componentstatuses` reports on.
    pub components: crate::component_status::Components,
    /// The APIServices served by another server, proxied to.
    pub aggregator: Arc<crate::aggregator::Aggregator>,
    /// Audit logging; `None` when off, and then no audit filter runs.
    pub auditor: Option<Arc<rkcm_server::audit::Auditor>>,
}

impl AppState {
    /// The store of objects.
    pub fn store(&self) -> &Store {
        &self.scope.store
    }
}

/// How long requested service-account tokens live (`--service-account-max-token-expiration`,
/// `--service-account-extend-token-expiration`).
#[derive(Clone, Copy, Debug)]
pub struct TokenExpiration {
    /// Longest validity granted, in seconds; no limit when `None`.
    pub max_seconds: Option<i64>,
    /// Whether pod-bound tokens asking for kube's warn-only expiration get a year.
    pub extend: bool,
}

/// Shared handler state.
pub type SharedState = Arc<AppState>;

/// The router serving every endpoint.
pub fn router(state: SharedState) -> Router {
    let router = Router::new()
        .route("/version", get(discovery::version))
        .route("/version/", get(discovery::version))
        .route("/healthz", get(health))
        .route("/livez", get(health))
        .route("/readyz", get(readyz))
        .route("/api", get(discovery::api))
        .route("/api/", get(discovery::api))
        .route("/api/v1", get(discovery::core_v1))
        .route("/api/v1/", get(discovery::core_v1))
        .route("/apis", get(discovery::apis))
        .route("/apis/", get(discovery::apis))
        .route("/apis/{group}", get(discovery::group))
        .route("/apis/{group}/{version}", get(discovery::group_version))
        .route("/openapi/v2", get(discovery::openapi_v2))
        .route("/openapi/v3", get(discovery::openapi_v3_index))
        .route("/openapi/v3/{*path}", get(discovery::openapi_v3_document))
        .route(oidc::CONFIGURATION_PATH, get(openid_configuration))
        .route(oidc::JWKS_PATH, get(jwks))
        .route(
            "/debug/api_priority_and_fairness/dump_priority_levels",
            get(dump_priority_levels),
        )
        .route(
            "/debug/api_priority_and_fairness/dump_queues",
            get(dump_queues),
        )
        .route(
            "/debug/api_priority_and_fairness/dump_requests",
            get(dump_requests),
        )
        .fallback(resource::handle)
        // Innermost: requests of remote APIServices leave after every filter ran.
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            crate::aggregator::proxy::proxy,
        ));
    // API Priority and Fairness, or the plain in-flight limits: after authorization (whose
    // request attributes it classifies by), before the handlers. kube runs them just before
    // authorization, so there a forbidden request also takes a seat; here it takes none.
    let router = match &state.flowcontrol {
        Some(fc) => router.layer(axum::middleware::from_fn_with_state(
            Arc::clone(fc),
            rkcm_server::flowcontrol::priority_and_fairness,
        )),
        None => router.layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state.inflight),
            inflight::limit,
        )),
    };
    let router = router
        .layer(state.scope.metrics.clone())
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state.authorizer) as Arc<dyn Authorize>,
            filters::authorize,
        ))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state.authorizer) as Arc<dyn Authorize>,
            filters::impersonate,
        ));
    // Auditing sits between authentication and impersonation, as kube's, and its id outside
    // both: every response carries an `Audit-Id`, audited or not, as kube-apiserver's.
    let router = match &state.auditor {
        Some(auditor) => router.layer(axum::middleware::from_fn_with_state(
            Arc::clone(auditor),
            filters::audit,
        )),
        None => router,
    };
    let router = router.layer(axum::middleware::from_fn_with_state(
        Arc::clone(&state.auth),
        filters::authenticate,
    ));
    let router = router.layer(axum::middleware::from_fn_with_state(
        state.auditor.clone(),
        filters::audit_init,
    ));
    router.with_state(state)
}

/// The dumps of API Priority and Fairness (`apf_controller_debug.go`); 404 when it is off.
fn dump(
    state: &SharedState,
    f: impl FnOnce(&rkcm_server::flowcontrol::FlowControl) -> String,
) -> Response {
    match &state.flowcontrol {
        Some(fc) => ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], f(fc)).into_response(),
        None => http::StatusCode::NOT_FOUND.into_response(),
    }
}

async fn dump_priority_levels(State(state): State<SharedState>) -> Response {
    dump(&state, |fc| fc.dump_priority_levels())
}

async fn dump_queues(State(state): State<SharedState>) -> Response {
    dump(&state, |fc| fc.dump_queues())
}

/// `?includeRequestDetails=<anything>` adds who sent each request and what it asks for.
async fn dump_requests(State(state): State<SharedState>, uri: http::Uri) -> Response {
    let details = uri.query().is_some_and(|q| {
        q.split('&')
            .filter_map(|kv| kv.split_once('='))
            .any(|(k, v)| k == "includeRequestDetails" && !v.is_empty())
    });
    dump(&state, |fc| fc.dump_requests(details))
}

async fn health() -> &'static str {
    "ok"
}

/// kube-apiserver's `--etcd-readycheck-timeout` default.
const STORAGE_READY_TIMEOUT: Duration = Duration::from_secs(2);

/// `/readyz`: ready while the store answers a read, as kube-apiserver's `etcd` readiness check
/// (so a load balancer in front of several API servers skips one that lost its etcd).
async fn readyz(State(state): State<SharedState>) -> Response {
    match tokio::time::timeout(STORAGE_READY_TIMEOUT, state.store().check_health()).await {
        Ok(Ok(())) => "ok".into_response(),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readyz: the storage check failed");
            not_ready()
        }
        Err(_) => {
            tracing::warn!("readyz: the storage did not answer within 2s");
            not_ready()
        }
    }
}

fn not_ready() -> Response {
    (
        http::StatusCode::INTERNAL_SERVER_ERROR,
        "[-]etcd failed: reason withheld\nreadyz check failed\n",
    )
        .into_response()
}

/// `/.well-known/openid-configuration`.
async fn openid_configuration(State(state): State<SharedState>) -> Response {
    oidc_response(&state.openid_configuration)
}

/// `/openid/v1/jwks`.
async fn jwks(State(state): State<SharedState>) -> Response {
    oidc_response(&oidc::jwks(state.auth.service_accounts().key()))
}

fn oidc_response(value: &serde_json::Value) -> Response {
    let mut resp = json_value(http::StatusCode::OK, value);
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static(oidc::CACHE_CONTROL),
    );
    resp
}
