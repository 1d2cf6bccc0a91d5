//! The rolling update: which old pods to delete and on which nodes to surge new ones, within
//! `maxUnavailable` or `maxSurge` (`rollingUpdate`, `findUpdatedPodsOnNode` and
//! `updatedDesiredNodeCounts` in `pkg/controller/daemon/update.go`).

use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};

use crate::deployment::fenceposts::InvalidIntOrPercent;
use crate::replicaset::pod_state::is_pod_available;

use super::node_pods::NodeToDaemonPods;
use super::placement::node_should_run_daemon_pod;
use super::pod_template::{is_pod_updated, template_generation};
use super::strategy::{surge_count, unavailable_count};

/// Why a rolling update cannot be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RollingUpdateError {
    /// `maxUnavailable` is neither an integer nor a percentage.
    #[error("couldn't get unavailable numbers: invalid value for MaxUnavailable: {0}")]
    MaxUnavailable(#[source] InvalidIntOrPercent),
    /// `maxSurge` is neither an integer nor a percentage.
    #[error("couldn't get unavailable numbers: invalid value for MaxSurge: {0}")]
    MaxSurge(#[source] InvalidIntOrPercent),
    /// A node that has daemon pods is not in the cache.
    #[error("couldn't get node for nodeName {0:?}")]
    NodeNotFound(String),
}

/// What a rolling update step does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RollingUpdatePlan {
    /// Old pods to delete (the manage loop then creates their replacements).
    pub delete: Vec<String>,
    /// Nodes to start a new pod on next to the old one (surge).
    pub create_on: Vec<String>,
}

/// The counts a rolling update works with (`updatedDesiredNodeCounts`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeCounts {
    /// Extra pods allowed.
    pub max_surge: i32,
    /// Unavailable pods allowed.
    pub max_unavailable: i32,
    /// Nodes that should run the daemon.
    pub desired_number_scheduled: i32,
}

/// Resolves maxSurge and maxUnavailable against the nodes that should run the daemon, and adds
/// an empty entry to `by_node` for each of those nodes that has no pod (`updatedDesiredNodeCounts`).
/// When both come out as 0, one unavailable pod is allowed.
pub fn updated_desired_node_counts(
    ds: &DaemonSet,
    nodes: &[Arc<Node>],
    by_node: &mut NodeToDaemonPods,
) -> Result<NodeCounts, RollingUpdateError> {
    let mut desired = 0;
    for node in nodes {
        if !node_should_run_daemon_pod(node, ds).should_run {
            continue;
        }
        desired += 1;
        by_node
            .entry(node.metadata.name.clone().unwrap_or_default())
            .or_default();
    }
    let mut max_unavailable =
        unavailable_count(ds, desired).map_err(RollingUpdateError::MaxUnavailable)?;
    let max_surge = surge_count(ds, desired).map_err(RollingUpdateError::MaxSurge)?;
    if desired > 0 && max_unavailable == 0 && max_surge == 0 {
        tracing::info!(
            daemonset = ds.metadata.name.as_deref().unwrap_or(""),
            "DaemonSet is not configured for surge or unavailability, defaulting to accepting unavailability"
        );
        max_unavailable = 1;
    }
    Ok(NodeCounts {
        max_surge,
        max_unavailable,
        desired_number_scheduled: desired,
    })
}

/// The new and the old pod among a node's pods that are not being deleted, or `None` when there
/// is more than one of either: the manage loop prunes those first (`findUpdatedPodsOnNode`).
#[allow(clippy::type_complexity)]
pub fn find_updated_pods_on_node<'a>(
    ds: &DaemonSet,
    pods: &'a [Arc<Pod>],
    hash: &str,
) -> Option<(Option<&'a Arc<Pod>>, Option<&'a Arc<Pod>>)> {
    let generation = template_generation(ds).ok().flatten();
    let (mut new, mut old) = (None, None);
    for pod in pods
        .iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        let slot = if is_pod_updated(pod, hash, generation) {
            &mut new
        } else {
            &mut old
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(pod);
    }
    Some((new, old))
}

