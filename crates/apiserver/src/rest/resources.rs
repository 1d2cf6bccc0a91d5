//! Kubernetes' own API on the generic registry (kube's `pkg/controlplane` storage map): each
//! resource's strategy from [`crate::registry::by_kind`], the field manager of its schema, and
//! the hooks of the storages that do more than store objects (Services, IPAddresses,
//! Namespaces, CertificateSigningRequests, CustomResourceDefinitions).

use std::sync::Arc;

use rkcm_apimachinery::apply::FieldManager;
use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::printers;
use rkcm_apimachinery::validation::FieldProblem;
use serde_json::{json, Value};

use super::crd_cleanup::CustomResourceDefinitionHooks;
use super::csr_approval::CertificateSigningRequestHooks;
use super::ip_addresses::IpAddressHooks;
use super::namespaces::NamespaceHooks;
use super::services::ServiceHooks;
use crate::allocators::ServiceAllocators;
use crate::error::ApiResult;
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

    /// A custom resource's columns are its version's `additionalPrinterColumns`.
    fn table(
        &self,
        info: &ResourceInfo,
        objects: &[&Value],
        include_metadata: bool,
    ) -> (Vec<Value>, Vec<Value>) {
        let now = jiff::Timestamp::now();
        let Some(custom) = crate::crd::served::lookup(info) else {
            return printers::table(info, objects, now, include_metadata);
        };
        let (columns, cells) = crate::crd::printers::table(&custom.columns, objects, now);
        let rows = cells
            .into_iter()
            .zip(objects)
            .map(|(cells, obj)| {
                let mut row = json!({"cells": cells});
                if include_metadata {
                    row["object"] = printers::partial_object_metadata(obj);
                }
                row
            })
            .collect();
        (columns, rows)
    }

    /// A custom resource's unknown fields: what its schema's pruning removes, and the unknown
    /// metadata fields of embedded resources.
    fn schema_field_problems(
        &self,
        info: &ResourceInfo,
        obj: &Value,
    ) -> ApiResult<Vec<FieldProblem>> {
        let Some(custom) = crate::crd::served::lookup(info) else {
            return Ok(Vec::new());
        };
        let Some(schema) = custom.schema.as_ref() else {
            return Ok(Vec::new());
        };
        // Pruning and coercion report by changing a copy.
        let mut obj = obj.clone();
        let mut unknown = schema.prune(&mut obj);
        if let Ok(dropped) = schema.coerce(&mut obj, true) {
            unknown.extend(dropped);
        }
        Ok(unknown.into_iter().map(FieldProblem::Unknown).collect())
    }

    /// kube's deprecated kinds, and a custom resource version's `deprecationWarning`.
    fn deprecation_warning(&self, info: &ResourceInfo) -> Option<String> {
        rkcm_server::deprecation::warning(info).or_else(|| {
            crate::crd::served::lookup(info).and_then(|v| v.deprecation_warning.clone())
        })
    }
}
