//! `syncEndpoints`: mirrors one Endpoints object into slices, or removes its mirrored slices
//! when it should not be mirrored (anymore).

use std::sync::Arc;

use k8s_openapi::api::core::v1::Endpoints;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, PostParams};
use rkcm_runtime::events::EventType;
use rkcm_runtime::{api_error, ObjectKey};

use super::reconciler::{reconcile, Plan, MANAGED_BY};
use super::{should_mirror, EndpointSliceMirroringController};
use crate::endpointslice::slices_for_service;

/// Why an Endpoints object could not be mirrored; it is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The slice cache has not caught up with this controller's writes yet.
    #[error("EndpointSlice informer cache is out of date")]
    StaleCache,
    /// Writing or deleting slices failed (kube's message).
    #[error("{0}")]
    Write(String),
}

impl EndpointSliceMirroringController {
    /// Mirrors the Endpoints `key` (`syncEndpoints`).
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let Some(endpoints) = self.endpoints.store().get(key) else {
            return self.delete_mirrored_slices(key).await;
        };
        if !should_mirror(&endpoints) {
            return self.delete_mirrored_slices(key).await;
        }
        let Some(service) = self.services.store().get(key) else {
            return self.delete_mirrored_slices(key).await;
        };
        if service.spec.as_ref().is_some_and(|s| s.selector.is_some()) {
            // The Service selects pods: the EndpointSlice controller writes its slices.
            return self.delete_mirrored_slices(key).await;
        }
        let slices = self.mirrored_slices(key);
        if self.tracker.stale_slices(&service, &slices) {
            return Err(SyncError::StaleCache);
        }
        let plan = reconcile(&endpoints, &slices, self.max_endpoints_per_subset);
        if plan.invalid_addresses > 0 {
            self.recorder.event_for(
                &*endpoints,
                EventType::Warning,
                "InvalidIPAddress",
                format!(
                    "Skipped {} invalid IP addresses when mirroring to EndpointSlices",
                    plan.invalid_addresses
                ),
            );
        }
        if plan.skipped_addresses > plan.invalid_addresses {
            self.recorder.event_for(
                &*endpoints,
                EventType::Warning,
                "TooManyAddressesToMirror",
                format!(
                    "A max of {} addresses can be mirrored to EndpointSlices per Endpoints subset. {} addresses were skipped",
                    self.max_endpoints_per_subset, plan.skipped_addresses
                ),
            );
        }
        self.finalize(&endpoints, plan)
            .await
            .map_err(SyncError::Write)
    }

    fn mirrored_slices(&self, key: &ObjectKey) -> Vec<Arc<EndpointSlice>> {
        slices_for_service(
            self.slices.store().list_by_namespace(key.namespace_str()),
            key,
            MANAGED_BY,
        )
    }

    async fn finalize(&self, endpoints: &Endpoints, plan: Plan) -> Result<(), String> {
        let ns = endpoints.metadata.namespace.as_deref().unwrap_or_default();
        let name = endpoints.metadata.name.as_deref().unwrap_or_default();
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), ns);
        if endpoints.metadata.deletion_timestamp.is_none() {
            for slice in plan.to_create {
                match api.create(&PostParams::default(), &slice).await {
                    Ok(created) => self.tracker.update(&created),
                    Err(e) if api_error::is_namespace_terminating(&e) => return Ok(()),
                    Err(e) => {
                        return Err(format!(
                            "failed to create EndpointSlice for Endpoints {ns}/{name}: {}",
                            api_error::message(&e)
                        ))
                    }
                }
            }
        }
        for slice in plan.to_update {
            let slice_name = slice.metadata.name.clone().unwrap_or_default();
            match api
                .replace(&slice_name, &PostParams::default(), &slice)
                .await
            {
                Ok(updated) => self.tracker.update(&updated),
                Err(e) => {
                    return Err(format!(
                        "failed to update {slice_name} EndpointSlice for Endpoints {ns}/{name}: {}",
                        api_error::message(&e)
                    ))
                }
            }
        }
        for slice in plan.to_delete {
            let slice_name = slice.metadata.name.clone().unwrap_or_default();
            if let Err(e) = api.delete(&slice_name, &DeleteParams::default()).await {
                return Err(format!(
                    "failed to delete {slice_name} EndpointSlice for Endpoints {ns}/{name}: {}",
                    api_error::message(&e)
                ));
            }
            self.tracker.expect_deletion(&slice);
        }
        Ok(())
    }

    /// Deletes every slice mirrored for the Endpoints `key` (`deleteMirroredSlices`).
    async fn delete_mirrored_slices(&self, key: &ObjectKey) -> Result<(), SyncError> {
        self.tracker.delete_service(key);
        let slices = self.mirrored_slices(key);
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), key.namespace_str());
        let mut errors = Vec::new();
        for slice in &slices {
            let name = slice.metadata.name.clone().unwrap_or_default();
            if let Err(e) = api.delete(&name, &DeleteParams::default()).await {
                errors.push(api_error::message(&e));
            }
        }
        match errors.first() {
            None => Ok(()),
            Some(first) => Err(SyncError::Write(format!(
                "Error(s) deleting {}/{} EndpointSlices for {}/{} Endpoints, including: {first}",
                errors.len(),
                slices.len(),
                key.namespace_str(),
                key.name
            ))),
        }
    }
}
