//! HorizontalPodAutoscalers (autoscaling/v2, the stored version): defaults (`minReplicas`,
//! the 80% CPU metric, scaling behavior), validation of the target, metrics and behavior, and
//! the status split.
//!
//! Mirrors `pkg/apis/autoscaling/v2/defaults.go`, `pkg/apis/autoscaling/validation` and
//! `pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go` of kube 1.33 with default
//! feature gates (`HPAScaleToZero` and `HPAConfigurableTolerance` off).

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::hooked::{HookedStrategy, Hooks};
use super::meta::{is_dns1123_label, validate_nonnegative, validate_path_segment_name};
use super::object::{get, get_i64, get_str, object_mut, set};
use super::FieldError;
use rkcm_apimachinery::quantity::Quantity;

/// `autoscaling.DefaultCPUUtilization`.
pub(crate) const DEFAULT_CPU_UTILIZATION: i64 = 80;
/// `MaxPeriodSeconds`.
const MAX_PERIOD_SECONDS: i64 = 1800;
/// `MaxStabilizationWindowSeconds`.
const MAX_STABILIZATION_WINDOW_SECONDS: i64 = 3600;
/// `validMetricSourceTypesList` (sorted).
const METRIC_SOURCE_TYPES: &[&str] = &[
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];
/// `validSelectPolicyTypesList` (sorted).
const SELECT_POLICIES: &[&str] = &["Disabled", "Max", "Min"];
/// `validPolicyTypesList` (sorted).
const POLICY_TYPES: &[&str] = &["Percent", "Pods"];

/// The CPU utilization metric kube adds to an HPA without metrics.
pub(crate) fn default_cpu_metric() -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}})
}

/// `defaultHPAScaleUpRules`.
fn default_scale_up() -> Value {
    json!({"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
        {"type": "Pods", "value": 4, "periodSeconds": 15},
        {"type": "Percent", "value": 100, "periodSeconds": 15}]})
}

