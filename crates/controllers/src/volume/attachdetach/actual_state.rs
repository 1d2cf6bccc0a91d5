//! The actual state of the world (`cache/actual_state_of_world.go`): which volumes are attached
//! (or may be: uncertain) to which nodes, whether each node still mounts them, since when a
//! detach is wanted, and which nodes' `status.volumesAttached` must be rewritten.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use jiff::Timestamp;

use super::volume::{AttachableVolume, NodeName, VolumeName};

/// Whether a volume is attached to a node (`AttachState`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttachState {
    /// Attach succeeded.
    Attached,
    /// An attach was started or found (a VolumeAttachment at start) but not confirmed.
    Uncertain,
    /// Not attached.
    Detached,
}

#[derive(Clone, Debug)]
struct NodeAttachedTo {
    /// The node reports the volume in use (`volumesInUse`); a new attachment counts as mounted
    /// until the node says otherwise, as kube's.
    mounted_by_node: bool,
    attached_confirmed: bool,
    /// When a detach was first wanted; `None` when not wanted.
    detach_requested_at: Option<Timestamp>,
}

#[derive(Clone, Debug)]
struct AttachedVolumeEntry {
    volume: AttachableVolume,
    nodes: BTreeMap<NodeName, NodeAttachedTo>,
}

#[derive(Clone, Debug, Default)]
struct NodeToUpdateStatusFor {
    status_update_needed: bool,
    volumes_to_report_as_attached: BTreeSet<VolumeName>,
}

/// A volume attached, or maybe attached, to a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttachedVolume {
    /// The volume.
    pub volume: AttachableVolume,
    /// The node.
    pub node: NodeName,
    /// Whether the node still mounts it.
    pub mounted_by_node: bool,
    /// Attached or uncertain.
    pub state: AttachState,
}

/// The actual state of the world. Not synchronised: the controller keeps it behind its lock.
#[derive(Clone, Debug, Default)]
pub struct ActualStateOfWorld {
    volumes: BTreeMap<VolumeName, AttachedVolumeEntry>,
    nodes_to_update_status_for: BTreeMap<NodeName, NodeToUpdateStatusFor>,
}

impl ActualStateOfWorld {
    /// Records `volume` attached to `node` (`MarkVolumeAsAttached`) and to be reported in the
    /// node's status.
    pub fn mark_attached(&mut self, volume: &AttachableVolume, node: &str) {
        self.add_volume_node(volume, node, true);
    }

    /// Records that `volume` may be attached to `node` (`MarkVolumeAsUncertain`).
    pub fn mark_uncertain(&mut self, volume: &AttachableVolume, node: &str) {
        self.add_volume_node(volume, node, false);
    }

    fn add_volume_node(&mut self, volume: &AttachableVolume, node: &str, attached: bool) {
        let entry =
            self.volumes
                .entry(volume.name.clone())
                .or_insert_with(|| AttachedVolumeEntry {
                    volume: volume.clone(),
                    nodes: BTreeMap::new(),
                });
        match entry.nodes.get_mut(node) {
            Some(existing) => existing.attached_confirmed = attached,
            None => {
                entry.nodes.insert(
                    node.to_string(),
                    NodeAttachedTo {
                        mounted_by_node: true,
                        attached_confirmed: attached,
                        detach_requested_at: None,
                    },
                );
            }
        }
        if attached {
            self.add_volume_to_report_as_attached(&volume.name, node);
        }
    }

    /// Forgets `volume` on `node` (`MarkVolumeAsDetached`/`DeleteVolumeNode`) and stops reporting it.
    pub fn mark_detached(&mut self, volume: &str, node: &str) {
        if let Some(entry) = self.volumes.get_mut(volume) {
            entry.nodes.remove(node);
            if entry.nodes.is_empty() {
                self.volumes.remove(volume);
            }
        }
        self.remove_volume_from_report_as_attached(volume, node);
    }

