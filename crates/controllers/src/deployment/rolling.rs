//! The RollingUpdate strategy: grow the new ReplicaSet within maxSurge, shrink the old ones within
//! maxUnavailable, unhealthy replicas first.
//!
//! Mirrors `pkg/controller/deployment/rolling.go`. The planning functions are pure; the controller
//! applies their [`ScaleStep`]s in order and stops at the first failed write.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::conditions::deployment_complete;
use super::fenceposts::max_unavailable;
use super::replica_sets::by_creation_timestamp;
use super::replica_sets::filter_active;
use super::replicas::{new_rs_new_replicas, replica_count, NewReplicasError};
use super::scale::ScaleStep;
use super::spec::{replicas, rs_available_replicas, rs_replicas};
use super::sync::{d_key, Result, SyncError};
use super::DeploymentController;

/// The resize of the new ReplicaSet a rolling update makes next, if any: down to `replicas` when it is
/// larger, otherwise up as far as maxSurge allows.
#[doc(alias = "reconcileNewReplicaSet")]
pub fn reconcile_new_replica_set(
    d: &Deployment,
    all_rss: &[Arc<ReplicaSet>],
    new_rs: &Arc<ReplicaSet>,
) -> Result<Option<ScaleStep>, NewReplicasError> {
    let want = replicas(d);
    let current = rs_replicas(new_rs);
    if current == want {
        return Ok(None);
    }
    if current > want {
        return Ok(ScaleStep::resize(new_rs, want));
    }
    let target = new_rs_new_replicas(d, all_rss.iter().map(|rs| &**rs), new_rs)?;
    Ok(ScaleStep::resize(new_rs, target))
}

fn with_replicas(rs: &ReplicaSet, to: i32) -> Arc<ReplicaSet> {
    let mut copy = rs.clone();
    copy.spec.get_or_insert_with(Default::default).replicas = Some(to);
    Arc::new(copy)
}

/// Scales down old ReplicaSets' unavailable replicas, oldest ReplicaSet first, at most `max_cleanup`
/// in total. Returns the steps, the old ReplicaSets as they will be afterwards, and the count removed.
#[doc(alias = "cleanupUnhealthyReplicas")]
pub fn cleanup_unhealthy_replicas(
    old_rss: &[Arc<ReplicaSet>],
    max_cleanup: i32,
) -> (Vec<ScaleStep>, Vec<Arc<ReplicaSet>>, i32) {
    let mut olds = old_rss.to_vec();
    olds.sort_by(|a, b| by_creation_timestamp(a, b));
    let mut steps = Vec::new();
    let mut total = 0;
    for rs in olds.iter_mut() {
        if total >= max_cleanup {
            break;
        }
        let size = rs_replicas(rs);
        let available = rs_available_replicas(rs);
        if size == 0 || size == available {
            // Nothing unhealthy to remove here.
            continue;
        }
        let count = (max_cleanup - total).min(size - available);
        let to = size - count;
        if to > size {
            // Cannot happen while available <= size; an RS reporting more available pods than
            // its size is skipped rather than scaled up.
            continue;
        }
        steps.extend(ScaleStep::resize(rs, to));
        *rs = with_replicas(rs, to);
        total += count;
    }
    (steps, olds, total)
}

/// Scales down old ReplicaSets, oldest first, by as many replicas as are available above
/// `replicas − maxUnavailable`. Returns the steps and the count removed.
#[doc(alias = "scaleDownOldReplicaSetsForRollingUpdate")]
pub fn scale_down_old_replica_sets(
    d: &Deployment,
    all_rss: &[Arc<ReplicaSet>],
    old_rss: &[Arc<ReplicaSet>],
) -> (Vec<ScaleStep>, i32) {
    let min_available = replicas(d) - max_unavailable(d);
    // An old ReplicaSet just scaled down may still report the available pods it is about to delete;
    // once the ReplicaSet controller has acted, no more than `spec.replicas` of them remain (it
    // deletes unavailable pods first). kube reads `availableReplicas` as is and can briefly
    // overshoot maxUnavailable on such a stale status; counting at most `spec.replicas` cannot.
    let available: i32 = all_rss
        .iter()
        .map(|rs| rs_available_replicas(rs).min(rs_replicas(rs)))
        .sum();
    if available <= min_available {
        return (Vec::new(), 0);
    }
    let mut olds = old_rss.to_vec();
    olds.sort_by(|a, b| by_creation_timestamp(a, b));
    let total_to_remove = available - min_available;
    let mut steps = Vec::new();
    let mut total = 0;
    for rs in &olds {
        if total >= total_to_remove {
            break;
        }
        let size = rs_replicas(rs);
        if size == 0 {
            continue;
        }
        let count = size.min(total_to_remove - total);
        steps.extend(ScaleStep::resize(rs, size - count));
        total += count;
    }
    (steps, total)
}

