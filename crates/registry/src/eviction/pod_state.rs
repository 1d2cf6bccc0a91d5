//! What the state of a pod says about its eviction: whether its budget matters, whether a
//! delete must pin its resourceVersion, and the `DisruptionTarget` condition an eviction adds.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use rkcm_apimachinery::poddisruptionbudget::to_seconds;

/// The pod condition type an eviction sets (`v1.DisruptionTarget`).
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
/// The reason of the condition an eviction sets.
pub const EVICTION_BY_EVICTION_API: &str = "EvictionByEvictionAPI";

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

/// Whether `pod` may be deleted without consulting its budget (`canIgnorePDB`): it is terminal
/// (its disruption already happened), still Pending, or already being deleted.
pub fn can_ignore_pdb(pod: &Pod) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed" | "Pending")
        || pod.metadata.deletion_timestamp.is_some()
}

/// Whether deleting `pod` must carry its resourceVersion as a precondition
/// (`shouldEnforceResourceVersion`), so that it cannot become ready between the check and the
/// delete; terminal and terminating pods need not.
pub fn should_enforce_resource_version(pod: &Pod) -> bool {
    !(matches!(phase(pod), "Succeeded" | "Failed") || pod.metadata.deletion_timestamp.is_some())
}

/// Whether the pod's `Ready` condition is `True` (`podutil.IsPodReady`).
pub fn is_pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Sets the condition `DisruptionTarget=True` (reason `EvictionByEvictionAPI`, message
/// `Eviction API: evicting`) on `pod` as `UpdatePodCondition` does: the condition is replaced
/// (a probe time dropped), its transition time moves only when the status changes. Returns
/// whether the pod changed.
pub fn add_disruption_target(pod: &mut Pod, now: Timestamp) -> bool {
    let wanted = PodCondition {
        type_: DISRUPTION_TARGET.to_string(),
        status: "True".to_string(),
        reason: Some(EVICTION_BY_EVICTION_API.to_string()),
        message: Some("Eviction API: evicting".to_string()),
        last_transition_time: Some(Time(to_seconds(now))),
        ..PodCondition::default()
    };
    let conditions = pod
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new);
    match conditions.iter_mut().find(|c| c.type_ == DISRUPTION_TARGET) {
        None => {
            conditions.push(wanted);
            true
        }
        Some(existing) => {
            let mut wanted = wanted;
            if existing.status == wanted.status {
                wanted.last_transition_time = existing.last_transition_time.clone();
            }
            let changed = *existing != wanted;
            *existing = wanted;
            changed
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodStatus;

    fn pod(phase: &str, ready: bool, deleting: bool) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.name = Some("p".into());
        if deleting {
            pod.metadata.deletion_timestamp = Some(Time(Timestamp::UNIX_EPOCH));
        }
        pod.status = Some(PodStatus {
            phase: Some(phase.into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..PodCondition::default()
            }]),
            ..PodStatus::default()
        });
        pod
    }

    /// The pod states of eviction_test.go `TestEvictionIgnorePDB`.
    #[test]
    fn terminal_pending_and_terminating_pods_ignore_their_budget() {
        assert!(can_ignore_pdb(&pod("Succeeded", false, false)));
        assert!(can_ignore_pdb(&pod("Failed", false, false)));
        assert!(can_ignore_pdb(&pod("Pending", false, false)));
        assert!(can_ignore_pdb(&pod("Running", true, true)));
        assert!(!can_ignore_pdb(&pod("Running", true, false)));
        assert!(!can_ignore_pdb(&pod("Running", false, false)));
        assert!(!can_ignore_pdb(&pod("Unknown", false, false)));
    }

    #[test]
    fn only_live_pods_pin_their_resource_version_on_delete() {
        assert!(should_enforce_resource_version(&pod(
            "Pending", false, false
        )));
        assert!(should_enforce_resource_version(&pod(
            "Running", true, false
        )));
        assert!(!should_enforce_resource_version(&pod(
            "Failed", false, false
        )));
        assert!(!should_enforce_resource_version(&pod(
            "Succeeded",
            false,
            false
        )));
        assert!(!should_enforce_resource_version(&pod(
            "Running", true, true
        )));
        assert!(is_pod_ready(&pod("Running", true, false)));
        assert!(!is_pod_ready(&pod("Running", false, false)));
    }

    #[test]
    fn the_disruption_target_condition_is_added_once() {
        let now: Timestamp = "2025-01-01T00:00:00.5Z".parse().unwrap();
        let mut p = pod("Running", true, false);
        assert!(add_disruption_target(&mut p, now));
        let cond = p.status.as_ref().unwrap().conditions.as_ref().unwrap()[1].clone();
        assert_eq!(cond.type_, "DisruptionTarget");
        assert_eq!(cond.status, "True");
        assert_eq!(cond.reason.as_deref(), Some("EvictionByEvictionAPI"));
        assert_eq!(cond.message.as_deref(), Some("Eviction API: evicting"));
        assert_eq!(
            cond.last_transition_time.as_ref().unwrap().0,
            "2025-01-01T00:00:00Z".parse::<Timestamp>().unwrap()
        );
        let later: Timestamp = "2025-01-01T00:05:00Z".parse().unwrap();
        assert!(!add_disruption_target(&mut p, later));
        // A stale False condition (reset by the disruption controller) turns True again.
        p.status.as_mut().unwrap().conditions.as_mut().unwrap()[1].status = "False".into();
        assert!(add_disruption_target(&mut p, later));
        let cond = &p.status.as_ref().unwrap().conditions.as_ref().unwrap()[1];
        assert_eq!(cond.last_transition_time.as_ref().unwrap().0, later);
    }
}
