//! The volume protection controller (`persistentvolume-protection-controller`,
//! `pkg/controller/volume/pvprotection/pv_protection_controller.go`): every volume gets
//! `kubernetes.io/pv-protection`; a deleted volume keeps it while it is Bound.

use std::sync::Arc;

use k8s_openapi::api::core::v1::PersistentVolume;
use kube::api::{Api, PostParams};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{api_error, worker, ObjectKey, Shutdown};

use super::finalizer::{step, with_finalizer, without_finalizer, Step, PV_PROTECTION_FINALIZER};

/// Writing a volume's finalizers failed; retried with backoff.
#[derive(Debug, thiserror::Error)]
#[error("error updating finalizers of PersistentVolume {volume:?}")]
pub struct Error {
    /// The volume.
    pub volume: String,
    /// The API error.
    #[source]
    pub source: kube::Error,
}

/// Whether the volume is in use: Bound (`isBeingUsed`).
pub fn is_being_used(volume: &PersistentVolume) -> bool {
    volume.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")
}

/// Keeps `kubernetes.io/pv-protection` on volumes.
pub struct PvProtectionController {
    client: kube::Client,
    volumes: SharedInformer<PersistentVolume>,
    queue: RateLimitingQueue<ObjectKey>,
}

impl PvProtectionController {
    /// Registers the controller's handler on the factory's volume informer.
    pub fn new(factory: &InformerFactory, client: kube::Client) -> Arc<Self> {
        let volumes = factory.informer::<PersistentVolume>();
        let queue = RateLimitingQueue::new("pvprotection");
        let q = queue.clone();
        volumes.add_event_handler(move |note: Notification<PersistentVolume>| {
            if let Notification::Add(v) | Notification::Update { new: v, .. } = note {
                if step(&v.metadata, PV_PROTECTION_FINALIZER) != Step::Nothing {
                    q.add(ObjectKey::from_obj(&*v));
                }
            }
        });
        Arc::new(Self {
            client,
            volumes,
            queue,
        })
    }

    /// Runs `workers` loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = "pv-protection", "starting controller");
        let synced: [&dyn HasSynced; 1] = [&self.volumes];
        if wait_for_cache_sync("PV protection", &synced, &shutdown).await {
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
        tracing::info!(controller = "pv-protection", "shutting down controller");
    }

    /// Adds or removes the finalizer of the volume `key` (`processPV`).
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), Error> {
        let Some(volume) = self.volumes.store().get(key) else {
            return Ok(());
        };
        let finalizers = match step(&volume.metadata, PV_PROTECTION_FINALIZER) {
            Step::Nothing => return Ok(()),
            Step::RemoveIfUnused if is_being_used(&volume) => return Ok(()),
            Step::RemoveIfUnused => without_finalizer(&volume.metadata, PV_PROTECTION_FINALIZER),
            Step::AddFinalizer => with_finalizer(&volume.metadata, PV_PROTECTION_FINALIZER),
        };
        let mut updated = (*volume).clone();
        updated.metadata.finalizers = Some(finalizers);
        let api: Api<PersistentVolume> = Api::all(self.client.clone());
        match api
            .replace(&key.name, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if api_error::is_not_found(&e) => Ok(()),
            Err(source) => Err(Error {
                volume: key.name.clone(),
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PersistentVolumeStatus;

    // pv_protection_controller_test.go: a deleted volume keeps the finalizer while Bound.
    #[test]
    fn only_a_bound_volume_is_in_use() {
        let mut pv = PersistentVolume::default();
        assert!(!is_being_used(&pv));
        for (phase, used) in [
            ("Available", false),
            ("Released", false),
            ("Failed", false),
            ("Pending", false),
            ("Bound", true),
        ] {
            pv.status = Some(PersistentVolumeStatus {
                phase: Some(phase.into()),
                ..Default::default()
            });
            assert_eq!(is_being_used(&pv), used, "{phase}");
        }
    }
}
