//! Which node a user is, as kube's `nodeidentifier.NewDefaultNodeIdentifier` tells it
//! (`pkg/auth/nodeidentifier/default.go`): a user named `system:node:<name>` in the group
//! `system:nodes`.

use super::user::UserInfo;

/// Prefix of the user names of nodes (`system:node:`).
pub const NODE_USER_PREFIX: &str = "system:node:";
/// The group every node is in (`user.NodesGroup`).
pub const NODES_GROUP: &str = "system:nodes";

/// The user name a node's credentials carry (`system:node:<name>`).
pub fn node_user_name(node: &str) -> String {
    format!("{NODE_USER_PREFIX}{node}")
}

/// The node `user` is: `None` when the user is not a node (no `system:node:` prefix, or not in
/// `system:nodes`); `Some("")` for a node whose name is empty (kube refuses its requests).
pub fn node_identity(user: &UserInfo) -> Option<&str> {
    let name = user.name.strip_prefix(NODE_USER_PREFIX)?;
    user.groups.iter().any(|g| g == NODES_GROUP).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cases of `TestDefaultNodeIdentifier_NodeIdentity` (default_test.go).
    #[test]
    fn a_node_is_a_prefixed_user_in_the_nodes_group() {
        let cases: &[(&str, &[&str], Option<&str>)] = &[
            ("system:node:foo", &[], None),
            ("system:node:foo", &["system:nodes"], Some("foo")),
            ("system:node:", &["system:nodes"], Some("")),
            ("foo", &["system:nodes"], None),
            ("system:node:foo", &["system:authenticated"], None),
            ("System:Node:foo", &["system:nodes"], None),
        ];
        for (name, groups, want) in cases {
            assert_eq!(
                node_identity(&UserInfo::new(*name, groups)),
                *want,
                "{name} {groups:?}"
            );
        }
        assert_eq!(node_user_name("n1"), "system:node:n1");
    }
}