/// One step of a rolling update (`rollingUpdate`).
///
/// Without surge, old pods are deleted while no more than `maxUnavailable` pods are unavailable
/// (old pods that are unavailable anyway always go); the manage loop then creates their
/// replacements. With surge, a new pod is started next to an old one on at most `maxSurge`
/// nodes at a time (at once where the old pod is unavailable), and the old pod goes when the new
/// one is available; old pods on nodes that no longer fit the set go only while more pods are
/// available than nodes need them.
pub fn rolling_update(
    ds: &DaemonSet,
    nodes: &[Arc<Node>],
    mut by_node: NodeToDaemonPods,
    hash: &str,
    now: Timestamp,
) -> Result<RollingUpdatePlan, RollingUpdateError> {
    let counts = updated_desired_node_counts(ds, nodes, &mut by_node)?;
    let min_ready = ds
        .spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0);
    let available = |p: &Pod| is_pod_available(p, min_ready, now);
    let name = |p: &Pod| p.metadata.name.clone().unwrap_or_default();

    if counts.max_surge == 0 {
        let mut num_unavailable = 0;
        let mut allowed_replacements = Vec::new();
        let mut candidates = Vec::new();
        for (node, pods) in &by_node {
            let Some((new, old)) = find_updated_pods_on_node(ds, pods, hash) else {
                tracing::debug!(node = %node, "DaemonSet has excess pods on node, skipping to allow the core loop to process");
                num_unavailable += 1;
                continue;
            };
            match (new, old) {
                (None, None) | (Some(_), Some(_)) => {
                    // The manage loop creates or deletes here; count it as unavailable.
                    num_unavailable += 1;
                }
                (Some(new), None) => {
                    if !available(new) {
                        num_unavailable += 1;
                    }
                }
                (None, Some(old)) => {
                    if !available(old) {
                        allowed_replacements.push(name(old));
                        num_unavailable += 1;
                    } else if num_unavailable < counts.max_unavailable {
                        candidates.push(name(old));
                    }
                }
            }
        }
        let remaining = (counts.max_unavailable - num_unavailable)
            .max(0)
            .min(i32::try_from(candidates.len()).unwrap_or(i32::MAX));
        let mut delete = allowed_replacements;
        delete.extend(candidates.into_iter().take(remaining as usize));
        return Ok(RollingUpdatePlan {
            delete,
            create_on: Vec::new(),
        });
    }

    let mut delete = Vec::new();
    let mut should_not_run_to_delete = Vec::new();
    let mut candidate_nodes = Vec::new();
    let mut allowed_nodes = Vec::new();
    let mut num_surge = 0;
    let mut num_available = 0;
    let node_named = |node_name: &str| {
        nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(node_name))
            .ok_or_else(|| RollingUpdateError::NodeNotFound(node_name.to_string()))
    };
    for (node_name, pods) in &by_node {
        let Some((new, old)) = find_updated_pods_on_node(ds, pods, hash) else {
            tracing::debug!(node = %node_name, "DaemonSet has excess pods on node, skipping to allow the core loop to process");
            num_surge += 1;
            continue;
        };
        // Availability of every node, including those the set is leaving.
        match (old, new) {
            (Some(old), _) if available(old) => num_available += 1,
            (None, Some(new)) if available(new) => num_available += 1,
            _ => {}
        }
        match (new, old) {
            (_, None) => {}
            (None, Some(old)) => {
                let node = node_named(node_name)?;
                let should_run = node_should_run_daemon_pod(node, ds).should_run;
                if !available(old) {
                    if !should_run {
                        delete.push(name(old));
                        continue;
                    }
                    allowed_nodes.push(node_name.clone());
                } else {
                    if !should_run {
                        should_not_run_to_delete.push(name(old));
                        continue;
                    }
                    if num_surge >= counts.max_surge {
                        continue;
                    }
                    candidate_nodes.push(node_name.clone());
                }
            }
            (Some(new), Some(old)) => {
                if !available(new) {
                    num_surge += 1;
                    continue;
                }
                delete.push(name(old));
            }
        }
    }
    // With surge the owner expects full availability: when the set moves off a node, its pod
    // goes only once a pod elsewhere is available.
    let deletable = (num_available - counts.desired_number_scheduled)
        .max(0)
        .min(i32::try_from(should_not_run_to_delete.len()).unwrap_or(i32::MAX));
    delete.extend(
        should_not_run_to_delete
            .into_iter()
            .take(deletable as usize),
    );
    let remaining_surge = (counts.max_surge - num_surge)
        .max(0)
        .min(i32::try_from(candidate_nodes.len()).unwrap_or(i32::MAX));
    let mut create_on = allowed_nodes;
    create_on.extend(candidate_nodes.into_iter().take(remaining_surge as usize));
    Ok(RollingUpdatePlan { delete, create_on })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::fixtures::{
        new_daemon_set, new_node, new_pod, not_ready, ts, with_hash, with_rolling_update,
    };
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn nodes(n: usize) -> Vec<Arc<Node>> {
        (0..n)
            .map(|i| Arc::new(new_node(&format!("node-{i}"), None)))
            .collect()
    }

    fn old_pods(ds: &DaemonSet, n: usize) -> NodeToDaemonPods {
        (0..n)
            .map(|i| {
                let node = format!("node-{i}");
                let pod = with_hash(new_pod(&format!("old-{i}"), Some(&node), ds), "old");
                (node, vec![Arc::new(pod)])
            })
            .collect()
    }

    /// Ported from update_test.go `TestDaemonSetUpdatesPods`: with maxUnavailable N, N old pods
    /// go per step.
    #[test]
    fn max_unavailable_old_pods_are_deleted_per_step() {
        let ds = with_rolling_update(
            new_daemon_set("ds"),
            IntOrString::Int(2),
            IntOrString::Int(0),
        );
        let plan = rolling_update(&ds, &nodes(5), old_pods(&ds, 5), "new", ts(100)).unwrap();
        assert_eq!(plan.delete, ["old-0", "old-1"]);
        assert!(plan.create_on.is_empty());

        // Two nodes without pods (being replaced) count as unavailable: nothing more goes.
        let mut by_node = old_pods(&ds, 5);
        by_node.remove("node-0");
        by_node.remove("node-1");
        let plan = rolling_update(&ds, &nodes(5), by_node, "new", ts(100)).unwrap();
        assert!(plan.delete.is_empty());

        // New pods that are not ready yet count too.
        let mut by_node = old_pods(&ds, 5);
        by_node.insert(
            "node-0".into(),
            vec![Arc::new(not_ready(with_hash(
                new_pod("new-0", Some("node-0"), &ds),
                "new",
            )))],
        );
        let plan = rolling_update(&ds, &nodes(5), by_node, "new", ts(100)).unwrap();
        assert_eq!(plan.delete, ["old-1"]);
    }

    /// Ported from update_test.go `TestDaemonSetUpdatesAllOldPodsNotReady`: old pods that are not
    /// available are replaced regardless of maxUnavailable.
    #[test]
    fn unavailable_old_pods_are_all_replaced() {
        let ds = with_rolling_update(
            new_daemon_set("ds"),
            IntOrString::Int(1),
            IntOrString::Int(0),
        );
        let by_node: NodeToDaemonPods = old_pods(&ds, 4)
            .into_iter()
            .map(|(n, pods)| (n, vec![Arc::new(not_ready((*pods[0]).clone()))]))
            .collect();
        let plan = rolling_update(&ds, &nodes(4), by_node, "new", ts(100)).unwrap();
        assert_eq!(plan.delete.len(), 4);
    }

    /// Ported from update_test.go `TestDaemonSetUpdatesNoTemplateChanged`.
    #[test]
    fn nothing_happens_when_every_pod_is_current() {
        let ds = new_daemon_set("ds");
        let by_node: NodeToDaemonPods = (0..3)
            .map(|i| {
                let node = format!("node-{i}");
                (
                    node.clone(),
                    vec![Arc::new(with_hash(
                        new_pod(&format!("p{i}"), Some(&node), &ds),
                        "h",
                    ))],
                )
            })
            .collect();
        let plan = rolling_update(&ds, &nodes(3), by_node, "h", ts(100)).unwrap();
        assert_eq!(plan, RollingUpdatePlan::default());
    }

    /// Ported from update_test.go `TestDaemonSetUpdatesPodsWithMaxSurge`: maxSurge nodes get a new
    /// pod next to the old one; old pods go when their new pod is available.
    #[test]
    fn max_surge_starts_new_pods_next_to_old_ones() {
        let ds = with_rolling_update(
            new_daemon_set("ds"),
            IntOrString::Int(0),
            IntOrString::Int(2),
        );
        let plan = rolling_update(&ds, &nodes(5), old_pods(&ds, 5), "new", ts(100)).unwrap();
        assert!(plan.delete.is_empty());
        assert_eq!(plan.create_on, ["node-0", "node-1"]);

        // node-0's new pod is available: its old pod goes; node-1's is not: it holds a surge slot.
        let mut by_node = old_pods(&ds, 5);
        by_node.get_mut("node-0").unwrap().push(Arc::new(with_hash(
            new_pod("new-0", Some("node-0"), &ds),
            "new",
        )));
        by_node
            .get_mut("node-1")
            .unwrap()
            .push(Arc::new(not_ready(with_hash(
                new_pod("new-1", Some("node-1"), &ds),
                "new",
            ))));
        let plan = rolling_update(&ds, &nodes(5), by_node, "new", ts(100)).unwrap();
        assert_eq!(plan.delete, ["old-0"]);
        assert_eq!(plan.create_on, ["node-2"]);
    }

    /// Ported from update_test.go `TestDaemonSetUpdatesPodsNotMatchTainstWithMaxSurge`: an old
    /// pod that is unavailable is replaced at once with surge.
    #[test]
    fn with_surge_unavailable_old_pods_get_a_new_pod_at_once() {
        let ds = with_rolling_update(
            new_daemon_set("ds"),
            IntOrString::Int(0),
            IntOrString::Int(1),
        );
        let by_node: NodeToDaemonPods = old_pods(&ds, 3)
            .into_iter()
            .map(|(n, pods)| (n, vec![Arc::new(not_ready((*pods[0]).clone()))]))
            .collect();
        let plan = rolling_update(&ds, &nodes(3), by_node, "new", ts(100)).unwrap();
        assert_eq!(plan.create_on, ["node-0", "node-1", "node-2"]);
    }

    /// Ported from update_test.go `TestUpdatedDesiredNodeCounts`: percentages round up, and 0/0
    /// allows one unavailable pod.
    #[test]
    fn desired_node_counts_resolve_percentages_against_nodes_that_should_run() {
        let cases = [
            (IntOrString::Int(0), IntOrString::Int(0), 5, (0, 1)),
            (
                IntOrString::String("50%".into()),
                IntOrString::Int(0),
                5,
                (0, 3),
            ),
            (
                IntOrString::Int(0),
                IntOrString::String("50%".into()),
                5,
                (3, 0),
            ),
            (
                IntOrString::Int(0),
                IntOrString::String("10%".into()),
                5,
                (1, 0),
            ),
            (IntOrString::Int(0), IntOrString::Int(0), 0, (0, 0)),
        ];
        for (unavailable, surge, n, (want_surge, want_unavailable)) in cases {
            let ds = with_rolling_update(new_daemon_set("ds"), unavailable, surge);
            let mut by_node = NodeToDaemonPods::new();
            let counts = updated_desired_node_counts(&ds, &nodes(n), &mut by_node).unwrap();
            assert_eq!(
                (
                    counts.max_surge,
                    counts.max_unavailable,
                    counts.desired_number_scheduled
                ),
                (want_surge, want_unavailable, n as i32)
            );
            assert_eq!(by_node.len(), n);
        }
    }

    #[test]
    fn two_pods_of_one_kind_on_a_node_are_left_to_the_manage_loop() {
        let ds = new_daemon_set("ds");
        let pods = vec![
            Arc::new(with_hash(new_pod("a", Some("n"), &ds), "old")),
            Arc::new(with_hash(new_pod("b", Some("n"), &ds), "old")),
        ];
        assert!(find_updated_pods_on_node(&ds, &pods, "new").is_none());
        let mut deleting = (*pods[1]).clone();
        deleting.metadata.deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts(0)));
        let pods = vec![Arc::clone(&pods[0]), Arc::new(deleting)];
        let (new, old) = find_updated_pods_on_node(&ds, &pods, "new").expect("one old pod");
        assert!(new.is_none());
        assert_eq!(old.and_then(|p| p.metadata.name.as_deref()), Some("a"));
    }

    /// Ported from update_test.go `TestDaemonSetUpdatesWithMinReadySeconds`-style cases: a new pod
    /// that is Ready but not yet for minReadySeconds still counts as unavailable.
    #[test]
    fn min_ready_seconds_hold_the_next_replacement() {
        let mut ds = with_rolling_update(
            new_daemon_set("ds"),
            IntOrString::Int(1),
            IntOrString::Int(0),
        );
        ds.spec.as_mut().unwrap().min_ready_seconds = Some(30);
        let mut by_node = old_pods(&ds, 3);
        // Old pods have been ready since ts(0); the new one on node-0 became ready at ts(90).
        let mut fresh = with_hash(new_pod("new-0", Some("node-0"), &ds), "new");
        fresh.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].last_transition_time =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(ts(90)));
        by_node.insert("node-0".into(), vec![Arc::new(fresh)]);
        let plan = rolling_update(&ds, &nodes(3), by_node.clone(), "new", ts(100)).unwrap();
        assert!(plan.delete.is_empty());
        let plan = rolling_update(&ds, &nodes(3), by_node, "new", ts(121)).unwrap();
        assert_eq!(plan.delete, ["old-1"]);
    }
}
