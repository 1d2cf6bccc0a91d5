//! Simulated container states: creating, running, crash-looping, terminated, and how one moves to the next.

use std::hash::{Hash, Hasher};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::behaviour::ContainerBehaviour;
use super::time::{add, at_or_after};

/// Waiting reason while the sandbox and images are being prepared.
pub const CONTAINER_CREATING: &str = "ContainerCreating";
/// Waiting reason of init containers before they run.
pub const POD_INITIALIZING: &str = "PodInitializing";
/// Waiting reason of a failing container between restarts.
pub const CRASH_LOOP_BACK_OFF: &str = "CrashLoopBackOff";

/// The kubelet's restart back-off: 10s doubling per restart, capped at 5 minutes
/// (`pkg/kubelet/kubelet.go` `backOffPeriod` and `MaxContainerBackOff`).
pub fn crash_back_off(restart_count: i32) -> Duration {
    let doublings = u32::try_from(restart_count.clamp(0, 5)).unwrap_or(5);
    Duration::from_secs(10u64 << doublings).min(Duration::from_secs(300))
}

/// The identity a pod lends its containers' IDs and messages.
#[derive(Clone, Copy, Debug)]
pub struct PodRef<'a> {
    /// Pod namespace.
    pub namespace: &'a str,
    /// Pod name.
    pub name: &'a str,
    /// Pod UID.
    pub uid: &'a str,
}

/// A container waiting for its sandbox (`reason` is [`CONTAINER_CREATING`] or [`POD_INITIALIZING`]).
pub fn waiting(container: &Container, reason: &str) -> ContainerStatus {
    ContainerStatus {
        name: container.name.clone(),
        image: container.image.clone().unwrap_or_default(),
        image_id: String::new(),
        ready: false,
        restart_count: 0,
        started: Some(false),
        state: Some(ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: Some(reason.into()),
                message: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A container that started at `now`, or that failed right away when its behaviour says so.
fn start(
    container: &Container,
    behaviour: &ContainerBehaviour,
    restart_policy: &str,
    restart_count: i32,
    last_state: Option<ContainerState>,
    pod: PodRef<'_>,
    now: Timestamp,
) -> (ContainerStatus, Option<Timestamp>) {
    let mut status = ContainerStatus {
        name: container.name.clone(),
        image: container.image.clone().unwrap_or_default(),
        image_id: image_id(container.image.as_deref().unwrap_or_default()),
        container_id: Some(container_id(pod, &container.name, restart_count)),
        restart_count,
        last_state,
        ..Default::default()
    };
    if behaviour.fail {
        return crash(status, restart_policy, pod, now);
    }
    status.ready = !behaviour.never_ready;
    status.started = Some(true);
    status.state = Some(ContainerState {
        running: Some(ContainerStateRunning {
            started_at: Some(Time(now)),
        }),
        ..Default::default()
    });
    let next = completion_due(behaviour, restart_policy, now);
    (status, next)
}

/// When a running container started at `started_at` exits successfully, if ever.
fn completion_due(
    behaviour: &ContainerBehaviour,
    restart_policy: &str,
    started_at: Timestamp,
) -> Option<Timestamp> {
    match (behaviour.complete_after, restart_policy) {
        (_, "Always") | (None, _) => None,
        (Some(after), _) => Some(add(started_at, after)),
    }
}

/// The container exits with code 1 at `now`: terminated for `restartPolicy: Never`, otherwise
/// waiting in CrashLoopBackOff until the back-off for its restart count has passed.
fn crash(
    mut status: ContainerStatus,
    restart_policy: &str,
    pod: PodRef<'_>,
    now: Timestamp,
) -> (ContainerStatus, Option<Timestamp>) {
    let terminated = ContainerStateTerminated {
        exit_code: 1,
        reason: Some("Error".into()),
        started_at: Some(Time(now)),
        finished_at: Some(Time(now)),
        container_id: status.container_id.clone(),
        ..Default::default()
    };
    status.ready = false;
    status.started = Some(false);
    if restart_policy == "Never" {
        status.state = Some(ContainerState {
            terminated: Some(terminated),
            ..Default::default()
        });
        return (status, None);
    }
    let back_off = crash_back_off(status.restart_count);
    status.last_state = Some(ContainerState {
        terminated: Some(terminated),
        ..Default::default()
    });
    status.state = Some(ContainerState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(CRASH_LOOP_BACK_OFF.into()),
            message: Some(format!(
                "back-off {}s restarting failed container={} pod={}_{}({})",
                back_off.as_secs(),
                status.name,
                pod.name,
                pod.namespace,
                pod.uid
            )),
        }),
        ..Default::default()
    });
    (status, Some(add(now, back_off)))
}

