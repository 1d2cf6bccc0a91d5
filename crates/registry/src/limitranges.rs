//! LimitRanges: the container defaults of `SetDefaults_LimitRangeItem` and the checks of
//! `ValidateLimitRange` (limit types, resource names, min ≤ default request ≤ default ≤ max,
//! ratios of at least 1, no defaults for the `Pod` type).
//!
//! Mirrors `pkg/apis/core/v1/defaults.go` and `pkg/apis/core/validation/validation.go`.

use std::collections::{BTreeMap, BTreeSet};

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Map, Value};

use super::generic::GenericStrategy;
use super::meta::is_qualified_name;
use super::object::{get, get_str};
use super::resources::{
    default_resource_list, entries, invalid_quantity, is_overcharge_allowed, quantity_text,
    validate_container_resource_name, validate_resource_name,
};
use super::simple::{no_update_checks, SimpleStrategy};
use super::FieldError;
use rkcm_apimachinery::quantity::Quantity;

const LIST_KEYS: [&str; 5] = [
    "max",
    "min",
    "default",
    "defaultRequest",
    "maxLimitRequestRatio",
];

/// `SetDefaults_LimitRangeItem` for every item, after `SetDefaults_ResourceList` of its lists:
/// for `Container` items a missing default limit is the max, and a missing default request
/// is the default limit, else the min. Empty lists stay absent, as kube's JSON omits them.
fn default_limit_range(obj: &mut Value) {
    let Some(limits) = obj
        .get_mut("spec")
        .and_then(|s| s.get_mut("limits"))
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for item in limits.iter_mut().filter_map(Value::as_object_mut) {
        for key in LIST_KEYS {
            default_resource_list(item.get_mut(key));
        }
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let list = |item: &Map<String, Value>, key: &str| {
            item.get(key)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let mut default = list(item, "default");
        for (k, v) in list(item, "max") {
            default.entry(k).or_insert(v);
        }
        let mut request = list(item, "defaultRequest");
        for (k, v) in default.iter().chain(list(item, "min").iter()) {
            request.entry(k.clone()).or_insert_with(|| v.clone());
        }
        for (key, value) in [("default", default), ("defaultRequest", request)] {
            if !value.is_empty() {
                item.insert(key.to_string(), Value::Object(value));
            }
        }
    }
}

/// `validateLimitRangeTypeName`.
fn validate_type_name(ty: &str, path: &str, errs: &mut Vec<FieldError>) {
    let msgs = is_qualified_name(ty);
    if !msgs.is_empty() {
        for m in msgs {
            errs.push(FieldError::invalid(path, &json!(ty), &m));
        }
        return;
    }
    if !ty.contains('/') && !["Pod", "Container", "PersistentVolumeClaim"].contains(&ty) {
        errs.push(FieldError::invalid(
            path,
            &json!(ty),
            "must be a standard limit type or fully qualified",
        ));
    }
}

/// `Quantity.Cmp` of two quantities; quantities that do not parse are left to the type check.
fn cmp(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    Some(quantity(a)?.cmp(&quantity(b)?))
}

fn quantity(v: &Value) -> Option<Quantity> {
    Quantity::from_json(v).ok()
}

/// `ValidateLimitRange` without the metadata.
fn validate(obj: &Value) -> Vec<FieldError> {
    use std::cmp::Ordering::{Greater, Less};
    let mut errs = Vec::new();
    let mut types = BTreeSet::new();
    let items = get(obj, &["spec", "limits"]).and_then(Value::as_array);
    for (i, item) in items.into_iter().flatten().enumerate() {
        let path = format!("spec.limits[{i}]");
        let ty = get_str(item, &["type"]).unwrap_or("");
        validate_type_name(ty, &format!("{path}.type"), &mut errs);
        if !types.insert(ty) {
            errs.push(FieldError::duplicate(format!("{path}.type"), &json!(ty)));
        }
        let name_check = |name: &str, p: &str| match ty {
            "Pod" | "Container" => validate_container_resource_name(name, p),
            _ => validate_resource_name(name, p),
        };
        let mut keys = BTreeSet::new();
        let mut lists: BTreeMap<&str, BTreeMap<&String, &Value>> = BTreeMap::new();
        let mut collect = |key: &'static str, errs: &mut Vec<FieldError>| {
            for (name, q) in entries(get(item, &[key])) {
                errs.extend(name_check(name, &format!("{path}.{key}[{name}]")));
                keys.insert(name.clone());
                lists.entry(key).or_default().insert(name, q);
            }
        };
        collect("max", &mut errs);
        collect("min", &mut errs);
        if ty == "Pod" {
            for key in ["default", "defaultRequest"] {
                if entries(get(item, &[key])).next().is_some() {
                    errs.push(FieldError::forbidden(
                        format!("{path}.{key}"),
                        "may not be specified when `type` is 'Pod'",
                    ));
                }
            }
        } else {
            collect("default", &mut errs);
            collect("defaultRequest", &mut errs);
        }
        if ty == "PersistentVolumeClaim"
            && get(item, &["min", "storage"]).is_none()
            && get(item, &["max", "storage"]).is_none()
        {
            errs.push(FieldError::required(
                format!("{path}.limits"),
                "either minimum or maximum storage value is required, but neither was provided",
            ));
        }
        collect("maxLimitRequestRatio", &mut errs);

        for k in &keys {
            let find = |key: &str| lists.get(key).and_then(|l| l.get(k)).copied();
            let (min, max) = (find("min"), find("max"));
            let (default, request) = (find("default"), find("defaultRequest"));
            let ratio = find("maxLimitRequestRatio");
            let text = quantity_text;
            if let (Some(min), Some(max)) = (min, max) {
                if cmp(min, max) == Some(Greater) {
                    errs.push(invalid_quantity(
                        format!("{path}.min[{k}]"),
                        min,
                        &format!(
                            "min value {} is greater than max value {}",
                            text(min),
                            text(max)
                        ),
                    ));
                }
            }
            if let (Some(request), Some(min)) = (request, min) {
                if cmp(min, request) == Some(Greater) {
                    errs.push(invalid_quantity(
                        format!("{path}.defaultRequest[{k}]"),
                        request,
                        &format!(
                            "min value {} is greater than default request value {}",
                            text(min),
                            text(request)
                        ),
                    ));
                }
            }
            if let (Some(request), Some(max)) = (request, max) {
                if cmp(request, max) == Some(Greater) {
                    errs.push(invalid_quantity(
                        format!("{path}.defaultRequest[{k}]"),
                        request,
                        &format!(
                            "default request value {} is greater than max value {}",
                            text(request),
                            text(max)
                        ),
                    ));
                }
            }
            if let (Some(request), Some(default)) = (request, default) {
                if cmp(request, default) == Some(Greater) {
                    errs.push(invalid_quantity(
                        format!("{path}.defaultRequest[{k}]"),
                        request,
                        &format!(
                            "default request value {} is greater than default limit value {}",
                            text(request),
                            text(default)
                        ),
                    ));
                }
            }
            if let (Some(default), Some(min)) = (default, min) {
                if cmp(min, default) == Some(Greater) {
                    errs.push(invalid_quantity(
                        format!("{path}.default[{k}]"),
                        min,
                        &format!(
                            "min value {} is greater than default value {}",
                            text(min),
                            text(default)
                        ),
                    ));
                }
            }
            if let (Some(default), Some(max)) = (default, max) {
                if cmp(default, max) == Some(Greater) {
                    errs.push(invalid_quantity(
                        format!("{path}.default[{k}]"),
                        max,
                        &format!(
                            "default value {} is greater than max value {}",
                            text(default),
                            text(max)
                        ),
                    ));
                }
            }
            if let Some(ratio) = ratio {
                if cmp(ratio, &json!("1")) == Some(Less) {
                    errs.push(invalid_quantity(
                        format!("{path}.maxLimitRequestRatio[{k}]"),
                        ratio,
                        &format!("ratio {} is less than 1", text(ratio)),
                    ));
                }
                if let (Some(min), Some(max)) = (min, max) {
                    if let (Some(r), Some(lo), Some(hi)) =
                        (quantity(ratio), quantity(min), quantity(max))
                    {
                        // kube divides the values as float64; `%f` prints six decimals.
                        let limit = hi.as_approximate_f64() / lo.as_approximate_f64();
                        if r.as_approximate_f64() > limit {
                            errs.push(invalid_quantity(
                                format!("{path}.maxLimitRequestRatio[{k}]"),
                                ratio,
                                &format!(
                                    "ratio {} is greater than max/min = {limit:.6}",
                                    text(ratio)
                                ),
                            ));
                        }
                    }
                }
            }
            if let (Some(default), Some(request)) = (default, request) {
                if !is_overcharge_allowed(k)
                    && cmp(default, request) != Some(std::cmp::Ordering::Equal)
                {
                    errs.push(invalid_quantity(
                        format!("{path}.defaultRequest[{k}]"),
                        request,
                        &format!(
                            "default value {} must equal to defaultRequest value {} in {k}",
                            text(default),
                            text(request)
                        ),
                    ));
                }
            }
        }
    }
    errs
}

