//! The volume expander (`persistentvolume-expander-controller`,
//! `pkg/controller/volume/expand/expand_controller.go`): notices bound claims whose request grew
//! beyond their capacity. rkcm has no in-tree expandable volume plugins, so, as kube does for
//! every CSI and external volume, it records `ExternalExpanding` ("waiting for an external
//! controller to expand this PVC") and leaves the resize to the volume's external resizer (with
//! `rkcm up`, the simulated provisioner).

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use rkcm_apimachinery::quantity::Quantity;
use rkcm_runtime::events::{EventRecorder, EventType};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::storage::{claim_phase, claim_volume_name, requested_storage};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, ObjectKey, Shutdown};

/// The component name of the expander's events (kube's `volume_expand`).
pub const EVENT_SOURCE: &str = "volume_expand";

/// kube's worker count (`defaultWorkerCount`).
pub const WORKERS: usize = 10;

/// The claim's `status.capacity.storage`, zero when absent.
fn status_capacity(claim: &PersistentVolumeClaim) -> Quantity {
    claim
        .status
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .and_then(|q| Quantity::parse(&q.0).ok())
        .unwrap_or_default()
}

/// Whether a claim asks for more than it has: Bound, with a request above its capacity.
pub fn needs_expansion(claim: &PersistentVolumeClaim) -> bool {
    claim_phase(claim) == claim_phase::BOUND && requested_storage(claim) > status_capacity(claim)
}

/// The expander cannot go on; never returned for external volumes, which are the only kind.
#[derive(Debug, thiserror::Error)]
#[error("persistentVolume {volume:?} bound to PVC {claim}, but PVC is not bound to it")]
pub struct Error {
    /// The volume.
    pub volume: String,
    /// The claim.
    pub claim: ObjectKey,
}

/// Hands growing claims to their external resizer.
pub struct ExpandController {
    recorder: EventRecorder,
    claims: SharedInformer<PersistentVolumeClaim>,
    volumes: SharedInformer<PersistentVolume>,
    queue: RateLimitingQueue<ObjectKey>,
}

impl ExpandController {
    /// Registers the expander's handlers on the factory's claim and volume informers.
    pub fn new(factory: &InformerFactory, recorder: EventRecorder) -> Arc<Self> {
        let claims = factory.informer::<PersistentVolumeClaim>();
        let volumes = factory.informer::<PersistentVolume>();
        let queue = RateLimitingQueue::new("volume_expand");
        let q = queue.clone();
        claims.add_event_handler(move |note: Notification<PersistentVolumeClaim>| {
            if let Notification::Add(c) | Notification::Update { new: c, .. } = note {
                if claim_phase(&c) == claim_phase::BOUND {
                    q.add(ObjectKey::from_obj(&*c));
                }
            }
        });
        Arc::new(Self {
            recorder,
            claims,
            volumes,
            queue,
        })
    }

    /// Runs `workers` loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(
            controller = "persistentvolume-expander",
            "starting controller"
        );
        let synced: [&dyn HasSynced; 2] = [&self.claims, &self.volumes];
        if wait_for_cache_sync("expand", &synced, &shutdown).await {
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
        tracing::info!(
            controller = "persistentvolume-expander",
            "shutting down controller"
        );
    }

    /// Looks at the claim `key` (`syncHandler`).
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), Error> {
        let Some(claim) = self.claims.store().get(key) else {
            return Ok(());
        };
        if !needs_expansion(&claim) {
            return Ok(());
        }
        let volume_name = claim_volume_name(&claim);
        let Some(volume) = self.volumes.store().get(&ObjectKey::cluster(volume_name)) else {
            return Ok(());
        };
        let bound_here = volume
            .spec
            .as_ref()
            .and_then(|s| s.claim_ref.as_ref())
            .is_some_and(|r| r.uid.is_some() && r.uid == claim.metadata.uid);
        if !bound_here {
            return Err(Error {
                volume: volume_name.to_string(),
                claim: key.clone(),
            });
        }
        // No in-tree expandable plugin: every volume is resized by an external controller.
        self.recorder.event_for(
            &*claim,
            EventType::Normal,
            "ExternalExpanding",
            "waiting for an external controller to expand this PVC",
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        PersistentVolumeClaimSpec, PersistentVolumeClaimStatus, VolumeResourceRequirements,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as Q;

    fn claim(phase: &str, request: &str, capacity: Option<&str>) -> PersistentVolumeClaim {
        PersistentVolumeClaim {
            spec: Some(PersistentVolumeClaimSpec {
                resources: Some(VolumeResourceRequirements {
                    requests: Some([("storage".to_string(), Q(request.into()))].into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: Some(PersistentVolumeClaimStatus {
                phase: Some(phase.into()),
                capacity: capacity.map(|c| [("storage".to_string(), Q(c.into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    // expand_controller_test.go TestSyncHandler: only a bound claim asking for more expands.
    #[test]
    fn only_bound_claims_requesting_more_than_their_capacity_expand() {
        assert!(needs_expansion(&claim("Bound", "2Gi", Some("1Gi"))));
        assert!(!needs_expansion(&claim("Bound", "1Gi", Some("1Gi"))));
        assert!(!needs_expansion(&claim("Bound", "1024Mi", Some("1Gi"))));
        assert!(!needs_expansion(&claim("Pending", "2Gi", None)));
        assert!(needs_expansion(&claim("Bound", "1Gi", None)));
    }
}
