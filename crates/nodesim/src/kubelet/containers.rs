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
use super::time::{add, at_or_after, until};

/// Waiting reason while the sandbox and images are being prepared.
pub const CONTAINER_CREATING: &str = "ContainerCreating";
/// Waiting reason of init containers before they run.
pub const POD_INITIALIZING: &str = "PodInitializing";
/// Waiting reason of a failing container between restarts.
pub const CRASH_LOOP_BACK_OFF: &str = "CrashLoopBackOff";
/// Waiting reason of a container whose configuration (its environment) cannot be built
/// (`kubecontainer.ErrCreateContainerConfig`).
pub const CREATE_CONTAINER_CONFIG_ERROR: &str = "CreateContainerConfigError";

/// The kubelet's restart back-off: 10s doubling per restart, capped at 5 minutes
/// (`pkg/kubelet/kubelet.go` `backOffPeriod` and `MaxContainerBackOff`). `crash_back_off(n)` is the
/// n-th step of that schedule.
pub fn crash_back_off(restart_count: i32) -> Duration {
    let doublings = u32::try_from(restart_count.clamp(0, 5)).unwrap_or(5);
    Duration::from_secs(10u64 << doublings).min(MAX_BACK_OFF)
}

/// `backOffPeriod`: the first back-off.
const INITIAL_BACK_OFF: Duration = Duration::from_secs(10);
/// `MaxContainerBackOff`.
const MAX_BACK_OFF: Duration = Duration::from_secs(300);
/// The kubelet forgets a container's back-off when two exits are further apart than twice the
/// maximum back-off (`flowcontrol.Backoff`'s `hasExpired`): it ran 10 minutes without a problem.
const BACK_OFF_RESET: Duration = Duration::from_secs(600);

/// The back-off before restarting a container that exited at `exited_at`.
///
/// `previous` is the exit before this one and the restart that followed it, read from the
/// container's `lastState` and `state.running.startedAt`: the wait between them was the previous
/// back-off (timestamps are stored in whole seconds, hence the one-second tolerance), and this one
/// doubles it, unless the exits are more than 10 minutes apart, which starts over at 10 seconds.
pub fn restart_back_off(
    previous: Option<(Timestamp, Timestamp)>,
    exited_at: Timestamp,
) -> Duration {
    let Some((previous_exit, restarted_at)) = previous else {
        return INITIAL_BACK_OFF;
    };
    if until(previous_exit, exited_at) > BACK_OFF_RESET {
        return INITIAL_BACK_OFF;
    }
    let waited = until(previous_exit, restarted_at) + Duration::from_secs(1);
    (0..6)
        .map(crash_back_off)
        .take_while(|step| *step <= waited)
        .last()
        .map_or(INITIAL_BACK_OFF, |step| (step * 2).min(MAX_BACK_OFF))
}

