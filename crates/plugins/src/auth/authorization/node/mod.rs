//! The Node authorizer (`--authorization-mode=Node`), as kube's
//! `plugin/pkg/auth/authorizer/node/node_authorizer.go` (1.33, `AuthorizeNodeWithSelectors`
//! on as by default): what a kubelet, `system:node:<name>` in `system:nodes`, may do.
//!
//! Secrets, configmaps, claims, volumes, service-account tokens, resource claims and volume
//! attachments only when the [`graph`] relates them to the node (a pod bound to it uses them);
//! its own Node, Lease and CSINode by name; pods listed or watched with
//! `fieldSelector=spec.nodeName=<name>`; everything else by the rules of kube's `system:node`
//! ClusterRole (`NodeRules()`). Anything it does not allow falls through to the next mode
//! (RBAC). What nodes may change in the objects they may write is NodeRestriction's
//! (`crate::admission::node_restriction`).

pub mod graph;
pub mod populator;

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};

use crate::auth::node_identity::node_identity;
use graph::{Graph, VertexType};
pub use populator::GraphPopulator;
use rkcm_server::auth::authorization::rules::rule_allows;
use rkcm_server::auth::authorization::{Attributes, Decision};

/// The namespace of node leases (`api.NamespaceNodeLease`).
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The Node authorizer: the graph of what each node may reach, and the rules every node has.
pub struct NodeAuthorizer {
    graph: Arc<GraphPopulator>,
    node_rules: Vec<PolicyRule>,
}

impl NodeAuthorizer {
    /// An authorizer deciding from `graph`, with the rules of kube's `system:node` ClusterRole.
    pub fn new(graph: Arc<GraphPopulator>) -> Self {
        Self {
            graph,
            node_rules: node_rules(),
        }
    }

    /// The decision on `attrs` (kube's `NodeAuthorizer.Authorize`).
    pub fn authorize(&self, attrs: &Attributes) -> Decision {
        if node_identity(&attrs.user).is_none() {
            return no_opinion("");
        }
        self.graph
            .with_graph(|graph| decide(graph, &self.node_rules, attrs))
    }
}

/// The rules of kube's `system:node` ClusterRole (`bootstrappolicy.NodeRules()`), from the
/// embedded bootstrap policy.
pub fn node_rules() -> Vec<PolicyRule> {
    crate::auth::bootstrap_policy::policy()
        .cluster_roles
        .iter()
        .filter(|r| r.pointer("/metadata/name").and_then(|n| n.as_str()) == Some("system:node"))
        .filter_map(|r| serde_json::from_value::<ClusterRole>(r.clone()).ok())
        .flat_map(|r| r.rules.unwrap_or_default())
        .collect()
}

fn no_opinion(reason: impl Into<String>) -> Decision {
    Decision::NoOpinion(reason.into())
}

fn allow() -> Decision {
    Decision::Allow(String::new())
}

/// kube's decision for a request of a node user, given the graph and the node rules.
pub fn decide(graph: &Graph, node_rules: &[PolicyRule], attrs: &Attributes) -> Decision {
    let Some(node) = node_identity(&attrs.user) else {
        return no_opinion("");
    };
    if node.is_empty() {
        return no_opinion(format!("unknown node for user {:?}", attrs.user.name));
    }
    if attrs.resource_request {
        let decided = match (attrs.api_group.as_str(), attrs.resource.as_str()) {
            ("", "secrets") => Some(read_namespaced(graph, node, VertexType::Secret, attrs)),
            ("", "configmaps") => Some(read_namespaced(graph, node, VertexType::ConfigMap, attrs)),
            ("", "persistentvolumeclaims") => Some(if attrs.subresource == "status" {
                status_update(graph, node, VertexType::PersistentVolumeClaim, attrs)
            } else {
                get(graph, node, VertexType::PersistentVolumeClaim, attrs)
            }),
            ("", "persistentvolumes") => {
                Some(get(graph, node, VertexType::PersistentVolume, attrs))
            }
            ("resource.k8s.io", "resourceclaims") => {
                Some(get(graph, node, VertexType::ResourceClaim, attrs))
            }
            ("storage.k8s.io", "volumeattachments") => {
                Some(get(graph, node, VertexType::VolumeAttachment, attrs))
            }
            ("", "serviceaccounts") => Some(create_token(graph, node, attrs)),
            ("coordination.k8s.io", "leases") => Some(lease(node, attrs)),
            ("storage.k8s.io", "csinodes") => Some(csi_node(node, attrs)),
            ("", "nodes") => Some(node_object(node, attrs)),
            ("", "pods") => Some(pod(graph, node, attrs)),
            _ => None,
        };
        if let Some(decision) = decided {
            return decision;
        }
    }
    if node_rules.iter().any(|r| rule_allows(attrs, r)) {
        allow()
    } else {
        no_opinion("")
    }
}

