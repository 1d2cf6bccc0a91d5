//! Node objects of the simulated nodes: what they look like, registering them, and refreshing their heartbeat.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints, NodeSpec, NodeStatus,
    NodeSystemInfo,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use serde_json::json;

use crate::config::Config;
use crate::error::{api_code, Error, Result};
use crate::node_set::{internal_ip, SimNode};

/// Annotation marking Node objects created by this simulator.
pub const SIMULATED_ANNOTATION: &str = "rkcm.io/simulated-node";
/// `status.nodeInfo.kubeletVersion` of simulated nodes.
pub const KUBELET_VERSION: &str = "v1.33.0-rkcm";
/// `status.nodeInfo.containerRuntimeVersion` of simulated nodes.
pub const CONTAINER_RUNTIME_VERSION: &str = "rkcm://0.1";

/// Labels a kubelet puts on its node, plus the instance type `rkcm`.
pub fn node_labels(name: &str) -> BTreeMap<String, String> {
    [
        ("kubernetes.io/hostname", name),
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", "amd64"),
        ("node.kubernetes.io/instance-type", "rkcm"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The Ready, MemoryPressure, DiskPressure and PIDPressure conditions of a healthy kubelet.
pub fn node_conditions(heartbeat: Timestamp, transition: Timestamp) -> Vec<NodeCondition> {
    let condition = |type_: &str, status: &str, reason: &str, message: &str| NodeCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_heartbeat_time: Some(Time(heartbeat)),
        last_transition_time: Some(Time(transition)),
    };
    vec![
        condition(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        condition(
            "DiskPressure",
            "False",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure",
        ),
        condition(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
        condition(
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
        ),
    ]
}

/// The full status of simulated node number `index`.
pub fn node_status(
    config: &Config,
    name: &str,
    index: usize,
    heartbeat: Timestamp,
    transition: Timestamp,
) -> NodeStatus {
    let resources: BTreeMap<String, Quantity> = [
        ("cpu", config.cpu.as_str()),
        ("memory", config.memory.as_str()),
        ("pods", config.pods.as_str()),
        ("ephemeral-storage", "100Gi"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
    .collect();
    NodeStatus {
        capacity: Some(resources.clone()),
        allocatable: Some(resources),
        conditions: Some(node_conditions(heartbeat, transition)),
        addresses: Some(vec![
            NodeAddress {
                type_: "InternalIP".into(),
                address: internal_ip(index),
            },
            NodeAddress {
                type_: "Hostname".into(),
                address: name.into(),
            },
        ]),
        daemon_endpoints: Some(NodeDaemonEndpoints {
            kubelet_endpoint: Some(DaemonEndpoint { port: 10250 }),
        }),
        node_info: Some(NodeSystemInfo {
            architecture: "amd64".into(),
            boot_id: format!("rkcm-boot-{name}"),
            container_runtime_version: CONTAINER_RUNTIME_VERSION.into(),
            kernel_version: "rkcm".into(),
            kube_proxy_version: String::new(),
            kubelet_version: KUBELET_VERSION.into(),
            machine_id: format!("rkcm-{name}"),
            operating_system: "linux".into(),
            os_image: "rkcm simulated node".into(),
            system_uuid: format!("rkcm-{name}"),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The Node object a simulated node registers.
pub fn node_object(config: &Config, index: usize, now: Timestamp) -> Node {
    let name = config.node_name(index);
    Node {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some(node_labels(&name)),
            annotations: Some(
                [
                    (SIMULATED_ANNOTATION.to_string(), "true".to_string()),
                    ("node.alpha.kubernetes.io/ttl".to_string(), "0".to_string()),
                    // As a kubelet with --enable-controller-attach-detach (its default).
                    (
                        rkcm_runtime::storage::csi::CONTROLLER_MANAGED_ATTACH_ANNOTATION
                            .to_string(),
                        "true".to_string(),
                    ),
                ]
                .into(),
            ),
            ..Default::default()
        },
        // No pod CIDR: as for a kubelet, the node IPAM controller assigns it.
        spec: Some(NodeSpec {
            provider_id: Some(format!("rkcm://{name}")),
            ..Default::default()
        }),
        status: Some(node_status(config, &name, index, now, now)),
    }
}

/// Registers node number `index`: creates its Node, or, when it already exists (a restart), refreshes
/// its labels and status while leaving its spec (cordon, taints) alone.
pub async fn register(client: &Client, config: &Config, index: usize) -> Result<SimNode> {
    let api: Api<Node> = Api::all(client.clone());
    let now = config.clock.now();
    let node = node_object(config, index, now);
    let name = config.node_name(index);
    let fail = |source| Error::RegisterNode {
        node: name.clone(),
        source,
    };
    let created = match api.create(&PostParams::default(), &node).await {
        Ok(created) => created,
        Err(e) if api_code(&e) == Some(409) => {
            let metadata = json!({ "metadata": { "labels": node.metadata.labels, "annotations": node.metadata.annotations } });
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&metadata))
                .await
                .map_err(fail)?;
            let status = json!({ "status": node.status });
            api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await
                .map_err(fail)?
        }
        Err(e) => return Err(fail(e)),
    };
    // Some servers ignore status on create; write it through the status subresource to be sure.
    let has_conditions = created
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| !c.is_empty());
    let created = if has_conditions {
        created
    } else {
        let status = json!({ "status": node.status });
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
            .await
            .map_err(fail)?
    };
    Ok(SimNode {
        name: name.clone(),
        index,
        uid: created.metadata.uid.unwrap_or_default(),
        registered_at: now,
    })
}

/// Refreshes `lastHeartbeatTime` of the node's conditions. `Ok(false)` when the Node no longer exists.
pub async fn heartbeat(client: &Client, node: &SimNode, now: Timestamp) -> Result<bool> {
    let api: Api<Node> = Api::all(client.clone());
    let patch = json!({ "status": { "conditions": node_conditions(now, node.registered_at) } });
    match api
        .patch_status(&node.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(true),
        Err(e) if api_code(&e) == Some(404) => Ok(false),
        Err(source) => Err(Error::NodeStatus {
            node: node.name.clone(),
            source,
        }),
    }
}

/// Whether `node` is a simulated node named `<prefix><n>` with `n` above `count`: left over from a
/// run with more nodes.
pub fn is_surplus(node: &Node, config: &Config) -> bool {
    let simulated = node
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.get(SIMULATED_ANNOTATION).map(String::as_str) == Some("true"));
    let index = node
        .metadata
        .name
        .as_deref()
        .and_then(|n| n.strip_prefix(config.node_name_prefix.as_str()))
        .and_then(|n| n.parse::<usize>().ok());
    simulated && index.is_some_and(|i| i > config.nodes)
}

/// Marks the conditions of a node nobody simulates any more `Unknown`, as kube's node lifecycle
/// controller does when a kubelet stops reporting; the scheduler then keeps pods off it. Its pods
/// stay until the Node is deleted (then PodGC removes them).
pub async fn mark_unreachable(client: &Client, node: &Node, now: Timestamp) -> Result<()> {
    let name = node.metadata.name.clone().unwrap_or_default();
    let conditions: Vec<NodeCondition> = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            let changed = c.status != "Unknown";
            NodeCondition {
                status: "Unknown".into(),
                reason: Some("NodeStatusUnknown".into()),
                message: Some("Kubelet stopped posting node status.".into()),
                last_transition_time: if changed {
                    Some(Time(now))
                } else {
                    c.last_transition_time
                },
                ..c
            }
        })
        .collect();
    let api: Api<Node> = Api::all(client.clone());
    let patch = json!({ "status": { "conditions": conditions } });
    match api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if api_code(&e) == Some(404) => Ok(()),
        Err(source) => Err(Error::NodeStatus { node: name, source }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surplus_nodes_are_simulated_ones_beyond_the_configured_count() {
        let config = Config {
            nodes: 2,
            ..Config::default()
        };
        let now = Timestamp::UNIX_EPOCH;
        assert!(!is_surplus(&node_object(&config, 2, now), &config));
        assert!(is_surplus(&node_object(&config, 3, now), &config));
        let mut foreign = node_object(&config, 3, now);
        foreign.metadata.annotations = None;
        assert!(!is_surplus(&foreign, &config));
    }

    #[test]
    fn a_simulated_node_looks_like_a_ready_kubelet_node() {
        let config = Config::default();
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let node = node_object(&config, 2, now);
        assert_eq!(node.metadata.name.as_deref(), Some("rkcm-node-2"));
        let labels = node.metadata.labels.unwrap();
        assert_eq!(labels["kubernetes.io/hostname"], "rkcm-node-2");
        assert_eq!(labels["node.kubernetes.io/instance-type"], "rkcm");
        let status = node.status.unwrap();
        assert_eq!(status.allocatable.unwrap()["pods"], Quantity("110".into()));
        let ready = status
            .conditions
            .unwrap()
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .unwrap();
        assert_eq!(ready.status, "True");
        assert_eq!(status.addresses.unwrap()[0].address, "10.0.0.2");
        assert_eq!(status.node_info.unwrap().kubelet_version, KUBELET_VERSION);
    }
}
