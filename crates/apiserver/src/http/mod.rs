//! HTTP layer: routing, authentication, content negotiation and the handlers.

pub mod body;
pub mod decode;
pub mod discovery;
pub mod encode;
pub mod field_validation;
pub mod filter;
pub mod handlers;
pub mod negotiate;
pub mod params;
pub mod path;
pub mod pod_streams;
pub mod resource;
pub mod table;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use http::header;

use crate::allocators::ServiceAllocators;
use crate::error::ApiError;
use crate::store::Store;

pub use body::{read_body, MAX_BODY_BYTES};
pub use encode::{json_response, json_value};

/// What every handler shares.
pub struct AppState {
    /// Objects.
    pub store: Store,
    /// Cluster IPs and node ports of Services.
    pub services: Arc<ServiceAllocators>,
    /// Bearer token that grants access; `None` disables authentication.
    pub token: Option<String>,
    /// Interval between watch bookmarks.
    pub bookmark_interval: Duration,
    /// Cancelled when the server stops; open watches end.
    pub shutdown: tokio_util::sync::CancellationToken,
}

/// Shared handler state.
pub type SharedState = Arc<AppState>;

/// The router serving every endpoint.
pub fn router(state: SharedState) -> Router {
    Router::new()
        .route("/version", get(discovery::version))
        .route("/version/", get(discovery::version))
        .route("/healthz", get(health))
        .route("/livez", get(health))
        .route("/readyz", get(health))
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
        .fallback(resource::handle)
        .layer(crate::metrics::RequestMetrics::new())
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&state),
            authenticate,
        ))
        .with_state(state)
}

async fn health() -> &'static str {
    "ok"
}

/// Paths served without a token (as kube's `system:public-info-viewer`).
fn is_public(path: &str) -> bool {
    matches!(
        path,
        "/healthz" | "/livez" | "/readyz" | "/version" | "/version/"
    )
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Rejects requests without the admin bearer token with 401 Unauthorized.
async fn authenticate(State(state): State<SharedState>, req: Request, next: Next) -> Response {
    if let Some(token) = &state.token {
        if !is_public(req.uri().path()) {
            let presented = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| {
                    v.strip_prefix("Bearer ")
                        .or_else(|| v.strip_prefix("bearer "))
                })
                .map(str::trim);
            if !presented.is_some_and(|p| constant_time_eq(p.as_bytes(), token.as_bytes())) {
                return ApiError::unauthorized().into_response();
            }
        }
    }
    let method = req.method().clone();
    let uri = req.uri().clone();
    let resp = next.run(req).await;
    tracing::debug!(%method, %uri, status = resp.status().as_u16(), "request");
    resp
}