/// True when the container has not been started yet (no status, or waiting for its sandbox):
/// it has neither run, terminated, nor crashed before.
pub fn not_started(status: Option<&ContainerStatus>) -> bool {
    let Some(status) = status else {
        return true;
    };
    if status
        .last_state
        .as_ref()
        .is_some_and(|s| s.terminated.is_some())
    {
        return false;
    }
    let Some(state) = &status.state else {
        return true;
    };
    let crash_looping = state
        .waiting
        .as_ref()
        .is_some_and(|w| w.reason.as_deref() == Some(CRASH_LOOP_BACK_OFF));
    !(state.running.is_some() || state.terminated.is_some() || crash_looping)
}

/// Moves one regular container forward to `now`. Returns its new status and when it next changes
/// on its own (completion or the end of a crash back-off), if ever.
///
/// Behaviour is read again on every step, so annotating a running pod with `rkcm.io/fail` makes it crash
/// and removing `rkcm.io/never-ready` makes it ready.
pub fn advance(
    container: &Container,
    current: Option<&ContainerStatus>,
    behaviour: &ContainerBehaviour,
    restart_policy: &str,
    pod: PodRef<'_>,
    now: Timestamp,
) -> (ContainerStatus, Option<Timestamp>) {
    let Some(current) = current.filter(|c| !not_started(Some(c))) else {
        return start(container, behaviour, restart_policy, 0, None, pod, now);
    };
    let state = current.state.clone().unwrap_or_default();
    if let Some(running) = &state.running {
        if behaviour.fail {
            return crash(current.clone(), restart_policy, pod, now);
        }
        let started_at = running.started_at.as_ref().map_or(now, |t| t.0);
        let mut status = current.clone();
        if let Some(due) = completion_due(behaviour, restart_policy, started_at) {
            if at_or_after(now, due) {
                status.ready = false;
                status.started = Some(false);
                status.state = Some(ContainerState {
                    terminated: Some(ContainerStateTerminated {
                        exit_code: 0,
                        reason: Some("Completed".into()),
                        started_at: Some(Time(started_at)),
                        finished_at: Some(Time(now)),
                        container_id: status.container_id.clone(),
                        ..Default::default()
                    }),
                    ..Default::default()
                });
                return (status, None);
            }
            status.ready = !behaviour.never_ready;
            return (status, Some(due));
        }
        status.ready = !behaviour.never_ready;
        return (status, None);
    }
    let crashed_at = current
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .and_then(|t| t.finished_at.as_ref())
        .map(|t| t.0);
    let crash_looping = state
        .waiting
        .as_ref()
        .is_some_and(|w| w.reason.as_deref() == Some(CRASH_LOOP_BACK_OFF));
    if crash_looping {
        let restart_at = add(
            crashed_at.unwrap_or(now),
            crash_back_off(current.restart_count),
        );
        if !at_or_after(now, restart_at) {
            return (current.clone(), Some(restart_at));
        }
        // The back-off is over: the kubelet starts the container again (and it may fail again).
        return start(
            container,
            behaviour,
            restart_policy,
            current.restart_count.saturating_add(1),
            current.last_state.clone(),
            pod,
            now,
        );
    }
    // Terminated containers stay terminated: restartPolicy Never, or a successful exit under OnFailure.
    (current.clone(), None)
}

/// An init container after the sandbox is up: sidecars (`restartPolicy: Always`) run and are ready,
/// the others have completed.
pub fn init_done(
    container: &Container,
    current: Option<&ContainerStatus>,
    pod: PodRef<'_>,
    now: Timestamp,
) -> ContainerStatus {
    if let Some(current) = current.filter(|c| !not_started(Some(c))) {
        return current.clone();
    }
    let container_id = Some(container_id(pod, &container.name, 0));
    let state = if container.restart_policy.as_deref() == Some("Always") {
        ContainerState {
            running: Some(ContainerStateRunning {
                started_at: Some(Time(now)),
            }),
            ..Default::default()
        }
    } else {
        ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: 0,
                reason: Some("Completed".into()),
                started_at: Some(Time(now)),
                finished_at: Some(Time(now)),
                container_id: container_id.clone(),
                ..Default::default()
            }),
            ..Default::default()
        }
    };
    let sidecar = state.running.is_some();
    ContainerStatus {
        name: container.name.clone(),
        image: container.image.clone().unwrap_or_default(),
        image_id: image_id(container.image.as_deref().unwrap_or_default()),
        container_id,
        ready: true,
        started: Some(sidecar),
        state: Some(state),
        ..Default::default()
    }
}

