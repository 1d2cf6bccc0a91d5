//! A DaemonSet's pods grouped by the node they are for, and the order kube ranks pods on one
//! node in (`getNodesToDaemonPods`, `podByCreationTimestampAndPhase`,
//! `getUnscheduledPodsWithoutNode` in `daemon_controller.go`).

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};

use super::pod_template::target_node_name;

/// Daemon pods by the name of the node they run on or are meant for.
pub type NodeToDaemonPods = BTreeMap<String, Vec<Arc<Pod>>>;

/// Whether the pod finished for good (`IsPodTerminal`: Failed or Succeeded).
pub fn is_pod_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Failed" | "Succeeded")
    )
}

/// Groups `pods` by target node. Terminal pods already being deleted are left out unless
/// `include_deleted_terminal` (the kubelet or PodGC removes them; nothing is left to do); pods
/// whose node cannot be told are skipped.
pub fn group_by_node(pods: &[Arc<Pod>], include_deleted_terminal: bool) -> NodeToDaemonPods {
    let mut by_node = NodeToDaemonPods::new();
    for pod in pods {
        if !include_deleted_terminal
            && is_pod_terminal(pod)
            && pod.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        match target_node_name(pod) {
            Ok(node) => by_node.entry(node).or_default().push(Arc::clone(pod)),
            Err(e) => {
                tracing::debug!(error = %e, "failed to get target node name of pod in DaemonSet");
            }
        }
    }
    by_node
}

fn is_scheduled(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
}

/// kube's `podByCreationTimestampAndPhase`: scheduled pods first, then the oldest, then by name.
pub fn by_creation_timestamp_and_phase(a: &Pod, b: &Pod) -> Ordering {
    match (is_scheduled(a), is_scheduled(b)) {
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        _ => {}
    }
    let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
    match created(a).cmp(&created(b)) {
        Ordering::Equal => a.metadata.name.cmp(&b.metadata.name),
        other => other,
    }
}

/// Names of unscheduled pods meant for nodes that do not exist (`getUnscheduledPodsWithoutNode`):
/// they can never be scheduled, and PodGC does not collect them, so the controller deletes them.
pub fn unscheduled_pods_without_node(
    nodes: &[Arc<Node>],
    by_node: &NodeToDaemonPods,
) -> Vec<String> {
    let existing: HashSet<&str> = nodes
        .iter()
        .filter_map(|n| n.metadata.name.as_deref())
        .collect();
    by_node
        .iter()
        .filter(|(node, _)| !existing.contains(node.as_str()))
        .flat_map(|(_, pods)| pods.iter())
        .filter(|p| !is_scheduled(p))
        .filter_map(|p| p.metadata.name.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::fixtures::{new_daemon_set, new_node, new_pod, ts};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    #[test]
    fn pods_are_grouped_by_bound_node_or_node_affinity() {
        let ds = new_daemon_set("ds");
        let bound = new_pod("a", Some("node-1"), &ds);
        let pending = new_pod("b", None, &ds);
        let mut no_target = new_pod("c", None, &ds);
        no_target.spec.as_mut().unwrap().affinity = None;
        let mut deleted_failed = new_pod("d", Some("node-2"), &ds);
        deleted_failed.status.as_mut().unwrap().phase = Some("Failed".into());
        deleted_failed.metadata.deletion_timestamp = Some(Time(ts(0)));
        let pods: Vec<_> = [bound, pending, no_target, deleted_failed]
            .into_iter()
            .map(Arc::new)
            .collect();
        let grouped = group_by_node(&pods, false);
        let names = |node: &str| -> Vec<String> {
            grouped
                .get(node)
                .map(|ps| ps.iter().filter_map(|p| p.metadata.name.clone()).collect())
                .unwrap_or_default()
        };
        // new_pod targets its node by affinity, so the pending pod "b" is for node "".
        assert_eq!(names("node-1"), ["a"]);
        assert!(!grouped.contains_key("node-2"));
        let with_terminal = group_by_node(&pods, true);
        assert_eq!(with_terminal.get("node-2").map(Vec::len), Some(1));
    }

    #[test]
    fn scheduled_and_older_pods_rank_first() {
        let ds = new_daemon_set("ds");
        let mut old_pending = new_pod("a", None, &ds);
        old_pending.metadata.creation_timestamp = Some(Time(ts(0)));
        let mut young_bound = new_pod("b", Some("n"), &ds);
        young_bound.metadata.creation_timestamp = Some(Time(ts(10)));
        let mut old_bound = new_pod("c", Some("n"), &ds);
        old_bound.metadata.creation_timestamp = Some(Time(ts(5)));
        let mut same_time = new_pod("d", Some("n"), &ds);
        same_time.metadata.creation_timestamp = Some(Time(ts(5)));
        let mut pods = [old_pending, young_bound, same_time, old_bound];
        pods.sort_by(by_creation_timestamp_and_phase);
        let names: Vec<_> = pods
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        assert_eq!(names, ["c", "d", "b", "a"]);
    }

    /// Ported from daemon_controller_test.go `TestDeleteUnscheduledPodForNotExistingNode`.
    #[test]
    fn unscheduled_pods_for_missing_nodes_are_deleted() {
        let ds = new_daemon_set("ds");
        let nodes = vec![Arc::new(new_node("node-0", None))];
        let mut by_node = NodeToDaemonPods::new();
        let mut for_missing = new_pod("pending", None, &ds);
        for_missing.spec.as_mut().unwrap().affinity = Some(
            crate::daemon::pod_template::replace_node_name_affinity(None, "node-gone"),
        );
        by_node.insert("node-gone".into(), vec![Arc::new(for_missing)]);
        by_node.insert(
            "node-gone-bound".into(),
            vec![Arc::new(new_pod("bound", Some("node-gone-bound"), &ds))],
        );
        by_node.insert(
            "node-0".into(),
            vec![Arc::new(new_pod("pending0", None, &ds))],
        );
        assert_eq!(unscheduled_pods_without_node(&nodes, &by_node), ["pending"]);
    }
}
