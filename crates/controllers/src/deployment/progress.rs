//! Rollout progress: the `Progressing` and `ReplicaFailure` conditions, and when to look again for a
//! stuck rollout.
//!
//! Mirrors `syncRolloutStatus`, `getReplicaFailures` and `requeueStuckDeployment` in
//! `pkg/controller/deployment/progress.go`.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentCondition, DeploymentStatus, ReplicaSet};

use super::conditions::{
    deployment_complete, deployment_condition, deployment_progressing, deployment_timed_out,
    get_condition, new_condition, remove_condition, replica_set_to_deployment_condition,
    set_condition, FALSE, NEW_RS_AVAILABLE_REASON, PROGRESSING, REPLICA_FAILURE,
    REPLICA_SET_UPDATED_REASON, TIMED_OUT_REASON, TRUE,
};
use super::spec::progress_deadline_seconds;
use super::status::calculate_status;

/// The status a rollout reports: [`calculate_status`] plus `Progressing` (complete, progressing or
/// timed out, measured against `now`) and the `ReplicaFailure` of the ReplicaSets.
#[doc(alias = "syncRolloutStatus")]
pub fn rollout_status(
    d: &Deployment,
    all_rss: &[Arc<ReplicaSet>],
    new_rs: Option<&Arc<ReplicaSet>>,
    now: Timestamp,
) -> DeploymentStatus {
    let mut status = calculate_status(d, all_rss, new_rs, now);
    let has_deadline = progress_deadline_seconds(d).is_some();
    if !has_deadline {
        remove_condition(&mut status, PROGRESSING);
    }
    let current = deployment_condition(d, PROGRESSING).cloned();
    // A resync of a finished rollout with a single active ReplicaSet: nothing to estimate.
    let is_complete_deployment = status.replicas == status.updated_replicas
        && current.as_ref().and_then(|c| c.reason.as_deref()) == Some(NEW_RS_AVAILABLE_REASON);
    let name = d.metadata.name.as_deref().unwrap_or_default();
    let subject = match new_rs.and_then(|rs| rs.metadata.name.as_deref()) {
        Some(rs) => format!("ReplicaSet {rs:?}"),
        None => format!("Deployment {name:?}"),
    };
    if has_deadline && !is_complete_deployment {
        if deployment_complete(d, &status) {
            let msg = format!("{subject} has successfully progressed.");
            set_condition(
                &mut status,
                new_condition(PROGRESSING, TRUE, NEW_RS_AVAILABLE_REASON, msg, now),
            );
        } else if deployment_progressing(d, &status) {
            let msg = format!("{subject} is progressing.");
            let mut condition =
                new_condition(PROGRESSING, TRUE, REPLICA_SET_UPDATED_REASON, msg, now);
            // Progress refreshes lastUpdateTime even when the reason stays the same, which
            // set_condition would skip: replace the condition, keeping the transition time of a True one.
            if let Some(current) = current.as_ref() {
                if current.status == TRUE {
                    condition.last_transition_time = current.last_transition_time.clone();
                }
                remove_condition(&mut status, PROGRESSING);
            }
            set_condition(&mut status, condition);
        } else if deployment_timed_out(d, &status, now) {
            let msg = format!("{subject} has timed out progressing.");
            set_condition(
                &mut status,
                new_condition(PROGRESSING, FALSE, TIMED_OUT_REASON, msg, now),
            );
        }
    }
    match replica_failures(all_rss, new_rs).into_iter().next() {
        // There is at most one ReplicaFailure condition on a ReplicaSet.
        Some(failure) => set_condition(&mut status, failure),
        None => remove_condition(&mut status, REPLICA_FAILURE),
    }
    status
}

/// The `ReplicaFailure` conditions of the new ReplicaSet, or else of all ReplicaSets.
#[doc(alias = "getReplicaFailures")]
pub fn replica_failures(
    all_rss: &[Arc<ReplicaSet>],
    new_rs: Option<&Arc<ReplicaSet>>,
) -> Vec<DeploymentCondition> {
    let failures = |rs: &ReplicaSet| -> Vec<DeploymentCondition> {
        rs.status
            .iter()
            .flat_map(|s| s.conditions.iter().flatten())
            .filter(|c| c.type_ == REPLICA_FAILURE)
            .map(replica_set_to_deployment_condition)
            .collect()
    };
    if let Some(rs) = new_rs {
        let from_new = failures(rs);
        if !from_new.is_empty() {
            return from_new;
        }
    }
    all_rss.iter().flat_map(|rs| failures(rs)).collect()
}

