//! How many replicas each ReplicaSet of a Deployment has and should have: totals, the new
//! ReplicaSet's next size, and the proportions of a scaling event.
//!
//! Mirrors `GetReplicaCountForReplicaSets` and friends, `NewRSNewReplicas`, `GetProportion` and
//! `getReplicaSetFraction` of `pkg/controller/deployment/util/deployment_util.go`.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::annotations::max_replicas_annotation;
use super::fenceposts::{max_surge, scaled_value, InvalidIntOrPercent};
use super::spec::{
    replicas, rs_available_replicas, rs_ready_replicas, rs_replicas, rs_status_replicas,
    strategy_type, RECREATE, ROLLING_UPDATE,
};

/// Sum of `spec.replicas`.
#[doc(alias = "GetReplicaCountForReplicaSets")]
pub fn replica_count<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(rs_replicas).sum()
}

/// Sum of `status.replicas`.
#[doc(alias = "GetActualReplicaCountForReplicaSets")]
pub fn actual_replica_count<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(rs_status_replicas).sum()
}

/// Sum of `status.readyReplicas`.
#[doc(alias = "GetReadyReplicaCountForReplicaSets")]
pub fn ready_replica_count<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(rs_ready_replicas).sum()
}

/// Sum of `status.availableReplicas`.
#[doc(alias = "GetAvailableReplicaCountForReplicaSets")]
pub fn available_replica_count<'a>(rss: impl IntoIterator<Item = &'a ReplicaSet>) -> i32 {
    rss.into_iter().map(rs_available_replicas).sum()
}

/// A Deployment strategy this controller does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NewReplicasError {
    /// `spec.strategy.type` is neither RollingUpdate nor Recreate.
    #[error("deployment type {0:?} isn't supported")]
    UnsupportedStrategy(String),
    /// maxSurge is malformed.
    #[error(transparent)]
    InvalidMaxSurge(#[from] InvalidIntOrPercent),
}

/// The size the new ReplicaSet should have next: for RollingUpdate, grow it as far as
/// `replicas + maxSurge` total pods allow (never beyond `replicas`); for Recreate, `replicas`.
#[doc(alias = "NewRSNewReplicas")]
pub fn new_rs_new_replicas<'a>(
    d: &Deployment,
    all_rss: impl IntoIterator<Item = &'a ReplicaSet>,
    new_rs: &ReplicaSet,
) -> Result<i32, NewReplicasError> {
    let want = replicas(d);
    match strategy_type(d) {
        ROLLING_UPDATE => {
            let surge = d
                .spec
                .as_ref()
                .and_then(|s| s.strategy.as_ref())
                .and_then(|s| s.rolling_update.as_ref())
                .and_then(|r| r.max_surge.as_ref())
                .map(|v| scaled_value(v, want, true))
                .transpose()?
                .unwrap_or(0);
            let current = replica_count(all_rss);
            let max_total = want + surge;
            let new_replicas = rs_replicas(new_rs);
            if current >= max_total {
                return Ok(new_replicas);
            }
            let scale_up = (max_total - current).min(want - new_replicas);
            Ok(new_replicas + scale_up)
        }
        RECREATE => Ok(want),
        other => Err(NewReplicasError::UnsupportedStrategy(other.to_string())),
    }
}

/// How many replicas `rs` should gain (or lose, when negative) in a scaling event that adds
/// `to_add` replicas in total, of which `added` were already handed out.
#[doc(alias = "GetProportion")]
pub fn proportion(rs: &ReplicaSet, d: &Deployment, to_add: i32, added: i32) -> i32 {
    if rs_replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = replica_set_fraction(rs, d);
    let allowed = to_add - added;
    if to_add > 0 {
        // Never hand out more than what is left to add.
        fraction.min(allowed)
    } else {
        // Never take away more than what is left to remove.
        fraction.max(allowed)
    }
}

