//! Stale `DisruptionTarget` pod conditions: an eviction that set the condition but whose delete
//! never happened leaves it behind; after `stalePodDisruptionTimeout` the controller sets it
//! back to `False` (`nonTerminatingPodHasStaleDisruptionCondition`, `syncStalePodDisruption`).

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use rkcm_apimachinery::poddisruptionbudget::to_seconds;

/// How long a `DisruptionTarget=True` condition may stay on a pod that is not terminating.
pub const STALE_POD_DISRUPTION_TIMEOUT: Duration = Duration::from_secs(120);

/// The pod condition type.
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";

/// Set by the kubelet, which may take arbitrarily long to terminate the pod: never stale.
const TERMINATION_BY_KUBELET: &str = "TerminationByKubelet";

/// `Some(wait)` when `pod` carries a `DisruptionTarget=True` condition that is or will become
/// stale: it is to be reset after `wait` (zero: now). `None` for terminating and terminal pods
/// and for the kubelet's conditions.
pub fn stale_disruption_condition(
    pod: &Pod,
    timeout: Duration,
    now: Timestamp,
) -> Option<Duration> {
    if pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let status = pod.status.as_ref()?;
    let cond = status
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == DISRUPTION_TARGET)?;
    if cond.status != "True"
        || cond.reason.as_deref() == Some(TERMINATION_BY_KUBELET)
        || matches!(status.phase.as_deref(), Some("Succeeded" | "Failed"))
    {
        return None;
    }
    let since = cond
        .last_transition_time
        .as_ref()
        .map_or(Duration::MAX, |t| {
            Duration::try_from(t.0.duration_until(now)).unwrap_or(Duration::ZERO)
        });
    Some(timeout.saturating_sub(since))
}

/// Sets `DisruptionTarget` to `False` as `UpdatePodCondition` does (reason and message
/// cleared, transition time `now`). Returns whether the pod changed.
pub fn reset_disruption_target(pod: &mut Pod, now: Timestamp) -> bool {
    let mut wanted = PodCondition {
        type_: DISRUPTION_TARGET.to_string(),
        status: "False".to_string(),
        last_transition_time: Some(Time(to_seconds(now))),
        ..PodCondition::default()
    };
    let conditions = pod
        .status
        .get_or_insert_with(Default::default)
        .conditions
        .get_or_insert_with(Vec::new);
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == DISRUPTION_TARGET) else {
        conditions.push(wanted);
        return true;
    };
    if existing.status == wanted.status {
        wanted.last_transition_time = existing.last_transition_time.clone();
    }
    let changed = *existing != wanted;
    *existing = wanted;
    changed
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::pod;
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("a timestamp")
    }

    fn with_condition(status: &str, reason: &str, at: &str) -> Pod {
        let mut p = pod("p");
        p.status
            .as_mut()
            .unwrap()
            .conditions
            .as_mut()
            .unwrap()
            .push(PodCondition {
                type_: DISRUPTION_TARGET.into(),
                status: status.into(),
                reason: Some(reason.into()),
                last_transition_time: Some(Time(ts(at))),
                ..PodCondition::default()
            });
        p
    }

    /// disruption_test.go `TestStalePodDisruption`: which pods are stale, and when.
    #[test]
    fn stale_conditions_are_reset_after_the_timeout() {
        let now = ts("2025-01-01T00:10:00Z");
        let timeout = STALE_POD_DISRUPTION_TIMEOUT;
        // Set a minute ago: reset in a minute.
        let recent = with_condition("True", "EvictionByEvictionAPI", "2025-01-01T00:09:00Z");
        assert_eq!(
            stale_disruption_condition(&recent, timeout, now),
            Some(Duration::from_secs(60))
        );
        // Set long ago: reset now.
        let old = with_condition("True", "EvictionByEvictionAPI", "2025-01-01T00:00:00Z");
        assert_eq!(
            stale_disruption_condition(&old, timeout, now),
            Some(Duration::ZERO)
        );
        // No condition, a False one, the kubelet's, a terminating or a terminal pod: never.
        assert_eq!(stale_disruption_condition(&pod("p"), timeout, now), None);
        let off = with_condition("False", "", "2025-01-01T00:00:00Z");
        assert_eq!(stale_disruption_condition(&off, timeout, now), None);
        let kubelet = with_condition("True", "TerminationByKubelet", "2025-01-01T00:00:00Z");
        assert_eq!(stale_disruption_condition(&kubelet, timeout, now), None);
        let mut terminating = old.clone();
        terminating.metadata.deletion_timestamp = Some(Time(now));
        assert_eq!(stale_disruption_condition(&terminating, timeout, now), None);
        let mut failed = old.clone();
        failed.status.as_mut().unwrap().phase = Some("Failed".into());
        assert_eq!(stale_disruption_condition(&failed, timeout, now), None);
    }

    #[test]
    fn resetting_clears_reason_and_moves_the_transition_time() {
        let now = ts("2025-01-01T00:10:00Z");
        let mut p = with_condition("True", "EvictionByEvictionAPI", "2025-01-01T00:00:00Z");
        assert!(reset_disruption_target(&mut p, now));
        let c = &p.status.as_ref().unwrap().conditions.as_ref().unwrap()[1];
        assert_eq!(c.status, "False");
        assert_eq!(c.reason, None);
        assert_eq!(c.last_transition_time.as_ref().unwrap().0, now);
        assert!(!reset_disruption_target(&mut p, ts("2025-01-01T00:20:00Z")));
    }
}
