//! The disruption controller: keeps the status of every PodDisruptionBudget (expected, desired
//! and current healthy pods, disruptions allowed, `disruptedPods`, the `DisruptionAllowed`
//! condition) and resets stale `DisruptionTarget` pod conditions
//! (`pkg/controller/disruption/disruption.go`).
//!
//! Handlers (`handlers.rs`) queue budgets when they or their pods change, and pods whose
//! `DisruptionTarget` condition will go stale. `sync.rs` computes a budget's status from the
//! caches with the pure math of `budget.rs`, the controllers found by `finders.rs` and, for
//! other kinds, the `/scale` subresource (`scale.rs`). Three queues as kube's: budgets, budgets
//! to recheck when a `disruptedPods` entry times out, and pods with a stale condition.

mod budget;
mod finders;
#[cfg(test)]
mod fixtures;
mod handlers;
mod scale;
mod stale;
mod sync;

use std::sync::{Arc, Weak};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Pod, ReplicationController};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Client;
use rkcm_runtime::events::EventRecorder;
use rkcm_runtime::informer::{
    label_index, wait_for_cache_sync, HasSynced, InformerFactory, SharedInformer, LABEL_INDEX,
};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, Clock, ObjectKey, Shutdown, SystemClock};

pub use budget::{
    build_disrupted_pod_map, count_healthy_pods, expected_and_desired, fail_safe,
    needs_controller_scale, new_status, scaled_value, Counts, DisruptedPods, InvalidIntOrPercent,
    DELETION_TIMEOUT,
};
pub use finders::{Caches, ControllerAndScale};
pub use stale::{stale_disruption_condition, STALE_POD_DISRUPTION_TIMEOUT};
pub use sync::SyncError;

/// The event source of the controller's events (kube's disruption controller records as
/// `controllermanager`).
pub const EVENT_SOURCE: &str = "controllermanager";

/// Settings of the controller.
#[derive(Clone)]
pub struct Config {
    /// Wall clock.
    pub clock: Arc<dyn Clock>,
    /// How long a `DisruptionTarget=True` condition may stay on a pod that is not terminating.
    pub stale_pod_disruption_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            stale_pod_disruption_timeout: STALE_POD_DISRUPTION_TIMEOUT,
        }
    }
}

/// Keeps PodDisruptionBudgets' status.
pub struct DisruptionController {
    client: Client,
    recorder: EventRecorder,
    pods: SharedInformer<Pod>,
    pdbs: SharedInformer<PodDisruptionBudget>,
    rcs: SharedInformer<ReplicationController>,
    rss: SharedInformer<ReplicaSet>,
    deployments: SharedInformer<Deployment>,
    statefulsets: SharedInformer<StatefulSet>,
    caches: Caches,
    /// Budgets to sync.
    queue: RateLimitingQueue<ObjectKey>,
    /// Budgets to sync again when a `disruptedPods` entry times out.
    recheck_queue: RateLimitingQueue<ObjectKey>,
    /// Pods whose `DisruptionTarget` condition goes stale.
    stale_pod_queue: RateLimitingQueue<ObjectKey>,
    clock: Arc<dyn Clock>,
    stale_pod_disruption_timeout: Duration,
}

impl DisruptionController {
    /// Registers the controller's handlers on the factory's informers.
    pub fn new(
        factory: &InformerFactory,
        client: Client,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let pods = factory.informer::<Pod>();
        // Each sync reads the budget's pods: the label index reads only those carrying one of its
        // matchLabels, not the namespace (pods are decoded on read).
        pods.add_indexer(LABEL_INDEX, label_index::<Pod>);
        let pdbs = factory.informer::<PodDisruptionBudget>();
        let rcs = factory.informer::<ReplicationController>();
        let rss = factory.informer::<ReplicaSet>();
        let deployments = factory.informer::<Deployment>();
        let statefulsets = factory.informer::<StatefulSet>();
        Arc::new_cyclic(|weak: &Weak<Self>| {
            let on_pod = weak.clone();
            pods.add_event_handler(move |note| {
                if let Some(this) = on_pod.upgrade() {
                    this.on_pod(note);
                }
            });
            let on_pdb = weak.clone();
            pdbs.add_event_handler(move |note| {
                if let Some(this) = on_pdb.upgrade() {
                    this.on_pdb(note);
                }
            });
            Self {
                client,
                recorder,
                caches: Caches {
                    rcs: rcs.store(),
                    rss: rss.store(),
                    deployments: deployments.store(),
                    statefulsets: statefulsets.store(),
                },
                pods,
                pdbs,
                rcs,
                rss,
                deployments,
                statefulsets,
                queue: RateLimitingQueue::new("disruption"),
                recheck_queue: RateLimitingQueue::new("disruption_recheck"),
                stale_pod_queue: RateLimitingQueue::new("stale_pod_disruption"),
                clock: config.clock,
                stale_pod_disruption_timeout: config.stale_pod_disruption_timeout,
            }
        })
    }

    /// Whether every cache the controller reads has synced.
    pub fn has_synced(&self) -> bool {
        self.synced().iter().all(|s| s.has_synced())
    }

    fn synced(&self) -> [&dyn HasSynced; 6] {
        [
            &self.pods,
            &self.pdbs,
            &self.rcs,
            &self.rss,
            &self.deployments,
            &self.statefulsets,
        ]
    }

    /// Runs one worker on each queue until `shutdown`, as kube does.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        tracing::info!(controller = "disruption", "starting controller");
        if wait_for_cache_sync("disruption-controller", &self.synced(), &shutdown).await {
            let this = Arc::clone(&self);
            let budgets = worker::run(
                self.queue.clone(),
                1,
                shutdown.clone(),
                worker::ErrorPolicy::handle_error(),
                move |key| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&key).await }
                },
            );
            let this = Arc::clone(&self);
            let rechecks = worker::run(
                self.recheck_queue.clone(),
                1,
                shutdown.clone(),
                worker::ErrorPolicy::handle_error(),
                move |key| {
                    let this = Arc::clone(&this);
                    async move {
                        this.queue.add_rate_limited(key);
                        Ok::<(), SyncError>(())
                    }
                },
            );
            let this = Arc::clone(&self);
            let stale = worker::run(
                self.stale_pod_queue.clone(),
                1,
                shutdown,
                worker::ErrorPolicy::handle_error(),
                move |key| {
                    let this = Arc::clone(&this);
                    async move { this.sync_stale_pod_disruption(&key).await }
                },
            );
            tokio::join!(budgets, rechecks, stale);
        }
        tracing::info!(controller = "disruption", "shutting down controller");
    }
}