/// The back-off a `CrashLoopBackOff` waiting message announces (`back-off 20s restarting …`).
fn announced_back_off(message: &str) -> Option<Duration> {
    let seconds = message.strip_prefix("back-off ")?.split_once("s ")?.0;
    seconds.parse().ok().map(Duration::from_secs)
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

/// A container waiting to be created (`reason` is [`CONTAINER_CREATING`], [`POD_INITIALIZING`]
/// or [`CREATE_CONTAINER_CONFIG_ERROR`]).
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

/// When and how a running container exits on its own: its command's run, or `rkcm.io/complete-after`
/// (which `restartPolicy: Always` ignores). `None`: it runs until stopped.
fn exit_plan(behaviour: &ContainerBehaviour, restart_policy: &str) -> Option<(Duration, i32)> {
    if let Some(run) = &behaviour.run {
        return Some((run.duration, run.exit_code));
    }
    match (behaviour.complete_after, restart_policy) {
        (_, "Always") | (None, _) => None,
        (Some(after), _) => Some((after, 0)),
    }
}

/// `at` rounded up to a whole second. Containers that exit on their own start on a whole second,
/// because the API stores times in whole seconds: their run then ends exactly `duration` after the
/// `startedAt` everyone reads, never earlier.
fn whole_second_after(at: Timestamp) -> Timestamp {
    if at.subsec_nanosecond() == 0 {
        return at;
    }
    Timestamp::from_second(at.as_second().saturating_add(1)).unwrap_or(at)
}

/// A container that starts at `at`, or that fails right away when its behaviour says so.
fn start(
    container: &Container,
    behaviour: &ContainerBehaviour,
    restart_policy: &str,
    restart_count: i32,
    last_state: Option<ContainerState>,
    pod: PodRef<'_>,
    at: Timestamp,
) -> (ContainerStatus, Option<Timestamp>) {
    let status = ContainerStatus {
        name: container.name.clone(),
        image: container.image.clone().unwrap_or_default(),
        image_id: image_id(container.image.as_deref().unwrap_or_default()),
        container_id: Some(container_id(pod, &container.name, restart_count)),
        restart_count,
        last_state,
        ..Default::default()
    };
    if behaviour.fail {
        return exit(status, 1, at, at, restart_policy, pod);
    }
    let plan = exit_plan(behaviour, restart_policy);
    let started_at = if plan.is_some() {
        whole_second_after(at)
    } else {
        at
    };
    let mut status = status;
    status.ready = !behaviour.never_ready;
    status.started = Some(true);
    status.state = Some(ContainerState {
        running: Some(ContainerStateRunning {
            started_at: Some(Time(started_at)),
        }),
        ..Default::default()
    });
    (status, plan.map(|(after, _)| add(started_at, after)))
}

/// The container's process exits with `exit_code` at `finished_at`: it stays terminated when
/// `restart_policy` says so (`Never`, or `OnFailure` with code 0), otherwise it waits in
/// `CrashLoopBackOff` until the kubelet's back-off has passed.
fn exit(
    mut status: ContainerStatus,
    exit_code: i32,
    started_at: Timestamp,
    finished_at: Timestamp,
    restart_policy: &str,
    pod: PodRef<'_>,
) -> (ContainerStatus, Option<Timestamp>) {
    let terminated = ContainerStateTerminated {
        exit_code,
        reason: Some(if exit_code == 0 { "Completed" } else { "Error" }.into()),
        started_at: Some(Time(started_at)),
        finished_at: Some(Time(finished_at)),
        container_id: status.container_id.clone(),
        ..Default::default()
    };
    status.ready = false;
    status.started = Some(false);
    let restarts = match restart_policy {
        "Never" => false,
        "OnFailure" => exit_code != 0,
        _ => true,
    };
    if !restarts {
        status.state = Some(ContainerState {
            terminated: Some(terminated),
            ..Default::default()
        });
        return (status, None);
    }
    let previous_exit = status
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .and_then(|t| t.finished_at.as_ref())
        .map(|t| t.0);
    let back_off = restart_back_off(previous_exit.map(|e| (e, started_at)), finished_at);
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
    (status, Some(add(finished_at, back_off)))
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

/// Moves one container forward to `now`, starting it at `start_at` (no later than `now`) if it has
/// not started yet. Returns its new status and when it next changes on its own (its exit or the
/// end of a crash back-off), if ever. Changes that were due before `now` happen at their own time,
/// one after the other, so a late sync reports the same history as a punctual one.
///
/// Behaviour is read again on every step, so annotating a running pod with `rkcm.io/fail` makes it crash
/// and removing `rkcm.io/never-ready` makes it ready.
pub fn advance(
    container: &Container,
    current: Option<&ContainerStatus>,
    behaviour: &ContainerBehaviour,
    restart_policy: &str,
    pod: PodRef<'_>,
    start_at: Timestamp,
    now: Timestamp,
) -> (ContainerStatus, Option<Timestamp>) {
    // Bounds the catching up after a long pause; what is left is done on the next sync.
    const MAX_STEPS: usize = 64;
    let (mut status, mut next) = step(
        container,
        current,
        behaviour,
        restart_policy,
        pod,
        start_at.min(now),
    );
    for _ in 0..MAX_STEPS {
        match next {
            Some(due) if at_or_after(now, due) => {
                (status, next) = step(
                    container,
                    Some(&status),
                    behaviour,
                    restart_policy,
                    pod,
                    now,
                );
            }
            _ => break,
        }
    }
    (status, next)
}

/// One change of a container, at its due time or, for what has no due time, at `at`.
fn step(
    container: &Container,
    current: Option<&ContainerStatus>,
    behaviour: &ContainerBehaviour,
    restart_policy: &str,
    pod: PodRef<'_>,
    at: Timestamp,
) -> (ContainerStatus, Option<Timestamp>) {
    let Some(current) = current.filter(|c| !not_started(Some(c))) else {
        return start(container, behaviour, restart_policy, 0, None, pod, at);
    };
    let state = current.state.clone().unwrap_or_default();
    if let Some(running) = &state.running {
        let started_at = running.started_at.as_ref().map_or(at, |t| t.0);
        if behaviour.fail {
            return exit(current.clone(), 1, started_at, at, restart_policy, pod);
        }
        let mut status = current.clone();
        status.ready = !behaviour.never_ready;
        return match exit_plan(behaviour, restart_policy) {
            Some((after, code)) => {
                let due = add(started_at, after);
                if at_or_after(at, due) {
                    exit(status, code, started_at, due, restart_policy, pod)
                } else {
                    (status, Some(due))
                }
            }
            None => (status, None),
        };
    }
    let waiting = state.waiting.as_ref();
    let crash_looping = waiting.is_some_and(|w| w.reason.as_deref() == Some(CRASH_LOOP_BACK_OFF));
    if crash_looping {
        let exited_at = current
            .last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .and_then(|t| t.finished_at.as_ref())
            .map_or(at, |t| t.0);
        let back_off = waiting
            .and_then(|w| w.message.as_deref())
            .and_then(announced_back_off)
            .unwrap_or_else(|| crash_back_off(current.restart_count));
        let restart_at = add(exited_at, back_off);
        if !at_or_after(at, restart_at) {
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
            restart_at,
        );
    }
    // Terminated containers stay terminated: restartPolicy Never, or a successful exit under OnFailure.
    (current.clone(), None)
}

/// An init container that does not follow the container-command convention, after the sandbox is
/// up: sidecars (`restartPolicy: Always`) run and are ready, the others have completed.
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
    let state = if is_sidecar(container) {
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

/// A restartable init container (`restartPolicy: Always`): a sidecar that keeps running.
pub fn is_sidecar(container: &Container) -> bool {
    container.restart_policy.as_deref() == Some("Always")
}

/// A running sidecar stopped because the pod finished: terminated with code 0 at `at`.
pub fn stop_sidecar(mut status: ContainerStatus, at: Timestamp) -> ContainerStatus {
    let Some(running) = status.state.as_ref().and_then(|s| s.running.as_ref()) else {
        return status;
    };
    let started_at = running.started_at.clone();
    status.ready = false;
    status.started = Some(false);
    status.state = Some(ContainerState {
        terminated: Some(ContainerStateTerminated {
            exit_code: 0,
            reason: Some("Completed".into()),
            started_at,
            finished_at: Some(Time(at)),
            container_id: status.container_id.clone(),
            ..Default::default()
        }),
        ..Default::default()
    });
    status
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
        let (first, next) = advance(&container(), None, &fail, "Always", POD, t(0), t(0));
        assert_eq!(first.restart_count, 0);
        assert_eq!(next, Some(t(10)));
        let waiting = first.state.clone().unwrap().waiting.unwrap();
        assert_eq!(waiting.reason.as_deref(), Some(CRASH_LOOP_BACK_OFF));

        let (same, next) = advance(&container(), Some(&first), &fail, "Always", POD, t(5), t(5));
        assert_eq!(same, first);
        assert_eq!(next, Some(t(10)));

        let (second, next) = advance(
            &container(),
            Some(&first),
            &fail,
            "Always",
            POD,
            t(10),
            t(10),
        );
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
        let (status, next) = advance(&container(), None, &fail, "Never", POD, t(0), t(0));
        assert_eq!(status.state.unwrap().terminated.unwrap().exit_code, 1);
        assert_eq!(next, None);
    }

    #[test]
    fn a_completing_container_exits_zero_after_its_run_time() {
        let complete = ContainerBehaviour {
            complete_after: Some(Duration::from_secs(2)),
            ..Default::default()
        };
        let (running, next) = advance(&container(), None, &complete, "OnFailure", POD, t(0), t(0));
        assert_eq!(next, Some(t(2)));
        let (done, next) = advance(
            &container(),
            Some(&running),
            &complete,
            "OnFailure",
            POD,
            t(2),
            t(2),
        );
        let terminated = done.state.unwrap().terminated.unwrap();
        assert_eq!(
            (terminated.exit_code, terminated.reason.as_deref()),
            (0, Some("Completed"))
        );
        assert_eq!(next, None);
        let (_, next) = advance(&container(), None, &complete, "Always", POD, t(0), t(0));
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
        let (status, _) = advance(&container(), None, &never, "Always", POD, t(0), t(0));
        assert!(!status.ready);
        let (status, _) = advance(
            &container(),
            Some(&status),
            &ContainerBehaviour::default(),
            "Always",
            POD,
            t(1),
            t(1),
        );
        assert!(status.ready);
    }

    #[test]
    fn back_off_doubles_up_to_five_minutes() {
        let secs: Vec<u64> = (0..7).map(|r| crash_back_off(r).as_secs()).collect();
        assert_eq!(secs, [10, 20, 40, 80, 160, 300, 300]);
    }

    fn command(duration: u64, exit_code: i32) -> ContainerBehaviour {
        ContainerBehaviour {
            run: Some(super::super::command::Run {
                duration: Duration::from_secs(duration),
                exit_code,
                output: Vec::new(),
            }),
            ..Default::default()
        }
    }

    fn terminated(status: &ContainerStatus) -> Option<&ContainerStateTerminated> {
        status.state.as_ref()?.terminated.as_ref()
    }

    fn waiting_reason(status: &ContainerStatus) -> Option<&str> {
        status.state.as_ref()?.waiting.as_ref()?.reason.as_deref()
    }

    #[test]
    fn a_command_runs_for_its_duration_and_exits_with_its_code() {
        let b = command(3, 2);
        let (running, next) = advance(&container(), None, &b, "Never", POD, t(0), t(0));
        assert_eq!(next, Some(t(3)));
        assert!(running.ready);
        let (same, next) = advance(&container(), Some(&running), &b, "Never", POD, t(0), t(2));
        assert_eq!((same, next), (running.clone(), Some(t(3))));
        let (done, next) = advance(&container(), Some(&running), &b, "Never", POD, t(0), t(4));
        let term = terminated(&done).expect("terminated");
        assert_eq!((term.exit_code, term.reason.as_deref()), (2, Some("Error")));
        assert_eq!(term.started_at, Some(Time(t(0))));
        assert_eq!(
            term.finished_at,
            Some(Time(t(3))),
            "exits at its own time, not the sync's"
        );
        assert!(!done.ready);
        assert_eq!(next, None);
    }

    #[test]
    fn containers_that_exit_on_their_own_start_on_a_whole_second() {
        let half = Timestamp::from_millisecond(1_700_000_000_500).expect("valid");
        let (running, next) = advance(&container(), None, &command(1, 0), "Never", POD, half, half);
        let started = running.state.unwrap().running.unwrap().started_at.unwrap();
        assert_eq!(started, Time(t(1)));
        assert_eq!(next, Some(t(2)));
        let (forever, _) = advance(
            &container(),
            None,
            &ContainerBehaviour::default(),
            "Never",
            POD,
            half,
            half,
        );
        assert_eq!(
            forever.state.unwrap().running.unwrap().started_at,
            Some(Time(half))
        );
    }

    #[test]
    fn restart_policy_decides_what_follows_an_exit() {
        let cases = [
            ("Never", 0, false),
            ("Never", 1, false),
            ("OnFailure", 0, false),
            ("OnFailure", 1, true),
            ("Always", 0, true),
            ("Always", 1, true),
        ];
        for (policy, code, restarts) in cases {
            let (s, next) = advance(
                &container(),
                None,
                &command(0, code),
                policy,
                POD,
                t(0),
                t(0),
            );
            assert_eq!(next.is_some(), restarts, "{policy} {code}");
            if restarts {
                assert_eq!(waiting_reason(&s), Some(CRASH_LOOP_BACK_OFF));
                let last = s
                    .last_state
                    .as_ref()
                    .and_then(|l| l.terminated.as_ref())
                    .expect("lastState");
                assert_eq!(last.exit_code, code);
                assert_eq!(
                    last.reason.as_deref(),
                    Some(if code == 0 { "Completed" } else { "Error" })
                );
            } else {
                assert_eq!(terminated(&s).map(|t| t.exit_code), Some(code));
            }
        }
    }

    #[test]
    fn restarts_bump_the_count_and_a_late_sync_replays_them_at_their_own_times() {
        // Runs 5s, exits 1, under Always: exits at 5, back-off 10 → restarts at 15, exits at 20,
        // back-off 20 → restarts at 40, exits at 45, back-off 40 → restarts at 85.
        let b = command(5, 1);
        let (s, next) = advance(&container(), None, &b, "Always", POD, t(0), t(50));
        assert_eq!(s.restart_count, 2);
        assert_eq!(waiting_reason(&s), Some(CRASH_LOOP_BACK_OFF));
        assert_eq!(next, Some(t(85)));
        let last = s
            .last_state
            .as_ref()
            .and_then(|l| l.terminated.as_ref())
            .expect("lastState");
        assert_eq!(last.started_at, Some(Time(t(40))));
        assert_eq!(last.finished_at, Some(Time(t(45))));
        let (s, next) = advance(&container(), Some(&s), &b, "Always", POD, t(0), t(85));
        assert_eq!(s.restart_count, 3);
        assert!(s
            .state
            .as_ref()
            .and_then(|st| st.running.as_ref())
            .is_some());
        assert_eq!(next, Some(t(90)));
    }

    #[test]
    fn back_off_doubles_and_resets_after_ten_quiet_minutes() {
        assert_eq!(restart_back_off(None, t(0)), Duration::from_secs(10));
        let cases = [
            // (previous exit, restarted at, this exit) → back-off
            ((0, 10), 15, 20),
            ((0, 20), 25, 40),
            ((0, 9), 12, 20), // whole-second storage: 9s counts as the 10s step
            ((0, 160), 170, 300),
            ((0, 300), 310, 300),
            ((0, 300), 901, 10), // more than 10 minutes between exits
            ((0, 10), 600, 20),
        ];
        for ((previous, restarted), exited, want) in cases {
            assert_eq!(
                restart_back_off(Some((t(previous), t(restarted))), t(exited)),
                Duration::from_secs(want),
                "{previous} {restarted} {exited}"
            );
        }
    }

    #[test]
    fn the_announced_back_off_is_read_back() {
        assert_eq!(
            announced_back_off("back-off 40s restarting failed container=app pod=web_default(u)"),
            Some(Duration::from_secs(40))
        );
        assert_eq!(announced_back_off("something else"), None);
    }

    #[test]
    fn a_stopped_sidecar_completes() {
        let (running, _) = advance(
            &container(),
            None,
            &ContainerBehaviour::default(),
            "Always",
            POD,
            t(0),
            t(0),
        );
        let stopped = stop_sidecar(running, t(9));
        let term = terminated(&stopped).expect("terminated");
        assert_eq!(
            (term.exit_code, term.finished_at.clone()),
            (0, Some(Time(t(9))))
        );
    }
}
