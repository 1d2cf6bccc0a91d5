//! What the write paths do for Services only: their cluster IPs and node ports.

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use crate::allocators::service::cluster_ips;
use crate::allocators::{Allocation, Failure, ServiceAllocators};
use crate::error::ApiError;
use crate::registry::FieldError;
use crate::store::Store;

/// How many addresses a Service write tries when other API servers on the same etcd keep
/// taking the one picked (kube's allocator walks the whole range; each conflict here also
/// teaches the allocator every address stored so far, so more than a couple are rare).
const CLUSTER_IP_ATTEMPTS: usize = 8;

/// Whether `info` is core/v1 Services.
pub fn is_service(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.kind == "Service"
}

/// The API error of a failed allocation for service `name`.
pub fn allocation_error(info: &ResourceInfo, name: &str, failure: Failure) -> ApiError {
    match failure {
        Failure::Invalid(errors) => ApiError::invalid(info, name, &errors),
        Failure::Internal(message) => {
            tracing::warn!(name, error = %message, "service allocation failed");
            ApiError::new(
                500,
                "InternalError",
                format!("Internal error occurred: {message}"),
            )
        }
    }
}

/// Records the cluster IPs `svc` took by `allocation` as IPAddress objects before `svc` (an
/// update of `old`, or a create) is stored, as kube's IPAddress allocator creates them. When
/// another Service already holds an address through its IPAddress (another API server on the
/// same etcd allocated it), the address is held and: a requested address fails with kube's 422
/// "provided IP is already allocated"; a picked one is replaced by another (`before` is the
/// Service as it was before allocating).
pub async fn record_cluster_ips<'a>(
    store: &Store,
    allocators: &'a ServiceAllocators,
    info: &ResourceInfo,
    before: &Value,
    old: Option<&Value>,
    svc: &mut Value,
    mut allocation: Allocation<'a>,
) -> Result<Allocation<'a>, ApiError> {
    let name = crate::object::name(before).to_string();
    for _ in 0..CLUSTER_IP_ATTEMPTS {
        let Err(super::ip_addresses::Taken(ip)) =
            super::ip_addresses::record_taken(store, old, svc).await
        else {
            return Ok(allocation);
        };
        drop(allocation);
        super::ip_addresses::hold_stored(store, allocators);
        allocators.hold_ip(ip);
        if cluster_ips(before).contains(&ip) {
            let requested: Vec<String> = cluster_ips(before)
                .iter()
                .map(|ip| ip.to_string())
                .collect();
            return Err(ApiError::invalid(
                info,
                &name,
                &[FieldError::invalid(
                    "spec.clusterIPs",
                    &json!(requested),
                    &format!(
                        "failed to allocate IP {ip}: {}",
                        crate::allocators::ip::IpError::Allocated
                    ),
                )],
            ));
        }
        *svc = before.clone();
        allocation = match old {
            Some(old) => allocators.allocate_update(svc, old, false),
            None => allocators.allocate_create(svc, false),
        }
        .map_err(|e| allocation_error(info, &name, e))?;
    }
    Err(allocation_error(
        info,
        &name,
        Failure::Internal(format!(
            "failed to allocate a serviceIP: {CLUSTER_IP_ATTEMPTS} addresses were taken by \
             other API servers meanwhile"
        )),
    ))
}
