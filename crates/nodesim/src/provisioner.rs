//! A simulated external provisioner, `rkcm.io/simulated`, and the default StorageClass
//! `standard` that uses it, as kind ships `rancher.io/local-path`.
//!
//! It talks only through the API, as a CSI external-provisioner sidecar does: for a claim the
//! PersistentVolume binder annotated `volume.kubernetes.io/storage-provisioner: rkcm.io/simulated`
//! it creates the volume `pvc-<claim uid>` (capacity = the claim's request, its access and volume
//! modes and class, the class's reclaim policy, a CSI source of the driver
//! [`crate::csi::DRIVER_NAME`] with the volume handle `vol-<claim uid>` and fsType `ext4`, `claimRef` to the claim with its UID, `pv.kubernetes.io/provisioned-by: rkcm.io/simulated`, and
//! for a claim with `volume.kubernetes.io/selected-node` a required node affinity
//! `kubernetes.io/hostname In [<node>]`); the binder then binds the two. A Released volume of its
//! own with reclaim policy `Delete` is deleted. Events: `Provisioning` and `ProvisioningSucceeded`
//! on the claim, `ProvisioningFailed` when the create fails.
//!
//! It is also the volumes' external resizer: when a Bound claim on one of its volumes asks for
//! more than its capacity and the class has `allowVolumeExpansion: true`, the volume's
//! `spec.capacity` and then the claim's `status.capacity` become the request (a simulated volume
//! needs no node-side file system expansion); events `Resizing` and `VolumeResizeSuccessful`.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    CSIPersistentVolumeSource, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeSpec, VolumeNodeAffinity,
};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use kube::Client;
use parking_lot::Mutex;
use rkcm_runtime::events::{EventRecorder, EventType};
use rkcm_runtime::informer::{InformerFactory, Notification, Store};
use rkcm_runtime::storage::*;
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, ObjectKey, Shutdown};

use crate::error::api_code;

/// The provisioner's name, in StorageClasses' `provisioner`.
pub const PROVISIONER_NAME: &str = "rkcm.io/simulated";

/// The default StorageClass `rkcm up` creates.
pub const DEFAULT_CLASS_NAME: &str = "standard";

/// The CSI volume handle of the volume provisioned for a claim: `vol-<claim uid>`.
pub fn volume_handle(claim: &PersistentVolumeClaim) -> String {
    format!("vol-{}", claim.metadata.uid.as_deref().unwrap_or_default())
}

/// Why provisioning or deleting a volume failed; retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// Creating the volume of a claim failed.
    #[error("failed to provision volume for claim {claim}")]
    Create {
        /// The claim.
        claim: ObjectKey,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// Resizing a volume or recording the claim's new capacity failed.
    #[error("failed to resize volume for claim {claim}")]
    Resize {
        /// The claim.
        claim: ObjectKey,
        /// Cause.
        #[source]
        source: kube::Error,
    },
    /// Deleting a released volume failed.
    #[error("failed to delete volume {volume}")]
    Delete {
        /// The volume.
        volume: String,
        /// Cause.
        #[source]
        source: kube::Error,
    },
}

/// The default class: `standard`, default, WaitForFirstConsumer, reclaim Delete, expandable.
pub fn default_class() -> StorageClass {
    StorageClass {
        metadata: ObjectMeta {
            name: Some(DEFAULT_CLASS_NAME.into()),
            annotations: Some(
                [(IS_DEFAULT_CLASS_ANNOTATION.to_string(), "true".to_string())].into(),
            ),
            ..Default::default()
        },
        provisioner: PROVISIONER_NAME.into(),
        reclaim_policy: Some("Delete".into()),
        volume_binding_mode: Some("WaitForFirstConsumer".into()),
        allow_volume_expansion: Some(true),
        ..Default::default()
    }
}

