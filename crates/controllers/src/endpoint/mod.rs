//! The Endpoints controller: keeps the Endpoints object of every Service with a selector in line
//! with the pods it selects (k8s.io/kubernetes `pkg/controller/endpoint`).
//!
//! Handlers (`handlers.rs`) only enqueue Service keys, pod changes after
//! `--endpoint-updates-batch-period`. `sync.rs` reads the caches and writes: `desired.rs` turns
//! pods into subsets (ready and not-ready addresses, ports resolved from named container ports,
//! hostnames for a headless Service's subdomain), `repack.rs` puts them in canonical form,
//! `capacity.rs` truncates them to 1000 addresses, and `stale.rs` keeps a sync from acting on
//! an Endpoints version it already replaced. Endpoints of deleted Services are deleted, and those
//! left over from a time the controller was down are found once at start.

mod capacity;
mod desired;
mod handlers;
mod repack;
mod stale;
mod sync;

use std::sync::{Arc, Weak};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use kube::Client;
use rkcm_runtime::events::EventRecorder;
use rkcm_runtime::informer::{
    label_index, wait_for_cache_sync, InformerFactory, SharedInformer, LABEL_INDEX,
};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, ObjectKey, Shutdown};

pub use capacity::{
    capacity_annotation_set_correctly, truncate_endpoints, MAX_CAPACITY, OVER_CAPACITY_ANNOTATION,
    TRUNCATED,
};
pub use desired::{desired_subsets, pod_address, Desired};
pub use repack::repack_subsets;
pub use stale::StaleEndpointsTracker;
pub use sync::{next_endpoints, rfc3339_nano, SyncError};

use crate::podendpoints::{TriggerTimeTracker, LEADER_ELECTION_ANNOTATION};

/// Name of the controller (`--controllers`).
pub const CONTROLLER_NAME: &str = "endpoints-controller";
/// Source of the controller's events.
pub const EVENT_SOURCE: &str = "endpoint-controller";
/// Default number of workers (`--concurrent-endpoint-syncs`).
pub const DEFAULT_WORKERS: usize = 5;
/// Retries of a failing Service before it is dropped (`maxRetries`).
pub const MAX_RETRIES: u32 = 15;

/// Settings of an [`EndpointController`].
#[derive(Clone, Debug)]
pub struct Config {
    /// Delay that batches the syncs triggered by pod changes (`--endpoint-updates-batch-period`,
    /// default 0).
    pub batch_period: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            batch_period: Duration::ZERO,
        }
    }
}

/// Writes the Endpoints of every Service with a selector.
///
/// Safe to share: handlers and workers run concurrently; a Service is never synced by two
/// workers at once (the queue guarantees it).
pub struct EndpointController {
    client: Client,
    recorder: EventRecorder,
    services: SharedInformer<Service>,
    pods: SharedInformer<Pod>,
    endpoints: SharedInformer<Endpoints>,
    queue: RateLimitingQueue<ObjectKey>,
    trigger_times: TriggerTimeTracker,
    stale: StaleEndpointsTracker,
    batch_period: Duration,
}

impl EndpointController {
    /// The controller on the factory's Service, Pod and Endpoints informers; events are recorded
    /// with `recorder` (source `endpoint-controller`).
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
        let endpoints = factory.informer::<Endpoints>();
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
            endpoints.add_event_handler(move |note| {
                if let Some(this) = w.upgrade() {
                    this.on_endpoints(note);
                }
            });
            Self {
                client,
                recorder,
                services: services.clone(),
                pods: pods.clone(),
                endpoints: endpoints.clone(),
                queue: RateLimitingQueue::new("endpoint"),
                trigger_times: TriggerTimeTracker::default(),
                stale: StaleEndpointsTracker::default(),
                batch_period: config.batch_period,
            }
        })
    }

    /// Waits for the caches, queues every Endpoints object once (to delete those whose Service
    /// went away while the controller was down), then runs `workers` sync loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = CONTROLLER_NAME, "starting controller");
        let synced = wait_for_cache_sync(
            CONTROLLER_NAME,
            &[&self.pods, &self.services, &self.endpoints],
            &shutdown,
        )
        .await;
        if synced {
            self.check_leftover_endpoints();
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

    /// Queues the Service of every cached Endpoints object but leader-election records
    /// (`checkLeftoverEndpoints`).
    fn check_leftover_endpoints(&self) {
        for endpoints in self.endpoints.store().list() {
            let leader_election = endpoints
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(LEADER_ELECTION_ANNOTATION));
            if !leader_election {
                self.queue.add(ObjectKey::from_obj(&*endpoints));
            }
        }
    }

    /// The work queue of Service keys (exposed for tests).
    pub fn queue(&self) -> &RateLimitingQueue<ObjectKey> {
        &self.queue
    }
}
