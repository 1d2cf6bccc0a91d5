//! `sync(key)`: one DaemonSet's history, pods and status (`syncDaemonSet`, `updateDaemonSet`,
//! `manage`, `syncNodes`, `getDaemonPods` and `updateDaemonSetStatus` of kube).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, PostParams};
use rkcm_labels::selects_everything;
use rkcm_runtime::controller_ref::{
    self, recheck_owner, ControllerRefManager, OwnerInfo, PodControlPatcher,
};
use rkcm_runtime::events::EventType;
use rkcm_runtime::pod_control::PodControlError;
use rkcm_runtime::slow_start::{slow_start_batch, SLOW_START_INITIAL_BATCH_SIZE};
use rkcm_runtime::ObjectKey;

use super::handlers::selector_of;
use super::history::HistoryError;
use super::node_pods::{group_by_node, unscheduled_pods_without_node, NodeToDaemonPods};
use super::plan::pods_should_be_on_node;
use super::pod_template::{
    create_pod_template, replace_node_name_affinity, template_generation,
    CONTROLLER_REVISION_HASH_LABEL,
};
use super::rolling::{rolling_update, RollingUpdateError};
use super::status::{apply_counts, calculate_status, status_up_to_date};
use super::strategy::{strategy_type, ROLLING_UPDATE};
use super::{DaemonSetsController, SELECTING_ALL_REASON};

/// Times a failed status update is retried after a fresh GET (`StatusUpdateRetries`).
const STATUS_UPDATE_RETRIES: usize = 1;

/// Pod creations and deletions that failed, reported together as kube's `NewAggregate` does.
#[derive(Debug, thiserror::Error)]
#[error("{}", aggregate(.0))]
pub struct PodErrors(pub Vec<PodControlError>);

