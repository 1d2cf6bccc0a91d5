//! EndpointSlice objects of a Service: a new slice, its labels, its owner, which slice to fill
//! (`newEndpointSlice`, `setEndpointSliceLabels`, `ownedBy`, `getSliceToFill`,
//! `ServiceControllerKey` of k8s.io/endpointslice).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::{EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use rkcm_runtime::ObjectKey;

use crate::podendpoints::service::IpFamily;
use crate::podendpoints::{is_service_ip_set, HEADLESS_LABEL};

/// Label naming the Service a slice belongs to (`discovery.LabelServiceName`).
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// Label naming the controller that manages a slice (`discovery.LabelManagedBy`).
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";

/// Whether `key` is one of the labels the controllers set themselves.
fn is_reserved_label(key: &str) -> bool {
    key == SERVICE_NAME_LABEL || key == MANAGED_BY_LABEL || key == HEADLESS_LABEL
}

/// The labels `slice` should carry for `service` and whether they differ from its current
/// ones: the Service's labels (reserved ones skipped), the headless label for a Service without
/// cluster IP, the service name and `controller_name` as manager. A change of the reserved labels
/// alone does not count (`setEndpointSliceLabels`).
pub fn slice_labels(
    slice: &EndpointSlice,
    service: &Service,
    controller_name: &str,
) -> (BTreeMap<String, String>, bool) {
    let unreserved = |labels: Option<&BTreeMap<String, String>>| -> BTreeMap<String, String> {
        labels
            .into_iter()
            .flatten()
            .filter(|(k, _)| !is_reserved_label(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let current = unreserved(slice.metadata.labels.as_ref());
    let mut labels = unreserved(service.metadata.labels.as_ref());
    let changed = current != labels;
    if !is_service_ip_set(service) {
        labels.insert(HEADLESS_LABEL.into(), String::new());
    }
    labels.insert(
        SERVICE_NAME_LABEL.into(),
        service.metadata.name.clone().unwrap_or_default(),
    );
    labels.insert(MANAGED_BY_LABEL.into(), controller_name.into());
    (labels, changed)
}

/// The controller reference of a slice to its Service.
pub fn service_owner(service: &Service) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "Service".into(),
        name: service.metadata.name.clone().unwrap_or_default(),
        uid: service.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The `generateName` of `name`'s slices: `<name>-`, or `name` alone when the dash would make it
/// too long for a DNS subdomain (`getEndpointSlicePrefix`).
pub fn slice_prefix(name: &str) -> String {
    // Service names are DNS labels, so the prefix (its trailing dash allowed) is invalid only
    // when too long.
    let prefix = format!("{name}-");
    if prefix.len() > 253 {
        name.to_string()
    } else {
        prefix
    }
}

/// An empty slice of `service` for `family` and `ports`, owned by the Service, labelled for
/// `controller_name`, named by `generateName` (`newEndpointSlice`).
pub fn new_endpoint_slice(
    service: &Service,
    ports: Vec<EndpointPort>,
    family: IpFamily,
    controller_name: &str,
) -> EndpointSlice {
    let mut slice = EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some(slice_prefix(
                service.metadata.name.as_deref().unwrap_or_default(),
            )),
            namespace: service.metadata.namespace.clone(),
            owner_references: Some(vec![service_owner(service)]),
            ..ObjectMeta::default()
        },
        address_type: family.address_type().into(),
        endpoints: Vec::new(),
        ports: Some(ports),
    };
    let (labels, _) = slice_labels(&slice, service, controller_name);
    slice.metadata.labels = Some(labels);
    slice
}

/// Whether `slice` has `service` (same UID) among its owners (`ownedBy`).
pub fn owned_by(slice: &EndpointSlice, service: &Service) -> bool {
    let uid = service.metadata.uid.as_deref().unwrap_or_default();
    slice
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.uid == uid && o.kind == "Service" && o.api_version == "v1")
}

/// The index of the slice among `slices` that `count` more endpoints fill closest to `max`
/// without overflowing it (`getSliceToFill`).
pub fn slice_to_fill(slices: &[EndpointSlice], count: usize, max: usize) -> Option<usize> {
    let mut closest: Option<(usize, usize)> = None;
    for (i, slice) in slices.iter().enumerate() {
        let Some(diff) = max.checked_sub(count + slice.endpoints.len()) else {
            continue;
        };
        if closest.is_none_or(|(_, best)| diff < best) && diff < max {
            closest = Some((i, diff));
            if diff == 0 {
                break;
            }
        }
    }
    closest.map(|(i, _)| i)
}

