//! Get: one stored object by name.

use rkcm_apimachinery::catalog::ResourceInfo;

use crate::error::{ApiError, ApiResult};
use crate::store::Store;
use rkcm_server::rest::key;

/// The object `name`, or 404.
pub fn get(
    store: &Store,
    info: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
) -> ApiResult<std::sync::Arc<crate::watch_cache::CachedObject>> {
    store
        .get(&key(info, namespace, name))
        .ok_or_else(|| ApiError::not_found(info, name))
}