    /// The state of `volume` on `node` (`GetAttachState`).
    pub fn attach_state(&self, volume: &str, node: &str) -> AttachState {
        match self.volumes.get(volume).and_then(|v| v.nodes.get(node)) {
            None => AttachState::Detached,
            Some(n) if n.attached_confirmed => AttachState::Attached,
            Some(_) => AttachState::Uncertain,
        }
    }

    /// Marks, on `node`, the volumes in `in_use` mounted and the others not
    /// (`SetVolumesMountedByNode`, from the node's `status.volumesInUse`).
    pub fn set_volumes_mounted_by_node(&mut self, node: &str, in_use: &BTreeSet<VolumeName>) {
        for (name, entry) in &mut self.volumes {
            if let Some(n) = entry.nodes.get_mut(node) {
                n.mounted_by_node = in_use.contains(name);
            }
        }
    }

    /// Records when a detach of `volume` from `node` was first wanted and returns how long ago
    /// that was (`SetDetachRequestTime`); `None` when the volume is not on the node.
    pub fn set_detach_request_time(
        &mut self,
        volume: &str,
        node: &str,
        now: Timestamp,
    ) -> Option<Duration> {
        let n = self.volumes.get_mut(volume)?.nodes.get_mut(node)?;
        let since = *n.detach_requested_at.get_or_insert(now);
        Some(now.duration_since(since).unsigned_abs())
    }

    /// Clears the detach request of `volume` on `node`: a pod needs it again.
    pub fn reset_detach_request_time(&mut self, volume: &str, node: &str) {
        if let Some(n) = self
            .volumes
            .get_mut(volume)
            .and_then(|v| v.nodes.get_mut(node))
        {
            n.detach_requested_at = None;
        }
    }

    /// Stops reporting `volume` in `node`'s status (before a detach), and flags the node.
    pub fn remove_volume_from_report_as_attached(&mut self, volume: &str, node: &str) {
        let entry = self
            .nodes_to_update_status_for
            .entry(node.to_string())
            .or_default();
        entry.volumes_to_report_as_attached.remove(volume);
        entry.status_update_needed = true;
    }

    /// Reports `volume` in `node`'s status again (a detach failed), and flags the node.
    pub fn add_volume_to_report_as_attached(&mut self, volume: &str, node: &str) {
        if self.attach_state(volume, node) != AttachState::Attached {
            return;
        }
        let entry = self
            .nodes_to_update_status_for
            .entry(node.to_string())
            .or_default();
        entry
            .volumes_to_report_as_attached
            .insert(volume.to_string());
        entry.status_update_needed = true;
    }

    /// Flags `node`'s status for rewriting (an update failed: `SetNodeStatusUpdateNeeded`).
    pub fn set_node_status_update_needed(&mut self, node: &str) {
        self.nodes_to_update_status_for
            .entry(node.to_string())
            .or_default()
            .status_update_needed = true;
    }

    /// Forgets what to report for a node that is gone (`RemoveNodeFromAttachUpdates`).
    pub fn remove_node_from_attach_updates(&mut self, node: &str) {
        self.nodes_to_update_status_for.remove(node);
    }

    /// Every volume attached or maybe attached, with its node (`GetAttachedVolumes`).
    pub fn attached_volumes(&self) -> Vec<AttachedVolume> {
        self.volumes
            .values()
            .flat_map(|entry| {
                entry.nodes.iter().map(|(node, n)| AttachedVolume {
                    volume: entry.volume.clone(),
                    node: node.clone(),
                    mounted_by_node: n.mounted_by_node,
                    state: if n.attached_confirmed {
                        AttachState::Attached
                    } else {
                        AttachState::Uncertain
                    },
                })
            })
            .collect()
    }

