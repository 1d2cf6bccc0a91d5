//! Kubernetes' own API on the generic registry (kube's `pkg/controlplane` storage map): each
//! resource's strategy from [`crate::registry::by_kind`], the field manager of its schema, and
//! the hooks of the storages that do more than store objects (Services, IPAddresses,
//! Namespaces, CertificateSigningRequests, CustomResourceDefinitions).

use std::sync::Arc;

use rkcm_apimachinery::apply::FieldManager;
use rkcm_apimachinery::catalog::ResourceInfo;

use super::crd_cleanup::CustomResourceDefinitionHooks;
use super::csr_approval::CertificateSigningRequestHooks;
use super::ip_addresses::IpAddressHooks;
use super::namespaces::NamespaceHooks;
use super::services::ServiceHooks;
use crate::allocators::ServiceAllocators;
use crate::registry::{self, Strategy};
use rkcm_server::rest::{Resources, WriteHooks};

/// The resources the server serves, with the hooks of their storages.
pub struct KubeResources {
    allocators: Arc<ServiceAllocators>,
    services: ServiceHooks,
    ip_addresses: IpAddressHooks,
}

impl KubeResources {
    /// The API, with Services' cluster IPs and node ports from `allocators`.
    pub fn new(allocators: Arc<ServiceAllocators>) -> Self {
        Self {
            services: ServiceHooks::new(Arc::clone(&allocators)),
            ip_addresses: IpAddressHooks::new(Arc::clone(&allocators)),
            allocators,
        }
    }

    /// The allocators of Services' cluster IPs and node ports.
    pub fn allocators(&self) -> &ServiceAllocators {
        &self.allocators
    }
}

impl Resources for KubeResources {
    fn strategy(&self, info: &ResourceInfo) -> &'static dyn Strategy {
        registry::by_kind::strategy(info)
    }

    fn hooks(&self, info: &ResourceInfo) -> Option<&dyn WriteHooks> {
        match (info.group, info.kind) {
            ("", "Service") => Some(&self.services),
            ("", "Namespace") => Some(&NamespaceHooks),
            ("networking.k8s.io", "IPAddress") => Some(&self.ip_addresses),
            ("certificates.k8s.io", "CertificateSigningRequest") => {
                Some(&CertificateSigningRequestHooks)
            }
            ("apiextensions.k8s.io", "CustomResourceDefinition") => {
                Some(&CustomResourceDefinitionHooks)
            }
            _ => None,
        }
    }

    /// Events and Services (`AllowCreateOnUpdate` of their strategies).
    fn allow_create_on_update(&self, info: &ResourceInfo) -> bool {
        matches!(
            (info.group, info.kind),
            ("", "Event") | ("events.k8s.io", "Event") | ("", "Service")
        )
    }

    /// Typed by the built-in schema, or for a custom resource by its served version's schema
    /// (its `status` owned with the object when the version declares no status subresource).
    fn field_manager(&self, info: &ResourceInfo, subresource: &str) -> FieldManager {
        let fm = FieldManager::new(&info.api_version(), info.kind, subresource);
        match crate::crd::served::lookup(info) {
            Some(served) if info.subresource("status").is_none() => fm
                .with_type(served.apply_type.clone())
                .without_status_subresource(),
            Some(served) => fm.with_type(served.apply_type.clone()),
            None => fm,
        }
    }
}
