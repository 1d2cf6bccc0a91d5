//! The built-in PriorityClasses, created at start when missing.
//!
//! Mirrors `pkg/registry/scheduling/rest/storage_scheduling.go` (`AddSystemPriorityClasses`):
//! `system-node-critical` and `system-cluster-critical` exist on every cluster; kube-apiserver
//! recreates them when they are missing and leaves them alone otherwise.

use rkcm_apimachinery::catalog;

use super::resources::KubeResources;
use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::registry::priorityclasses::system_priority_classes;
use crate::store::Store;
use rkcm_server::rest::create;
use rkcm_server::rest::key;
use rkcm_server::rest::WriteOptions;

/// Creates each built-in PriorityClass that the store does not hold.
pub async fn ensure_system_priority_classes(
    store: &Store,
    resources: &KubeResources,
) -> ApiResult<()> {
    let info = catalog::by_kind("scheduling.k8s.io/v1", "PriorityClass").ok_or_else(|| {
        ApiError::internal("seeding priority classes", "PriorityClass is not served")
    })?;
    for class in system_priority_classes() {
        if store.get(&key(info, None, object::name(&class))).is_some() {
            continue;
        }
        match create(store, resources, info, None, class, WriteOptions::default()).await {
            Ok(_) => {}
            Err(e) if e.reason == "AlreadyExists" => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
