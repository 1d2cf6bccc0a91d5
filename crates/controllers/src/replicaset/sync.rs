//! `sync(key)`: bring one ReplicaSet's pods to `spec.replicas` and write its status
//! (`syncReplicaSet`, `manageReplicas`, `claimPods` and `updateReplicaSetStatus` of kube).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, PostParams};
use rkcm_labels::Selector;
use rkcm_runtime::informer::CONTROLLER_UID_INDEX;
use rkcm_runtime::slow_start::{slow_start_batch, SLOW_START_INITIAL_BATCH_SIZE};
use rkcm_runtime::ObjectKey;

use rkcm_runtime::controller_ref::{
    self, recheck_owner, ControllerRefManager, OwnerInfo, PodControlPatcher,
};
use rkcm_runtime::pod_control::{self, PodControlError};

use super::handlers::controller_of;
use super::pod_state::filter_active_pods;
use super::replicas::{pods_to_delete, replica_diff, ReplicaDiff};
use super::status::{calculate_status, status_needs_update};
use super::{ReplicaSetController, ReplicaSetKind};

/// Times a failed status update is retried after a fresh GET (`statusUpdateRetries`).
const STATUS_UPDATE_RETRIES: usize = 1;

/// Why a sync failed; the key is retried with rate limiting.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// Creating pods failed (the rest of the slow-start batches were skipped).
    #[error("failed to create pods for {owner}")]
    Create {
        /// The ReplicaSet.
        owner: ObjectKey,
        /// The first failure.
        #[source]
        source: PodControlError,
    },
    /// Deleting surplus pods failed.
    #[error("failed to delete pods of {owner}")]
    Delete {
        /// The ReplicaSet.
        owner: ObjectKey,
        /// The first failure.
        #[source]
        source: PodControlError,
    },
    /// Adopting or releasing pods failed.
    #[error("failed to claim pods for {owner}")]
    Claim {
        /// The ReplicaSet.
        owner: ObjectKey,
        /// The failure.
        #[source]
        source: controller_ref::Error,
    },
    /// Writing `/status` failed.
    #[error("failed to update status of {owner}")]
    Status {
        /// The ReplicaSet.
        owner: ObjectKey,
        /// The failure.
        #[source]
        source: kube::Error,
    },
}

impl SyncError {
    /// The message kube puts in the `ReplicaFailure` condition: the error `RealPodControl`
    /// returned (the API's `Status` message; `unable to delete pods: …` for a deletion).
    fn condition_message(&self) -> String {
        match self {
            SyncError::Create { source, .. } => source.message(),
            SyncError::Delete { source, .. } => pod_control::unable_to_delete(source),
            other => other.to_string(),
        }
    }
}

