//! POST of an `Eviction` (`pods/{name}/eviction`): a delete with the eviction's options.

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;

use crate::error::ApiResult;
use crate::http::body::read_body;
use crate::http::decode::decode_json;
use crate::http::encode::success;
use crate::http::handlers::ResourceRequest;
use crate::rest::{self, DeleteOptions};

/// Evicts pod `name`. No PodDisruptionBudgets are served, so every eviction is allowed: it is
/// a delete with the eviction's `DeleteOptions`.
pub async fn evict(req: &ResourceRequest<'_>, name: &str, body: Body) -> ApiResult<Response> {
    let bytes = read_body(req.headers, body).await?;
    let eviction = decode_json(req.headers, &bytes)?;
    let mut del = DeleteOptions {
        dry_run: req.write_options()?.dry_run,
        ..DeleteOptions::default()
    };
    if let Some(o) = eviction.get("deleteOptions").filter(|v| v.is_object()) {
        del.merge_body(o)?;
    }
    rest::delete(
        req.store(),
        req.allocators(),
        req.info,
        req.namespace,
        name,
        &del,
    )
    .await?;
    Ok(success(StatusCode::CREATED))
}
