//! The PersistentVolume binder (`persistentvolume-binder-controller`): binds claims to volumes,
//! asks external provisioners for volumes, and releases volumes whose claims are gone.
//!
//! Mirrors `pkg/controller/volume/persistentvolume/pv_controller_base.go` (informers, two queues
//! `volumes` and `claims`, a full resync every `--pvclaimbinder-sync-period`) and
//! `pv_controller.go` (the sync loops). The decisions are pure functions in [`claim`] and
//! [`volume`] over the cached objects; [`sync`] performs them through the API. Volumes are matched
//! as kube's index does ([`rkcm_runtime::storage::find_best_match_for_claim`]): a volume
//! pre-bound to the claim first, else the smallest Available volume of the claim's class that
//! offers its access modes with the fewest extra modes, matches its selector and volume mode.
//!
//! rkcm has no in-tree volume plugins: every class's provisioner is external (a `kubernetes.io/`
//! provisioner fails with `ProvisioningFailed`), so provisioning means annotating the claim with
//! `volume.kubernetes.io/storage-provisioner` and recording `ExternalProvisioning`, and the
//! `Delete` reclaim policy of a provisioned volume is left to its provisioner (the binder only
//! marks the volume Released). Recycling is not supported (`VolumeFailedRecycle`).

pub mod binding;
pub mod claim;
mod sync;
pub mod volume;

#[cfg(test)]
pub(crate) mod fixtures;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use rkcm_runtime::events::EventRecorder;
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::storage::{claim_ref, claim_volume_name, pod_pvc_index, POD_PVC_INDEX};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, ObjectKey, Shutdown};

pub use sync::Error;

/// The component name of the binder's events (kube's `persistentvolume-controller`).
pub const EVENT_SOURCE: &str = "persistentvolume-controller";

/// The binder's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// `--pvclaimbinder-sync-period`: how often every claim and volume is synced again.
    pub sync_period: Duration,
    /// `--enable-dynamic-provisioning`.
    pub enable_dynamic_provisioning: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            sync_period: Duration::from_secs(15),
            enable_dynamic_provisioning: true,
        }
    }
}

/// Binds PersistentVolumeClaims to PersistentVolumes.
pub struct PersistentVolumeController {
    client: kube::Client,
    recorder: EventRecorder,
    volumes: SharedInformer<PersistentVolume>,
    claims: SharedInformer<PersistentVolumeClaim>,
    classes: SharedInformer<StorageClass>,
    pods: SharedInformer<Pod>,
    volume_queue: RateLimitingQueue<ObjectKey>,
    claim_queue: RateLimitingQueue<ObjectKey>,
    config: Config,
}

impl PersistentVolumeController {
    /// Registers the binder's handlers on the factory's volume, claim, class and pod informers.
    pub fn new(
        factory: &InformerFactory,
        client: kube::Client,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let volumes = factory.informer::<PersistentVolume>();
        let claims = factory.informer::<PersistentVolumeClaim>();
        let classes = factory.informer::<StorageClass>();
        let pods = factory.informer::<Pod>();
        pods.add_indexer(POD_PVC_INDEX, pod_pvc_index);
        let volume_queue = RateLimitingQueue::new("volumes");
        let claim_queue = RateLimitingQueue::new("claims");
        {
            let (vq, cq) = (volume_queue.clone(), claim_queue.clone());
            volumes.add_event_handler(move |note: Notification<PersistentVolume>| match note {
                Notification::Add(v) | Notification::Update { new: v, .. } => {
                    vq.add(ObjectKey::from_obj(&*v));
                }
                // The claim of a deleted volume is Lost: tell it now, not at the next resync.
                Notification::Delete(deleted) => {
                    if let Some(r) = claim_ref(deleted.object()) {
                        cq.add(ObjectKey::new(
                            r.namespace.clone().unwrap_or_default(),
                            r.name.clone().unwrap_or_default(),
                        ));
                    }
                }
            });
        }
        {
            let (vq, cq) = (volume_queue.clone(), claim_queue.clone());
            claims.add_event_handler(
                move |note: Notification<PersistentVolumeClaim>| match note {
                    Notification::Add(c) | Notification::Update { new: c, .. } => {
                        cq.add(ObjectKey::from_obj(&*c));
                    }
                    // The volume of a deleted claim is Released: tell it now (`deleteClaim`).
                    Notification::Delete(deleted) => {
                        let volume = claim_volume_name(deleted.object());
                        if !volume.is_empty() {
                            vq.add(ObjectKey::cluster(volume));
                        }
                    }
                },
            );
        }
        Arc::new(Self {
            client,
            recorder,
            volumes,
            claims,
            classes,
            pods,
            volume_queue,
            claim_queue,
            config,
        })
    }

    /// Runs the volume and claim workers and the periodic resync until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        tracing::info!(
            controller = "persistentvolume-binder",
            "starting controller"
        );
        let synced: [&dyn HasSynced; 4] = [&self.volumes, &self.claims, &self.classes, &self.pods];
        if wait_for_cache_sync("persistent volume", &synced, &shutdown).await {
            let volumes = {
                let this = Arc::clone(&self);
                worker::run(
                    self.volume_queue.clone(),
                    1,
                    shutdown.clone(),
                    worker::ErrorPolicy::retry_forever(tracing::Level::DEBUG),
                    move |key| {
                        let this = Arc::clone(&this);
                        async move { this.sync_volume(&key).await }
                    },
                )
            };
            let claims = {
                let this = Arc::clone(&self);
                worker::run(
                    self.claim_queue.clone(),
                    1,
                    shutdown.clone(),
                    worker::ErrorPolicy::retry_forever(tracing::Level::DEBUG),
                    move |key| {
                        let this = Arc::clone(&this);
                        async move { this.sync_claim(&key).await }
                    },
                )
            };
            tokio::join!(volumes, claims, Arc::clone(&self).resync(shutdown));
        }
        tracing::info!(
            controller = "persistentvolume-binder",
            "shutting down controller"
        );
    }

    /// Queues every volume and claim every sync period (`resync`).
    async fn resync(self: Arc<Self>, shutdown: Shutdown) {
        let mut tick =
            tokio::time::interval(self.config.sync_period.max(Duration::from_millis(100)));
        tick.tick().await;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            for key in self.claims.store().list_keys() {
                self.claim_queue.add(key);
            }
            for key in self.volumes.store().list_keys() {
                self.volume_queue.add(key);
            }
        }
    }
}
