//! The EndpointSlice controller: keeps the EndpointSlices of every Service with a selector in
//! line with the pods it selects (k8s.io/kubernetes `pkg/controller/endpointslice`, the
//! reconciler of `k8s.io/endpointslice`).
//!
//! Handlers (`handlers.rs`) only enqueue Service keys: pod changes after
//! `--endpointslice-updates-batch-period`, slice changes that are not the controller's own writes
//! after at least a second. `sync.rs` reads the caches and writes what the pure
//! [`reconciler`] plans, out of the endpoints `endpoints.rs` builds and the slices `slices.rs`
//! describes. `tracker.rs` remembers the generation of every slice written, so that a sync never
//! acts on a cache that lags behind. Slices are labelled `kubernetes.io/service-name` and
//! `endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io` and owned by their
//! Service, which deletes them through the garbage collector. Topology-aware hints are not
//! enabled: slices carry no hints.

pub mod endpoints;
mod handlers;
pub mod metrics;
pub mod reconciler;
pub mod slices;
mod sync;
pub mod tracker;

use std::sync::{Arc, Weak};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Client;
use rkcm_runtime::events::EventRecorder;
use rkcm_runtime::informer::{
    label_index, wait_for_cache_sync, InformerFactory, SharedInformer, LABEL_INDEX,
};
use rkcm_runtime::workqueue::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter, RateLimitingQueue,
};
use rkcm_runtime::{worker, ObjectKey, Shutdown};

pub use reconciler::{Plan, Reconciler};
pub use sync::{set_trigger_time, slices_for_service, SyncError};
pub use tracker::EndpointSliceTracker;

use crate::podendpoints::TriggerTimeTracker;

/// Name of the controller (`--controllers`).
pub const CONTROLLER_NAME: &str = "endpointslice-controller";
/// The `endpointslice.kubernetes.io/managed-by` value of its slices (`controllerQualifiedName`).
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
/// Source of the controller's events.
pub const EVENT_SOURCE: &str = "endpoint-slice-controller";
/// Default number of workers (`--concurrent-service-endpoint-syncs`).
pub const DEFAULT_WORKERS: usize = 5;
/// Default `--max-endpoints-per-slice`.
pub const DEFAULT_MAX_ENDPOINTS_PER_SLICE: usize = 100;
/// Retries of a failing Service before it is dropped (`maxRetries`).
pub const MAX_RETRIES: u32 = 15;
/// Least delay before a slice change syncs its Service (`endpointSliceChangeMinSyncDelay`).
pub const ENDPOINT_SLICE_CHANGE_MIN_SYNC_DELAY: Duration = Duration::from_secs(1);

/// Settings of an [`EndpointSliceController`].
#[derive(Clone, Debug)]
pub struct Config {
    /// `--max-endpoints-per-slice` (default 100).
    pub max_endpoints_per_slice: usize,
    /// `--endpointslice-updates-batch-period` (default 0).
    pub batch_period: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            max_endpoints_per_slice: DEFAULT_MAX_ENDPOINTS_PER_SLICE,
            batch_period: Duration::ZERO,
        }
    }
}

/// The queue kube gives the EndpointSlice controllers: per-item backoff from 1 s up to `max`,
/// and at most 10 retries a second overall (burst 100).
pub fn slice_queue(name: &str, max: Duration) -> RateLimitingQueue<ObjectKey> {
    RateLimitingQueue::with_rate_limiter(
        name,
        Box::new(MaxOfRateLimiter::new(vec![
            Box::new(ItemExponentialFailureRateLimiter::new(
                Duration::from_secs(1),
                max,
            )),
            Box::new(BucketRateLimiter::new(10.0, 100)),
        ])),
    )
}

/// Writes the EndpointSlices of every Service with a selector.
///
/// Safe to share: handlers and workers run concurrently; a Service is never synced by two
/// workers at once (the queue guarantees it).
pub struct EndpointSliceController {
    client: Client,
    recorder: EventRecorder,
    services: SharedInformer<Service>,
    pods: SharedInformer<Pod>,
    nodes: SharedInformer<Node>,
    slices: SharedInformer<EndpointSlice>,
    queue: RateLimitingQueue<ObjectKey>,
    reconciler: Reconciler,
    tracker: EndpointSliceTracker,
    trigger_times: TriggerTimeTracker,
    batch_period: Duration,
}

impl EndpointSliceController {
    /// The controller on the factory's Service, Pod, Node and EndpointSlice informers; events
    /// are recorded with `recorder` (source `endpoint-slice-controller`).
    pub fn new(
        factory: &InformerFactory,
        client: Client,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let services = factory.informer::<Service>();
        let pods = factory.informer::<Pod>();
        // Each sync reads the Service's pods: the label index reads only those, not the
        // namespace (pods are decoded on read).
        pods.add_indexer(LABEL_INDEX, label_index::<Pod>);
        let nodes = factory.informer::<Node>();
        let slices = factory.informer::<EndpointSlice>();
        Arc::new_cyclic(|weak: &Weak<Self>| {
            let w = weak.clone();
            services.add_event_handler(move |note| {
                if let Some(this) = w.upgrade() {
                    this.on_service(note);
                }
            });
            let w = weak.clone();
            pods.add_event_handler(move |note| {
                if let Some(this) = w.upgrade() {
                    this.on_pod(note);
                }
            });
            let w = weak.clone();
            slices.add_event_handler(move |note| {
                if let Some(this) = w.upgrade() {
                    this.on_slice(note);
                }
            });
            Self {
                client,
                recorder,
                services: services.clone(),
                pods: pods.clone(),
                nodes: nodes.clone(),
                slices: slices.clone(),
                queue: slice_queue("endpoint_slice", Duration::from_secs(1000)),
                reconciler: Reconciler {
                    controller_name: MANAGED_BY.into(),
                    max_endpoints_per_slice: config.max_endpoints_per_slice.max(1),
                },
                tracker: EndpointSliceTracker::default(),
                trigger_times: TriggerTimeTracker::default(),
                batch_period: config.batch_period,
            }
        })
    }

    /// Waits for the caches, then runs `workers` sync loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = CONTROLLER_NAME, "starting controller");
        let synced = wait_for_cache_sync(
            CONTROLLER_NAME,
            &[&self.pods, &self.services, &self.slices, &self.nodes],
            &shutdown,
        )
        .await;
        if synced {
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
        }
        self.queue.shutdown();
        tracing::info!(controller = CONTROLLER_NAME, "shutting down controller");
    }

    /// The work queue of Service keys (exposed for tests).
    pub fn queue(&self) -> &RateLimitingQueue<ObjectKey> {
        &self.queue
    }
}
