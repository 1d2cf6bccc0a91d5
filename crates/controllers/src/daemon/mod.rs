//! The DaemonSet controller: one pod of each DaemonSet on every node that should run it, rolled
//! out to new templates by RollingUpdate or OnDelete (k8s.io/kubernetes `pkg/controller/daemon`).
//!
//! Pods are not bound by the controller: as in kube 1.33, each pod carries a required node
//! affinity on `metadata.name` of its node and the scheduler binds it. Event handlers
//! (`handlers.rs`) only enqueue keys and observe expectations; `sync.rs` reads the caches,
//! builds the revision history (`history.rs`), creates and deletes pods and writes `/status`.
//! The decisions are pure functions: which nodes run the daemon (`placement.rs`), what each node
//! needs (`plan.rs`), the rolling update (`rolling.rs`) and the status (`status.rs`).

pub mod backoff;
#[cfg(test)]
mod fixtures;
mod handlers;
pub mod history;
pub mod node_pods;
pub mod placement;
pub mod plan;
pub mod pod_template;
pub mod rolling;
pub mod status;
pub mod strategy;
mod sync;

use std::sync::{Arc, Weak};

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use rkcm_runtime::events::EventRecorder;
use rkcm_runtime::expectations::ControllerExpectations;
use rkcm_runtime::history::{ApiHistory, History};
use rkcm_runtime::informer::{wait_for_cache_sync, InformerFactory, SharedInformer, Store};
use rkcm_runtime::pod_control::{PodControl, RealPodControl};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, Clock, ObjectKey, Shutdown, SystemClock};

pub use sync::SyncError;

/// Default number of workers (`--concurrent-daemonset-syncs`).
pub const DEFAULT_WORKERS: usize = 2;
/// Most pods one sync creates or deletes (`BurstReplicas`): higher values can overwhelm the
/// image registry.
pub const BURST_REPLICAS: usize = 250;
/// Source of the controller's events.
pub const EVENT_SOURCE: &str = "daemonset-controller";
/// Name of the work queue (the `name` label of the workqueue metrics).
pub const QUEUE_NAME: &str = "daemonset";
/// Event reason for a DaemonSet whose selector selects every pod.
pub const SELECTING_ALL_REASON: &str = "SelectingAll";
/// Event reason for a pod that cannot be placed on its node. kube 1.33 still defines it but no
/// longer records it: the scheduler places daemon pods and reports what does not fit.
pub const FAILED_PLACEMENT_REASON: &str = "FailedPlacement";

/// Settings of a [`DaemonSetsController`].
#[derive(Clone)]
pub struct Config {
    /// Concurrent syncs; a hint for the caller of [`DaemonSetsController::run`] (default 2).
    pub workers: usize,
    /// Most pods one sync creates or deletes (default [`BURST_REPLICAS`], 250).
    pub burst_replicas: usize,
    /// Wall clock for expectations, failed-pod backoff and `minReadySeconds`.
    pub clock: Arc<dyn Clock>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            workers: DEFAULT_WORKERS,
            burst_replicas: BURST_REPLICAS,
            clock: Arc::new(SystemClock),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("workers", &self.workers)
            .field("burst_replicas", &self.burst_replicas)
            .finish_non_exhaustive()
    }
}

/// Runs one pod of every DaemonSet on each node that should run it.
///
/// Safe to share: handlers and workers run concurrently; a key is never synced by two workers at
/// once (the queue guarantees it).
pub struct DaemonSetsController {
    client: Client,
    pod_control: Arc<dyn PodControl>,
    recorder: EventRecorder,
    /// Pod creations and deletions each DaemonSet waits to observe.
    expectations: ControllerExpectations,
    /// Renumbers and deletes ControllerRevisions.
    history: Arc<dyn History>,
    /// Backoff of deleting failed pods, by DaemonSet, generation and node.
    failed_pods_backoff: backoff::Backoff,
    ds_informer: SharedInformer<DaemonSet>,
    history_informer: SharedInformer<ControllerRevision>,
    pod_informer: SharedInformer<Pod>,
    node_informer: SharedInformer<Node>,
    ds_store: Store<DaemonSet>,
    history_store: Store<ControllerRevision>,
    pod_store: Store<Pod>,
    node_store: Store<Node>,
    queue: RateLimitingQueue<ObjectKey>,
    config: Config,
}

