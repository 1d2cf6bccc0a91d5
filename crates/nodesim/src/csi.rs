//! The simulated storage as a CSI driver, `simulated.csi.rkcm.io`: its CSIDriver object
//! (`attachRequired: true`, so that the attach/detach controller attaches its volumes through
//! VolumeAttachments) and the CSINode each simulated kubelet registers, as the kubelet's plugin
//! manager does when a CSI node plugin registers (`nodeinfomanager`).

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::storage::v1::{
    CSIDriver, CSIDriverSpec, CSINode, CSINodeDriver, CSINodeSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use serde_json::json;

use crate::error::api_code;
use crate::node_set::SimNode;

/// The CSI driver of the simulated volumes: `spec.csi.driver` of the volumes the provisioner
/// makes, `spec.attacher` of their VolumeAttachments.
pub const DRIVER_NAME: &str = "simulated.csi.rkcm.io";

/// The file system the simulated volumes report (`spec.csi.fsType`).
pub const FS_TYPE: &str = "ext4";

/// The node annotation in which the kubelet records each CSI driver's node ID
/// (`csi.volume.kubernetes.io/nodeid`).
pub const NODE_ID_ANNOTATION: &str = "csi.volume.kubernetes.io/nodeid";

/// The driver's CSIDriver: attach required, no pod info on mount, persistent volumes only.
pub fn driver_object() -> CSIDriver {
    CSIDriver {
        metadata: ObjectMeta {
            name: Some(DRIVER_NAME.into()),
            ..Default::default()
        },
        spec: CSIDriverSpec {
            attach_required: Some(true),
            pod_info_on_mount: Some(false),
            volume_lifecycle_modes: Some(vec!["Persistent".into()]),
            ..Default::default()
        },
    }
}

/// Creates the CSIDriver unless one of that name exists (an edited one is left alone).
pub async fn ensure_driver(client: &Client) -> Result<(), kube::Error> {
    let api: Api<CSIDriver> = Api::all(client.clone());
    match api.create(&PostParams::default(), &driver_object()).await {
        Ok(_) => Ok(()),
        Err(e) if api_code(&e) == Some(409) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The CSINode of `node`, owned by its Node, listing the driver with the node's name as node ID.
pub fn csinode_object(node: &SimNode) -> CSINode {
    CSINode {
        metadata: ObjectMeta {
            name: Some(node.name.clone()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Node".into(),
                name: node.name.clone(),
                uid: node.uid.clone(),
                ..Default::default()
            }]),
            ..Default::default()
        },
        spec: CSINodeSpec {
            drivers: vec![CSINodeDriver {
                name: DRIVER_NAME.into(),
                node_id: node.name.clone(),
                topology_keys: None,
                allocatable: None,
            }],
        },
    }
}

/// Registers the driver on `node`: its CSINode (replaced when one exists, as after a restart)
/// and the node's `csi.volume.kubernetes.io/nodeid` annotation.
pub async fn register_node(client: &Client, node: &SimNode) -> Result<(), kube::Error> {
    let api: Api<CSINode> = Api::all(client.clone());
    let object = csinode_object(node);
    match api.create(&PostParams::default(), &object).await {
        Ok(_) => {}
        Err(e) if api_code(&e) == Some(409) => {
            let patch = json!({ "spec": object.spec });
            api.patch(&node.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        Err(e) => return Err(e),
    }
    let nodes: Api<Node> = Api::all(client.clone());
    let ids = json!({ DRIVER_NAME: node.name }).to_string();
    let patch = json!({ "metadata": { "annotations": { NODE_ID_ANNOTATION: ids } } });
    nodes
        .patch(&node.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_requires_attach() {
        let d = driver_object();
        assert_eq!(d.metadata.name.as_deref(), Some("simulated.csi.rkcm.io"));
        assert_eq!(d.spec.attach_required, Some(true));
    }

    #[test]
    fn a_csinode_lists_the_driver_and_is_owned_by_its_node() {
        let node = SimNode {
            name: "rkcm-node-1".into(),
            index: 1,
            uid: "u1".into(),
            registered_at: jiff::Timestamp::UNIX_EPOCH,
        };
        let c = csinode_object(&node);
        assert_eq!(c.spec.drivers[0].name, DRIVER_NAME);
        assert_eq!(c.spec.drivers[0].node_id, "rkcm-node-1");
        let owner = &c.metadata.owner_references.unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("Node", "u1"));
    }
}
