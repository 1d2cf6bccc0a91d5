//! kube-apiserver's default RBAC policy reconciled into the store at every start
//! (`pkg/registry/rbac/rest/storage_rbac.go`, `EnsureRBACPolicy`); the policy itself is
//! [`rkcm_plugins::auth::bootstrap_policy`]'s.

use rkcm_apimachinery::catalog;

pub use rkcm_plugins::auth::bootstrap_policy::*;

use crate::error::{ApiError, ApiResult};
use crate::object;
use crate::rest::KubeResources;
use crate::rest::{self, DeleteOptions, UpdateSource, UpdateTarget, WriteOptions};
use crate::store::Store;

/// Creates every missing default object and reconciles the others; returns how many objects
/// were written.
pub async fn ensure(store: &Store, resources: &KubeResources) -> ApiResult<usize> {
    let p = policy();
    let mut written = 0;
    for (kind, objects, is_role) in [
        ("ClusterRole", &p.cluster_roles, true),
        ("ClusterRoleBinding", &p.cluster_role_bindings, false),
        ("Role", &p.roles, true),
        ("RoleBinding", &p.role_bindings, false),
    ] {
        let info = catalog::by_kind("rbac.authorization.k8s.io/v1", kind).ok_or_else(|| {
            ApiError::internal(
                "reconciling the bootstrap policy",
                format!("{kind} is not served"),
            )
        })?;
        for expected in objects {
            let name = object::name(expected);
            let ns = Some(object::namespace(expected)).filter(|n| !n.is_empty());
            let Some(existing) = store.get(&rest::key(info, ns, name)) else {
                rest::create(
                    store,
                    resources,
                    info,
                    ns,
                    expected.clone(),
                    WriteOptions::default(),
                )
                .await?;
                written += 1;
                continue;
            };
            let reconciled = if is_role {
                reconcile_role(&existing.value(), expected)
            } else {
                reconcile_binding(&existing.value(), expected)
            };
            match reconciled {
                Reconciled::Unchanged => {}
                Reconciled::Update(mut obj) => {
                    object::remove_meta(&mut obj, "resourceVersion");
                    rest::update(
                        store,
                        resources,
                        info,
                        ns,
                        name,
                        obj,
                        UpdateTarget::Main,
                        UpdateSource::Put,
                        WriteOptions::default(),
                    )
                    .await?;
                    tracing::info!(kind, name, "updated the bootstrap RBAC object");
                    written += 1;
                }
                Reconciled::Recreate(mut obj) => {
                    rest::delete(store, resources, info, ns, name, &DeleteOptions::default())
                        .await?;
                    for field in ["resourceVersion", "uid", "creationTimestamp"] {
                        object::remove_meta(&mut obj, field);
                    }
                    rest::create(store, resources, info, ns, obj, WriteOptions::default()).await?;
                    tracing::info!(
                        kind,
                        name,
                        "recreated the bootstrap RBAC binding for its new role"
                    );
                    written += 1;
                }
            }
        }
    }
    Ok(written)
}
