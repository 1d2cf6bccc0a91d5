//! ServiceCIDRs: `ValidateServiceCIDR` and `ValidateServiceCIDRUpdate` of
//! `pkg/apis/networking/validation` (one or two CIDRs, one per family; the CIDRs are immutable
//! except for the single- to dual-stack upgrade kube 1.33 allows, kubernetes#131261).

use std::net::IpAddr;

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::simple::{no_defaults, SimpleStrategy};
use super::FieldError;

const PATH: &str = "spec.cidrs";

fn cidrs(obj: &Value) -> Vec<String> {
    obj.pointer("/spec/cidrs")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|v| v.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The family of a CIDR parsed as `ParseCIDRSloppy` does (`true` for IPv6), `None` if invalid.
fn family(cidr: &str) -> Option<bool> {
    let (ip, bits) = cidr.split_once('/')?;
    let ip: IpAddr = ip.parse().ok()?;
    if bits.is_empty() || bits.len() > 3 || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let bits: u8 = bits.parse().ok()?;
    let max = if ip.is_ipv6() { 128 } else { 32 };
    (bits <= max).then_some(ip.is_ipv6())
}

/// `validateServiceCIDRSpec`.
fn validate_spec(obj: &Value) -> Vec<FieldError> {
    let cidrs = cidrs(obj);
    let spec = obj.get("spec").cloned().unwrap_or(json!({}));
    if cidrs.is_empty() {
        return vec![FieldError::required(PATH, "at least one CIDR required")];
    }
    if cidrs.len() > 2 {
        return vec![FieldError::invalid(
            PATH,
            &spec,
            "may only hold up to 2 values",
        )];
    }
    if cidrs.len() == 2 {
        let families: Vec<_> = cidrs.iter().map(|c| family(c)).collect();
        let dual = matches!(families.as_slice(), [Some(a), Some(b)] if a != b);
        if !dual {
            return vec![FieldError::invalid(
                PATH,
                &spec,
                "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
            )];
        }
    }
    cidrs
        .iter()
        .enumerate()
        .filter(|(_, c)| family(c).is_none())
        .map(|(i, c)| {
            FieldError::invalid(
                format!("{PATH}[{i}]"),
                &json!(c),
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            )
        })
        .collect()
}

/// `ValidateServiceCIDRUpdate`: the CIDRs do not change, except that a single-stack ServiceCIDR
/// may gain a second CIDR of the other family.
fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    const IMMUTABLE: &str = "field is immutable";
    let (new_cidrs, old_cidrs) = (cidrs(new), cidrs(old));
    if new_cidrs.len() == old_cidrs.len() {
        return new_cidrs
            .iter()
            .zip(&old_cidrs)
            .enumerate()
            .filter(|(_, (n, o))| n != o)
            .map(|(i, (n, _))| FieldError::invalid(format!("{PATH}[{i}]"), &json!(n), IMMUTABLE))
            .collect();
    }
    if old_cidrs.len() == 1 && new_cidrs.len() == 2 {
        if new_cidrs[0] != old_cidrs[0] {
            return vec![FieldError::invalid(
                format!("{PATH}[0]"),
                &json!(new_cidrs[0]),
                IMMUTABLE,
            )];
        }
        // The spec was validated as a whole already.
        return Vec::new();
    }
    vec![FieldError::invalid(PATH, &json!(new_cidrs), IMMUTABLE)]
}

/// The strategy of ServiceCIDRs.
pub(crate) fn strategy(info: &'static ResourceInfo) -> SimpleStrategy {
    SimpleStrategy::new(
        GenericStrategy::new(info),
        no_defaults,
        validate_spec,
        validate_update,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn cidr(cidrs: Value) -> Value {
        json!({"metadata": {"name": "extra"}, "spec": {"cidrs": cidrs}})
    }

    fn messages(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(FieldError::message_with_field).collect()
    }

    #[test]
    fn service_cidrs_hold_one_or_two_valid_cidrs_of_distinct_families() {
        // TestValidateServiceCIDR (networking validation_test.go).
        let s = strategy(catalog::by_kind("networking.k8s.io/v1", "ServiceCIDR").expect("served"));
        for ok in [
            json!(["10.96.0.0/12"]),
            json!(["fd00:1:1::/64"]),
            json!(["10.96.0.0/12", "fd00:1:1::/64"]),
            json!(["fd00:1:1::/64", "10.96.0.0/12"]),
        ] {
            assert!(s.validate_create(&cidr(ok.clone())).is_empty(), "{ok}");
        }
        assert_eq!(
            messages(s.validate_create(&cidr(json!([])))),
            ["spec.cidrs: Required value: at least one CIDR required"]
        );
        assert_eq!(
            messages(s.validate_create(&cidr(json!(["10.96.0.0/12", "10.100.0.0/16"])))),
            ["spec.cidrs: Invalid value: {\"cidrs\":[\"10.96.0.0/12\",\"10.100.0.0/16\"]}: may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64"]
        );
        let three = cidr(json!(["10.0.0.0/8", "fd00::/64", "10.1.0.0/16"]));
        assert!(messages(s.validate_create(&three))[0].ends_with("may only hold up to 2 values"));
        assert_eq!(
            messages(s.validate_create(&cidr(json!(["10.96.0.0/33"])))),
            ["spec.cidrs[0]: Invalid value: \"10.96.0.0/33\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"]
        );
    }

    #[test]
    fn cidrs_are_immutable_but_a_single_stack_range_may_become_dual_stack() {
        // TestValidateServiceCIDRUpdate.
        let old = cidr(json!(["10.96.0.0/12"]));
        assert!(validate_update(&old, &old).is_empty());
        assert_eq!(
            messages(validate_update(&cidr(json!(["10.97.0.0/16"])), &old)),
            ["spec.cidrs[0]: Invalid value: \"10.97.0.0/16\": field is immutable"]
        );
        assert!(validate_update(&cidr(json!(["10.96.0.0/12", "fd00::/64"])), &old).is_empty());
        assert_eq!(
            messages(validate_update(
                &cidr(json!(["10.97.0.0/16", "fd00::/64"])),
                &old
            )),
            ["spec.cidrs[0]: Invalid value: \"10.97.0.0/16\": field is immutable"]
        );
        let dual = cidr(json!(["10.96.0.0/12", "fd00::/64"]));
        assert_eq!(
            messages(validate_update(&old, &dual)),
            ["spec.cidrs: Invalid value: [\"10.96.0.0/12\"]: field is immutable"]
        );
    }
}
