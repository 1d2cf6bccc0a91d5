//! The namespace controller: empties terminating namespaces so that they can go.
//!
//! Mirrors `pkg/controller/namespace/namespace_controller.go`. A namespace with a
//! `deletionTimestamp` is queued (after a short grace period that lets admission caches catch up);
//! each sync deletes every namespaced resource the API serves (discovered, not hard-coded), waits
//! for it to be gone, reports progress in the namespace's conditions and finally removes the
//! `kubernetes` finalizer.
//!
//! One addition to kube: when a pod of a terminating namespace disappears, the namespace is synced
//! again at once, instead of only after the grace-period estimate, so namespaces whose pods terminate
//! quickly (as on simulated nodes) go quickly.

pub mod conditions;
pub mod deleter;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, Pod};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::workqueue::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter, RateLimitingQueue,
};
use rkcm_runtime::{worker, Clock, ObjectKey, Shutdown};

pub use deleter::{NamespacedResourcesDeleter, Outcome};

/// kube's `namespaceDeletionGracePeriod`: wait before acting on a namespace event, so that
/// admission caches and other finalizers catch up.
pub const DELETION_GRACE_PERIOD: Duration = Duration::from_secs(5);

/// Namespace controller settings.
#[derive(Clone)]
pub struct Config {
    /// `--namespace-sync-period`: how often every namespace is looked at again.
    pub resync_period: Duration,
    /// Wait before acting on a namespace event (kube's `namespaceDeletionGracePeriod`, 5 s).
    pub deletion_grace_period: Duration,
    /// Source of the current time.
    pub clock: Arc<dyn Clock>,
}

/// Empties and finalizes terminating namespaces.
pub struct NamespaceController {
    queue: RateLimitingQueue<ObjectKey>,
    namespaces: SharedInformer<Namespace>,
    pods: SharedInformer<Pod>,
    deleter: NamespacedResourcesDeleter,
}

/// kube's `nsControllerRateLimiter`: retries at least every minute, 10 qps overall.
fn rate_limiter() -> MaxOfRateLimiter<ObjectKey> {
    MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(60),
        )),
        Box::new(BucketRateLimiter::new(10.0, 100)),
    ])
}

impl NamespaceController {
    /// Registers the controller's informers and handlers on `factory`.
    pub fn new(factory: &InformerFactory, client: kube::Client, config: Config) -> Arc<Self> {
        let queue = RateLimitingQueue::with_rate_limiter("namespace", Box::new(rate_limiter()));
        let namespaces = factory.informer::<Namespace>();
        let pods = factory.informer::<Pod>();
        let this = Arc::new(Self {
            queue: queue.clone(),
            namespaces: namespaces.clone(),
            pods: pods.clone(),
            deleter: NamespacedResourcesDeleter::new(client, Arc::clone(&config.clock)),
        });

        // Resynced every --namespace-sync-period, as kube's handler
        // (`AddEventHandlerWithResyncPeriod(..., resyncPeriod)`): terminating namespaces are
        // looked at again.
        let grace = config.deletion_grace_period;
        let q = queue.clone();
        namespaces.add_event_handler_with_resync_period(
            move |note: Notification<Namespace>| {
                let ns = match &note {
                    Notification::Add(ns) => ns,
                    Notification::Update { new, .. } => new,
                    Notification::Delete(_) => return,
                };
                if ns.metadata.deletion_timestamp.is_some() {
                    q.add_after(ObjectKey::from_obj(&**ns), grace);
                }
            },
            config.resync_period,
        );

        let q = queue;
        let store = namespaces.store();
        pods.add_event_handler(move |note: Notification<Pod>| {
            let Notification::Delete(deleted) = note else {
                return;
            };
            let Some(ns) = deleted.object().metadata.namespace.clone() else {
                return;
            };
            let key = ObjectKey::cluster(ns);
            let terminating = store
                .get(&key)
                .is_some_and(|ns| ns.metadata.deletion_timestamp.is_some());
            if terminating {
                q.add(key);
            }
        });
        this
    }

    /// Whether the controller's caches have synced.
    pub fn has_synced(&self) -> bool {
        self.namespaces.has_synced() && self.pods.has_synced()
    }

    /// Runs `workers` sync loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        let synced: [&dyn HasSynced; 2] = [&self.namespaces, &self.pods];
        if !wait_for_cache_sync("namespace", &synced, &shutdown).await {
            return;
        }
        let this = Arc::clone(&self);
        worker::run(
            self.queue.clone(),
            workers,
            shutdown,
            worker::ErrorPolicy::handle_error(),
            move |key: ObjectKey| {
                let this = Arc::clone(&this);
                async move { this.sync(&key).await }
            },
        )
        .await;
    }

    /// Deletes the content of namespace `key` if it is terminating.
    async fn sync(&self, key: &ObjectKey) -> Result<(), deleter::Error> {
        let started = std::time::Instant::now();
        let result = self.deleter.delete(&key.name).await;
        tracing::debug!(namespace = %key, elapsed = ?started.elapsed(), "finished syncing namespace");
        match result? {
            Outcome::Done => Ok(()),
            Outcome::Remaining { estimate_seconds } => {
                // kube: wait about half the estimate before looking again.
                let t = estimate_seconds / 2 + 1;
                self.queue
                    .add_after(key.clone(), Duration::from_secs(t.max(1) as u64));
                Ok(())
            }
        }
    }
}
