//! Pod phase and conditions derived from container statuses, as the kubelet computes them.
//!
//! Mirrors `getPhase` in `pkg/kubelet/kubelet_pods.go` and `pkg/kubelet/status/generate.go`.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ContainerStatus, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// Condition type: the sandbox is up and containers may start.
pub const POD_READY_TO_START_CONTAINERS: &str = "PodReadyToStartContainers";
/// Condition type: all init containers completed.
pub const INITIALIZED: &str = "Initialized";
/// Condition type: all containers are ready.
pub const CONTAINERS_READY: &str = "ContainersReady";
/// Condition type: the pod can serve (all containers ready, no readiness gates simulated).
pub const READY: &str = "Ready";
/// Condition type: the pod is bound to a node.
pub const POD_SCHEDULED: &str = "PodScheduled";

/// The pod phase for these regular-container statuses under `restart_policy`.
pub fn phase(restart_policy: &str, statuses: &[ContainerStatus]) -> &'static str {
    let (mut running, mut waiting, mut stopped, mut succeeded, mut unknown) = (0, 0, 0, 0, 0);
    for status in statuses {
        let state = status.state.clone().unwrap_or_default();
        if state.running.is_some() {
            running += 1;
        } else if let Some(terminated) = &state.terminated {
            stopped += 1;
            if terminated.exit_code == 0 {
                succeeded += 1;
            }
        } else if state.waiting.is_some() {
            if status
                .last_state
                .as_ref()
                .is_some_and(|s| s.terminated.is_some())
            {
                stopped += 1;
            } else {
                waiting += 1;
            }
        } else {
            unknown += 1;
        }
    }
    if waiting > 0 {
        "Pending"
    } else if running > 0 && unknown == 0 {
        "Running"
    } else if running == 0 && stopped > 0 && unknown == 0 {
        if restart_policy == "Always" {
            "Running"
        } else if stopped == succeeded {
            "Succeeded"
        } else if restart_policy == "Never" {
            "Failed"
        } else {
            "Running"
        }
    } else {
        "Pending"
    }
}

/// Sets condition `type_` in `conditions`, keeping `lastTransitionTime` when the status did not change
/// and leaving conditions of other types (such as `DisruptionTarget`) alone.
pub fn set_condition(
    conditions: &mut Vec<PodCondition>,
    type_: &str,
    status: bool,
    reason: Option<&str>,
    message: Option<String>,
    now: Timestamp,
) {
    let status = if status { "True" } else { "False" };
    let transition = conditions
        .iter()
        .find(|c| c.type_ == type_ && c.status == status)
        .and_then(|c| c.last_transition_time.clone())
        .unwrap_or(Time(now));
    let condition = PodCondition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.map(Into::into),
        message,
        last_transition_time: Some(transition),
        last_probe_time: None,
        observed_generation: None,
    };
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) => *existing = condition,
        None => conditions.push(condition),
    }
}

/// Sets `ContainersReady` from the container statuses and the phase, and `Ready` from that and the
/// readiness gates (`gates`: the `conditionType`s of `spec.readinessGates`, whose conditions some
/// other controller sets), as `generateContainersReadyCondition` and `generatePodReadyCondition` do.
pub fn set_readiness(
    conditions: &mut Vec<PodCondition>,
    phase: &str,
    statuses: &[ContainerStatus],
    gates: &[String],
    now: Timestamp,
) {
    let unready: Vec<&str> = statuses
        .iter()
        .filter(|s| !s.ready)
        .map(|s| s.name.as_str())
        .collect();
    let (ready, reason, message) = if phase == "Succeeded" {
        (false, Some("PodCompleted"), None)
    } else if phase == "Failed" {
        // The containers may still be stopping: a failed pod is never ready.
        (false, Some("PodFailed"), None)
    } else if unready.is_empty() {
        (true, None, None)
    } else {
        (
            false,
            Some("ContainersNotReady"),
            Some(format!(
                "containers with unready status: [{}]",
                unready.join(" ")
            )),
        )
    };
    set_condition(
        conditions,
        CONTAINERS_READY,
        ready,
        reason,
        message.clone(),
        now,
    );
    if !ready {
        set_condition(conditions, READY, false, reason, message, now);
        return;
    }
    let unmet: Vec<String> = gates
        .iter()
        .filter_map(|gate| match conditions.iter().find(|c| &c.type_ == gate) {
            None => Some(format!(
                "corresponding condition of pod readiness gate \"{gate}\" does not exist."
            )),
            Some(c) if c.status != "True" => Some(format!(
                "the status of pod readiness gate \"{gate}\" is not \"True\", but {}",
                c.status
            )),
            Some(_) => None,
        })
        .collect();
    if unmet.is_empty() {
        set_condition(conditions, READY, true, None, None, now);
    } else {
        set_condition(
            conditions,
            READY,
            false,
            Some("ReadinessGatesNotReady"),
            Some(unmet.join(", ")),
            now,
        );
    }
}

