//! The desired state of the world (`cache/desired_state_of_world.go`): the nodes whose attach and
//! detach the controller manages, and per node the volumes its scheduled pods need, with the pods
//! that need them.

use std::collections::BTreeMap;

use super::volume::{AttachableVolume, NodeName, VolumeName};

/// A pod that needs a volume: kube keys pods by UID (`UniquePodName`) and names them in events.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct PodRef {
    /// The pod's UID.
    pub uid: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// Errors of the desired state's updates, with kube's messages.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DswError {
    /// A pod was added for a node the controller does not manage.
    #[error("no node with the name {0:?} exists in the list of managed nodes")]
    NodeNotManaged(NodeName),
    /// A node that still needs volumes cannot be forgotten.
    #[error("failed to delete node {node:?} from list of nodes managed by attach/detach controller--the node still contains {volumes} volumes in its list of volumes to attach")]
    NodeHasVolumes {
        /// The node.
        node: NodeName,
        /// How many volumes it still needs.
        volumes: usize,
    },
}

/// A volume a node needs.
#[derive(Clone, Debug)]
struct VolumeToAttachEntry {
    volume: AttachableVolume,
    pods: BTreeMap<String, PodRef>,
    multi_attach_error_reported: bool,
}

#[derive(Clone, Debug, Default)]
struct NodeEntry {
    keep_terminated_pod_volumes: bool,
    volumes: BTreeMap<VolumeName, VolumeToAttachEntry>,
}

/// A volume that should be attached to a node, with the pods scheduled there that need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeToAttach {
    /// The volume.
    pub volume: AttachableVolume,
    /// The node.
    pub node: NodeName,
    /// The pods on the node that use it.
    pub scheduled_pods: Vec<PodRef>,
    /// Whether its Multi-Attach error was reported already (only once per volume and node).
    pub multi_attach_error_reported: bool,
}

/// The desired state of the world. Not synchronised: the controller keeps it behind its lock.
#[derive(Clone, Debug, Default)]
pub struct DesiredStateOfWorld {
    nodes: BTreeMap<NodeName, NodeEntry>,
}

impl DesiredStateOfWorld {
    /// Manages `node` from now on; an existing node keeps its volumes (`AddNode`).
    pub fn add_node(&mut self, node: &str, keep_terminated_pod_volumes: bool) {
        self.nodes
            .entry(node.to_string())
            .or_default()
            .keep_terminated_pod_volumes = keep_terminated_pod_volumes;
    }

    /// Stops managing `node`; refused while it still needs volumes (`DeleteNode`).
    pub fn delete_node(&mut self, node: &str) -> Result<(), DswError> {
        match self.nodes.get(node) {
            None => Ok(()),
            Some(entry) if !entry.volumes.is_empty() => Err(DswError::NodeHasVolumes {
                node: node.to_string(),
                volumes: entry.volumes.len(),
            }),
            Some(_) => {
                self.nodes.remove(node);
                Ok(())
            }
        }
    }

    /// Whether the controller manages `node`.
    pub fn node_exists(&self, node: &str) -> bool {
        self.nodes.contains_key(node)
    }

    /// Whether `node` asked to keep terminated pods' volumes attached.
    pub fn keep_terminated_pod_volumes(&self, node: &str) -> bool {
        self.nodes
            .get(node)
            .is_some_and(|n| n.keep_terminated_pod_volumes)
    }

    /// Records that `pod` on `node` needs `volume` (`AddPod`); returns the volume's name.
    pub fn add_pod(
        &mut self,
        pod: &PodRef,
        volume: &AttachableVolume,
        node: &str,
    ) -> Result<VolumeName, DswError> {
        let entry = self
            .nodes
            .get_mut(node)
            .ok_or_else(|| DswError::NodeNotManaged(node.to_string()))?;
        let v = entry
            .volumes
            .entry(volume.name.clone())
            .or_insert_with(|| VolumeToAttachEntry {
                volume: volume.clone(),
                pods: BTreeMap::new(),
                multi_attach_error_reported: false,
            });
        v.pods.insert(pod.uid.clone(), pod.clone());
        Ok(volume.name.clone())
    }

    /// Forgets that pod `pod_uid` on `node` needs `volume`; the volume goes when no pod needs it
    /// (`DeletePod`). Unknown nodes, volumes and pods are ignored.
    pub fn delete_pod(&mut self, pod_uid: &str, volume: &str, node: &str) {
        let Some(entry) = self.nodes.get_mut(node) else {
            return;
        };
        let Some(v) = entry.volumes.get_mut(volume) else {
            return;
        };
        v.pods.remove(pod_uid);
        if v.pods.is_empty() {
            entry.volumes.remove(volume);
        }
    }

