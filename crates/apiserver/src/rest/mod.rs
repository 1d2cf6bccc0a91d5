//! Kubernetes' own storages on the generic registry of [`rkcm_server::rest`]: the table of
//! resources and hooks ([`KubeResources`]), the storages with hooks (Services, IPAddresses,
//! Namespaces, CertificateSigningRequests, CustomResourceDefinitions), the pod subresources
//! `binding` and `eviction`, and the objects the server keeps itself (system namespaces and
//! priority classes, the `kubernetes` Service, the node port snapshot).

mod binding;
mod crd_cleanup;
mod csr_approval;
mod eviction;
pub mod ip_addresses;
mod kubernetes_service;
mod namespaces;
pub mod node_ports;
mod priority_classes;
mod resources;
mod services;

pub use binding::bind;
pub use eviction::{evict, Eviction};
pub use kubernetes_service::{
    ensure_kubernetes_service, Advertised, KUBERNETES_SERVICE_NAME, KUBERNETES_SERVICE_NAMESPACE,
};
pub use namespaces::{ensure_system_namespaces, NAMESPACE_FINALIZER, SYSTEM_NAMESPACES};
pub use priority_classes::ensure_system_priority_classes;
pub use resources::KubeResources;
pub use rkcm_server::rest::*;
