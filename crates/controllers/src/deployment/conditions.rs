//! Deployment conditions (`Available`, `Progressing`, `ReplicaFailure`) and the progress checks that
//! drive them: complete, progressing, timed out.
//!
//! Mirrors the condition helpers and `DeploymentComplete` / `DeploymentProgressing` /
//! `DeploymentTimedOut` of `pkg/controller/deployment/util/deployment_util.go`.

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentCondition, DeploymentStatus, ReplicaSetCondition,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::spec::{generation, progress_deadline_seconds, replicas};

/// Condition type: the Deployment has its minimum availability.
pub const AVAILABLE: &str = "Available";
/// Condition type: a rollout is progressing, complete, or stuck.
pub const PROGRESSING: &str = "Progressing";
/// Condition type: a ReplicaSet failed to create or delete pods.
pub const REPLICA_FAILURE: &str = "ReplicaFailure";

/// `Progressing` reason: a ReplicaSet was scaled as part of the rollout.
pub const REPLICA_SET_UPDATED_REASON: &str = "ReplicaSetUpdated";
/// `Progressing` reason: the new ReplicaSet could not be created.
pub const FAILED_RS_CREATE_REASON: &str = "ReplicaSetCreateError";
/// `Progressing` reason: the new ReplicaSet was created.
pub const NEW_REPLICA_SET_REASON: &str = "NewReplicaSetCreated";
/// `Progressing` reason: an existing ReplicaSet matches the template.
pub const FOUND_NEW_RS_REASON: &str = "FoundNewReplicaSet";
/// `Progressing` reason: the rollout completed.
pub const NEW_RS_AVAILABLE_REASON: &str = "NewReplicaSetAvailable";
/// `Progressing` reason: no progress within `progressDeadlineSeconds`.
pub const TIMED_OUT_REASON: &str = "ProgressDeadlineExceeded";
/// `Progressing` reason: the Deployment is paused.
pub const PAUSED_DEPLOY_REASON: &str = "DeploymentPaused";
/// `Progressing` reason: the Deployment was resumed.
pub const RESUMED_DEPLOY_REASON: &str = "DeploymentResumed";
/// `Available` reason: enough replicas are available.
pub const MINIMUM_REPLICAS_AVAILABLE: &str = "MinimumReplicasAvailable";
/// `Available` reason: too few replicas are available.
pub const MINIMUM_REPLICAS_UNAVAILABLE: &str = "MinimumReplicasUnavailable";

/// Condition status values.
pub const TRUE: &str = "True";
/// Condition status `False`.
pub const FALSE: &str = "False";
/// Condition status `Unknown`.
pub const UNKNOWN: &str = "Unknown";

/// A condition whose update and transition times are `now`.
#[doc(alias = "NewDeploymentCondition")]
pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: impl Into<String>,
    now: Timestamp,
) -> DeploymentCondition {
    DeploymentCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message.into()),
        last_update_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// The condition of type `type_`.
#[doc(alias = "GetDeploymentCondition")]
pub fn get_condition<'a>(
    status: &'a DeploymentStatus,
    type_: &str,
) -> Option<&'a DeploymentCondition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
}

/// The condition of type `type_` in the Deployment's current status.
pub fn deployment_condition<'a>(d: &'a Deployment, type_: &str) -> Option<&'a DeploymentCondition> {
    d.status.as_ref().and_then(|s| get_condition(s, type_))
}

/// Adds or replaces the condition of its type. Nothing changes if a condition with the same status
/// and reason exists; a condition whose status is unchanged keeps its `lastTransitionTime`.
#[doc(alias = "SetDeploymentCondition")]
pub fn set_condition(status: &mut DeploymentStatus, mut condition: DeploymentCondition) {
    if let Some(current) = get_condition(status, &condition.type_) {
        if current.status == condition.status && current.reason == condition.reason {
            return;
        }
        if current.status == condition.status {
            condition.last_transition_time = current.last_transition_time.clone();
        }
    }
    remove_condition(status, &condition.type_.clone());
    status
        .conditions
        .get_or_insert_with(Vec::new)
        .push(condition);
}

/// Removes the condition of type `type_`.
#[doc(alias = "RemoveDeploymentCondition")]
pub fn remove_condition(status: &mut DeploymentStatus, type_: &str) {
    if let Some(conditions) = status.conditions.as_mut() {
        conditions.retain(|c| c.type_ != type_);
        if conditions.is_empty() {
            status.conditions = None;
        }
    }
}