/// Creates the default class unless a class of that name exists (it is never overwritten, so an
/// edited or deleted-and-recreated class stays as the user left it).
pub async fn ensure_default_class(client: &Client) -> Result<(), kube::Error> {
    let api: Api<StorageClass> = Api::all(client.clone());
    match api.create(&PostParams::default(), &default_class()).await {
        Ok(_) => Ok(()),
        Err(e) if api_code(&e) == Some(409) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The name of the volume provisioned for a claim (external-provisioner's `pvc-<uid>`).
pub fn volume_name(claim: &PersistentVolumeClaim) -> String {
    format!("pvc-{}", claim.metadata.uid.as_deref().unwrap_or_default())
}

/// Whether the claim waits for this provisioner: annotated for it, not bound, not deleted.
pub fn wants_volume(claim: &PersistentVolumeClaim) -> bool {
    let annotated = claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANN_STORAGE_PROVISIONER))
        .is_some_and(|p| p == PROVISIONER_NAME);
    annotated && claim_volume_name(claim).is_empty() && claim.metadata.deletion_timestamp.is_none()
}

/// The volume this provisioner creates for `claim` of `class`.
pub fn provisioned_volume(claim: &PersistentVolumeClaim, class: &StorageClass) -> PersistentVolume {
    let name = volume_name(claim);
    let spec = claim.spec.clone().unwrap_or_default();
    let request = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"))
        .cloned()
        .unwrap_or_else(|| k8s_openapi::apimachinery::pkg::api::resource::Quantity("1Gi".into()));
    let selected_node = claim
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANN_SELECTED_NODE))
        .filter(|n| !n.is_empty());
    let node_affinity = selected_node.map(|node| VolumeNodeAffinity {
        required: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: Some(vec![NodeSelectorRequirement {
                    key: "kubernetes.io/hostname".into(),
                    operator: "In".into(),
                    values: Some(vec![node.clone()]),
                }]),
                match_fields: None,
            }],
        }),
    });
    let claim_ref = k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("PersistentVolumeClaim".into()),
        namespace: claim.metadata.namespace.clone(),
        name: claim.metadata.name.clone(),
        uid: claim.metadata.uid.clone(),
        resource_version: claim.metadata.resource_version.clone(),
        ..Default::default()
    };
    PersistentVolume {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            annotations: Some(
                [(
                    ANN_DYNAMICALLY_PROVISIONED.to_string(),
                    PROVISIONER_NAME.to_string(),
                )]
                .into(),
            ),
            ..Default::default()
        },
        spec: Some(PersistentVolumeSpec {
            access_modes: spec.access_modes.clone(),
            capacity: Some([("storage".to_string(), request)].into()),
            claim_ref: Some(claim_ref),
            csi: Some(CSIPersistentVolumeSource {
                driver: crate::csi::DRIVER_NAME.into(),
                volume_handle: volume_handle(claim),
                fs_type: Some(crate::csi::FS_TYPE.into()),
                ..Default::default()
            }),
            mount_options: class.mount_options.clone(),
            node_affinity,
            persistent_volume_reclaim_policy: Some(
                class
                    .reclaim_policy
                    .clone()
                    .unwrap_or_else(|| "Delete".into()),
            ),
            storage_class_name: class.metadata.name.clone(),
            volume_mode: spec.volume_mode.clone(),
            ..Default::default()
        }),
        status: None,
    }
}

/// Whether a Bound claim asks for more storage than its status shows.
pub fn wants_resize(claim: &PersistentVolumeClaim) -> bool {
    let capacity = claim
        .status
        .as_ref()
        .and_then(|s| s.capacity.as_ref())
        .and_then(|c| c.get("storage"))
        .and_then(|q| rkcm_apimachinery::quantity::Quantity::parse(&q.0).ok())
        .unwrap_or_default();
    claim_phase(claim) == claim_phase::BOUND && requested_storage(claim) > capacity
}

/// Whether the volume was provisioned by this provisioner.
fn is_ours(volume: &PersistentVolume) -> bool {
    volume
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANN_DYNAMICALLY_PROVISIONED))
        .is_some_and(|p| p == PROVISIONER_NAME)
}

/// Whether the volume is one of ours, Released, with reclaim policy Delete.
pub fn wants_deletion(volume: &PersistentVolume) -> bool {
    let ours = volume
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ANN_DYNAMICALLY_PROVISIONED))
        .is_some_and(|p| p == PROVISIONER_NAME);
    ours && volume_phase(volume) == volume_phase::RELEASED
        && reclaim_policy(volume) == "Delete"
        && volume.metadata.deletion_timestamp.is_none()
}

