//! The IPAddress objects (`networking.k8s.io/v1`) that record the Services' cluster IPs, as
//! kube-apiserver's IPAddress-backed allocator writes them (`ipallocator.go`: `createIPAddress`,
//! `Release`), and the ready ServiceCIDRs' ranges the allocator hands addresses out from.
//!
//! [`ServiceAllocators`] decides which address a Service gets; before the Service is stored, the
//! IPAddress named after each address it takes is created (labels `ipaddress.kubernetes.io/
//! ip-family` and `managed-by: ipallocator.k8s.io`, `spec.parentRef` to the Service), and removed
//! again if the write fails; once it is stored, the IPAddress of each address it gave back is
//! deleted. IPAddress objects written by clients are
//! held by the allocator too: no Service gets an address an IPAddress already names.

use std::net::Ipv4Addr;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Value};

use rkcm_apimachinery::catalog::{self, ResourceInfo};

use crate::allocators::cluster_ips::ready_ranges;
use crate::allocators::ip_repair::{self, Finding, Fix, Regarding};
use crate::allocators::service::cluster_ips;
use crate::allocators::Ipv4Cidr;
use crate::allocators::ServiceAllocators;
use crate::object;
use crate::store::Store;
use rkcm_server::rest::{key, prefix, WriteHooks};

/// The hooks of IPAddresses' storage: an address a client's IPAddress names is held by the
/// allocator while the IPAddress exists.
pub struct IpAddressHooks {
    allocators: Arc<ServiceAllocators>,
}

impl IpAddressHooks {
    /// Hooks holding addresses in `allocators`.
    pub fn new(allocators: Arc<ServiceAllocators>) -> Self {
        Self { allocators }
    }
}

#[async_trait]
impl WriteHooks for IpAddressHooks {
    fn after_create(&self, stored: &Value) {
        observe(&self.allocators, stored, true);
    }

    async fn after_delete(&self, _store: &Store, last: &Value) {
        observe(&self.allocators, last, false);
    }
}

/// `LabelManagedBy`.
pub const LABEL_MANAGED_BY: &str = "ipaddress.kubernetes.io/managed-by";
/// `LabelIPAddressFamily`.
pub const LABEL_IP_FAMILY: &str = "ipaddress.kubernetes.io/ip-family";
/// The manager of the API server's IPAddresses (`ipallocator.ControllerName`).
pub const IP_ALLOCATOR: &str = "ipallocator.k8s.io";

/// Whether `info` is `networking.k8s.io` IPAddresses.
pub fn is_ip_address(info: &ResourceInfo) -> bool {
    info.group == "networking.k8s.io" && info.kind == "IPAddress"
}

fn info(kind: &str) -> &'static ResourceInfo {
    catalog::by_kind("networking.k8s.io/v1", kind).expect("networking kinds are in the catalog")
}

/// Allocates from the ranges of the stored ServiceCIDRs that are ready from now on; called
/// before each Service allocation, so a new, deleted or no longer ready ServiceCIDR counts at
/// once (kube's allocators follow them through an informer).
pub fn refresh_ranges(store: &Store, allocators: &ServiceAllocators) {
    let (cidrs, _, _) = store
        .cache()
        .list(&prefix(info("ServiceCIDR"), None), None, 0, &|_| true);
    let cidrs: Vec<Value> = cidrs.iter().map(|c| c.value()).collect();
    let ranges = ready_ranges(cidrs.iter());
    allocators.set_cluster_ip_ranges(&ranges);
}

/// The IPAddress for `ip` of Service `namespace/name` (`newIPAddress`).
pub fn ip_address_for(ip: Ipv4Addr, namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IPAddress",
        "metadata": {
            "name": ip.to_string(),
            "labels": {LABEL_IP_FAMILY: "IPv4", LABEL_MANAGED_BY: IP_ALLOCATOR},
        },
        "spec": {"parentRef": {
            "group": "", "resource": "services", "namespace": namespace, "name": name,
        }},
    })
}

/// Whether the IPAddress `ip` names Service `namespace/name` as its parent.
pub fn refers_to(ip: &Value, namespace: &str, name: &str) -> bool {
    let parent = &ip["spec"]["parentRef"];
    parent["group"].as_str().unwrap_or("").is_empty()
        && parent["resource"] == "services"
        && parent["namespace"] == namespace
        && parent["name"] == name
}