/// `defaultHPAScaleDownRules`: no stabilization window, which the controller takes from its
/// `--horizontal-pod-autoscaler-downscale-stabilization` flag.
fn default_scale_down() -> Value {
    json!({"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]})
}

/// `copyHPAScalingRules` onto `defaults`: every field the client set (non-null) wins; an empty
/// `policies` list is set (non-nil in Go) and so kept.
fn generate_rules(given: Option<&Value>, defaults: Value) -> Value {
    let mut out = defaults;
    if let (Some(given), Some(out_map)) = (given.and_then(Value::as_object), out.as_object_mut()) {
        for key in [
            "selectPolicy",
            "stabilizationWindowSeconds",
            "policies",
            "tolerance",
        ] {
            if let Some(v) = given.get(key).filter(|v| !v.is_null()) {
                out_map.insert(key.to_string(), v.clone());
            }
        }
    }
    out
}

/// `SetDefaults_HorizontalPodAutoscaler` of autoscaling/v2.
pub(crate) fn default_hpa(obj: &mut Value) {
    let Some(spec) = object_mut(obj, &["spec"]) else {
        return;
    };
    if spec.get("minReplicas").is_none_or(Value::is_null) {
        spec.insert("minReplicas".to_string(), json!(1));
    }
    if spec
        .get("metrics")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        spec.insert("metrics".to_string(), json!([default_cpu_metric()]));
    }
    if let Some(behavior) = spec.get_mut("behavior").and_then(Value::as_object_mut) {
        let up = generate_rules(behavior.get("scaleUp"), default_scale_up());
        let down = generate_rules(behavior.get("scaleDown"), default_scale_down());
        behavior.insert("scaleUp".to_string(), up);
        behavior.insert("scaleDown".to_string(), down);
    }
}

fn tolerance_in_use(obj: &Value) -> bool {
    ["scaleUp", "scaleDown"]
        .iter()
        .any(|dir| get(obj, &["spec", "behavior", dir, "tolerance"]).is_some_and(|t| !t.is_null()))
}

/// `dropDisabledFields`: `tolerance` needs the alpha gate `HPAConfigurableTolerance` (off),
/// unless the stored object already uses it.
fn drop_disabled_fields(new: &mut Value, old: Option<&Value>) {
    if old.is_some_and(tolerance_in_use) {
        return;
    }
    for dir in ["scaleUp", "scaleDown"] {
        set(new, &["spec", "behavior", dir, "tolerance"], None);
    }
}

/// The zero `HorizontalPodAutoscalerStatus` as autoscaling/v2 writes it: `desiredReplicas` and
/// `currentMetrics` have no `omitempty`.
fn fill_status(obj: &mut Value) {
    let Some(status) = object_mut(obj, &["status"]) else {
        return;
    };
    if status.get("desiredReplicas").is_none_or(Value::is_null) {
        status.insert("desiredReplicas".to_string(), json!(0));
    }
    status.entry("currentMetrics").or_insert(Value::Null);
    // `currentReplicas` has `omitempty`: a 0 is not written.
    if status.get("currentReplicas").and_then(Value::as_i64) == Some(0) {
        status.remove("currentReplicas");
    }
}

fn prepare_create(obj: &mut Value) {
    fill_status(obj);
    drop_disabled_fields(obj, None);
}

fn invalid_quantity(path: &str, v: &Value, detail: &str) -> FieldError {
    // kube renders a `resource.Quantity` with `%#v` (its `String` has a pointer receiver);
    // the quantity's text is shown instead.
    FieldError::invalid(path, v, detail)
}

/// `ValidateCrossVersionObjectReference`.
fn validate_object_reference(r: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let r = r.unwrap_or(&Value::Null);
    for key in ["kind", "name"] {
        let v = get_str(r, &[key]).unwrap_or("");
        if v.is_empty() {
            errs.push(FieldError::required(format!("{path}.{key}"), ""));
        } else {
            for m in validate_path_segment_name(v, false) {
                errs.push(FieldError::invalid(
                    format!("{path}.{key}"),
                    &Value::from(v),
                    &m,
                ));
            }
        }
    }
    errs
}

/// `validateMetricIdentifier`.
fn validate_metric_identifier(id: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let name = id.and_then(|i| get_str(i, &["name"])).unwrap_or("");
    if name.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.name"),
            "must specify a metric name",
        ));
    } else {
        for m in validate_path_segment_name(name, false) {
            errs.push(FieldError::invalid(
                format!("{path}.name"),
                &Value::from(name),
                &m,
            ));
        }
    }
    errs
}

fn present(target: &Value, key: &str) -> Option<Value> {
    target.get(key).filter(|v| !v.is_null()).cloned()
}

/// `validateMetricTarget`.
fn validate_metric_target(target: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ty = get_str(target, &["type"]).unwrap_or("");
    if ty.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.type"),
            "must specify a metric target type",
        ));
    }
    if !["Utilization", "Value", "AverageValue"].contains(&ty) {
        errs.push(FieldError::invalid(
            format!("{path}.type"),
            &Value::from(ty),
            "must be either Utilization, Value, or AverageValue",
        ));
    }
    for key in ["value", "averageValue"] {
        if let Some(q) = present(target, key) {
            if Quantity::from_json(&q).map_or(true, |n| n.sign() <= 0) {
                errs.push(invalid_quantity(
                    &format!("{path}.{key}"),
                    &q,
                    "must be positive",
                ));
            }
        }
    }
    if let Some(u) = get_i64(target, &["averageUtilization"]) {
        if u < 1 {
            errs.push(FieldError::invalid(
                format!("{path}.averageUtilization"),
                &Value::from(u),
                "must be greater than 0",
            ));
        }
    }
    errs
}