/// The provisioner: one queue of claims to provision, one of volumes to delete.
pub struct Provisioner {
    client: Client,
    claims: Store<PersistentVolumeClaim>,
    volumes: Store<PersistentVolume>,
    classes: Store<StorageClass>,
    claim_queue: RateLimitingQueue<ObjectKey>,
    volume_queue: RateLimitingQueue<ObjectKey>,
    recorder: Mutex<Option<EventRecorder>>,
}

impl Provisioner {
    /// A provisioner fed by the claim, volume and class informers of `informers`.
    pub fn new(informers: &InformerFactory, client: Client) -> Arc<Self> {
        let claims = informers.informer::<PersistentVolumeClaim>();
        let volumes = informers.informer::<PersistentVolume>();
        let classes = informers.informer::<StorageClass>();
        let claim_queue = RateLimitingQueue::new("nodesim_provisioner_claims");
        let volume_queue = RateLimitingQueue::new("nodesim_provisioner_volumes");
        let q = claim_queue.clone();
        claims.add_event_handler(move |note: Notification<PersistentVolumeClaim>| {
            if let Notification::Add(c) | Notification::Update { new: c, .. } = note {
                if wants_volume(&c) || wants_resize(&c) {
                    q.add(ObjectKey::from_obj(&*c));
                }
            }
        });
        let q = volume_queue.clone();
        volumes.add_event_handler(move |note: Notification<PersistentVolume>| {
            if let Notification::Add(v) | Notification::Update { new: v, .. } = note {
                if wants_deletion(&v) {
                    q.add(ObjectKey::from_obj(&*v));
                }
            }
        });
        Arc::new(Self {
            client,
            claims: claims.store(),
            volumes: volumes.store(),
            classes: classes.store(),
            claim_queue,
            volume_queue,
            recorder: Mutex::new(None),
        })
    }

    /// Records events with `recorder` from now on.
    pub fn set_recorder(&self, recorder: EventRecorder) {
        *self.recorder.lock() = Some(recorder);
    }

    /// Stops recording events, so that the broadcaster can shut down.
    pub fn stop_recording(&self) {
        self.recorder.lock().take();
    }

    fn event(
        &self,
        claim: &PersistentVolumeClaim,
        type_: EventType,
        reason: &str,
        message: String,
    ) {
        if let Some(recorder) = self.recorder.lock().clone() {
            recorder.event_for(claim, type_, reason, message);
        }
    }

