//! A StatefulSet's status: counting its pods, completing a rolling update, deciding whether to
//! write, and writing `/status` (`computeReplicaStatus`, `updateStatus`, `completeRollingUpdate`,
//! `inconsistentStatus` and `stateful_set_status_updater.go`).

use std::sync::Arc;

use async_trait::async_trait;
use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{StatefulSet, StatefulSetStatus};
use k8s_openapi::api::core::v1::Pod;
use kube::api::PostParams;
use kube::{Api, Client};
use rkcm_runtime::api_error;
use rkcm_runtime::informer::Store;
use rkcm_runtime::ObjectKey;

use super::identity::{
    is_created, is_rolling_update, is_running_and_available, is_running_and_ready, is_terminating,
    pod_revision, replicas,
};

/// `spec.minReadySeconds`.
pub fn min_ready_seconds(set: &StatefulSet) -> i32 {
    set.spec
        .as_ref()
        .and_then(|s| s.min_ready_seconds)
        .unwrap_or(0)
}

/// Recounts `replicas`, `readyReplicas`, `availableReplicas`, `currentReplicas` and
/// `updatedReplicas` over `pods` (`updateStatus`): created pods, running-and-ready (and available
/// after `min_ready_seconds`), and, of the created pods not being deleted, those at each revision.
pub fn update_counts<'a>(
    status: &mut StatefulSetStatus,
    min_ready_seconds: i32,
    current_revision: &str,
    update_revision: &str,
    pods: impl IntoIterator<Item = &'a Pod>,
    now: Timestamp,
) {
    let (mut replicas, mut ready, mut available, mut current, mut updated) = (0, 0, 0, 0, 0);
    for pod in pods {
        if is_created(pod) {
            replicas += 1;
        }
        if is_running_and_ready(pod) {
            ready += 1;
            if is_running_and_available(pod, min_ready_seconds, now) {
                available += 1;
            }
        }
        if is_created(pod) && !is_terminating(pod) {
            let revision = pod_revision(pod);
            if revision == current_revision {
                current += 1;
            }
            if revision == update_revision {
                updated += 1;
            }
        }
    }
    status.replicas = replicas;
    status.ready_replicas = Some(ready);
    status.available_replicas = Some(available);
    status.current_replicas = Some(current);
    status.updated_replicas = Some(updated);
}

/// Ends a rolling update whose pods are all updated and ready: the update revision becomes the
/// current one (`completeRollingUpdate`).
pub fn complete_rolling_update(set: &StatefulSet, status: &mut StatefulSetStatus) {
    let want = replicas(set) as i32;
    if is_rolling_update(set)
        && status.updated_replicas.unwrap_or(0) == want
        && status.ready_replicas.unwrap_or(0) == want
        && status.replicas == want
    {
        status.current_replicas = status.updated_replicas;
        status.current_revision = status.update_revision.clone();
    }
}

/// Whether `status` differs from what the set has recorded (`inconsistentStatus`).
pub fn inconsistent_status(set: &StatefulSet, status: &StatefulSetStatus) -> bool {
    let old = set.status.clone().unwrap_or_default();
    let n = |v: Option<i32>| v.unwrap_or(0);
    status.observed_generation.unwrap_or(0) > old.observed_generation.unwrap_or(0)
        || status.replicas != old.replicas
        || n(status.current_replicas) != n(old.current_replicas)
        || n(status.ready_replicas) != n(old.ready_replicas)
        || n(status.updated_replicas) != n(old.updated_replicas)
        || status.current_revision.as_deref().unwrap_or_default()
            != old.current_revision.as_deref().unwrap_or_default()
        || n(status.available_replicas) != n(old.available_replicas)
        || status.update_revision.as_deref().unwrap_or_default()
            != old.update_revision.as_deref().unwrap_or_default()
}

/// Writes a set's status (`StatefulSetStatusUpdaterInterface`).
#[async_trait]
pub trait StatusUpdater: Send + Sync {
    /// Sets `set`'s status to `status`, retrying conflicts from the cache.
    async fn update_status(
        &self,
        set: &StatefulSet,
        status: &StatefulSetStatus,
    ) -> Result<(), kube::Error>;
}

