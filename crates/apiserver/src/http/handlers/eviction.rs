//! POST of an `Eviction` (`pods/{name}/eviction`): decoded here, carried out by [`rest::evict`],
//! which honours the pod's PodDisruptionBudget.

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;

use crate::error::{ApiError, ApiResult};
use crate::http::body::read_body;
use crate::http::decode::decode_json;
use crate::http::encode::success;
use crate::http::handlers::ResourceRequest;
use crate::rest::{self, Eviction};

/// Evicts pod `name`.
pub async fn evict(req: &ResourceRequest<'_>, name: &str, body: Body) -> ApiResult<Response> {
    let bytes = read_body(req.headers, body).await?;
    let body = decode_json(req.headers, &bytes)?;
    let eviction = Eviction::from_body(&body, req.write_options()?.dry_run)?;
    let namespace = req
        .namespace
        .ok_or_else(|| ApiError::bad_request("an eviction needs a namespace"))?;
    // NodeRestriction looks at a node's evictions, and admission webhooks at every eviction
    // (the only plugins that do here).
    let admission = req.admission();
    let mut attrs = admission.attributes(
        crate::admission::Operation::Create,
        req.info,
        "eviction",
        Some(namespace),
        name,
        Some(body.clone()),
        None,
        eviction.delete_options.dry_run,
    );
    attrs.kind = crate::admission::Kind {
        group: "policy",
        version: "v1",
        kind: "Eviction",
    };
    super::subresource_admission::admit_subresource_create(&admission, &mut attrs).await?;
    // A mutating webhook may have changed the eviction.
    let eviction = match attrs.object() {
        Some(obj) if *obj != body => Eviction::from_body(obj, req.write_options()?.dry_run)?,
        _ => eviction,
    };
    rest::evict(req.store(), req.resources(), namespace, name, &eviction).await?;
    Ok(success(StatusCode::CREATED))
}
