//! Informer notifications → Service keys (`onServiceUpdate`, `onServiceDelete`, `addPod`,
//! `updatePod`, `deletePod`, `onEndpointSliceAdd/Update/Delete` of kube's EndpointSlice
//! controller).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use rkcm_runtime::informer::Notification;
use rkcm_runtime::ObjectKey;

use super::slices::{managed_by, service_key, SERVICE_NAME_LABEL};
use super::{EndpointSliceController, ENDPOINT_SLICE_CHANGE_MIN_SYNC_DELAY};
use crate::podendpoints::{services_for_pod, services_to_update_on_pod_change};

impl EndpointSliceController {
    /// Every Service change syncs it at once.
    pub(crate) fn on_service(&self, note: Notification<Service>) {
        let key = match &note {
            Notification::Add(svc) | Notification::Update { new: svc, .. } => {
                ObjectKey::from_obj(&**svc)
            }
            Notification::Delete(deleted) => ObjectKey::from_obj(&**deleted.object()),
        };
        self.queue.add(key);
    }

    /// A pod change syncs the Services it concerns after the batch period.
    pub(crate) fn on_pod(&self, note: Notification<Pod>) {
        let keys = match &note {
            Notification::Add(pod) => self.services_of(pod),
            Notification::Update { old, new } => {
                let services = self
                    .services
                    .store()
                    .list_by_namespace(new.metadata.namespace.as_deref().unwrap_or(""));
                services_to_update_on_pod_change(&services, old, new)
            }
            Notification::Delete(deleted) => self.services_of(deleted.object()),
        };
        for key in keys {
            self.queue.add_after(key, self.batch_period);
        }
    }

    /// A slice change that is not this controller's own write syncs its Service.
    pub(crate) fn on_slice(&self, note: Notification<EndpointSlice>) {
        let name = &self.reconciler.controller_name;
        match note {
            Notification::Add(slice) => {
                if managed_by(&slice, name) && self.tracker.should_sync(&slice) {
                    self.queue_for_slice(&slice);
                }
            }
            Notification::Update { old, new } => {
                let service_name = |s: &EndpointSlice| {
                    s.metadata
                        .labels
                        .as_ref()
                        .and_then(|l| l.get(SERVICE_NAME_LABEL))
                        .cloned()
                };
                if service_name(&old) != service_name(&new) {
                    self.queue_for_slice(&new);
                    self.queue_for_slice(&old);
                    return;
                }
                if managed_by(&old, name) != managed_by(&new, name)
                    || (managed_by(&new, name) && self.tracker.should_sync(&new))
                {
                    self.queue_for_slice(&new);
                }
            }
            Notification::Delete(deleted) => {
                let slice = deleted.object();
                if managed_by(slice, name)
                    && self.tracker.has(slice)
                    && !self.tracker.handle_deletion(slice)
                {
                    // Someone else deleted it.
                    self.queue_for_slice(slice);
                }
            }
        }
    }

    fn queue_for_slice(&self, slice: &EndpointSlice) {
        let Some(key) = service_key(slice) else {
            tracing::error!(
                slice = slice.metadata.name.as_deref().unwrap_or(""),
                "couldn't get key for EndpointSlice: EndpointSlice missing {SERVICE_NAME_LABEL} label"
            );
            return;
        };
        self.queue.add_after(
            key,
            self.batch_period.max(ENDPOINT_SLICE_CHANGE_MIN_SYNC_DELAY),
        );
    }

    fn services_of(&self, pod: &Pod) -> BTreeSet<ObjectKey> {
        let services = self
            .services
            .store()
            .list_by_namespace(pod.metadata.namespace.as_deref().unwrap_or(""));
        services_for_pod(&services, pod)
    }
}
