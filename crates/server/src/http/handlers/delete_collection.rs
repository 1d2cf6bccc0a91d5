//! DELETE on a collection (deletecollection): delete every object the selectors pick.

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;
use serde_json::json;

use crate::error::ApiResult;
use crate::http::body::read_body;
use crate::http::encode::json_value;
use crate::http::filter::Filter;
use crate::http::handlers::ResourceRequest;
use crate::rest::{self, Deleted};
use rkcm_storage::watch_cache::CachedObject;

/// Deletes every object of the collection the selectors pick; the list of what was deleted.
pub async fn delete_collection(req: &ResourceRequest<'_>, body: Body) -> ApiResult<Response> {
    let (info, ns, scope) = (req.info, req.namespace, req.scope);
    let body = read_body(req.headers, body).await?;
    let filter = Filter::from_params(req.resources(), info, req.params, None)?;
    let opts = req.delete_options(&body)?;
    let prefix = rest::prefix(info, ns);
    let keep = |o: &CachedObject| filter.matches(o);
    let (items, revision, _) = scope.store.cache().list(&prefix, None, 0, &keep);
    let mut deleted = Vec::with_capacity(items.len());
    for item in items {
        let name = item.name().to_string();
        let item_ns = item.namespace().to_string();
        let item_ns = (!item_ns.is_empty()).then_some(item_ns);
        match rest::delete(
            &scope.store,
            scope.resources.as_ref(),
            info,
            item_ns.as_deref(),
            &name,
            &opts,
        )
        .await
        {
            Ok(Deleted::Gone(o)) | Ok(Deleted::Pending(o)) => deleted.push(o),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let list = json!({
        "kind": format!("{}List", info.kind),
        "apiVersion": info.api_version(),
        "metadata": {"resourceVersion": revision.to_string()},
        "items": deleted,
    });
    Ok(json_value(StatusCode::OK, &list))
}
