//! kube-apiserver's default RBAC policy (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy`),
//! which the API server reconciles into the store at every start: the ClusterRoles and
//! ClusterRoleBindings of `bootstrappolicy` (`cluster-admin`, `admin`/`edit`/`view` with their
//! aggregation rules, `system:basic-user`, `system:discovery`, `system:public-info-viewer`,
//! `system:node`, `system:kube-scheduler`, `system:kube-controller-manager`, every
//! `system:controller:*` role, ...) and the Roles and RoleBindings of `kube-system` and
//! `kube-public`.
//!
//! The data is kube's own testdata (`plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata`),
//! converted to `policy.json` by `crates/plugins/tools/bootstrap_policy.py`.

pub mod reconcile;

use serde_json::Value;

pub use reconcile::{reconcile_binding, reconcile_role, Reconciled, AUTOUPDATE_ANNOTATION};

/// The policy, as `bootstrap_policy.py` wrote it.
const POLICY_JSON: &str = include_str!("policy.json");

/// The default objects, by kind.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    /// ClusterRoles (`ClusterRoles()` then `ControllerRoles()`).
    pub cluster_roles: Vec<Value>,
    /// ClusterRoleBindings (`ClusterRoleBindings()` then `ControllerRoleBindings()`).
    pub cluster_role_bindings: Vec<Value>,
    /// Roles of `kube-system` and `kube-public` (`NamespaceRoles()`).
    pub roles: Vec<Value>,
    /// RoleBindings of `kube-system` and `kube-public` (`NamespaceRoleBindings()`).
    pub role_bindings: Vec<Value>,
}

/// kube 1.33's default policy.
pub fn policy() -> Policy {
    // The embedded file is checked by the tests below; a broken one yields no policy rather
    // than a panic at start.
    let doc: Value = serde_json::from_str(POLICY_JSON).unwrap_or_default();
    let list = |k: &str| {
        doc.get(k)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    Policy {
        cluster_roles: list("clusterRoles"),
        cluster_role_bindings: list("clusterRoleBindings"),
        roles: list("roles"),
        role_bindings: list("roleBindings"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    use rkcm_storage::object;

    #[test]
    fn the_embedded_policy_is_kubes_and_decodes() {
        let p = policy();
        let names = |objs: &[Value]| -> Vec<String> {
            objs.iter().map(|o| object::name(o).to_string()).collect()
        };
        let roles = names(&p.cluster_roles);
        for want in [
            "cluster-admin",
            "admin",
            "edit",
            "view",
            "system:basic-user",
            "system:discovery",
            "system:public-info-viewer",
            "system:node",
            "system:kube-scheduler",
            "system:kube-controller-manager",
            "system:controller:replicaset-controller",
            "system:controller:job-controller",
            "system:controller:clusterrole-aggregation-controller",
        ] {
            assert!(roles.iter().any(|r| r == want), "{want} missing");
        }
        for r in &p.cluster_roles {
            serde_json::from_value::<ClusterRole>(r.clone()).expect("ClusterRole");
            assert_eq!(
                r["metadata"]["annotations"][AUTOUPDATE_ANNOTATION],
                "true",
                "{}",
                object::name(r)
            );
        }
        for b in &p.cluster_role_bindings {
            let b: ClusterRoleBinding = serde_json::from_value(b.clone()).expect("binding");
            assert!(
                roles.contains(&b.role_ref.name),
                "{} binds a missing role",
                b.role_ref.name
            );
        }
        for r in &p.roles {
            serde_json::from_value::<Role>(r.clone()).expect("Role");
        }
        for b in &p.role_bindings {
            serde_json::from_value::<RoleBinding>(b.clone()).expect("RoleBinding");
        }
        let view = p
            .cluster_roles
            .iter()
            .find(|r| object::name(r) == "view")
            .expect("view");
        assert_eq!(
            view["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"]
                ["rbac.authorization.k8s.io/aggregate-to-view"],
            "true"
        );
        let job = p
            .cluster_role_bindings
            .iter()
            .find(|b| object::name(b) == "system:controller:job-controller")
            .expect("job controller binding");
        assert_eq!(
            job["subjects"][0],
            serde_json::json!({"kind": "ServiceAccount", "name": "job-controller", "namespace": "kube-system"})
        );
    }
}
