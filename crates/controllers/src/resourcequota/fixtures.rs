//! Quotas for the controller's tests.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ResourceQuota, ResourceQuotaSpec, ResourceQuotaStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as WireQuantity;
use kube::api::ObjectMeta;
use rkcm_apimachinery::quantity::Quantity;
use rkcm_apimachinery::quota::ResourceList;

/// A parsed resource list.
pub fn list(pairs: &[(&str, &str)]) -> ResourceList {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity::parse(v).expect("test quantity")))
        .collect()
}

fn wire(pairs: &[(&str, &str)]) -> BTreeMap<String, WireQuantity> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), WireQuantity(v.to_string())))
        .collect()
}

/// Resource name → quantity pairs.
pub type Pairs<'a> = &'a [(&'a str, &'a str)];

/// Quota `name` in `testing` with `hard` in spec and, if given, (hard, used) in status.
pub fn quota(
    name: &str,
    hard: &[(&str, &str)],
    status: Option<(Pairs<'_>, Pairs<'_>)>,
) -> ResourceQuota {
    ResourceQuota {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("testing".into()),
            resource_version: Some("1".into()),
            ..Default::default()
        },
        spec: Some(ResourceQuotaSpec {
            hard: Some(wire(hard)),
            ..Default::default()
        }),
        status: status.map(|(h, u)| ResourceQuotaStatus {
            hard: Some(wire(h)),
            used: Some(wire(u)),
        }),
    }
}
