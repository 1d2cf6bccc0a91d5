//! PodGC: force-deletes terminated pods above a threshold, orphaned pods, and terminating pods
//! that will never finish (k8s.io/kubernetes `pkg/controller/podgc`).
//!
//! Every `gc_check_period` it runs kube's four rules in kube's order over the pod and node caches:
//! terminated pods above `--terminated-pod-gc-threshold` (evicted, then oldest first); terminating
//! pods on not-ready nodes tainted `node.kubernetes.io/out-of-service`; pods bound to nodes that
//! are gone (after a quarantine and an uncached GET of the node); terminating pods never
//! scheduled. A non-terminal pod is first patched to `Failed` (orphans also get a
//! `DisruptionTarget` condition), then deleted with a grace period of 0.

pub mod metrics;
pub mod rules;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition};
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::Client;
use parking_lot::Mutex;
use rkcm_runtime::informer::{wait_for_cache_sync, InformerFactory, SharedInformer};
use rkcm_runtime::{api_error, Clock, ObjectKey, Shutdown, SystemClock};

use self::rules::{Quarantine, Reason};
use crate::nodelifecycle::{pod_node_name, POD_NODE_NAME_INDEX};

/// Index of the pods a rule may pick, by why: [`TERMINATED`] or [`TERMINATING`]. With
/// [`POD_NODE_NAME_INDEX`], a pass reads (decodes) only those and the pods of missing nodes,
/// rather than every cached pod.
const GC_CANDIDATE_INDEX: &str = "podgcCandidate";
/// [`GC_CANDIDATE_INDEX`] value of the pods [`rules::is_pod_terminated`] holds for.
const TERMINATED: &str = "terminated";
/// [`GC_CANDIDATE_INDEX`] value of the pods [`rules::is_pod_terminating`] holds for.
const TERMINATING: &str = "terminating";

/// The index function of [`GC_CANDIDATE_INDEX`].
fn gc_candidate(pod: &Pod) -> Vec<String> {
    [
        (rules::is_pod_terminated(pod), TERMINATED),
        (rules::is_pod_terminating(pod), TERMINATING),
    ]
    .into_iter()
    .filter(|(holds, _)| *holds)
    .map(|(_, value)| value.to_string())
    .collect()
}

/// Default `--terminated-pod-gc-threshold`.
pub const DEFAULT_TERMINATED_POD_GC_THRESHOLD: i64 = 12_500;
/// How often the rules run (`gcCheckPeriod`).
pub const GC_CHECK_PERIOD: Duration = Duration::from_secs(20);
/// How long a node missing from the cache waits before the uncached check (`quarantineTime`).
pub const QUARANTINE_TIME: Duration = Duration::from_secs(40);

/// Settings of the [`PodGcController`].
#[derive(Clone)]
pub struct Config {
    /// Terminated pods kept before the oldest are deleted; 0 or less disables that rule.
    pub terminated_pod_gc_threshold: i64,
    /// Period of the rules (20 s).
    pub gc_check_period: Duration,
    /// Quarantine of missing nodes (40 s).
    pub quarantine_time: Duration,
    /// Wall clock for the quarantine and condition timestamps.
    pub clock: Arc<dyn Clock>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            terminated_pod_gc_threshold: DEFAULT_TERMINATED_POD_GC_THRESHOLD,
            gc_check_period: GC_CHECK_PERIOD,
            quarantine_time: QUARANTINE_TIME,
            clock: Arc::new(SystemClock),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field(
                "terminated_pod_gc_threshold",
                &self.terminated_pod_gc_threshold,
            )
            .field("gc_check_period", &self.gc_check_period)
            .field("quarantine_time", &self.quarantine_time)
            .finish_non_exhaustive()
    }
}

