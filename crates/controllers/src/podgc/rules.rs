//! Pure PodGC decisions: which pods each of kube's four rules force-deletes, the orphan
//! quarantine, and the status a pod gets before it goes (`pkg/controller/podgc/gc_controller.go`).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::replicaset::pod_state::{
    node_name, phase, PHASE_FAILED, PHASE_PENDING, PHASE_RUNNING, PHASE_SUCCEEDED, PHASE_UNKNOWN,
};

/// Taint an operator puts on a node that is down for good (`v1.TaintNodeOutOfService`).
pub const TAINT_NODE_OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

/// Why PodGC deletes a pod; the `reason` label of its metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// More terminated pods than `--terminated-pod-gc-threshold`.
    Terminated,
    /// Terminating on a not-ready node tainted out-of-service.
    TerminatingOutOfService,
    /// Bound to a node that no longer exists.
    Orphaned,
    /// Terminating and never scheduled.
    TerminatingUnscheduled,
}

impl Reason {
    /// The metric label value kube uses.
    pub fn as_str(&self) -> &'static str {
        match self {
            Reason::Terminated => "terminated",
            Reason::TerminatingOutOfService => "out-of-service",
            Reason::Orphaned => "orphaned",
            Reason::TerminatingUnscheduled => "unscheduled",
        }
    }
}

/// True unless the pod is Pending, Running or Unknown (`isPodTerminated`; an empty phase counts as
/// terminated, as in kube).
pub fn is_pod_terminated(pod: &Pod) -> bool {
    !matches!(phase(pod), PHASE_PENDING | PHASE_RUNNING | PHASE_UNKNOWN)
}

/// True once the pod has a deletion timestamp (`isPodTerminating`).
pub fn is_pod_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// True if the kubelet evicted the pod: phase Failed, reason `Evicted` (`eviction.PodIsEvicted`).
pub fn is_pod_evicted(pod: &Pod) -> bool {
    let reason = pod.status.as_ref().and_then(|s| s.reason.as_deref());
    phase(pod) == PHASE_FAILED && reason == Some("Evicted")
}

/// True if the node's `Ready` condition is `True` (`nodeutil.IsNodeReady`).
pub fn is_node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True")
}

/// True if the node carries a taint with key `key` (`taints.TaintKeyExists`).
pub fn has_taint(node: &Node, key: &str) -> bool {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_ref())
        .is_some_and(|ts| ts.iter().any(|t| t.key == key))
}

