//! Informer notifications → Endpoints keys (`onServiceAdd/Update/Delete`,
//! `onEndpointsAdd/Update/Delete`, `onEndpointSliceAdd/Update/Delete` of kube's mirroring
//! controller).

use k8s_openapi::api::core::v1::{Endpoints, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use rkcm_runtime::informer::Notification;
use rkcm_runtime::ObjectKey;

use super::reconciler::MANAGED_BY;
use super::{should_mirror, EndpointSliceMirroringController};
use crate::endpointslice::slices::{managed_by, service_key, SERVICE_NAME_LABEL};

fn has_selector(service: &Service) -> bool {
    service.spec.as_ref().is_some_and(|s| s.selector.is_some())
}

impl EndpointSliceMirroringController {
    /// A Service without selector appearing or going, or gaining or losing its selector, syncs
    /// its Endpoints.
    pub(crate) fn on_service(&self, note: Notification<Service>) {
        match note {
            Notification::Add(svc) => {
                if !has_selector(&svc) {
                    self.queue.add(ObjectKey::from_obj(&*svc));
                }
            }
            Notification::Update { old, new } => {
                if has_selector(&old) != has_selector(&new) {
                    self.queue.add(ObjectKey::from_obj(&*new));
                }
            }
            Notification::Delete(deleted) => {
                let svc = deleted.object();
                if !has_selector(svc) {
                    self.queue.add(ObjectKey::from_obj(&**svc));
                }
            }
        }
    }

    /// Changes of Endpoints that are (or were) mirrored sync them.
    pub(crate) fn on_endpoints(&self, note: Notification<Endpoints>) {
        let (key, mirror) = match &note {
            Notification::Add(e) => (ObjectKey::from_obj(&**e), should_mirror(e)),
            Notification::Update { old, new } => (
                ObjectKey::from_obj(&**new),
                should_mirror(new) || should_mirror(old),
            ),
            Notification::Delete(deleted) => (
                ObjectKey::from_obj(&**deleted.object()),
                should_mirror(deleted.object()),
            ),
        };
        if mirror {
            self.queue.add(key);
        }
    }

    /// A mirrored slice changed by someone else syncs its Endpoints.
    pub(crate) fn on_slice(&self, note: Notification<EndpointSlice>) {
        match note {
            Notification::Add(slice) => {
                if managed_by(&slice, MANAGED_BY) && self.tracker.should_sync(&slice) {
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
                if managed_by(&old, MANAGED_BY) != managed_by(&new, MANAGED_BY)
                    || (managed_by(&new, MANAGED_BY) && self.tracker.should_sync(&new))
                {
                    self.queue_for_slice(&new);
                }
            }
            Notification::Delete(deleted) => {
                let slice = deleted.object();
                if managed_by(slice, MANAGED_BY)
                    && self.tracker.has(slice)
                    && !self.tracker.handle_deletion(slice)
                {
                    self.queue_for_slice(slice);
                }
            }
        }
    }

    fn queue_for_slice(&self, slice: &EndpointSlice) {
        match service_key(slice) {
            Some(key) => self.queue.add_after(key, self.batch_period),
            None => tracing::error!(
                slice = slice.metadata.name.as_deref().unwrap_or(""),
                "couldn't get key for EndpointSlice: EndpointSlice missing {SERVICE_NAME_LABEL} label"
            ),
        }
    }
}