/// `authorizeStatusUpdate`.
fn status_update(graph: &Graph, node: &str, kind: VertexType, attrs: &Attributes) -> Decision {
    match attrs.verb.as_str() {
        "update" | "patch" => {}
        _ => return no_opinion("can only get/update/patch this type"),
    }
    if attrs.subresource != "status" {
        return no_opinion("can only update status subresource");
    }
    related(graph, node, kind, attrs)
}

/// `authorizeGet`.
fn get(graph: &Graph, node: &str, kind: VertexType, attrs: &Attributes) -> Decision {
    if attrs.verb != "get" {
        return no_opinion("can only get individual resources of this type");
    }
    if !attrs.subresource.is_empty() {
        return no_opinion("cannot get subresource");
    }
    related(graph, node, kind, attrs)
}

/// `authorizeReadNamespacedObject`.
fn read_namespaced(graph: &Graph, node: &str, kind: VertexType, attrs: &Attributes) -> Decision {
    match attrs.verb.as_str() {
        "get" | "list" | "watch" => {}
        _ => return no_opinion("can only read resources of this type"),
    }
    if !attrs.subresource.is_empty() {
        return no_opinion("cannot read subresource");
    }
    if attrs.namespace.is_empty() {
        return no_opinion("can only read namespaced object of this type");
    }
    related(graph, node, kind, attrs)
}

/// `authorize`: allowed when the graph relates the named object to the node.
fn related(graph: &Graph, node: &str, kind: VertexType, attrs: &Attributes) -> Decision {
    if attrs.name.is_empty() {
        return no_opinion("No Object name found");
    }
    match graph.has_path(node, kind, &attrs.namespace, &attrs.name) {
        Ok(()) => allow(),
        Err(why) => {
            tracing::debug!(node, why, "NODE DENY");
            no_opinion(format!(
                "no relationship found between node '{node}' and this object"
            ))
        }
    }
}

/// `authorizeCreateToken`.
fn create_token(graph: &Graph, node: &str, attrs: &Attributes) -> Decision {
    if attrs.verb != "create" || attrs.name.is_empty() {
        return no_opinion("can only create tokens for individual service accounts");
    }
    if attrs.subresource != "token" {
        return no_opinion("can only create token subresource of serviceaccount");
    }
    related(graph, node, VertexType::ServiceAccount, attrs)
}

/// `authorizeLease`.
fn lease(node: &str, attrs: &Attributes) -> Decision {
    match attrs.verb.as_str() {
        "get" | "create" | "update" | "patch" | "delete" => {}
        _ => return no_opinion("can only get, create, update, patch, or delete a node lease"),
    }
    if attrs.namespace != NODE_LEASE_NAMESPACE {
        return no_opinion(format!(
            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
        ));
    }
    // The name is unknown on create; NodeRestriction checks it there.
    if attrs.verb != "create" && attrs.name != node {
        return no_opinion("can only access node lease with the same name as the requesting node");
    }
    allow()
}

/// `authorizeCSINode`.
fn csi_node(node: &str, attrs: &Attributes) -> Decision {
    match attrs.verb.as_str() {
        "get" | "create" | "update" | "patch" | "delete" => {}
        _ => return no_opinion("can only get, create, update, patch, or delete a CSINode"),
    }
    if !attrs.subresource.is_empty() {
        return no_opinion("cannot authorize CSINode subresources");
    }
    if attrs.verb != "create" && attrs.name != node {
        return no_opinion("can only access CSINode with the same name as the requesting node");
    }
    allow()
}

/// `authorizeNode`: any node may create and update Nodes (NodeRestriction keeps it to its
/// own), and read only its own.
fn node_object(node: &str, attrs: &Attributes) -> Decision {
    match (attrs.subresource.as_str(), attrs.verb.as_str()) {
        ("", "create" | "update" | "patch") => allow(),
        ("", "get" | "list" | "watch") => {
            if attrs.name == node {
                allow()
            } else if attrs.name.is_empty() {
                no_opinion(format!(
                    "node '{node}' cannot read all nodes, only its own Node object"
                ))
            } else {
                no_opinion(format!(
                    "node '{node}' cannot read '{}', only its own Node object",
                    attrs.name
                ))
            }
        }
        ("status", "update" | "patch") => allow(),
        _ => no_opinion(""),
    }
}

