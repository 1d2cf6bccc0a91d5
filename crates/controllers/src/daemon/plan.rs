//! What one node needs from a DaemonSet: a pod created, failed, succeeded, excess or misscheduled
//! pods deleted (`podsShouldBeOnNode` in `daemon_controller.go`).

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use rkcm_runtime::events::EventType;

use crate::replicaset::pod_state::{is_pod_available, is_pod_ready};

use super::backoff::Backoff;
use super::node_pods::{by_creation_timestamp_and_phase, NodeToDaemonPods};
use super::placement::node_should_run_daemon_pod;
use super::pod_template::CONTROLLER_REVISION_HASH_LABEL;
use super::strategy::allows_surge;

/// Event reason for a daemon pod found Failed (`FailedDaemonPodReason`).
pub const FAILED_DAEMON_POD_REASON: &str = "FailedDaemonPod";
/// Event reason for a daemon pod found Succeeded (`SucceededDaemonPodReason`).
pub const SUCCEEDED_DAEMON_POD_REASON: &str = "SucceededDaemonPod";

/// An event the plan asks to record on the DaemonSet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    /// Normal or Warning.
    pub type_: EventType,
    /// kube's reason.
    pub reason: &'static str,
    /// kube's message.
    pub message: String,
}

/// What one node needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodePlan {
    /// A daemon pod should be created on the node.
    pub needs_pod: bool,
    /// Names of the pods to delete.
    pub delete: Vec<String>,
    /// Events to record on the DaemonSet.
    pub events: Vec<PlannedEvent>,
    /// Sync the DaemonSet again after this long (a failed pod is waiting out its backoff).
    pub requeue_after: Option<Duration>,
}

