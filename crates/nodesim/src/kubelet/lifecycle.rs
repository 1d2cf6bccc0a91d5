//! The simulated kubelet's decision for one pod bound to its node: write a status, wait, delete, or nothing.
//!
//! The decision depends only on the pod as stored and the current time, so a restarted simulator
//! picks up where the previous one left off. A pod goes through:
//!
//! 1. bound → **Pending** with the sandbox up: `startTime`, `hostIP`, `podIP`,
//!    containers waiting in `ContainerCreating` (skipped when the ready delay is zero); while a
//!    volume cannot be set up ([`PlanInput::mount_failures`]) the pod stays Pending without a
//!    sandbox (`PodReadyToStartContainers` False, no `podIP`);
//! 2. after the ready delay → init containers run, in order, then the containers start: **Running**
//!    and Ready, or as the [behaviour](super::behaviour) conventions and the
//!    [container commands](super::command) say (never ready, failing, exiting); a container
//!    whose environment cannot be built ([`PlanInput::config_errors`]) waits in
//!    `CreateContainerConfigError` instead of starting;
//! 3. timed changes afterwards: exits, crash-loop restarts, completion (**Succeeded**/**Failed**);
//! 4. `deletionTimestamp` set → removed once its grace period (optionally capped) has passed,
//!    at once when the pod already finished.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Container, ContainerStatus, HostIP, Pod, PodIP, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::behaviour::{container_behaviour, pod_behaviour, ContainerBehaviour};
use super::command::{program, Program};
use super::containers::{self, advance, init_done, is_sidecar, not_started, stop_sidecar, PodRef};
use super::pod_objects::MountFailure;
use super::pod_status::{
    phase, set_condition, set_readiness, sort_conditions, INITIALIZED,
    POD_READY_TO_START_CONTAINERS, POD_SCHEDULED,
};
use super::time::{add, at_or_after, sub, until};
use crate::scheduler::predicates::is_terminal;

/// What the kubelet needs besides the pod to decide.
#[derive(Clone, Debug)]
pub struct PlanInput<'a> {
    /// The current time.
    pub now: Timestamp,
    /// The node's InternalIP, reported as `hostIP`.
    pub host_ip: &'a str,
    /// The IP for the pod when it has none yet.
    pub pod_ip: &'a str,
    /// How long a pod stays in ContainerCreating unless its annotation says otherwise.
    pub ready_delay: Duration,
    /// Upper bound on how long a deleted pod keeps running; `None` honours its grace period.
    pub termination_grace_cap: Option<Duration>,
    /// When this process wrote the Pending status, if it did: more precise than the stored
    /// `startTime`, which has whole seconds.
    pub sandbox_created_at: Option<Timestamp>,
    /// The pod's volumes that cannot be set up now; its sandbox is not created while there are any.
    pub mount_failures: &'a [MountFailure],
    /// Why containers (init or regular, by name) cannot be configured now: each waits in
    /// `CreateContainerConfigError` with the message instead of starting for the first time.
    pub config_errors: &'a BTreeMap<String, String>,
}

/// What to do with the pod now.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Nothing until the pod changes.
    Idle,
    /// Nothing now; decide again after this long.
    Wait(Duration),
    /// Write this status through `pods/{name}/status`; the resulting update triggers the next decision.
    UpdateStatus(Box<PodStatus>),
    /// Remove the pod: DELETE with `gracePeriodSeconds: 0` and a UID precondition.
    Delete,
}

/// Decides what the kubelet does with `pod`, which is bound to this node.
pub fn plan(pod: &Pod, input: &PlanInput<'_>) -> Action {
    if let Some(deletion) = &pod.metadata.deletion_timestamp {
        return plan_deletion(pod, deletion.0, input);
    }
    let Some(spec) = &pod.spec else {
        return Action::Idle;
    };
    if is_terminal(pod) {
        return Action::Idle;
    }
    let current = pod.status.clone().unwrap_or_default();
    let ready_delay = pod_behaviour(pod).ready_delay.unwrap_or(input.ready_delay);
    let started = current
        .container_statuses
        .iter()
        .flatten()
        .any(|c| !not_started(Some(c)));
    if !started {
        match sandbox_created(&current) {
            None if !input.mount_failures.is_empty() => {
                // The volume manager holds the pod before the runtime creates its sandbox.
                let status = sandbox_status(spec, current.clone(), input, false);
                return if status != current {
                    Action::UpdateStatus(Box::new(status))
                } else {
                    Action::Idle
                };
            }
            None if !ready_delay.is_zero() => {
                return Action::UpdateStatus(Box::new(sandbox_status(spec, current, input, true)));
            }
            None => {}
            Some(created) => {
                let since = input.sandbox_created_at.map_or(created, |t| t.max(created));
                let due = add(since, ready_delay);
                if !at_or_after(input.now, due) {
                    return Action::Wait(until(input.now, due));
                }
            }
        }
    }
    let (next_status, next_change) = running_status(pod, spec, &current, input);
    if next_status != current {
        Action::UpdateStatus(Box::new(next_status))
    } else {
        match next_change {
            Some(due) => Action::Wait(until(input.now, due)),
            None => Action::Idle,
        }
    }
}