/// Orders conditions as the kubelet reports them, foreign ones last.
pub fn sort_conditions(conditions: &mut [PodCondition]) {
    const ORDER: [&str; 5] = [
        POD_READY_TO_START_CONTAINERS,
        INITIALIZED,
        READY,
        CONTAINERS_READY,
        POD_SCHEDULED,
    ];
    conditions.sort_by_key(|c| {
        ORDER
            .iter()
            .position(|t| *t == c.type_)
            .unwrap_or(ORDER.len())
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting,
    };
    use rkcm_runtime::testing::terminated_container_status as terminated;

    fn running() -> ContainerStatus {
        ContainerStatus {
            state: Some(ContainerState {
                running: Some(ContainerStateRunning::default()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn crash_looping() -> ContainerStatus {
        ContainerStatus {
            state: Some(ContainerState {
                waiting: Some(ContainerStateWaiting {
                    reason: Some("CrashLoopBackOff".into()),
                    message: None,
                }),
                ..Default::default()
            }),
            last_state: Some(ContainerState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: 1,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn phase_follows_the_kubelet_rules() {
        assert_eq!(phase("Always", &[running()]), "Running");
        assert_eq!(phase("Always", &[running(), terminated(0)]), "Running");
        assert_eq!(phase("Never", &[terminated(0), terminated(0)]), "Succeeded");
        assert_eq!(phase("Never", &[terminated(0), terminated(1)]), "Failed");
        assert_eq!(phase("OnFailure", &[terminated(0)]), "Succeeded");
        assert_eq!(phase("Always", &[crash_looping()]), "Running");
        assert_eq!(phase("OnFailure", &[crash_looping()]), "Running");
        assert_eq!(phase("Always", &[]), "Pending");
    }

    #[test]
    fn conditions_keep_their_transition_time_while_unchanged() {
        let t0 = Timestamp::from_second(1_700_000_000).unwrap();
        let t1 = Timestamp::from_second(1_700_000_100).unwrap();
        let mut conditions = Vec::new();
        set_condition(
            &mut conditions,
            READY,
            false,
            Some("ContainersNotReady"),
            None,
            t0,
        );
        set_condition(
            &mut conditions,
            READY,
            false,
            Some("ContainersNotReady"),
            None,
            t1,
        );
        assert_eq!(conditions[0].last_transition_time, Some(Time(t0)));
        set_condition(&mut conditions, READY, true, None, None, t1);
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].last_transition_time, Some(Time(t1)));
    }

    #[test]
    fn readiness_gates_hold_ready_back_until_their_condition_is_true() {
        let t0 = Timestamp::from_second(1_700_000_000).unwrap();
        let gates = ["example.com/lb".to_string()];
        let mut ok = running();
        ok.name = "a".into();
        ok.ready = true;
        let statuses = [ok];
        let mut conditions = Vec::new();
        set_readiness(&mut conditions, "Running", &statuses, &gates, t0);
        let ready = conditions.iter().find(|c| c.type_ == READY).unwrap();
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_deref()),
            ("False", Some("ReadinessGatesNotReady"))
        );
        let before = conditions.clone();
        set_readiness(
            &mut conditions,
            "Running",
            &statuses,
            &gates,
            t0 + jiff::SignedDuration::from_secs(5),
        );
        assert_eq!(conditions, before, "no change while the gate stays unmet");
        set_condition(&mut conditions, "example.com/lb", true, None, None, t0);
        set_readiness(&mut conditions, "Running", &statuses, &gates, t0);
        assert!(conditions
            .iter()
            .any(|c| c.type_ == READY && c.status == "True"));
    }

    #[test]
    fn finished_pods_are_not_ready_with_the_kubelet_reasons() {
        let t0 = Timestamp::from_second(1_700_000_000).unwrap();
        for (phase, reason) in [("Succeeded", "PodCompleted"), ("Failed", "PodFailed")] {
            let mut conditions = Vec::new();
            set_readiness(&mut conditions, phase, &[terminated(0)], &[], t0);
            for type_ in [CONTAINERS_READY, READY] {
                let c = conditions.iter().find(|c| c.type_ == type_).unwrap();
                assert_eq!(
                    (c.status.as_str(), c.reason.as_deref()),
                    ("False", Some(reason))
                );
            }
        }
    }

    #[test]
    fn readiness_names_the_unready_containers() {
        let t0 = Timestamp::from_second(1_700_000_000).unwrap();
        let mut a = running();
        a.name = "a".into();
        let mut b = running();
        b.name = "b".into();
        b.ready = true;
        let mut conditions = Vec::new();
        set_readiness(&mut conditions, "Running", &[a, b], &[], t0);
        let ready = conditions.iter().find(|c| c.type_ == READY).unwrap();
        assert_eq!(ready.status, "False");
        assert_eq!(
            ready.message.as_deref(),
            Some("containers with unready status: [a]")
        );
    }
}
