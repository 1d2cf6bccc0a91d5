//! Quota usage of PersistentVolumeClaims: `pkg/quota/v1/evaluator/core/persistent_volume_claims.go`
//! (`persistentvolumeclaims`, `requests.storage`, and both per storage class as
//! `<class>.storageclass.storage.k8s.io/<resource>`). The `VolumeAttributesClass` scope is left
//! out: its feature gate is off by default in 1.33.

use k8s_openapi::api::core::v1::PersistentVolumeClaim;

use super::resources::{contains, ResourceList};
use super::Error;
use crate::quantity::{Format, Quantity};

/// `count/persistentvolumeclaims`.
pub const PVC_OBJECT_COUNT_NAME: &str = "count/persistentvolumeclaims";

/// `storageClassSuffix`.
pub const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// `pvcResources`.
const PVC_RESOURCES: &[&str] = &["persistentvolumeclaims", "requests.storage"];

/// `V1ResourceByStorageClass`: `<class>.storageclass.storage.k8s.io/<resource>`.
pub fn resource_by_storage_class(class: &str, resource: &str) -> String {
    format!("{class}{STORAGE_CLASS_SUFFIX}{resource}")
}

/// `MatchingResources` of the claim evaluator.
pub fn matching_resources<S: AsRef<str>>(input: &[S]) -> Vec<String> {
    input
        .iter()
        .map(AsRef::as_ref)
        .filter(|item| {
            *item == PVC_OBJECT_COUNT_NAME
                || contains(PVC_RESOURCES, item)
                || PVC_RESOURCES
                    .iter()
                    .any(|r| item.ends_with(&format!("{STORAGE_CLASS_SUFFIX}{r}")))
        })
        .map(str::to_string)
        .collect()
}

/// `GetPersistentVolumeClaimClass`: `spec.storageClassName`, else the beta annotation.
pub fn claim_class(pvc: &PersistentVolumeClaim) -> Option<&str> {
    if let Some(class) = pvc
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("volume.beta.kubernetes.io/storage-class"))
    {
        return Some(class.as_str());
    }
    pvc.spec
        .as_ref()
        .and_then(|s| s.storage_class_name.as_deref())
        .filter(|c| !c.is_empty())
}

/// Rounds up to whole bytes (kube #94313: storage is charged in whole units).
fn round_up(q: Quantity) -> Quantity {
    let whole = Quantity::new(q.value(), q.format());
    if whole == q {
        q
    } else {
        whole
    }
}

fn storage_of(
    list: Option<
        &std::collections::BTreeMap<
            String,
            k8s_openapi::apimachinery::pkg::api::resource::Quantity,
        >,
    >,
    field: &str,
) -> Result<Option<Quantity>, Error> {
    list.and_then(|l| l.get("storage"))
        .map(|q| {
            Quantity::parse(q.0.trim()).map_err(|source| Error::Quantity {
                field: field.to_string(),
                source,
            })
        })
        .transpose()
}

/// `getStorageUsage`: the requested storage, or the allocated storage when it is larger (an
/// expansion in progress), rounded up to whole bytes.
pub fn storage_usage(pvc: &PersistentVolumeClaim) -> Result<Option<Quantity>, Error> {
    let requested = storage_of(
        pvc.spec
            .as_ref()
            .and_then(|s| s.resources.as_ref())
            .and_then(|r| r.requests.as_ref()),
        "spec.resources.requests",
    )?
    .map(round_up);
    let allocated = storage_of(
        pvc.status
            .as_ref()
            .and_then(|s| s.allocated_resources.as_ref()),
        "status.allocatedResources",
    )?;
    Ok(match (requested, allocated) {
        (Some(r), Some(a)) if a > r => Some(round_up(a)),
        (r, _) => r,
    })
}

/// `Usage`: one claim (also per storage class) and its storage (also per storage class).
pub fn usage(pvc: &PersistentVolumeClaim) -> Result<ResourceList, Error> {
    let one = Quantity::new(1, Format::DecimalSI);
    let mut result = ResourceList::new();
    result.insert("persistentvolumeclaims".into(), one.clone());
    result.insert(PVC_OBJECT_COUNT_NAME.into(), one.clone());
    let class = claim_class(pvc);
    if let Some(class) = class {
        result.insert(
            resource_by_storage_class(class, "persistentvolumeclaims"),
            one,
        );
    }
    if let Some(storage) = storage_usage(pvc)? {
        if let Some(class) = class {
            result.insert(
                resource_by_storage_class(class, "requests.storage"),
                storage.clone(),
            );
        }
        result.insert("requests.storage".into(), storage);
    }
    Ok(result)
}

