//! The IPAddress objects (`networking.k8s.io/v1`) that record the Services' cluster IPs, as
//! kube-apiserver's IPAddress-backed allocator writes them (`ipallocator.go`: `createIPAddress`,
//! `Release`), and the ready ServiceCIDRs' ranges the allocator hands addresses out from.
//!
//! [`ServiceAllocators`] decides which address a Service gets; once the Service is stored, the
//! IPAddress named after each address it took is created (labels `ipaddress.kubernetes.io/
//! ip-family` and `managed-by: ipallocator.k8s.io`, `spec.parentRef` to the Service) and the
//! IPAddress of each address it gave back is deleted. IPAddress objects written by clients are
//! held by the allocator too: no Service gets an address an IPAddress already names.

use std::net::Ipv4Addr;

use serde_json::{json, Value};

use rkcm_apimachinery::catalog::{self, ResourceInfo};

use super::keys::{key, prefix};
use crate::allocators::cluster_ips::ready_ranges;
use crate::allocators::service::cluster_ips;
use crate::allocators::ServiceAllocators;
use crate::object;
use crate::store::Store;

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
    let ranges = ready_ranges(cidrs.iter().map(|c| &c.value));
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

/// Creates the IPAddress of `ip` for Service `namespace/name`; one that exists is left as it is
/// (the repair pass reports a conflict).
pub async fn create(store: &Store, ip: Ipv4Addr, namespace: &str, name: &str) {
    let mut obj = ip_address_for(ip, namespace, name);
    object::set_meta(&mut obj, "uid", json!(uuid::Uuid::new_v4().to_string()));
    object::set_meta(
        &mut obj,
        "creationTimestamp",
        json!(object::now_rfc3339(jiff::Timestamp::now())),
    );
    let k = key(info("IPAddress"), None, &ip.to_string());
    match store.create(&k, obj).await {
        Ok(_) => {}
        Err(crate::storage::Error::AlreadyExists(_)) => {
            tracing::info!(%ip, namespace, name, "IPAddress already exists");
        }
        Err(e) => tracing::warn!(%ip, namespace, name, error = %e, "can not create IPAddress"),
    }
}

/// Deletes the IPAddress of `ip` if it still names Service `namespace/name` (`Release`; errors
/// are logged and ignored, as kube's).
pub async fn delete(store: &Store, ip: Ipv4Addr, namespace: &str, name: &str) {
    let k = key(info("IPAddress"), None, &ip.to_string());
    let Some(current) = store.get(&k) else {
        return;
    };
    if !refers_to(&current.value, namespace, name) {
        return;
    }
    if let Err(e) = store.delete(&k, Some(current.revision)).await {
        tracing::info!(%ip, error = %e, "error releasing ip");
    }
}

/// After a Service write was stored (`old` → `new`, `None` for a create or a removal): the
/// addresses `new` took get their IPAddress, those only `old` held lose theirs.
pub async fn record(store: &Store, old: Option<&Value>, new: Option<&Value>) {
    let before = old.map(cluster_ips).unwrap_or_default();
    let after = new.map(cluster_ips).unwrap_or_default();
    if let Some(svc) = new {
        let (ns, name) = (object::namespace(svc), object::name(svc));
        for ip in after.iter().filter(|ip| !before.contains(ip)) {
            create(store, *ip, ns, name).await;
        }
    }
    if let Some(svc) = old {
        let (ns, name) = (object::namespace(svc), object::name(svc));
        for ip in before.iter().filter(|ip| !after.contains(ip)) {
            delete(store, *ip, ns, name).await;
        }
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
