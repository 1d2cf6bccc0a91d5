//! The Deployment status computed from its ReplicaSets: replica counts, observedGeneration and the
//! `Available` condition.
//!
//! Mirrors `calculateStatus` in `pkg/controller/deployment/sync.go`.

use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus, ReplicaSet};

use super::conditions::{
    new_condition, set_condition, AVAILABLE, FALSE, MINIMUM_REPLICAS_AVAILABLE,
    MINIMUM_REPLICAS_UNAVAILABLE, TRUE,
};
use super::fenceposts::max_unavailable;
use super::replicas::{
    actual_replica_count, available_replica_count, ready_replica_count, replica_count,
};
use super::spec::{generation, replicas};

/// The status the Deployment should report for `all_rss` (which include `new_rs`). Conditions other
/// than `Available` are carried over from the current status.
#[doc(alias = "calculateStatus")]
pub fn calculate_status(
    d: &Deployment,
    all_rss: &[Arc<ReplicaSet>],
    new_rs: Option<&Arc<ReplicaSet>>,
    now: Timestamp,
) -> DeploymentStatus {
    let all = || all_rss.iter().map(|rs| &**rs);
    let available = available_replica_count(all());
    let total = replica_count(all());
    let current = d.status.clone().unwrap_or_default();
    let mut status = DeploymentStatus {
        observed_generation: Some(generation(d)),
        replicas: Some(actual_replica_count(all())),
        updated_replicas: Some(actual_replica_count(new_rs.map(|rs| &**rs))),
        ready_replicas: Some(ready_replica_count(all())),
        available_replicas: Some(available),
        unavailable_replicas: Some((total - available).max(0)),
        collision_count: current.collision_count,
        conditions: current.conditions.filter(|c| !c.is_empty()),
        terminating_replicas: current.terminating_replicas,
    };
    let condition = if available >= replicas(d) - max_unavailable(d) {
        new_condition(
            AVAILABLE,
            TRUE,
            MINIMUM_REPLICAS_AVAILABLE,
            "Deployment has minimum availability.",
            now,
        )
    } else {
        new_condition(
            AVAILABLE,
            FALSE,
            MINIMUM_REPLICAS_UNAVAILABLE,
            "Deployment does not have minimum availability.",
            now,
        )
    };
    set_condition(&mut status, condition);
    status
}

/// Whether two statuses differ in anything the API would store: counts compare with unset as zero.
pub fn status_equal(a: &DeploymentStatus, b: &DeploymentStatus) -> bool {
    let norm = |s: &DeploymentStatus| {
        let z = |v: Option<i32>| v.unwrap_or(0);
        (
            s.observed_generation.unwrap_or(0),
            z(s.replicas),
            z(s.updated_replicas),
            z(s.ready_replicas),
            z(s.available_replicas),
            z(s.unavailable_replicas),
            s.collision_count,
            s.conditions.clone().unwrap_or_default(),
        )
    };
    norm(a) == norm(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::conditions::get_condition;
    use crate::deployment::fixtures::{new_deployment, new_rs_with_status, with_available};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    #[test]
    fn status_counts_come_from_the_replica_sets() {
        let mut d = new_deployment(
            "foo",
            5,
            None,
            Some(IntOrString::Int(1)),
            Some(IntOrString::Int(1)),
            &[],
        );
        d.metadata.generation = Some(3);
        let new_rs = Arc::new(with_available(new_rs_with_status("new", 3, 3, &[]), 2));
        let old_rs = Arc::new(with_available(new_rs_with_status("old", 3, 3, &[]), 3));
        let now = Timestamp::from_second(1_000).unwrap();
        let s = calculate_status(&d, &[old_rs, new_rs.clone()], Some(&new_rs), now);
        assert_eq!(s.observed_generation, Some(3));
        assert_eq!(s.replicas, Some(6));
        assert_eq!(s.updated_replicas, Some(3));
        assert_eq!(s.available_replicas, Some(5));
        assert_eq!(s.unavailable_replicas, Some(1));
        let available = get_condition(&s, AVAILABLE).unwrap();
        assert_eq!(available.status, TRUE);
    }

    #[test]
    fn too_few_available_replicas_make_the_deployment_unavailable() {
        let d = new_deployment(
            "foo",
            5,
            None,
            Some(IntOrString::Int(1)),
            Some(IntOrString::Int(1)),
            &[],
        );
        let rs = Arc::new(with_available(new_rs_with_status("new", 5, 5, &[]), 3));
        let s = calculate_status(
            &d,
            std::slice::from_ref(&rs),
            Some(&rs),
            Timestamp::UNIX_EPOCH,
        );
        let available = get_condition(&s, AVAILABLE).unwrap();
        assert_eq!(
            (available.status.as_str(), available.reason.as_deref()),
            (FALSE, Some(MINIMUM_REPLICAS_UNAVAILABLE))
        );
        assert_eq!(s.unavailable_replicas, Some(2));
    }
}
