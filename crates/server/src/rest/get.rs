//! Get: one stored object by name.

use rkcm_apimachinery::catalog::ResourceInfo;

use super::keys::key;
use crate::error::{ApiError, ApiResult};
use rkcm_storage::store::Store;

/// The object `name`, or 404.
pub fn get(
    store: &Store,
    info: &ResourceInfo,
    namespace: Option<&str>,
    name: &str,
) -> ApiResult<std::sync::Arc<rkcm_storage::watch_cache::CachedObject>> {
    store
        .get(&key(info, namespace, name))
        .ok_or_else(|| ApiError::not_found(info, name))
}