    /// The nodes `volume` is confirmed attached to (`GetNodesForAttachedVolume`).
    pub fn nodes_for_attached_volume(&self, volume: &str) -> Vec<NodeName> {
        self.volumes
            .get(volume)
            .map(|v| {
                v.nodes
                    .iter()
                    .filter(|(_, n)| n.attached_confirmed)
                    .map(|(node, _)| node.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The volumes `node`'s `status.volumesAttached` should list, clearing its flag
    /// (`UpdateNodeStatusForNode` before a detach).
    pub fn take_report_for(&mut self, node: &str) -> Vec<VolumeName> {
        let entry = self
            .nodes_to_update_status_for
            .entry(node.to_string())
            .or_default();
        entry.status_update_needed = false;
        entry
            .volumes_to_report_as_attached
            .iter()
            .cloned()
            .collect()
    }

    /// The volumes confirmed attached to each node (`GetAttachedVolumesPerNode`).
    pub fn attached_volumes_per_node(&self) -> BTreeMap<NodeName, Vec<AttachableVolume>> {
        let mut per_node: BTreeMap<NodeName, Vec<AttachableVolume>> = BTreeMap::new();
        for entry in self.volumes.values() {
            for (node, n) in &entry.nodes {
                if n.attached_confirmed {
                    per_node
                        .entry(node.clone())
                        .or_default()
                        .push(entry.volume.clone());
                }
            }
        }
        per_node
    }

    /// For each flagged node, the volumes its `status.volumesAttached` should list; the flags are
    /// cleared (`GetVolumesToReportAttached`): call [`Self::set_node_status_update_needed`] when
    /// the write fails.
    pub fn take_volumes_to_report_attached(&mut self) -> BTreeMap<NodeName, Vec<VolumeName>> {
        self.nodes_to_update_status_for
            .iter_mut()
            .filter(|(_, n)| n.status_update_needed)
            .map(|(node, n)| {
                n.status_update_needed = false;
                (
                    node.clone(),
                    n.volumes_to_report_as_attached.iter().cloned().collect(),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::volume::fixtures::volume;
    use super::*;

    fn t(s: u64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s as i64).unwrap()
    }

    // actual_state_of_world_test.go Test_AddVolumeNode_Positive_NewVolumeNewNode.
    #[test]
    fn an_attached_volume_is_listed_mounted_and_reported() {
        let mut asw = ActualStateOfWorld::default();
        let v = volume("v1", false);
        asw.mark_attached(&v, "n1");
        assert_eq!(asw.attach_state(&v.name, "n1"), AttachState::Attached);
        let attached = asw.attached_volumes();
        assert_eq!(attached.len(), 1);
        assert!(attached[0].mounted_by_node);
        assert_eq!(asw.nodes_for_attached_volume(&v.name), ["n1"]);
        let report = asw.take_volumes_to_report_attached();
        assert_eq!(report["n1"], std::slice::from_ref(&v.name));
        // Reported once until something changes.
        assert!(asw.take_volumes_to_report_attached().is_empty());
    }

    // Test_AddVolumeNode_Positive_ExistingVolumeNewNode (multi-attach volume on two nodes).
    #[test]
    fn one_volume_on_two_nodes() {
        let mut asw = ActualStateOfWorld::default();
        let v = volume("v1", true);
        asw.mark_attached(&v, "n1");
        asw.mark_attached(&v, "n2");
        assert_eq!(asw.nodes_for_attached_volume(&v.name), ["n1", "n2"]);
        asw.mark_detached(&v.name, "n1");
        assert_eq!(asw.nodes_for_attached_volume(&v.name), ["n2"]);
        assert_eq!(asw.attach_state(&v.name, "n1"), AttachState::Detached);
    }

    // Test_MarkVolumeAsUncertain / GetNodesForAttachedVolume ignores uncertain attachments.
    #[test]
    fn uncertain_attachments_are_listed_but_not_counted_as_attached_nor_reported() {
        let mut asw = ActualStateOfWorld::default();
        let v = volume("v1", false);
        asw.mark_uncertain(&v, "n1");
        assert_eq!(asw.attach_state(&v.name, "n1"), AttachState::Uncertain);
        assert_eq!(asw.attached_volumes()[0].state, AttachState::Uncertain);
        assert!(asw.nodes_for_attached_volume(&v.name).is_empty());
        assert!(asw.take_volumes_to_report_attached().is_empty());
        asw.mark_attached(&v, "n1");
        assert_eq!(asw.nodes_for_attached_volume(&v.name), ["n1"]);
    }

    // Test_DeleteVolumeNode_Positive_VolumeExistsNodeExists: the node's status is rewritten without it.
    #[test]
    fn a_detached_volume_is_gone_and_its_node_status_rewritten() {
        let mut asw = ActualStateOfWorld::default();
        let v = volume("v1", false);
        asw.mark_attached(&v, "n1");
        asw.take_volumes_to_report_attached();
        asw.mark_detached(&v.name, "n1");
        assert!(asw.attached_volumes().is_empty());
        let report = asw.take_volumes_to_report_attached();
        assert!(report["n1"].is_empty());
        // Unknown volumes and nodes are ignored.
        asw.mark_detached("nope", "n9");
    }

    // Test_SetDetachRequestTime_Positive_FirstTime / _SecondTime and ResetDetachRequestTime.
    #[test]
    fn the_detach_request_time_is_set_once_and_reset_by_a_new_user() {
        let mut asw = ActualStateOfWorld::default();
        let v = volume("v1", false);
        assert_eq!(asw.set_detach_request_time(&v.name, "n1", t(0)), None);
        asw.mark_attached(&v, "n1");
        assert_eq!(
            asw.set_detach_request_time(&v.name, "n1", t(10)),
            Some(Duration::ZERO)
        );
        assert_eq!(
            asw.set_detach_request_time(&v.name, "n1", t(70)),
            Some(Duration::from_secs(60))
        );
        asw.reset_detach_request_time(&v.name, "n1");
        assert_eq!(
            asw.set_detach_request_time(&v.name, "n1", t(100)),
            Some(Duration::ZERO)
        );
    }

    // Test_SetVolumesMountedByNode_Positive_Set / _UnsetWithInitialSet.
    #[test]
    fn the_nodes_volumes_in_use_decide_what_is_mounted() {
        let mut asw = ActualStateOfWorld::default();
        let v1 = volume("v1", false);
        let v2 = volume("v2", false);
        asw.mark_attached(&v1, "n1");
        asw.mark_attached(&v2, "n1");
        asw.set_volumes_mounted_by_node("n1", &[v1.name.clone()].into());
        let mounted: Vec<_> = asw
            .attached_volumes()
            .into_iter()
            .map(|a| (a.volume.pv_name, a.mounted_by_node))
            .collect();
        assert_eq!(
            mounted,
            [("v1".to_string(), true), ("v2".to_string(), false)]
        );
        // Another node's report changes nothing here.
        asw.set_volumes_mounted_by_node("n2", &BTreeSet::new());
        assert!(asw.attached_volumes()[0].mounted_by_node);
    }

    // Test_RemoveVolumeFromReportAsAttached_Positive and re-adding after a failed detach.
    #[test]
    fn a_volume_leaves_the_report_before_its_detach_and_returns_if_it_fails() {
        let mut asw = ActualStateOfWorld::default();
        let v = volume("v1", false);
        asw.mark_attached(&v, "n1");
        asw.take_volumes_to_report_attached();
        asw.remove_volume_from_report_as_attached(&v.name, "n1");
        assert!(asw.take_volumes_to_report_attached()["n1"].is_empty());
        // Still attached: only the report changed.
        assert_eq!(asw.attach_state(&v.name, "n1"), AttachState::Attached);
        asw.add_volume_to_report_as_attached(&v.name, "n1");
        assert_eq!(
            asw.take_volumes_to_report_attached()["n1"],
            std::slice::from_ref(&v.name)
        );
        asw.set_node_status_update_needed("n1");
        assert_eq!(asw.take_volumes_to_report_attached()["n1"], [v.name]);
    }
}