/// `authorizePod`.
fn pod(graph: &Graph, node: &str, attrs: &Attributes) -> Decision {
    match (attrs.subresource.as_str(), attrs.verb.as_str()) {
        ("", "get") => get(graph, node, VertexType::Pod, attrs),
        ("", "list" | "watch") => {
            if selects_node(&attrs.field_selector, "spec.nodeName", node) {
                allow()
            } else if !attrs.name.is_empty() {
                related(graph, node, VertexType::Pod, attrs)
            } else {
                no_opinion("can only list/watch pods with spec.nodeName field selector")
            }
        }
        // Mirror pods; NodeRestriction keeps them to the node's own.
        ("", "create" | "delete") => allow(),
        ("status", "update" | "patch") => allow(),
        ("eviction", "create") => allow(),
        _ => no_opinion(""),
    }
}

/// Whether `selector` (`fieldSelector`) has the term `field=value` (or `==`).
pub fn selects_node(selector: &str, field: &str, value: &str) -> bool {
    selector.split(',').any(|term| {
        let term = term.trim();
        let (f, v) = match term.split_once("==") {
            Some(pair) => pair,
            None => match term.split_once('=') {
                Some(pair) => pair,
                None => return false,
            },
        };
        !f.ends_with('!') && f.trim() == field && v.trim() == value
    })
}

#[cfg(test)]
mod tests {
    use super::graph::tests::{attachment, pod as bound_pod, pv};
    use super::*;
    use crate::auth::UserInfo;

    fn graph() -> Graph {
        let mut g = Graph::new();
        g.add_pod(&bound_pod("ns0", "pod0-node0", "node0"));
        g.add_pod(&bound_pod("ns0", "pod0-node1", "node1"));
        g.add_pv(&pv("pv0-pod0-node0", "ns0", "pvc-pod0-node0"));
        g.add_volume_attachment(&attachment("va0-node0", "node0"));
        g
    }

    fn node(n: &str) -> UserInfo {
        UserInfo::new(format!("system:node:{n}"), &["system:nodes"])
    }

    fn req(
        user: UserInfo,
        verb: &str,
        group: &str,
        resource: &str,
        ns: &str,
        name: &str,
    ) -> Attributes {
        Attributes::resource(user, verb, group, resource, ns, name)
    }

    fn sub(mut a: Attributes, subresource: &str) -> Attributes {
        a.subresource = subresource.to_string();
        a
    }