impl DaemonSetsController {
    /// The DaemonSet controller on the factory's DaemonSet, ControllerRevision, Pod and Node
    /// informers; pods are created and deleted through a [`RealPodControl`] and events recorded
    /// with `recorder` (source `daemonset-controller`).
    pub fn new(
        factory: &InformerFactory,
        client: Client,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let pod_control = Arc::new(RealPodControl::new(client.clone(), recorder.clone()));
        Self::with_pod_control(factory, client, pod_control, recorder, config)
    }

    /// The controller with an injected [`PodControl`] (tests use `FakePodControl`).
    pub fn with_pod_control(
        factory: &InformerFactory,
        client: Client,
        pod_control: Arc<dyn PodControl>,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let ds_informer = factory.informer::<DaemonSet>();
        let history_informer = factory.informer::<ControllerRevision>();
        let pod_informer = factory.informer::<Pod>();
        let node_informer = factory.informer::<Node>();
        Arc::new_cyclic(|weak: &Weak<Self>| {
            let on_ds = weak.clone();
            ds_informer.add_event_handler(move |note| {
                if let Some(this) = on_ds.upgrade() {
                    this.on_daemon_set(note);
                }
            });
            let on_history = weak.clone();
            history_informer.add_event_handler(move |note| {
                if let Some(this) = on_history.upgrade() {
                    this.on_history(note);
                }
            });
            let on_pod = weak.clone();
            pod_informer.add_event_handler(move |note| {
                if let Some(this) = on_pod.upgrade() {
                    this.on_pod(note);
                }
            });
            let on_node = weak.clone();
            node_informer.add_event_handler(move |note| {
                if let Some(this) = on_node.upgrade() {
                    this.on_node(note);
                }
            });
            Self {
                history: Arc::new(ApiHistory::new(client.clone(), history_informer.store())),
                client,
                pod_control,
                recorder,
                expectations: ControllerExpectations::new(Arc::clone(&config.clock)),
                failed_pods_backoff: backoff::Backoff::failed_pods(),
                ds_store: ds_informer.store(),
                history_store: history_informer.store(),
                pod_store: pod_informer.store(),
                node_store: node_informer.store(),
                ds_informer: ds_informer.clone(),
                history_informer: history_informer.clone(),
                pod_informer: pod_informer.clone(),
                node_informer: node_informer.clone(),
                queue: RateLimitingQueue::new(QUEUE_NAME),
                config,
            }
        })
    }

    /// Waits for the caches, then runs `workers` sync loops until `shutdown` (failures retried
    /// with rate limiting, without limit, as kube), and forgets idle failed-pod backoffs every
    /// minute.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = QUEUE_NAME, "starting daemon sets controller");
        let synced = wait_for_cache_sync(
            "daemon sets",
            &[
                &self.pod_informer,
                &self.node_informer,
                &self.history_informer,
                &self.ds_informer,
            ],
            &shutdown,
        )
        .await;
        if synced {
            let gc = {
                let this = Arc::clone(&self);
                let shutdown = shutdown.clone();
                async move {
                    let mut tick = tokio::time::interval(backoff::BACKOFF_GC_INTERVAL);
                    loop {
                        tokio::select! {
                            _ = shutdown.cancelled() => break,
                            _ = tick.tick() => this.failed_pods_backoff.gc(this.config.clock.now()),
                        }
                    }
                }
            };
            let this = Arc::clone(&self);
            let workers = worker::run(
                self.queue.clone(),
                workers.max(1),
                shutdown,
                worker::ErrorPolicy::handle_error(),
                move |key: ObjectKey| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&key).await }
                },
            );
            futures::future::join(workers, gc).await;
        }
        self.queue.shutdown();
        tracing::info!(
            controller = QUEUE_NAME,
            "shutting down daemon sets controller"
        );
    }

    /// The work queue of DaemonSet keys (exposed for tests and metrics).
    pub fn queue(&self) -> &RateLimitingQueue<ObjectKey> {
        &self.queue
    }

    /// The pod-creation and deletion expectations of every DaemonSet (exposed for tests).
    pub fn expectations(&self) -> &ControllerExpectations {
        &self.expectations
    }

    /// The DaemonSet cache.
    pub fn ds_store(&self) -> &Store<DaemonSet> {
        &self.ds_store
    }

    /// The ControllerRevision cache.
    pub fn history_store(&self) -> &Store<ControllerRevision> {
        &self.history_store
    }

    /// The pod cache.
    pub fn pod_store(&self) -> &Store<Pod> {
        &self.pod_store
    }

    /// The node cache.
    pub fn node_store(&self) -> &Store<Node> {
        &self.node_store
    }
}