/// The change of `rs`'s size that keeps its share of the Deployment: its size scaled from the
/// max-replicas it was sized for to the Deployment's current `replicas + maxSurge`.
fn replica_set_fraction(rs: &ReplicaSet, d: &Deployment) -> i32 {
    let size = rs_replicas(rs);
    if replicas(d) == 0 {
        return -size;
    }
    let deployment_replicas = replicas(d) + max_surge(d);
    // Without the annotation, fall back to the current Deployment size: not exact if the others
    // carry other values, but the min/max in `proportion` keep the result within bounds.
    let annotated = max_replicas_annotation(rs)
        .unwrap_or_else(|| d.status.as_ref().and_then(|s| s.replicas).unwrap_or(0));
    if annotated == 0 {
        // Never proportionally scale from zero.
        return 0;
    }
    let new_size = f64::from(size.saturating_mul(deployment_replicas)) / f64::from(annotated);
    new_size.round() as i32 - size
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::annotations::set_replicas_annotations;
    use crate::deployment::fixtures::{generate_deployment, generate_rs, new_deployment, rs};
    use k8s_openapi::api::apps::v1::{DeploymentStrategy, RollingUpdateDeployment};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    #[test]
    fn new_replica_set_grows_within_surge_and_never_past_replicas() {
        // TestNewRSNewReplicas: (strategy, deployment replicas, new RS replicas, maxSurge, expected).
        let cases = [
            (ROLLING_UPDATE, 1, 5, 1, 5),
            (ROLLING_UPDATE, 6, 2, 10, 6),
            (RECREATE, 3, 1, 1, 3),
        ];
        let base = generate_deployment("nginx");
        let mut rs5 = generate_rs(&base);
        rs5.spec.as_mut().unwrap().replicas = Some(5);
        for (strategy, want, new_replicas, surge, expected) in cases {
            let mut d = base.clone();
            let spec = d.spec.as_mut().unwrap();
            spec.replicas = Some(want);
            spec.strategy = Some(DeploymentStrategy {
                type_: Some(strategy.into()),
                rolling_update: (strategy == ROLLING_UPDATE).then_some(RollingUpdateDeployment {
                    max_surge: Some(IntOrString::Int(surge)),
                    max_unavailable: Some(IntOrString::Int(1)),
                }),
            });
            let mut new_rs = generate_rs(&d);
            new_rs.spec.as_mut().unwrap().replicas = Some(new_replicas);
            assert_eq!(
                new_rs_new_replicas(&d, [&rs5], &new_rs),
                Ok(expected),
                "{strategy} {want} {new_replicas} {surge}"
            );
        }
        let mut d = base.clone();
        d.spec.as_mut().unwrap().strategy = Some(DeploymentStrategy {
            type_: Some("BlueGreen".into()),
            rolling_update: None,
        });
        assert!(new_rs_new_replicas(&d, [&rs5], &rs5).is_err());
    }

    #[test]
    fn counts_sum_spec_and_status_replicas() {
        // TestGetReplicaCountForReplicaSets.
        let mut rs1 = generate_rs(&generate_deployment("foo"));
        rs1.spec.as_mut().unwrap().replicas = Some(1);
        rs1.status = Some(k8s_openapi::api::apps::v1::ReplicaSetStatus {
            replicas: 2,
            ..Default::default()
        });
        let mut rs2 = generate_rs(&generate_deployment("bar"));
        rs2.spec.as_mut().unwrap().replicas = Some(2);
        rs2.status = Some(k8s_openapi::api::apps::v1::ReplicaSetStatus {
            replicas: 3,
            ..Default::default()
        });
        assert_eq!(
            (replica_count([&rs1]), actual_replica_count([&rs1])),
            (1, 2)
        );
        assert_eq!(
            (
                replica_count([&rs1, &rs2]),
                actual_replica_count([&rs1, &rs2])
            ),
            (3, 5)
        );
    }

    #[test]
    fn proportion_follows_the_max_replicas_annotation_and_stays_within_bounds() {
        let d = new_deployment("foo", 10, None, None, None, &[]);
        let mut r = rs("foo-v1", 3, &[], None);
        set_replicas_annotations(&mut r, 5, 5);
        // 3 of 5 becomes 6 of 10.
        assert_eq!(proportion(&r, &d, 5, 0), 3);
        // Capped by what is left to add.
        assert_eq!(proportion(&r, &d, 5, 4), 1);
        assert_eq!(proportion(&r, &d, 5, 5), 0);
        let shrink = new_deployment("foo", 3, None, None, None, &[]);
        // 3 of 5 becomes 2 of 3 (rounded), never more than what is left to remove.
        assert_eq!(proportion(&r, &shrink, -2, 0), -1);
        assert_eq!(proportion(&r, &shrink, -2, -2), 0);
        let zero = new_deployment("foo", 0, None, None, None, &[]);
        assert_eq!(proportion(&r, &zero, -5, 0), -3);
        let empty = rs("foo-v0", 0, &[], None);
        assert_eq!(proportion(&empty, &d, 5, 0), 0);
    }
}
