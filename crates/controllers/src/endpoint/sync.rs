//! `syncService`: reads a Service and its pods from the caches and writes its Endpoints.

use std::collections::BTreeMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{EndpointSubset, Endpoints, Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, PostParams};
use rkcm_runtime::events::EventType;
use rkcm_runtime::{api_error, ObjectKey};

use super::capacity::{
    capacity_annotation_set_correctly, truncate_endpoints, OVER_CAPACITY_ANNOTATION, TRUNCATED,
};
use super::desired::desired_subsets;
use super::EndpointController;
use crate::podendpoints::{
    is_service_ip_set, selects_pods, HEADLESS_LABEL, LAST_CHANGE_TRIGGER_TIME,
};

/// Why a Service's Endpoints could not be written; the Service is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The cache still holds a version of the Endpoints this controller already replaced.
    #[error("endpoints informer cache is out of date, resource version {resource_version} already processed for endpoints {key}")]
    StaleCache {
        /// The Endpoints.
        key: ObjectKey,
        /// The replaced version still in the cache.
        resource_version: String,
    },
    /// Deleting the Endpoints of a deleted Service failed.
    #[error("deleting the endpoints of deleted service {key}")]
    Delete {
        /// The Endpoints.
        key: ObjectKey,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Creating or updating the Endpoints failed.
    #[error("writing endpoints {key}")]
    Write {
        /// The Endpoints.
        key: ObjectKey,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// Subsets equal but for the resourceVersion of their target references.
fn subsets_equal(a: &[EndpointSubset], b: &[EndpointSubset]) -> bool {
    let strip = |subsets: &[EndpointSubset]| -> Vec<EndpointSubset> {
        let mut subsets = subsets.to_vec();
        for subset in &mut subsets {
            for list in [&mut subset.addresses, &mut subset.not_ready_addresses] {
                for address in list.iter_mut().flatten() {
                    if let Some(r) = address.target_ref.as_mut() {
                        r.resource_version = None;
                    }
                }
                if list.as_ref().is_some_and(Vec::is_empty) {
                    *list = None;
                }
            }
            if subset.ports.as_ref().is_some_and(Vec::is_empty) {
                subset.ports = None;
            }
        }
        subsets
    };
    strip(a) == strip(b)
}

/// What `service`'s Endpoints should become, given the `current` ones (`None`: not there yet)
/// and the `subsets` its pods make, or `None` when `current` is already right: same subsets (but
/// for target resourceVersions), the Service's labels (besides the headless label) and a correct
/// over-capacity annotation. The new object carries the Service's labels, the headless label if
/// the Service has no cluster IP, the trigger time (removed when `None`) and the over-capacity
/// annotation if it had to be truncated to 1000 addresses.
pub fn next_endpoints(
    current: Option<&Endpoints>,
    service: &Service,
    subsets: Vec<EndpointSubset>,
    trigger_time: Option<Timestamp>,
) -> Option<Endpoints> {
    let service_labels = service.metadata.labels.clone().unwrap_or_default();
    if let Some(current) = current {
        let mut labels = current.metadata.labels.clone().unwrap_or_default();
        labels.remove(HEADLESS_LABEL);
        let current_subsets = current.subsets.as_deref().unwrap_or_default();
        if subsets_equal(current_subsets, &subsets)
            && labels == service_labels
            && capacity_annotation_set_correctly(
                current.metadata.annotations.as_ref(),
                current_subsets,
            )
        {
            return None;
        }
    }
    let mut next = current.cloned().unwrap_or_else(|| Endpoints {
        metadata: ObjectMeta {
            name: service.metadata.name.clone(),
            namespace: service.metadata.namespace.clone(),
            ..ObjectMeta::default()
        },
        ..Endpoints::default()
    });
    let mut subsets = subsets;
    let mut annotations = next.metadata.annotations.take().unwrap_or_default();
    match trigger_time {
        Some(at) => {
            annotations.insert(LAST_CHANGE_TRIGGER_TIME.into(), rfc3339_nano(at));
        }
        None => {
            annotations.remove(LAST_CHANGE_TRIGGER_TIME);
        }
    }
    if truncate_endpoints(&mut subsets) {
        annotations.insert(OVER_CAPACITY_ANNOTATION.into(), TRUNCATED.into());
    } else {
        annotations.remove(OVER_CAPACITY_ANNOTATION);
    }
    let mut labels: BTreeMap<String, String> = service_labels;
    if is_service_ip_set(service) {
        labels.remove(HEADLESS_LABEL);
    } else {
        labels.insert(HEADLESS_LABEL.into(), String::new());
    }
    next.metadata.annotations = Some(annotations);
    next.metadata.labels = Some(labels);
    next.subsets = (!subsets.is_empty()).then_some(subsets);
    Some(next)
}

/// `t.UTC().Format(time.RFC3339Nano)`: UTC, trailing zeros of the fraction dropped.
pub fn rfc3339_nano(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%S%.fZ").to_string()
}

impl EndpointController {
    /// Brings the Endpoints of the Service `key` in line with its pods; deletes them when the
    /// Service is gone (`syncService`).
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let api: Api<Endpoints> = Api::namespaced(self.client.clone(), key.namespace_str());
        let Some(service) = self.services.store().get(key) else {
            // The Service is gone: so are its Endpoints. (Missed while down: see
            // `check_leftover_endpoints`.)
            match api.delete(&key.name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if api_error::is_not_found(&e) => {}
                Err(source) => {
                    return Err(SyncError::Delete {
                        key: key.clone(),
                        source,
                    })
                }
            }
            self.trigger_times.delete_service(key);
            self.stale.delete(key);
            return Ok(());
        };
        let Some(selector) = selects_pods(&service) else {
            // ExternalName Services get no endpoints; selectorless ones get hand-written ones.
            return Ok(());
        };
        let pods: Vec<Arc<Pod>> = self
            .pods
            .store()
            .list_by_labels(key.namespace_str(), selector);
        // Computed even when nothing is written, so that the tracker sees every sync.
        let trigger_time = self.trigger_times.compute(&service, &pods);
        let desired = desired_subsets(&service, &pods);
        let current = self.endpoints.store().get(key);
        if let Some(current) = &current {
            if self.stale.is_stale(current) {
                return Err(SyncError::StaleCache {
                    key: key.clone(),
                    resource_version: current
                        .metadata
                        .resource_version
                        .clone()
                        .unwrap_or_default(),
                });
            }
        }
        let Some(next) =
            next_endpoints(current.as_deref(), &service, desired.subsets, trigger_time)
        else {
            tracing::trace!(service = %key, "endpoints are equal, skipping update");
            return Ok(());
        };
        tracing::debug!(
            service = %key,
            ready = desired.ready,
            not_ready = desired.not_ready,
            "update endpoints"
        );
        let create = current.is_none();
        let written = if create {
            api.create(&PostParams::default(), &next).await
        } else {
            api.replace(&key.name, &PostParams::default(), &next).await
        };
        let updated = match written {
            Ok(updated) => updated,
            Err(e) => {
                // Creates in a terminating namespace keep failing: drop the key.
                if create && api_error::is_namespace_terminating(&e) {
                    return Ok(());
                }
                let message = api_error::message(&e);
                if create {
                    self.recorder.event_for(
                        &next,
                        EventType::Warning,
                        "FailedToCreateEndpoint",
                        format!(
                            "Failed to create endpoint for service {}/{}: {message}",
                            key.namespace_str(),
                            key.name
                        ),
                    );
                } else {
                    self.recorder.event_for(
                        &next,
                        EventType::Warning,
                        "FailedToUpdateEndpoint",
                        format!(
                            "Failed to update endpoint {}/{}: {message}",
                            key.namespace_str(),
                            key.name
                        ),
                    );
                }
                return Err(SyncError::Write {
                    key: key.clone(),
                    source: e,
                });
            }
        };
        if let Some(current) = current {
            if updated.metadata.resource_version != current.metadata.resource_version {
                self.stale.stale(&current);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::desired::desired_subsets;
    use crate::podendpoints::fixtures::{pod, service, t0};
    use k8s_openapi::api::core::v1::{EndpointAddress, ObjectReference};

    fn web() -> Service {
        let mut svc = service("web", Some(&[("app", "web")]));
        svc.metadata.labels = Some([("team".to_string(), "a".to_string())].into());
        svc
    }

    fn subsets(ready: &[&str]) -> Vec<EndpointSubset> {
        let pods: Vec<Arc<Pod>> = ready
            .iter()
            .enumerate()
            .map(|(i, ip)| Arc::new(pod(&format!("p{i}"), ip, true)))
            .collect();
        desired_subsets(&web(), &pods).subsets
    }

    /// Ported from `TestSyncEndpointsItemsWithLabels` and `TestSyncEndpointsHeadlessService`: a new
    /// Endpoints object has the Service's name, labels and the trigger time.
    #[test]
    fn new_endpoints_copy_the_services_labels_and_carry_the_trigger_time() {
        let next = next_endpoints(None, &web(), subsets(&["1.2.3.4"]), Some(t0())).unwrap();
        assert_eq!(next.metadata.name.as_deref(), Some("web"));
        assert_eq!(next.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(
            next.metadata.labels.unwrap(),
            [("team".to_string(), "a".to_string())].into()
        );
        assert_eq!(
            next.metadata.annotations.unwrap()[LAST_CHANGE_TRIGGER_TIME],
            "2025-01-01T00:00:00Z"
        );

        let mut headless = web();
        headless.spec.as_mut().unwrap().cluster_ip = Some("None".into());
        let next = next_endpoints(None, &headless, vec![], None).unwrap();
        assert_eq!(next.metadata.labels.unwrap()[HEADLESS_LABEL], "");
        assert!(next.subsets.is_none());
        assert!(!next
            .metadata
            .annotations
            .unwrap()
            .contains_key(LAST_CHANGE_TRIGGER_TIME));
    }

    /// Ported from `TestSyncEndpointsItemsPreexistingIdentical` and
    /// `TestSyncEndpointsItemsPreexisting`: identical Endpoints are left alone (target
    /// resourceVersions aside), different ones are replaced keeping their metadata.
    #[test]
    fn identical_endpoints_are_left_alone_and_others_updated() {
        let current = next_endpoints(None, &web(), subsets(&["1.2.3.4"]), None).unwrap();
        let mut current = current;
        current.metadata.resource_version = Some("7".into());
        assert!(next_endpoints(Some(&current), &web(), subsets(&["1.2.3.4"]), None).is_none());
        // A pod's resourceVersion in the target reference does not count.
        let mut with_rv = current.clone();
        with_rv.subsets.as_mut().unwrap()[0]
            .addresses
            .as_mut()
            .unwrap()[0]
            .target_ref
            .as_mut()
            .unwrap()
            .resource_version = Some("42".into());
        assert!(next_endpoints(Some(&with_rv), &web(), subsets(&["1.2.3.4"]), None).is_none());
        // New addresses: an update of the same object.
        let next = next_endpoints(
            Some(&current),
            &web(),
            subsets(&["1.2.3.4", "1.2.3.5"]),
            None,
        )
        .unwrap();
        assert_eq!(next.metadata.resource_version.as_deref(), Some("7"));
        assert_eq!(
            next.subsets.unwrap()[0].addresses.as_ref().unwrap().len(),
            2
        );
    }

    /// Ported from `TestSyncEndpointsItemsPreexistingLabelsChange` and
    /// `TestSyncEndpointsHeadlessService`: a label change updates, the headless label is ignored
    /// in the comparison.
    #[test]
    fn label_changes_update_and_the_headless_label_does_not_count() {
        let current = next_endpoints(None, &web(), subsets(&["1.2.3.4"]), None).unwrap();
        let mut relabelled = web();
        relabelled.metadata.labels = Some([("team".to_string(), "b".to_string())].into());
        let next =
            next_endpoints(Some(&current), &relabelled, subsets(&["1.2.3.4"]), None).unwrap();
        assert_eq!(next.metadata.labels.unwrap()["team"], "b");

        let mut with_headless = current.clone();
        with_headless
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert(HEADLESS_LABEL.into(), String::new());
        assert!(
            next_endpoints(Some(&with_headless), &web(), subsets(&["1.2.3.4"]), None).is_none()
        );
    }

    /// Ported from `TestSyncEndpointsServiceWithOverCapacity…`: more than 1000 addresses are cut
    /// and annotated; back under capacity, the annotation goes.
    #[test]
    fn over_capacity_endpoints_are_truncated_and_annotated() {
        let many: Vec<EndpointAddress> = (0..1100)
            .map(|i| EndpointAddress {
                ip: format!("10.1.{}.{}", i / 250, i % 250),
                target_ref: Some(ObjectReference {
                    uid: Some(format!("u{i}")),
                    ..ObjectReference::default()
                }),
                ..EndpointAddress::default()
            })
            .collect();
        let big = vec![EndpointSubset {
            addresses: Some(many),
            not_ready_addresses: None,
            ports: None,
        }];
        let next = next_endpoints(None, &web(), big.clone(), None).unwrap();
        assert_eq!(
            next.subsets.as_ref().unwrap()[0]
                .addresses
                .as_ref()
                .unwrap()
                .len(),
            MAX
        );
        assert_eq!(
            next.metadata.annotations.as_ref().unwrap()[OVER_CAPACITY_ANNOTATION],
            TRUNCATED
        );
        // Still over capacity: the stored (truncated) object is never "equal".
        assert!(next_endpoints(Some(&next), &web(), big, None).is_some());
        let small = next_endpoints(Some(&next), &web(), subsets(&["1.2.3.4"]), None).unwrap();
        assert!(!small
            .metadata
            .annotations
            .unwrap()
            .contains_key(OVER_CAPACITY_ANNOTATION));
    }

    const MAX: usize = crate::endpoint::MAX_CAPACITY;

    #[test]
    fn trigger_times_print_as_go_rfc3339_nano() {
        assert_eq!(rfc3339_nano(t0()), "2025-01-01T00:00:00Z");
        let t = t0() + jiff::SignedDuration::from_millis(1500);
        assert_eq!(rfc3339_nano(t), "2025-01-01T00:00:01.5Z");
    }
}