/// The scale-down a rolling update makes next: first old replicas that are not available (they
/// cost no availability), then available ones, never letting the available pods (old and new, minus
/// the new ReplicaSet's unavailable ones) drop below `replicas − maxUnavailable`.
///
/// As in kube, the two passes write separately: an old ReplicaSet with unhealthy replicas that is
/// then scaled down further gets two steps (10 → 9, then 9 → 8), so two writes and two
/// `ScalingReplicaSet` events. The second step starts from the ReplicaSet as the first leaves it;
/// [`DeploymentController::apply_scale_steps`] carries the written object forward.
#[doc(alias = "reconcileOldReplicaSets")]
pub fn reconcile_old_replica_sets(
    d: &Deployment,
    all_rss: &[Arc<ReplicaSet>],
    old_rss: &[Arc<ReplicaSet>],
    new_rs: &Arc<ReplicaSet>,
) -> Vec<ScaleStep> {
    if replica_count(old_rss.iter().map(|rs| &**rs)) == 0 {
        return Vec::new();
    }
    let all_pods = replica_count(all_rss.iter().map(|rs| &**rs));
    let min_available = replicas(d) - max_unavailable(d);
    let new_rs_unavailable = rs_replicas(new_rs) - rs_available_replicas(new_rs);
    // Pods that may go: every pod beyond the minimum, except the new ReplicaSet's unavailable ones,
    // which must not be counted on.
    let max_scaled_down = all_pods - min_available - new_rs_unavailable;
    if max_scaled_down <= 0 {
        return Vec::new();
    }
    let (mut steps, olds, _) = cleanup_unhealthy_replicas(old_rss, max_scaled_down);
    let mut all: Vec<Arc<ReplicaSet>> = olds.clone();
    all.push(Arc::clone(new_rs));
    let (down, _) = scale_down_old_replica_sets(d, &all, &olds);
    steps.extend(down);
    steps
}