/// `RequiresQuotaReplenish`: the allocated storage changed.
pub fn requires_quota_replenish(new: &PersistentVolumeClaim, old: &PersistentVolumeClaim) -> bool {
    let allocated = |p: &PersistentVolumeClaim| {
        p.status
            .as_ref()
            .and_then(|s| s.allocated_resources.as_ref())
            .and_then(|a| a.get("storage"))
            .map(|q| q.0.clone())
    };
    allocated(new) != allocated(old)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::resources::{equals, list};
    use k8s_openapi::api::core::v1::{
        PersistentVolumeClaimSpec, PersistentVolumeClaimStatus, VolumeResourceRequirements,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as WireQuantity;

    fn claim(class: Option<&str>, storage: &str, allocated: Option<&str>) -> PersistentVolumeClaim {
        PersistentVolumeClaim {
            spec: Some(PersistentVolumeClaimSpec {
                storage_class_name: class.map(str::to_string),
                resources: Some(VolumeResourceRequirements {
                    requests: Some([("storage".to_string(), WireQuantity(storage.into()))].into()),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            status: allocated.map(|a| PersistentVolumeClaimStatus {
                allocated_resources: Some([("storage".to_string(), WireQuantity(a.into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    // TestPersistentVolumeClaimEvaluatorUsage
    #[test]
    fn usage_charges_claims_and_storage_by_class() {
        let gold_claims = resource_by_storage_class("gold", "persistentvolumeclaims");
        let gold_storage = resource_by_storage_class("gold", "requests.storage");
        let cases = [
            (
                "pvc-usage",
                claim(None, "10Gi", None),
                list(&[
                    ("requests.storage", "10Gi"),
                    ("persistentvolumeclaims", "1"),
                    ("count/persistentvolumeclaims", "1"),
                ]),
            ),
            (
                "pvc-usage-by-class",
                claim(Some("gold"), "10Gi", None),
                list(&[
                    ("requests.storage", "10Gi"),
                    ("persistentvolumeclaims", "1"),
                    (gold_storage.as_str(), "10Gi"),
                    (gold_claims.as_str(), "1"),
                    ("count/persistentvolumeclaims", "1"),
                ]),
            ),
            (
                "pvc-usage-rounded",
                claim(None, "10Gi", None),
                list(&[
                    ("requests.storage", "10Gi"),
                    ("persistentvolumeclaims", "1"),
                    ("count/persistentvolumeclaims", "1"),
                ]),
            ),
            (
                "pvc-usage-higher-allocated-resource",
                claim(None, "10Gi", Some("20Gi")),
                list(&[
                    ("requests.storage", "20Gi"),
                    ("persistentvolumeclaims", "1"),
                    ("count/persistentvolumeclaims", "1"),
                ]),
            ),
            (
                "pvc-usage-lower-allocated-resource",
                claim(None, "10Gi", Some("5Gi")),
                list(&[
                    ("requests.storage", "10Gi"),
                    ("persistentvolumeclaims", "1"),
                    ("count/persistentvolumeclaims", "1"),
                ]),
            ),
        ];
        for (name, pvc, want) in cases {
            let got = usage(&pvc).unwrap();
            assert!(equals(&got, &want), "{name}: {got:?}");
        }
        // Fractions of a byte are charged as a whole byte.
        let got = usage(&claim(None, "1000500m", None)).unwrap();
        assert_eq!(got["requests.storage"].to_string(), "1001");
        assert!(usage(&claim(None, "plenty", None)).is_err());
    }

    // TestPersistentVolumeClaimEvaluatorMatchingResources
    #[test]
    fn matching_resources_keeps_claim_names_and_class_scoped_ones() {
        assert_eq!(
            matching_resources(&[
                "count/persistentvolumeclaims",
                "requests.storage",
                "persistentvolumeclaims",
                "gold.storageclass.storage.k8s.io/requests.storage",
                "gold.storageclass.storage.k8s.io/persistentvolumeclaims",
                "requests.cpu",
                "gold.storageclass.storage.k8s.io/requests.cpu",
            ]),
            [
                "count/persistentvolumeclaims",
                "requests.storage",
                "persistentvolumeclaims",
                "gold.storageclass.storage.k8s.io/requests.storage",
                "gold.storageclass.storage.k8s.io/persistentvolumeclaims",
            ]
        );
    }

    #[test]
    fn a_change_of_allocated_storage_needs_replenishment() {
        let old = claim(None, "10Gi", Some("10Gi"));
        assert!(!requires_quota_replenish(&old.clone(), &old));
        assert!(requires_quota_replenish(
            &claim(None, "10Gi", Some("20Gi")),
            &old
        ));
    }
}