/// Creates the IPAddress of `ip` for Service `namespace/name` (`createIPAddress`). One that
/// exists and names this Service is fine; one naming something else, or not yet in this
/// server's cache (another API server on the same etcd just created it), means the address is
/// taken: [`Taken`]. Other storage errors are logged and left to the repair pass, as before.
pub async fn create(store: &Store, ip: Ipv4Addr, namespace: &str, name: &str) -> Result<(), Taken> {
    let mut obj = ip_address_for(ip, namespace, name);
    object::set_meta(&mut obj, "uid", json!(uuid::Uuid::new_v4().to_string()));
    object::set_meta(
        &mut obj,
        "creationTimestamp",
        json!(object::now_rfc3339(jiff::Timestamp::now())),
    );
    let k = key(info("IPAddress"), None, &ip.to_string());
    match store.create(&k, obj).await {
        Ok(_) => Ok(()),
        Err(crate::storage::Error::AlreadyExists(_)) => match store.get(&k) {
            Some(current) if refers_to(&current.value(), namespace, name) => Ok(()),
            _ => {
                tracing::info!(%ip, namespace, name, "IPAddress already exists");
                Err(Taken(ip))
            }
        },
        Err(e) => {
            tracing::warn!(%ip, namespace, name, error = %e, "can not create IPAddress");
            Ok(())
        }
    }
}

/// An address whose IPAddress another Service (possibly through another API server) holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Taken(pub Ipv4Addr);

/// Deletes the IPAddress of `ip` if it still names Service `namespace/name` (`Release`; errors
/// are logged and ignored, as kube's).
pub async fn delete(store: &Store, ip: Ipv4Addr, namespace: &str, name: &str) {
    let k = key(info("IPAddress"), None, &ip.to_string());
    let Some(current) = store.get(&k) else {
        return;
    };
    if !refers_to(&current.value(), namespace, name) {
        return;
    }
    if let Err(e) = store.delete(&k, Some(current.revision)).await {
        tracing::info!(%ip, error = %e, "error releasing ip");
    }
}

/// Before a Service write (`old` → `new`, `old` `None` for a create) is stored: the addresses
/// `new` takes and `old` did not hold get their IPAddress (kube's allocator creates them as it
/// allocates, before the Service is stored).
pub async fn record_taken(store: &Store, old: Option<&Value>, new: &Value) -> Result<(), Taken> {
    let before = old.map(cluster_ips).unwrap_or_default();
    let (ns, name) = (object::namespace(new), object::name(new));
    let mut created = Vec::new();
    for ip in cluster_ips(new)
        .into_iter()
        .filter(|ip| !before.contains(ip))
    {
        if let Err(taken) = create(store, ip, ns, name).await {
            // Nothing of this write is kept: the addresses created so far go back.
            for ip in created {
                delete(store, ip, ns, name).await;
            }
            return Err(taken);
        }
        created.push(ip);
    }
    Ok(())
}

/// Holds in the allocator every address a stored IPAddress names: what other API servers on the
/// same etcd allocated (kube's allocators read them from an informer).
pub fn hold_stored(store: &Store, allocators: &ServiceAllocators) {
    for ip in stored(store, info("IPAddress")) {
        observe(allocators, &ip, true);
    }
}

/// After a Service write was stored (`old` → `new`, `new` `None` for a removal), or to undo
/// [`record_taken`] when it failed (`old` the object that was not stored, `new` the one kept):
/// the addresses only `old` held lose their IPAddress.
pub async fn record_released(store: &Store, old: &Value, new: Option<&Value>) {
    let after = new.map(cluster_ips).unwrap_or_default();
    let (ns, name) = (object::namespace(old), object::name(old));
    for ip in cluster_ips(old).iter().filter(|ip| !after.contains(ip)) {
        delete(store, *ip, ns, name).await;
    }
}

/// A client created (`created`) or removed an IPAddress: the allocator holds or frees its
/// address.
pub fn observe(allocators: &ServiceAllocators, ip_address: &Value, created: bool) {
    if let Ok(ip) = object::name(ip_address).parse::<Ipv4Addr>() {
        if created {
            allocators.hold_ip(ip);
        } else {
            allocators.release_ip(ip);
        }
    }
}

/// The component the repair's events come from (kube's repair controller's).
pub const REPAIR_COMPONENT: &str = "ipallocator-repair-controller";

/// How often the repair runs while the server serves (kube-apiserver's repair interval).
pub const REPAIR_INTERVAL: std::time::Duration = std::time::Duration::from_secs(180);

fn stored(store: &Store, info: &ResourceInfo) -> Vec<Value> {
    let (objs, _, _) = store.cache().list(&prefix(info, None), None, 0, &|_| true);
    objs.iter().map(|o| o.value()).collect()
}

