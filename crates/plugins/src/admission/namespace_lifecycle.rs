//! `NamespaceLifecycle`: nothing is created in a namespace that does not exist or is being
//! terminated, and the immortal namespaces are never deleted.
//!
//! Mirrors `staging/src/k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle/admission.go`.
//! kube reads an informer and falls back to a live read; the watch cache read here is both.

use async_trait::async_trait;
use serde_json::Value;

use super::plugins::NAMESPACE_LIFECYCLE;
use rkcm_server::admission::attributes::{forbidden, Attributes, Operation};
use rkcm_server::admission::plugin::Plugin;
use rkcm_server::error::{ApiError, ApiResult, Cause};
use rkcm_server::rest;
use rkcm_storage::store::Store;

/// Namespaces that may never be deleted (the plugin's `immortalNamespaces`).
pub const IMMORTAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

/// Resources that answer whether a user may act in a namespace: they must not reveal whether
/// it exists (`accessReviewResources`).
const ACCESS_REVIEWS: &[(&str, &str)] = &[("authorization.k8s.io", "localsubjectaccessreviews")];

/// The plugin.
pub struct NamespaceLifecycle {
    store: Store,
}

impl NamespaceLifecycle {
    /// The plugin, reading namespaces from `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

/// Why a create is refused, if it is: the namespace's phase is `Terminating`.
fn terminating(namespace: &Value) -> bool {
    namespace.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
}

#[async_trait]
impl Plugin for NamespaceLifecycle {
    fn name(&self) -> &'static str {
        NAMESPACE_LIFECYCLE
    }

    fn handles(&self, operation: Operation) -> bool {
        matches!(
            operation,
            Operation::Create | Operation::Update | Operation::Delete
        )
    }

    async fn admit(&self, attrs: &mut Attributes) -> ApiResult<()> {
        let is_namespace = attrs.kind.is_core("Namespace");
        if attrs.operation == Operation::Delete
            && is_namespace
            && IMMORTAL_NAMESPACES.contains(&attrs.name.as_str())
        {
            return Err(ApiError::forbidden(
                attrs.resource,
                &attrs.name,
                "this namespace may not be deleted",
            ));
        }
        if attrs.namespace.is_empty() || is_namespace || attrs.operation == Operation::Delete {
            return Ok(());
        }
        if ACCESS_REVIEWS.contains(&(attrs.resource.group, attrs.resource.plural)) {
            return Ok(());
        }
        let info = namespaces();
        let Some(ns) = self.store.get(&rest::key(info, None, &attrs.namespace)) else {
            return Err(ApiError::not_found(info, &attrs.namespace));
        };
        if attrs.operation == Operation::Create && terminating(&ns.value()) {
            let mut err = forbidden(
                attrs,
                &format!(
                    "unable to create new content in namespace {} because it is being terminated",
                    attrs.namespace
                ),
            );
            err.details.causes.push(Cause {
                reason: "NamespaceTerminating".into(),
                message: format!("namespace {} is being terminated", attrs.namespace),
                field: "metadata.namespace".into(),
            });
            return Err(err);
        }
        Ok(())
    }
}

/// The catalog entry of namespaces.
fn namespaces() -> &'static rkcm_apimachinery::catalog::ResourceInfo {
    rkcm_apimachinery::catalog::by_kind("v1", "Namespace").expect("namespaces are in the catalog")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::UserInfo;
    use rkcm_storage::memory::MemoryBackend;
    use serde_json::json;
    use std::sync::Arc;

    async fn store_with(namespaces: &[Value]) -> Store {
        let store = Store::new(Arc::new(MemoryBackend::new()), 100)
            .await
            .expect("memory store");
        for ns in namespaces {
            store
                .create(
                    &rest::key(super::namespaces(), None, rkcm_storage::object::name(ns)),
                    ns.clone(),
                )
                .await
                .expect("namespace stored");
        }
        store
    }

    fn attrs(op: Operation, kind: &str, ns: &str, name: &str) -> Attributes {
        let api_version = if kind == "Namespace" || kind == "Pod" {
            "v1"
        } else {
            "rbac.authorization.k8s.io/v1"
        };
        let info = rkcm_apimachinery::catalog::by_kind(api_version, kind).expect("kind");
        let obj = (op != Operation::Delete).then(|| json!({"metadata": {"name": name}}));
        Attributes::new(
            op,
            info,
            "",
            Some(ns).filter(|n| !n.is_empty()),
            name,
            obj,
            None,
            Arc::new(UserInfo::default()),
            false,
        )
    }

    #[tokio::test]
    async fn creates_need_an_active_namespace() {
        let store = store_with(&[
            json!({"metadata": {"name": "active"}, "status": {"phase": "Active"}}),
            json!({"metadata": {"name": "doomed"}, "status": {"phase": "Terminating"}}),
        ])
        .await;
        let plugin = NamespaceLifecycle::new(store);
        plugin
            .admit(&mut attrs(Operation::Create, "Pod", "active", "p"))
            .await
            .expect("active namespace");
        let missing = plugin
            .admit(&mut attrs(Operation::Create, "Pod", "missing", "p"))
            .await
            .expect_err("missing namespace");
        assert_eq!(missing.code, 404);
        assert_eq!(missing.message, "namespaces \"missing\" not found");
        let update_missing = plugin
            .admit(&mut attrs(Operation::Update, "Pod", "missing", "p"))
            .await
            .expect_err("updates need the namespace too");
        assert_eq!(update_missing.code, 404);
        let doomed = plugin
            .admit(&mut attrs(Operation::Create, "Pod", "doomed", "p"))
            .await
            .expect_err("terminating");
        assert_eq!(doomed.code, 403);
        assert_eq!(
            doomed.message,
            "pods \"p\" is forbidden: unable to create new content in namespace doomed because it is being terminated"
        );
        assert_eq!(doomed.details.causes[0].reason, "NamespaceTerminating");
        assert_eq!(doomed.details.causes[0].field, "metadata.namespace");
        plugin
            .admit(&mut attrs(Operation::Update, "Pod", "doomed", "p"))
            .await
            .expect("updates in a terminating namespace are allowed");
        plugin
            .admit(&mut attrs(Operation::Delete, "Pod", "missing", "p"))
            .await
            .expect("deletes are always allowed");
        plugin
            .admit(&mut attrs(Operation::Create, "ClusterRole", "", "r"))
            .await
            .expect("cluster-scoped objects are not checked");
    }

    #[tokio::test]
    async fn immortal_namespaces_are_never_deleted() {
        let plugin = NamespaceLifecycle::new(store_with(&[]).await);
        for name in IMMORTAL_NAMESPACES {
            let err = plugin
                .admit(&mut attrs(Operation::Delete, "Namespace", "", name))
                .await
                .expect_err("immortal");
            assert_eq!(err.code, 403);
            assert_eq!(
                err.message,
                format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
            );
        }
        plugin
            .admit(&mut attrs(
                Operation::Delete,
                "Namespace",
                "",
                "kube-node-lease",
            ))
            .await
            .expect("kube lets kube-node-lease go");
        plugin
            .admit(&mut attrs(Operation::Create, "Namespace", "", "new"))
            .await
            .expect("namespaces themselves are not checked");
    }
}