/// The checks of one source (`validateObjectSource`, `validateExternalSource`, ...).
fn validate_source(key: &str, src: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let target = src.get("target").unwrap_or(&Value::Null);
    let target_path = format!("{path}.target");
    let has = |k: &str| present(target, k).is_some();
    match key {
        "object" => {
            errs.extend(validate_object_reference(
                src.get("describedObject"),
                &format!("{path}.describedObject"),
            ));
            errs.extend(validate_metric_identifier(
                src.get("metric"),
                &format!("{path}.metric"),
            ));
            errs.extend(validate_metric_target(target, &target_path));
            if !has("value") && !has("averageValue") {
                errs.push(FieldError::required(
                    format!("{target_path}.averageValue"),
                    "must set either a target value or averageValue",
                ));
            }
        }
        "external" => {
            errs.extend(validate_metric_identifier(
                src.get("metric"),
                &format!("{path}.metric"),
            ));
            errs.extend(validate_metric_target(target, &target_path));
            if !has("value") && !has("averageValue") {
                errs.push(FieldError::required(
                    format!("{target_path}.averageValue"),
                    "must set either a target value for metric or a per-pod target",
                ));
            }
            if has("value") && has("averageValue") {
                errs.push(FieldError::forbidden(
                    format!("{target_path}.value"),
                    "may not set both a target value for metric and a per-pod target",
                ));
            }
        }
        "pods" => {
            errs.extend(validate_metric_identifier(
                src.get("metric"),
                &format!("{path}.metric"),
            ));
            errs.extend(validate_metric_target(target, &target_path));
            if !has("averageValue") {
                errs.push(FieldError::required(
                    format!("{target_path}.averageValue"),
                    "must specify a positive target averageValue",
                ));
            }
        }
        "resource" | "containerResource" => {
            let name = get_str(src, &["name"]).unwrap_or("");
            if name.is_empty() {
                errs.push(FieldError::required(
                    format!("{path}.name"),
                    "must specify a resource name",
                ));
            } else if key == "containerResource" && !name.contains('/') {
                // ValidateContainerResourceName for names without a domain; extended
                // resource names (with a `/`) are not checked.
                let standard = ["cpu", "memory", "ephemeral-storage"].contains(&name)
                    || name.starts_with("hugepages-");
                if !standard {
                    errs.push(FieldError::invalid(
                        format!("{path}.name"),
                        &Value::from(name),
                        "must be a standard resource for containers",
                    ));
                }
            }
            if key == "containerResource" {
                let container = get_str(src, &["container"]).unwrap_or("");
                if container.is_empty() {
                    errs.push(FieldError::required(
                        format!("{path}.container"),
                        "must specify a container",
                    ));
                } else {
                    for m in is_dns1123_label(container) {
                        errs.push(FieldError::invalid(
                            format!("{path}.container"),
                            &Value::from(container),
                            &m,
                        ));
                    }
                }
            }
            errs.extend(validate_metric_target(target, &target_path));
            if !has("averageUtilization") && !has("averageValue") {
                errs.push(FieldError::required(
                    format!("{target_path}.averageUtilization"),
                    "must set either a target raw value or a target utilization",
                ));
            }
            if has("averageUtilization") && has("averageValue") {
                errs.push(FieldError::forbidden(
                    format!("{target_path}.averageValue"),
                    "may not set both a target raw value and a target utilization",
                ));
            }
        }
        _ => {}
    }
    errs
}

/// `validateMetricSpec`.
fn validate_metric_spec(spec: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ty = get_str(spec, &["type"]).unwrap_or("");
    if ty.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.type"),
            "must specify a metric source type",
        ));
    }
    if !METRIC_SOURCE_TYPES.contains(&ty) {
        errs.push(FieldError::not_supported(
            format!("{path}.type"),
            &Value::from(ty),
            METRIC_SOURCE_TYPES,
        ));
    }
    // In kube's order; only the first source present is validated.
    let mut present_keys: Vec<&str> = Vec::new();
    for key in [
        "object",
        "external",
        "pods",
        "resource",
        "containerResource",
    ] {
        if let Some(src) = spec.get(key).filter(|v| !v.is_null()) {
            present_keys.push(key);
            if present_keys.len() == 1 {
                errs.extend(validate_source(key, src, &format!("{path}.{key}")));
            }
        }
    }
    let expected = match ty {
        "Object" => Some("object"),
        "Pods" => Some("pods"),
        "Resource" => Some("resource"),
        "External" => Some("external"),
        "ContainerResource" => Some("containerResource"),
        _ => None,
    };
    match expected {
        Some(field) if !present_keys.contains(&field) => errs.push(FieldError::required(
            format!("{path}.{field}"),
            "must populate information for the given metric source",
        )),
        Some(_) => {}
        None => errs.push(FieldError::not_supported(
            format!("{path}.type"),
            &Value::from(ty),
            METRIC_SOURCE_TYPES,
        )),
    }
    if present_keys.len() != 1 {
        // kube iterates a set here; the order of these errors is kube's field order.
        for key in present_keys.into_iter().filter(|k| Some(*k) != expected) {
            errs.push(FieldError::forbidden(
                format!("{path}.{key}"),
                "must populate the given metric source only",
            ));
        }
    }
    errs
}

