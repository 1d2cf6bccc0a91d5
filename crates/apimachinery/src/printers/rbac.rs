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
