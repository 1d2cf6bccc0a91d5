//! `syncService`: reads a Service, its pods, nodes and slices from the caches, reconciles, and
//! writes the plan (`finalize`).

use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, PostParams};
use rkcm_runtime::events::EventType;
use rkcm_runtime::{api_error, ObjectKey};

use super::reconciler::Plan;
use super::slices::{managed_by, SERVICE_NAME_LABEL};
use super::EndpointSliceController;
use crate::endpoint::rfc3339_nano;
use crate::podendpoints::{selects_pods, LAST_CHANGE_TRIGGER_TIME};

/// Why a Service's slices could not be brought in line; the Service is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The slice cache has not caught up with this controller's writes yet.
    #[error("EndpointSlice informer cache is out of date")]
    StaleCache,
    /// Writing the slices failed, or pods were left out (kube's aggregated message).
    #[error("{0}")]
    Reconcile(String),
}

/// Sets or removes the trigger-time annotation (`addTriggerTimeAnnotation`).
pub fn set_trigger_time(slice: &mut EndpointSlice, trigger_time: Option<Timestamp>) {
    let annotations = slice
        .metadata
        .annotations
        .get_or_insert_with(Default::default);
    match trigger_time {
        Some(at) => {
            annotations.insert(LAST_CHANGE_TRIGGER_TIME.into(), rfc3339_nano(at));
        }
        None => {
            annotations.remove(LAST_CHANGE_TRIGGER_TIME);
        }
    }
}

/// The slices of `slices` that `controller_name` manages for the Service `key`, but those being
/// deleted.
pub fn slices_for_service(
    slices: Vec<Arc<EndpointSlice>>,
    key: &ObjectKey,
    controller_name: &str,
) -> Vec<Arc<EndpointSlice>> {
    slices
        .into_iter()
        .filter(|s| {
            managed_by(s, controller_name)
                && s.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(SERVICE_NAME_LABEL))
                    == Some(&key.name)
                && s.metadata.deletion_timestamp.is_none()
        })
        .collect()
}

impl EndpointSliceController {
    /// Brings the slices of the Service `key` in line with its pods (`syncService`).
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let Some(service) = self.services.store().get(key) else {
            self.trigger_times.delete_service(key);
            self.tracker.delete_service(key);
            return Ok(());
        };
        let Some(selector) = selects_pods(&service) else {
            return Ok(());
        };
        let pods: Vec<Arc<Pod>> = self
            .pods
            .store()
            .list_by_labels(key.namespace_str(), selector);
        let slices = slices_for_service(
            self.slices.store().list_by_namespace(key.namespace_str()),
            key,
            &self.reconciler.controller_name,
        );
        if self.tracker.stale_slices(&service, &slices) {
            return Err(SyncError::StaleCache);
        }
        let trigger_time = self.trigger_times.compute(&service, &pods);
        let nodes = self.nodes.store();
        let plan = self.reconciler.reconcile(&service, &pods, &slices, |name| {
            nodes.get(&ObjectKey::cluster(name))
        });
        let m = super::metrics::metrics();
        m.endpoints_added_per_sync.observe(plan.added as f64);
        m.endpoints_removed_per_sync.observe(plan.removed as f64);
        let changed = plan.to_create.len() + plan.to_update.len() + plan.to_delete.len();
        m.endpointslices_changed_per_sync
            .get_or_create(&super::metrics::ChangedLabels {
                topology: "Disabled".into(),
                traffic_distribution: String::new(),
            })
            .observe(changed as f64);
        let mut errors = plan.errors.clone();
        if let Err(e) = self.finalize(&service, plan, trigger_time).await {
            errors.push(e);
        }
        if errors.is_empty() {
            return Ok(());
        }
        let message = match errors.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        self.recorder.event_for(
            &*service,
            EventType::Warning,
            "FailedToUpdateEndpointSlices",
            format!(
                "Error updating Endpoint Slices for Service {}/{}: {message}",
                key.namespace_str(),
                key.name
            ),
        );
        Err(SyncError::Reconcile(message))
    }

    /// Creates, updates and deletes what `plan` says; stops at the first failure, with kube's
    /// message. Nothing is created for a Service being deleted, and a terminating namespace
    /// ends the sync quietly.
    async fn finalize(
        &self,
        service: &Service,
        plan: Plan,
        trigger_time: Option<Timestamp>,
    ) -> Result<(), String> {
        let ns = service.metadata.namespace.as_deref().unwrap_or_default();
        let name = service.metadata.name.as_deref().unwrap_or_default();
        let api: Api<EndpointSlice> = Api::namespaced(self.client.clone(), ns);
        if service.metadata.deletion_timestamp.is_none() {
            for mut slice in plan.to_create {
                set_trigger_time(&mut slice, trigger_time);
                match api.create(&PostParams::default(), &slice).await {
                    Ok(created) => self.tracker.update(&created),
                    Err(e) if api_error::is_namespace_terminating(&e) => return Ok(()),
                    Err(e) => {
                        return Err(format!(
                            "failed to create EndpointSlice for Service {ns}/{name}: {}",
                            api_error::message(&e)
                        ))
                    }
                }
            }
        }
        for mut slice in plan.to_update {
            set_trigger_time(&mut slice, trigger_time);
            let slice_name = slice.metadata.name.clone().unwrap_or_default();
            match api
                .replace(&slice_name, &PostParams::default(), &slice)
                .await
            {
                Ok(updated) => self.tracker.update(&updated),
                Err(e) => {
                    return Err(format!(
                        "failed to update {slice_name} EndpointSlice for Service {ns}/{name}: {}",
                        api_error::message(&e)
                    ))
                }
            }
        }
        for slice in plan.to_delete {
            let slice_name = slice.metadata.name.clone().unwrap_or_default();
            match api.delete(&slice_name, &DeleteParams::default()).await {
                Ok(_) => self.tracker.expect_deletion(&slice),
                Err(e) if api_error::is_not_found(&e) => {}
                Err(e) => {
                    return Err(format!(
                        "failed to delete {slice_name} EndpointSlice for Service {ns}/{name}: {}",
                        api_error::message(&e)
                    ))
                }
            }
        }
        Ok(())
    }
}
