//! The apps/v1 Deployment defaults and typed accessors that the decision functions read.
//!
//! kube-apiserver defaults every Deployment before the controller sees it
//! (`pkg/apis/apps/v1/defaults.go`); [`set_defaults`] applies the same defaults so that the
//! controller behaves identically against a server that leaves optional fields unset.

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentStrategy, ReplicaSet, RollingUpdateDeployment,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// `spec.strategy.type` of a Deployment that replaces pods gradually.
pub const ROLLING_UPDATE: &str = "RollingUpdate";
/// `spec.strategy.type` of a Deployment that stops every old pod before starting new ones.
pub const RECREATE: &str = "Recreate";
/// Label added to a ReplicaSet, its selector and its pod template to tell revisions apart.
#[doc(alias = "DefaultDeploymentUniqueLabelKey")]
pub const POD_TEMPLATE_HASH_LABEL: &str = "pod-template-hash";
/// Default `spec.revisionHistoryLimit`.
pub const DEFAULT_REVISION_HISTORY_LIMIT: i32 = 10;
/// Default `spec.progressDeadlineSeconds`.
pub const DEFAULT_PROGRESS_DEADLINE_SECONDS: i32 = 600;

/// Applies the apps/v1 defaults: replicas 1, RollingUpdate with 25% surge and 25% unavailable,
/// revisionHistoryLimit 10, progressDeadlineSeconds 600.
pub fn set_defaults(d: &mut Deployment) {
    let spec = d.spec.get_or_insert_with(Default::default);
    spec.replicas.get_or_insert(1);
    spec.revision_history_limit
        .get_or_insert(DEFAULT_REVISION_HISTORY_LIMIT);
    spec.progress_deadline_seconds
        .get_or_insert(DEFAULT_PROGRESS_DEADLINE_SECONDS);
    let strategy = spec
        .strategy
        .get_or_insert_with(DeploymentStrategy::default);
    let type_ = strategy
        .type_
        .get_or_insert_with(|| ROLLING_UPDATE.to_string());
    if type_ == ROLLING_UPDATE {
        let ru = strategy
            .rolling_update
            .get_or_insert_with(RollingUpdateDeployment::default);
        ru.max_surge
            .get_or_insert_with(|| IntOrString::String("25%".into()));
        ru.max_unavailable
            .get_or_insert_with(|| IntOrString::String("25%".into()));
    }
}

/// `spec.replicas` of a Deployment (1 when unset, as defaulted by the API server).
pub fn replicas(d: &Deployment) -> i32 {
    d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// `spec.replicas` of a ReplicaSet (1 when unset, as defaulted by the API server).
pub fn rs_replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
}

/// `status.replicas` of a ReplicaSet.
pub fn rs_status_replicas(rs: &ReplicaSet) -> i32 {
    rs.status.as_ref().map_or(0, |s| s.replicas)
}

/// `status.availableReplicas` of a ReplicaSet.
pub fn rs_available_replicas(rs: &ReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0)
}

/// `status.readyReplicas` of a ReplicaSet.
pub fn rs_ready_replicas(rs: &ReplicaSet) -> i32 {
    rs.status
        .as_ref()
        .and_then(|s| s.ready_replicas)
        .unwrap_or(0)
}

/// `spec.strategy.type`, `RollingUpdate` when unset.
pub fn strategy_type(d: &Deployment) -> &str {
    d.spec
        .as_ref()
        .and_then(|s| s.strategy.as_ref())
        .and_then(|s| s.type_.as_deref())
        .unwrap_or(ROLLING_UPDATE)
}

/// Whether the Deployment uses the RollingUpdate strategy.
#[doc(alias = "IsRollingUpdate")]
pub fn is_rolling_update(d: &Deployment) -> bool {
    strategy_type(d) == ROLLING_UPDATE
}

/// `spec.paused`.
pub fn is_paused(d: &Deployment) -> bool {
    d.spec.as_ref().and_then(|s| s.paused).unwrap_or(false)
}

/// `spec.minReadySeconds`.
pub fn min_ready_seconds(d: &Deployment) -> i32 {
    d.spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0)
}

/// `spec.progressDeadlineSeconds`, `None` when progress is not tracked (unset or `MaxInt32`).
#[doc(alias = "HasProgressDeadline")]
pub fn progress_deadline_seconds(d: &Deployment) -> Option<i32> {
    d.spec
        .as_ref()
        .and_then(|s| s.progress_deadline_seconds)
        .filter(|&s| s != i32::MAX)
}

/// `spec.revisionHistoryLimit`, `None` when every revision is kept (unset or `MaxInt32`).
#[doc(alias = "HasRevisionHistoryLimit")]
pub fn revision_history_limit(d: &Deployment) -> Option<i32> {
    d.spec
        .as_ref()
        .and_then(|s| s.revision_history_limit)
        .filter(|&s| s != i32::MAX)
}

/// `metadata.generation`.
pub fn generation(d: &Deployment) -> i64 {
    d.metadata.generation.unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_apps_v1_defaults() {
        let mut d = Deployment::default();
        set_defaults(&mut d);
        let spec = d.spec.as_ref().unwrap();
        assert_eq!(spec.replicas, Some(1));
        assert_eq!(spec.revision_history_limit, Some(10));
        assert_eq!(spec.progress_deadline_seconds, Some(600));
        let ru = spec
            .strategy
            .as_ref()
            .unwrap()
            .rolling_update
            .as_ref()
            .unwrap();
        assert_eq!(ru.max_surge, Some(IntOrString::String("25%".into())));
        assert_eq!(ru.max_unavailable, Some(IntOrString::String("25%".into())));
        assert!(is_rolling_update(&d));
    }

    #[test]
    fn recreate_deployments_get_no_rolling_update_parameters() {
        let mut d = Deployment::default();
        d.spec.get_or_insert_with(Default::default).strategy = Some(DeploymentStrategy {
            type_: Some(RECREATE.into()),
            rolling_update: None,
        });
        set_defaults(&mut d);
        assert!(d.spec.unwrap().strategy.unwrap().rolling_update.is_none());
    }

    #[test]
    fn max_int32_means_no_deadline_and_no_history_limit() {
        let mut d = Deployment::default();
        set_defaults(&mut d);
        let spec = d.spec.as_mut().unwrap();
        spec.progress_deadline_seconds = Some(i32::MAX);
        spec.revision_history_limit = Some(i32::MAX);
        assert_eq!(progress_deadline_seconds(&d), None);
        assert_eq!(revision_history_limit(&d), None);
    }
}