/// `validateScalingRules` of one direction.
///
/// `tolerance` is not checked: it is dropped on write unless the stored object already has
/// it (the gate `HPAConfigurableTolerance` is off), and kube's sign check only matters with
/// the gate on.
fn validate_scaling_rules(rules: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(w) = get_i64(rules, &["stabilizationWindowSeconds"]) {
        if w < 0 {
            errs.push(FieldError::invalid(
                format!("{path}.stabilizationWindowSeconds"),
                &Value::from(w),
                "must be greater than or equal to zero",
            ));
        }
        if w > MAX_STABILIZATION_WINDOW_SECONDS {
            errs.push(FieldError::invalid(
                format!("{path}.stabilizationWindowSeconds"),
                &Value::from(w),
                &format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"),
            ));
        }
    }
    if let Some(p) = present(rules, "selectPolicy") {
        if !p.as_str().is_some_and(|s| SELECT_POLICIES.contains(&s)) {
            errs.push(FieldError::not_supported(
                format!("{path}.selectPolicy"),
                &p,
                SELECT_POLICIES,
            ));
        }
    }
    let policies = rules
        .get("policies")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if policies.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.policies"),
            "must specify at least one Policy",
        ));
    }
    for (i, policy) in policies.iter().enumerate() {
        let p = format!("{path}.policies[{i}]");
        let ty = get_str(policy, &["type"]).unwrap_or("");
        if !POLICY_TYPES.contains(&ty) {
            errs.push(FieldError::not_supported(
                format!("{p}.type"),
                &Value::from(ty),
                POLICY_TYPES,
            ));
        }
        let value = get_i64(policy, &["value"]).unwrap_or(0);
        if value <= 0 {
            errs.push(FieldError::invalid(
                format!("{p}.value"),
                &Value::from(value),
                "must be greater than zero",
            ));
        }
        let period = get_i64(policy, &["periodSeconds"]).unwrap_or(0);
        if period <= 0 {
            errs.push(FieldError::invalid(
                format!("{p}.periodSeconds"),
                &Value::from(period),
                "must be greater than zero",
            ));
        }
        if period > MAX_PERIOD_SECONDS {
            errs.push(FieldError::invalid(
                format!("{p}.periodSeconds"),
                &Value::from(period),
                &format!("must be less than or equal to {MAX_PERIOD_SECONDS}"),
            ));
        }
    }
    errs
}