/// The backoff key of failed pods of `ds` on `node`: `<uid>/<observedGeneration>/<node>`
/// (`failedPodsBackoffKey`).
pub fn failed_pods_backoff_key(ds: &DaemonSet, node: &str) -> String {
    format!(
        "{}/{}/{}",
        ds.metadata.uid.as_deref().unwrap_or(""),
        ds.status
            .as_ref()
            .and_then(|s| s.observed_generation)
            .unwrap_or(0),
        node
    )
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// Decides what `node` needs (`podsShouldBeOnNode`): a pod if it should run one and has none;
/// if its pods may stay, failed ones deleted (no faster than the backoff allows), succeeded ones
/// deleted, and all but the oldest deleted (with surge: the oldest new and, while the new one is
/// not yet available and the old one ready, the oldest old); if they may not stay, all deleted.
pub fn pods_should_be_on_node(
    node: &Node,
    by_node: &NodeToDaemonPods,
    ds: &DaemonSet,
    hash: &str,
    backoff: &Backoff,
    now: Timestamp,
) -> NodePlan {
    let node_name = node.metadata.name.as_deref().unwrap_or("");
    let placement = node_should_run_daemon_pod(node, ds);
    let daemon_pods = by_node.get(node_name);
    let mut plan = NodePlan::default();
    let min_ready = ds
        .spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0);

    if placement.should_run && daemon_pods.is_none() {
        plan.needs_pod = true;
        return plan;
    }
    let Some(daemon_pods) = daemon_pods else {
        return plan;
    };
    if !placement.should_continue_running {
        // The node may not run this daemon: delete everything on it.
        plan.delete = daemon_pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        return plan;
    }

    let mut running: Vec<Arc<Pod>> = Vec::new();
    for pod in daemon_pods {
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let name = pod.metadata.name.clone().unwrap_or_default();
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        match phase(pod) {
            "Failed" => {
                // The controller often fights a kubelet that rejects its pods: back off.
                let key = failed_pods_backoff_key(ds, node_name);
                if backoff.is_in_backoff_since_update(&key, now) {
                    let delay = backoff.get(&key);
                    tracing::debug!(pod = %name, node = node_name, ?delay, "deleting failed pod on node has been limited by backoff");
                    plan.requeue_after = Some(delay);
                    continue;
                }
                backoff.next(&key, now);
                plan.events.push(PlannedEvent {
                    type_: EventType::Warning,
                    reason: FAILED_DAEMON_POD_REASON,
                    message: format!(
                        "Found failed daemon pod {namespace}/{name} on node {node_name}, will try to kill it"
                    ),
                });
                plan.delete.push(name);
            }
            "Succeeded" => {
                plan.events.push(PlannedEvent {
                    type_: EventType::Normal,
                    reason: SUCCEEDED_DAEMON_POD_REASON,
                    message: format!(
                        "Found succeeded daemon pod {namespace}/{name} on node {node_name}, will try to delete it"
                    ),
                });
                plan.delete.push(name);
            }
            _ => running.push(Arc::clone(pod)),
        }
    }
    running.sort_by(|a, b| by_creation_timestamp_and_phase(a, b));

    if !allows_surge(ds) {
        // Without surge, every pod but the oldest goes.
        plan.delete.extend(
            running
                .iter()
                .skip(1)
                .filter_map(|p| p.metadata.name.clone()),
        );
        return plan;
    }
    if running.len() <= 1 {
        if running.is_empty() && placement.should_run {
            // Surging needs at least one pod that is not being deleted on the node.
            plan.needs_pod = true;
        }
        return plan;
    }
    // With surge, two pods may stay only while the oldest new one is not available and the
    // oldest old one is ready; everything else goes.
    let mut oldest_new: Option<&Arc<Pod>> = None;
    let mut oldest_old: Option<&Arc<Pod>> = None;
    for pod in &running {
        let is_new = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL))
            .map(String::as_str)
            == Some(hash);
        let slot = if is_new {
            &mut oldest_new
        } else {
            &mut oldest_old
        };
        if slot.is_none() {
            *slot = Some(pod);
            continue;
        }
        plan.delete.extend(pod.metadata.name.clone());
    }
    if let (Some(new), Some(old)) = (oldest_new, oldest_old) {
        if !is_pod_ready(old) || is_pod_available(new, min_ready, now) {
            plan.delete.extend(old.metadata.name.clone());
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::fixtures::{
        new_daemon_set, new_node, new_pod, not_ready, taint, ts, with_hash, with_rolling_update,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn by_node(node: &str, pods: Vec<Pod>) -> NodeToDaemonPods {
        NodeToDaemonPods::from([(node.to_string(), pods.into_iter().map(Arc::new).collect())])
    }

    #[test]
    fn a_node_without_a_pod_needs_one() {
        let ds = new_daemon_set("ds");
        let plan = pods_should_be_on_node(
            &new_node("n", None),
            &NodeToDaemonPods::new(),
            &ds,
            "h",
            &Backoff::failed_pods(),
            ts(0),
        );
        assert!(plan.needs_pod);
        assert!(plan.delete.is_empty());
    }

    /// Ported from daemon_controller_test.go `TestDealsWithExistingPods`: extra pods on a node go,
    /// the oldest stays.
    #[test]
    fn without_surge_only_the_oldest_pod_stays() {
        let ds = new_daemon_set("ds");
        let mut pods = Vec::new();
        for (i, name) in ["c", "a", "b"].iter().enumerate() {
            let mut p = new_pod(name, Some("n"), &ds);
            p.metadata.creation_timestamp = Some(Time(ts(i as i64)));
            pods.push(p);
        }
        let plan = pods_should_be_on_node(
            &new_node("n", None),
            &by_node("n", pods),
            &ds,
            "h",
            &Backoff::failed_pods(),
            ts(10),
        );
        assert!(!plan.needs_pod);
        assert_eq!(plan.delete, ["a", "b"]);
    }

    /// Ported from daemon_controller_test.go `TestDeleteNoDaemonPod` /
    /// `TestNodeAffinityAndTaint`-style cases: a node the set may no longer run on loses its pods,
    /// except those already being deleted.
    #[test]
    fn misscheduled_pods_are_deleted() {
        let ds = new_daemon_set("ds");
        let mut node = new_node("n", None);
        node.spec.get_or_insert_with(Default::default).taints =
            Some(vec![taint("evict", "", "NoExecute")]);
        let mut deleting = new_pod("deleting", Some("n"), &ds);
        deleting.metadata.deletion_timestamp = Some(Time(ts(0)));
        let plan = pods_should_be_on_node(
            &node,
            &by_node("n", vec![new_pod("p", Some("n"), &ds), deleting]),
            &ds,
            "h",
            &Backoff::failed_pods(),
            ts(0),
        );
        assert_eq!(plan.delete, ["p"]);
        // A NoSchedule taint lets existing pods stay.
        node.spec.as_mut().unwrap().taints = Some(vec![taint("stay", "", "NoSchedule")]);
        let plan = pods_should_be_on_node(
            &node,
            &by_node("n", vec![new_pod("p", Some("n"), &ds)]),
            &ds,
            "h",
            &Backoff::failed_pods(),
            ts(0),
        );
        assert_eq!(plan, NodePlan::default());
    }

    /// Ported from daemon_controller_test.go `TestDaemonKillFailedPods` and
    /// `TestDaemonKillFailedPodsBackoff`.
    #[test]
    fn failed_pods_are_deleted_with_backoff_and_an_event() {
        let ds = new_daemon_set("ds");
        let backoff = Backoff::failed_pods();
        let mut failed = new_pod("failed", Some("n"), &ds);
        failed.status.as_mut().unwrap().phase = Some("Failed".into());
        let pods = by_node("n", vec![failed]);
        let node = new_node("n", None);

        let plan = pods_should_be_on_node(&node, &pods, &ds, "h", &backoff, ts(0));
        assert_eq!(plan.delete, ["failed"]);
        assert_eq!(
            plan.events,
            [PlannedEvent {
                type_: EventType::Warning,
                reason: FAILED_DAEMON_POD_REASON,
                message: "Found failed daemon pod default/failed on node n, will try to kill it"
                    .into(),
            }]
        );
        // Within the backoff: nothing deleted, requeued after the delay.
        let plan = pods_should_be_on_node(&node, &pods, &ds, "h", &backoff, ts(0));
        assert!(plan.delete.is_empty());
        assert_eq!(plan.requeue_after, Some(Duration::from_secs(1)));
        // After it: deleted again, with a doubled delay.
        let plan = pods_should_be_on_node(&node, &pods, &ds, "h", &backoff, ts(1));
        assert_eq!(plan.delete, ["failed"]);
        assert_eq!(
            backoff.get(&failed_pods_backoff_key(&ds, "n")),
            Duration::from_secs(2)
        );
    }

    /// Ported from daemon_controller_test.go `TestDaemonKillSucceededPods`... kube deletes
    /// succeeded daemon pods with a Normal event.
    #[test]
    fn succeeded_pods_are_deleted_with_a_normal_event() {
        let ds = new_daemon_set("ds");
        let mut done = new_pod("done", Some("n"), &ds);
        done.status.as_mut().unwrap().phase = Some("Succeeded".into());
        let plan = pods_should_be_on_node(
            &new_node("n", None),
            &by_node("n", vec![done]),
            &ds,
            "h",
            &Backoff::failed_pods(),
            ts(0),
        );
        assert_eq!(plan.delete, ["done"]);
        assert_eq!(plan.events[0].reason, SUCCEEDED_DAEMON_POD_REASON);
        assert!(!plan.needs_pod);
    }

    /// Ported from update_test.go `TestDaemonSetUpdatesSomeOldPodsNotReady`-style surge cases of
    /// `podsShouldBeOnNode`: with surge, the old pod goes once the new one is available, or at
    /// once when it is not ready itself.
    #[test]
    fn with_surge_old_and_new_pods_share_a_node_until_the_new_one_is_available() {
        let ds = with_rolling_update(
            new_daemon_set("ds"),
            IntOrString::Int(0),
            IntOrString::Int(1),
        );
        let node = new_node("n", None);
        let backoff = Backoff::failed_pods();
        let mut old = with_hash(new_pod("old", Some("n"), &ds), "old");
        old.metadata.creation_timestamp = Some(Time(ts(0)));
        let mut new = not_ready(with_hash(new_pod("new", Some("n"), &ds), "new"));
        new.metadata.creation_timestamp = Some(Time(ts(5)));

        let plan = pods_should_be_on_node(
            &node,
            &by_node("n", vec![old.clone(), new.clone()]),
            &ds,
            "new",
            &backoff,
            ts(10),
        );
        assert!(plan.delete.is_empty());

        let ready_new = with_hash(new_pod("new", Some("n"), &ds), "new");
        let plan = pods_should_be_on_node(
            &node,
            &by_node("n", vec![old.clone(), ready_new]),
            &ds,
            "new",
            &backoff,
            ts(10),
        );
        assert_eq!(plan.delete, ["old"]);

        let plan = pods_should_be_on_node(
            &node,
            &by_node("n", vec![not_ready(old), new]),
            &ds,
            "new",
            &backoff,
            ts(10),
        );
        assert_eq!(plan.delete, ["old"]);
    }
}