fn aggregate(errors: &[PodControlError]) -> String {
    match errors {
        [one] => one.to_string(),
        many => format!(
            "[{}]",
            many.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Why a sync failed; the key is retried with rate limiting.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The revision history could not be built.
    #[error("failed to construct revisions of DaemonSet {owner}")]
    History {
        /// The DaemonSet.
        owner: ObjectKey,
        /// The failure.
        #[source]
        source: HistoryError,
    },
    /// Old revisions could not be deleted.
    #[error("failed to clean up revisions of DaemonSet {owner}")]
    CleanupHistory {
        /// The DaemonSet.
        owner: ObjectKey,
        /// The failure.
        #[source]
        source: HistoryError,
    },
    /// Adopting or releasing pods failed.
    #[error("couldn't get node to daemon pod mapping for daemon set {owner}")]
    Claim {
        /// The DaemonSet.
        owner: ObjectKey,
        /// The failure.
        #[source]
        source: controller_ref::Error,
    },
    /// The rolling update parameters are invalid or a node vanished.
    #[error("rolling update of daemon set {owner} failed")]
    RollingUpdate {
        /// The DaemonSet.
        owner: ObjectKey,
        /// The failure.
        #[source]
        source: RollingUpdateError,
    },
    /// Creating or deleting pods failed.
    #[error("failed to sync the pods of daemon set {owner}")]
    Pods {
        /// The DaemonSet.
        owner: ObjectKey,
        /// The failures.
        #[source]
        source: PodErrors,
    },
    /// Writing `/status` failed.
    #[error("error storing status for daemon set {owner}")]
    Status {
        /// The DaemonSet.
        owner: ObjectKey,
        /// The failure.
        #[source]
        source: kube::Error,
    },
}

impl DaemonSetsController {
    /// Syncs the DaemonSet with `key`: its revision history, then, unless it still waits on
    /// expectations, its pods on every node and its rolling update; always its status. Not
    /// called concurrently for one key.
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let started = std::time::Instant::now();
        let result = self.sync_inner(key).await;
        tracing::debug!(daemonset = %key, elapsed = ?started.elapsed(), "finished syncing daemon set");
        result
    }

    async fn sync_inner(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let Some(ds) = self.ds_store.get(key) else {
            tracing::debug!(daemonset = %key, "daemon set has been deleted");
            self.expectations.delete_expectations(key);
            return Ok(());
        };
        let mut nodes = self.node_store.list();
        nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        if ds
            .spec
            .as_ref()
            .is_some_and(|s| selects_everything(&s.selector))
        {
            self.recorder.event_for(
                &*ds,
                EventType::Warning,
                SELECTING_ALL_REASON,
                "This daemon set is selecting all pods. A non-empty selector is required.",
            );
            return Ok(());
        }
        // A DaemonSet being deleted may already have lost its history (the garbage collector
        // does not order pods before revisions): its status cannot be computed reliably.
        if ds.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let (cur, old) =
            self.construct_history(&ds)
                .await
                .map_err(|source| SyncError::History {
                    owner: key.clone(),
                    source,
                })?;
        let hash = cur
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL))
            .cloned()
            .unwrap_or_default();

        if !self.expectations.satisfied_expectations(key) {
            // Only the status; observedGeneration stays, as this generation was not acted on.
            return self.update_status(&ds, key, &nodes, &hash, false).await;
        }
        let result = self.update_daemon_set(&ds, key, &nodes, &hash, &old).await;
        let status = self.update_status(&ds, key, &nodes, &hash, true).await;
        match (result, status) {
            (Err(e), Err(status_error)) => {
                tracing::error!(daemonset = %key, error = %rkcm_runtime::api_error::Chain(&status_error), "failed to update status");
                Err(e)
            }
            (Err(e), Ok(())) | (Ok(()), Err(e)) => Err(e),
            (Ok(()), Ok(())) => Ok(()),
        }
    }

    /// Pods on every node, then one rolling-update step, then old revisions (`updateDaemonSet`).
    async fn update_daemon_set(
        &self,
        ds: &Arc<DaemonSet>,
        key: &ObjectKey,
        nodes: &[Arc<Node>],
        hash: &str,
        old: &[Arc<ControllerRevision>],
    ) -> Result<(), SyncError> {
        self.manage(ds, key, nodes, hash).await?;
        if self.expectations.satisfied_expectations(key) && strategy_type(ds) == ROLLING_UPDATE {
            let by_node = self.claimed_by_node(ds, key, false).await?;
            let plan = rolling_update(ds, nodes, by_node, hash, self.config.clock.now()).map_err(
                |source| SyncError::RollingUpdate {
                    owner: key.clone(),
                    source,
                },
            )?;
            self.sync_nodes(ds, key, &plan.delete, &plan.create_on, hash)
                .await?;
        }
        self.cleanup_history(ds, old)
            .await
            .map_err(|source| SyncError::CleanupHistory {
                owner: key.clone(),
                source,
            })
    }

    /// Creates the pods nodes lack and deletes those they should not have (`manage`).
    async fn manage(
        &self,
        ds: &Arc<DaemonSet>,
        key: &ObjectKey,
        nodes: &[Arc<Node>],
        hash: &str,
    ) -> Result<(), SyncError> {
        let by_node = self.claimed_by_node(ds, key, false).await?;
        let now = self.config.clock.now();
        let mut create_on = Vec::new();
        let mut delete = Vec::new();
        for node in nodes {
            let plan =
                pods_should_be_on_node(node, &by_node, ds, hash, &self.failed_pods_backoff, now);
            if plan.needs_pod {
                create_on.extend(node.metadata.name.clone());
            }
            delete.extend(plan.delete);
            for event in plan.events {
                self.recorder
                    .event_for(&**ds, event.type_, event.reason, event.message);
            }
            if let Some(after) = plan.requeue_after {
                self.queue.add_after(key.clone(), after);
            }
        }
        // Pods meant for nodes that are gone are never scheduled, and PodGC leaves them.
        delete.extend(unscheduled_pods_without_node(nodes, &by_node));
        self.sync_nodes(ds, key, &delete, &create_on, hash).await
    }

    /// Deletes `to_delete` and creates a pod on each node of `create_on`, at most
    /// `burst_replicas` of each, creations in slow-start batches, with expectations raised first
    /// and lowered for anything that will not be observed (`syncNodes`).
    async fn sync_nodes(
        &self,
        ds: &Arc<DaemonSet>,
        key: &ObjectKey,
        to_delete: &[String],
        create_on: &[String],
        hash: &str,
    ) -> Result<(), SyncError> {
        let create_diff = create_on.len().min(self.config.burst_replicas);
        let delete_diff = to_delete.len().min(self.config.burst_replicas);
        // Set before acting: the informer may see a pod before its create call returns.
        self.expectations
            .set_expectations(key, create_diff, delete_diff);
        let namespace = key.namespace_str();
        let owner = OwnerInfo::from_resource(&**ds);
        let object_ref = owner.object_ref();
        let controller_ref = owner.controller_ref();
        let mut errors = Vec::new();

        if create_diff > 0 {
            tracing::debug!(daemonset = %key, nodes = ?&create_on[..create_diff], "nodes needing daemon pods, creating");
            let generation = template_generation(ds).ok().flatten();
            let template = create_pod_template(
                &ds.spec
                    .as_ref()
                    .map(|s| s.template.clone())
                    .unwrap_or_default(),
                generation,
                hash,
            );
            let next = AtomicUsize::new(0);
            let (successes, error) =
                slow_start_batch(create_diff, SLOW_START_INITIAL_BATCH_SIZE, || {
                    let ix = next.fetch_add(1, Ordering::Relaxed);
                    let mut pod_template = template.clone();
                    // The scheduler binds the pod to its node through this affinity; nothing
                    // in the template can conflict with it (the node was chosen by it).
                    if let (Some(spec), Some(node)) =
                        (pod_template.spec.as_mut(), create_on.get(ix))
                    {
                        spec.affinity =
                            Some(replace_node_name_affinity(spec.affinity.take(), node));
                    }
                    let (object_ref, controller_ref) = (&object_ref, &controller_ref);
                    async move {
                        match self
                            .pod_control
                            .create_pods(namespace, &pod_template, object_ref, controller_ref)
                            .await
                        {
                            // Everything fails in a terminating namespace: nothing to retry.
                            Err(PodControlError::NamespaceTerminating(_)) => Ok(()),
                            other => other,
                        }
                    }
                })
                .await;
            let unobserved = create_diff.saturating_sub(successes);
            if unobserved > 0 {
                // Failed and skipped creations will not be observed; the next sync retries.
                tracing::debug!(daemonset = %key, unobserved, "slow-start failure: decrementing expectations");
                self.expectations.lower_expectations(key, unobserved, 0);
            }
            errors.extend(error);
        }

        if delete_diff > 0 {
            tracing::debug!(daemonset = %key, pods = ?&to_delete[..delete_diff], "pods to delete for daemon set, deleting");
            let results = join_all(to_delete[..delete_diff].iter().map(|name| {
                let object_ref = &object_ref;
                async move {
                    match self
                        .pod_control
                        .delete_pod(namespace, name, object_ref)
                        .await
                    {
                        Ok(()) => None,
                        Err(e) => {
                            // The informer will not observe this deletion.
                            self.expectations.lower_expectations(key, 0, 1);
                            (!e.is_not_found()).then_some(e)
                        }
                    }
                }
            }))
            .await;
            errors.extend(results.into_iter().flatten());
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(SyncError::Pods {
                owner: key.clone(),
                source: PodErrors(errors),
            })
        }
    }

    /// The pods `ds` owns, adopting matching orphans and releasing owned pods that stopped
    /// matching (`getDaemonPods`). Adoption first re-reads the DaemonSet uncached (#42639).
    pub(crate) async fn daemon_pods(
        &self,
        ds: &Arc<DaemonSet>,
    ) -> Result<Vec<Arc<Pod>>, controller_ref::Error> {
        let namespace = ds.metadata.namespace.as_deref().unwrap_or("");
        // Its own pods and the namespace's orphans: the claim skips pods other controllers own,
        // so the indices give the candidates kube finds by listing the namespace.
        let uid = ds.metadata.uid.as_deref().unwrap_or("");
        let mut pods = self.pod_store.claimable(namespace, uid);
        pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let selector = selector_of(ds);
        let owner = OwnerInfo::from_resource(&**ds);
        let api: Api<DaemonSet> = Api::namespaced(self.client.clone(), namespace);
        let recheck = owner.clone();
        let can_adopt = move || {
            let (api, info) = (api.clone(), recheck.clone());
            async move { recheck_owner(&api, &info).await }
        };
        let patcher = Arc::new(PodControlPatcher(Arc::clone(&self.pod_control)));
        let claimed =
            ControllerRefManager::<Pod>::with_patcher(patcher, owner, &selector, can_adopt)
                .claim(&pods)
                .await;
        claimed
    }

    /// The pods `ds` owns grouped by node (`getNodesToDaemonPods`).
    pub(crate) async fn nodes_to_daemon_pods(
        &self,
        ds: &Arc<DaemonSet>,
        include_deleted_terminal: bool,
    ) -> Result<NodeToDaemonPods, controller_ref::Error> {
        let pods = self.daemon_pods(ds).await?;
        Ok(group_by_node(&pods, include_deleted_terminal))
    }

    async fn claimed_by_node(
        &self,
        ds: &Arc<DaemonSet>,
        key: &ObjectKey,
        include_deleted_terminal: bool,
    ) -> Result<NodeToDaemonPods, SyncError> {
        self.nodes_to_daemon_pods(ds, include_deleted_terminal)
            .await
            .map_err(|source| SyncError::Claim {
                owner: key.clone(),
                source,
            })
    }

    /// Computes the status and writes it if it changed, with one GET-and-retry; requeues after
    /// `minReadySeconds` while ready pods are not yet available (`updateDaemonSetStatus`).
    async fn update_status(
        &self,
        ds: &Arc<DaemonSet>,
        key: &ObjectKey,
        nodes: &[Arc<Node>],
        hash: &str,
        update_observed_generation: bool,
    ) -> Result<(), SyncError> {
        let by_node = self.claimed_by_node(ds, key, false).await?;
        let counts = calculate_status(ds, nodes, &by_node, hash, self.config.clock.now());
        if !status_up_to_date(ds, &counts) {
            let api: Api<DaemonSet> = Api::namespaced(self.client.clone(), key.namespace_str());
            let status_error = |source| SyncError::Status {
                owner: key.clone(),
                source,
            };
            let generation = update_observed_generation
                .then_some(ds.metadata.generation)
                .flatten();
            let mut current = (**ds).clone();
            let mut attempt = 0;
            loop {
                current.status = Some(apply_counts(
                    current.status.clone().unwrap_or_default(),
                    &counts,
                    generation,
                ));
                match api
                    .replace_status(&key.name, &PostParams::default(), &current)
                    .await
                {
                    Ok(_) => break,
                    Err(e) if attempt >= STATUS_UPDATE_RETRIES => return Err(status_error(e)),
                    Err(e) => {
                        tracing::debug!(daemonset = %key, error = %rkcm_runtime::api_error::message(&e), "status update failed, retrying with a fresh copy");
                        attempt += 1;
                        // If the GET fails the counts cannot be trusted: that error matters more.
                        current = api.get(&key.name).await.map_err(status_error)?;
                    }
                }
            }
        }
        // A last line of defence against clock skew: look again once minReadySeconds passed.
        let min_ready = ds
            .spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0);
        if min_ready > 0 && counts.number_ready != counts.number_available {
            self.queue.add_after(
                key.clone(),
                Duration::from_secs(u64::try_from(min_ready).unwrap_or(0)),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::fixtures::{new_daemon_set, new_node, new_pod, taint, with_hash, Fixture};
    use crate::daemon::pod_template::{TAINT_NODE_UNSCHEDULABLE, TEMPLATE_GENERATION_LABEL};
    use crate::deployment::hash::compute_hash;
    use http::{Method, StatusCode};
    use rkcm_runtime::scheduling::node_affinity;
    use rkcm_runtime::testing::{ApiResponse, FakeApi};
    use std::collections::BTreeMap;

    /// An API that accepts every write and echoes it back, and serves `ds` on GET.
    fn echo_api(ds: &DaemonSet) -> FakeApi {
        let ds = ds.clone();
        FakeApi::new(move |req| {
            if req.method == Method::GET && req.path.contains("/daemonsets/") {
                return ApiResponse::ok(&ds);
            }
            ApiResponse {
                status: if req.method == Method::POST {
                    StatusCode::CREATED
                } else {
                    StatusCode::OK
                },
                body: req.body.clone(),
            }
        })
    }

    fn hash_of(ds: &DaemonSet) -> String {
        compute_hash(&ds.spec.as_ref().unwrap().template, None)
    }

    fn with_generation(mut ds: DaemonSet, generation: i64) -> DaemonSet {
        ds.metadata.annotations = Some(BTreeMap::from([(
            super::super::pod_template::DEPRECATED_TEMPLATE_GENERATION.to_string(),
            generation.to_string(),
        )]));
        ds
    }

    fn target_nodes(f: &Fixture) -> Vec<String> {
        let mut nodes: Vec<String> = f
            .pod_control
            .creates()
            .iter()
            .map(|c| {
                let pod = Pod {
                    metadata: c.template.metadata.clone().unwrap_or_default(),
                    spec: c.template.spec.clone(),
                    status: None,
                };
                super::super::pod_template::target_node_name(&pod).expect("node affinity")
            })
            .collect();
        nodes.sort();
        nodes
    }

    /// Ported from daemon_controller_test.go `TestSimpleDaemonSetLaunchesPods` and
    /// `TestSimpleDaemonSetScheduleDaemonSetPodsLaunchesPods`: one pod per node, each pinned to
    /// its node by a required `metadata.name` affinity, with the revision labels and the daemon
    /// tolerations; the revision is created.
    #[tokio::test]
    async fn a_simple_daemon_set_launches_one_pod_per_node() {
        let ds = with_generation(new_daemon_set("foo"), 1);
        let api = echo_api(&ds);
        let f = Fixture::with_client(api.client());
        for i in 0..5 {
            f.add_node(new_node(&format!("node-{i}"), None));
        }
        let key = f.add_ds(ds.clone());
        f.ctrl.sync(&key).await.expect("sync");

        assert_eq!(
            target_nodes(&f),
            ["node-0", "node-1", "node-2", "node-3", "node-4"]
        );
        let hash = hash_of(&ds);
        for created in f.pod_control.creates() {
            let labels = created.template.metadata.clone().unwrap().labels.unwrap();
            assert_eq!(labels.get(CONTROLLER_REVISION_HASH_LABEL), Some(&hash));
            assert_eq!(
                labels.get(TEMPLATE_GENERATION_LABEL).map(String::as_str),
                Some("1")
            );
            let spec = created.template.spec.clone().unwrap();
            assert!(spec.node_name.is_none(), "the scheduler binds daemon pods");
            assert!(spec
                .tolerations
                .unwrap()
                .iter()
                .any(|t| t.key.as_deref() == Some(TAINT_NODE_UNSCHEDULABLE)));
            assert_eq!(created.controller_ref.kind, "DaemonSet");
        }
        // Each pod fits only its own node.
        let first = &f.pod_control.creates()[0];
        let pod = Pod {
            metadata: Default::default(),
            spec: first.template.spec.clone(),
            status: None,
        };
        let fitting = f
            .ctrl
            .node_store()
            .list()
            .iter()
            .filter(|n| node_affinity::matches(&pod, n))
            .count();
        assert_eq!(fitting, 1);

        let requests = api.requests();
        let revision = requests
            .iter()
            .find(|r| r.method == Method::POST && r.path.ends_with("/controllerrevisions"))
            .expect("the revision is created");
        assert_eq!(
            revision.body["metadata"]["name"],
            serde_json::json!(format!("foo-{hash}"))
        );
        assert_eq!(revision.body["revision"], serde_json::json!(1));
        let status = requests
            .iter()
            .find(|r| r.method == Method::PUT && r.path.ends_with("/status"))
            .expect("the status is written");
        assert_eq!(status.body["status"]["desiredNumberScheduled"], 5);
        assert_eq!(status.body["status"]["currentNumberScheduled"], 0);
        assert_eq!(status.body["status"]["observedGeneration"], 1);
        assert_eq!(f.ctrl.expectations().get_expectations(&key), Some((5, 0)));
    }

    /// Ported from daemon_controller_test.go `TestSimpleDaemonSetPodCreateErrors` /
    /// burstReplicas: at most burst pods per sync, and nothing more until they are observed.
    #[tokio::test]
    async fn creations_are_capped_by_burst_and_wait_for_expectations() {
        let ds = new_daemon_set("foo");
        let api = echo_api(&ds);
        let f = Fixture::with_client_and_burst(api.client(), 2);
        for i in 0..5 {
            f.add_node(new_node(&format!("node-{i}"), None));
        }
        let key = f.add_ds(ds.clone());
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 2);
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 2, "waits for its creations");
        f.ctrl.expectations().creation_observed(&key);
        f.ctrl.expectations().creation_observed(&key);
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 4);
    }

    /// Ported from daemon_controller_test.go `TestDaemonSetPodCreateExpectationsError`: failed
    /// creations lower the expectations so the next sync retries.
    #[tokio::test]
    async fn failed_creations_lower_expectations() {
        let ds = new_daemon_set("foo");
        let api = echo_api(&ds);
        let f = Fixture::with_client(api.client());
        for i in 0..3 {
            f.add_node(new_node(&format!("node-{i}"), None));
        }
        f.pod_control
            .fail_creates(|| PodControlError::Invalid("quota exceeded".into()));
        let key = f.add_ds(ds.clone());
        let err = f.ctrl.sync(&key).await.expect_err("creations fail");
        assert!(matches!(err, SyncError::Pods { .. }), "{err}");
        // Slow start: one attempt, the rest skipped; nothing left to wait for.
        assert_eq!(f.pod_control.create_calls(), 1);
        assert!(f.ctrl.expectations().satisfied_expectations(&key));
    }

    /// Ported from daemon_controller_test.go `TestDaemonSetWithEmptySelector`... a selector
    /// selecting everything gets a SelectingAll warning and no pods.
    #[tokio::test]
    async fn a_daemon_set_selecting_everything_does_nothing() {
        let mut ds = new_daemon_set("foo");
        ds.spec.as_mut().unwrap().selector = Default::default();
        let api = echo_api(&ds);
        let mut f = Fixture::with_client(api.client());
        f.add_node(new_node("node-0", None));
        let key = f.add_ds(ds);
        f.ctrl.sync(&key).await.expect("sync");
        assert!(f.pod_control.creates().is_empty());
        assert!(api.requests().is_empty());
        assert_eq!(f.event_reasons(), [SELECTING_ALL_REASON]);
    }

    /// Ported from daemon_controller_test.go `TestSelectorDaemonDeletesUnselectedPods` and
    /// `TestTaintedNodeDaemonDoesNotLaunchIntolerantPod`: pods on nodes the set may not run on
    /// are deleted, tainted nodes get none, and the status counts them as misscheduled.
    #[tokio::test]
    async fn misscheduled_pods_are_deleted_and_tainted_nodes_get_none() {
        let ds = new_daemon_set("foo");
        let hash = hash_of(&ds);
        let api = echo_api(&ds);
        let f = Fixture::with_client(api.client());
        let mut evicting = new_node("node-evict", None);
        evicting.spec.get_or_insert_with(Default::default).taints =
            Some(vec![taint("evict", "", "NoExecute")]);
        let mut no_schedule = new_node("node-noschedule", None);
        no_schedule.spec.get_or_insert_with(Default::default).taints =
            Some(vec![taint("gpu", "", "NoSchedule")]);
        f.add_node(evicting);
        f.add_node(no_schedule);
        f.add_node(new_node("node-ok", None));
        f.add_pod(with_hash(
            new_pod("on-evict", Some("node-evict"), &ds),
            &hash,
        ));
        f.add_pod(with_hash(new_pod("on-ok", Some("node-ok"), &ds), &hash));
        let key = f.add_ds(ds);
        f.ctrl.sync(&key).await.expect("sync");
        assert!(f.pod_control.creates().is_empty());
        assert_eq!(f.pod_control.deleted_names(), ["on-evict"]);
        let status = api
            .requests()
            .into_iter()
            .find(|r| r.method == Method::PUT && r.path.ends_with("/status"))
            .expect("status written");
        assert_eq!(status.body["status"]["desiredNumberScheduled"], 1);
        assert_eq!(status.body["status"]["numberMisscheduled"], 1);
        assert_eq!(status.body["status"]["updatedNumberScheduled"], 1);
    }

    /// Ported from daemon_controller_test.go `TestDaemonKillFailedPods`: a failed pod is deleted
    /// with a FailedDaemonPod warning; its replacement comes in a later sync.
    #[tokio::test]
    async fn failed_pods_are_killed_with_a_warning() {
        let ds = new_daemon_set("foo");
        let api = echo_api(&ds);
        let mut f = Fixture::with_client(api.client());
        f.add_node(new_node("node-0", None));
        // From the current revision, so the rolling update leaves it to the manage loop.
        let mut failed = with_hash(new_pod("failed", Some("node-0"), &ds), &hash_of(&ds));
        failed.status.as_mut().unwrap().phase = Some("Failed".into());
        f.add_pod(failed);
        let key = f.add_ds(ds);
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.deleted_names(), ["failed"]);
        assert!(f.pod_control.creates().is_empty());
        assert_eq!(f.event_reasons(), ["FailedDaemonPod"]);
        // The kubelet keeps failing it: the next deletion waits out the backoff (1 s, then 2 s).
        f.ctrl.expectations().lower_expectations(&key, 0, 1);
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.deleted_names().len(), 1);
        f.clock.step(Duration::from_secs(1));
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.deleted_names().len(), 2);
        f.ctrl.expectations().lower_expectations(&key, 0, 1);
        f.clock.step(Duration::from_secs(1));
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.deleted_names().len(), 2);
    }

    /// Ported from update_test.go `TestDaemonSetUpdatesPods` (one step) and the OnDelete case:
    /// a RollingUpdate deletes maxUnavailable old pods; OnDelete deletes none.
    #[tokio::test]
    async fn a_template_change_rolls_by_max_unavailable_or_waits_for_deletions() {
        for (strategy, want_deletes) in [("RollingUpdate", 1), ("OnDelete", 0)] {
            let mut ds = new_daemon_set("foo");
            ds.spec
                .as_mut()
                .unwrap()
                .update_strategy
                .as_mut()
                .unwrap()
                .type_ = Some(strategy.into());
            let api = echo_api(&ds);
            let f = Fixture::with_client(api.client());
            for i in 0..3 {
                let node = format!("node-{i}");
                f.add_node(new_node(&node, None));
                f.add_pod(with_hash(
                    new_pod(&format!("old-{i}"), Some(&node), &ds),
                    "old",
                ));
            }
            let key = f.add_ds(ds);
            f.ctrl.sync(&key).await.expect("sync");
            assert!(f.pod_control.creates().is_empty(), "{strategy}");
            assert_eq!(f.pod_control.deletes().len(), want_deletes, "{strategy}");
        }
    }

    /// Ported from daemon_controller_test.go `TestDeleteUnscheduledPodForNotExistingNode`.
    #[tokio::test]
    async fn unscheduled_pods_for_missing_nodes_are_deleted() {
        let ds = new_daemon_set("foo");
        let hash = hash_of(&ds);
        let api = echo_api(&ds);
        let f = Fixture::with_client(api.client());
        f.add_node(new_node("node-0", None));
        f.add_pod(with_hash(new_pod("ok", Some("node-0"), &ds), &hash));
        let mut orphaned = with_hash(new_pod("lost", None, &ds), &hash);
        orphaned.spec.as_mut().unwrap().affinity =
            Some(replace_node_name_affinity(None, "node-gone"));
        f.add_pod(orphaned);
        let key = f.add_ds(ds);
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.deleted_names(), ["lost"]);
    }

    /// Ported from daemon_controller_test.go `TestUpdateDaemonSetStatus`-style expectation
    /// cases: while expectations are pending only the status is written, without raising
    /// observedGeneration.
    #[tokio::test]
    async fn pending_expectations_only_update_the_status() {
        let mut ds = new_daemon_set("foo");
        ds.metadata.generation = Some(2);
        ds.status.as_mut().unwrap().observed_generation = Some(1);
        let api = echo_api(&ds);
        let f = Fixture::with_client(api.client());
        f.add_node(new_node("node-0", None));
        let key = f.add_ds(ds);
        f.ctrl.expectations().set_expectations(&key, 1, 0);
        f.ctrl.sync(&key).await.expect("sync");
        assert!(f.pod_control.creates().is_empty());
        let status = api
            .requests()
            .into_iter()
            .find(|r| r.method == Method::PUT && r.path.ends_with("/status"))
            .expect("status written");
        assert_eq!(status.body["status"]["observedGeneration"], 1);
        assert_eq!(status.body["status"]["desiredNumberScheduled"], 1);
    }

    /// Ported from daemon_controller_test.go `TestUpdateSelectorToAdoptPods`-style claiming: an
    /// orphan with matching labels is adopted, and a pod on its node is not duplicated.
    #[tokio::test]
    async fn matching_orphans_are_adopted() {
        let ds = new_daemon_set("foo");
        let hash = hash_of(&ds);
        let api = echo_api(&ds);
        let f = Fixture::with_client(api.client());
        f.add_node(new_node("node-0", None));
        let mut orphan = with_hash(new_pod("orphan", Some("node-0"), &ds), &hash);
        orphan.metadata.owner_references = None;
        f.add_pod(orphan);
        let key = f.add_ds(ds);
        f.ctrl.sync(&key).await.expect("sync");
        // Every claim of the sync (manage, rolling update, status) reads the same stale cache,
        // as kube's lister does, so each adopts it again.
        let patches = f.pod_control.patches();
        assert!(!patches.is_empty());
        assert!(patches.iter().all(|p| p.1 == "orphan"));
        assert_eq!(
            patches[0].2["metadata"]["ownerReferences"][0]["kind"],
            serde_json::json!("DaemonSet")
        );
        assert!(f.pod_control.creates().is_empty());
    }

    /// Ported from update_test.go `TestDaemonSetUpdatesPodsWithMaxSurge` (one sync): maxSurge
    /// nodes get a new pod next to their old one; nothing is deleted yet.
    #[tokio::test]
    async fn max_surge_creates_new_pods_next_to_old_ones() {
        let ds = crate::daemon::fixtures::with_rolling_update(
            new_daemon_set("foo"),
            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(0),
            k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(1),
        );
        let api = echo_api(&ds);
        let f = Fixture::with_client(api.client());
        for i in 0..3 {
            let node = format!("node-{i}");
            f.add_node(new_node(&node, None));
            f.add_pod(with_hash(
                new_pod(&format!("old-{i}"), Some(&node), &ds),
                "old",
            ));
        }
        let key = f.add_ds(ds.clone());
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(target_nodes(&f), ["node-0"]);
        assert!(f.pod_control.deletes().is_empty());
        let labels = f.pod_control.creates()[0]
            .template
            .metadata
            .clone()
            .unwrap()
            .labels
            .unwrap();
        assert_eq!(
            labels.get(CONTROLLER_REVISION_HASH_LABEL),
            Some(&hash_of(&ds))
        );
    }

    /// Ported from update_test.go `TestDaemonSetHistoryCleanup`-style cases of `cleanupHistory`:
    /// old revisions beyond revisionHistoryLimit go, oldest first, unless a pod still uses them.
    #[tokio::test]
    async fn old_revisions_beyond_the_limit_are_deleted() {
        let mut ds = new_daemon_set("foo");
        ds.spec.as_mut().unwrap().revision_history_limit = Some(1);
        let api = echo_api(&ds);
        let f = Fixture::with_client(api.client());
        f.add_node(new_node("node-0", None));
        f.add_pod(with_hash(new_pod("p", Some("node-0"), &ds), "h1"));
        let owner = OwnerInfo::from_resource(&ds);
        for (name, hash, revision) in [
            ("foo-h1", "h1", 1),
            ("foo-h2", "h2", 2),
            ("foo-h3", "h3", 3),
        ] {
            let mut old = ds.clone();
            old.spec
                .as_mut()
                .unwrap()
                .template
                .spec
                .as_mut()
                .unwrap()
                .containers[0]
                .image = Some(format!("img:{revision}"));
            let mut rev = crate::daemon::history::new_revision(&old, hash, revision);
            rev.metadata.name = Some(name.into());
            rev.metadata.owner_references = Some(vec![owner.controller_ref()]);
            f.ctrl.history_store().insert(Arc::new(rev));
        }
        let key = f.add_ds(ds);
        f.ctrl.sync(&key).await.expect("sync");
        let deleted: Vec<String> = api
            .requests()
            .into_iter()
            .filter(|r| r.method == Method::DELETE)
            .map(|r| r.path.rsplit('/').next().unwrap_or("").to_string())
            .collect();
        // Three old revisions, limit 1: two go, but foo-h1 is still in use by pod p.
        assert_eq!(deleted, ["foo-h2", "foo-h3"]);
    }

    /// Ported from daemon_controller_test.go `TestInsufficientCapacityNodeDaemonLaunchesPod`: the
    /// controller does not check resources; the scheduler decides (and leaves the pod Pending).
    #[tokio::test]
    async fn a_full_node_still_gets_its_daemon_pod() {
        use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
        let mut ds = new_daemon_set("foo");
        ds.spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap()
            .containers[0]
            .resources = Some(k8s_openapi::api::core::v1::ResourceRequirements {
            requests: Some(BTreeMap::from([("cpu".to_string(), Quantity("75".into()))])),
            ..Default::default()
        });
        let api = echo_api(&ds);
        let f = Fixture::with_client(api.client());
        let mut node = new_node("too-small", None);
        node.status.as_mut().unwrap().allocatable =
            Some(BTreeMap::from([("cpu".to_string(), Quantity("1".into()))]));
        f.add_node(node);
        let key = f.add_ds(ds);
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(target_nodes(&f), ["too-small"]);
    }

    /// Ported from daemon_controller_test.go `TestDaemonSetRespectsTermination`: a pod being
    /// deleted keeps its node occupied (no second pod, no second deletion) unless it has
    /// finished, in which case the node gets a new pod at once.
    #[tokio::test]
    async fn terminating_pods_hold_their_node_until_they_finish() {
        let ds = new_daemon_set("foo");
        let hash = hash_of(&ds);
        let api = echo_api(&ds);
        let f = Fixture::with_client(api.client());
        f.add_node(new_node("node-0", None));
        f.add_node(new_node("node-1", None));
        let deleting_time =
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(crate::daemon::fixtures::ts(0));
        let mut terminating = with_hash(new_pod("terminating", Some("node-0"), &ds), &hash);
        terminating.metadata.deletion_timestamp = Some(deleting_time.clone());
        f.add_pod(terminating);
        let mut finished = with_hash(new_pod("finished", Some("node-1"), &ds), &hash);
        finished.metadata.deletion_timestamp = Some(deleting_time);
        finished.status.as_mut().unwrap().phase = Some("Succeeded".into());
        f.add_pod(finished);
        let key = f.add_ds(ds);
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(target_nodes(&f), ["node-1"]);
        assert!(f.pod_control.deletes().is_empty());
    }
}
