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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use rkcm_runtime::events::EventRecorder;
    use rkcm_runtime::informer::{Deleted, InformerFactory};
    use rkcm_runtime::testing::offline_client;

    use super::*;
    use crate::endpointslice::slices::MANAGED_BY_LABEL;
    use crate::endpointslice::{Config, MANAGED_BY};
    use crate::podendpoints::fixtures::{pod, service};

    fn controller(batch: Duration) -> Arc<EndpointSliceController> {
        let factory = InformerFactory::new(offline_client(), Duration::ZERO);
        let (recorder, _events) = EventRecorder::channel("test", 16);
        let c = EndpointSliceController::new(
            &factory,
            offline_client(),
            recorder,
            Config {
                batch_period: batch,
                ..Config::default()
            },
        );
        c.services
            .store()
            .insert(Arc::new(service("web", Some(&[("app", "web")]))));
        c
    }

    fn slice(service: &str, managed_by: &str, generation: i64) -> Arc<EndpointSlice> {
        let mut s = EndpointSlice::default();
        s.metadata.namespace = Some("ns".into());
        s.metadata.name = Some(format!("{service}-abc"));
        s.metadata.uid = Some("uid-slice".into());
        s.metadata.generation = Some(generation);
        s.metadata.labels = Some(
            [
                (SERVICE_NAME_LABEL.to_string(), service.to_string()),
                (MANAGED_BY_LABEL.to_string(), managed_by.to_string()),
            ]
            .into(),
        );
        Arc::new(s)
    }

    /// Ported from endpointslice_controller_test.go `TestOnEndpointSliceAdd…`/`Update`/`Delete`:
    /// only slices this controller manages and did not just write queue their Service, after
    /// at least a second.
    #[tokio::test(start_paused = true)]
    async fn slice_changes_queue_the_service_unless_they_are_the_controllers_own() {
        let c = controller(Duration::ZERO);
        c.on_slice(Notification::Add(slice("web", "someone-else", 1)));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(c.queue.len(), 0);

        c.on_slice(Notification::Add(slice("web", MANAGED_BY, 1)));
        assert_eq!(c.queue.len(), 0, "waits endpointSliceChangeMinSyncDelay");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(c.queue.len(), 1);
        let key = c.queue.get().await.unwrap();
        assert_eq!(key, ObjectKey::new("ns", "web"));
        c.queue.done(&key);

        // Its own write (same generation) is not synced again; a newer generation is.
        c.tracker.update(&slice("web", MANAGED_BY, 2));
        let old = slice("web", MANAGED_BY, 1);
        c.on_slice(Notification::Update {
            old: Arc::clone(&old),
            new: slice("web", MANAGED_BY, 2),
        });
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(c.queue.len(), 0);
        c.on_slice(Notification::Update {
            old: Arc::clone(&old),
            new: slice("web", MANAGED_BY, 3),
        });
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(c.queue.len(), 1);
        let key = c.queue.get().await.unwrap();
        c.queue.done(&key);

        // A service-name label change queues both Services.
        c.on_slice(Notification::Update {
            old: slice("web", MANAGED_BY, 3),
            new: slice("other", MANAGED_BY, 3),
        });
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(c.queue.len(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn expected_deletions_are_quiet_and_others_resync() {
        let c = controller(Duration::ZERO);
        let s = slice("web", MANAGED_BY, 1);
        c.tracker.expect_deletion(&s);
        c.on_slice(Notification::Delete(Deleted::Known(Arc::clone(&s))));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(c.queue.len(), 0);
        c.tracker.update(&s);
        c.on_slice(Notification::Delete(Deleted::Known(s)));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(c.queue.len(), 1);
    }

    /// Ported from `TestPodAddsBatching`, `TestPodUpdatesBatching` and `TestPodDeleteBatching`:
    /// pod changes reach the queue after the batch period; resyncs and irrelevant changes not
    /// at all.
    #[tokio::test(start_paused = true)]
    async fn pod_changes_are_batched() {
        let c = controller(Duration::from_secs(1));
        let p = Arc::new(pod("a", "10.0.0.1", true));
        c.on_pod(Notification::Add(Arc::clone(&p)));
        assert_eq!(c.queue.len(), 0);
        tokio::time::advance(Duration::from_millis(1000)).await;
        assert_eq!(c.queue.len(), 1);
        let key = c.queue.get().await.unwrap();
        c.queue.done(&key);

        c.on_pod(Notification::Update {
            old: Arc::clone(&p),
            new: Arc::clone(&p),
        });
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(c.queue.len(), 0, "a resync queues nothing");

        let mut unready = pod("a", "10.0.0.1", false);
        unready.metadata.resource_version = Some("2".into());
        c.on_pod(Notification::Update {
            old: Arc::clone(&p),
            new: Arc::new(unready),
        });
        c.on_pod(Notification::Delete(Deleted::Known(p)));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(c.queue.len(), 1, "both changes are one sync");
    }
}
