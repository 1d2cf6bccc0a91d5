//! The Services' node ports recorded in the store as kube-apiserver keeps them: one
//! RangeAllocation snapshot under `/ranges/servicenodeports` (`allocator/storage/storage.go`),
//! changed only by guaranteed updates, so that API servers sharing one etcd never hand out a
//! port twice.
//!
//! Each server decides in memory ([`ServiceAllocators`]); before a Service that takes node
//! ports is stored, the ports are added to the snapshot with an update that compares the
//! snapshot's revision. A port the snapshot already holds belongs to a Service of another
//! server: the write picks another one (or fails with kube's 422 for a requested port), and the
//! allocator holds every port of the snapshot from then on.

use base64::Engine as _;
use serde_json::{json, Value};

use crate::allocators::port::{snapshot_data, snapshot_ports};
use crate::allocators::service::{health_check_node_port, node_ports};
use crate::allocators::ServiceAllocators;
use crate::storage;
use crate::store::Store;

/// kube-apiserver's key of the node port snapshot (under `--etcd-prefix`).
pub const KEY: &str = "/ranges/servicenodeports";

/// Conflicting guaranteed updates retried before giving up (kube retries until it succeeds).
const ATTEMPTS: usize = 16;

/// Why the snapshot could not take a write's ports.
#[derive(Debug)]
pub enum Refused {
    /// Another Service (through another API server) holds this port.
    Taken(i64),
    /// The store failed or kept conflicting.
    Storage(storage::Error),
}

fn ports_of(allocators: &ServiceAllocators, obj: &Value) -> Vec<i64> {
    let data = obj["data"]
        .as_str()
        .and_then(|d| base64::engine::general_purpose::STANDARD.decode(d).ok())
        .unwrap_or_default();
    snapshot_ports(allocators.node_port_range(), &data)
}

/// Adds `taken` to the snapshot and removes `freed` from it, with a guaranteed update; every port
/// the snapshot holds is held by `allocators` afterwards. Fails with [`Refused::Taken`] when the
/// snapshot already holds one of `taken`.
pub async fn record(
    store: &Store,
    allocators: &ServiceAllocators,
    taken: &[i64],
    freed: &[i64],
) -> Result<(), Refused> {
    if taken.is_empty() && freed.is_empty() {
        return Ok(());
    }
    let range = allocators.node_port_range();
    for _ in 0..ATTEMPTS {
        let current = store.read_through(KEY).await.map_err(Refused::Storage)?;
        let mut held = current
            .as_ref()
            .map(|(obj, _)| ports_of(allocators, obj))
            .unwrap_or_default();
        if let Some((_, revision)) = &current {
            allocators.restore_ports(*revision, &held);
        }
        if let Some(&port) = taken.iter().find(|p| held.contains(p)) {
            return Err(Refused::Taken(port));
        }
        held.retain(|p| !freed.contains(p));
        held.extend_from_slice(taken);
        let snapshot = json!({
            "apiVersion": "v1",
            "kind": "RangeAllocation",
            "metadata": {"name": "", "creationTimestamp": null},
            "range": range.to_string(),
            "data": base64::engine::general_purpose::STANDARD.encode(snapshot_data(range, held)),
        });
        let written = match current {
            Some((_, revision)) => store.update(KEY, snapshot, revision).await,
            None => store.create(KEY, snapshot).await,
        };
        match written {
            Ok(_) => return Ok(()),
            Err(storage::Error::Conflict { .. } | storage::Error::AlreadyExists(_))
            | Err(storage::Error::NotFound(_)) => continue,
            Err(e) => return Err(Refused::Storage(e)),
        }
    }
    Err(Refused::Storage(storage::Error::Backend(format!(
        "{KEY} kept changing: {ATTEMPTS} updates conflicted"
    ))))
}

/// Before allocating for a Service: the allocator holds the ports of the snapshot as this
/// server's cache has it (what the other API servers allocated and released), when it changed.
pub fn refresh(store: &Store, allocators: &ServiceAllocators) {
    if let Some(current) = store.get(KEY) {
        allocators.restore_ports(current.revision, &ports_of(allocators, &current.value()));
    }
}

/// Removes `freed` from the snapshot once the Service write that gave them back is stored (or
/// the write that took them failed); a failure only leaves them held, as kube's.
pub async fn release(store: &Store, allocators: &ServiceAllocators, freed: &[i64]) {
    if let Err(e) = record(store, allocators, &[], freed).await {
        tracing::info!(ports = ?freed, error = ?e, "error releasing node ports");
    }
}

/// At start, adds every node port the stored Services hold to the snapshot, and holds every
/// port of the snapshot (ports whose release could not be recorded stay held: kube's repair
/// loop clears them, rkcm's does not yet).
pub async fn repair(store: &Store, allocators: &ServiceAllocators) {
    let info =
        rkcm_apimachinery::catalog::by_kind("v1", "Service").expect("Services are in the catalog");
    let (services, _, _) =
        store
            .cache()
            .list(&rkcm_server::rest::prefix(info, None), None, 0, &|_| true);
    let held: Vec<i64> = services
        .iter()
        .flat_map(|svc| {
            let svc = svc.value();
            let mut ports = node_ports(&svc);
            ports.extend(health_check_node_port(&svc));
            ports
        })
        .collect();
    let current = match store.read_through(KEY).await {
        Ok(current) => current,
        Err(e) => {
            tracing::warn!(error = %e, "reading the node port snapshot");
            return;
        }
    };
    let stored = current
        .as_ref()
        .map(|(obj, _)| ports_of(allocators, obj))
        .unwrap_or_default();
    let missing: Vec<i64> = held.into_iter().filter(|p| !stored.contains(p)).collect();
    if let Err(e) = record(store, allocators, &missing, &[]).await {
        tracing::warn!(error = ?e, "recording the node ports in the snapshot");
    }
}