    /// The cases of `TestAuthorizer` (node_authorizer_test.go), on the graph of one pod per
    /// node with its secrets, configmaps, claim, volume and attachment.
    #[test]
    fn nodes_read_what_their_pods_use_and_fall_through_otherwise() {
        let g = graph();
        let rules = node_rules();
        assert!(!rules.is_empty(), "system:node is in the bootstrap policy");
        let n0 = node("node0");
        let allowed = |a: Attributes| decide(&g, &rules, &a).is_allowed();
        let reason = |a: Attributes| decide(&g, &rules, &a).reason().to_string();
        // allowed: objects related to the node
        assert!(allowed(req(
            n0.clone(),
            "get",
            "",
            "secrets",
            "ns0",
            "s-pod0-node0"
        )));
        assert!(allowed(req(
            n0.clone(),
            "list",
            "",
            "secrets",
            "ns0",
            "s-pod0-node0"
        )));
        assert!(allowed(req(
            n0.clone(),
            "watch",
            "",
            "secrets",
            "ns0",
            "s-pod0-node0"
        )));
        assert!(allowed(req(
            n0.clone(),
            "get",
            "",
            "configmaps",
            "ns0",
            "cm-pod0-node0"
        )));
        assert!(allowed(req(
            n0.clone(),
            "get",
            "",
            "persistentvolumeclaims",
            "ns0",
            "pvc-pod0-node0"
        )));
        assert!(allowed(req(
            n0.clone(),
            "get",
            "",
            "persistentvolumes",
            "",
            "pv0-pod0-node0"
        )));
        assert!(allowed(req(
            n0.clone(),
            "get",
            "",
            "secrets",
            "ns0",
            "pvsecret-pv0-pod0-node0"
        )));
        assert!(allowed(req(
            n0.clone(),
            "get",
            "storage.k8s.io",
            "volumeattachments",
            "",
            "va0-node0"
        )));
        assert!(allowed(req(
            n0.clone(),
            "get",
            "resource.k8s.io",
            "resourceclaims",
            "ns0",
            "claim-pod0-node0"
        )));
        assert!(allowed(sub(
            req(
                n0.clone(),
                "create",
                "",
                "serviceaccounts",
                "ns0",
                "sa-pod0-node0"
            ),
            "token"
        )));
        assert!(allowed(sub(
            req(
                n0.clone(),
                "update",
                "",
                "persistentvolumeclaims",
                "ns0",
                "pvc-pod0-node0"
            ),
            "status"
        )));
        // disallowed: another node's objects, unknown objects, wrong verbs
        assert_eq!(
            reason(req(n0.clone(), "get", "", "secrets", "ns0", "s-pod0-node1")),
            "no relationship found between node 'node0' and this object"
        );
        assert!(!allowed(req(
            n0.clone(),
            "get",
            "",
            "configmaps",
            "ns0",
            "cm-pod0-node1"
        )));
        assert!(!allowed(req(
            n0.clone(),
            "get",
            "",
            "persistentvolumeclaims",
            "ns0",
            "pvc-pod0-node1"
        )));
        assert!(!allowed(req(
            n0.clone(),
            "get",
            "storage.k8s.io",
            "volumeattachments",
            "",
            "va0-node1"
        )));
        assert!(!allowed(sub(
            req(
                n0.clone(),
                "create",
                "",
                "serviceaccounts",
                "ns0",
                "sa-pod0-node1"
            ),
            "token"
        )));
        assert_eq!(
            reason(req(n0.clone(), "list", "", "secrets", "ns0", "")),
            "No Object name found"
        );
        assert_eq!(
            reason(req(
                n0.clone(),
                "update",
                "",
                "secrets",
                "ns0",
                "s-pod0-node0"
            )),
            "can only read resources of this type"
        );
        assert_eq!(
            reason(req(n0.clone(), "list", "", "secrets", "", "s-pod0-node0")),
            "can only read namespaced object of this type"
        );
        assert_eq!(
            reason(sub(
                req(n0.clone(), "get", "", "secrets", "ns0", "s-pod0-node0"),
                "x"
            )),
            "cannot read subresource"
        );
        assert_eq!(
            reason(req(n0.clone(), "list", "", "persistentvolumes", "", "")),
            "can only get individual resources of this type"
        );
        assert_eq!(
            reason(sub(
                req(
                    n0.clone(),
                    "get",
                    "",
                    "persistentvolumeclaims",
                    "ns0",
                    "pvc-pod0-node0"
                ),
                "status"
            )),
            "can only get/update/patch this type"
        );
        assert_eq!(
            reason(req(
                n0.clone(),
                "get",
                "",
                "serviceaccounts",
                "ns0",
                "sa-pod0-node0"
            )),
            "can only create tokens for individual service accounts"
        );
        assert_eq!(
            reason(req(
                n0.clone(),
                "create",
                "",
                "serviceaccounts",
                "ns0",
                "sa-pod0-node0"
            )),
            "can only create token subresource of serviceaccount"
        );
        // a node the graph does not know of
        assert_eq!(
            reason(req(
                node("node9"),
                "get",
                "",
                "secrets",
                "ns0",
                "s-pod0-node0"
            )),
            "no relationship found between node 'node9' and this object"
        );
    }

    /// `TestAuthorizer`'s lease and CSINode cases.
    #[test]
    fn nodes_manage_their_own_lease_and_csinode() {
        let g = graph();
        let rules = node_rules();
        let n0 = node("node0");
        let d = |a: Attributes| decide(&g, &rules, &a);
        for verb in ["get", "update", "patch", "delete"] {
            assert!(d(req(
                n0.clone(),
                verb,
                "coordination.k8s.io",
                "leases",
                NODE_LEASE_NAMESPACE,
                "node0"
            ))
            .is_allowed());
            assert!(d(req(
                n0.clone(),
                verb,
                "storage.k8s.io",
                "csinodes",
                "",
                "node0"
            ))
            .is_allowed());
        }
        assert!(d(req(
            n0.clone(),
            "create",
            "coordination.k8s.io",
            "leases",
            NODE_LEASE_NAMESPACE,
            ""
        ))
        .is_allowed());
        assert!(d(req(
            n0.clone(),
            "create",
            "storage.k8s.io",
            "csinodes",
            "",
            ""
        ))
        .is_allowed());
        assert_eq!(
            d(req(
                n0.clone(),
                "get",
                "coordination.k8s.io",
                "leases",
                NODE_LEASE_NAMESPACE,
                "node1"
            ))
            .reason(),
            "can only access node lease with the same name as the requesting node"
        );
        assert_eq!(
            d(req(
                n0.clone(),
                "get",
                "coordination.k8s.io",
                "leases",
                "default",
                "node0"
            ))
            .reason(),
            "can only access leases in the \"kube-node-lease\" system namespace"
        );
        assert_eq!(
            d(req(
                n0.clone(),
                "list",
                "coordination.k8s.io",
                "leases",
                NODE_LEASE_NAMESPACE,
                ""
            ))
            .reason(),
            "can only get, create, update, patch, or delete a node lease"
        );
        assert_eq!(
            d(req(
                n0.clone(),
                "get",
                "storage.k8s.io",
                "csinodes",
                "",
                "node1"
            ))
            .reason(),
            "can only access CSINode with the same name as the requesting node"
        );
        assert_eq!(
            d(sub(
                req(n0.clone(), "get", "storage.k8s.io", "csinodes", "", "node0"),
                "status"
            ))
            .reason(),
            "cannot authorize CSINode subresources"
        );
    }