/// When to sync a rollout again to check its deadline, if its status did not change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressCheck {
    /// No check needed: no deadline, no Progressing condition, complete, or already timed out.
    None,
    /// The deadline is (almost) reached: requeue now, rate limited.
    Now,
    /// Requeue after this long (the remaining time plus one second against clock skew).
    After(Duration),
}

/// When a rollout that shows no progress should be looked at again: at
/// `Progressing.lastUpdateTime + progressDeadlineSeconds` (kubernetes#34458).
#[doc(alias = "requeueStuckDeployment")]
pub fn progress_check(
    d: &Deployment,
    new_status: &DeploymentStatus,
    now: Timestamp,
) -> ProgressCheck {
    let Some(deadline) = progress_deadline_seconds(d) else {
        return ProgressCheck::None;
    };
    let Some(current) = d
        .status
        .as_ref()
        .and_then(|s| get_condition(s, PROGRESSING))
    else {
        return ProgressCheck::None;
    };
    if deployment_complete(d, new_status) || current.reason.as_deref() == Some(TIMED_OUT_REASON) {
        return ProgressCheck::None;
    }
    let from = current
        .last_update_time
        .as_ref()
        .map_or(Timestamp::UNIX_EPOCH, |t| t.0);
    let due = from.as_nanosecond() + i128::from(deadline) * 1_000_000_000;
    let after = due - now.as_nanosecond();
    if after < 1_000_000_000 {
        return ProgressCheck::Now;
    }
    let after = Duration::from_nanos(u64::try_from(after).unwrap_or(u64::MAX));
    ProgressCheck::After(after + Duration::from_secs(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::conditions::{AVAILABLE, UNKNOWN};
    use k8s_openapi::api::apps::v1::{
        DeploymentSpec, DeploymentStrategy, ReplicaSetSpec, ReplicaSetStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::api::ObjectMeta;

    // 2017-02-15T18:49:00Z
    const TEST_TIME: i64 = 1_487_184_540;

    fn at(secs: i64, nanos: i32) -> Timestamp {
        Timestamp::new(TEST_TIME + secs, nanos).unwrap()
    }

    fn current_deployment(
        pds: Option<i32>,
        replicas: i32,
        status_replicas: i32,
        updated: i32,
        available: i32,
        conditions: Vec<DeploymentCondition>,
    ) -> Deployment {
        Deployment {
            metadata: ObjectMeta {
                name: Some("progress-test".into()),
                ..Default::default()
            },
            spec: Some(DeploymentSpec {
                progress_deadline_seconds: pds,
                replicas: Some(replicas),
                strategy: Some(DeploymentStrategy {
                    type_: Some("RollingUpdate".into()),
                    rolling_update: None,
                }),
                ..Default::default()
            }),
            status: Some(DeploymentStatus {
                replicas: Some(status_replicas),
                updated_replicas: Some(updated),
                available_replicas: Some(available),
                conditions: Some(conditions),
                ..Default::default()
            }),
        }
    }

    fn rs_with_available(name: &str, spec: i32, status: i32, available: i32) -> Arc<ReplicaSet> {
        Arc::new(ReplicaSet {
            metadata: ObjectMeta {
                name: Some(name.into()),
                uid: Some(format!("uid-{name}")),
                ..Default::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(spec),
                ..Default::default()
            }),
            status: Some(ReplicaSetStatus {
                replicas: status,
                available_replicas: Some(available),
                ..Default::default()
            }),
        })
    }

    fn cond(status: &str, reason: &str, time: Option<Timestamp>) -> DeploymentCondition {
        DeploymentCondition {
            type_: PROGRESSING.into(),
            status: status.into(),
            reason: Some(reason.into()),
            last_update_time: time.map(Time),
            last_transition_time: time.map(Time),
            message: None,
        }
    }

    #[test]
    fn rollout_status_sets_progressing_as_kube_does() {
        // TestSyncRolloutStatus: (name, deployment, other RSs, new RS, expected (status, reason), expected
        // transition time kept).
        let pds = Some(60);
        let t = at(0, 0);
        let failed = || cond(FALSE, TIMED_OUT_REASON, None);
        let available = || cond(TRUE, NEW_RS_AVAILABLE_REASON, Some(t));
        let updated = || cond(TRUE, REPLICA_SET_UPDATED_REASON, Some(t));
        let now = at(3600, 0);
        type Case = (
            &'static str,
            Deployment,
            Vec<Arc<ReplicaSet>>,
            Option<Arc<ReplicaSet>>,
            Option<(&'static str, &'static str)>,
            bool,
        );
        let cases: Vec<Case> = vec![
            (
                "no progress deadline: Progressing removed",
                current_deployment(None, 3, 2, 2, 2, vec![updated()]),
                vec![rs_with_available("bar", 0, 1, 1)],
                Some(rs_with_available("foo", 3, 2, 2)),
                None,
                false,
            ),
            (
                "only one active replica set: no estimate",
                current_deployment(pds, 3, 3, 3, 3, vec![available()]),
                vec![rs_with_available("bar", 3, 3, 3)],
                None,
                Some((TRUE, NEW_RS_AVAILABLE_REASON)),
                true,
            ),
            (
                "progressing keeps the transition time of Progressing=True",
                current_deployment(pds, 3, 2, 2, 2, vec![updated()]),
                vec![rs_with_available("bar", 0, 1, 1)],
                Some(rs_with_available("foo", 3, 2, 2)),
                Some((TRUE, REPLICA_SET_UPDATED_REASON)),
                true,
            ),
            (
                "progressing after Progressing=False",
                current_deployment(pds, 3, 2, 2, 2, vec![failed()]),
                vec![rs_with_available("bar", 0, 1, 1)],
                Some(rs_with_available("foo", 3, 2, 2)),
                Some((TRUE, REPLICA_SET_UPDATED_REASON)),
                false,
            ),
            (
                "progressing creates the condition",
                current_deployment(pds, 3, 2, 2, 2, vec![]),
                vec![rs_with_available("bar", 0, 1, 1)],
                Some(rs_with_available("foo", 3, 2, 2)),
                Some((TRUE, REPLICA_SET_UPDATED_REASON)),
                false,
            ),
            (
                "complete keeps the transition time of Progressing=True",
                current_deployment(pds, 3, 2, 2, 2, vec![updated()]),
                vec![],
                Some(rs_with_available("foo", 3, 3, 3)),
                Some((TRUE, NEW_RS_AVAILABLE_REASON)),
                true,
            ),
            (
                "complete after Progressing=False",
                current_deployment(pds, 3, 2, 2, 2, vec![failed()]),
                vec![],
                Some(rs_with_available("foo", 3, 3, 3)),
                Some((TRUE, NEW_RS_AVAILABLE_REASON)),
                false,
            ),
            (
                "complete creates the condition",
                current_deployment(pds, 3, 2, 2, 2, vec![]),
                vec![],
                Some(rs_with_available("foo", 3, 3, 3)),
                Some((TRUE, NEW_RS_AVAILABLE_REASON)),
                false,
            ),
            (
                "complete without a new replica set",
                current_deployment(pds, 0, 3, 3, 3, vec![updated()]),
                vec![rs_with_available("foo", 0, 0, 0)],
                None,
                Some((TRUE, NEW_RS_AVAILABLE_REASON)),
                false,
            ),
            (
                "deadline exceeded",
                current_deployment(pds, 3, 2, 2, 2, vec![updated()]),
                vec![],
                Some(rs_with_available("foo", 3, 2, 2)),
                Some((FALSE, TIMED_OUT_REASON)),
                false,
            ),
            (
                "already timed out stays",
                current_deployment(pds, 3, 2, 2, 2, vec![failed()]),
                vec![],
                Some(rs_with_available("foo", 3, 2, 2)),
                Some((FALSE, TIMED_OUT_REASON)),
                false,
            ),
        ];
        for (name, d, mut all, new_rs, expected, keeps_transition) in cases {
            all.extend(new_rs.clone());
            let status = rollout_status(&d, &all, new_rs.as_ref(), now);
            let got = get_condition(&status, PROGRESSING);
            match expected {
                None => assert!(got.is_none(), "{name}: {got:?}"),
                Some((s, reason)) => {
                    let got = got.unwrap_or_else(|| panic!("{name}: no Progressing condition"));
                    assert_eq!(
                        (got.status.as_str(), got.reason.as_deref()),
                        (s, Some(reason)),
                        "{name}"
                    );
                    if keeps_transition {
                        assert_eq!(got.last_transition_time, Some(Time(t)), "{name}");
                    }
                }
            }
            assert!(get_condition(&status, AVAILABLE).is_some(), "{name}");
        }
    }

    #[test]
    fn replica_failure_is_copied_from_the_new_replica_set_first() {
        let failing = |name: &str, msg: &str| {
            let mut rs = (*rs_with_available(name, 1, 0, 0)).clone();
            rs.status.as_mut().unwrap().conditions =
                Some(vec![k8s_openapi::api::apps::v1::ReplicaSetCondition {
                    type_: REPLICA_FAILURE.into(),
                    status: TRUE.into(),
                    reason: Some("FailedCreate".into()),
                    message: Some(msg.into()),
                    last_transition_time: None,
                }]);
            Arc::new(rs)
        };
        let old = failing("old", "quota (old)");
        let new = failing("new", "quota (new)");
        let got = replica_failures(&[old.clone(), new.clone()], Some(&new));
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].message.as_deref(), Some("quota (new)"));
        let healthy = rs_with_available("healthy", 1, 1, 1);
        assert_eq!(
            replica_failures(&[old.clone(), healthy.clone()], Some(&healthy)).len(),
            1
        );
        let d = current_deployment(Some(60), 1, 1, 1, 1, vec![]);
        let status = rollout_status(&d, std::slice::from_ref(&healthy), Some(&healthy), at(0, 0));
        assert!(get_condition(&status, REPLICA_FAILURE).is_none());
        let status = rollout_status(&d, &[old, healthy.clone()], Some(&healthy), at(0, 0));
        assert_eq!(
            get_condition(&status, REPLICA_FAILURE)
                .unwrap()
                .reason
                .as_deref(),
            Some("FailedCreate")
        );
    }

    #[test]
    fn stuck_rollouts_are_checked_again_at_their_deadline() {
        // TestRequeueStuckDeployment: (deployment, new status (replicas, updated, available), now, expected).
        let pds = Some(60);
        let failed = vec![cond(FALSE, TIMED_OUT_REASON, None)];
        let stuck = || {
            vec![DeploymentCondition {
                type_: PROGRESSING.into(),
                status: UNKNOWN.into(),
                last_update_time: Some(Time(at(0, 0))),
                ..Default::default()
            }]
        };
        let status = |replicas, updated, available| DeploymentStatus {
            replicas: Some(replicas),
            updated_replicas: Some(updated),
            available_replicas: Some(available),
            ..Default::default()
        };
        let cases = vec![
            (
                current_deployment(None, 4, 3, 3, 2, vec![]),
                status(3, 3, 2),
                at(0, 0),
                ProgressCheck::None,
            ),
            (
                current_deployment(Some(i32::MAX), 4, 3, 3, 2, vec![]),
                status(3, 3, 2),
                at(0, 0),
                ProgressCheck::None,
            ),
            (
                current_deployment(pds, 4, 3, 3, 2, vec![]),
                status(3, 3, 2),
                at(0, 0),
                ProgressCheck::None,
            ),
            (
                current_deployment(pds, 3, 3, 3, 3, vec![]),
                status(3, 3, 3),
                at(0, 0),
                ProgressCheck::None,
            ),
            (
                current_deployment(pds, 3, 3, 3, 0, failed),
                status(3, 3, 0),
                at(0, 0),
                ProgressCheck::None,
            ),
            (
                current_deployment(pds, 3, 3, 3, 1, stuck()),
                status(3, 3, 1),
                at(30, 0),
                ProgressCheck::After(Duration::from_secs(31)),
            ),
            (
                current_deployment(pds, 3, 3, 3, 1, stuck()),
                status(3, 3, 1),
                at(59, 0),
                ProgressCheck::After(Duration::from_secs(2)),
            ),
            (
                current_deployment(pds, 3, 3, 3, 1, stuck()),
                status(3, 3, 1),
                at(59, 1),
                ProgressCheck::Now,
            ),
            (
                current_deployment(pds, 3, 3, 3, 1, stuck()),
                status(3, 3, 1),
                at(60, 1),
                ProgressCheck::Now,
            ),
            (
                current_deployment(pds, 3, 3, 3, 1, stuck()),
                status(3, 3, 1),
                at(61, 0),
                ProgressCheck::Now,
            ),
            (
                current_deployment(pds, 3, 3, 3, 1, stuck()),
                status(3, 3, 1),
                at(120, 0),
                ProgressCheck::Now,
            ),
        ];
        for (i, (d, new_status, now, expected)) in cases.into_iter().enumerate() {
            assert_eq!(progress_check(&d, &new_status, now), expected, "case {i}");
        }
    }
}
