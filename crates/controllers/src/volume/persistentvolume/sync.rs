//! The binder's syncs: read the caches, decide with [`super::claim`] and [`super::volume`], and
//! write through the API (`syncClaim`, `syncVolume`, `bind`, `updateClaimStatus`,
//! `updateVolumePhase`, `unbindVolume`, `setClaimProvisioner` of `pv_controller.go`).

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use kube::api::{Api, PostParams};
use rkcm_runtime::events::EventType;
use rkcm_runtime::storage::*;
use rkcm_runtime::{api_error, ObjectKey};

use super::binding::{bound_claim, bound_volume, claim_status};
use super::claim::{
    external_provisioning_message, sync_claim, BinderEvent, ClaimAction, ClaimInputs, DecideError,
};
use super::volume::{sync_volume, unbound_volume, Reclaim, VolumeAction};
use super::PersistentVolumeController;

/// Why a sync failed; the key is retried with backoff (and at the next resync).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The claim's state cannot be decided.
    #[error(transparent)]
    Decide(#[from] DecideError),
    /// Writing a claim failed.
    #[error("error updating PersistentVolumeClaim {claim}")]
    Claim {
        /// `namespace/name`.
        claim: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Writing or reading a volume failed.
    #[error("error updating PersistentVolume {volume:?}")]
    Volume {
        /// The volume's name.
        volume: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The binding is inconsistent (kube's "THIS SHOULD NEVER HAPPEN" case).
    #[error("{0}")]
    InvalidBinding(String),
}

fn claim_err(claim: &PersistentVolumeClaim) -> impl FnOnce(kube::Error) -> Error + '_ {
    move |source| Error::Claim {
        claim: claim_key(claim),
        source,
    }
}

fn volume_err(volume: &PersistentVolume) -> impl FnOnce(kube::Error) -> Error + '_ {
    move |source| Error::Volume {
        volume: volume.metadata.name.clone().unwrap_or_default(),
        source,
    }
}

impl PersistentVolumeController {
    fn claims_api(&self, namespace: &str) -> Api<PersistentVolumeClaim> {
        Api::namespaced(self.client.clone(), namespace)
    }

    fn volumes_api(&self) -> Api<PersistentVolume> {
        Api::all(self.client.clone())
    }

    fn record<K: kube::Resource<DynamicType = ()>>(&self, obj: &K, event: &BinderEvent) {
        self.recorder
            .event_for(obj, event.type_, event.reason, event.message.clone());
    }

    /// Syncs the claim `key` (`syncClaim`).
    pub(super) async fn sync_claim(&self, key: &ObjectKey) -> Result<(), Error> {
        let Some(claim) = self.claims.store().get(key) else {
            return Ok(());
        };
        let volumes = self.volumes.store().list();
        let classes = self.classes.store().list();
        let mut unscheduled: Vec<String> = self
            .pods
            .store()
            .by_index(POD_PVC_INDEX, &key.to_string())
            .iter()
            .filter(|p| {
                p.spec
                    .as_ref()
                    .and_then(|s| s.node_name.as_deref())
                    .is_none_or(str::is_empty)
            })
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        unscheduled.sort();
        let inputs = ClaimInputs {
            volumes: &volumes,
            classes: &classes,
            unscheduled_pods: &unscheduled,
            enable_dynamic_provisioning: self.config.enable_dynamic_provisioning,
        };
        let action = sync_claim(&claim, &inputs)?;
        tracing::trace!(claim = %key, ?action, "synchronizing PersistentVolumeClaim");
        match action {
            ClaimAction::Bind(volume) => self.bind(&volume, &claim).await,
            ClaimAction::AssignDefaultClass(class) => {
                let mut updated = (*claim).clone();
                updated
                    .spec
                    .get_or_insert_with(Default::default)
                    .storage_class_name = Some(class);
                self.claims_api(key.namespace_str())
                    .replace(&key.name, &PostParams::default(), &updated)
                    .await
                    .map_err(claim_err(&claim))?;
                Ok(())
            }
            ClaimAction::Pending(event) => {
                if let Some(event) = &event {
                    self.record(&*claim, event);
                }
                self.update_claim_status(&claim, claim_phase::PENDING, None)
                    .await?;
                Ok(())
            }
            ClaimAction::Lost(event) => {
                if claim_phase(&claim) != claim_phase::LOST {
                    let updated = self
                        .update_claim_status(&claim, claim_phase::LOST, None)
                        .await?;
                    self.record(&*updated, &event);
                }
                Ok(())
            }
            ClaimAction::Provision { provisioner } => {
                let claim = self.set_claim_provisioner(&claim, &provisioner).await?;
                let event = BinderEvent {
                    type_: EventType::Normal,
                    reason: "ExternalProvisioning",
                    message: external_provisioning_message(&provisioner),
                };
                self.record(&*claim, &event);
                Ok(())
            }
            ClaimAction::Event(event) => {
                if let Some(event) = &event {
                    self.record(&*claim, event);
                }
                Ok(())
            }
            ClaimAction::Fail { event, error } => {
                self.record(&*claim, &event);
                Err(Error::InvalidBinding(error))
            }
        }
    }

    /// Annotates the claim with the provisioner that is to provision it (`setClaimProvisioner`).
    async fn set_claim_provisioner(
        &self,
        claim: &Arc<PersistentVolumeClaim>,
        provisioner: &str,
    ) -> Result<Arc<PersistentVolumeClaim>, Error> {
        let current = claim
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(ANN_STORAGE_PROVISIONER));
        if current.map(String::as_str) == Some(provisioner) {
            return Ok(Arc::clone(claim));
        }
        let mut updated = (**claim).clone();
        let annotations = updated
            .metadata
            .annotations
            .get_or_insert_with(Default::default);
        annotations.insert(ANN_STORAGE_PROVISIONER.into(), provisioner.into());
        annotations.insert(ANN_BETA_STORAGE_PROVISIONER.into(), provisioner.into());
        let name = claim.metadata.name.as_deref().unwrap_or_default();
        let namespace = claim.metadata.namespace.as_deref().unwrap_or_default();
        match self
            .claims_api(namespace)
            .replace(name, &PostParams::default(), &updated)
            .await
        {
            Ok(saved) => Ok(Arc::new(saved)),
            Err(err) => {
                let event = BinderEvent {
                    type_: EventType::Warning,
                    reason: "ProvisioningFailed",
                    message: format!("Error saving claim: {}", api_error::message(&err)),
                };
                self.record(&**claim, &event);
                Err(claim_err(claim)(err))
            }
        }
    }

    /// Binds both ways and marks both Bound, the volume first (`bind`). A failure leaves the
    /// rest to the next sync.
    async fn bind(
        &self,
        volume: &Arc<PersistentVolume>,
        claim: &Arc<PersistentVolumeClaim>,
    ) -> Result<(), Error> {
        let volume_name = volume.metadata.name.clone().unwrap_or_default();
        let mut volume = Arc::clone(volume);
        if let Some(updated) = bound_volume(&volume, claim) {
            tracing::debug!(claim = %claim_key(claim), volume = %volume_name, "claim bound to volume");
            volume = Arc::new(
                self.volumes_api()
                    .replace(&volume_name, &PostParams::default(), &updated)
                    .await
                    .map_err(volume_err(&volume))?,
            );
        }
        let volume = self
            .update_volume_phase(&volume, volume_phase::BOUND, None)
            .await?;
        let mut claim = Arc::clone(claim);
        if let Some(updated) = bound_claim(&claim, &volume) {
            let name = claim.metadata.name.clone().unwrap_or_default();
            claim = Arc::new(
                self.claims_api(claim.metadata.namespace.as_deref().unwrap_or_default())
                    .replace(&name, &PostParams::default(), &updated)
                    .await
                    .map_err(claim_err(&claim))?,
            );
        }
        self.update_claim_status(&claim, claim_phase::BOUND, Some(&volume))
            .await?;
        Ok(())
    }

    /// Writes the claim's status for `phase` if it changes (`updateClaimStatus`).
    async fn update_claim_status(
        &self,
        claim: &Arc<PersistentVolumeClaim>,
        phase: &str,
        volume: Option<&PersistentVolume>,
    ) -> Result<Arc<PersistentVolumeClaim>, Error> {
        let Some(status) = claim_status(claim, phase, volume) else {
            return Ok(Arc::clone(claim));
        };
        let mut updated = (**claim).clone();
        updated.status = Some(status);
        let name = claim.metadata.name.as_deref().unwrap_or_default();
        let saved = self
            .claims_api(claim.metadata.namespace.as_deref().unwrap_or_default())
            .replace_status(name, &PostParams::default(), &updated)
            .await
            .map_err(claim_err(claim))?;
        tracing::debug!(claim = %claim_key(claim), phase, "claim entered phase");
        Ok(Arc::new(saved))
    }

    /// Writes the volume's phase and message if the phase changes (`updateVolumePhase`).
    async fn update_volume_phase(
        &self,
        volume: &Arc<PersistentVolume>,
        phase: &str,
        message: Option<String>,
    ) -> Result<Arc<PersistentVolume>, Error> {
        if volume_phase(volume) == phase {
            return Ok(Arc::clone(volume));
        }
        let mut updated = (**volume).clone();
        let status = updated.status.get_or_insert_with(Default::default);
        status.phase = Some(phase.to_string());
        status.message = message;
        let name = volume.metadata.name.as_deref().unwrap_or_default();
        let saved = self
            .volumes_api()
            .replace_status(name, &PostParams::default(), &updated)
            .await
            .map_err(volume_err(volume))?;
        tracing::debug!(volume = name, phase, "volume entered phase");
        Ok(Arc::new(saved))
    }

    /// The claim a bound volume names, from the cache and, for a volume not yet released, from
    /// the API when the cache does not have it (a claim just created by someone else may not be
    /// cached yet, and releasing its volume would be wrong).
    async fn claim_of(
        &self,
        volume: &PersistentVolume,
    ) -> Result<Option<Arc<PersistentVolumeClaim>>, Error> {
        let Some(r) = claim_ref(volume) else {
            return Ok(None);
        };
        let key = ObjectKey::new(
            r.namespace.clone().unwrap_or_default(),
            r.name.clone().unwrap_or_default(),
        );
        if let Some(claim) = self.claims.store().get(&key) {
            return Ok(Some(claim));
        }
        let phase = volume_phase(volume);
        if phase == volume_phase::RELEASED || phase == volume_phase::FAILED {
            return Ok(None);
        }
        match self
            .claims_api(key.namespace_str())
            .get_opt(&key.name)
            .await
        {
            Ok(found) => Ok(found.map(Arc::new)),
            Err(source) => Err(Error::Claim {
                claim: key.to_string(),
                source,
            }),
        }
    }

    /// Syncs the volume `key` (`syncVolume`).
    pub(super) async fn sync_volume(&self, key: &ObjectKey) -> Result<(), Error> {
        let Some(volume) = self.volumes.store().get(key) else {
            return Ok(());
        };
        let has_bound_ref = claim_ref(&volume)
            .and_then(|r| r.uid.as_deref())
            .is_some_and(|u| !u.is_empty());
        let claim = if has_bound_ref {
            self.claim_of(&volume).await?
        } else {
            None
        };
        let action = sync_volume(&volume, claim.as_deref());
        tracing::trace!(volume = %key, ?action, "synchronizing PersistentVolume");
        match action {
            VolumeAction::SetPhase(phase) => {
                self.update_volume_phase(&volume, phase, None).await?;
            }
            VolumeAction::SyncClaim(claim) => self.claim_queue.add(claim),
            VolumeAction::ModeMismatch {
                volume_event,
                claim_event,
            } => {
                self.record(&*volume, &volume_event);
                if let Some(claim) = &claim {
                    self.record(&**claim, &claim_event);
                }
            }
            VolumeAction::Release(reclaim) => {
                let mut volume = volume;
                let phase = volume_phase(&volume);
                if phase != volume_phase::RELEASED && phase != volume_phase::FAILED {
                    tracing::debug!(volume = %key, policy = reclaim_policy(&volume), "volume is released and reclaim policy will be executed");
                    volume = self
                        .update_volume_phase(&volume, volume_phase::RELEASED, None)
                        .await?;
                }
                if let Reclaim::Fail(event) = reclaim {
                    if volume_phase(&volume) != volume_phase::FAILED {
                        let volume = self
                            .update_volume_phase(
                                &volume,
                                volume_phase::FAILED,
                                Some(event.message.clone()),
                            )
                            .await?;
                        self.record(&*volume, &event);
                    }
                }
            }
            VolumeAction::Unbind => {
                let updated = unbound_volume(&volume);
                let saved = self
                    .volumes_api()
                    .replace(&key.name, &PostParams::default(), &updated)
                    .await
                    .map_err(volume_err(&volume))?;
                self.update_volume_phase(&Arc::new(saved), volume_phase::AVAILABLE, None)
                    .await?;
            }
        }
        Ok(())
    }
}