impl<K: ReplicaSetKind> ReplicaSetController<K> {
    /// Syncs the object with `key`: unless it still waits on expectations, creates or deletes
    /// pods to match `spec.replicas`; always recomputes and, if it changed, writes the status.
    /// Not called concurrently for one key.
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let started = std::time::Instant::now();
        let result = self.sync_inner(key).await;
        tracing::debug!(kind = %K::kind(&()), %key, elapsed = ?started.elapsed(), "finished syncing");
        result
    }

    async fn sync_inner(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let Some(obj) = self.rs_store.get(key) else {
            tracing::debug!(kind = %K::kind(&()), %key, "deleted");
            self.expectations.delete_expectations(key);
            return Ok(());
        };
        let rs = obj.to_replica_set();
        let needs_sync = self.expectations.satisfied_expectations(key);
        let selector = match obj.selector() {
            Ok(selector) => selector,
            Err(e) => {
                // Retrying cannot fix a bad selector; the next update of the object will.
                tracing::error!(kind = %K::kind(&()), %key, error = %e, "invalid pod selector");
                return Ok(());
            }
        };

        // The pods this object may claim: those carrying its controller reference (including
        // ones that stopped matching, to release them) and the namespace's orphans. kube lists
        // the whole namespace here; the two indices give the same candidates without a scan.
        let uid = obj.meta().uid.clone().unwrap_or_default();
        let mut all_pods = self.pod_store.claimable(key.namespace_str(), &uid);
        // Index order is arbitrary; sort by name so that ties in the deletion ranking and the
        // order of adoptions are deterministic.
        all_pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let active = filter_active_pods(&all_pods);
        let claimed = self.claim_pods(&obj, key, &selector, &active).await?;

        let manage_error = if needs_sync && rs.metadata.deletion_timestamp.is_none() {
            self.manage_replicas(&obj, &rs, key, &claimed).await.err()
        } else {
            None
        };

        let message = manage_error.as_ref().map(SyncError::condition_message);
        let new_status = calculate_status(&rs, &claimed, message.as_deref(), self.clock.now());
        let updated = self.update_status(&obj, &rs, key, new_status).await?;

        // Resync after minReadySeconds as a last line of defence against clock skew.
        let min_ready = updated
            .spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0);
        let desired = updated.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        let status = updated.status.clone().unwrap_or_default();
        if manage_error.is_none()
            && min_ready > 0
            && status.ready_replicas.unwrap_or(0) == desired
            && status.available_replicas.unwrap_or(0) != desired
        {
            let after = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0));
            self.queue.add_after(key.clone(), after);
        }
        manage_error.map_or(Ok(()), Err)
    }

    /// Adopts matching orphans and releases owned pods that stopped matching; returns the pods
    /// this object owns (`claimPods`). Adoption first re-reads the object uncached and refuses
    /// if it is being deleted or was re-created (kubernetes#42639).
    async fn claim_pods(
        &self,
        obj: &Arc<K>,
        key: &ObjectKey,
        selector: &Selector,
        pods: &[Arc<Pod>],
    ) -> Result<Vec<Arc<Pod>>, SyncError> {
        let owner = OwnerInfo::from_resource(&**obj);
        let api: Api<K> = Api::namespaced(self.client.clone(), key.namespace_str());
        // RecheckDeletionTimestamp over an uncached GET that also checks the UID (#42639).
        let recheck_owner_info = owner.clone();
        let can_adopt = move || {
            let (api, info) = (api.clone(), recheck_owner_info.clone());
            async move { recheck_owner(&api, &info).await }
        };
        // Adopt and release through pod control, as kube's PodControllerRefManager does.
        let patcher = Arc::new(PodControlPatcher(Arc::clone(&self.pod_control)));
        ControllerRefManager::<Pod>::with_patcher(patcher, owner, selector, can_adopt)
            .claim(pods)
            .await
            .map_err(|source| SyncError::Claim {
                owner: key.clone(),
                source,
            })
    }

    /// Creates or deletes pods so that `filtered` moves towards `spec.replicas`, at most
    /// `burst_replicas` per sync, with expectations raised before and lowered for anything that
    /// will not be observed (`manageReplicas`).
    async fn manage_replicas(
        &self,
        obj: &Arc<K>,
        rs: &ReplicaSet,
        key: &ObjectKey,
        filtered: &[Arc<Pod>],
    ) -> Result<(), SyncError> {
        let desired = obj.desired_replicas();
        let owner = object_reference(&**obj);
        let namespace = key.namespace_str();
        match replica_diff(filtered.len(), desired, self.burst_replicas) {
            ReplicaDiff::None => Ok(()),
            ReplicaDiff::Create(diff) => {
                // Expect every creation up front: the informer may see a pod before its create
                // call returns.
                self.expectations.expect_creations(key, diff);
                tracing::info!(kind = %K::kind(&()), %key, need = desired, creating = diff, "too few replicas");
                let template = rs
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.clone())
                    .unwrap_or_default();
                let controller_ref = controller_ref_of(&**obj);
                // Slow start: batches of 1, 2, 4, …; a failing batch stops the rest, so a
                // quota error does not turn into hundreds of failed calls and events.
                let (successes, error) =
                    slow_start_batch(diff, SLOW_START_INITIAL_BATCH_SIZE, || async {
                        match self
                            .pod_control
                            .create_pods(namespace, &template, &owner, &controller_ref)
                            .await
                        {
                            // Creation cannot succeed in a terminating namespace; nothing to do.
                            Err(PodControlError::NamespaceTerminating(_)) => Ok(()),
                            other => other,
                        }
                    })
                    .await;
                let skipped = diff.saturating_sub(successes);
                if skipped > 0 {
                    // Pods never attempted will not be observed; the next sync retries them.
                    tracing::info!(kind = %K::kind(&()), %key, skipped, "slow-start failure: skipping creation of pods");
                    for _ in 0..skipped {
                        self.expectations.creation_observed(key);
                    }
                }
                match error {
                    Some(source) => Err(SyncError::Create {
                        owner: key.clone(),
                        source,
                    }),
                    None => Ok(()),
                }
            }
            ReplicaDiff::Delete(diff) => {
                tracing::info!(kind = %K::kind(&()), %key, need = desired, deleting = diff, "too many replicas");
                let related = self.indirectly_related_pods(obj);
                let victims = pods_to_delete(filtered, &related, diff, self.clock.now());
                let victim_keys: Vec<ObjectKey> =
                    victims.iter().map(|p| ObjectKey::from_obj(&**p)).collect();
                // Record the exact pods so each deletion is observed once, whether as a
                // deletion timestamp or as the pod leaving the cache.
                self.expectations.expect_deletions(key, &victim_keys);
                let results = join_all(victims.iter().zip(&victim_keys).map(|(pod, pod_key)| {
                    let owner = &owner;
                    async move {
                        let name = pod.metadata.name.as_deref().unwrap_or("");
                        match self.pod_control.delete_pod(namespace, name, owner).await {
                            Ok(()) => None,
                            Err(e) => {
                                // The informer will not observe this deletion.
                                self.expectations.deletion_observed(key, pod_key);
                                if e.is_not_found() {
                                    None
                                } else {
                                    tracing::info!(pod = %pod_key, %key, error = %e, "failed to delete pod, decremented expectations");
                                    Some(e)
                                }
                            }
                        }
                    }
                }))
                .await;
                // The errors are likely the same; report the first.
                match results.into_iter().flatten().next() {
                    Some(source) => Err(SyncError::Delete {
                        owner: key.clone(),
                        source,
                    }),
                    None => Ok(()),
                }
            }
        }
    }

    /// Pods owned by any object sharing this object's controller, e.g. every ReplicaSet of one
    /// Deployment (`getIndirectlyRelatedPods`); used to rank pods by co-location.
    fn indirectly_related_pods(&self, obj: &Arc<K>) -> Vec<Arc<Pod>> {
        let Some(controller) = controller_of(&**obj) else {
            // kube reports this as an error and ranks without related pods.
            return Vec::new();
        };
        let mut seen = HashSet::new();
        let mut related = Vec::new();
        for other in self
            .rs_store
            .by_index(CONTROLLER_UID_INDEX, &controller.uid)
        {
            let Ok(selector) = other.selector() else {
                // An invalid selector matches no pods.
                continue;
            };
            let namespace = other.meta().namespace.as_deref().unwrap_or("");
            for pod in self.pod_store.list_by_namespace(namespace) {
                let labels = pod.metadata.labels.clone().unwrap_or_default();
                if !selector.matches(&labels) {
                    continue;
                }
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                if seen.insert(uid) {
                    related.push(pod);
                }
            }
        }
        related
    }

    /// Writes `new_status` to `/status` if it differs from what the object reports, with one
    /// GET-and-retry on failure (`updateReplicaSetStatus`); returns the object as written.
    async fn update_status(
        &self,
        obj: &Arc<K>,
        rs: &ReplicaSet,
        key: &ObjectKey,
        mut new_status: ReplicaSetStatus,
    ) -> Result<ReplicaSet, SyncError> {
        if !status_needs_update(rs, &new_status) {
            return Ok(rs.clone());
        }
        // Report the generation acted on, so a retry cannot claim a newer spec was seen.
        new_status.observed_generation = rs.metadata.generation;
        let api: Api<K> = Api::namespaced(self.client.clone(), key.namespace_str());
        let status_error = |source| SyncError::Status {
            owner: key.clone(),
            source,
        };
        let mut current = (**obj).clone();
        let mut attempt = 0;
        loop {
            current.set_status(new_status.clone());
            match api
                .replace_status(&key.name, &PostParams::default(), &current)
                .await
            {
                Ok(updated) => return Ok(updated.to_replica_set()),
                Err(e) if attempt >= STATUS_UPDATE_RETRIES => return Err(status_error(e)),
                Err(e) => {
                    tracing::debug!(%key, error = %e, "status update failed, retrying with a fresh copy");
                    attempt += 1;
                    // If the GET fails, the replica counts cannot be trusted anymore: that
                    // error is the more interesting one.
                    current = api.get(&key.name).await.map_err(status_error)?;
                }
            }
        }
    }
}

