//! The default ServiceCIDR `kubernetes`, as kube-apiserver's `defaultservicecidr` controller
//! creates it from `--service-cluster-ip-range` and reports it Ready.
//!
//! Only the creation at start is done: the range is not reconciled if the flag changes, and a
//! deleted default ServiceCIDR is not recreated. Cluster IPs are allocated from the ready
//! ServiceCIDRs, this one included (`rest::ip_addresses`).

use serde_json::json;

use crate::error::ApiResult;
use crate::rest::KubeResources;
use crate::rest::{self, WriteOptions};
use crate::store::Store;

/// `DefaultServiceCIDRName`.
pub const DEFAULT_SERVICE_CIDR_NAME: &str = "kubernetes";

/// Creates the ServiceCIDR `kubernetes` for `cidr`, Ready, unless it exists.
pub async fn ensure(
    store: &Store,
    resources: &KubeResources,
    cidr: &str,
    now: jiff::Timestamp,
) -> ApiResult<()> {
    let info = rkcm_apimachinery::catalog::by_kind("networking.k8s.io/v1", "ServiceCIDR")
        .expect("servicecidrs are in the catalog");
    if store
        .get(&rest::key(info, None, DEFAULT_SERVICE_CIDR_NAME))
        .is_some()
    {
        return Ok(());
    }
    let obj = json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "ServiceCIDR",
        "metadata": {"name": DEFAULT_SERVICE_CIDR_NAME},
        "spec": {"cidrs": [cidr]},
    });
    let created =
        match rest::create(store, resources, info, None, obj, WriteOptions::default()).await {
            Ok(created) => created,
            Err(e) if e.reason == "AlreadyExists" => return Ok(()),
            Err(e) => return Err(e),
        };
    // Creates drop status; the controller then writes it, as kube's does through `/status`.
    let mut ready = created.value();
    if let Some(m) = ready.as_object_mut() {
        m.insert(
            "status".into(),
            json!({"conditions": [{
                "type": "Ready",
                "status": "True",
                "reason": "",
                "message": "Kubernetes default Service CIDR is ready",
                "lastTransitionTime": crate::object::now_rfc3339(now),
            }]}),
        );
    }
    let key = rest::key(info, None, DEFAULT_SERVICE_CIDR_NAME);
    store
        .update(&key, ready, created.revision)
        .await
        .map_err(|e| rest::storage_error(info, DEFAULT_SERVICE_CIDR_NAME, e))?;
    Ok(())
}