/// Errors from force-deleting one pod.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Marking the pod `Failed` failed.
    #[error("failed to mark pod {pod} as failed")]
    MarkFailed {
        /// The pod.
        pod: ObjectKey,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Deleting the pod failed.
    #[error("failed to delete pod {pod}")]
    Delete {
        /// The pod.
        pod: ObjectKey,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// The pod garbage collector. One instance per cluster (it runs under the manager's leader
/// election); its state is the quarantine of missing nodes.
pub struct PodGcController {
    client: Client,
    pod_informer: SharedInformer<Pod>,
    node_informer: SharedInformer<Node>,
    config: Config,
    quarantine: Mutex<Quarantine>,
}

impl PodGcController {
    /// PodGC over the factory's Pod and Node informers.
    pub fn new(factory: &InformerFactory, client: Client, config: Config) -> Arc<Self> {
        // Register the counters now so that /metrics lists them before the first deletion.
        let _ = metrics::metrics();
        let pod_informer = factory.informer::<Pod>();
        pod_informer.add_indexer(GC_CANDIDATE_INDEX, gc_candidate);
        pod_informer.add_indexer(POD_NODE_NAME_INDEX, pod_node_name);
        Arc::new(Self {
            client,
            pod_informer,
            node_informer: factory.informer::<Node>(),
            config,
            quarantine: Mutex::new(Quarantine::default()),
        })
    }

    /// Waits for the caches, then runs [`PodGcController::gc`] now and `gc_check_period` after
    /// each run ends, until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        tracing::info!(controller = "podgc", "starting controller");
        if wait_for_cache_sync("GC", &[&self.pod_informer, &self.node_informer], &shutdown).await {
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = self.gc() => {}
                }
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    _ = tokio::time::sleep(self.config.gc_check_period) => {}
                }
            }
        }
        tracing::info!(controller = "podgc", "shutting down controller");
    }

    /// One pass of the four rules over the current caches.
    ///
    /// kube lists every pod and lets each rule filter; pods are decoded on read here, so the pass
    /// reads only the pods a rule can pick: terminated ones, terminating ones and those bound to
    /// nodes missing from the cache, all read at the start as kube's list is.
    pub async fn gc(&self) {
        let store = self.pod_informer.store();
        let terminated = store.by_index(GC_CANDIDATE_INDEX, TERMINATED);
        let terminating = store.by_index(GC_CANDIDATE_INDEX, TERMINATING);
        let nodes = self.node_informer.store().list();
        let existing: HashSet<String> = nodes
            .iter()
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        let on_missing: Vec<Arc<Pod>> = store
            .index_values(POD_NODE_NAME_INDEX)
            .into_iter()
            .filter(|node| !existing.contains(node))
            .flat_map(|node| store.by_index(POD_NODE_NAME_INDEX, &node))
            .collect();
        if self.config.terminated_pod_gc_threshold > 0 {
            let victims =
                rules::terminated_to_delete(&terminated, self.config.terminated_pod_gc_threshold);
            if !victims.is_empty() {
                tracing::info!(count = victims.len(), "garbage collecting terminated pods");
            }
            self.force_delete_all(&victims, Reason::Terminated, None)
                .await;
        }

        let by_name: std::collections::HashMap<&str, &Node> = nodes
            .iter()
            .filter_map(|n| n.metadata.name.as_deref().map(|name| (name, &**n)))
            .collect();
        let victims =
            rules::terminating_out_of_service(&terminating, |name| by_name.get(name).copied());
        self.force_delete_all(&victims, Reason::TerminatingOutOfService, None)
            .await;

        self.gc_orphaned(&on_missing, &existing).await;

        let victims = rules::unscheduled_terminating(&terminating);
        self.force_delete_all(&victims, Reason::TerminatingUnscheduled, None)
            .await;
    }

    /// Deletes pods bound to nodes that are gone: nodes missing from the cache wait out the
    /// quarantine, then an uncached GET decides (`gcOrphaned`). `pods` holds at least every pod
    /// bound to a node not in `existing`.
    async fn gc_orphaned(&self, pods: &[Arc<Pod>], existing: &HashSet<String>) {
        let now = self.config.clock.now();
        let ready = {
            let mut quarantine = self.quarantine.lock();
            quarantine.observe(
                rules::missing_nodes(pods, existing),
                now,
                self.config.quarantine_time,
            );
            quarantine.take_ready(now)
        };
        let mut deleted = HashSet::new();
        let api: Api<Node> = Api::all(self.client.clone());
        for name in ready {
            if existing.contains(&name) {
                continue;
            }
            match api.get_opt(&name).await {
                Ok(None) => {
                    deleted.insert(name);
                }
                Ok(Some(_)) => {}
                // The node goes back into quarantine on the next pass if still missing.
                Err(e) => {
                    tracing::error!(node = %name, error = %api_error::message(&e), "error while getting node")
                }
            }
        }
        if deleted.is_empty() {
            return;
        }
        let victims = rules::orphaned(pods, &deleted);
        self.force_delete_all(&victims, Reason::Orphaned, Some(rules::orphan_condition()))
            .await;
    }

    async fn force_delete_all(
        &self,
        pods: &[Arc<Pod>],
        reason: Reason,
        condition: Option<PodCondition>,
    ) {
        join_all(pods.iter().map(|pod| {
            let condition = condition.clone();
            async move {
                let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
                let labels = metrics::labels(namespace, reason);
                metrics::metrics().deleting_pods.get_or_create(&labels).inc();
                match self.mark_failed_and_delete(pod, condition).await {
                    Ok(()) => tracing::info!(pod = %ObjectKey::from_obj(&**pod), reason = reason.as_str(), "forced deletion of pod succeeded"),
                    Err(e) => {
                        tracing::error!(error = %api_error::Chain(&e), reason = reason.as_str(), "forced deletion of pod failed");
                        metrics::metrics().deleting_pod_errors.get_or_create(&labels).inc();
                    }
                }
            }
        }))
        .await;
    }

    /// Moves a non-terminal pod to `Failed` (with `condition`), then deletes it with grace 0
    /// (`markFailedAndDeletePodWithCondition`). `pod` is the copy the rules looked at: the status
    /// patch sets the phase and `condition` only, whatever else changed since.
    pub async fn mark_failed_and_delete(
        &self,
        pod: &Pod,
        condition: Option<PodCondition>,
    ) -> Result<(), Error> {
        let key = ObjectKey::from_obj(pod);
        tracing::info!(pod = %key, "PodGC is force deleting pod");
        let api: Api<Pod> = Api::namespaced(self.client.clone(), key.namespace_str());
        if let Some(patch) = rules::fail_status_patch(pod, condition, self.config.clock.now()) {
            api.patch_status(
                &key.name,
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            )
            .await
            .map_err(|source| Error::MarkFailed {
                pod: key.clone(),
                source,
            })?;
        }
        api.delete(
            &key.name,
            &DeleteParams {
                grace_period_seconds: Some(0),
                ..DeleteParams::default()
            },
        )
        .await
        .map_err(|source| Error::Delete { pod: key, source })?;
        Ok(())
    }
}
