//! The storage of Services (`pkg/registry/core/service/storage`): the hooks that give a
//! Service its cluster IPs and node ports on create and update, record them for other API
//! servers, and give them back on delete.

use std::sync::Arc;

use async_trait::async_trait;
use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use crate::allocators::port::PortError;
use crate::allocators::service::{
    self as service_fields, cluster_ips, health_check_node_port, node_ports,
};
use crate::allocators::{Allocation, Failure, ServiceAllocators};
use crate::error::{ApiError, ApiResult};
use crate::registry::FieldError;
use crate::store::Store;
use rkcm_server::rest::{PendingWrite, WriteHooks};

/// The hooks of Services' storage.
pub struct ServiceHooks {
    allocators: Arc<ServiceAllocators>,
}

impl ServiceHooks {
    /// Hooks allocating from `allocators`.
    pub fn new(allocators: Arc<ServiceAllocators>) -> Self {
        Self { allocators }
    }
}

#[async_trait]
impl WriteHooks for ServiceHooks {
    fn normalize(&self, new: &mut Value, old: Option<&Value>) {
        service_fields::normalize_cluster_ips(new, old);
        if let Some(old) = old {
            service_fields::patch_allocated_values(new, old);
            service_fields::drop_type_dependent_fields(new, old);
        }
    }

    fn begin_write<'a>(
        &'a self,
        store: &Store,
        info: &'static ResourceInfo,
        new: &mut Value,
        old: Option<&Value>,
        dry_run: bool,
    ) -> ApiResult<Option<Box<dyn PendingWrite + 'a>>> {
        let allocators = self.allocators.as_ref();
        // The Service before allocation, to allocate again when another API server took an
        // address meanwhile.
        let before = new.clone();
        super::ip_addresses::refresh_ranges(store, allocators);
        super::node_ports::refresh(store, allocators);
        let name = crate::object::name(new).to_string();
        let allocation = match old {
            Some(old) => allocators.allocate_update(new, old, dry_run),
            None => allocators.allocate_create(new, dry_run),
        }
        .map_err(|e| allocation_error(info, &name, e))?;
        Ok(Some(Box::new(PendingAllocation {
            allocators,
            info,
            before,
            old: old.cloned(),
            allocation: Some(allocation),
        })))
    }

    async fn after_delete(&self, store: &Store, last: &Value) {
        self.allocators.release(last);
        record_released(store, &self.allocators, last, None).await;
    }
}

/// A Service write's allocation, until the write is stored or failed.
struct PendingAllocation<'a> {
    allocators: &'a ServiceAllocators,
    info: &'static ResourceInfo,
    before: Value,
    old: Option<Value>,
    allocation: Option<Allocation<'a>>,
}

#[async_trait]
impl PendingWrite for PendingAllocation<'_> {
    async fn record(&mut self, store: &Store, obj: &mut Value) -> ApiResult<()> {
        let Some(allocation) = self.allocation.take() else {
            return Ok(());
        };
        let allocation = record_allocations(
            store,
            self.allocators,
            self.info,
            &self.before,
            self.old.as_ref(),
            obj,
            allocation,
        )
        .await?;
        self.allocation = Some(allocation);
        Ok(())
    }

    async fn commit(self: Box<Self>, store: &Store, stored: &Value) {
        let PendingAllocation {
            allocators,
            old,
            allocation,
            ..
        } = *self;
        if let Some(allocation) = allocation {
            allocation.commit();
        }
        if let Some(old) = &old {
            record_released(store, allocators, old, Some(stored)).await;
        }
    }

    async fn abort(self: Box<Self>, store: &Store, written: &Value) {
        record_released(store, self.allocators, written, self.old.as_ref()).await;
    }
}

/// How many allocations a Service write tries when other API servers on the same etcd keep
/// taking the address or port picked (kube's allocator walks the whole range; each conflict
/// here also teaches the allocator every address and port stored so far, so more than a couple
/// are rare).
const ALLOCATION_ATTEMPTS: usize = 8;