/// Promotes a ReplicaSet condition (a `ReplicaFailure`) to a Deployment condition.
#[doc(alias = "ReplicaSetToDeploymentCondition")]
pub fn replica_set_to_deployment_condition(cond: &ReplicaSetCondition) -> DeploymentCondition {
    DeploymentCondition {
        type_: cond.type_.clone(),
        status: cond.status.clone(),
        last_transition_time: cond.last_transition_time.clone(),
        last_update_time: cond.last_transition_time.clone(),
        reason: cond.reason.clone(),
        message: cond.message.clone(),
    }
}

fn counts(s: &DeploymentStatus) -> (i32, i32, i32, i32) {
    (
        s.replicas.unwrap_or(0),
        s.updated_replicas.unwrap_or(0),
        s.ready_replicas.unwrap_or(0),
        s.available_replicas.unwrap_or(0),
    )
}

/// A Deployment is complete once all desired replicas are updated and available, no old pods run,
/// and the status reflects the latest generation.
#[doc(alias = "DeploymentComplete")]
pub fn deployment_complete(d: &Deployment, new_status: &DeploymentStatus) -> bool {
    let want = replicas(d);
    let (current, updated, _, available) = counts(new_status);
    updated == want
        && current == want
        && available == want
        && new_status.observed_generation.unwrap_or(0) >= generation(d)
}

/// A Deployment progresses when, compared with its current status, new pods were added or became
/// ready or available, or old pods were scaled down.
#[doc(alias = "DeploymentProgressing")]
pub fn deployment_progressing(d: &Deployment, new_status: &DeploymentStatus) -> bool {
    let old_status = d.status.clone().unwrap_or_default();
    let (old_current, old_updated, old_ready, old_available) = counts(&old_status);
    let (new_current, new_updated, new_ready, new_available) = counts(new_status);
    let old_status_old_replicas = old_current - old_updated;
    let new_status_old_replicas = new_current - new_updated;
    new_updated > old_updated
        || new_status_old_replicas < old_status_old_replicas
        || new_ready > old_ready
        || new_available > old_available
}

