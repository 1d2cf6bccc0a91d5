//! The StatefulSet controller: pods with stable names, hostnames and claims, created and deleted
//! in ordinal order and updated from recorded revisions (k8s.io/kubernetes
//! `pkg/controller/statefulset`).
//!
//! Handlers (`handlers.rs`) only enqueue keys; `sync.rs` adopts revisions and pods and hands the
//! set to [`StatefulSetControl`] (`control.rs`), which decides with the pure functions of
//! `identity.rs`, `claims.rs`, `revision.rs` and `status.rs`, and writes through
//! [`StatefulPodControl`] (`pod_control.rs`), the ControllerRevision history and the status
//! updater. kube 1.33 keeps no expectations for StatefulSet pods: every sync acts on the caches,
//! and the ordering guarantees come from waiting on each pod's observed state.

pub mod claims;
pub mod control;
#[cfg(test)]
mod fixtures;
mod handlers;
pub mod identity;
pub mod pod_control;
pub mod revision;
pub mod status;
mod sync;

use std::sync::{Arc, Weak};

use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::Client;
use rkcm_runtime::events::EventRecorder;
use rkcm_runtime::history::ApiHistory;
use rkcm_runtime::informer::{wait_for_cache_sync, InformerFactory, SharedInformer, Store};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, Clock, ObjectKey, Shutdown, SystemClock};

pub use control::{ControlError, StatefulSetControl};
pub use pod_control::{ApiObjectManager, ObjectManager, StatefulPodControl};
pub use status::{ApiStatusUpdater, StatusUpdater};

/// Name of the controller in logs and of its queue.
pub const CONTROLLER_NAME: &str = "statefulset";
/// Source of its events.
pub const EVENT_SOURCE: &str = "statefulset-controller";
/// Default number of workers (`--concurrent-statefulset-syncs`).
pub const DEFAULT_WORKERS: usize = 5;

/// Settings of a [`StatefulSetController`].
#[derive(Clone)]
pub struct Config {
    /// Wall clock for `minReadySeconds`.
    pub clock: Arc<dyn Clock>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config").finish_non_exhaustive()
    }
}

/// Keeps every StatefulSet's pods, claims and revisions in line with its spec.
///
/// Safe to share: handlers and workers run concurrently; a key is never synced by two workers at
/// once (the queue guarantees it).
pub struct StatefulSetController {
    client: Client,
    control: StatefulSetControl,
    set_informer: SharedInformer<StatefulSet>,
    pod_informer: SharedInformer<Pod>,
    claim_informer: SharedInformer<PersistentVolumeClaim>,
    revision_informer: SharedInformer<ControllerRevision>,
    set_store: Store<StatefulSet>,
    pod_store: Store<Pod>,
    queue: RateLimitingQueue<ObjectKey>,
}

impl StatefulSetController {
    /// The controller on the factory's StatefulSet, Pod, PersistentVolumeClaim and
    /// ControllerRevision informers, writing through `client` and recording events with
    /// `recorder` (source `statefulset-controller`).
    pub fn new(
        factory: &InformerFactory,
        client: Client,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let set_informer = factory.informer::<StatefulSet>();
        let pod_informer = factory.informer::<Pod>();
        let claim_informer = factory.informer::<PersistentVolumeClaim>();
        let revision_informer = factory.informer::<ControllerRevision>();
        let objects = Arc::new(ApiObjectManager::new(
            client.clone(),
            pod_informer.store(),
            claim_informer.store(),
        ));
        let control = StatefulSetControl::new(
            StatefulPodControl::new(objects, recorder),
            Arc::new(ApiStatusUpdater::new(client.clone(), set_informer.store())),
            Arc::new(ApiHistory::new(client.clone(), revision_informer.store())),
            config.clock,
        );
        Arc::new_cyclic(|weak: &Weak<Self>| {
            let on_set = weak.clone();
            set_informer.add_event_handler(move |note| {
                if let Some(this) = on_set.upgrade() {
                    this.on_set(note);
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
                control,
                set_store: set_informer.store(),
                pod_store: pod_informer.store(),
                set_informer: set_informer.clone(),
                pod_informer: pod_informer.clone(),
                claim_informer: claim_informer.clone(),
                revision_informer: revision_informer.clone(),
                queue: RateLimitingQueue::new(CONTROLLER_NAME),
            }
        })
    }

    /// Waits for the caches, then runs `workers` sync loops until `shutdown`: get → sync →
    /// forget | add_rate_limited → done.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(
            controller = CONTROLLER_NAME,
            "Starting stateful set controller"
        );
        let synced = wait_for_cache_sync(
            "stateful set",
            &[
                &self.pod_informer,
                &self.set_informer,
                &self.claim_informer,
                &self.revision_informer,
            ],
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
        tracing::info!(
            controller = CONTROLLER_NAME,
            "Shutting down statefulset controller"
        );
    }

    /// The work queue of set keys (exposed for tests).
    pub fn queue(&self) -> &RateLimitingQueue<ObjectKey> {
        &self.queue
    }
}
