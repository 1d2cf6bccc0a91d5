//! The EndpointSlice mirroring controller: mirrors the Endpoints of Services without a selector
//! (written by hand or by another controller) into EndpointSlices managed by
//! `endpointslicemirroring-controller.k8s.io` (k8s.io/kubernetes
//! `pkg/controller/endpointslicemirroring`).
//!
//! Handlers (`handlers.rs`) only enqueue Endpoints keys. `sync.rs` decides whether an Endpoints
//! object is mirrored (a selectorless Service of the same name exists, no
//! `endpointslice.kubernetes.io/skip-mirror: "true"` label, no leader-election annotation),
//! writes what the pure [`reconciler`] plans, and otherwise deletes what was mirrored. Slice
//! generations are tracked as by the EndpointSlice controller.

mod handlers;
pub mod reconciler;
mod sync;

use std::sync::{Arc, Weak};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::Client;
use rkcm_runtime::events::EventRecorder;
use rkcm_runtime::informer::{wait_for_cache_sync, InformerFactory, SharedInformer};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, ObjectKey, Shutdown};

pub use reconciler::{reconcile, Plan, MANAGED_BY};
pub use sync::SyncError;

use crate::endpointslice::{slice_queue, EndpointSliceTracker};
use crate::podendpoints::LEADER_ELECTION_ANNOTATION;

/// Name of the controller (`--controllers`).
pub const CONTROLLER_NAME: &str = "endpointslice-mirroring-controller";
/// Source of the controller's events.
pub const EVENT_SOURCE: &str = "endpoint-slice-mirroring-controller";
/// Label that keeps an Endpoints object from being mirrored (`discovery.LabelSkipMirror`).
pub const SKIP_MIRROR_LABEL: &str = "endpointslice.kubernetes.io/skip-mirror";
/// Default number of workers (`--mirroring-concurrent-service-endpoint-syncs`).
pub const DEFAULT_WORKERS: usize = 5;
/// Default `--mirroring-max-endpoints-per-subset`.
pub const DEFAULT_MAX_ENDPOINTS_PER_SUBSET: usize = 1000;
/// Retries of a failing Endpoints object before it is dropped (`maxRetries`).
pub const MAX_RETRIES: u32 = 15;

/// Whether `endpoints` may be mirrored: not labelled `skip-mirror: "true"` and not a
/// leader-election record (`shouldMirror`). The Service is checked separately.
pub fn should_mirror(endpoints: &Endpoints) -> bool {
    let skip = endpoints
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(SKIP_MIRROR_LABEL))
        .is_some_and(|v| v == "true");
    let leader = endpoints
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(LEADER_ELECTION_ANNOTATION));
    !skip && !leader
}

/// Settings of an [`EndpointSliceMirroringController`].
#[derive(Clone, Debug)]
pub struct Config {
    /// `--mirroring-max-endpoints-per-subset` (default 1000).
    pub max_endpoints_per_subset: usize,
    /// `--mirroring-endpointslice-updates-batch-period` (default 0).
    pub batch_period: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            max_endpoints_per_subset: DEFAULT_MAX_ENDPOINTS_PER_SUBSET,
            batch_period: Duration::ZERO,
        }
    }
}

/// Mirrors custom Endpoints into EndpointSlices.
///
/// Safe to share: handlers and workers run concurrently; an Endpoints object is never synced by
/// two workers at once (the queue guarantees it).
pub struct EndpointSliceMirroringController {
    client: Client,
    recorder: EventRecorder,
    endpoints: SharedInformer<Endpoints>,
    services: SharedInformer<Service>,
    slices: SharedInformer<EndpointSlice>,
    queue: RateLimitingQueue<ObjectKey>,
    tracker: EndpointSliceTracker,
    max_endpoints_per_subset: usize,
    batch_period: Duration,
}

impl EndpointSliceMirroringController {
    /// The controller on the factory's Endpoints, EndpointSlice and Service informers; events
    /// are recorded with `recorder` (source `endpoint-slice-mirroring-controller`).
    pub fn new(
        factory: &InformerFactory,
        client: Client,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let endpoints = factory.informer::<Endpoints>();
        let services = factory.informer::<Service>();
        let slices = factory.informer::<EndpointSlice>();
        Arc::new_cyclic(|weak: &Weak<Self>| {
            let w = weak.clone();
            endpoints.add_event_handler(move |note| {
                if let Some(this) = w.upgrade() {
                    this.on_endpoints(note);
                }
            });
            let w = weak.clone();
            slices.add_event_handler(move |note| {
                if let Some(this) = w.upgrade() {
                    this.on_slice(note);
                }
            });
            let w = weak.clone();
            services.add_event_handler(move |note| {
                if let Some(this) = w.upgrade() {
                    this.on_service(note);
                }
            });
            Self {
                client,
                recorder,
                endpoints: endpoints.clone(),
                services: services.clone(),
                slices: slices.clone(),
                // Backoff from 1 s to 100 s (`defaultSyncBackOff`, `maxSyncBackOff`).
                queue: slice_queue("endpoint_slice_mirroring", Duration::from_secs(100)),
                tracker: EndpointSliceTracker::default(),
                max_endpoints_per_subset: config.max_endpoints_per_subset.max(1),
                batch_period: config.batch_period,
            }
        })
    }

    /// Waits for the caches, then runs `workers` sync loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = CONTROLLER_NAME, "starting controller");
        let synced = wait_for_cache_sync(
            CONTROLLER_NAME,
            &[&self.endpoints, &self.slices, &self.services],
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

    /// The work queue of Endpoints keys (exposed for tests).
    pub fn queue(&self) -> &RateLimitingQueue<ObjectKey> {
        &self.queue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ported from endpointslicemirroring_controller_test.go `TestShouldMirror`.
    #[test]
    fn skip_mirror_and_leader_election_records_are_not_mirrored() {
        let mut e = Endpoints::default();
        assert!(should_mirror(&e));
        e.metadata.labels = Some([(SKIP_MIRROR_LABEL.to_string(), "false".to_string())].into());
        assert!(should_mirror(&e));
        e.metadata.labels = Some([(SKIP_MIRROR_LABEL.to_string(), "true".to_string())].into());
        assert!(!should_mirror(&e));
        e.metadata.labels = None;
        e.metadata.annotations =
            Some([(LEADER_ELECTION_ANNOTATION.to_string(), "{}".to_string())].into());
        assert!(!should_mirror(&e));
    }
}
