//! The ConfigMap that says since when legacy service-account tokens are tracked.
//!
//! Mirrors kube-apiserver's `pkg/controlplane/controller/legacytokentracking`: the ConfigMap
//! `kube-system/kube-apiserver-legacy-service-account-token-tracking` holds the date (`since`)
//! from which the API server labels the Secrets of legacy tokens it authenticates with their
//! last-used date. The legacy token cleaner waits one clean-up period past that date before it
//! judges any token unused.

use serde_json::json;

use crate::error::ApiResult;
use crate::rest::KubeResources;
use crate::rest::{self, WriteOptions};
use crate::store::Store;

/// `legacytokentracking.ConfigMapName`.
pub const CONFIG_MAP_NAME: &str = "kube-apiserver-legacy-service-account-token-tracking";
/// `legacytokentracking.ConfigMapDataKey`.
pub const CONFIG_MAP_DATA_KEY: &str = "since";

/// Creates the tracking ConfigMap, dated `today` (`2006-01-02`), unless it exists.
pub async fn ensure_config_map(
    store: &Store,
    resources: &KubeResources,
    today: &str,
) -> ApiResult<()> {
    let info = rkcm_apimachinery::catalog::by_kind("v1", "ConfigMap")
        .expect("configmaps are in the catalog");
    if store
        .get(&rest::key(info, Some("kube-system"), CONFIG_MAP_NAME))
        .is_some()
    {
        return Ok(());
    }
    let obj = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIG_MAP_NAME, "namespace": "kube-system"},
        "data": {CONFIG_MAP_DATA_KEY: today},
    });
    match rest::create(
        store,
        resources,
        info,
        Some("kube-system"),
        obj,
        WriteOptions::default(),
    )
    .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.reason == "AlreadyExists" => Ok(()),
        Err(e) => Err(e),
    }
}