    /// Provisions and deletes until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        let provision = {
            let this = Arc::clone(&self);
            worker::run(
                self.claim_queue.clone(),
                2,
                shutdown.clone(),
                worker::ErrorPolicy::retry_forever(tracing::Level::WARN),
                move |key: ObjectKey| {
                    let this = Arc::clone(&this);
                    async move { this.provision(&key).await }
                },
            )
        };
        let delete = {
            let this = Arc::clone(&self);
            worker::run(
                self.volume_queue.clone(),
                1,
                shutdown,
                worker::ErrorPolicy::retry_forever(tracing::Level::WARN),
                move |key: ObjectKey| {
                    let this = Arc::clone(&this);
                    async move { this.delete(&key).await }
                },
            )
        };
        tokio::join!(provision, delete);
    }

    async fn provision(&self, key: &ObjectKey) -> Result<(), ProvisionError> {
        let Some(claim) = self.claims.get(key) else {
            return Ok(());
        };
        if wants_resize(&claim) {
            return self.resize(key, &claim).await;
        }
        if !wants_volume(&claim) {
            return Ok(());
        }
        let name = volume_name(&claim);
        if self
            .volumes
            .get(&ObjectKey::cluster(name.clone()))
            .is_some()
        {
            return Ok(());
        }
        let class_name = claim_class(&claim);
        let Some(class) = self.classes.get(&ObjectKey::cluster(class_name)) else {
            self.event(
                &claim,
                EventType::Warning,
                "ProvisioningFailed",
                format!("storageclass.storage.k8s.io {class_name:?} not found"),
            );
            return Ok(());
        };
        if class.provisioner != PROVISIONER_NAME {
            return Ok(());
        }
        self.event(
            &claim,
            EventType::Normal,
            "Provisioning",
            format!(
                "External provisioner is provisioning volume for claim {:?}",
                key.to_string()
            ),
        );
        let api: Api<PersistentVolume> = Api::all(self.client.clone());
        match api
            .create(&PostParams::default(), &provisioned_volume(&claim, &class))
            .await
        {
            Ok(_) => {}
            Err(e) if api_code(&e) == Some(409) => {}
            Err(source) => {
                self.event(
                    &claim,
                    EventType::Warning,
                    "ProvisioningFailed",
                    format!(
                        "failed to provision volume with StorageClass {class_name:?}: {}",
                        rkcm_runtime::api_error::message(&source)
                    ),
                );
                return Err(ProvisionError::Create {
                    claim: key.clone(),
                    source,
                });
            }
        }
        tracing::debug!(claim = %key, volume = %name, "provisioned");
        self.event(
            &claim,
            EventType::Normal,
            "ProvisioningSucceeded",
            format!("Successfully provisioned volume {name}"),
        );
        Ok(())
    }

    /// Grows the claim's volume to its request, then the claim's capacity (external-resizer's
    /// controller-side expansion, with nothing left for the node to do).
    async fn resize(
        &self,
        key: &ObjectKey,
        claim: &PersistentVolumeClaim,
    ) -> Result<(), ProvisionError> {
        let Some(volume) = self
            .volumes
            .get(&ObjectKey::cluster(claim_volume_name(claim)))
        else {
            return Ok(());
        };
        let expandable = self
            .classes
            .get(&ObjectKey::cluster(claim_class(claim)))
            .is_some_and(|c| c.allow_volume_expansion == Some(true));
        if !is_ours(&volume) || !expandable {
            return Ok(());
        }
        let Some(request) = claim
            .spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get("storage"))
            .cloned()
        else {
            return Ok(());
        };
        let err = |source| ProvisionError::Resize {
            claim: key.clone(),
            source,
        };
        if volume_capacity(&volume) < requested_storage(claim) {
            self.event(
                claim,
                EventType::Normal,
                "Resizing",
                format!(
                    "External resizer is resizing volume {}",
                    volume.metadata.name.as_deref().unwrap_or_default()
                ),
            );
            let mut grown = (*volume).clone();
            grown
                .spec
                .get_or_insert_with(Default::default)
                .capacity
                .get_or_insert_with(Default::default)
                .insert("storage".into(), request.clone());
            let api: Api<PersistentVolume> = Api::all(self.client.clone());
            api.replace(
                &volume.metadata.name.clone().unwrap_or_default(),
                &PostParams::default(),
                &grown,
            )
            .await
            .map_err(err)?;
        }
        let mut updated = claim.clone();
        let status = updated.status.get_or_insert_with(Default::default);
        status
            .capacity
            .get_or_insert_with(Default::default)
            .insert("storage".into(), request);
        status.conditions = None;
        let api: Api<PersistentVolumeClaim> =
            Api::namespaced(self.client.clone(), key.namespace_str());
        api.replace_status(&key.name, &PostParams::default(), &updated)
            .await
            .map_err(err)?;
        self.event(
            claim,
            EventType::Normal,
            "VolumeResizeSuccessful",
            "Resize volume succeeded".into(),
        );
        Ok(())
    }

    async fn delete(&self, key: &ObjectKey) -> Result<(), ProvisionError> {
        let Some(volume) = self.volumes.get(key) else {
            return Ok(());
        };
        if !wants_deletion(&volume) {
            return Ok(());
        }
        let api: Api<PersistentVolume> = Api::all(self.client.clone());
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: volume.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&key.name, &params).await {
            Ok(_) => {
                tracing::debug!(volume = %key, "deleted released volume");
                Ok(())
            }
            Err(e) if matches!(api_code(&e), Some(404 | 409)) => Ok(()),
            Err(source) => Err(ProvisionError::Delete {
                volume: key.name.clone(),
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PersistentVolumeClaimSpec, VolumeResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn claim() -> PersistentVolumeClaim {
        let mut c = PersistentVolumeClaim::default();
        c.metadata.name = Some("data".into());
        c.metadata.namespace = Some("default".into());
        c.metadata.uid = Some("1234".into());
        c.metadata.annotations = Some(
            [
                (
                    ANN_STORAGE_PROVISIONER.to_string(),
                    PROVISIONER_NAME.to_string(),
                ),
                (ANN_SELECTED_NODE.to_string(), "rkcm-node-2".to_string()),
            ]
            .into(),
        );
        c.spec = Some(PersistentVolumeClaimSpec {
            access_modes: Some(vec!["ReadWriteOnce".into()]),
            storage_class_name: Some(DEFAULT_CLASS_NAME.into()),
            resources: Some(VolumeResourceRequirements {
                requests: Some([("storage".to_string(), Quantity("3Gi".into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        });
        c
    }

    #[test]
    fn the_volume_fits_the_claim_and_its_selected_node() {
        let v = provisioned_volume(&claim(), &default_class());
        assert_eq!(v.metadata.name.as_deref(), Some("pvc-1234"));
        let spec = v.spec.as_ref().unwrap();
        assert_eq!(spec.capacity.as_ref().unwrap()["storage"].0, "3Gi");
        assert_eq!(
            spec.persistent_volume_reclaim_policy.as_deref(),
            Some("Delete")
        );
        assert_eq!(spec.storage_class_name.as_deref(), Some("standard"));
        assert_eq!(
            spec.claim_ref.as_ref().unwrap().uid.as_deref(),
            Some("1234")
        );
        let term = &spec
            .node_affinity
            .as_ref()
            .unwrap()
            .required
            .as_ref()
            .unwrap()
            .node_selector_terms[0];
        assert_eq!(
            term.match_expressions.as_ref().unwrap()[0].values,
            Some(vec!["rkcm-node-2".to_string()])
        );
        assert_eq!(
            v.metadata.annotations.as_ref().unwrap()[ANN_DYNAMICALLY_PROVISIONED],
            PROVISIONER_NAME
        );
        let mut retain = default_class();
        retain.reclaim_policy = Some("Retain".into());
        let v = provisioned_volume(&claim(), &retain);
        assert_eq!(
            v.spec.unwrap().persistent_volume_reclaim_policy.as_deref(),
            Some("Retain")
        );
    }

    #[test]
    fn only_annotated_unbound_claims_and_released_delete_volumes_are_acted_on() {
        assert!(wants_volume(&claim()));
        let mut bound = claim();
        bound.spec.as_mut().unwrap().volume_name = Some("pvc-1234".into());
        assert!(!wants_volume(&bound));
        let mut other = claim();
        other
            .metadata
            .annotations
            .as_mut()
            .unwrap()
            .insert(ANN_STORAGE_PROVISIONER.into(), "example.com/other".into());
        assert!(!wants_volume(&other));

        let mut grown = bound.clone();
        grown.status = Some(k8s_openapi::api::core::v1::PersistentVolumeClaimStatus {
            phase: Some("Bound".into()),
            capacity: Some([("storage".to_string(), Quantity("1Gi".into()))].into()),
            ..Default::default()
        });
        assert!(wants_resize(&grown), "3Gi requested, 1Gi provisioned");
        grown.status.as_mut().unwrap().capacity =
            Some([("storage".to_string(), Quantity("3Gi".into()))].into());
        assert!(!wants_resize(&grown));

        let mut v = provisioned_volume(&claim(), &default_class());
        assert!(!wants_deletion(&v));
        v.status = Some(k8s_openapi::api::core::v1::PersistentVolumeStatus {
            phase: Some("Released".into()),
            ..Default::default()
        });
        assert!(wants_deletion(&v));
        v.spec.as_mut().unwrap().persistent_volume_reclaim_policy = Some("Retain".into());
        assert!(!wants_deletion(&v));
    }
}
