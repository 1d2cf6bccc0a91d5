//! Pod predicates the workload controllers share: active, ready, available (k8s.io/kubernetes
//! `pkg/api/v1/pod` and `pkg/controller/controller_utils.go`).

use std::collections::HashSet;
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

/// Container restart policy of a restartable init container (a sidecar).
pub const CONTAINER_RESTART_POLICY_ALWAYS: &str = "Always";

/// The highest restart counts of a pod's containers, regular and sidecar apart
/// (`maxContainerRestarts`, kubernetes#124952).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ContainerRestarts {
    /// Highest restart count of the regular containers (`status.containerStatuses`).
    pub regular: i32,
    /// Highest restart count of the restartable init containers: init containers whose
    /// `restartPolicy` is `Always`. Other init containers ran to completion before the pod
    /// started; their restarts say nothing about how healthy it is now.
    pub sidecar: i32,
}

/// The pod's highest restart counts (`maxContainerRestarts`). Init container statuses count only
/// when the spec declares that init container with `restartPolicy: Always`.
pub fn max_container_restarts(pod: &Pod) -> ContainerRestarts {
    let Some(status) = pod.status.as_ref() else {
        return ContainerRestarts::default();
    };
    // Go's max over an int starting at 0: a pod without statuses has 0 restarts.
    let regular = status
        .container_statuses
        .iter()
        .flatten()
        .map(|c| c.restart_count)
        .fold(0, i32::max);
    let sidecars: HashSet<&str> = pod
        .spec
        .iter()
        .flat_map(|s| s.init_containers.iter().flatten())
        .filter(|c| c.restart_policy.as_deref() == Some(CONTAINER_RESTART_POLICY_ALWAYS))
        .map(|c| c.name.as_str())
        .collect();
    let sidecar = status
        .init_container_statuses
        .iter()
        .flatten()
        .filter(|c| sidecars.contains(c.name.as_str()))
        .map(|c| c.restart_count)
        .fold(0, i32::max);
    ContainerRestarts { regular, sidecar }
}

/// Which of two pods restarted more (`compareMaxContainerRestarts`): `Some(true)` if `a` has more
/// restarts than `b`, `Some(false)` if fewer, `None` if as many. Regular containers decide
/// first; sidecars only break a tie.
pub fn more_restarts(a: &Pod, b: &Pod) -> Option<bool> {
    let (ra, rb) = (max_container_restarts(a), max_container_restarts(b));
    if ra.regular != rb.regular {
        return Some(ra.regular > rb.regular);
    }
    if ra.sidecar != rb.sidecar {
        return Some(ra.sidecar > rb.sidecar);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, ContainerStatus, PodSpec, PodStatus};
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

    /// A pod with regular containers restarted `regular` times and init containers
    /// `(name, restartPolicy, restarts)`.
    fn restarted_pod(regular: &[i32], init: &[(&str, Option<&str>, i32)]) -> Pod {
        let status = |name: &str, restart_count: i32| ContainerStatus {
            name: name.into(),
            restart_count,
            ..Default::default()
        };
        Pod {
            spec: Some(PodSpec {
                init_containers: Some(
                    init.iter()
                        .map(|(name, policy, _)| Container {
                            name: (*name).into(),
                            restart_policy: policy.map(String::from),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            status: Some(PodStatus {
                container_statuses: Some(
                    regular
                        .iter()
                        .enumerate()
                        .map(|(i, n)| status(&format!("c{i}"), *n))
                        .collect(),
                ),
                init_container_statuses: Some(
                    init.iter().map(|(name, _, n)| status(name, *n)).collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn restarts_of_sidecars_are_counted_apart_and_plain_init_containers_not_at_all() {
        let pod = restarted_pod(
            &[1, 4],
            &[
                ("setup", None, 50),
                ("once", Some("OnFailure"), 60),
                ("proxy", Some("Always"), 7),
                ("log", Some("Always"), 3),
            ],
        );
        assert_eq!(
            max_container_restarts(&pod),
            ContainerRestarts {
                regular: 4,
                sidecar: 7
            }
        );
        assert_eq!(
            max_container_restarts(&Pod::default()),
            ContainerRestarts::default()
        );
        // A status whose init container the spec does not declare restartable is not a sidecar.
        let mut undeclared = restarted_pod(&[0], &[("proxy", Some("Always"), 7)]);
        undeclared.spec = None;
        assert_eq!(max_container_restarts(&undeclared).sidecar, 0);
    }

    /// Ported from kubernetes#124952 (`compareMaxContainerRestarts`).
    #[test]
    fn regular_restarts_decide_first_and_sidecar_restarts_break_the_tie() {
        let always = Some("Always");
        let cases = [
            // (name, a, b, a restarted more?)
            (
                "more regular restarts",
                restarted_pod(&[3], &[]),
                restarted_pod(&[1], &[]),
                Some(true),
            ),
            (
                "fewer regular restarts win over more sidecar restarts",
                restarted_pod(&[1], &[("proxy", always, 100)]),
                restarted_pod(&[2], &[("proxy", always, 0)]),
                Some(false),
            ),
            (
                "same regular restarts, more sidecar restarts",
                restarted_pod(&[2], &[("proxy", always, 5)]),
                restarted_pod(&[2], &[("proxy", always, 1)]),
                Some(true),
            ),
            (
                "restarts of an init container that is not a sidecar do not count",
                restarted_pod(&[2], &[("setup", None, 9)]),
                restarted_pod(&[2], &[]),
                None,
            ),
            (
                "same regular and sidecar restarts",
                restarted_pod(&[2], &[("proxy", always, 5)]),
                restarted_pod(&[2], &[("log", always, 5)]),
                None,
            ),
        ];
        for (name, a, b, want) in cases {
            assert_eq!(more_restarts(&a, &b), want, "{name}");
            assert_eq!(more_restarts(&b, &a), want.map(|w| !w), "{name}, reversed");
        }
    }
}
