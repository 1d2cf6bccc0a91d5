//! The status counters of a DaemonSet (`updateDaemonSetStatus` and the comparison of
//! `storeDaemonSetStatus` in `daemon_controller.go`).

use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{DaemonSet, DaemonSetStatus};
use k8s_openapi::api::core::v1::Node;

use crate::replicaset::pod_state::{is_pod_available, is_pod_ready};

use super::node_pods::{by_creation_timestamp_and_phase, NodeToDaemonPods};
use super::placement::node_should_run_daemon_pod;
use super::pod_template::{is_pod_updated, template_generation};

/// The counters kube computes from the nodes and the pods on them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatusCounts {
    /// Nodes that should run the daemon.
    pub desired_number_scheduled: i32,
    /// Of those, nodes that run at least one daemon pod.
    pub current_number_scheduled: i32,
    /// Nodes that run a daemon pod but should not.
    pub number_misscheduled: i32,
    /// Nodes whose oldest daemon pod is Ready.
    pub number_ready: i32,
    /// Nodes whose oldest daemon pod is from the current template.
    pub updated_number_scheduled: i32,
    /// Nodes whose oldest daemon pod has been Ready for `minReadySeconds`.
    pub number_available: i32,
    /// `desired_number_scheduled - number_available`.
    pub number_unavailable: i32,
}

/// Counts, over `nodes`, what the DaemonSet's pods (grouped by node) amount to. On each node the
/// oldest pod (scheduled first) stands for the node.
pub fn calculate_status(
    ds: &DaemonSet,
    nodes: &[Arc<Node>],
    by_node: &NodeToDaemonPods,
    hash: &str,
    now: Timestamp,
) -> StatusCounts {
    let min_ready = ds
        .spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0);
    let generation = template_generation(ds).ok().flatten();
    let mut c = StatusCounts::default();
    for node in nodes {
        let name = node.metadata.name.as_deref().unwrap_or("");
        let should_run = node_should_run_daemon_pod(node, ds).should_run;
        let pods = by_node.get(name).filter(|p| !p.is_empty());
        match (should_run, pods) {
            (true, None) => c.desired_number_scheduled += 1,
            (true, Some(pods)) => {
                c.desired_number_scheduled += 1;
                c.current_number_scheduled += 1;
                let Some(pod) = pods
                    .iter()
                    .min_by(|a, b| by_creation_timestamp_and_phase(a, b))
                else {
                    continue;
                };
                if is_pod_ready(pod) {
                    c.number_ready += 1;
                    if is_pod_available(pod, min_ready, now) {
                        c.number_available += 1;
                    }
                }
                if is_pod_updated(pod, hash, generation) {
                    c.updated_number_scheduled += 1;
                }
            }
            (false, Some(_)) => c.number_misscheduled += 1,
            (false, None) => {}
        }
    }
    c.number_unavailable = c.desired_number_scheduled - c.number_available;
    c
}

/// Whether the stored status already says `counts` with an `observedGeneration` at least the
/// object's generation, so nothing needs writing.
pub fn status_up_to_date(ds: &DaemonSet, counts: &StatusCounts) -> bool {
    let s = ds.status.clone().unwrap_or_default();
    s.desired_number_scheduled == counts.desired_number_scheduled
        && s.current_number_scheduled == counts.current_number_scheduled
        && s.number_misscheduled == counts.number_misscheduled
        && s.number_ready == counts.number_ready
        && s.updated_number_scheduled.unwrap_or(0) == counts.updated_number_scheduled
        && s.number_available.unwrap_or(0) == counts.number_available
        && s.number_unavailable.unwrap_or(0) == counts.number_unavailable
        && s.observed_generation.unwrap_or(0) >= ds.metadata.generation.unwrap_or(0)
}

/// `status` with the counters set, and `observedGeneration` raised to `generation` when given.
pub fn apply_counts(
    mut status: DaemonSetStatus,
    counts: &StatusCounts,
    observed_generation: Option<i64>,
) -> DaemonSetStatus {
    if let Some(generation) = observed_generation {
        status.observed_generation = Some(generation);
    }
    status.desired_number_scheduled = counts.desired_number_scheduled;
    status.current_number_scheduled = counts.current_number_scheduled;
    status.number_misscheduled = counts.number_misscheduled;
    status.number_ready = counts.number_ready;
    status.updated_number_scheduled = Some(counts.updated_number_scheduled);
    status.number_available = Some(counts.number_available);
    status.number_unavailable = Some(counts.number_unavailable);
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::fixtures::{
        new_daemon_set, new_node, new_pod, not_ready, taint, ts, with_hash,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    /// Ported from daemon_controller_test.go `TestUpdateNumberMisscheduled`,
    /// `TestNumberReadyStatus` and `TestObservedGeneration`-style status cases.
    #[test]
    fn status_counts_desired_current_misscheduled_ready_updated_available() {
        let mut ds = new_daemon_set("ds");
        ds.spec.as_mut().unwrap().min_ready_seconds = Some(10);
        let mut tainted = new_node("node-3", None);
        tainted.spec.get_or_insert_with(Default::default).taints =
            Some(vec![taint("t", "", "NoSchedule")]);
        let nodes: Vec<_> = [
            new_node("node-0", None),
            new_node("node-1", None),
            new_node("node-2", None),
            tainted,
        ]
        .into_iter()
        .map(Arc::new)
        .collect();
        let mut by_node = NodeToDaemonPods::new();
        // node-0: current, ready long enough.
        by_node.insert(
            "node-0".into(),
            vec![Arc::new(with_hash(new_pod("a", Some("node-0"), &ds), "h"))],
        );
        // node-1: old pod, ready only just now; a younger current one next to it.
        let mut young = with_hash(new_pod("b", Some("node-1"), &ds), "old");
        young.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].last_transition_time =
            Some(Time(ts(95)));
        let mut newer = with_hash(new_pod("c", Some("node-1"), &ds), "h");
        newer.metadata.creation_timestamp = Some(Time(ts(50)));
        by_node.insert("node-1".into(), vec![Arc::new(newer), Arc::new(young)]);
        // node-2: nothing. node-3: a pod that should not be there (NoSchedule: misscheduled).
        by_node.insert(
            "node-3".into(),
            vec![Arc::new(not_ready(new_pod("d", Some("node-3"), &ds)))],
        );
        let c = calculate_status(&ds, &nodes, &by_node, "h", ts(100));
        assert_eq!(
            c,
            StatusCounts {
                desired_number_scheduled: 3,
                current_number_scheduled: 2,
                number_misscheduled: 1,
                number_ready: 2,
                updated_number_scheduled: 1,
                number_available: 1,
                number_unavailable: 2,
            }
        );
    }

    #[test]
    fn a_status_is_rewritten_when_counts_or_the_generation_moved() {
        let mut ds = new_daemon_set("ds");
        let counts = StatusCounts::default();
        ds.status.as_mut().unwrap().observed_generation = Some(1);
        assert!(status_up_to_date(&ds, &counts));
        ds.metadata.generation = Some(2);
        assert!(!status_up_to_date(&ds, &counts));
        ds.status = Some(apply_counts(
            ds.status.clone().unwrap_or_default(),
            &StatusCounts {
                number_ready: 1,
                ..counts
            },
            Some(2),
        ));
        assert!(!status_up_to_date(&ds, &counts));
        assert!(status_up_to_date(
            &ds,
            &StatusCounts {
                number_ready: 1,
                ..counts
            }
        ));
    }
}