    /// `TestAuthorizerSharedResources`'s node and pod cases with `AuthorizeNodeWithSelectors`.
    #[test]
    fn nodes_read_their_own_node_and_list_their_pods_by_field_selector() {
        let g = graph();
        let rules = node_rules();
        let n0 = node("node0");
        let d = |a: Attributes| decide(&g, &rules, &a);
        assert!(d(req(n0.clone(), "get", "", "nodes", "", "node0")).is_allowed());
        assert_eq!(
            d(req(n0.clone(), "get", "", "nodes", "", "node1")).reason(),
            "node 'node0' cannot read 'node1', only its own Node object"
        );
        assert_eq!(
            d(req(n0.clone(), "list", "", "nodes", "", "")).reason(),
            "node 'node0' cannot read all nodes, only its own Node object"
        );
        assert!(d(req(n0.clone(), "patch", "", "nodes", "", "node1")).is_allowed());
        assert!(d(sub(
            req(n0.clone(), "patch", "", "nodes", "", "node0"),
            "status"
        ))
        .is_allowed());
        assert!(d(req(n0.clone(), "get", "", "pods", "ns0", "pod0-node0")).is_allowed());
        assert!(!d(req(n0.clone(), "get", "", "pods", "ns0", "pod0-node1")).is_allowed());
        let mut list = req(n0.clone(), "list", "", "pods", "", "");
        assert_eq!(
            d(list.clone()).reason(),
            "can only list/watch pods with spec.nodeName field selector"
        );
        list.field_selector = "spec.nodeName=node0".into();
        assert!(d(list.clone()).is_allowed());
        list.field_selector = "spec.nodeName!=node0".into();
        assert!(!d(list.clone()).is_allowed());
        list.field_selector = "metadata.namespace=x,spec.nodeName==node0".into();
        assert!(d(list).is_allowed());
        assert!(d(sub(
            req(n0.clone(), "patch", "", "pods", "ns0", "pod0-node1"),
            "status"
        ))
        .is_allowed());
        assert!(d(sub(
            req(n0.clone(), "create", "", "pods", "ns0", "pod0-node1"),
            "eviction"
        ))
        .is_allowed());
        assert!(!d(req(n0.clone(), "update", "", "pods", "ns0", "pod0-node0")).is_allowed());
    }

    #[test]
    fn other_resources_follow_the_system_node_rules_and_other_users_get_no_opinion() {
        let g = graph();
        let rules = node_rules();
        let n0 = node("node0");
        let d = |a: Attributes| decide(&g, &rules, &a);
        assert!(d(req(n0.clone(), "create", "", "events", "ns0", "")).is_allowed());
        assert!(
            d(req(n0.clone(), "get", "", "services", "", "")).is_allowed()
                || d(req(n0.clone(), "list", "", "services", "", "")).is_allowed()
        );
        assert!(!d(req(n0.clone(), "delete", "", "namespaces", "", "ns0")).is_allowed());
        // Not a node: no group, or no prefix.
        let not_node = UserInfo::new("system:node:node0", &[]);
        assert_eq!(
            d(req(not_node, "get", "", "secrets", "ns0", "s-pod0-node0")),
            Decision::NoOpinion(String::new())
        );
        assert_eq!(
            d(req(
                UserInfo::new("system:node:", &["system:nodes"]),
                "get",
                "",
                "nodes",
                "",
                "x"
            ))
            .reason(),
            "unknown node for user \"system:node:\""
        );
    }

    #[test]
    fn field_selectors_select_a_node_by_exact_term() {
        assert!(selects_node("spec.nodeName=a", "spec.nodeName", "a"));
        assert!(selects_node(" spec.nodeName == a ", "spec.nodeName", "a"));
        assert!(!selects_node("spec.nodeName=ab", "spec.nodeName", "a"));
        assert!(!selects_node("spec.nodeName!=a", "spec.nodeName", "a"));
        assert!(!selects_node("", "spec.nodeName", "a"));
    }
}
