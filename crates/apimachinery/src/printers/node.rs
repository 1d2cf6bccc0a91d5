//! The Node table: `printNode` from `pkg/printers/internalversion/printers.go`.

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::Value;

use super::{age, array_at, col, name, str_at, wide, Column, Description, AGE, NAME};

const NODE_INFO: &str = "io.k8s.api.core.v1.NodeSystemInfo";
const NODE_STATUS: &str = "io.k8s.api.core.v1.NodeStatus";

/// Node columns.
pub(super) const COLUMNS: &[Column] = &[
    NAME,
    col(
        "Status",
        "string",
        Description::Text("The status of the node"),
    ),
    col(
        "Roles",
        "string",
        Description::Text("The roles of the node"),
    ),
    AGE,
    col(
        "Version",
        "string",
        Description::Field(NODE_INFO, "kubeletVersion"),
    ),
    wide(
        "Internal-IP",
        "string",
        Description::Field(NODE_STATUS, "addresses"),
    ),
    wide(
        "External-IP",
        "string",
        Description::Field(NODE_STATUS, "addresses"),
    ),
    wide(
        "OS-Image",
        "string",
        Description::Field(NODE_INFO, "osImage"),
    ),
    wide(
        "Kernel-Version",
        "string",
        Description::Field(NODE_INFO, "kernelVersion"),
    ),
    wide(
        "Container-Runtime",
        "string",
        Description::Field(NODE_INFO, "containerRuntimeVersion"),
    ),
];

const LABEL_NODE_ROLE_PREFIX: &str = "node-role.kubernetes.io/";
const NODE_LABEL_ROLE: &str = "kubernetes.io/role";

/// `findNodeRoles`: roles from `node-role.kubernetes.io/<role>` and `kubernetes.io/role` labels.
fn roles(node: &Value) -> String {
    let mut roles = BTreeSet::new();
    if let Some(Value::Object(labels)) = node.pointer("/metadata/labels") {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix(LABEL_NODE_ROLE_PREFIX) {
                if !role.is_empty() {
                    roles.insert(role.to_string());
                }
            } else if k == NODE_LABEL_ROLE {
                if let Some(v) = v.as_str().filter(|v| !v.is_empty()) {
                    roles.insert(v.to_string());
                }
            }
        }
    }
    if roles.is_empty() {
        return "<none>".to_string();
    }
    roles.into_iter().collect::<Vec<_>>().join(",")
}

fn address(node: &Value, type_: &str) -> String {
    array_at(node, "/status/addresses")
        .iter()
        .find(|a| str_at(a, "/type") == type_)
        .map(|a| str_at(a, "/address").to_string())
        .unwrap_or_else(|| "<none>".to_string())
}

fn unknown_if_empty(s: &str) -> String {
    if s.is_empty() {
        "<unknown>".to_string()
    } else {
        s.to_string()
    }
}

/// The cells of one node's row.
pub(super) fn cells(node: &Value, now: Timestamp) -> Vec<Value> {
    let mut status = Vec::new();
    // Like kube, the last condition of a type wins.
    if let Some(ready) = array_at(node, "/status/conditions")
        .iter()
        .rev()
        .find(|c| str_at(c, "/type") == "Ready")
    {
        status.push(if str_at(ready, "/status") == "True" {
            "Ready"
        } else {
            "NotReady"
        });
    }
    if status.is_empty() {
        status.push("Unknown");
    }
    if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled");
    }
    vec![
        name(node),
        status.join(",").into(),
        roles(node).into(),
        age(node, now),
        str_at(node, "/status/nodeInfo/kubeletVersion").into(),
        address(node, "InternalIP").into(),
        address(node, "ExternalIP").into(),
        unknown_if_empty(str_at(node, "/status/nodeInfo/osImage")).into(),
        unknown_if_empty(str_at(node, "/status/nodeInfo/kernelVersion")).into(),
        unknown_if_empty(str_at(node, "/status/nodeInfo/containerRuntimeVersion")).into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ready_cordoned_control_plane_node() {
        let node = json!({"metadata":{"name":"n1","labels":{
                "node-role.kubernetes.io/control-plane":"","kubernetes.io/role":"master"}},
            "spec":{"unschedulable":true},
            "status":{"conditions":[{"type":"Ready","status":"True"}],
                "addresses":[{"type":"InternalIP","address":"10.0.0.5"}],
                "nodeInfo":{"kubeletVersion":"v1.33.0","osImage":"Linux"}}});
        let c = cells(&node, "2026-01-01T00:00:00Z".parse().unwrap());
        assert_eq!(c[1], "Ready,SchedulingDisabled");
        assert_eq!(c[2], "control-plane,master");
        assert_eq!(c[4], "v1.33.0");
        assert_eq!(c[5], "10.0.0.5");
        assert_eq!(c[6], "<none>");
        assert_eq!(c[7], "Linux");
        assert_eq!(c[8], "<unknown>");
    }

    #[test]
    fn node_without_ready_condition_is_unknown_and_not_ready_when_false() {
        let now = "2026-01-01T00:00:00Z".parse().unwrap();
        let node = json!({"metadata":{"name":"n"}});
        assert_eq!(cells(&node, now)[1], "Unknown");
        assert_eq!(cells(&node, now)[2], "<none>");
        let node = json!({"metadata":{"name":"n"},"status":{"conditions":[{"type":"Ready","status":"Unknown"}]}});
        assert_eq!(cells(&node, now)[1], "NotReady");
    }
}