/// `validateHorizontalPodAutoscalerSpec` with the lower bound of `minReplicas`.
fn validate_spec(obj: &Value, min_lower_bound: i64) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = get(obj, &["spec"]).unwrap_or(&Value::Null);
    let min = get_i64(spec, &["minReplicas"]);
    let max = get_i64(spec, &["maxReplicas"]).unwrap_or(0);
    if let Some(min) = min.filter(|m| *m < min_lower_bound) {
        errs.push(FieldError::invalid(
            "spec.minReplicas",
            &Value::from(min),
            &format!("must be greater than or equal to {min_lower_bound}"),
        ));
    }
    if max < 1 {
        errs.push(FieldError::invalid(
            "spec.maxReplicas",
            &Value::from(max),
            "must be greater than 0",
        ));
    }
    if min.is_some_and(|m| max < m) {
        errs.push(FieldError::invalid(
            "spec.maxReplicas",
            &Value::from(max),
            "must be greater than or equal to `minReplicas`",
        ));
    }
    // TODO: kube 1.34 also validates `scaleTargetRef.apiVersion`; 1.33 does not.
    errs.extend(validate_object_reference(
        spec.get("scaleTargetRef"),
        "spec.scaleTargetRef",
    ));
    let metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for (i, m) in metrics.iter().enumerate() {
        errs.extend(validate_metric_spec(m, &format!("spec.metrics[{i}]")));
    }
    if min == Some(0)
        && !metrics
            .iter()
            .any(|m| matches!(get_str(m, &["type"]), Some("Object" | "External")))
    {
        errs.push(FieldError::forbidden(
            "spec.metrics",
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
    if let Some(behavior) = spec.get("behavior").filter(|b| !b.is_null()) {
        for dir in ["scaleUp", "scaleDown"] {
            if let Some(rules) = behavior.get(dir).filter(|r| !r.is_null()) {
                errs.extend(validate_scaling_rules(
                    rules,
                    &format!("spec.behavior.{dir}"),
                ));
            }
        }
    }
    errs
}

/// `ValidateHorizontalPodAutoscaler` (after the metadata).
fn validate(obj: &Value) -> Vec<FieldError> {
    validate_spec(obj, 1)
}

/// Status checks of `ValidateHorizontalPodAutoscalerStatusUpdate`.
fn validate_status(obj: &Value) -> Vec<FieldError> {
    let mut errs = validate_nonnegative(
        get(obj, &["status", "currentReplicas"]),
        "status.currentReplicas",
    );
    errs.extend(validate_nonnegative(
        get(obj, &["status", "desiredReplicas"]),
        "status.desiredReplicas",
    ));
    errs
}

/// A full update validates the spec (a stored `minReplicas: 0` lowers the bound to 0); a
/// status update the status. Each preparation keeps the other half as stored.
fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let bound = if get_i64(old, &["spec", "minReplicas"]) == Some(0) {
        0
    } else {
        1
    };
    let mut errs = validate_spec(new, bound);
    errs.extend(validate_status(new));
    errs
}

/// The strategy of HorizontalPodAutoscalers.
pub(crate) fn strategy(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(
        GenericStrategy::new(info),
        Hooks {
            default: default_hpa,
            prepare_create,
            prepare_update: |new, old| drop_disabled_fields(new, Some(old)),
            prepare_status_update: |new, _old| fill_status(new),
            validate,
            validate_update,
            fields: &[],
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn s() -> HookedStrategy {
        strategy(catalog::by_kind("autoscaling/v2", "HorizontalPodAutoscaler").expect("served"))
    }

    fn hpa(spec: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "default"}, "spec": spec})
    }

    fn base_spec() -> Value {
        json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1, "maxReplicas": 5,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}]})
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::message_with_field).collect()
    }

    /// `TestSetDefaultHPA` / `TestHorizontalPodAutoscalerAnnotations` defaults.
    #[test]
    fn defaults_set_min_replicas_and_the_cpu_metric() {
        let mut obj =
            hpa(json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}));
        s().default(&mut obj);
        assert_eq!(obj["spec"]["minReplicas"], 1);
        assert_eq!(obj["spec"]["metrics"], json!([default_cpu_metric()]));
        assert!(obj["spec"].get("behavior").is_none());
        let mut zero = hpa(json!({"minReplicas": 0, "maxReplicas": 3}));
        s().default(&mut zero);
        assert_eq!(zero["spec"]["minReplicas"], 0);
    }

    /// `TestSetBehaviorDefaults` / `TestGenerateScaleUpRules` / `TestGenerateScaleDownRules`.
    #[test]
    fn behavior_defaults_fill_only_what_is_unset() {
        let mut obj = hpa(json!({"behavior": {}}));
        s().default(&mut obj);
        assert_eq!(obj["spec"]["behavior"]["scaleUp"], default_scale_up());
        assert_eq!(obj["spec"]["behavior"]["scaleDown"], default_scale_down());
        let mut custom = hpa(json!({"behavior": {
            "scaleUp": {"stabilizationWindowSeconds": 25},
            "scaleDown": {"selectPolicy": "Min", "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]}}}));
        s().default(&mut custom);
        let up = &custom["spec"]["behavior"]["scaleUp"];
        assert_eq!(up["stabilizationWindowSeconds"], 25);
        assert_eq!(up["selectPolicy"], "Max");
        assert_eq!(up["policies"].as_array().map(Vec::len), Some(2));
        let down = &custom["spec"]["behavior"]["scaleDown"];
        assert_eq!(
            *down,
            json!({"selectPolicy": "Min", "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}]})
        );
    }

    #[test]
    fn a_new_hpa_gets_the_zero_v2_status_and_loses_tolerance() {
        let mut spec = base_spec();
        spec["behavior"] = json!({"scaleUp": {"tolerance": "0.05"}});
        let mut obj = hpa(spec);
        obj["status"] = json!({"desiredReplicas": 9});
        s().default(&mut obj);
        s().prepare_for_create(&mut obj);
        assert_eq!(
            obj["status"],
            json!({"desiredReplicas": 0, "currentMetrics": null})
        );
        assert!(obj["spec"]["behavior"]["scaleUp"]
            .get("tolerance")
            .is_none());
        assert!(
            s().validate_create(&obj).is_empty(),
            "{:?}",
            s().validate_create(&obj)
        );
    }

    /// Cases of `TestValidateHorizontalPodAutoscaler` (errorCases).
    #[test]
    fn replica_bounds_and_target_follow_kubes_cases() {
        let mut spec = base_spec();
        spec["minReplicas"] = json!(0);
        assert_eq!(
            messages(&validate(&hpa(spec))),
            [
                "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
                "spec.metrics: Forbidden: must specify at least one Object or External metric to support scaling to zero replicas",
            ]
        );
        let mut spec = base_spec();
        spec["minReplicas"] = json!(7);
        assert_eq!(
            messages(&validate(&hpa(spec))),
            ["spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`"]
        );
        let mut spec = base_spec();
        spec["scaleTargetRef"] = json!({"kind": "..", "name": ""});
        assert_eq!(
            messages(&validate(&hpa(spec))),
            [
                "spec.scaleTargetRef.kind: Invalid value: \"..\": may not be '..'",
                "spec.scaleTargetRef.name: Required value",
            ]
        );
        let mut spec = base_spec();
        spec["maxReplicas"] = json!(0);
        spec["minReplicas"] = json!(0);
        let mut old = hpa(spec.clone());
        old["spec"]["metrics"] = json!([{"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "10"}}}]);
        let mut new = old.clone();
        new["spec"]["maxReplicas"] = json!(2);
        assert!(
            validate_update(&new, &old).is_empty(),
            "{:?}",
            validate_update(&new, &old)
        );
    }

    /// Metric cases of `TestValidateHorizontalPodAutoscaler`.
    #[test]
    fn metrics_follow_kubes_cases() {
        let with_metric = |m: Value| {
            let mut spec = base_spec();
            spec["metrics"] = json!([m]);
            messages(&validate(&hpa(spec)))
        };
        assert_eq!(
            with_metric(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70, "averageValue": "100m"}}})),
            ["spec.metrics[0].resource.target.averageValue: Forbidden: may not set both a target raw value and a target utilization"]
        );
        assert_eq!(
            with_metric(json!({"type": "Resource", "resource": {"target": {"type": "Utilization", "averageUtilization": -10}}})),
            [
                "spec.metrics[0].resource.name: Required value: must specify a resource name",
                "spec.metrics[0].resource.target.averageUtilization: Invalid value: -10: must be greater than 0",
            ]
        );
        assert_eq!(
            with_metric(json!({"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "Value", "value": "10"}}})),
            ["spec.metrics[0].pods.target.averageValue: Required value: must specify a positive target averageValue"]
        );
        assert_eq!(
            with_metric(
                json!({"type": "Object", "object": {"metric": {"name": "q"}, "describedObject": {"kind": "Service", "name": "s"}, "target": {"type": "Value", "value": "-1"}}})
            ),
            ["spec.metrics[0].object.target.value: Invalid value: \"-1\": must be positive"]
        );
        assert_eq!(
            with_metric(json!({"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "1", "averageValue": "1"}}})),
            ["spec.metrics[0].external.target.value: Forbidden: may not set both a target value for metric and a per-pod target"]
        );
        assert_eq!(
            with_metric(json!({"type": "Resource", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1"}}})),
            ["spec.metrics[0].resource: Required value: must populate information for the given metric source"]
        );
        assert_eq!(
            with_metric(json!({"type": "Resource",
                "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "1"}},
                "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}})),
            ["spec.metrics[0].pods: Forbidden: must populate the given metric source only"]
        );
        assert_eq!(
            with_metric(json!({"type": "Bogus"})),
            // kube reports an unknown type twice; the strategy drops the repeat.
            [
                "spec.metrics[0].type: Unsupported value: \"Bogus\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
                "spec.metrics[0].type: Unsupported value: \"Bogus\": supported values: \"ContainerResource\", \"External\", \"Object\", \"Pods\", \"Resource\"",
            ]
        );
        assert_eq!(
            with_metric(json!({"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "", "target": {"type": "Bogus", "averageUtilization": 50}}})),
            [
                "spec.metrics[0].containerResource.container: Required value: must specify a container",
                "spec.metrics[0].containerResource.target.type: Invalid value: \"Bogus\": must be either Utilization, Value, or AverageValue",
            ]
        );
    }

    /// Behavior cases of `TestValidateBehavior`.
    #[test]
    fn behavior_rules_follow_kubes_cases() {
        let with_behavior = |b: Value| {
            let mut spec = base_spec();
            spec["behavior"] = b;
            messages(&validate(&hpa(spec)))
        };
        assert_eq!(
            with_behavior(json!({"scaleUp": {"stabilizationWindowSeconds": 3601, "selectPolicy": "Max", "policies": [{"type": "Pods", "value": 1, "periodSeconds": 1801}]}})),
            [
                "spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 3601: must be less than or equal to 3600",
                "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800",
            ]
        );
        assert_eq!(
            with_behavior(json!({"scaleDown": {"stabilizationWindowSeconds": -1, "selectPolicy": "Sideways", "policies": []}})),
            [
                "spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value: -1: must be greater than or equal to zero",
                "spec.behavior.scaleDown.selectPolicy: Unsupported value: \"Sideways\": supported values: \"Disabled\", \"Max\", \"Min\"",
                "spec.behavior.scaleDown.policies: Required value: must specify at least one Policy",
            ]
        );
        assert_eq!(
            with_behavior(json!({"scaleDown": {"policies": [{"type": "Repeat", "value": 0, "periodSeconds": 0}]}})),
            [
                "spec.behavior.scaleDown.policies[0].type: Unsupported value: \"Repeat\": supported values: \"Percent\", \"Pods\"",
                "spec.behavior.scaleDown.policies[0].value: Invalid value: 0: must be greater than zero",
                "spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value: 0: must be greater than zero",
            ]
        );
    }

    #[test]
    fn status_updates_keep_the_spec_and_check_the_counters() {
        let mut old = hpa(base_spec());
        s().default(&mut old);
        s().prepare_for_create(&mut old);
        let mut new = old.clone();
        new["spec"]["maxReplicas"] = json!(50);
        new["status"] = json!({"currentReplicas": -1, "desiredReplicas": 2});
        s().prepare_for_status_update(&mut new, &old);
        assert_eq!(new["spec"]["maxReplicas"], 5);
        assert_eq!(
            messages(&s().validate_update(&new, &old)),
            ["status.currentReplicas: Invalid value: -1: must be greater than or equal to 0"]
        );
        let mut zero = old.clone();
        zero["status"] = json!({"currentReplicas": 0, "desiredReplicas": 2});
        s().prepare_for_status_update(&mut zero, &old);
        assert_eq!(
            zero["status"],
            json!({"desiredReplicas": 2, "currentMetrics": null})
        );
        let mut full = old.clone();
        full["status"] = json!({"desiredReplicas": 3});
        s().prepare_for_update(&mut full, &old);
        assert_eq!(full["status"], old["status"]);
    }
}