/// A Deployment has timed out once its `Progressing` condition was last updated more than
/// `progressDeadlineSeconds` before `now`, or it already carries `ProgressDeadlineExceeded`.
/// A completed rollout (`NewReplicaSetAvailable`) never times out.
#[doc(alias = "DeploymentTimedOut")]
pub fn deployment_timed_out(d: &Deployment, new_status: &DeploymentStatus, now: Timestamp) -> bool {
    let Some(deadline) = progress_deadline_seconds(d) else {
        return false;
    };
    let Some(condition) = get_condition(new_status, PROGRESSING) else {
        return false;
    };
    // A resync may see the previous, successful rollout's condition before the cache catches up
    // with the condition for the new ReplicaSet: no progress is estimated from it.
    match condition.reason.as_deref() {
        Some(NEW_RS_AVAILABLE_REASON) => return false,
        Some(TIMED_OUT_REASON) => return true,
        _ => {}
    }
    let from = condition
        .last_update_time
        .as_ref()
        .map_or(Timestamp::UNIX_EPOCH, |t| t.0);
    let until = from.saturating_add(jiff::SignedDuration::from_secs(i64::from(deadline)));
    match until {
        Ok(until) => until < now,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::fixtures::deployment_with_strategy;
    use k8s_openapi::api::apps::v1::DeploymentSpec;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn status(current: i32, updated: i32, ready: i32, available: i32) -> DeploymentStatus {
        DeploymentStatus {
            replicas: Some(current),
            updated_replicas: Some(updated),
            ready_replicas: Some(ready),
            available_replicas: Some(available),
            ..Default::default()
        }
    }

    #[test]
    fn complete_only_when_every_replica_is_updated_and_available() {
        // TestDeploymentComplete: (desired, current, updated, available, maxUnavailable, maxSurge).
        let cases = [
            ((5, 5, 5, 4, 1, 0), false),
            ((5, 5, 5, 3, 1, 0), false),
            ((5, 5, 5, 5, 0, 0), true),
            ((5, 5, 4, 5, 0, 0), false),
            ((1, 2, 1, 1, 0, 1), false),
            ((1, 1, 1, 0, 1, 1), false),
        ];
        for ((desired, current, updated, available, unavailable, surge), expected) in cases {
            let mut d = deployment_with_strategy(
                desired,
                IntOrString::Int(surge),
                IntOrString::Int(unavailable),
            );
            d.status = Some(status(current, updated, 0, available));
            let s = d.status.clone().unwrap();
            assert_eq!(
                deployment_complete(&d, &s),
                expected,
                "{desired} {current} {updated} {available}"
            );
        }
    }

    #[test]
    fn progress_is_new_pods_or_fewer_old_pods_or_more_ready_or_available() {
        // TestDeploymentProgressing.
        let cases = [
            (status(10, 4, 4, 4), status(10, 6, 4, 4), true),
            (status(10, 4, 4, 4), status(10, 4, 4, 4), false),
            (status(10, 4, 6, 6), status(8, 4, 6, 6), true),
            (status(10, 7, 3, 3), status(10, 6, 3, 3), false),
            (status(10, 4, 7, 7), status(8, 8, 5, 5), true),
            (status(10, 10, 9, 8), status(10, 10, 10, 8), true),
            (status(10, 10, 10, 9), status(10, 10, 10, 10), true),
        ];
        for (old, new, expected) in cases {
            let d = Deployment {
                status: Some(old.clone()),
                ..Default::default()
            };
            assert_eq!(
                deployment_progressing(&d, &new),
                expected,
                "{old:?} -> {new:?}"
            );
        }
    }

    #[test]
    fn timed_out_once_the_deadline_passed_since_the_last_progress_update() {
        // TestDeploymentTimedOut.
        let at =
            |min: i64, sec: i64| Timestamp::from_second(1_451_606_400 + min * 60 + sec).unwrap();
        let deployment = |reason: &str, pds: Option<i32>, from: Timestamp| Deployment {
            spec: Some(DeploymentSpec {
                progress_deadline_seconds: pds,
                ..Default::default()
            }),
            status: Some(DeploymentStatus {
                conditions: Some(vec![DeploymentCondition {
                    type_: PROGRESSING.into(),
                    status: TRUE.into(),
                    reason: Some(reason.into()),
                    last_update_time: Some(Time(from)),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let cases = [
            (deployment("", None, at(1, 9)), at(1, 20), false),
            (deployment("", Some(i32::MAX), at(1, 9)), at(1, 20), false),
            (deployment("", Some(10), at(1, 9)), at(1, 20), true),
            (deployment("", Some(10), at(1, 11)), at(1, 20), false),
            (
                deployment(NEW_RS_AVAILABLE_REASON, Some(10), at(0, 0)),
                at(1, 20),
                false,
            ),
            (
                deployment(TIMED_OUT_REASON, Some(10), at(1, 19)),
                at(1, 20),
                true,
            ),
        ];
        for (i, (d, now, expected)) in cases.into_iter().enumerate() {
            let s = d.status.clone().unwrap();
            assert_eq!(deployment_timed_out(&d, &s, now), expected, "case {i}");
        }
    }

    #[test]
    fn set_condition_keeps_transition_time_when_status_is_unchanged() {
        let t0 = Timestamp::from_second(1_000).unwrap();
        let t1 = Timestamp::from_second(2_000).unwrap();
        let mut s = DeploymentStatus::default();
        set_condition(
            &mut s,
            new_condition(PROGRESSING, TRUE, NEW_REPLICA_SET_REASON, "a", t0),
        );
        // Same status and reason: no change at all.
        set_condition(
            &mut s,
            new_condition(PROGRESSING, TRUE, NEW_REPLICA_SET_REASON, "b", t1),
        );
        assert_eq!(
            get_condition(&s, PROGRESSING).unwrap().message.as_deref(),
            Some("a")
        );
        // Same status, new reason: replaced, transition time kept.
        set_condition(
            &mut s,
            new_condition(PROGRESSING, TRUE, REPLICA_SET_UPDATED_REASON, "c", t1),
        );
        let c = get_condition(&s, PROGRESSING).unwrap();
        assert_eq!(c.reason.as_deref(), Some(REPLICA_SET_UPDATED_REASON));
        assert_eq!(c.last_transition_time, Some(Time(t0)));
        assert_eq!(c.last_update_time, Some(Time(t1)));
        // New status: transition time moves.
        set_condition(
            &mut s,
            new_condition(PROGRESSING, FALSE, TIMED_OUT_REASON, "d", t1),
        );
        assert_eq!(
            get_condition(&s, PROGRESSING).unwrap().last_transition_time,
            Some(Time(t1))
        );
        set_condition(
            &mut s,
            new_condition(AVAILABLE, TRUE, MINIMUM_REPLICAS_AVAILABLE, "e", t1),
        );
        assert_eq!(s.conditions.as_ref().unwrap().len(), 2);
        remove_condition(&mut s, PROGRESSING);
        remove_condition(&mut s, AVAILABLE);
        assert!(s.conditions.is_none());
    }
}
