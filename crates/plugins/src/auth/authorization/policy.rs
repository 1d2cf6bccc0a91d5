//! Where the RBAC authorizer reads roles and bindings: the server's own store, or a fixed set in
//! tests (kube's `RoleGetter`, `RoleBindingLister`, `ClusterRoleGetter`,
//! `ClusterRoleBindingLister`).

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use serde::de::DeserializeOwned;

use rkcm_apimachinery::catalog;

use rkcm_storage::store::Store;

/// The RBAC objects an authorizer decides from. Implementations are shared by every request and
/// called concurrently.
pub trait PolicySource: Send + Sync {
    /// Every ClusterRoleBinding.
    fn cluster_role_bindings(&self) -> Vec<ClusterRoleBinding>;
    /// The RoleBindings of `namespace`.
    fn role_bindings(&self, namespace: &str) -> Vec<RoleBinding>;
    /// The ClusterRole `name`.
    fn cluster_role(&self, name: &str) -> Option<ClusterRole>;
    /// The Role `name` in `namespace`.
    fn role(&self, namespace: &str, name: &str) -> Option<Role>;
}

const GROUP_VERSION: &str = "rbac.authorization.k8s.io/v1";

fn decode<T: DeserializeOwned>(obj: &rkcm_storage::watch_cache::CachedObject) -> Option<T> {
    // Stored objects passed validation; one that does not decode grants nothing.
    serde_json::from_slice(obj.json()).ok()
}

fn rbac_list<T: DeserializeOwned>(store: &Store, kind: &str, namespace: Option<&str>) -> Vec<T> {
    let Some(info) = catalog::by_kind(GROUP_VERSION, kind) else {
        return Vec::new();
    };
    let prefix = rkcm_server::rest::prefix(info, namespace);
    let (items, _, _) = store.cache().list(&prefix, None, 0, &|_| true);
    items.iter().filter_map(|o| decode(o)).collect()
}

fn rbac_get<T: DeserializeOwned>(
    store: &Store,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
) -> Option<T> {
    let info = catalog::by_kind(GROUP_VERSION, kind)?;
    decode(
        store
            .get(&rkcm_server::rest::key(info, namespace, name))?
            .as_ref(),
    )
}

impl PolicySource for Store {
    fn cluster_role_bindings(&self) -> Vec<ClusterRoleBinding> {
        rbac_list(self, "ClusterRoleBinding", None)
    }

    fn role_bindings(&self, namespace: &str) -> Vec<RoleBinding> {
        rbac_list(self, "RoleBinding", Some(namespace))
    }

    fn cluster_role(&self, name: &str) -> Option<ClusterRole> {
        rbac_get(self, "ClusterRole", None, name)
    }

    fn role(&self, namespace: &str, name: &str) -> Option<Role> {
        rbac_get(self, "Role", Some(namespace), name)
    }
}

/// A fixed set of RBAC objects (tests, and checks against objects not yet stored).
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
    fn cluster_role_bindings(&self) -> Vec<ClusterRoleBinding> {
        self.cluster_role_bindings.clone()
    }

    fn role_bindings(&self, namespace: &str) -> Vec<RoleBinding> {
        self.role_bindings
            .iter()
            .filter(|b| b.metadata.namespace.as_deref() == Some(namespace))
            .cloned()
            .collect()
    }

    fn cluster_role(&self, name: &str) -> Option<ClusterRole> {
        self.cluster_roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(name))
            .cloned()
    }

    fn role(&self, namespace: &str, name: &str) -> Option<Role> {
        self.roles
            .iter()
            .find(|r| {
                r.metadata.name.as_deref() == Some(name)
                    && r.metadata.namespace.as_deref() == Some(namespace)
            })
            .cloned()
    }
}
