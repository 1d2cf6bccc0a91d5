//! Informer notifications → Service keys (`addPod`, `updatePod`, `deletePod`,
//! `onServiceUpdate`, `onServiceDelete`, `onEndpointsDelete` of kube's endpoints controller).

use k8s_openapi::api::core::v1::{Endpoints, Pod, Service};
use rkcm_runtime::informer::Notification;
use rkcm_runtime::ObjectKey;

use super::EndpointController;
use crate::podendpoints::{services_for_pod, services_to_update_on_pod_change};

impl EndpointController {
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

    /// A deleted Endpoints object is re-created if its Service still wants it.
    pub(crate) fn on_endpoints(&self, note: Notification<Endpoints>) {
        if let Notification::Delete(deleted) = note {
            self.queue.add(ObjectKey::from_obj(&**deleted.object()));
        }
    }

    fn services_of(&self, pod: &Pod) -> std::collections::BTreeSet<ObjectKey> {
        let services = self
            .services
            .store()
            .list_by_namespace(pod.metadata.namespace.as_deref().unwrap_or(""));
        services_for_pod(&services, pod)
    }
}