/// One pass of the IPAddress repair ([`ip_repair::plan`]) over the stored Services,
/// IPAddresses and ServiceCIDRs at `now`: writes the fixes, records kube's Warning events.
pub async fn repair(store: &Store, allocators: &ServiceAllocators, now: jiff::Timestamp) {
    let services_info = catalog::by_kind("v1", "Service").expect("services are in the catalog");
    let services = stored(store, services_info);
    let ip_addresses = stored(store, info("IPAddress"));
    let cidrs: Vec<Ipv4Cidr> = stored(store, info("ServiceCIDR"))
        .iter()
        .flat_map(|c| {
            c.pointer("/spec/cidrs")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|c| c.as_str().and_then(|c| c.parse().ok()))
        .collect();
    let plan = ip_repair::plan(
        &services.iter().collect::<Vec<_>>(),
        &ip_addresses.iter().collect::<Vec<_>>(),
        &cidrs,
        now,
    );
    let held_by_services: Vec<Ipv4Addr> = services.iter().flat_map(cluster_ips).collect();
    for fix in plan.fixes {
        match fix {
            Fix::Allocate {
                ip,
                namespace,
                name,
                recreate,
            } => {
                if recreate {
                    remove(store, &ip.to_string()).await;
                }
                // Another server creating it meanwhile is found again by the next pass.
                let _ = create(store, ip, &namespace, &name).await;
                allocators.hold_ip(ip);
            }
            Fix::Remove { ip } => {
                remove(store, &ip).await;
                if let Ok(addr) = ip.parse::<Ipv4Addr>() {
                    if !held_by_services.contains(&addr) {
                        allocators.release_ip(addr);
                    }
                }
            }
        }
    }
    for finding in plan.findings {
        tracing::warn!(reason = finding.reason, "{}", finding.message);
        record_event(store, &finding, now).await;
    }
}

/// Runs [`repair`] every [`REPAIR_INTERVAL`] until `shutdown`.
pub async fn repair_loop(
    store: Store,
    allocators: std::sync::Arc<ServiceAllocators>,
    shutdown: tokio_util::sync::CancellationToken,
) {
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(REPAIR_INTERVAL) => {}
        }
        repair(&store, &allocators, jiff::Timestamp::now()).await;
    }
}

async fn remove(store: &Store, name: &str) {
    let k = key(info("IPAddress"), None, name);
    match store.delete(&k, None).await {
        Ok(_) | Err(crate::storage::Error::NotFound(_)) => {}
        Err(e) => tracing::warn!(ipaddress = name, error = %e, "can not delete IPAddress"),
    }
}

/// Records `finding` as a core/v1 Warning Event (an IPAddress's in `default`, as kube records
/// events of cluster-scoped objects).
async fn record_event(store: &Store, finding: &Finding, now: jiff::Timestamp) {
    let (namespace, involved) = match &finding.regarding {
        Regarding::Service {
            namespace,
            name,
            uid,
        } => (
            namespace.as_str(),
            json!({"apiVersion": "v1", "kind": "Service", "namespace": namespace, "name": name, "uid": uid}),
        ),
        Regarding::IpAddress { name, uid } => (
            "default",
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress", "name": name, "uid": uid}),
        ),
    };
    let involved_name = involved["name"].as_str().unwrap_or_default().to_string();
    let at = object::now_rfc3339(now);
    let name = format!(
        "{involved_name}.{:x}",
        now.as_nanosecond().unsigned_abs() as u64
    );
    let event = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace, "uid": uuid::Uuid::new_v4().to_string(),
                     "creationTimestamp": at},
        "involvedObject": involved,
        "reason": finding.reason,
        "message": finding.message,
        "type": "Warning",
        "action": if matches!(finding.regarding, Regarding::Service { .. }) { "ClusterIPAllocation" } else { "IPAddressAllocation" },
        "source": {"component": REPAIR_COMPONENT},
        "reportingComponent": REPAIR_COMPONENT,
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
    });
    let events = catalog::by_kind("v1", "Event").expect("events are in the catalog");
    if let Err(e) = store
        .create(&key(events, Some(namespace), &name), event)
        .await
    {
        tracing::debug!(error = %e, "event dropped");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ip_address_names_its_service_and_is_labelled_as_kube_labels_it() {
        let obj = ip_address_for(Ipv4Addr::new(10, 96, 0, 10), "default", "web");
        assert_eq!(obj["metadata"]["name"], "10.96.0.10");
        assert_eq!(
            obj["metadata"]["labels"][LABEL_MANAGED_BY],
            "ipallocator.k8s.io"
        );
        assert_eq!(obj["metadata"]["labels"][LABEL_IP_FAMILY], "IPv4");
        assert!(refers_to(&obj, "default", "web"));
        assert!(!refers_to(&obj, "default", "other"));
        assert!(!refers_to(&obj, "kube-system", "web"));
        let typed: k8s_openapi::api::networking::v1::IPAddress =
            serde_json::from_value(obj).expect("a valid IPAddress");
        assert_eq!(
            typed.spec.map(|s| s.parent_ref.resource),
            Some("services".to_string())
        );
    }
}
