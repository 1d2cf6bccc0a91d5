//! What the Job controller reads from a pod: finished, failed, terminating, ready, when it
//! finished, and which active pods go first (`isPodFailed`, `getFinishedTime`,
//! `activePodsForRemoval` of kube's job controller).

use std::sync::Arc;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;

use crate::replicaset::pod_state::{is_pod_active, is_pod_ready, phase};
use crate::replicaset::replicas::delete_first;

/// Finalizer the controller puts on every pod it creates, so a pod cannot disappear before it is
/// counted in the Job's status (`batch.kubernetes.io/job-tracking`).
pub const JOB_TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// Whether the pod still carries [`JOB_TRACKING_FINALIZER`].
pub fn has_tracking_finalizer(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .as_ref()
        .is_some_and(|f| f.iter().any(|f| f == JOB_TRACKING_FINALIZER))
}

/// The strategic-merge patch that removes [`JOB_TRACKING_FINALIZER`] and nothing else, or `None`
/// if the pod does not carry it (`removeTrackingFinalizerPatch`).
pub fn remove_tracking_finalizer_patch(pod: &Pod) -> Option<serde_json::Value> {
    has_tracking_finalizer(pod).then(|| {
        serde_json::json!({
            "metadata": { "$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER] }
        })
    })
}

/// Whether failed pods are only replaced once fully terminated: `podReplacementPolicy: Failed`,
/// which a pod failure policy implies (`onlyReplaceFailedPods`).
pub fn only_replace_failed_pods(job: &Job) -> bool {
    let Some(spec) = job.spec.as_ref() else {
        return false;
    };
    spec.pod_replacement_policy.as_deref() == Some("Failed") || spec.pod_failure_policy.is_some()
}

/// Whether the pod counts as failed: phase `Failed`, or being deleted before it succeeded unless
/// only fully failed pods are replaced (deleted orphans may never reach `Failed`).
pub fn is_pod_failed(pod: &Pod, job: &Job) -> bool {
    if phase(pod) == "Failed" {
        return true;
    }
    if only_replace_failed_pods(job) {
        return false;
    }
    pod.metadata.deletion_timestamp.is_some() && phase(pod) != "Succeeded"
}

/// Whether the pod succeeded.
pub fn is_pod_succeeded(pod: &Pod) -> bool {
    phase(pod) == "Succeeded"
}

/// Whether the pod is being deleted and has not reached a terminal phase.
pub fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some() && !matches!(phase(pod), "Succeeded" | "Failed")
}

/// Pods being deleted that have not reached a terminal phase (`controller.CountTerminatingPods`).
pub fn count_terminating(pods: &[Arc<Pod>]) -> i32 {
    i32::try_from(pods.iter().filter(|p| is_terminating(p)).count()).unwrap_or(i32::MAX)
}

/// Ready pods among `pods`.
pub fn count_ready(pods: &[Arc<Pod>]) -> i32 {
    i32::try_from(pods.iter().filter(|p| is_pod_ready(p)).count()).unwrap_or(i32::MAX)
}

/// Pods neither terminal nor being deleted (`controller.FilterActivePods`).
pub fn filter_active(pods: &[Arc<Pod>]) -> Vec<Arc<Pod>> {
    pods.iter().filter(|p| is_pod_active(p)).cloned().collect()
}

/// When the pod finished (`getFinishedTime`): the latest container termination if every
/// container terminated, else when it turned not ready, else its deletion time less the grace
/// period, else its creation time.
pub fn finished_time(pod: &Pod) -> Option<Timestamp> {
    let status = pod.status.as_ref();
    let containers = status.and_then(|s| s.container_statuses.as_deref());
    if let Some(containers) = containers.filter(|c| !c.is_empty()) {
        let finished: Option<Vec<Timestamp>> = containers
            .iter()
            .map(|c| {
                c.state
                    .as_ref()
                    .and_then(|s| s.terminated.as_ref())
                    .and_then(|t| t.finished_at.as_ref())
                    .map(|t| t.0)
            })
            .collect();
        if let Some(latest) = finished.and_then(|f| f.into_iter().max()) {
            return Some(latest);
        }
    }
    let not_ready_since = status
        .and_then(|s| s.conditions.as_deref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .filter(|c| c.status == "False")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0);
    if not_ready_since.is_some() {
        return not_ready_since;
    }
    if let Some(deleted) = &pod.metadata.deletion_timestamp {
        let grace = pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
        return Some(deleted.0 - SignedDuration::from_secs(grace));
    }
    pod.metadata.creation_timestamp.as_ref().map(|t| t.0)
}