    /// Forgets pod `pod_uid` on `node` for every volume (a deleted or terminated pod).
    pub fn delete_pod_from_node(&mut self, pod_uid: &str, node: &str) {
        let Some(entry) = self.nodes.get_mut(node) else {
            return;
        };
        entry.volumes.retain(|_, v| {
            v.pods.remove(pod_uid);
            !v.pods.is_empty()
        });
    }

    /// Whether `node` needs `volume` (`VolumeExists`).
    pub fn volume_exists(&self, volume: &str, node: &str) -> bool {
        self.nodes
            .get(node)
            .is_some_and(|n| n.volumes.contains_key(volume))
    }

    /// Every (volume, node) that should be attached (`GetVolumesToAttach`), in name order.
    pub fn volumes_to_attach(&self) -> Vec<VolumeToAttach> {
        self.nodes
            .iter()
            .flat_map(|(node, entry)| {
                entry.volumes.values().map(move |v| VolumeToAttach {
                    volume: v.volume.clone(),
                    node: node.clone(),
                    scheduled_pods: v.pods.values().cloned().collect(),
                    multi_attach_error_reported: v.multi_attach_error_reported,
                })
            })
            .collect()
    }

    /// The pods on `nodes` that need `volume` (`GetVolumePodsOnNodes`).
    pub fn volume_pods_on_nodes(&self, nodes: &[NodeName], volume: &str) -> Vec<PodRef> {
        nodes
            .iter()
            .filter_map(|n| self.nodes.get(n)?.volumes.get(volume))
            .flat_map(|v| v.pods.values().cloned())
            .collect()
    }

    /// Marks the Multi-Attach error of `volume` on `node` reported (`SetMultiAttachError`).
    pub fn set_multi_attach_error(&mut self, volume: &str, node: &str) {
        if let Some(v) = self
            .nodes
            .get_mut(node)
            .and_then(|n| n.volumes.get_mut(volume))
        {
            v.multi_attach_error_reported = true;
        }
    }