/// The API error of a failed allocation for service `name`.
fn allocation_error(info: &ResourceInfo, name: &str, failure: Failure) -> ApiError {
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

/// Every node port `svc` holds (health check node port included).
fn all_node_ports(svc: &Value) -> Vec<i64> {
    let mut ports = node_ports(svc);
    ports.extend(health_check_node_port(svc));
    ports
}

/// What another API server's allocation took from a write.
enum Lost {
    Ip(std::net::Ipv4Addr),
    Port(i64),
}

/// The 422 of a requested address or port another Service holds, at kube's field path.
fn already_allocated(info: &ResourceInfo, name: &str, before: &Value, lost: &Lost) -> ApiError {
    let error = match lost {
        Lost::Ip(ip) => {
            let requested: Vec<String> = cluster_ips(before)
                .iter()
                .map(|ip| ip.to_string())
                .collect();
            FieldError::invalid(
                "spec.clusterIPs",
                &json!(requested),
                &format!(
                    "failed to allocate IP {ip}: {}",
                    crate::allocators::ip::IpError::Allocated
                ),
            )
        }
        Lost::Port(port) => {
            let ports = before["spec"]["ports"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let path = ports
                .iter()
                .position(|p| p["nodePort"].as_i64() == Some(*port))
                .map(|i| format!("spec.ports[{i}].nodePort"))
                .unwrap_or_else(|| "spec.healthCheckNodePort".to_string());
            FieldError::invalid(path, &json!(port), &PortError::Allocated.to_string())
        }
    };
    ApiError::invalid(info, name, &[error])
}

/// Records what `allocation` took for `svc` (an update of `old`, or a create) before `svc` is
/// stored, as kube's allocators do: an IPAddress object per new cluster IP, and the new node
/// ports in the store's node port snapshot ([`super::node_ports`]). When another Service already
/// holds one of them (another API server on the same etcd allocated it), it is held here too
/// and: a requested address or port fails with kube's 422 "… is already allocated"; a picked one
/// is replaced by another (`before` is the Service as it was before allocating).
async fn record_allocations<'a>(
    store: &Store,
    allocators: &'a ServiceAllocators,
    info: &ResourceInfo,
    before: &Value,
    old: Option<&Value>,
    svc: &mut Value,
    mut allocation: Allocation<'a>,
) -> Result<Allocation<'a>, ApiError> {
    let name = crate::object::name(before).to_string();
    let old_ports = old.map(all_node_ports).unwrap_or_default();
    for _ in 0..ALLOCATION_ATTEMPTS {
        let lost = match super::ip_addresses::record_taken(store, old, svc).await {
            Err(super::ip_addresses::Taken(ip)) => Lost::Ip(ip),
            Ok(()) => {
                let taken: Vec<i64> = all_node_ports(svc)
                    .into_iter()
                    .filter(|p| !old_ports.contains(p))
                    .collect();
                match super::node_ports::record(store, allocators, &taken, &[]).await {
                    Ok(()) => return Ok(allocation),
                    Err(refused) => {
                        // Nothing of this write is kept: its IPAddresses go back.
                        super::ip_addresses::record_released(store, svc, old).await;
                        match refused {
                            super::node_ports::Refused::Taken(port) => Lost::Port(port),
                            super::node_ports::Refused::Storage(e) => {
                                return Err(rkcm_server::rest::storage_error(info, &name, e))
                            }
                        }
                    }
                }
            }
        };
        drop(allocation);
        match lost {
            Lost::Ip(ip) => {
                super::ip_addresses::hold_stored(store, allocators);
                allocators.hold_ip(ip);
                if cluster_ips(before).contains(&ip) {
                    return Err(already_allocated(info, &name, before, &lost));
                }
            }
            // Dropping the allocation freed the port the snapshot holds.
            Lost::Port(port) => {
                allocators.hold_port(port);
                if all_node_ports(before).contains(&port) {
                    return Err(already_allocated(info, &name, before, &lost));
                }
            }
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
            "failed to allocate: {ALLOCATION_ATTEMPTS} addresses or ports were taken by other \
             API servers meanwhile"
        )),
    ))
}

/// After a Service write was stored (`old` → `new`, `new` `None` for a removal), or to undo
/// [`record_allocations`] when it failed (`old` the object that was not stored, `new` the one
/// kept): the addresses only `old` held lose their IPAddress, and its node ports leave the
/// snapshot.
pub async fn record_released(
    store: &Store,
    allocators: &ServiceAllocators,
    old: &Value,
    new: Option<&Value>,
) {
    super::ip_addresses::record_released(store, old, new).await;
    let kept = new.map(all_node_ports).unwrap_or_default();
    let freed: Vec<i64> = all_node_ports(old)
        .into_iter()
        .filter(|p| !kept.contains(p))
        .collect();
    super::node_ports::release(store, allocators, &freed).await;
}
