//! The `kubernetes` Service in `default`, with its Endpoints and EndpointSlice, pointing at
//! this API server.
//!
//! Mirrors `pkg/controlplane/controller/kubernetesservice/controller.go`
//! (`CreateOrUpdateMasterServiceIfNeeded`: created when missing, never reconciled afterwards)
//! and `pkg/controlplane/reconcilers/endpointsadapter.go` (`Sync` of the lease reconciler for
//! the one API server there is). rkcm writes them once at start, before serving, instead of
//! running the 10-second loop.

use std::net::Ipv4Addr;

use serde_json::{json, Value};

use rkcm_apimachinery::catalog;

use super::resources::KubeResources;
use crate::error::{ApiError, ApiResult};
use crate::store::Store;
use rkcm_server::rest::create;
use rkcm_server::rest::key;
use rkcm_server::rest::WriteOptions;
use rkcm_server::rest::{update, UpdateSource, UpdateTarget};

/// Name of the Service, its Endpoints and its EndpointSlice.
pub const KUBERNETES_SERVICE_NAME: &str = "kubernetes";

/// Namespace of the Service.
pub const KUBERNETES_SERVICE_NAMESPACE: &str = "default";

/// The port the Service exposes (kube's `ServicePort`).
const SERVICE_PORT: u16 = 443;

/// Where clients of the `kubernetes` Service reach the API server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Advertised {
    /// The address written into the Endpoints (kube's `--advertise-address`).
    pub address: Ipv4Addr,
    /// The API server's port (kube's `--secure-port`).
    pub port: u16,
}

fn served(api_version: &str, kind: &str) -> ApiResult<&'static catalog::ResourceInfo> {
    catalog::by_kind(api_version, kind).ok_or_else(|| {
        ApiError::internal(
            "seeding the kubernetes service",
            format!("{kind} is not served"),
        )
    })
}

/// The Service `CreateOrUpdateMasterServiceIfNeeded` creates.
fn service(cluster_ip: Ipv4Addr, target_port: u16) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {
            "name": KUBERNETES_SERVICE_NAME,
            "namespace": KUBERNETES_SERVICE_NAMESPACE,
            "labels": {"provider": "kubernetes", "component": "apiserver"}
        },
        "spec": {
            "ports": [{"name": "https", "protocol": "TCP", "port": SERVICE_PORT, "targetPort": target_port}],
            "clusterIP": cluster_ip.to_string(),
            "ipFamilyPolicy": "SingleStack",
            "sessionAffinity": "None",
            "type": "ClusterIP"
        }
    })
}

/// The Endpoints `updateEndpoints` writes.
fn endpoints(at: Advertised) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {
            "name": KUBERNETES_SERVICE_NAME,
            "namespace": KUBERNETES_SERVICE_NAMESPACE,
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}
        },
        "subsets": [{
            "addresses": [{"ip": at.address.to_string()}],
            "ports": [{"name": "https", "port": at.port, "protocol": "TCP"}]
        }]
    })
}

/// The EndpointSlice `updateEndpointSlice` writes (no managed-by label: no controller owns it).
fn endpoint_slice(at: Advertised) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {
            "name": KUBERNETES_SERVICE_NAME,
            "namespace": KUBERNETES_SERVICE_NAMESPACE,
            "labels": {"kubernetes.io/service-name": KUBERNETES_SERVICE_NAME}
        },
        "addressType": "IPv4",
        "endpoints": [{"addresses": [at.address.to_string()], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": at.port, "protocol": "TCP"}]
    })
}

/// Creates the `kubernetes` Service when it is missing, and makes its Endpoints and
/// EndpointSlice point at `at`.
pub async fn ensure_kubernetes_service(
    store: &Store,
    resources: &KubeResources,
    at: Advertised,
) -> ApiResult<()> {
    let ns = Some(KUBERNETES_SERVICE_NAMESPACE);
    let services = served("v1", "Service")?;
    if store
        .get(&key(services, ns, KUBERNETES_SERVICE_NAME))
        .is_none()
    {
        let svc = service(resources.allocators().kubernetes_service_ip(), at.port);
        match create(store, resources, services, ns, svc, WriteOptions::default()).await {
            Ok(_) => {}
            Err(e) if e.reason == "AlreadyExists" => {}
            Err(e) => return Err(e),
        }
    }
    for (info, desired) in [
        (served("v1", "Endpoints")?, endpoints(at)),
        (
            served("discovery.k8s.io/v1", "EndpointSlice")?,
            endpoint_slice(at),
        ),
    ] {
        let existing = store.get(&key(info, ns, KUBERNETES_SERVICE_NAME));
        if existing.is_some() {
            // An unconditional update; it writes nothing when the content is the same.
            update(
                store,
                resources,
                info,
                ns,
                KUBERNETES_SERVICE_NAME,
                desired,
                UpdateTarget::Main,
                UpdateSource::Put,
                WriteOptions {
                    server_owned: true,
                    ..WriteOptions::default()
                },
            )
            .await?;
        } else {
            create(
                store,
                resources,
                info,
                ns,
                desired,
                WriteOptions {
                    server_owned: true,
                    ..WriteOptions::default()
                },
            )
            .await?;
        }
    }
    Ok(())
}
