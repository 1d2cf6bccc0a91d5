//! Leases: metadata validation plus the spec checks of `ValidateLeaseSpec` (positive
//! duration, non-negative transitions).

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

use super::generic::GenericStrategy;
use super::meta::validate_nonnegative;
use super::object::get;
use super::simple::{no_defaults, no_update_checks, SimpleStrategy};
use super::FieldError;

fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(d) = get(obj, &["spec", "leaseDurationSeconds"]).filter(|v| !v.is_null()) {
        if d.as_i64().is_none_or(|n| n <= 0) {
            errs.push(FieldError::invalid(
                "spec.leaseDurationSeconds",
                d,
                "must be greater than 0",
            ));
        }
    }
    errs.extend(validate_nonnegative(
        get(obj, &["spec", "leaseTransitions"]),
        "spec.leaseTransitions",
    ));
    errs
}

/// The strategy of leases.
pub(crate) fn strategy(info: &'static ResourceInfo) -> SimpleStrategy {
    SimpleStrategy::new(
        GenericStrategy::new(info),
        no_defaults,
        validate,
        no_update_checks,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;
    use serde_json::json;

    #[test]
    fn leader_election_leases_are_valid_and_bad_durations_are_not() {
        let s = strategy(catalog::by_kind("coordination.k8s.io/v1", "Lease").expect("served"));
        let mut lease = json!({"metadata": {"name": "kube-controller-manager", "namespace": "kube-system"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 0,
                     "acquireTime": "2024-01-01T00:00:00.000000Z", "renewTime": "2024-01-01T00:00:00.000000Z"}});
        s.prepare_for_create(&mut lease);
        assert!(s.validate_create(&lease).is_empty());
        assert_eq!(lease["metadata"].get("generation"), None);
        lease["spec"]["leaseDurationSeconds"] = json!(0);
        assert_eq!(
            s.validate_create(&lease)[0].message_with_field(),
            "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"
        );
    }
}
