//! The resourcequota controller: keeps `status.hard` (= `spec.hard`) and `status.used` of every
//! ResourceQuota (`pkg/controller/resourcequota/resource_quota_controller.go` and
//! `resource_quota_monitor.go`).
//!
//! Two queues as kube's: quotas whose hard limits or usage are missing from status go to the
//! priority queue (`priority.rs`), the rest to the normal one; every `--resource-quota-sync-period`
//! all quotas are queued for a full recalculation. Handlers (`handlers.rs`) queue the quotas of a
//! namespace when a counted object is deleted or stops being charged. A sync measures usage from
//! the caches (`counted.rs`) with the evaluators of `rkcm_apimachinery::quota` and writes the
//! status decided by `status.rs` through `/status`, carrying the quota's resourceVersion: a
//! conflict is retried from the queue.

mod counted;
#[cfg(test)]
mod fixtures;
mod handlers;
mod priority;
mod status;
mod sync;

use std::sync::{Arc, Weak};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, Pod, ReplicationController, ResourceQuota, Secret, Service,
};
use kube::{Client, Resource};
use rkcm_apimachinery::quota::Evaluator;
use rkcm_runtime::informer::{wait_for_cache_sync, HasSynced, InformerFactory, SharedInformer};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, Clock, ObjectKey, Shutdown, SystemClock};

pub use priority::needs_priority;
pub use status::new_status;
pub use sync::SyncError;

use counted::Counted;

/// `--resource-quota-sync-period` default.
pub const DEFAULT_SYNC_PERIOD: Duration = Duration::from_secs(300);
/// `--concurrent-resource-quota-syncs` default.
pub const DEFAULT_WORKERS: usize = 5;

/// Settings of the controller.
#[derive(Clone)]
pub struct Config {
    /// How often every quota is recalculated in full.
    pub resync_period: Duration,
    /// Wall clock (a pod past its deletion grace period is no longer charged).
    pub clock: Arc<dyn Clock>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            resync_period: DEFAULT_SYNC_PERIOD,
            clock: Arc::new(SystemClock),
        }
    }
}

/// Keeps ResourceQuotas' status.
pub struct ResourceQuotaController {
    client: Client,
    quotas: SharedInformer<ResourceQuota>,
    counted: Counted,
    essential: Vec<Box<dyn HasSynced>>,
    /// Quotas to recalculate.
    queue: RateLimitingQueue<ObjectKey>,
    /// Quotas whose hard limits or usage are not in status yet.
    missing_usage_queue: RateLimitingQueue<ObjectKey>,
    resync_period: Duration,
    clock: Arc<dyn Clock>,
}

fn watch<K>(
    factory: &InformerFactory,
    weak: &Weak<ResourceQuotaController>,
    group: &str,
    resource: &str,
) where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    let weak = weak.clone();
    let evaluator = Evaluator::for_resource(group, resource);
    factory.informer::<K>().add_event_handler(move |note| {
        if let Some(this) = weak.upgrade() {
            this.on_counted(&evaluator, note);
        }
    });
}

impl ResourceQuotaController {
    /// Registers the controller's handlers on the factory's informers.
    pub fn new(factory: &InformerFactory, client: Client, config: Config) -> Arc<Self> {
        let quotas = factory.informer::<ResourceQuota>();
        let counted = Counted::new(factory);
        let essential = counted::essential(factory);
        Arc::new_cyclic(|weak: &Weak<Self>| {
            // Resynced every --resource-quota-sync-period, as kube's handler
            // (`AddEventHandlerWithResyncPeriod(..., rq.resyncPeriod())`); `on_quota` ignores
            // updates that leave `spec.hard` alone, so the full recalculation is `resync_loop`'s.
            let w = weak.clone();
            quotas.add_event_handler_with_resync_period(
                move |note| {
                    if let Some(this) = w.upgrade() {
                        this.on_quota(note);
                    }
                },
                config.resync_period,
            );
            let w = weak.clone();
            factory.informer::<Pod>().add_event_handler(move |note| {
                if let Some(this) = w.upgrade() {
                    this.on_pod(note);
                }
            });
            let w = weak.clone();
            factory
                .informer::<Service>()
                .add_event_handler(move |note| {
                    if let Some(this) = w.upgrade() {
                        this.on_service(note);
                    }
                });
            let w = weak.clone();
            factory
                .informer::<PersistentVolumeClaim>()
                .add_event_handler(move |note| {
                    if let Some(this) = w.upgrade() {
                        this.on_claim(note);
                    }
                });
            watch::<ConfigMap>(factory, weak, "", "configmaps");
            watch::<Secret>(factory, weak, "", "secrets");
            watch::<ReplicationController>(factory, weak, "", "replicationcontrollers");
            watch::<ResourceQuota>(factory, weak, "", "resourcequotas");
            watch::<Deployment>(factory, weak, "apps", "deployments");
            watch::<ReplicaSet>(factory, weak, "apps", "replicasets");
            watch::<StatefulSet>(factory, weak, "apps", "statefulsets");
            watch::<DaemonSet>(factory, weak, "apps", "daemonsets");
            watch::<Job>(factory, weak, "batch", "jobs");
            watch::<CronJob>(factory, weak, "batch", "cronjobs");
            Self {
                client,
                quotas,
                counted,
                essential,
                queue: RateLimitingQueue::new("resourcequota_primary"),
                missing_usage_queue: RateLimitingQueue::new("resourcequota_priority"),
                resync_period: config.resync_period,
                clock: config.clock,
            }
        })
    }

    /// Whether the caches the controller needs before its first sync have synced.
    pub fn has_synced(&self) -> bool {
        self.essential.iter().all(|s| s.has_synced())
    }

    /// Runs `workers` loops on each queue and the periodic full resync until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = "resourcequota", "starting controller");
        let synced: Vec<&dyn HasSynced> = self.essential.iter().map(|s| &**s).collect();
        if wait_for_cache_sync("resource quota", &synced, &shutdown).await {
            let mut loops = Vec::new();
            for queue in [self.queue.clone(), self.missing_usage_queue.clone()] {
                let this = Arc::clone(&self);
                loops.push(worker::run(
                    queue,
                    workers,
                    shutdown.clone(),
                    worker::ErrorPolicy::handle_error(),
                    move |key| {
                        let this = Arc::clone(&this);
                        async move { this.sync(&key).await }
                    },
                ));
            }
            let resync = self.resync_loop(shutdown.clone());
            let [primary, priority] = <[_; 2]>::try_from(loops)
                .unwrap_or_else(|_| unreachable!("two queues were started"));
            tokio::join!(primary, priority, resync);
        }
        tracing::info!(controller = "resourcequota", "shutting down controller");
    }

    /// `enqueueAll` every resync period.
    async fn resync_loop(&self, shutdown: Shutdown) {
        if self.resync_period.is_zero() {
            return;
        }
        let mut ticker = tokio::time::interval(self.resync_period);
        ticker.tick().await;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = ticker.tick() => {
                    for quota in self.quotas.store().list() {
                        self.queue.add(ObjectKey::from_obj(&*quota));
                    }
                }
            }
        }
    }
}
