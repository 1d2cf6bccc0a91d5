//! The ReplicaSet controller, which also serves ReplicationControllers: keeps `spec.replicas`
//! active pods for every ReplicaSet (k8s.io/kubernetes `pkg/controller/replicaset`).
//!
//! One implementation serves both kinds through [`ReplicaSetKind`]: ReplicaSets directly,
//! ReplicationControllers converted on the way in and out (`rc_adapter.rs`), exactly as kube does.
//! Event handlers (`handlers.rs`) only enqueue keys and observe expectations; `sync.rs` reads the
//! caches, adopts and releases pods, creates or deletes the difference and writes `/status`;
//! the decisions themselves are pure functions (`replicas.rs`, `status.rs`).

#[cfg(test)]
mod fixtures;
mod handlers;
pub mod kind;
pub mod pod_state;
mod rc_adapter;
pub mod replicas;
pub mod status;
mod sync;

use std::sync::{Arc, Weak};

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use kube::Client;
use rkcm_runtime::events::EventRecorder;
use rkcm_runtime::expectations::ControllerExpectations;
use rkcm_runtime::informer::{wait_for_cache_sync, InformerFactory, SharedInformer, Store};
use rkcm_runtime::pod_control::{PodControl, RealPodControl};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, Clock, ObjectKey, Shutdown, SystemClock};

pub use kind::ReplicaSetKind;
pub use replicas::BURST_REPLICAS;
pub use sync::SyncError;

/// Default number of workers (`--concurrent-replicaset-syncs`, `--concurrent-rc-syncs`).
pub const DEFAULT_WORKERS: usize = 5;

/// Settings of a [`ReplicaSetController`].
#[derive(Clone)]
pub struct Config {
    /// Concurrent syncs; a hint for the caller of [`ReplicaSetController::run`] (default 5).
    pub workers: usize,
    /// Most pods one sync creates or deletes (default [`BURST_REPLICAS`], 500).
    pub burst_replicas: usize,
    /// Wall clock for expectations TTLs and `minReadySeconds`.
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

/// Keeps `spec.replicas` active pods for every object of kind `K` (ReplicaSet or
/// ReplicationController).
///
/// Safe to share: handlers and workers run concurrently; a key is never synced by two workers at
/// once (the queue guarantees it).
pub struct ReplicaSetController<K: ReplicaSetKind> {
    client: Client,
    pod_control: Arc<dyn PodControl>,
    /// Creations and deletions each controller waits to observe before acting again.
    expectations: ControllerExpectations,
    rs_informer: SharedInformer<K>,
    pod_informer: SharedInformer<Pod>,
    rs_store: Store<K>,
    pod_store: Store<Pod>,
    queue: RateLimitingQueue<ObjectKey>,
    burst_replicas: usize,
    clock: Arc<dyn Clock>,
}

/// The ReplicationController flavour of the controller (kube's `ReplicationManager`).
pub type ReplicationManager = ReplicaSetController<ReplicationController>;

impl ReplicaSetController<ReplicaSet> {
    /// The ReplicaSet controller, on the factory's ReplicaSet and Pod informers; pods are created
    /// and deleted through a [`RealPodControl`] that records events with `recorder` (whose
    /// source should be `replicaset-controller`).
    pub fn new(
        factory: &InformerFactory,
        client: Client,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let pod_control = Arc::new(RealPodControl::new(client.clone(), recorder));
        Self::with_pod_control(factory, client, pod_control, config)
    }
}

impl ReplicaSetController<ReplicationController> {
    /// The ReplicationController controller (kube's replication manager), on the factory's
    /// ReplicationController and Pod informers; `recorder`'s source should be
    /// `replication-controller`.
    pub fn new_for_rc(
        factory: &InformerFactory,
        client: Client,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let pod_control = Arc::new(RealPodControl::new(client.clone(), recorder));
        Self::with_pod_control(factory, client, pod_control, config)
    }
}

impl<K: ReplicaSetKind> ReplicaSetController<K> {
    /// The controller with an injected [`PodControl`] (tests use `FakePodControl`). Registers its
    /// event handlers on the factory's informers for `K` and `Pod`.
    pub fn with_pod_control(
        factory: &InformerFactory,
        client: Client,
        pod_control: Arc<dyn PodControl>,
        config: Config,
    ) -> Arc<Self> {
        let rs_informer = factory.informer::<K>();
        let pod_informer = factory.informer::<Pod>();
        Arc::new_cyclic(|weak: &Weak<Self>| {
            let on_rs = weak.clone();
            rs_informer.add_event_handler(move |note| {
                if let Some(this) = on_rs.upgrade() {
                    this.on_replica_set(note);
                }
            });
            let on_pod = weak.clone();
            pod_informer.add_event_handler(move |note| {
                if let Some(this) = on_pod.upgrade() {
                    this.on_pod(note);
                }
            });
            Self {
                client,
                pod_control,
                expectations: ControllerExpectations::new(Arc::clone(&config.clock)),
                rs_store: rs_informer.store(),
                pod_store: pod_informer.store(),
                rs_informer: rs_informer.clone(),
                pod_informer: pod_informer.clone(),
                queue: RateLimitingQueue::new(K::QUEUE_NAME),
                burst_replicas: config.burst_replicas,
                clock: config.clock,
            }
        })
    }

    /// Waits for the caches, then runs `workers` sync loops until `shutdown`: get → sync →
    /// forget on success | add_rate_limited on failure (no retry limit, as kube) → done.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = K::CONTROLLER_NAME, "starting controller");
        let synced = wait_for_cache_sync(
            K::CONTROLLER_NAME,
            &[&self.rs_informer, &self.pod_informer],
            &shutdown,
        )
        .await;
        if synced {
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                workers.max(1),
                shutdown,
                worker::ErrorPolicy::handle_error(),
                move |key: ObjectKey| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&key).await }
                },
            )
            .await;
        }
        self.queue.shutdown();
        tracing::info!(controller = K::CONTROLLER_NAME, "shutting down controller");
    }

    /// The work queue of object keys (exposed for tests and metrics).
    pub fn queue(&self) -> &RateLimitingQueue<ObjectKey> {
        &self.queue
    }

    /// The expectations of every object (exposed for tests).
    pub fn expectations(&self) -> &ControllerExpectations {
        &self.expectations
    }

    /// The cache of `K` objects this controller reads.
    pub fn store(&self) -> &Store<K> {
        &self.rs_store
    }

    /// The pod cache this controller reads.
    pub fn pod_store(&self) -> &Store<Pod> {
        &self.pod_store
    }
}