/// A stable 64-hex-digit digest derived from `parts`.
fn digest(parts: &[&str]) -> String {
    (0u64..4)
        .map(|seed| {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            seed.hash(&mut hasher);
            parts.hash(&mut hasher);
            format!("{:016x}", hasher.finish())
        })
        .collect()
}

/// The image ID the simulated runtime reports: the image reference pinned to a made-up digest.
fn image_id(image: &str) -> String {
    let repository = image.split('@').next().unwrap_or(image);
    let without_tag = match repository.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => name,
        _ => repository,
    };
    format!("{without_tag}@sha256:{}", digest(&[image]))
}

/// The container ID the simulated runtime reports, unique per pod, container and restart.
fn container_id(pod: PodRef<'_>, name: &str, restart_count: i32) -> String {
    format!(
        "rkcm://{}",
        digest(&[pod.uid, name, &restart_count.to_string()])
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const POD: PodRef<'static> = PodRef {
        namespace: "default",
        name: "web",
        uid: "uid-1",
    };

    fn container() -> Container {
        Container {
            name: "app".into(),
            image: Some("nginx:1.27".into()),
            ..Default::default()
        }
    }

    fn t(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).expect("valid")
    }

    #[test]
    fn a_normal_container_starts_running_and_ready() {
        let (status, next) = advance(
            &container(),
            None,
            &ContainerBehaviour::default(),
            "Always",
            POD,
            t(0),
        );
        assert!(status.ready);
        assert_eq!(status.started, Some(true));
        assert!(status.state.unwrap().running.is_some());
        assert!(status.container_id.unwrap().starts_with("rkcm://"));
        assert!(status.image_id.starts_with("nginx@sha256:"));
        assert_eq!(next, None);
    }

    #[test]
    fn a_failing_container_crash_loops_with_growing_back_off() {
        let fail = ContainerBehaviour {
            fail: true,
            ..Default::default()
        };
        let (first, next) = advance(&container(), None, &fail, "Always", POD, t(0));
        assert_eq!(first.restart_count, 0);
        assert_eq!(next, Some(t(10)));
        let waiting = first.state.clone().unwrap().waiting.unwrap();
        assert_eq!(waiting.reason.as_deref(), Some(CRASH_LOOP_BACK_OFF));

        let (same, next) = advance(&container(), Some(&first), &fail, "Always", POD, t(5));
        assert_eq!(same, first);
        assert_eq!(next, Some(t(10)));

        let (second, next) = advance(&container(), Some(&first), &fail, "Always", POD, t(10));
        assert_eq!(second.restart_count, 1);
        assert_eq!(next, Some(t(30)));
        assert_eq!(second.last_state.unwrap().terminated.unwrap().exit_code, 1);
    }

    #[test]
    fn a_failing_container_without_restarts_terminates_with_exit_code_one() {
        let fail = ContainerBehaviour {
            fail: true,
            ..Default::default()
        };
        let (status, next) = advance(&container(), None, &fail, "Never", POD, t(0));
        assert_eq!(status.state.unwrap().terminated.unwrap().exit_code, 1);
        assert_eq!(next, None);
    }

    #[test]
    fn a_completing_container_exits_zero_after_its_run_time() {
        let complete = ContainerBehaviour {
            complete_after: Some(Duration::from_secs(2)),
            ..Default::default()
        };
        let (running, next) = advance(&container(), None, &complete, "OnFailure", POD, t(0));
        assert_eq!(next, Some(t(2)));
        let (done, next) = advance(
            &container(),
            Some(&running),
            &complete,
            "OnFailure",
            POD,
            t(2),
        );
        let terminated = done.state.unwrap().terminated.unwrap();
        assert_eq!(
            (terminated.exit_code, terminated.reason.as_deref()),
            (0, Some("Completed"))
        );
        assert_eq!(next, None);
        let (_, next) = advance(&container(), None, &complete, "Always", POD, t(0));
        assert_eq!(
            next, None,
            "complete-after is ignored under restartPolicy Always"
        );
    }

    #[test]
    fn readiness_follows_the_current_behaviour() {
        let never = ContainerBehaviour {
            never_ready: true,
            ..Default::default()
        };
        let (status, _) = advance(&container(), None, &never, "Always", POD, t(0));
        assert!(!status.ready);
        let (status, _) = advance(
            &container(),
            Some(&status),
            &ContainerBehaviour::default(),
            "Always",
            POD,
            t(1),
        );
        assert!(status.ready);
    }

    #[test]
    fn back_off_doubles_up_to_five_minutes() {
        let secs: Vec<u64> = (0..7).map(|r| crash_back_off(r).as_secs()).collect();
        assert_eq!(secs, [10, 20, 40, 80, 160, 300, 300]);
    }
}