use super::pod_control::CONFLICT_BACKOFF;

/// [`StatusUpdater`] on the API server, refreshing from the set informer's cache on conflict.
#[derive(Clone)]
pub struct ApiStatusUpdater {
    client: Client,
    sets: Store<StatefulSet>,
}

impl ApiStatusUpdater {
    /// Writes through `client`, refreshes from `sets`.
    pub fn new(client: Client, sets: Store<StatefulSet>) -> Self {
        Self { client, sets }
    }
}

#[async_trait]
impl StatusUpdater for ApiStatusUpdater {
    async fn update_status(
        &self,
        set: &StatefulSet,
        status: &StatefulSetStatus,
    ) -> Result<(), kube::Error> {
        let namespace = set.metadata.namespace.clone().unwrap_or_default();
        let name = set.metadata.name.clone().unwrap_or_default();
        let api: Api<StatefulSet> = Api::namespaced(self.client.clone(), &namespace);
        let mut current = set.clone();
        let mut last = None;
        // kube's `retry.RetryOnConflict(retry.DefaultBackoff, …)`.
        for attempt in 0..=CONFLICT_BACKOFF.len() {
            current.status = Some(status.clone());
            match api
                .replace_status(&name, &PostParams::default(), &current)
                .await
            {
                Ok(_) => return Ok(()),
                Err(err) if api_error::is_conflict(&err) => {
                    if let Some(fresh) = self.sets.get(&ObjectKey::new(&namespace, &name)) {
                        current = (*fresh).clone();
                    }
                    last = Some(err);
                    if let Some(delay) = CONFLICT_BACKOFF.get(attempt) {
                        tokio::time::sleep(*delay).await;
                    }
                }
                Err(err) => return Err(err),
            }
        }
        Err(last.expect("the loop ran at least once and only continues after a conflict"))
    }
}

/// The pods of `lists`, for [`update_counts`].
pub fn all<'a>(lists: &'a [&'a [Arc<Pod>]]) -> impl Iterator<Item = &'a Pod> {
    lists.iter().flat_map(|l| l.iter().map(|p| &**p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statefulset::fixtures::{new_stateful_set, pod_of, set_ready, set_running};

    #[test]
    fn counts_follow_phase_readiness_and_revision() {
        let set = new_stateful_set("foo", 3);
        let now = Timestamp::now();
        let mut a = pod_of(&set, 0);
        set_running(&mut a);
        set_ready(&mut a, now);
        crate::statefulset::identity::set_pod_revision(&mut a, "r1");
        let mut b = pod_of(&set, 1);
        set_running(&mut b);
        crate::statefulset::identity::set_pod_revision(&mut b, "r2");
        let c = pod_of(&set, 2); // not created: no phase
        let mut status = StatefulSetStatus::default();
        update_counts(&mut status, 0, "r1", "r2", [&a, &b, &c], now);
        assert_eq!(status.replicas, 2);
        assert_eq!(status.ready_replicas, Some(1));
        assert_eq!(status.available_replicas, Some(1));
        assert_eq!(
            (status.current_replicas, status.updated_replicas),
            (Some(1), Some(1))
        );
        // minReadySeconds not yet elapsed: ready but not available.
        update_counts(&mut status, 10, "r1", "r2", [&a, &b, &c], now);
        assert_eq!(status.available_replicas, Some(0));
    }

    #[test]
    fn a_finished_rolling_update_makes_the_update_revision_current() {
        let set = new_stateful_set("foo", 3);
        let mut status = StatefulSetStatus {
            replicas: 3,
            ready_replicas: Some(3),
            updated_replicas: Some(3),
            current_replicas: Some(0),
            current_revision: Some("r1".into()),
            update_revision: Some("r2".into()),
            ..Default::default()
        };
        complete_rolling_update(&set, &mut status);
        assert_eq!(status.current_revision.as_deref(), Some("r2"));
        assert_eq!(status.current_replicas, Some(3));
        assert!(inconsistent_status(&set, &status));
        let mut recorded = set.clone();
        recorded.status = Some(status.clone());
        assert!(!inconsistent_status(&recorded, &status));
    }
}