/// The key of the Service (or Endpoints) a slice belongs to, from its service-name label
/// (`ServiceControllerKey`).
pub fn service_key(slice: &EndpointSlice) -> Option<ObjectKey> {
    let name = slice.metadata.labels.as_ref()?.get(SERVICE_NAME_LABEL)?;
    (!name.is_empty()).then(|| {
        ObjectKey::new(
            slice.metadata.namespace.clone().unwrap_or_default(),
            name.clone(),
        )
    })
}

/// Whether `slice` is managed by `controller_name`.
pub fn managed_by(slice: &EndpointSlice, controller_name: &str) -> bool {
    slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(MANAGED_BY_LABEL))
        .is_some_and(|m| m == controller_name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::podendpoints::fixtures::service;
    use k8s_openapi::api::discovery::v1::Endpoint;

    const CONTROLLER: &str = "endpointslice-controller.k8s.io";

    fn slice_with(n: usize) -> EndpointSlice {
        EndpointSlice {
            endpoints: vec![Endpoint::default(); n],
            ..EndpointSlice::default()
        }
    }

    /// Ported from utils_test.go `TestGetSliceToFill`.
    #[test]
    fn the_slice_to_fill_is_the_one_left_closest_to_full() {
        let slices = [slice_with(90), slice_with(95), slice_with(40)];
        assert_eq!(slice_to_fill(&[], 5, 100), None);
        assert_eq!(slice_to_fill(&slices, 5, 100), Some(1));
        assert_eq!(slice_to_fill(&slices, 10, 100), Some(0));
        assert_eq!(slice_to_fill(&slices, 50, 100), Some(2));
        assert_eq!(slice_to_fill(&slices, 61, 100), None);
        // An empty slice with nothing to add is not a fill.
        assert_eq!(slice_to_fill(&[slice_with(0)], 0, 100), None);
    }

    /// Ported from utils_test.go `TestNewEndpointSlice` and `TestSetEndpointSliceLabels`.
    #[test]
    fn new_slices_are_owned_by_and_labelled_for_their_service() {
        let mut svc = service("web", Some(&[("app", "web")]));
        svc.metadata.labels = Some(
            [
                ("team".to_string(), "a".to_string()),
                (MANAGED_BY_LABEL.to_string(), "someone-else".to_string()),
            ]
            .into(),
        );
        let slice = new_endpoint_slice(&svc, vec![], IpFamily::V4, CONTROLLER);
        assert_eq!(slice.metadata.generate_name.as_deref(), Some("web-"));
        assert_eq!(slice.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(slice.address_type, "IPv4");
        assert!(owned_by(&slice, &svc));
        let owner = &slice.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(owner.controller, Some(true));
        let labels = slice.metadata.labels.clone().unwrap();
        assert_eq!(labels[SERVICE_NAME_LABEL], "web");
        assert_eq!(labels[MANAGED_BY_LABEL], CONTROLLER);
        assert_eq!(labels["team"], "a");
        assert!(!labels.contains_key(HEADLESS_LABEL));
        assert_eq!(service_key(&slice), Some(ObjectKey::new("ns", "web")));
        assert!(managed_by(&slice, CONTROLLER));

        // Unchanged labels, then a changed Service label; reserved labels never count.
        assert!(!slice_labels(&slice, &svc, CONTROLLER).1);
        svc.metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("team".into(), "b".into());
        let (labels, changed) = slice_labels(&slice, &svc, CONTROLLER);
        assert!(changed);
        assert_eq!(labels["team"], "b");
        svc.metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("team".into(), "a".into());
        svc.metadata
            .labels
            .as_mut()
            .unwrap()
            .insert(HEADLESS_LABEL.into(), "x".into());
        assert!(!slice_labels(&slice, &svc, CONTROLLER).1);

        // Headless.
        svc.spec.as_mut().unwrap().cluster_ip = Some("None".into());
        assert_eq!(slice_labels(&slice, &svc, CONTROLLER).0[HEADLESS_LABEL], "");

        let mut other = svc.clone();
        other.metadata.uid = Some("another".into());
        assert!(!owned_by(&slice, &other));
    }

    #[test]
    fn the_prefix_keeps_the_dash_unless_too_long() {
        assert_eq!(slice_prefix("web"), "web-");
        let long = "a".repeat(253);
        assert_eq!(slice_prefix(&long), long);
    }
}