    /// Every (pod UID, volume, node) recorded, for the populator's check for deleted pods.
    pub fn pods_to_volumes(&self) -> Vec<(PodRef, VolumeName, NodeName)> {
        self.nodes
            .iter()
            .flat_map(|(node, entry)| {
                entry.volumes.iter().flat_map(move |(name, v)| {
                    v.pods
                        .values()
                        .map(move |p| (p.clone(), name.clone(), node.clone()))
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::volume::fixtures::volume;
    use super::*;

    pub(crate) fn pod(uid: &str) -> PodRef {
        PodRef {
            uid: uid.into(),
            namespace: "ns".into(),
            name: format!("pod-{uid}"),
        }
    }

    // desired_state_of_world_test.go Test_AddNode_Positive_NewNode / _ExistingNode.
    #[test]
    fn adding_a_node_twice_keeps_it_and_its_volumes() {
        let mut dsw = DesiredStateOfWorld::default();
        dsw.add_node("n1", false);
        assert!(dsw.node_exists("n1"));
        dsw.add_pod(&pod("p1"), &volume("v1", false), "n1").unwrap();
        dsw.add_node("n1", true);
        assert!(dsw.node_exists("n1"));
        assert!(dsw.keep_terminated_pod_volumes("n1"));
        assert_eq!(dsw.volumes_to_attach().len(), 1);
    }

    // Test_AddPod_Positive_NewPodNodeExistsVolumeDoesntExist and _NewPodNodeExistsVolumeExists.
    #[test]
    fn two_pods_on_one_node_share_one_volume_to_attach() {
        let mut dsw = DesiredStateOfWorld::default();
        dsw.add_node("n1", false);
        let v = volume("v1", false);
        let name = dsw.add_pod(&pod("p1"), &v, "n1").unwrap();
        assert_eq!(name, v.name);
        assert!(dsw.volume_exists(&v.name, "n1"));
        dsw.add_pod(&pod("p2"), &v, "n1").unwrap();
        let to_attach = dsw.volumes_to_attach();
        assert_eq!(to_attach.len(), 1);
        assert_eq!(to_attach[0].scheduled_pods, [pod("p1"), pod("p2")]);
        // Test_AddPod_Positive_PodExistsNodeExistsVolumeExists: adding again changes nothing.
        dsw.add_pod(&pod("p1"), &v, "n1").unwrap();
        assert_eq!(dsw.volumes_to_attach()[0].scheduled_pods.len(), 2);
    }

    // Test_AddPod_Negative_NewPodNodeDoesntExistVolumeDoesntExist.
    #[test]
    fn a_pod_on_an_unmanaged_node_is_refused() {
        let mut dsw = DesiredStateOfWorld::default();
        let err = dsw
            .add_pod(&pod("p1"), &volume("v1", false), "n1")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "no node with the name \"n1\" exists in the list of managed nodes"
        );
        assert!(!dsw.volume_exists(&volume("v1", false).name, "n1"));
    }

    // Test_DeleteNode_Positive_NodeExists / _NodeDoesntExist / _Negative_NodeExistsHasChildVolumes.
    #[test]
    fn a_node_is_deleted_only_without_volumes() {
        let mut dsw = DesiredStateOfWorld::default();
        assert!(dsw.delete_node("n1").is_ok());
        dsw.add_node("n1", false);
        let v = volume("v1", false);
        dsw.add_pod(&pod("p1"), &v, "n1").unwrap();
        let err = dsw.delete_node("n1").unwrap_err();
        assert!(err
            .to_string()
            .contains("the node still contains 1 volumes"));
        assert!(dsw.node_exists("n1"));
        dsw.delete_pod("p1", &v.name, "n1");
        dsw.delete_node("n1").unwrap();
        assert!(!dsw.node_exists("n1"));
    }

    // Test_DeletePod_Positive_2PodsExistNodeExistsVolumesExist and _PodDoesNotExist.
    #[test]
    fn the_volume_goes_with_its_last_pod() {
        let mut dsw = DesiredStateOfWorld::default();
        dsw.add_node("n1", false);
        let v = volume("v1", false);
        dsw.add_pod(&pod("p1"), &v, "n1").unwrap();
        dsw.add_pod(&pod("p2"), &v, "n1").unwrap();
        dsw.delete_pod("p1", &v.name, "n1");
        assert!(dsw.volume_exists(&v.name, "n1"));
        dsw.delete_pod("unknown", &v.name, "n1");
        dsw.delete_pod("p2", &v.name, "unknown-node");
        assert!(dsw.volume_exists(&v.name, "n1"));
        dsw.delete_pod("p2", &v.name, "n1");
        assert!(!dsw.volume_exists(&v.name, "n1"));
        assert!(dsw.volumes_to_attach().is_empty());
    }

    // Test_GetVolumesToAttach_Positive_TwoNodesThreeVolumes.
    #[test]
    fn volumes_to_attach_lists_every_node_and_volume() {
        let mut dsw = DesiredStateOfWorld::default();
        dsw.add_node("n1", false);
        dsw.add_node("n2", false);
        dsw.add_node("n3", false);
        dsw.add_pod(&pod("p1"), &volume("v1", false), "n1").unwrap();
        dsw.add_pod(&pod("p2"), &volume("v2", false), "n2").unwrap();
        dsw.add_pod(&pod("p3"), &volume("v3", true), "n2").unwrap();
        let got: Vec<_> = dsw
            .volumes_to_attach()
            .into_iter()
            .map(|v| (v.node, v.volume.pv_name))
            .collect();
        assert_eq!(
            got,
            [
                ("n1".to_string(), "v1".to_string()),
                ("n2".to_string(), "v2".to_string()),
                ("n2".to_string(), "v3".to_string())
            ]
        );
    }

    // Test_GetVolumePodsOnNodes and the multi-attach flag.
    #[test]
    fn pods_of_a_volume_on_other_nodes_and_the_reported_flag() {
        let mut dsw = DesiredStateOfWorld::default();
        dsw.add_node("n1", false);
        dsw.add_node("n2", false);
        let v = volume("v1", false);
        dsw.add_pod(&pod("p1"), &v, "n1").unwrap();
        dsw.add_pod(&pod("p2"), &v, "n2").unwrap();
        assert_eq!(
            dsw.volume_pods_on_nodes(&["n1".into()], &v.name),
            [pod("p1")]
        );
        assert!(dsw.volume_pods_on_nodes(&["n3".into()], &v.name).is_empty());
        dsw.set_multi_attach_error(&v.name, "n2");
        let flags: Vec<_> = dsw
            .volumes_to_attach()
            .into_iter()
            .map(|v| v.multi_attach_error_reported)
            .collect();
        assert_eq!(flags, [false, true]);
    }
}