/// Sorts evicted pods first, then oldest first, then by name (`byEvictionAndCreationTimestamp`).
pub fn sort_by_eviction_and_creation(pods: &mut [Arc<Pod>]) {
    pods.sort_by(|a, b| {
        let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
        is_pod_evicted(b)
            .cmp(&is_pod_evicted(a))
            .then_with(|| created(a).cmp(&created(b)))
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
}

/// The terminated pods above `threshold`, evicted and oldest first (`gcTerminated`).
/// A threshold of 0 or less disables the rule.
pub fn terminated_to_delete(pods: &[Arc<Pod>], threshold: i64) -> Vec<Arc<Pod>> {
    if threshold <= 0 {
        return Vec::new();
    }
    let mut terminated: Vec<_> = pods
        .iter()
        .filter(|p| is_pod_terminated(p))
        .cloned()
        .collect();
    let excess = i64::try_from(terminated.len()).unwrap_or(i64::MAX) - threshold;
    if excess <= 0 {
        return Vec::new();
    }
    sort_by_eviction_and_creation(&mut terminated);
    terminated.truncate(usize::try_from(excess).unwrap_or(usize::MAX));
    terminated
}

/// Terminating pods on nodes that are not ready and tainted out-of-service (`gcTerminating`).
/// `node` looks a node up in the cache; pods whose node is not cached are skipped.
pub fn terminating_out_of_service<'a>(
    pods: &[Arc<Pod>],
    node: impl Fn(&str) -> Option<&'a Node>,
) -> Vec<Arc<Pod>> {
    let mut out: Vec<_> = pods
        .iter()
        .filter(|p| is_pod_terminating(p))
        .filter(|p| {
            node(node_name(p))
                .is_some_and(|n| !is_node_ready(n) && has_taint(n, TAINT_NODE_OUT_OF_SERVICE))
        })
        .cloned()
        .collect();
    sort_by_eviction_and_creation(&mut out);
    out
}

/// Names of nodes pods are bound to that are not in `existing` (candidates for quarantine).
pub fn missing_nodes(pods: &[Arc<Pod>], existing: &HashSet<String>) -> BTreeSet<String> {
    pods.iter()
        .map(|p| node_name(p))
        .filter(|n| !n.is_empty() && !existing.contains(*n))
        .map(str::to_string)
        .collect()
}

/// Pods bound to one of `deleted_nodes` (`gcOrphaned`), in the given order.
pub fn orphaned(pods: &[Arc<Pod>], deleted_nodes: &HashSet<String>) -> Vec<Arc<Pod>> {
    pods.iter()
        .filter(|p| {
            let n = node_name(p);
            !n.is_empty() && deleted_nodes.contains(n)
        })
        .cloned()
        .collect()
}

/// Terminating pods that were never scheduled (`gcUnscheduledTerminating`).
pub fn unscheduled_terminating(pods: &[Arc<Pod>]) -> Vec<Arc<Pod>> {
    pods.iter()
        .filter(|p| is_pod_terminating(p) && node_name(p).is_empty())
        .cloned()
        .collect()
}

/// Nodes missing from the informer wait here before PodGC asks the API server whether they are
/// really gone: kube's `orphaned_pods_nodes` delaying queue, driven by the injectable clock.
#[derive(Debug, Default)]
pub struct Quarantine {
    /// node name → when it may be checked; a node re-observed while waiting keeps its time.
    ready_at: HashMap<String, Timestamp>,
}

impl Quarantine {
    /// Puts every node of `missing` not already waiting into quarantine until `now + period`.
    pub fn observe(
        &mut self,
        missing: impl IntoIterator<Item = String>,
        now: Timestamp,
        period: Duration,
    ) {
        let span = jiff::SignedDuration::try_from(period).unwrap_or(jiff::SignedDuration::MAX);
        let until = now.checked_add(span).unwrap_or(Timestamp::MAX);
        for node in missing {
            self.ready_at.entry(node).or_insert(until);
        }
    }

    /// Removes and returns, sorted, the nodes whose quarantine has ended at `now`.
    pub fn take_ready(&mut self, now: Timestamp) -> Vec<String> {
        let mut ready: Vec<String> = self
            .ready_at
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(n, _)| n.clone())
            .collect();
        ready.sort();
        for n in &ready {
            self.ready_at.remove(n);
        }
        ready
    }

    /// Number of nodes waiting.
    pub fn len(&self) -> usize {
        self.ready_at.len()
    }

    /// True if no node is waiting.
    pub fn is_empty(&self) -> bool {
        self.ready_at.is_empty()
    }
}

/// The `DisruptionTarget` condition an orphaned pod gets before it is deleted.
pub fn orphan_condition() -> PodCondition {
    PodCondition {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        reason: Some("DeletionByPodGC".into()),
        message: Some("PodGC: node no longer exists".into()),
        ..Default::default()
    }
}