/// Whether the kubelet still has to set `pod` up, and so needs what its volumes and
/// environment refer to: it is not finishing, and it has no sandbox yet or an init or regular
/// container that has not started for the first time.
pub fn awaits_setup(pod: &Pod) -> bool {
    if pod.metadata.deletion_timestamp.is_some() || is_terminal(pod) {
        return false;
    }
    let Some(spec) = &pod.spec else {
        return false;
    };
    let Some(status) = &pod.status else {
        return true;
    };
    if sandbox_created(status).is_none() {
        return true;
    }
    let statuses: BTreeMap<&str, &ContainerStatus> = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten())
        .map(|c| (c.name.as_str(), c))
        .collect();
    spec.init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .any(|c| not_started(statuses.get(c.name.as_str()).copied()))
}

fn plan_deletion(pod: &Pod, deletion: Timestamp, input: &PlanInput<'_>) -> Action {
    if is_terminal(pod) {
        return Action::Delete;
    }
    let grace = Duration::from_secs(
        u64::try_from(pod.metadata.deletion_grace_period_seconds.unwrap_or(0)).unwrap_or(0),
    );
    // deletionTimestamp = time of the DELETE request + grace period.
    let requested = sub(deletion, grace);
    let keep_running = input
        .termination_grace_cap
        .map_or(grace, |cap| cap.min(grace));
    let due = add(requested, keep_running);
    if at_or_after(input.now, due) {
        Action::Delete
    } else {
        Action::Wait(until(input.now, due))
    }
}

fn pod_ref(pod: &Pod) -> PodRef<'_> {
    PodRef {
        namespace: pod.metadata.namespace.as_deref().unwrap_or_default(),
        name: pod.metadata.name.as_deref().unwrap_or_default(),
        uid: pod.metadata.uid.as_deref().unwrap_or_default(),
    }
}

/// When the pod's sandbox was created: the time `PodReadyToStartContainers` last became True
/// (the `startTime` for a status without the condition's time), `None` while there is none.
pub fn sandbox_created(status: &PodStatus) -> Option<Timestamp> {
    let ready_to_start = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == POD_READY_TO_START_CONTAINERS && c.status == "True")?;
    ready_to_start
        .last_transition_time
        .as_ref()
        .or(status.start_time.as_ref())
        .map(|t| t.0)
}

/// Fills in what the node gives a pod before its sandbox: start time and host IP.
fn with_start(mut status: PodStatus, input: &PlanInput<'_>) -> PodStatus {
    if status.start_time.is_none() {
        status.start_time = Some(Time(input.now));
    }
    if status.host_ip.is_none() {
        status.host_ip = Some(input.host_ip.into());
        status.host_ips = Some(vec![HostIP {
            ip: input.host_ip.into(),
        }]);
    }
    status
}

/// Fills in what the sandbox gives a pod: start time, host and pod IPs.
fn with_sandbox(status: PodStatus, input: &PlanInput<'_>) -> PodStatus {
    let mut status = with_start(status, input);
    if status.pod_ip.is_none() {
        status.pod_ip = Some(input.pod_ip.into());
        status.pod_ips = Some(vec![PodIP {
            ip: input.pod_ip.into(),
        }]);
    }
    status
}

/// The Pending status of a pod whose containers wait: with its sandbox up (`sandbox`), or
/// without one while its volumes cannot be set up (`PodReadyToStartContainers` False, and no
/// `podIP` unless the pod uses the node's network, whose IP it has from the start).
fn sandbox_status(
    spec: &PodSpec,
    current: PodStatus,
    input: &PlanInput<'_>,
    sandbox: bool,
) -> PodStatus {
    let now = input.now;
    let host_network = spec.host_network == Some(true);
    let mut status = if sandbox || host_network {
        with_sandbox(current, input)
    } else {
        with_start(current, input)
    };
    status.phase = Some("Pending".into());
    let mut statuses: Vec<ContainerStatus> = spec
        .containers
        .iter()
        .map(|c| containers::waiting(c, containers::CONTAINER_CREATING))
        .collect();
    statuses.sort_by(|a, b| a.name.cmp(&b.name));
    let init: Vec<ContainerStatus> = spec
        .init_containers
        .iter()
        .flatten()
        .map(|c| containers::waiting(c, containers::POD_INITIALIZING))
        .collect();
    let mut conditions = status.conditions.take().unwrap_or_default();
    set_condition(
        &mut conditions,
        POD_READY_TO_START_CONTAINERS,
        sandbox,
        None,
        None,
        now,
    );
    if init.is_empty() {
        set_condition(&mut conditions, INITIALIZED, true, None, None, now);
    } else {
        let names: Vec<&str> = init.iter().map(|c| c.name.as_str()).collect();
        set_condition(
            &mut conditions,
            INITIALIZED,
            false,
            Some("ContainersNotInitialized"),
            Some(format!(
                "containers with incomplete status: [{}]",
                names.join(" ")
            )),
            now,
        );
    }
    set_readiness(&mut conditions, "Pending", &statuses, &[], now);
    set_condition(&mut conditions, POD_SCHEDULED, true, None, None, now);
    sort_conditions(&mut conditions);
    status.conditions = Some(conditions);
    status.container_statuses = Some(statuses);
    status.init_container_statuses = (!init.is_empty()).then_some(init);
    status
}

