//! The Deployment controller: rolling updates, recreate, rollback, pause, proportional scaling,
//! progress deadlines and revision history. Mirrors kube's `pkg/controller/deployment`.
//!
//! A Deployment owns ReplicaSets, one per pod template revision; the ReplicaSet controller owns the
//! pods. This controller only ever writes ReplicaSets (create, resize, delete) and the Deployment's
//! status, and records events as `deployment-controller`.
//!
//! Decisions are pure functions over plain values, in one file per concept: `fenceposts`
//! (maxSurge / maxUnavailable), `annotations` (revisions, replicas annotations), `conditions`
//! (status conditions and progress checks), `hash` (pod-template-hash), `replica_sets` (new / old /
//! active ReplicaSets), `replicas` (counts and proportions), `scale` (scaling events), `rolling`,
//! `recreate`, `rollback`, `progress`, `status` and `cleanup`. `handlers` turns informer
//! notifications into queue keys; `sync` reads the caches, calls the decisions and writes the API.
//!
//! Where this differs from kube, on purpose:
//! - the pod-template-hash is FNV-32a over the template's JSON, not over Go's struct dump, so
//!   ReplicaSet names differ from kube-controller-manager's for the same template (see `hash`);
//! - after writing the status, a sync continues with the object the server returned, so its later
//!   writes carry the new resourceVersion instead of conflicting;
//! - a scaled-down ReplicaSet counts at most `spec.replicas` available pods while its status is
//!   stale, so a rolling update cannot overshoot maxUnavailable (see `rolling`);
//! - the apps/v1 defaults are applied to the working copy, for API servers that do not default;
//! - on AlreadyExists the new ReplicaSet is read from the server rather than the cache, and the
//!   Recreate pod-deletion handler counts pods from the caches rather than listing ReplicaSets.

pub mod annotations;
pub mod cleanup;
pub mod conditions;
pub mod fenceposts;
mod handlers;
pub mod hash;
pub mod progress;
pub mod recreate;
pub mod replica_sets;
pub mod replicas;
pub mod rollback;
pub mod rolling;
pub mod scale;
pub mod spec;
pub mod status;
mod sync;

#[cfg(test)]
mod fixtures;

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use rkcm_runtime::events::EventRecorder;
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, SharedInformer, Store,
};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, Clock, ObjectKey, Shutdown, SystemClock};

pub use sync::SyncError;

/// Name of the work queue (the `name` label of the `workqueue_*` metrics).
pub const QUEUE_NAME: &str = "deployment";
/// Component name on the events this controller records.
pub const EVENT_SOURCE: &str = "deployment-controller";
/// Times a failing Deployment is retried (5ms … 82s apart) before it is dropped until its next change.
pub const MAX_RETRIES: u32 = 15;

/// Settings of the Deployment controller.
#[derive(Clone)]
pub struct Config {
    /// Concurrent syncs (`--concurrent-deployment-syncs`, default 5).
    pub workers: usize,
    /// Wall clock for condition times and progress deadlines.
    pub clock: Arc<dyn Clock>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            workers: 5,
            clock: Arc::new(SystemClock),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("workers", &self.workers)
            .finish_non_exhaustive()
    }
}

/// Synchronizes Deployments with their ReplicaSets.
///
/// Shared by its workers: each key is synced by one worker at a time (the queue guarantees it), and
/// a sync never mutates cached objects.
pub struct DeploymentController {
    client: kube::Client,
    recorder: EventRecorder,
    clock: Arc<dyn Clock>,
    queue: RateLimitingQueue<ObjectKey>,
    deployments: Store<Deployment>,
    replica_sets: Store<ReplicaSet>,
    pods: Store<Pod>,
    informers: (
        SharedInformer<Deployment>,
        SharedInformer<ReplicaSet>,
        SharedInformer<Pod>,
    ),
    workers: usize,
}

impl DeploymentController {
    /// Creates the controller and registers its handlers on the factory's Deployment, ReplicaSet and
    /// Pod informers. Start the factory (before or after) and then call [`run`](Self::run).
    pub fn new(
        factory: &InformerFactory,
        client: kube::Client,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let d_informer = factory.informer::<Deployment>();
        let rs_informer = factory.informer::<ReplicaSet>();
        let pod_informer = factory.informer::<Pod>();
        let queue = RateLimitingQueue::new(QUEUE_NAME);
        let handlers = Arc::new(handlers::Handlers {
            queue: queue.clone(),
            deployments: d_informer.store(),
            replica_sets: rs_informer.store(),
            pods: pod_informer.store(),
        });
        let h = Arc::clone(&handlers);
        d_informer.add_event_handler(move |note| h.on_deployment(note));
        let h = Arc::clone(&handlers);
        rs_informer.add_event_handler(move |note| h.on_replica_set(note));
        let h = Arc::clone(&handlers);
        pod_informer.add_event_handler(move |note| h.on_pod(note));
        Arc::new(Self {
            client,
            recorder,
            clock: config.clock,
            queue,
            deployments: d_informer.store(),
            replica_sets: rs_informer.store(),
            pods: pod_informer.store(),
            informers: (d_informer, rs_informer, pod_informer),
            workers: config.workers,
        })
    }

    /// The configured number of workers.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The work queue of Deployment keys.
    pub fn queue(&self) -> &RateLimitingQueue<ObjectKey> {
        &self.queue
    }

    /// Waits for the caches, then runs `workers` loops until `shutdown`:
    /// get → sync → forget | add_rate_limited (at most [`MAX_RETRIES`]) → done. In-flight syncs
    /// finish before this returns.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = QUEUE_NAME, "starting controller");
        let synced: [&dyn HasSynced; 3] = [&self.informers.0, &self.informers.1, &self.informers.2];
        if !wait_for_cache_sync(QUEUE_NAME, &synced, &shutdown).await {
            self.queue.shutdown();
            return;
        }
        let this = Arc::clone(&self);
        worker::run(
            self.queue.clone(),
            workers.max(1),
            shutdown,
            worker::ErrorPolicy::max_retries(MAX_RETRIES),
            move |key: ObjectKey| {
                let this = Arc::clone(&this);
                async move { this.sync(&key).await }
            },
        )
        .await;
        tracing::info!(controller = QUEUE_NAME, "shutting down controller");
    }
}