/// The strategic merge patch of `/status` that moves a non-terminal pod to `Failed` before its
/// forced deletion, with `condition` set as `UpdatePodCondition` sets it; `None` if the pod is
/// already Succeeded or Failed (`markFailedAndDeletePodWithCondition`).
///
/// The patch carries the phase and that one condition only: conditions merge on `type` in a
/// strategic merge patch, so a condition another writer added since `pod` was cached is kept
/// (kube sends the two-way diff of the status, which amounts to the same). It carries the pod's
/// UID so that it cannot apply to a new pod with the same name.
pub fn fail_status_patch(
    pod: &Pod,
    condition: Option<PodCondition>,
    now: Timestamp,
) -> Option<serde_json::Value> {
    let phase = phase(pod);
    if phase == PHASE_SUCCEEDED || phase == PHASE_FAILED {
        return None;
    }
    let mut status = serde_json::json!({ "phase": PHASE_FAILED });
    if let Some(cond) = condition {
        let existing = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == cond.type_));
        if let Some(cond) = updated_condition(existing, cond, now) {
            status["conditions"] = serde_json::json!([cond]);
        }
    }
    Some(serde_json::json!({
        "metadata": { "uid": pod.metadata.uid },
        "status": status,
    }))
}

/// `condition` as `UpdatePodCondition` writes it over `existing`: the transition time is now,
/// unless the status does not flip; `None` when nothing would change.
fn updated_condition(
    existing: Option<&PodCondition>,
    mut condition: PodCondition,
    now: Timestamp,
) -> Option<PodCondition> {
    condition.last_transition_time = Some(Time(now));
    let Some(existing) = existing else {
        return Some(condition);
    };
    if existing.status == condition.status {
        condition.last_transition_time = existing.last_transition_time.clone();
    }
    (existing != &condition).then_some(condition)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        NodeCondition, NodeSpec, NodeStatus, PodSpec, PodStatus, Taint,
    };
    use kube::api::ObjectMeta;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap()
    }

    fn pod(name: &str, phase: &str, node: &str, created: i64) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                uid: Some(format!("uid-{name}")),
                creation_timestamp: Some(Time(t(created))),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: (!node.is_empty()).then(|| node.to_string()),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: (!phase.is_empty()).then(|| phase.to_string()),
                ..Default::default()
            }),
        })
    }

    fn terminating(p: Arc<Pod>) -> Arc<Pod> {
        let mut p = (*p).clone();
        p.metadata.deletion_timestamp = Some(Time(t(0)));
        Arc::new(p)
    }

    fn evicted(p: Arc<Pod>) -> Arc<Pod> {
        let mut p = (*p).clone();
        p.status.as_mut().unwrap().reason = Some("Evicted".into());
        Arc::new(p)
    }

    fn names(v: &[Arc<Pod>]) -> Vec<&str> {
        v.iter()
            .map(|p| p.metadata.name.as_deref().unwrap())
            .collect()
    }

    fn node(name: &str, ready: bool, taints: &[&str]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints: Some(
                    taints
                        .iter()
                        .map(|k| Taint {
                            key: k.to_string(),
                            effect: "NoExecute".into(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: if ready { "True" } else { "False" }.into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        }
    }

    /// Ported from gc_controller_test.go `TestGCTerminated`.
    #[test]
    fn terminated_pods_above_the_threshold_go_oldest_first() {
        struct Case {
            pods: Vec<Arc<Pod>>,
            threshold: i64,
            deleted: Vec<&'static str>,
        }
        let cases = vec![
            Case {
                pods: vec![pod("a", "Failed", "", 0), pod("b", "Succeeded", "", 1)],
                threshold: 1,
                deleted: vec!["a"],
            },
            Case {
                pods: vec![
                    pod("a", "Failed", "", 0),
                    pod("b", "Succeeded", "", 1),
                    pod("c", "Failed", "", 2),
                ],
                threshold: 1,
                deleted: vec!["a", "b"],
            },
            Case {
                pods: vec![pod("a", "Failed", "", 0), pod("b", "Succeeded", "", 1)],
                threshold: 2,
                deleted: vec![],
            },
            Case {
                pods: vec![pod("a", "Failed", "", 0), pod("b", "Succeeded", "", 1)],
                threshold: 5,
                deleted: vec![],
            },
            Case {
                pods: vec![pod("a", "Failed", "", 0), pod("b", "Succeeded", "", 1)],
                threshold: 0,
                deleted: vec![],
            },
            // Running pods never count.
            Case {
                pods: vec![
                    pod("a", "Running", "", 0),
                    pod("b", "Succeeded", "", 1),
                    pod("c", "Failed", "", 2),
                ],
                threshold: 1,
                deleted: vec!["b"],
            },
            // Evicted pods go first, then the oldest.
            Case {
                pods: vec![
                    pod("a", "Failed", "", 0),
                    evicted(pod("b", "Failed", "", 1)),
                    pod("c", "Failed", "", 2),
                    evicted(pod("d", "Failed", "", 3)),
                ],
                threshold: 1,
                deleted: vec!["b", "d", "a"],
            },
            // Same creation time: by name.
            Case {
                pods: vec![pod("b", "Failed", "", 0), pod("a", "Failed", "", 0)],
                threshold: 1,
                deleted: vec!["a"],
            },
            // An empty phase counts as terminated.
            Case {
                pods: vec![pod("a", "", "", 0), pod("b", "Failed", "", 1)],
                threshold: 1,
                deleted: vec!["a"],
            },
        ];
        for (i, c) in cases.iter().enumerate() {
            assert_eq!(
                names(&terminated_to_delete(&c.pods, c.threshold)),
                c.deleted,
                "case {i}"
            );
        }
    }

    /// Ported from gc_controller_test.go `TestGCTerminating`.
    #[test]
    fn terminating_pods_go_only_from_not_ready_out_of_service_nodes() {
        let nodes = [
            node("worker-0", false, &[TAINT_NODE_OUT_OF_SERVICE]),
            node("worker-1", false, &[]),
            node("worker-2", true, &[TAINT_NODE_OUT_OF_SERVICE]),
        ];
        let lookup = |n: &str| nodes.iter().find(|x| x.metadata.name.as_deref() == Some(n));
        let pods = vec![
            terminating(pod("a", "Running", "worker-0", 0)),
            pod("b", "Running", "worker-0", 1),
            terminating(pod("c", "Running", "worker-1", 2)),
            terminating(pod("d", "Running", "worker-2", 3)),
            terminating(pod("e", "Running", "worker-9", 4)),
            terminating(pod("f", "Pending", "", 5)),
        ];
        assert_eq!(names(&terminating_out_of_service(&pods, lookup)), vec!["a"]);
    }

    /// Ported from gc_controller_test.go `TestGCOrphaned` (quarantine part).
    #[test]
    fn missing_nodes_are_checked_only_after_quarantine() {
        let existing: HashSet<String> = ["node-a".to_string()].into();
        let pods = vec![
            pod("a", "Running", "node-a", 0),
            pod("b", "Running", "node-gone", 1),
            pod("c", "Pending", "", 2),
        ];
        let missing = missing_nodes(&pods, &existing);
        assert_eq!(missing.iter().collect::<Vec<_>>(), vec!["node-gone"]);

        let mut q = Quarantine::default();
        let period = Duration::from_secs(40);
        q.observe(missing.clone(), t(0), period);
        assert!(q.take_ready(t(39)).is_empty());
        // Seen again later: keeps its first deadline.
        q.observe(missing, t(20), period);
        assert_eq!(q.take_ready(t(40)), vec!["node-gone".to_string()]);
        assert!(q.is_empty());

        let deleted: HashSet<String> = ["node-gone".to_string()].into();
        assert_eq!(names(&orphaned(&pods, &deleted)), vec!["b"]);
    }

    /// Ported from gc_controller_test.go `TestGCUnscheduledTerminating`.
    #[test]
    fn only_unscheduled_terminating_pods_are_collected() {
        let pods = vec![
            terminating(pod("a", "Pending", "", 0)),
            terminating(pod("b", "Running", "node", 1)),
            pod("c", "Pending", "", 2),
        ];
        assert_eq!(names(&unscheduled_terminating(&pods)), vec!["a"]);
    }

    #[test]
    fn non_terminal_pods_are_failed_before_deletion_with_the_orphan_condition() {
        let running = pod("a", "Running", "node", 0);
        let patch = fail_status_patch(&running, Some(orphan_condition()), t(5)).expect("patch");
        assert_eq!(patch["status"]["phase"], "Failed");
        assert_eq!(patch["metadata"]["uid"], "uid-a");
        let cond = &patch["status"]["conditions"][0];
        assert_eq!(cond["type"], "DisruptionTarget");
        assert_eq!(cond["reason"], "DeletionByPodGC");
        assert!(cond["lastTransitionTime"].is_string());

        let plain = fail_status_patch(&running, None, t(5)).expect("patch");
        assert!(plain["status"].get("conditions").is_none());

        assert!(fail_status_patch(&pod("b", "Succeeded", "", 0), None, t(5)).is_none());
        assert!(
            fail_status_patch(&pod("c", "Failed", "", 0), Some(orphan_condition()), t(5)).is_none()
        );
    }

    fn with_conditions(p: Arc<Pod>, conditions: Vec<PodCondition>) -> Pod {
        let mut p = (*p).clone();
        p.status.as_mut().expect("status").conditions = Some(conditions);
        p
    }

    fn condition(type_: &str, status: &str, at: i64) -> PodCondition {
        PodCondition {
            type_: type_.into(),
            status: status.into(),
            last_transition_time: Some(Time(t(at))),
            ..Default::default()
        }
    }

    #[test]
    fn the_fail_patch_carries_only_its_own_condition() {
        // Other conditions stay out of the patch: a strategic merge keyed on `type` keeps whatever
        // the server holds, including conditions added after this copy was cached.
        let running = with_conditions(
            pod("a", "Running", "node", 0),
            vec![
                condition("Ready", "True", 1),
                condition("PodScheduled", "True", 1),
            ],
        );
        let patch = fail_status_patch(&running, Some(orphan_condition()), t(5)).expect("patch");
        let conditions = patch["status"]["conditions"].as_array().expect("a list");
        assert_eq!(conditions.len(), 1, "{patch}");
        assert_eq!(conditions[0]["type"], "DisruptionTarget");
        assert_eq!(
            conditions[0]["lastTransitionTime"],
            serde_json::to_value(Time(t(5))).unwrap()
        );
        assert_eq!(patch["status"].as_object().map(|o| o.len()), Some(2));
    }

    #[test]
    fn the_fail_patch_updates_an_existing_condition_as_update_pod_condition_does() {
        let mut disruption = orphan_condition();
        disruption.last_transition_time = Some(Time(t(1)));
        // Same status, other message: updated, transition time kept.
        let mut older = disruption.clone();
        older.message = Some("older".into());
        let p = with_conditions(pod("a", "Running", "node", 0), vec![older]);
        let patch = fail_status_patch(&p, Some(orphan_condition()), t(5)).expect("patch");
        let cond = &patch["status"]["conditions"][0];
        assert_eq!(cond["message"], "PodGC: node no longer exists");
        assert_eq!(
            cond["lastTransitionTime"],
            serde_json::to_value(Time(t(1))).unwrap()
        );
        // Status flips: transition time is now.
        let mut flipped = disruption.clone();
        flipped.status = "False".into();
        let p = with_conditions(pod("a", "Running", "node", 0), vec![flipped]);
        let patch = fail_status_patch(&p, Some(orphan_condition()), t(5)).expect("patch");
        assert_eq!(
            patch["status"]["conditions"][0]["lastTransitionTime"],
            serde_json::to_value(Time(t(5))).unwrap()
        );
        // Already as wanted: only the phase changes.
        let p = with_conditions(pod("a", "Running", "node", 0), vec![disruption]);
        let patch = fail_status_patch(&p, Some(orphan_condition()), t(5)).expect("patch");
        assert!(patch["status"].get("conditions").is_none(), "{patch}");
        assert_eq!(patch["status"]["phase"], "Failed");
    }
}
