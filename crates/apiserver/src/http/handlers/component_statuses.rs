//! GET of `componentstatuses` and of one of them: computed at each request from the
//! components' probes ([`crate::component_status`]), never stored, with kube's deprecation
//! warning.

use axum::response::Response;
use http::StatusCode;
use serde_json::{json, Value};

use crate::component_status::{component_status, COMPONENTS};
use crate::error::{ApiError, ApiResult};
use crate::http::encode::json_value;
use crate::http::filter::Filter;
use crate::http::handlers::ResourceRequest;
use crate::http::negotiate::Output;
use crate::http::table;
use crate::http::AppState;

/// The statuses the selectors pick (kube filters them too, though they carry no labels).
pub async fn list(state: &AppState, req: &ResourceRequest<'_>) -> ApiResult<Response> {
    let filter = Filter::from_params(req.resources(), req.info, req.params, None)?;
    let statuses: Vec<Value> = state
        .components
        .statuses(req.store())
        .await
        .into_iter()
        .filter(|s| filter.matches_value(s))
        .collect();
    let body = match req.out {
        Output::Object => json!({
            "kind": "ComponentStatusList",
            "apiVersion": "v1",
            "metadata": {},
            "items": statuses,
        }),
        Output::Table(include) => {
            let refs: Vec<&Value> = statuses.iter().collect();
            table::table(req.resources(), req.info, &refs, include, json!({}))
        }
        Output::Metadata => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {},
            "items": statuses.iter().map(table::partial_metadata).collect::<Vec<_>>(),
        }),
    };
    Ok(json_value(StatusCode::OK, &body))
}

/// One component's status; kube answers an unknown name with a 500 `Component not found`.
pub async fn get(state: &AppState, req: &ResourceRequest<'_>, name: &str) -> ApiResult<Response> {
    if !COMPONENTS.contains(&name) {
        return Err(ApiError::new(
            500,
            "",
            format!("Component not found: {name}"),
        ));
    }
    let status = component_status(name, &state.components.check(name, req.store()).await);
    let body = match req.out {
        Output::Object => status,
        Output::Table(include) => {
            table::table(req.resources(), req.info, &[&status], include, json!({}))
        }
        Output::Metadata => table::partial_metadata(&status),
    };
    Ok(json_value(StatusCode::OK, &body))
}
