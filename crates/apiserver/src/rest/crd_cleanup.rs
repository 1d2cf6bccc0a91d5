//! The storage of CustomResourceDefinitions (`apiextensions-apiserver`'s
//! `registry/customresourcedefinition`): a deleted CRD is `Terminating` and keeps the cleanup
//! finalizer until its custom resources are gone.

use async_trait::async_trait;
use serde_json::Value;

use crate::crd::cleanup;
use rkcm_server::rest::WriteHooks;

/// The hooks of CustomResourceDefinitions' storage.
pub struct CustomResourceDefinitionHooks;

#[async_trait]
impl WriteHooks for CustomResourceDefinitionHooks {
    fn prepare_for_delete(&self, next: &mut Value, finalizers: &mut Vec<String>) {
        let crds = rkcm_apimachinery::catalog::by_kind(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
        );
        if let Some(info) = crds {
            cleanup::mark_terminating(info, next, finalizers);
        }
    }
}