/// The controller reference the object's pods carry (`metav1.NewControllerRef`).
fn controller_ref_of<K: ReplicaSetKind>(obj: &K) -> OwnerReference {
    let meta = obj.meta();
    OwnerReference {
        api_version: K::api_version(&()).to_string(),
        kind: K::kind(&()).to_string(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// A reference to the object, for the events pod control records.
fn object_reference<K: ReplicaSetKind>(obj: &K) -> ObjectReference {
    let meta = obj.meta();
    ObjectReference {
        api_version: Some(K::api_version(&()).to_string()),
        kind: Some(K::kind(&()).to_string()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replicaset::fixtures::{
        label_map, new_pod, new_replica_set, with_status, Fixture, HookClock,
    };
    use http::{Method, StatusCode};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use rkcm_runtime::expectations::EXPECTATIONS_TIMEOUT;
    use rkcm_runtime::testing::{offline_client, ApiResponse, FakeApi};
    use rkcm_runtime::{FakeClock, Shutdown};
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn foo_bar() -> std::collections::BTreeMap<String, String> {
        label_map(&[("foo", "bar")])
    }

    /// Ported from replica_set_test.go `TestSyncReplicaSetDoesNothing`.
    #[tokio::test]
    async fn sync_does_nothing_when_the_count_is_right() {
        let f = Fixture::<ReplicaSet>::new(BURST);
        let rs = with_status(new_replica_set(2, &foo_bar()), 2, 2);
        let key = f.add_rs(rs.clone());
        f.add_pod(new_pod("pod0", &rs, "Running", true));
        f.add_pod(new_pod("pod1", &rs, "Running", true));
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(
            (f.pod_control.creates().len(), f.pod_control.deletes().len()),
            (0, 0)
        );
    }

    /// Ported from replica_set_test.go `TestSyncReplicaSetDormancy`: expectations hold further
    /// creations until the created pods are observed.
    #[tokio::test]
    async fn sync_creates_missing_replicas_then_waits_for_them() {
        let f = Fixture::<ReplicaSet>::new(BURST);
        let rs = with_status(new_replica_set(2, &foo_bar()), 1, 1);
        let key = f.add_rs(rs.clone());
        f.add_pod(new_pod("pod0", &rs, "Running", true));
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 1);
        assert_eq!(f.ctrl.expectations().get_expectations(&key), Some((1, 0)));

        // Not observed yet: no second creation.
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 1);

        // Observed: in sync again, and the count is right once the pod is cached.
        f.ctrl.expectations().creation_observed(&key);
        let mut rs2 = rs.clone();
        rs2 = with_status(rs2, 2, 2);
        f.add_rs(rs2.clone());
        f.add_pod(new_pod("pod1", &rs2, "Running", true));
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 1);
    }

    /// Ported from replica_set_test.go `TestSyncReplicaSetDeletes`.
    #[tokio::test]
    async fn sync_deletes_the_surplus_preferring_pods_that_are_not_ready() {
        let f = Fixture::<ReplicaSet>::new(BURST);
        let rs = with_status(new_replica_set(1, &foo_bar()), 3, 2);
        let key = f.add_rs(rs.clone());
        f.add_pod(new_pod("ready-a", &rs, "Running", true));
        f.add_pod(new_pod("pending", &rs, "Pending", true));
        f.add_pod(new_pod("ready-b", &rs, "Running", true));
        f.ctrl.sync(&key).await.expect("sync");
        let mut deleted = f.pod_control.deleted_names();
        deleted.sort();
        assert_eq!(deleted.len(), 2);
        assert!(deleted.iter().any(|d| d.contains("pending")), "{deleted:?}");
        assert_eq!(f.ctrl.expectations().get_expectations(&key), Some((0, 2)));
    }

    /// Ported from replica_set_test.go `TestDoNotPatchPodWithOtherControlRef`.
    #[tokio::test]
    async fn a_pod_controlled_by_another_owner_is_neither_patched_nor_counted() {
        let f = Fixture::<ReplicaSet>::new(BURST);
        let rs = new_replica_set(2, &foo_bar());
        let key = f.add_rs(rs.clone());
        let mut foreign = new_pod("pod", &rs, "Running", true);
        if let Some(refs) = foreign.metadata.owner_references.as_mut() {
            refs[0].uid = "another-uid".into();
            refs[0].name = "AnotherRS".into();
        }
        f.add_pod(foreign);
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 2);
        assert!(f.pod_control.patches().is_empty());
    }

    /// Ported from replica_set_test.go `TestControllerBurstReplicas` (creation half).
    #[tokio::test]
    async fn one_sync_creates_at_most_burst_replicas() {
        let f = Fixture::<ReplicaSet>::new(5);
        let rs = new_replica_set(12, &foo_bar());
        let key = f.add_rs(rs);
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 5);
        assert_eq!(f.ctrl.expectations().get_expectations(&key), Some((5, 0)));
    }

    /// Ported from replica_set_test.go `TestDoNotAdoptOrCreateIfBeingDeleted`.
    #[tokio::test]
    async fn a_replica_set_being_deleted_creates_nothing() {
        let f = Fixture::<ReplicaSet>::new(BURST);
        let mut rs = new_replica_set(2, &foo_bar());
        rs.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        let key = f.add_rs(rs);
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 0);
    }

    /// Ported from replica_set_test.go `TestSyncReplicaSetCreateFailures`: slow start stops
    /// after the first failing batch and forgets the creations it never attempted.
    #[tokio::test]
    async fn failing_creations_stop_after_the_first_failing_batch() {
        let f = Fixture::<ReplicaSet>::new(BURST);
        f.pod_control.set_create_limit(10);
        let rs = new_replica_set(100, &foo_bar());
        let key = f.add_rs(rs);
        // The status write then fails too (no server), after the creations were attempted.
        let _ = f.ctrl.sync(&key).await;
        assert_eq!(f.pod_control.creates().len(), 10);
        assert!(
            f.pod_control.create_calls() <= 1 + 2 + 4 + 8,
            "calls: {}",
            f.pod_control.create_calls()
        );
        // Only the successful creations stay expected.
        assert_eq!(f.ctrl.expectations().get_expectations(&key), Some((10, 0)));
    }

    /// A pod that is already gone counts as deleted, not as a failure.
    #[tokio::test]
    async fn deleting_a_pod_that_is_already_gone_is_not_an_error() {
        let f = Fixture::<ReplicaSet>::new(BURST);
        f.pod_control.fail_deletes(|| PodControlError::NotFound);
        let rs = with_status(new_replica_set(0, &foo_bar()), 1, 1);
        let key = f.add_rs(rs.clone());
        f.add_pod(new_pod("pod0", &rs, "Running", true));
        // Status changes (0 replicas wanted, 1 pod counted stays 1): nothing to write.
        f.ctrl.sync(&key).await.expect("NotFound is not an error");
        assert!(f.ctrl.expectations().satisfied_expectations(&key));
    }

    const RS_PATH: &str = "/apis/apps/v1/namespaces/default/replicasets/foobar";
    const RS_STATUS_PATH: &str = "/apis/apps/v1/namespaces/default/replicasets/foobar/status";

    fn internal_error(message: &str) -> ApiResponse {
        ApiResponse::error(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", message)
    }

    fn fixture_with_api(burst: usize, api: &FakeApi) -> Fixture<ReplicaSet> {
        Fixture::with(burst, api.client(), Arc::new(FakeClock::default()))
    }

    /// Ported from replica_set_test.go `TestControllerUpdateStatusWithFailure`: a failed status
    /// update is retried once after a GET, and both updates carry the new status although the
    /// GET returned the old one.
    #[tokio::test]
    async fn a_failed_status_update_is_retried_once_after_a_fresh_get() {
        let rs = new_replica_set(1, &foo_bar());
        let live = {
            let mut live = with_status(rs.clone(), 1, 1);
            live.metadata.resource_version = Some("19".into());
            live
        };
        let api = FakeApi::new(move |req| {
            if req.is(Method::GET, RS_PATH) {
                ApiResponse::ok(&live)
            } else {
                internal_error("fake error")
            }
        });
        let f = fixture_with_api(BURST, &api);
        let key = f.add_rs(rs.clone());
        let obj = f.ctrl.store().get(&key).expect("cached");
        let new_status = ReplicaSetStatus {
            replicas: 10,
            ..Default::default()
        };

        let err = f
            .ctrl
            .update_status(&obj, &rs, &key, new_status)
            .await
            .expect_err("every update fails");
        assert!(matches!(err, SyncError::Status { .. }), "{err}");

        let requests = api.requests();
        let gets: Vec<_> = requests
            .iter()
            .filter(|r| r.method == Method::GET)
            .collect();
        let updates: Vec<_> = requests
            .iter()
            .filter(|r| r.method == Method::PUT)
            .collect();
        assert_eq!((gets.len(), updates.len()), (1, 2), "{requests:?}");
        // The GET is for the right ReplicaSet, between the two updates.
        assert!(requests[1].is(Method::GET, RS_PATH), "{requests:?}");
        for update in &updates {
            assert_eq!(update.path, RS_STATUS_PATH);
            assert_eq!(update.body["status"]["replicas"], 10, "{update:?}");
            assert_eq!(update.body["status"]["observedGeneration"], 1);
        }
        // The retry writes over the version the GET returned.
        assert_eq!(updates[0].body["metadata"]["resourceVersion"], "18");
        assert_eq!(updates[1].body["metadata"]["resourceVersion"], "19");
    }

    /// A status update that loses a conflict succeeds on the retry, over the fresh copy.
    #[tokio::test]
    async fn a_conflicting_status_update_succeeds_on_the_retry() {
        let rs = new_replica_set(1, &foo_bar());
        let mut live = rs.clone();
        live.metadata.resource_version = Some("19".into());
        let updates = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&updates);
        let api = FakeApi::new(move |req| {
            if req.is(Method::GET, RS_PATH) {
                return ApiResponse::ok(&live);
            }
            if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                return ApiResponse::error(
                    StatusCode::CONFLICT,
                    "Conflict",
                    "the object has been modified; please apply your changes to the latest version and try again",
                );
            }
            // Echo the written object back, as the API server does.
            ApiResponse {
                status: StatusCode::OK,
                body: req.body.clone(),
            }
        });
        let f = fixture_with_api(BURST, &api);
        let key = f.add_rs(rs.clone());
        let obj = f.ctrl.store().get(&key).expect("cached");
        let new_status = ReplicaSetStatus {
            replicas: 3,
            ..Default::default()
        };

        let written = f
            .ctrl
            .update_status(&obj, &rs, &key, new_status)
            .await
            .expect("the retry succeeds");
        assert_eq!(written.status.map(|s| s.replicas), Some(3));
        assert_eq!(written.metadata.resource_version.as_deref(), Some("19"));
        assert_eq!(updates.load(Ordering::SeqCst), 2);
    }

    /// Ported from replica_set_test.go `TestControllerUpdateRequeue`: a sync whose status
    /// update fails returns an error, so the worker puts the key back with rate limiting.
    #[tokio::test]
    async fn a_failed_status_update_requeues_the_replica_set() {
        let api = FakeApi::new(|req| {
            if req.path.ends_with("/status") {
                internal_error("failed to update status")
            } else {
                ApiResponse::not_found("replicasets.apps", "foobar")
            }
        });
        let f = fixture_with_api(BURST, &api);
        // The status reports 2 replicas but there is 1 pod: the sync must write the status.
        let rs = with_status(new_replica_set(1, &foo_bar()), 2, 2);
        let key = f.add_rs(rs.clone());
        f.add_pod(new_pod("pod0", &rs, "Running", true));

        let err = f
            .ctrl
            .sync(&key)
            .await
            .expect_err("the status update fails");
        assert!(matches!(err, SyncError::Status { .. }), "{err}");
        assert!(f.pod_control.creates().is_empty());

        let queue = f.ctrl.queue().clone();
        queue.add(key.clone());
        let shutdown = Shutdown::new();
        let ctrl = Arc::clone(&f.ctrl);
        let worker = tokio::spawn(rkcm_runtime::worker::run(
            queue.clone(),
            1,
            shutdown.clone(),
            rkcm_runtime::worker::ErrorPolicy::handle_error(),
            move |key: ObjectKey| {
                let ctrl = Arc::clone(&ctrl);
                async move { ctrl.sync(&key).await }
            },
        ));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while queue.num_requeues(&key) == 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the failed sync was not requeued"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(10), worker)
            .await
            .expect("worker likely deadlocked")
            .expect("worker task");
    }

    /// Ported from replica_set_test.go `TestDoNotAdoptOrCreateIfBeingDeletedRace`: the cache
    /// says the ReplicaSet lives, the uncached GET before adopting says it is being deleted, so
    /// the sync adopts nothing, creates nothing and fails.
    #[tokio::test]
    async fn no_adoption_or_creation_when_the_live_replica_set_is_being_deleted() {
        let rs = new_replica_set(2, &foo_bar());
        let mut live = rs.clone();
        live.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        let api = FakeApi::new(move |req| {
            if req.is(Method::GET, RS_PATH) {
                ApiResponse::ok(&live)
            } else {
                internal_error("unexpected request")
            }
        });
        let f = fixture_with_api(BURST, &api);
        let key = f.add_rs(rs.clone());
        // The recheck happens only when there is a matching orphan to adopt.
        f.add_pod(new_pod("pod1", &rs, "Running", false));

        let err = f.ctrl.sync(&key).await.expect_err("the sync must abort");
        assert!(matches!(err, SyncError::Claim { .. }), "{err}");
        let cause = std::error::Error::source(&err).map(ToString::to_string);
        assert!(
            cause
                .as_deref()
                .is_some_and(|c| c.contains("has just been deleted")),
            "{cause:?}"
        );
        assert_eq!(
            (
                f.pod_control.creates().len(),
                f.pod_control.deletes().len(),
                f.pod_control.patches().len()
            ),
            (0, 0, 0)
        );
        let requests = api.requests();
        assert_eq!(requests.len(), 1, "only the recheck: {requests:?}");
        assert!(requests[0].is(Method::GET, RS_PATH));
    }

    /// Ported from replica_set_test.go `TestRSSyncExpectations`: expectations are checked
    /// before the pods are listed, so a pod that arrives while they are being checked is
    /// counted and not created a second time.
    #[tokio::test]
    async fn expectations_are_checked_before_the_pods_are_listed() {
        let clock = HookClock::default();
        let f = Fixture::<ReplicaSet>::with(2, offline_client(), Arc::new(clock.clone()));
        // Both pods exist and are Pending: the status already says so.
        let rs = with_status(new_replica_set(2, &foo_bar()), 2, 0);
        let key = f.add_rs(rs.clone());
        f.add_pod(new_pod("pod0", &rs, "Pending", true));
        let late = new_pod("pod1", &rs, "Pending", true);

        // One creation is still expected; the expectations are read on the next clock read,
        // where the late pod reaches the cache and the expectations expire, so they are
        // satisfied (kube's FakeRSExpectations does both in SatisfiedExpectations).
        f.ctrl.expectations().expect_creations(&key, 1);
        let (pods, fake) = (f.ctrl.pod_store().clone(), clock.clock.clone());
        clock.on_next_read(move || {
            pods.insert(Arc::new(late));
            fake.step(EXPECTATIONS_TIMEOUT + Duration::from_secs(1));
        });

        f.ctrl.sync(&key).await.expect("nothing to write");
        assert_eq!(
            (
                f.pod_control.creates().len(),
                f.pod_control.deletes().len(),
                f.pod_control.patches().len()
            ),
            (0, 0, 0)
        );
    }

    #[test]
    fn replica_failure_carries_the_error_kube_returns() {
        let status = |message: &str| {
            PodControlError::Api(kube::Error::Api(
                kube::core::Status::failure(message, "Forbidden")
                    .with_code(403)
                    .boxed(),
            ))
        };
        let owner = ObjectKey::new("default", "web");
        let create = SyncError::Create {
            owner: owner.clone(),
            source: status("pods \"web-x\" is forbidden: exceeded quota"),
        };
        assert_eq!(
            create.condition_message(),
            "pods \"web-x\" is forbidden: exceeded quota"
        );
        let delete = SyncError::Delete {
            owner,
            source: status("pods \"web-x\" is forbidden: denied"),
        };
        assert_eq!(
            delete.condition_message(),
            "unable to delete pods: pods \"web-x\" is forbidden: denied"
        );
    }

    const BURST: usize = crate::replicaset::BURST_REPLICAS;
}