/// The status of `container` when it is due to start for the first time but its configuration
/// cannot be built: waiting in `CreateContainerConfigError` with the reason's message, as the
/// kubelet's `startContainer` leaves it (`ErrCreateContainerConfig`).
fn config_error(
    container: &Container,
    previous: Option<&ContainerStatus>,
    input: &PlanInput<'_>,
) -> Option<ContainerStatus> {
    if !not_started(previous) {
        return None;
    }
    let message = input.config_errors.get(&container.name)?;
    let mut status = containers::waiting(container, containers::CREATE_CONTAINER_CONFIG_ERROR);
    if let Some(waiting) = status.state.as_mut().and_then(|s| s.waiting.as_mut()) {
        waiting.message = Some(message.clone());
    }
    Some(status)
}

/// The status with every container moved forward to `now`, and when a container next changes on its own.
///
/// Init containers run first, in order: one that follows the container-command convention runs to
/// completion (restarted with back-off on failure unless `restartPolicy` is `Never`, which fails the
/// pod), any other completes at once, and a sidecar (`restartPolicy: Always`) starts and keeps
/// running while the next one starts. Regular containers start once all have completed.
fn running_status(
    pod: &Pod,
    spec: &PodSpec,
    current: &PodStatus,
    input: &PlanInput<'_>,
) -> (PodStatus, Option<Timestamp>) {
    let now = input.now;
    let pod_ref = pod_ref(pod);
    let behaviour = pod_behaviour(pod);
    let restart_policy = spec.restart_policy.as_deref().unwrap_or("Always");
    let by_name = |list: &Option<Vec<ContainerStatus>>| -> BTreeMap<String, ContainerStatus> {
        list.iter()
            .flatten()
            .map(|s| (s.name.clone(), s.clone()))
            .collect()
    };
    let old = by_name(&current.container_statuses);
    let old_init = by_name(&current.init_container_statuses);
    let mut next_change: Option<Timestamp> = None;
    let mut note = |next: Option<Timestamp>| {
        next_change = match (next_change, next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    };

    // Init containers, in order; `start_at` is when the next one may start.
    let mut init = Vec::new();
    let mut incomplete: Vec<String> = Vec::new();
    let mut init_failed = false;
    let mut start_at = now;
    for container in spec.init_containers.iter().flatten() {
        let previous = old_init.get(&container.name);
        if !incomplete.is_empty() {
            init.push(
                previous
                    .filter(|s| !not_started(Some(s)))
                    .cloned()
                    .unwrap_or_else(|| {
                        containers::waiting(container, containers::POD_INITIALIZING)
                    }),
            );
            incomplete.push(container.name.clone());
            continue;
        }
        if let Some(status) = config_error(container, previous, input) {
            incomplete.push(container.name.clone());
            init.push(status);
            continue;
        }
        // Init containers follow the command convention only, not the pod's annotations.
        let run = match program(container) {
            Program::Runs(run) => Some(run),
            Program::UntilStopped => None,
        };
        let sidecar = is_sidecar(container);
        let status = match (run, sidecar) {
            (None, _) => init_done(container, previous, pod_ref, start_at),
            (Some(run), _) => {
                let b = ContainerBehaviour {
                    run: Some(run),
                    ..ContainerBehaviour::default()
                };
                // Failed init containers restart unless the pod never restarts anything.
                let policy = match (sidecar, restart_policy) {
                    (true, _) => "Always",
                    (false, "Never") => "Never",
                    (false, _) => "OnFailure",
                };
                let (status, next) =
                    advance(container, previous, &b, policy, pod_ref, start_at, now);
                note(next);
                status
            }
        };
        let state = status.state.clone().unwrap_or_default();
        if sidecar {
            // Started once it has run; the next init container does not wait for it to finish.
            if state.running.is_none() && not_started(Some(&status)) {
                incomplete.push(container.name.clone());
            }
        } else {
            match &state.terminated {
                Some(t) if t.exit_code == 0 => {
                    start_at = t.finished_at.as_ref().map_or(now, |f| f.0.min(now));
                }
                Some(_) => {
                    init_failed = true;
                    incomplete.push(container.name.clone());
                }
                None => incomplete.push(container.name.clone()),
            }
        }
        init.push(status);
    }
    let initialized = incomplete.is_empty();

    let mut statuses = Vec::with_capacity(spec.containers.len());
    for container in &spec.containers {
        let previous = old.get(&container.name);
        if !initialized {
            statuses.push(
                previous
                    .filter(|s| !not_started(Some(s)))
                    .cloned()
                    .unwrap_or_else(|| {
                        containers::waiting(container, containers::POD_INITIALIZING)
                    }),
            );
            continue;
        }
        if let Some(status) = config_error(container, previous, input) {
            statuses.push(status);
            continue;
        }
        let b = container_behaviour(&behaviour, container);
        let (status, next) = advance(
            container,
            previous,
            &b,
            restart_policy,
            pod_ref,
            start_at,
            now,
        );
        statuses.push(status);
        note(next);
    }
    statuses.sort_by(|a, b| a.name.cmp(&b.name));

    let phase = if init_failed && restart_policy == "Never" {
        "Failed"
    } else if !initialized {
        "Pending"
    } else {
        phase(restart_policy, &statuses)
    };
    let finished = matches!(phase, "Succeeded" | "Failed");
    if finished {
        // The pod is done: the kubelet stops its sidecars and tears the sandbox down.
        init = init.into_iter().map(|s| stop_sidecar(s, now)).collect();
        next_change = None;
    }

    let mut status = with_sandbox(current.clone(), input);
    status.phase = Some(phase.into());
    let mut conditions = status.conditions.take().unwrap_or_default();
    set_condition(
        &mut conditions,
        POD_READY_TO_START_CONTAINERS,
        !finished,
        None,
        None,
        now,
    );
    if initialized {
        set_condition(&mut conditions, INITIALIZED, true, None, None, now);
    } else {
        set_condition(
            &mut conditions,
            INITIALIZED,
            false,
            Some("ContainersNotInitialized"),
            Some(format!(
                "containers with incomplete status: [{}]",
                incomplete.join(" ")
            )),
            now,
        );
    }
    let gates: Vec<String> = spec
        .readiness_gates
        .iter()
        .flatten()
        .map(|g| g.condition_type.clone())
        .collect();
    // Sidecars count for readiness as regular containers do.
    let sidecar_names: Vec<&str> = spec
        .init_containers
        .iter()
        .flatten()
        .filter(|c| is_sidecar(c))
        .map(|c| c.name.as_str())
        .collect();
    let readiness: Vec<ContainerStatus> = init
        .iter()
        .filter(|s| sidecar_names.contains(&s.name.as_str()))
        .chain(statuses.iter())
        .cloned()
        .collect();
    set_readiness(&mut conditions, phase, &readiness, &gates, now);
    set_condition(&mut conditions, POD_SCHEDULED, true, None, None, now);
    sort_conditions(&mut conditions);
    status.conditions = Some(conditions);
    status.container_statuses = Some(statuses);
    status.init_container_statuses = (!init.is_empty()).then_some(init);
    (status, next_change)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubelet::behaviour::{
        COMPLETE_AFTER_ANNOTATION, FAIL_ANNOTATION, NEVER_READY_ANNOTATION, READY_DELAY_ANNOTATION,
    };
    use crate::kubelet::pod_status::{CONTAINERS_READY, READY};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn t(ms: i64) -> Timestamp {
        Timestamp::from_millisecond(1_700_000_000_000 + ms).expect("valid")
    }

    fn pod(annotations: &[(&str, &str)], restart_policy: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("web-1".into()),
                namespace: Some("default".into()),
                uid: Some("uid-1".into()),
                annotations: Some(
                    annotations
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: Some("rkcm-node-1".into()),
                restart_policy: Some(restart_policy.into()),
                containers: vec![Container {
                    name: "app".into(),
                    image: Some("nginx:1.27".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some("Pending".into()),
                ..Default::default()
            }),
        }
    }

    fn input(now: Timestamp) -> PlanInput<'static> {
        PlanInput {
            now,
            host_ip: "10.0.0.1",
            pod_ip: "10.244.1.2",
            ready_delay: Duration::from_millis(500),
            termination_grace_cap: None,
            sandbox_created_at: None,
            mount_failures: &[],
            config_errors: &NO_CONFIG_ERRORS,
        }
    }

    static NO_CONFIG_ERRORS: BTreeMap<String, String> = BTreeMap::new();

    /// Applies `plan` as the simulated kubelet would, returning the action taken.
    fn step(pod: &mut Pod, input: &PlanInput<'_>) -> Action {
        let action = plan(pod, input);
        if let Action::UpdateStatus(status) = &action {
            pod.status = Some((**status).clone());
        }
        action
    }

    fn condition(pod: &Pod, type_: &str) -> String {
        pod.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == type_))
            .map(|c| c.status.clone())
            .unwrap_or_default()
    }

    fn phase_of(pod: &Pod) -> &str {
        pod.status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("")
    }

    #[test]
    fn a_bound_pod_goes_pending_then_running_and_ready_after_the_delay() {
        let mut p = pod(&[], "Always");
        assert!(matches!(
            step(&mut p, &input(t(0))),
            Action::UpdateStatus(_)
        ));
        assert_eq!(phase_of(&p), "Pending");
        let status = p.status.clone().unwrap();
        assert_eq!(status.pod_ip.as_deref(), Some("10.244.1.2"));
        assert_eq!(status.host_ip.as_deref(), Some("10.0.0.1"));
        assert!(status.start_time.is_some());
        assert_eq!(condition(&p, READY), "False");
        assert_eq!(condition(&p, POD_SCHEDULED), "True");

        let mut early = input(t(200));
        early.sandbox_created_at = Some(t(0));
        assert_eq!(
            step(&mut p, &early),
            Action::Wait(Duration::from_millis(300))
        );

        let mut later = input(t(500));
        later.sandbox_created_at = Some(t(0));
        assert!(matches!(step(&mut p, &later), Action::UpdateStatus(_)));
        assert_eq!(phase_of(&p), "Running");
        assert_eq!(condition(&p, READY), "True");
        assert_eq!(condition(&p, CONTAINERS_READY), "True");
        assert_eq!(condition(&p, INITIALIZED), "True");
        assert_eq!(step(&mut p, &input(t(600))), Action::Idle);
    }

    #[test]
    fn zero_ready_delay_goes_straight_to_running() {
        let mut p = pod(&[(READY_DELAY_ANNOTATION, "0s")], "Always");
        step(&mut p, &input(t(0)));
        assert_eq!(phase_of(&p), "Running");
        assert_eq!(condition(&p, READY), "True");
    }

    #[test]
    fn never_ready_pods_run_without_becoming_ready_until_the_annotation_goes() {
        let mut p = pod(
            &[
                (NEVER_READY_ANNOTATION, "true"),
                (READY_DELAY_ANNOTATION, "0"),
            ],
            "Always",
        );
        step(&mut p, &input(t(0)));
        assert_eq!(phase_of(&p), "Running");
        assert_eq!(condition(&p, READY), "False");
        assert_eq!(step(&mut p, &input(t(60_000))), Action::Idle);
        p.metadata.annotations = None;
        step(&mut p, &input(t(61_000)));
        assert_eq!(condition(&p, READY), "True");
    }

    #[test]
    fn failing_pods_fail_under_never_and_crash_loop_under_always() {
        let mut p = pod(
            &[(FAIL_ANNOTATION, "true"), (READY_DELAY_ANNOTATION, "0")],
            "Never",
        );
        step(&mut p, &input(t(0)));
        assert_eq!(phase_of(&p), "Failed");
        assert_eq!(step(&mut p, &input(t(1000))), Action::Idle);

        let mut p = pod(
            &[(FAIL_ANNOTATION, "true"), (READY_DELAY_ANNOTATION, "0")],
            "Always",
        );
        step(&mut p, &input(t(0)));
        assert_eq!(phase_of(&p), "Running");
        assert_eq!(condition(&p, READY), "False");
        assert_eq!(
            step(&mut p, &input(t(1000))),
            Action::Wait(Duration::from_secs(9))
        );
        step(&mut p, &input(t(10_000)));
        let restarts = p
            .status
            .as_ref()
            .unwrap()
            .container_statuses
            .as_ref()
            .unwrap()[0]
            .restart_count;
        assert_eq!(restarts, 1);
    }

    #[test]
    fn completing_pods_succeed() {
        let mut p = pod(
            &[
                (COMPLETE_AFTER_ANNOTATION, "2s"),
                (READY_DELAY_ANNOTATION, "0"),
            ],
            "Never",
        );
        step(&mut p, &input(t(0)));
        assert_eq!(phase_of(&p), "Running");
        assert_eq!(
            step(&mut p, &input(t(1000))),
            Action::Wait(Duration::from_secs(1))
        );
        step(&mut p, &input(t(2000)));
        assert_eq!(phase_of(&p), "Succeeded");
        assert_eq!(condition(&p, READY), "False");
    }

    #[test]
    fn deleted_pods_are_removed_after_their_grace_period_or_the_cap() {
        let mut p = pod(&[], "Always");
        p.metadata.deletion_grace_period_seconds = Some(30);
        p.metadata.deletion_timestamp = Some(Time(t(30_000)));
        assert_eq!(
            plan(&p, &input(t(0))),
            Action::Wait(Duration::from_secs(30))
        );
        assert_eq!(plan(&p, &input(t(30_000))), Action::Delete);
        let mut capped = input(t(0));
        capped.termination_grace_cap = Some(Duration::from_secs(2));
        assert_eq!(plan(&p, &capped), Action::Wait(Duration::from_secs(2)));

        p.metadata.deletion_grace_period_seconds = Some(0);
        p.metadata.deletion_timestamp = Some(Time(t(0)));
        assert_eq!(plan(&p, &input(t(0))), Action::Delete);
    }

    #[test]
    fn finished_pods_are_removed_at_once_when_deleted() {
        let mut p = pod(&[], "Never");
        p.status.as_mut().unwrap().phase = Some("Succeeded".into());
        p.metadata.deletion_grace_period_seconds = Some(30);
        p.metadata.deletion_timestamp = Some(Time(t(30_000)));
        assert_eq!(plan(&p, &input(t(0))), Action::Delete);
    }

    fn with_command(mut p: Pod, script: &str) -> Pod {
        let spec = p.spec.as_mut().unwrap();
        spec.containers[0].command = Some(vec!["sh".into(), "-c".into(), script.into()]);
        p
    }

    fn container_status(p: &Pod, init: bool, name: &str) -> ContainerStatus {
        let status = p.status.as_ref().unwrap();
        let list = if init {
            &status.init_container_statuses
        } else {
            &status.container_statuses
        };
        list.iter()
            .flatten()
            .find(|c| c.name == name)
            .cloned()
            .unwrap()
    }

    fn exit_code(s: &ContainerStatus) -> Option<i32> {
        Some(s.state.as_ref()?.terminated.as_ref()?.exit_code)
    }

    fn no_delay() -> Vec<(&'static str, &'static str)> {
        vec![(READY_DELAY_ANNOTATION, "0")]
    }

    #[test]
    fn a_command_pod_under_never_ends_by_its_exit_code() {
        for (script, phase, code, reason) in [
            ("sleep 2", "Succeeded", 0, "Completed"),
            ("sleep 2; exit 3", "Failed", 3, "Error"),
        ] {
            let mut p = with_command(pod(&no_delay(), "Never"), script);
            step(&mut p, &input(t(0)));
            assert_eq!(phase_of(&p), "Running");
            assert_eq!(condition(&p, READY), "True");
            assert_eq!(
                step(&mut p, &input(t(1000))),
                Action::Wait(Duration::from_secs(1))
            );
            step(&mut p, &input(t(2000)));
            assert_eq!(phase_of(&p), phase, "{script}");
            let app = container_status(&p, false, "app");
            let terminated = app.state.unwrap().terminated.unwrap();
            assert_eq!(
                (terminated.exit_code, terminated.reason.as_deref()),
                (code, Some(reason))
            );
            assert_eq!(condition(&p, READY), "False");
            assert_eq!(condition(&p, CONTAINERS_READY), "False");
            assert_eq!(condition(&p, POD_READY_TO_START_CONTAINERS), "False");
            assert_eq!(step(&mut p, &input(t(9000))), Action::Idle);
        }
    }

    #[test]
    fn on_failure_restarts_failures_until_success_and_always_restarts_everything() {
        let mut p = with_command(pod(&no_delay(), "OnFailure"), "exit 1");
        step(&mut p, &input(t(0)));
        assert_eq!(phase_of(&p), "Running");
        let app = container_status(&p, false, "app");
        assert_eq!(
            app.state.unwrap().waiting.unwrap().reason.as_deref(),
            Some(containers::CRASH_LOOP_BACK_OFF)
        );
        assert_eq!(
            step(&mut p, &input(t(0))),
            Action::Wait(Duration::from_secs(10))
        );
        step(&mut p, &input(t(10_000)));
        assert_eq!(container_status(&p, false, "app").restart_count, 1);

        let mut p = with_command(pod(&no_delay(), "OnFailure"), "true");
        step(&mut p, &input(t(0)));
        assert_eq!(phase_of(&p), "Succeeded");

        let mut p = with_command(pod(&no_delay(), "Always"), "true");
        step(&mut p, &input(t(0)));
        assert_eq!(phase_of(&p), "Running");
        let app = container_status(&p, false, "app");
        assert_eq!(
            app.last_state
                .unwrap()
                .terminated
                .unwrap()
                .reason
                .as_deref(),
            Some("Completed")
        );
        assert_eq!(condition(&p, READY), "False");
    }

    fn with_init(mut p: Pod, inits: &[(&str, Option<&str>, bool)]) -> Pod {
        p.spec.as_mut().unwrap().init_containers = Some(
            inits
                .iter()
                .map(|(name, script, sidecar)| Container {
                    name: (*name).into(),
                    image: Some("busybox".into()),
                    command: script.map(|s| vec!["sh".into(), "-c".into(), s.into()]),
                    restart_policy: sidecar.then(|| "Always".into()),
                    ..Default::default()
                })
                .collect(),
        );
        p
    }

    #[test]
    fn init_containers_run_in_order_before_the_containers() {
        let p = pod(&no_delay(), "Always");
        let mut p = with_init(
            p,
            &[
                ("setup", None, false),
                ("sidecar", None, true),
                ("migrate", Some("sleep 3"), false),
                ("check", Some("sleep 2"), false),
            ],
        );
        step(&mut p, &input(t(0)));
        assert_eq!(phase_of(&p), "Pending");
        assert_eq!(exit_code(&container_status(&p, true, "setup")), Some(0));
        assert!(container_status(&p, true, "sidecar")
            .state
            .unwrap()
            .running
            .is_some());
        assert!(container_status(&p, true, "migrate")
            .state
            .unwrap()
            .running
            .is_some());
        assert!(container_status(&p, true, "check")
            .state
            .unwrap()
            .waiting
            .is_some());
        assert_eq!(
            container_status(&p, false, "app")
                .state
                .unwrap()
                .waiting
                .unwrap()
                .reason
                .as_deref(),
            Some(containers::POD_INITIALIZING)
        );
        let initialized = p
            .status
            .as_ref()
            .unwrap()
            .conditions
            .as_ref()
            .unwrap()
            .iter()
            .find(|c| c.type_ == INITIALIZED)
            .cloned()
            .unwrap();
        assert_eq!(initialized.status, "False");
        assert_eq!(
            initialized.message.as_deref(),
            Some("containers with incomplete status: [migrate check]")
        );
        assert_eq!(
            step(&mut p, &input(t(0))),
            Action::Wait(Duration::from_secs(3))
        );
        // A late sync: migrate ended at 3s, check ran from 3s to 5s, app started at 5s.
        step(&mut p, &input(t(6000)));
        assert_eq!(phase_of(&p), "Running");
        let check = container_status(&p, true, "check")
            .state
            .unwrap()
            .terminated
            .unwrap();
        assert_eq!(check.started_at, Some(Time(t(3000))));
        assert_eq!(check.finished_at, Some(Time(t(5000))));
        let app = container_status(&p, false, "app")
            .state
            .unwrap()
            .running
            .unwrap();
        assert_eq!(app.started_at, Some(Time(t(5000))));
        assert_eq!(condition(&p, INITIALIZED), "True");
        assert_eq!(condition(&p, READY), "True");
    }

    #[test]
    fn a_failing_init_container_fails_a_never_pod_and_is_retried_otherwise() {
        let mut p = with_init(
            pod(&no_delay(), "Never"),
            &[("init", Some("exit 2"), false)],
        );
        step(&mut p, &input(t(0)));
        assert_eq!(phase_of(&p), "Failed");
        assert_eq!(exit_code(&container_status(&p, true, "init")), Some(2));

        let mut p = with_init(
            pod(&no_delay(), "Always"),
            &[("init", Some("exit 2"), false)],
        );
        step(&mut p, &input(t(0)));
        assert_eq!(phase_of(&p), "Pending");
        let init = container_status(&p, true, "init");
        assert_eq!(
            init.state.unwrap().waiting.unwrap().reason.as_deref(),
            Some(containers::CRASH_LOOP_BACK_OFF)
        );
        step(&mut p, &input(t(10_000)));
        assert_eq!(container_status(&p, true, "init").restart_count, 1);
    }

    #[test]
    fn sidecars_stop_when_the_pod_completes() {
        let mut p = with_init(
            with_command(pod(&no_delay(), "Never"), "sleep 1"),
            &[("proxy", None, true)],
        );
        step(&mut p, &input(t(0)));
        assert_eq!(phase_of(&p), "Running");
        step(&mut p, &input(t(1000)));
        assert_eq!(phase_of(&p), "Succeeded");
        assert_eq!(exit_code(&container_status(&p, true, "proxy")), Some(0));
    }

    fn waiting_of(p: &Pod, init: bool, name: &str) -> (Option<String>, Option<String>) {
        let waiting = container_status(p, init, name)
            .state
            .and_then(|s| s.waiting)
            .unwrap_or_default();
        (waiting.reason, waiting.message)
    }

    fn mount_failure() -> Vec<MountFailure> {
        vec![MountFailure {
            volume: "certs".into(),
            error: r#"secret "webhook-cert" not found"#.into(),
        }]
    }

    #[test]
    fn a_pod_whose_volumes_cannot_be_set_up_waits_without_a_sandbox_until_they_can() {
        let mut p = pod(&[], "Always");
        let failures = mount_failure();
        let mut held = input(t(0));
        held.mount_failures = &failures;
        assert!(matches!(step(&mut p, &held), Action::UpdateStatus(_)));
        assert_eq!(phase_of(&p), "Pending");
        let status = p.status.clone().unwrap();
        assert!(status.start_time.is_some());
        assert_eq!(status.host_ip.as_deref(), Some("10.0.0.1"));
        assert_eq!(status.pod_ip, None, "no sandbox, no pod IP");
        assert_eq!(condition(&p, POD_READY_TO_START_CONTAINERS), "False");
        assert_eq!(condition(&p, READY), "False");
        assert_eq!(
            waiting_of(&p, false, "app").0.as_deref(),
            Some(containers::CONTAINER_CREATING)
        );
        assert!(awaits_setup(&p));
        // Still missing, later: nothing to write, however long it takes.
        held.now = t(60_000);
        assert_eq!(step(&mut p, &held), Action::Idle);
        assert_eq!(phase_of(&p), "Pending");

        // The object appeared: the sandbox comes up, then the containers after the delay.
        assert!(matches!(
            step(&mut p, &input(t(61_000))),
            Action::UpdateStatus(_)
        ));
        assert_eq!(condition(&p, POD_READY_TO_START_CONTAINERS), "True");
        assert_eq!(
            p.status.as_ref().unwrap().pod_ip.as_deref(),
            Some("10.244.1.2")
        );
        assert_eq!(
            step(&mut p, &input(t(61_200))),
            Action::Wait(Duration::from_millis(300))
        );
        step(&mut p, &input(t(61_500)));
        assert_eq!(phase_of(&p), "Running");
        assert_eq!(condition(&p, READY), "True");
        assert!(!awaits_setup(&p));
    }

    #[test]
    fn mount_failures_do_not_matter_once_the_sandbox_is_up() {
        let mut p = pod(&[], "Always");
        step(&mut p, &input(t(0)));
        let failures = mount_failure();
        let mut later = input(t(500));
        later.mount_failures = &failures;
        step(&mut p, &later);
        assert_eq!(phase_of(&p), "Running");
    }

    #[test]
    fn a_container_whose_environment_cannot_be_built_waits_in_create_container_config_error() {
        let mut p = with_init(
            pod(&no_delay(), "Always"),
            &[("setup", None, false), ("needs-env", None, false)],
        );
        let mut errors = BTreeMap::new();
        errors.insert(
            "app".to_string(),
            "couldn't find key k in Secret default/s".to_string(),
        );
        let mut held = input(t(0));
        held.config_errors = &errors;
        step(&mut p, &held);
        // The init containers run; the container does not start.
        assert_eq!(exit_code(&container_status(&p, true, "needs-env")), Some(0));
        assert_eq!(phase_of(&p), "Pending");
        assert_eq!(condition(&p, POD_READY_TO_START_CONTAINERS), "True");
        assert_eq!(condition(&p, INITIALIZED), "True");
        assert_eq!(condition(&p, READY), "False");
        assert_eq!(
            waiting_of(&p, false, "app"),
            (
                Some(containers::CREATE_CONTAINER_CONFIG_ERROR.to_string()),
                Some("couldn't find key k in Secret default/s".to_string())
            )
        );
        assert!(awaits_setup(&p));
        held.now = t(30_000);
        assert_eq!(step(&mut p, &held), Action::Idle);

        // The key is there now: it starts.
        step(&mut p, &input(t(31_000)));
        assert_eq!(phase_of(&p), "Running");
        assert_eq!(condition(&p, READY), "True");
        assert_eq!(container_status(&p, false, "app").restart_count, 0);
    }

    #[test]
    fn an_init_container_that_cannot_be_configured_holds_the_ones_after_it() {
        let mut p = with_init(
            pod(&no_delay(), "Always"),
            &[("first", None, false), ("second", None, false)],
        );
        let mut errors = BTreeMap::new();
        errors.insert("first".to_string(), r#"secret "s" not found"#.to_string());
        let mut held = input(t(0));
        held.config_errors = &errors;
        step(&mut p, &held);
        assert_eq!(phase_of(&p), "Pending");
        assert_eq!(
            waiting_of(&p, true, "first").0.as_deref(),
            Some(containers::CREATE_CONTAINER_CONFIG_ERROR)
        );
        assert_eq!(
            waiting_of(&p, true, "second").0.as_deref(),
            Some(containers::POD_INITIALIZING)
        );
        assert_eq!(
            waiting_of(&p, false, "app").0.as_deref(),
            Some(containers::POD_INITIALIZING)
        );
        assert_eq!(condition(&p, INITIALIZED), "False");
        step(&mut p, &input(t(1000)));
        assert_eq!(phase_of(&p), "Running");
    }
}
