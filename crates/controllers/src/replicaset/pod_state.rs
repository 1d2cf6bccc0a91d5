//! Pod predicates the workload controllers share: active, ready, available (k8s.io/kubernetes
//! `pkg/api/v1/pod` and `pkg/controller/controller_utils.go`).

use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, PodCondition};

/// Pod phase `Pending`.
pub const PHASE_PENDING: &str = "Pending";
/// Pod phase `Running`.
pub const PHASE_RUNNING: &str = "Running";
/// Pod phase `Succeeded`.
pub const PHASE_SUCCEEDED: &str = "Succeeded";
/// Pod phase `Failed`.
pub const PHASE_FAILED: &str = "Failed";
/// Pod phase `Unknown`.
pub const PHASE_UNKNOWN: &str = "Unknown";

/// The pod's phase, `""` when unset.
pub fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// The pod's node, `""` when it is not scheduled.
pub fn node_name(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("")
}

/// True while the pod counts towards its controller: not Succeeded, not Failed, not being deleted
/// (`IsPodActive`).
pub fn is_pod_active(pod: &Pod) -> bool {
    let phase = phase(pod);
    phase != PHASE_SUCCEEDED && phase != PHASE_FAILED && pod.metadata.deletion_timestamp.is_none()
}

/// The active pods of `pods`, in order (`FilterActivePods`).
pub fn filter_active_pods(pods: &[Arc<Pod>]) -> Vec<Arc<Pod>> {
    pods.iter().filter(|p| is_pod_active(p)).cloned().collect()
}

/// The pod's `Ready` condition, if it reports one.
pub fn ready_condition(pod: &Pod) -> Option<&PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
}

/// True if the pod's `Ready` condition is `True` (`IsPodReady`).
pub fn is_pod_ready(pod: &Pod) -> bool {
    ready_condition(pod).is_some_and(|c| c.status == "True")
}

/// True if the pod has been ready for at least `min_ready_seconds` at `now` (`IsPodAvailable`).
/// A ready pod without a transition time is available only when `min_ready_seconds` is 0.
pub fn is_pod_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> bool {
    let Some(cond) = ready_condition(pod).filter(|c| c.status == "True") else {
        return false;
    };
    if min_ready_seconds <= 0 {
        return true;
    }
    match &cond.last_transition_time {
        Some(t) => {
            let ready_for = now.as_nanosecond() - t.0.as_nanosecond();
            // Go: LastTransitionTime.Add(minReadySeconds).Before(now), strictly.
            ready_for > i128::from(min_ready_seconds) * 1_000_000_000
        }
        None => false,
    }
}

/// When the pod last became ready, if it is ready and says so (`podReadyTime`).
pub fn ready_time(pod: &Pod) -> Option<Timestamp> {
    ready_condition(pod)
        .filter(|c| c.status == "True")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0)
}

/// The highest restart count of the pod's containers (`maxContainerRestarts`).
pub fn max_container_restarts(pod: &Pod) -> i32 {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map(|cs| cs.iter().map(|c| c.restart_count).max().unwrap_or(0))
        .unwrap_or(0)
        .max(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn ready_pod(since: Option<Timestamp>) -> Pod {
        Pod {
            status: Some(PodStatus {
                phase: Some(PHASE_RUNNING.into()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_transition_time: since.map(Time),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_ready_pod_becomes_available_strictly_after_min_ready_seconds() {
        let t0 = Timestamp::from_second(1_000).unwrap();
        let pod = ready_pod(Some(t0));
        assert!(is_pod_available(&pod, 0, t0));
        assert!(!is_pod_available(&pod, 10, t0));
        assert!(!is_pod_available(
            &pod,
            10,
            Timestamp::from_second(1_010).unwrap()
        ));
        assert!(is_pod_available(
            &pod,
            10,
            Timestamp::from_second(1_011).unwrap()
        ));
        assert!(!is_pod_available(&ready_pod(None), 10, t0));
    }

    #[test]
    fn terminal_and_deleting_pods_are_not_active() {
        let mut pod = ready_pod(None);
        assert!(is_pod_active(&pod));
        pod.status.as_mut().unwrap().phase = Some(PHASE_SUCCEEDED.into());
        assert!(!is_pod_active(&pod));
        pod.status.as_mut().unwrap().phase = Some(PHASE_RUNNING.into());
        pod.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        assert!(!is_pod_active(&pod));
    }
}
