//! The ephemeral-volume controller (`ephemeral-volume-controller`,
//! `pkg/controller/volume/ephemeral/controller.go`): for each generic ephemeral volume of a pod,
//! the claim `<pod>-<volume>` from the volume's template, owned by the pod (so the garbage
//! collector deletes it with the pod). A claim of that name not owned by the pod is reported on
//! the pod (`FailedBinding`) and left alone. Pod specs are immutable, so pods are looked at when
//! added; a deleted claim is created again for the pods that still use it.

mod claim;

use std::sync::{Arc, OnceLock};

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::api::{Api, PostParams};
use prometheus_client::metrics::counter::Counter;
use rkcm_runtime::events::{EventRecorder, EventType};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, ObjectKey, Shutdown};

pub use claim::{claim_for, ephemeral_claim_names, verify_owner, NotOwner};

/// The component name of the controller's events (kube's `ephemeral_volume`).
pub const EVENT_SOURCE: &str = "ephemeral_volume";

/// Pod index by the ephemeral claims it needs, `namespace/claim` (kube's
/// `common.PodPVCIndex`, for ephemeral volumes).
const EPHEMERAL_CLAIM_INDEX: &str = "ephemeral-volume-claim";

/// A claim could not be created; retried with backoff.
#[derive(Debug, thiserror::Error)]
#[error("create PVC {claim}")]
pub struct Error {
    /// `namespace/name` of the claim.
    pub claim: ObjectKey,
    /// The API error.
    #[source]
    pub source: kube::Error,
}

struct Metrics {
    create_attempts: Counter,
    create_failures: Counter,
}

/// `ephemeral_volume_controller_create_total` and `…_create_failures_total`.
fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(|| Metrics {
        create_attempts: rkcm_runtime::metrics::register(
            "ephemeral_volume_controller_create",
            "Number of PersistenVolumeClaims creation requests",
            Counter::default(),
        ),
        create_failures: rkcm_runtime::metrics::register(
            "ephemeral_volume_controller_create_failures",
            "Number of PersistenVolumeClaims creation requests",
            Counter::default(),
        ),
    })
}

/// Creates the claims of pods' generic ephemeral volumes.
pub struct EphemeralVolumeController {
    client: kube::Client,
    recorder: EventRecorder,
    pods: SharedInformer<Pod>,
    claims: SharedInformer<PersistentVolumeClaim>,
    queue: RateLimitingQueue<ObjectKey>,
}

fn enqueue_pod(queue: &RateLimitingQueue<ObjectKey>, pod: &Pod) {
    if pod.metadata.deletion_timestamp.is_none() && !ephemeral_claim_names(pod).is_empty() {
        queue.add(ObjectKey::from_obj(pod));
    }
}

impl EphemeralVolumeController {
    /// Registers the controller's handlers on the factory's pod and claim informers.
    pub fn new(
        factory: &InformerFactory,
        client: kube::Client,
        recorder: EventRecorder,
    ) -> Arc<Self> {
        let _ = metrics();
        let pods = factory.informer::<Pod>();
        let claims = factory.informer::<PersistentVolumeClaim>();
        pods.add_indexer(EPHEMERAL_CLAIM_INDEX, |pod: &Pod| {
            let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
            ephemeral_claim_names(pod)
                .into_iter()
                .map(|c| format!("{namespace}/{c}"))
                .collect()
        });
        let queue = RateLimitingQueue::new("ephemeral_volume");
        let q = queue.clone();
        pods.add_event_handler(move |note: Notification<Pod>| {
            if let Notification::Add(pod) = note {
                enqueue_pod(&q, &pod);
            }
        });
        let q = queue.clone();
        let pod_store = pods.store();
        claims.add_event_handler(move |note: Notification<PersistentVolumeClaim>| {
            if let Notification::Delete(deleted) = note {
                let key = ObjectKey::from_obj(&**deleted.object()).to_string();
                for pod in pod_store.by_index(EPHEMERAL_CLAIM_INDEX, &key) {
                    enqueue_pod(&q, &pod);
                }
            }
        });
        Arc::new(Self {
            client,
            recorder,
            pods,
            claims,
            queue,
        })
    }

    /// Runs `workers` loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = "ephemeral-volume", "starting controller");
        let synced: [&dyn HasSynced; 2] = [&self.pods, &self.claims];
        if wait_for_cache_sync("ephemeral", &synced, &shutdown).await {
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                workers,
                shutdown,
                worker::ErrorPolicy::handle_error(),
                move |key| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&key).await }
                },
            )
            .await;
        }
        tracing::info!(controller = "ephemeral-volume", "shutting down controller");
    }

    /// Creates the missing claims of the pod `key` (`syncHandler`, `handleVolume`).
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), Error> {
        let Some(pod) = self.pods.store().get(key) else {
            return Ok(());
        };
        if pod.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let volumes = pod.spec.iter().flat_map(|s| s.volumes.iter().flatten());
        for volume in volumes.filter(|v| v.ephemeral.is_some()) {
            let Some(wanted) = claim_for(&pod, volume) else {
                continue;
            };
            let name = wanted.metadata.name.clone().unwrap_or_default();
            let claim_key = ObjectKey::new(key.namespace_str(), name.clone());
            if let Some(existing) = self.claims.store().get(&claim_key) {
                if let Err(not_owner) = verify_owner(&existing, &pod) {
                    self.recorder.event_for(
                        &*pod,
                        EventType::Warning,
                        "FailedBinding",
                        not_owner.to_string(),
                    );
                }
                continue;
            }
            metrics().create_attempts.inc();
            let api: Api<PersistentVolumeClaim> =
                Api::namespaced(self.client.clone(), key.namespace_str());
            if let Err(source) = api.create(&PostParams::default(), &wanted).await {
                metrics().create_failures.inc();
                return Err(Error {
                    claim: claim_key,
                    source,
                });
            }
        }
        Ok(())
    }
}