impl DeploymentController {
    /// One step of a rolling update (`rolloutRolling`): scale the new ReplicaSet up, or else the old
    /// ones down; once complete, clean up the history; then report the rollout status.
    pub(crate) async fn rollout_rolling(
        &self,
        d: &mut Deployment,
        rs_list: &[Arc<ReplicaSet>],
    ) -> Result<()> {
        let (new_rs, old_rss) = self
            .all_replica_sets_and_sync_revision(d, rs_list, true)
            .await?;
        let Some(new_rs) = new_rs else {
            // Creating was requested, so a new ReplicaSet exists or an error was returned.
            return Ok(());
        };
        let all: Vec<Arc<ReplicaSet>> = old_rss
            .iter()
            .cloned()
            .chain([Arc::clone(&new_rs)])
            .collect();

        let step = reconcile_new_replica_set(d, &all, &new_rs).map_err(|source| {
            SyncError::NewReplicas {
                key: d_key(d),
                source,
            }
        })?;
        if let Some(step) = step {
            if self.scale_replica_set(d, &step).await?.0 {
                return self.sync_rollout_status(d, &all, Some(&new_rs)).await;
            }
        }

        let active_old = filter_active(&old_rss);
        let steps = reconcile_old_replica_sets(d, &all, &active_old, &new_rs);
        if self.apply_scale_steps(d, &steps).await? > 0 {
            return self.sync_rollout_status(d, &all, Some(&new_rs)).await;
        }

        let current = d.status.clone().unwrap_or_default();
        if deployment_complete(d, &current) {
            self.cleanup_deployment(d, &old_rss).await?;
        }
        self.sync_rollout_status(d, &all, Some(&new_rs)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::fixtures::{new_deployment, rs, with_available};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    fn deployment(replicas: i32, surge: i32, unavailable: i32) -> Deployment {
        new_deployment(
            "foo",
            replicas,
            None,
            Some(IntOrString::Int(surge)),
            Some(IntOrString::Int(unavailable)),
            &[("foo", "bar")],
        )
    }

    #[test]
    fn new_replica_set_scales_up_within_surge_and_down_to_replicas() {
        // TestDeploymentController_reconcileNewReplicaSet:
        // (deployment replicas, maxSurge, old replicas, new replicas, expected new replicas).
        let cases = [
            (10, 0, 10, 0, None),
            (10, 2, 10, 0, Some(2)),
            (10, 2, 5, 0, Some(7)),
            (10, 2, 10, 2, None),
            (10, 2, 2, 11, Some(10)),
        ];
        for (want, surge, old_replicas, new_replicas, expected) in cases {
            let new_rs = Arc::new(rs("foo-v2", new_replicas, &[], None));
            let old_rs = Arc::new(rs("foo-v1", old_replicas, &[], None));
            let d = deployment(want, surge, 0);
            let step = reconcile_new_replica_set(&d, &[new_rs.clone(), old_rs], &new_rs).unwrap();
            assert_eq!(
                step.map(|s| s.to),
                expected,
                "{want} {surge} {old_replicas} {new_replicas}"
            );
        }
    }

    #[test]
    fn old_replica_sets_scale_down_unhealthy_first_and_keep_min_available() {
        // TestDeploymentController_reconcileOldReplicaSets: (deployment replicas, maxUnavailable,
        // old replicas, new replicas, available old, available new, expected old replicas).
        let cases = [
            (10, 0, 10, 0, 10, 0, Some(9)),
            (10, 2, 10, 0, 10, 0, Some(8)),
            (10, 2, 10, 0, 8, 0, Some(8)),
            (10, 2, 10, 0, 9, 0, Some(8)),
            (10, 2, 8, 2, 8, 0, None),
        ];
        for (want, unavailable, old_replicas, new_replicas, old_ready, new_ready, expected) in cases
        {
            let new_rs = Arc::new(with_available(
                rs("foo-new", new_replicas, &[("foo", "new")], None),
                new_ready,
            ));
            let old_rs = Arc::new(with_available(
                rs("foo-old", old_replicas, &[("foo", "old")], None),
                old_ready,
            ));
            let d = deployment(want, 0, unavailable);
            let steps = reconcile_old_replica_sets(
                &d,
                &[old_rs.clone(), new_rs.clone()],
                std::slice::from_ref(&old_rs),
                &new_rs,
            );
            assert_eq!(
                steps.last().map(|s| s.to),
                expected,
                "case {want} {unavailable} {old_replicas} {old_ready}"
            );
            if let Some(step) = steps.first() {
                assert_eq!(step.rs, old_rs, "writes start from the cached replica set");
                assert_eq!(step.operation, "down");
            }
        }
    }

    #[test]
    fn unhealthy_cleanup_and_scale_down_are_two_writes_as_in_kube() {
        // cleanupUnhealthyReplicas and scaleDownOldReplicaSetsForRollingUpdate each scale with
        // scaleReplicaSetAndRecordEvent: "from 10 to 9", then "from 9 to 8".
        let new_rs = Arc::new(with_available(rs("foo-new", 0, &[("foo", "new")], None), 0));
        let old_rs = Arc::new(with_available(
            rs("foo-old", 10, &[("foo", "old")], None),
            9,
        ));
        let d = deployment(10, 0, 2);
        let steps = reconcile_old_replica_sets(
            &d,
            &[old_rs.clone(), new_rs.clone()],
            std::slice::from_ref(&old_rs),
            &new_rs,
        );
        let sizes: Vec<_> = steps.iter().map(|s| (rs_replicas(&s.rs), s.to)).collect();
        assert_eq!(sizes, [(10, 9), (9, 8)]);
        assert!(steps
            .iter()
            .all(|s| s.name() == "foo-old" && s.operation == "down"));
        assert_eq!(steps[0].rs, old_rs);
    }

    #[test]
    fn a_stale_status_of_a_scaled_down_replica_set_is_not_counted_as_available() {
        // The old ReplicaSet was scaled 10 → 8 but still reports 10 available pods.
        let old_rs = Arc::new(with_available(rs("old", 8, &[], None), 10));
        let new_rs = Arc::new(with_available(rs("new", 2, &[], None), 0));
        let d = deployment(10, 0, 2);
        let (steps, _) = scale_down_old_replica_sets(&d, &[old_rs.clone(), new_rs], &[old_rs]);
        assert!(
            steps.is_empty(),
            "8 pods are available after the deletion, which is the minimum: {steps:?}"
        );
    }

    #[test]
    fn unhealthy_cleanup_is_capped() {
        // TestDeploymentController_cleanupUnhealthyReplicas:
        // (old replicas, available, max cleanup, expected cleanup).
        let cases = [(10, 8, 1, 1), (10, 8, 3, 2), (10, 8, 0, 0), (10, 10, 3, 0)];
        for (old_replicas, ready, max_cleanup, expected) in cases {
            let old_rs = Arc::new(with_available(rs("foo-v2", old_replicas, &[], None), ready));
            let (steps, olds, count) = cleanup_unhealthy_replicas(&[old_rs], max_cleanup);
            assert_eq!(count, expected);
            assert_eq!(rs_replicas(&olds[0]), old_replicas - expected);
            assert_eq!(steps.len(), usize::from(expected > 0));
        }
    }

    #[test]
    fn available_old_replicas_scale_down_to_min_available() {
        // TestDeploymentController_scaleDownOldReplicaSetsForRollingUpdate:
        // (deployment replicas, maxUnavailable, available, old replicas, expected old replicas).
        let cases = [
            (10, 0, 10, 10, Some(9)),
            (10, 2, 10, 10, Some(8)),
            (10, 2, 8, 10, None),
            (10, 2, 10, 0, None),
            (10, 2, 1, 10, None),
        ];
        for (want, unavailable, ready, old_replicas, expected) in cases {
            let old_rs = Arc::new(with_available(rs("foo-v2", old_replicas, &[], None), ready));
            let d = deployment(want, 0, unavailable);
            let (steps, count) = scale_down_old_replica_sets(
                &d,
                std::slice::from_ref(&old_rs),
                std::slice::from_ref(&old_rs),
            );
            assert_eq!(steps.first().map(|s| s.to), expected);
            assert_eq!(count > 0, expected.is_some());
        }
    }
}
