//! RBAC binding tables: RoleBinding and ClusterRoleBinding (`printRoleBinding`,
//! `printClusterRoleBinding`, with `rbac.SubjectsStrings`).
//!
//! Role and ClusterRole have no printer in kube: their registries serve the default table.

use jiff::Timestamp;
use serde_json::Value;

use super::{age, array_at, col, name, str_at, wide, Column, Description, AGE, NAME};

const fn binding_columns(definition: &'static str, what: SubjectDescriptions) -> [Column; 6] {
    [
        NAME,
        col("Role", "string", Description::Field(definition, "roleRef")),
        AGE,
        wide("Users", "string", Description::Text(what.users)),
        wide("Groups", "string", Description::Text(what.groups)),
        wide(
            "ServiceAccounts",
            "string",
            Description::Text(what.service_accounts),
        ),
    ]
}

/// The literal descriptions of a binding kind's wide columns.
struct SubjectDescriptions {
    users: &'static str,
    groups: &'static str,
    service_accounts: &'static str,
}

/// RoleBinding columns.
pub(super) const ROLE_BINDING_COLUMNS: &[Column] = &binding_columns(
    "io.k8s.api.rbac.v1.RoleBinding",
    SubjectDescriptions {
        users: "Users in the roleBinding",
        groups: "Groups in the roleBinding",
        service_accounts: "ServiceAccounts in the roleBinding",
    },
);

/// ClusterRoleBinding columns.
pub(super) const CLUSTER_ROLE_BINDING_COLUMNS: &[Column] = &binding_columns(
    "io.k8s.api.rbac.v1.ClusterRoleBinding",
    SubjectDescriptions {
        users: "Users in the clusterRoleBinding",
        groups: "Groups in the clusterRoleBinding",
        service_accounts: "ServiceAccounts in the clusterRoleBinding",
    },
);

/// The cells of one RoleBinding's or ClusterRoleBinding's row: the role as `Kind/name`, and
/// the subjects by kind (service accounts as `namespace/name`), each joined with ", ".
pub(super) fn binding_cells(binding: &Value, now: Timestamp) -> Vec<Value> {
    let role = format!(
        "{}/{}",
        str_at(binding, "/roleRef/kind"),
        str_at(binding, "/roleRef/name")
    );
    let (mut users, mut groups, mut service_accounts) = (Vec::new(), Vec::new(), Vec::new());
    for subject in array_at(binding, "/subjects") {
        let subject_name = str_at(subject, "/name");
        match str_at(subject, "/kind") {
            "User" => users.push(subject_name.to_string()),
            "Group" => groups.push(subject_name.to_string()),
            "ServiceAccount" => {
                service_accounts.push(format!("{}/{subject_name}", str_at(subject, "/namespace")))
            }
            _ => {}
        }
    }
    vec![
        name(binding),
        role.into(),
        age(binding, now),
        users.join(", ").into(),
        groups.join(", ").into(),
        service_accounts.join(", ").into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn role_binding_rows_match_kube() {
        // TestPrintRoleBinding and TestPrintClusterRoleBinding.
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let basic = json!({"metadata":{"name":"binding1","creationTimestamp":"2026-01-01T00:00:01.9Z"},
            "subjects":[{"kind":"User","name":"system:kube-controller-manager"}],
            "roleRef":{"kind":"Role","name":"extension-apiserver-authentication-reader"}});
        assert_eq!(
            Value::Array(binding_cells(&basic, now)),
            json!([
                "binding1",
                "Role/extension-apiserver-authentication-reader",
                "0s",
                "system:kube-controller-manager",
                "",
                ""
            ])
        );
        let wide = json!({"metadata":{"name":"binding2","creationTimestamp":"2026-01-01T00:00:01.9Z"},
            "subjects":[{"kind":"User","name":"user-name"},{"kind":"Group","name":"group-name"},
                {"kind":"ServiceAccount","name":"service-account-name","namespace":"service-account-namespace"},
                {"kind":"Group","name":"other-group"}],
            "roleRef":{"kind":"Role","name":"role-name"}});
        assert_eq!(
            Value::Array(binding_cells(&wide, now)),
            json!([
                "binding2",
                "Role/role-name",
                "0s",
                "user-name",
                "group-name, other-group",
                "service-account-namespace/service-account-name"
            ])
        );
    }

    #[test]
    fn binding_kinds_describe_their_own_subjects() {
        let describe = |cols: &[Column]| match cols[3].description {
            Description::Text(t) => t,
            Description::Field(..) => "",
        };
        assert_eq!(describe(ROLE_BINDING_COLUMNS), "Users in the roleBinding");
        assert_eq!(
            describe(CLUSTER_ROLE_BINDING_COLUMNS),
            "Users in the clusterRoleBinding"
        );
    }
}