/// The strategy of limit ranges (`ValidateLimitRange` on create and update alike).
pub(crate) fn strategy(info: &'static ResourceInfo) -> SimpleStrategy {
    SimpleStrategy::new(
        GenericStrategy::new(info),
        default_limit_range,
        validate,
        no_update_checks,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn s() -> SimpleStrategy {
        strategy(catalog::by_kind("v1", "LimitRange").expect("served"))
    }

    fn limit_range(items: Value) -> Value {
        json!({"metadata": {"name": "lr", "namespace": "default"}, "spec": {"limits": items}})
    }

    fn messages(obj: &Value) -> Vec<String> {
        s().validate_create(obj)
            .iter()
            .map(FieldError::message_with_field)
            .collect()
    }

    #[test]
    fn container_items_default_limits_from_max_and_requests_from_default_then_min() {
        // TestSetDefaultLimitRangeItem (defaults_test.go).
        let mut obj = limit_range(json!([
            {"type": "Container", "max": {"cpu": "100m"}, "min": {"memory": "100Mi"},
             "default": {"memory": "200Mi"}},
            {"type": "Pod", "max": {"cpu": 1}}
        ]));
        s().default(&mut obj);
        let c = &obj["spec"]["limits"][0];
        assert_eq!(c["default"], json!({"cpu": "100m", "memory": "200Mi"}));
        assert_eq!(
            c["defaultRequest"],
            json!({"cpu": "100m", "memory": "200Mi"})
        );
        let p = &obj["spec"]["limits"][1];
        assert_eq!(p, &json!({"type": "Pod", "max": {"cpu": "1"}}));
        let mut min_only = limit_range(json!([{"type": "Container", "min": {"cpu": "50m"}}]));
        s().default(&mut min_only);
        assert_eq!(
            min_only["spec"]["limits"][0],
            json!({"type": "Container", "min": {"cpu": "50m"}, "defaultRequest": {"cpu": "50m"}})
        );
        assert!(messages(&obj).is_empty());
    }

    #[test]
    fn limit_ranges_are_validated_as_kube_does() {
        // Cases of TestValidateLimitRange (validation_test.go).
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (
                json!([{"type": "Pod", "max": {"cpu": "100m"}, "default": {"cpu": "10m"}}]),
                vec!["spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"],
            ),
            (
                json!([{"type": "Pod", "max": {"cpu": "100m"}, "defaultRequest": {"cpu": "10m"}}]),
                vec!["spec.limits[0].defaultRequest: Forbidden: may not be specified when `type` is 'Pod'"],
            ),
            (
                json!([{"type": "Container", "max": {"cpu": "10m"}, "min": {"cpu": "100m"}}]),
                vec!["spec.limits[0].min[cpu]: Invalid value: 100m: min value 100m is greater than max value 10m"],
            ),
            (
                json!([{"type": "Container", "max": {"cpu": "100m"}, "min": {"cpu": "10m"},
                    "default": {"cpu": "200m"}, "defaultRequest": {"cpu": "50m"}}]),
                vec!["spec.limits[0].default[cpu]: Invalid value: 100m: default value 200m is greater than max value 100m"],
            ),
            (
                json!([{"type": "Container", "min": {"cpu": "10m"}, "defaultRequest": {"cpu": "5m"},
                    "default": {"cpu": "20m"}}]),
                vec!["spec.limits[0].defaultRequest[cpu]: Invalid value: 5m: min value 10m is greater than default request value 5m"],
            ),
            (
                json!([{"type": "Container", "default": {"memory": "1Gi"}, "defaultRequest": {"memory": "2Gi"}}]),
                vec!["spec.limits[0].defaultRequest[memory]: Invalid value: 2Gi: default request value 2Gi is greater than default limit value 1Gi"],
            ),
            (
                json!([{"type": "Container", "maxLimitRequestRatio": {"cpu": "800m"}}]),
                vec!["spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: 800m: ratio 800m is less than 1"],
            ),
            (
                json!([{"type": "Container", "max": {"cpu": "400m"}, "min": {"cpu": "100m"},
                    "maxLimitRequestRatio": {"cpu": "5"}}]),
                vec!["spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: 5: ratio 5 is greater than max/min = 4.000000"],
            ),
            (
                json!([{"type": "Container", "default": {"hugepages-2Mi": "4Mi"},
                    "defaultRequest": {"hugepages-2Mi": "2Mi"}}]),
                vec!["spec.limits[0].defaultRequest[hugepages-2Mi]: Invalid value: 2Mi: default value 4Mi must equal to defaultRequest value 2Mi in hugepages-2Mi"],
            ),
            (
                json!([{"type": "PersistentVolumeClaim", "max": {"cpu": "1"}}]),
                vec!["spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but neither was provided"],
            ),
            (
                json!([{"type": "Container", "max": {"pods": "1"}}]),
                vec!["spec.limits[0].max[pods]: Invalid value: \"pods\": must be a standard resource for containers"],
            ),
            (
                json!([{"type": "Invalid", "max": {"cpu": "1"}}, {"type": "Invalid"}]),
                vec![
                    "spec.limits[0].type: Invalid value: \"Invalid\": must be a standard limit type or fully qualified",
                    "spec.limits[1].type: Invalid value: \"Invalid\": must be a standard limit type or fully qualified",
                    "spec.limits[1].type: Duplicate value: \"Invalid\"",
                ],
            ),
            (json!([{"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "5Gi"}}]), vec![]),
            (json!([{"type": "example.com/Thing", "max": {"example.com/widgets": "3"}}]), vec![]),
        ];
        for (items, want) in cases {
            assert_eq!(messages(&limit_range(items.clone())), want, "{items}");
        }
    }
}