/// The first `count` of `pods` to delete, ranked as `controller.ActivePods`: unscheduled before
/// scheduled, pending before running, not ready before ready, ready for less time first, more
/// restarts first, newer first. Stable, so equal pods keep their order.
pub fn rank_for_removal(pods: &[Arc<Pod>], count: usize) -> Vec<Arc<Pod>> {
    let mut ranked = pods.to_vec();
    ranked.sort_by(|a, b| {
        if delete_first(a, 0, b, 0, None) {
            std::cmp::Ordering::Less
        } else if delete_first(b, 0, a, 0, None) {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    });
    ranked.truncate(count);
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::fixtures::{job, pod, ts};
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateTerminated, ContainerStatus, PodCondition,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    #[test]
    fn a_deleted_pod_counts_as_failed_unless_only_failed_pods_are_replaced() {
        let mut j = job("j", Some(1), Some(1));
        let mut p = pod(&j, "p", "Running");
        assert!(!is_pod_failed(&p, &j));
        p.metadata.deletion_timestamp = Some(ts(0));
        assert!(is_pod_failed(&p, &j));
        j.spec.as_mut().expect("spec").pod_replacement_policy = Some("Failed".into());
        assert!(!is_pod_failed(&p, &j));
        let mut succeeded = pod(&j, "s", "Succeeded");
        succeeded.metadata.deletion_timestamp = Some(ts(0));
        assert!(!is_pod_failed(&succeeded, &job("j", Some(1), Some(1))));
    }

    #[test]
    fn terminating_counts_deleted_pods_not_yet_terminal() {
        let j = job("j", Some(3), Some(3));
        let mut a = pod(&j, "a", "Running");
        a.metadata.deletion_timestamp = Some(ts(0));
        let mut b = pod(&j, "b", "Failed");
        b.metadata.deletion_timestamp = Some(ts(0));
        let c = pod(&j, "c", "Running");
        let pods = [Arc::new(a), Arc::new(b), Arc::new(c)];
        assert_eq!(count_terminating(&pods), 1);
        assert_eq!(filter_active(&pods).len(), 1);
    }

    /// Ported from backoff_utils_test.go `TestGetFinishedTime`.
    #[test]
    fn finished_time_prefers_containers_then_ready_false_then_deletion_then_creation() {
        let j = job("j", Some(1), Some(1));
        let mut p = pod(&j, "p", "Failed");
        p.metadata.creation_timestamp = Some(ts(1));
        assert_eq!(finished_time(&p), Some(ts(1).0));

        p.metadata.deletion_timestamp = Some(ts(100));
        p.metadata.deletion_grace_period_seconds = Some(30);
        assert_eq!(finished_time(&p), Some(ts(70).0));

        let status = p.status.get_or_insert_with(Default::default);
        status.conditions = Some(vec![PodCondition {
            type_: "Ready".into(),
            status: "False".into(),
            last_transition_time: Some(ts(50)),
            ..Default::default()
        }]);
        assert_eq!(finished_time(&p), Some(ts(50).0));

        let terminated = |at: i64| ContainerStatus {
            state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    finished_at: Some(Time(ts(at).0)),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let status = p.status.get_or_insert_with(Default::default);
        status.container_statuses = Some(vec![terminated(40), terminated(45)]);
        assert_eq!(finished_time(&p), Some(ts(45).0));
        // One container still running: containers do not tell.
        p.status
            .get_or_insert_with(Default::default)
            .container_statuses = Some(vec![terminated(40), ContainerStatus::default()]);
        assert_eq!(finished_time(&p), Some(ts(50).0));
    }

    #[test]
    fn removal_ranks_unscheduled_and_pending_pods_first() {
        let j = job("j", Some(3), Some(3));
        let mut running = pod(&j, "running", "Running");
        running.spec.get_or_insert_with(Default::default).node_name = Some("n".into());
        let mut pending = pod(&j, "pending", "Pending");
        pending.spec.get_or_insert_with(Default::default).node_name = Some("n".into());
        let unscheduled = pod(&j, "unscheduled", "Pending");
        let pods = [Arc::new(running), Arc::new(pending), Arc::new(unscheduled)];
        let names: Vec<_> = rank_for_removal(&pods, 2)
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        assert_eq!(names, ["unscheduled", "pending"]);
    }
}
