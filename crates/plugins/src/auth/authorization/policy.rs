//! Where the RBAC authorizer reads roles and bindings (kube's `RoleGetter`,
//! `RoleBindingLister`, `ClusterRoleGetter`, `ClusterRoleBindingLister`): the decoded cache the
//! API server keeps ([`super::policy_cache::PolicyCache`]), the store read directly, or a fixed
//! set in tests.

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde::de::DeserializeOwned;

use rkcm_apimachinery::catalog;

use crate::auth::UserInfo;
use rkcm_storage::store::Store;

/// The RBAC objects an authorizer decides from. Implementations are shared by every request and
/// called concurrently.
///
/// The lists are in the order a full list of the store gives (by name), which is the order
/// [`super::rbac::visit_rules_for`] visits them in. An implementation may leave out bindings
/// none of whose subjects can name `user`, and only those: the visit skips them anyway.
pub trait PolicySource: Send + Sync {
    /// The ClusterRoleBindings that may bind `user`.
    fn cluster_role_bindings(&self, user: &UserInfo) -> Vec<Arc<ClusterRoleBinding>>;
    /// The RoleBindings of `namespace` that may bind `user`.
    fn role_bindings(&self, namespace: &str, user: &UserInfo) -> Vec<Arc<RoleBinding>>;
    /// The ClusterRole `name`.
    fn cluster_role(&self, name: &str) -> Option<Arc<ClusterRole>>;
    /// The Role `name` in `namespace`.
    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Role>>;
}

const GROUP_VERSION: &str = "rbac.authorization.k8s.io/v1";

fn decode<T: DeserializeOwned>(obj: &rkcm_storage::watch_cache::CachedObject) -> Option<T> {
    // Stored objects passed validation; one that does not decode grants nothing.
    serde_json::from_slice(obj.json()).ok()
}

fn rbac_list<T: DeserializeOwned>(
    store: &Store,
    kind: &str,
    namespace: Option<&str>,
) -> Vec<Arc<T>> {
    let Some(info) = catalog::by_kind(GROUP_VERSION, kind) else {
        return Vec::new();
    };
    let prefix = rkcm_server::rest::prefix(info, namespace);
    let (items, _, _) = store.cache().list(&prefix, None, 0, &|_| true);
    items
        .iter()
        .filter_map(|o| decode(o))
        .map(Arc::new)
        .collect()
}

fn rbac_get<T: DeserializeOwned>(
    store: &Store,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
) -> Option<Arc<T>> {
    let info = catalog::by_kind(GROUP_VERSION, kind)?;
    decode(
        store
            .get(&rkcm_server::rest::key(info, namespace, name))?
            .as_ref(),
    )
    .map(Arc::new)
}

/// The store read directly: every call lists and decodes what it returns. What the cache is
/// measured against; servers decide from [`super::policy_cache::PolicyCache`].
impl PolicySource for Store {
    fn cluster_role_bindings(&self, _: &UserInfo) -> Vec<Arc<ClusterRoleBinding>> {
        rbac_list(self, "ClusterRoleBinding", None)
    }

    fn role_bindings(&self, namespace: &str, _: &UserInfo) -> Vec<Arc<RoleBinding>> {
        rbac_list(self, "RoleBinding", Some(namespace))
    }

    fn cluster_role(&self, name: &str) -> Option<Arc<ClusterRole>> {
        rbac_get(self, "ClusterRole", None, name)
    }

    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Role>> {
        rbac_get(self, "Role", Some(namespace), name)
    }
}

/// A fixed set of RBAC objects (tests, and checks against objects not yet stored). Its lists
/// are every binding, in the order given.
#[derive(Clone, Debug, Default)]
pub struct StaticPolicy {
    /// ClusterRoles.
    pub cluster_roles: Vec<ClusterRole>,
    /// ClusterRoleBindings.
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
    /// Roles.
    pub roles: Vec<Role>,
    /// RoleBindings.
    pub role_bindings: Vec<RoleBinding>,
}

impl PolicySource for StaticPolicy {
    fn cluster_role_bindings(&self, _: &UserInfo) -> Vec<Arc<ClusterRoleBinding>> {
        self.cluster_role_bindings
            .iter()
            .cloned()
            .map(Arc::new)
            .collect()
    }

    fn role_bindings(&self, namespace: &str, _: &UserInfo) -> Vec<Arc<RoleBinding>> {
        self.role_bindings
            .iter()
            .filter(|b| b.metadata.namespace.as_deref() == Some(namespace))
            .cloned()
            .map(Arc::new)
            .collect()
    }

    fn cluster_role(&self, name: &str) -> Option<Arc<ClusterRole>> {
        self.cluster_roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(name))
            .cloned()
            .map(Arc::new)
    }

    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Role>> {
        self.roles
            .iter()
            .find(|r| {
                r.metadata.name.as_deref() == Some(name)
                    && r.metadata.namespace.as_deref() == Some(namespace)
            })
            .cloned()
            .map(Arc::new)
    }
}
