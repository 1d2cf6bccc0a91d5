//! PodDisruptionBudgets: `minAvailable`/`maxUnavailable` (exclusive, int or percent), the
//! selector, `unhealthyPodEvictionPolicy`, the zero status of a new budget and status checks.
//!
//! Mirrors `pkg/registry/policy/poddisruptionbudget/strategy.go` and
//! `pkg/apis/policy/validation` (`ValidatePodDisruptionBudgetSpec`,
//! `ValidatePodDisruptionBudgetStatusUpdate`).

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::hooked::{HookedStrategy, Hooks};
use super::meta::{is_valid_label_value, validate_nonnegative};
use super::object::{get, object_mut};
use super::selector::validate_label_selector;
use super::FieldError;

/// `supportedUnhealthyPodEvictionPolicies`, sorted as `sets.String.List()`.
const UNHEALTHY_POD_EVICTION_POLICIES: &[&str] = &["AlwaysAllow", "IfHealthyBudget"];

/// The counters of `PodDisruptionBudgetStatus` that have no `omitempty` in Go: a budget
/// always shows them, as 0 until the disruption controller fills them.
const STATUS_COUNTERS: &[&str] = &[
    "disruptionsAllowed",
    "currentHealthy",
    "desiredHealthy",
    "expectedPods",
];

/// Renders an `intstr.IntOrString` as `field.Error` does (`%#v`; the type has no value-receiver
/// `String()`), e.g. `intstr.IntOrString{Type:1, IntVal:0, StrVal:"5x"}`.
pub(crate) fn render_int_or_string(v: &Value) -> String {
    match v {
        Value::String(s) => format!("intstr.IntOrString{{Type:1, IntVal:0, StrVal:{s:?}}}"),
        Value::Number(n) => format!("intstr.IntOrString{{Type:0, IntVal:{n}, StrVal:\"\"}}"),
        other => other.to_string(),
    }
}

/// The number of a percent string (`IsValidPercent`: `[0-9]+%`).
fn percent(s: &str) -> Option<i64> {
    let digits = s.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Too many digits for an i64 is still "more than 100%".
    Some(digits.parse().unwrap_or(i64::MAX))
}

/// `ValidatePositiveIntOrPercent` and `IsNotMoreThan100Percent` of apps validation.
pub(crate) fn validate_int_or_percent(v: Option<&Value>, path: &str) -> Vec<FieldError> {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return Vec::new();
    };
    let invalid = |detail: &str| FieldError {
        field: path.to_string(),
        kind: super::FieldErrorKind::Invalid,
        message: format!("Invalid value: {}: {detail}", render_int_or_string(v)),
    };
    match v {
        Value::String(s) => match percent(s) {
            None => vec![invalid(
                "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
            )],
            Some(p) if p > 100 => vec![FieldError::invalid(path, v, "must not be greater than 100%")],
            Some(_) => Vec::new(),
        },
        Value::Number(_) => validate_nonnegative(Some(v), path),
        _ => vec![invalid("must be an integer or percentage (e.g '5%')")],
    }
}

/// `SetDefaults_PodDisruptionBudget` does not exist for policy/v1; the only defaulting is
/// that of the status counters, which Go's non-pointer ints always carry.
fn fill_status_counters(obj: &mut Value) {
    let Some(status) = object_mut(obj, &["status"]) else {
        return;
    };
    for counter in STATUS_COUNTERS {
        match status.get(*counter) {
            None | Some(Value::Null) => {
                status.insert(counter.to_string(), json!(0));
            }
            Some(_) => {}
        }
    }
}

/// `ValidateLabelSelector` with `AllowInvalidLabelValueInSelector` when `allow_invalid_values`:
/// the values of `matchExpressions` are then not checked (keys, operators and `matchLabels`
/// still are).
pub(crate) fn validate_selector(
    selector: Option<&Value>,
    path: &str,
    allow_invalid_values: bool,
) -> Vec<FieldError> {
    if !allow_invalid_values {
        return validate_label_selector(selector, path);
    }
    let mut tolerant = selector.cloned().unwrap_or(Value::Null);
    if let Some(exprs) = tolerant
        .get_mut("matchExpressions")
        .and_then(Value::as_array_mut)
    {
        for values in exprs
            .iter_mut()
            .filter_map(|e| e.get_mut("values"))
            .filter_map(Value::as_array_mut)
        {
            for v in values.iter_mut() {
                if v.as_str()
                    .is_some_and(|s| !is_valid_label_value(s).is_empty())
                {
                    // An empty value is always a valid label value.
                    *v = json!("");
                }
            }
        }
    }
    validate_label_selector(Some(&tolerant), path)
}

/// `hasInvalidLabelValueInLabelSelector`-style check: the stored selector does not validate,
/// so an update is allowed to keep its invalid label values.
pub(crate) fn selector_has_errors(selector: Option<&Value>) -> bool {
    !validate_label_selector(selector, "").is_empty()
}

/// `ValidatePodDisruptionBudgetSpec`; `allow_invalid_values` as `AllowInvalidLabelValueInSelector`.
fn validate_spec_with(obj: &Value, allow_invalid_values: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = get(obj, &["spec"]).unwrap_or(&Value::Null);
    let min = get(spec, &["minAvailable"]).filter(|v| !v.is_null());
    let max = get(spec, &["maxUnavailable"]).filter(|v| !v.is_null());
    if min.is_some() && max.is_some() {
        // kube renders the Go struct with `%#v`, pointer addresses included; the spec's JSON
        // is shown instead.
        errs.push(FieldError::invalid(
            "spec",
            spec,
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    errs.extend(validate_int_or_percent(min, "spec.minAvailable"));
    errs.extend(validate_int_or_percent(max, "spec.maxUnavailable"));
    errs.extend(validate_selector(
        get(spec, &["selector"]),
        "spec.selector",
        allow_invalid_values,
    ));
    if let Some(policy) = get(spec, &["unhealthyPodEvictionPolicy"]).filter(|v| !v.is_null()) {
        if !policy
            .as_str()
            .is_some_and(|p| UNHEALTHY_POD_EVICTION_POLICIES.contains(&p))
        {
            errs.push(FieldError::not_supported(
                "spec.unhealthyPodEvictionPolicy",
                policy,
                UNHEALTHY_POD_EVICTION_POLICIES,
            ));
        }
    }
    errs
}

/// `ValidatePodDisruptionBudget` of a new budget.
fn validate_spec(obj: &Value) -> Vec<FieldError> {
    validate_spec_with(obj, false)
}

/// `ValidatePodDisruptionBudgetStatusUpdate` for policy/v1: conditions and the counters.
fn validate_status(obj: &Value) -> Vec<FieldError> {
    let mut errs = super::conditions::validate_conditions(
        get(obj, &["status", "conditions"]),
        "status.conditions",
    );
    for counter in STATUS_COUNTERS {
        errs.extend(validate_nonnegative(
            get(obj, &["status", counter]),
            &format!("status.{counter}"),
        ));
    }
    errs
}

/// A full update validates the spec; a status update the status. Each preparation keeps the
/// other half as stored, so checking both covers both paths.
fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let tolerate = selector_has_errors(get(old, &["spec", "selector"]));
    let mut errs = validate_spec_with(new, tolerate);
    errs.extend(validate_status(new));
    errs
}

/// The strategy of PodDisruptionBudgets.
pub(crate) fn strategy(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(
        GenericStrategy::new(info).tracking_generation(),
        Hooks {
            // A new budget's status is Go's zero `PodDisruptionBudgetStatus`.
            prepare_create: fill_status_counters,
            prepare_status_update: |new, _old| fill_status_counters(new),
            validate: validate_spec,
            validate_update,
            ..Hooks::NONE
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn s() -> HookedStrategy {
        strategy(catalog::by_kind("policy/v1", "PodDisruptionBudget").expect("served"))
    }

    fn pdb(spec: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "default"}, "spec": spec})
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::message_with_field).collect()
    }

    #[test]
    fn a_new_budget_gets_generation_one_and_kubes_zero_status() {
        let mut obj = pdb(json!({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}));
        obj["status"] = json!({"disruptionsAllowed": 5});
        s().default(&mut obj);
        s().prepare_for_create(&mut obj);
        assert_eq!(obj["metadata"]["generation"], 1);
        assert_eq!(
            obj["status"],
            json!({"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0})
        );
        assert!(s().validate_create(&obj).is_empty());
    }

    /// `TestValidateMinAvailablePodDisruptionBudgetSpec` and
    /// `TestValidateMinAvailablePodAndMaxUnavailableDisruptionBudgetSpec`.
    #[test]
    fn min_available_and_max_unavailable_are_exclusive_ints_or_percents() {
        for ok in [json!(0), json!(10), json!("0%"), json!("100%")] {
            assert!(
                validate_spec(&pdb(json!({"minAvailable": ok.clone()}))).is_empty(),
                "{ok}"
            );
            assert!(
                validate_spec(&pdb(json!({"maxUnavailable": ok.clone()}))).is_empty(),
                "{ok}"
            );
        }
        let errs = validate_spec(&pdb(json!({"minAvailable": -1})));
        assert_eq!(
            messages(&errs),
            ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"]
        );
        let errs = validate_spec(&pdb(json!({"maxUnavailable": "101%"})));
        assert_eq!(
            messages(&errs),
            ["spec.maxUnavailable: Invalid value: \"101%\": must not be greater than 100%"]
        );
        let errs = validate_spec(&pdb(json!({"minAvailable": "1.1%"})));
        assert_eq!(
            messages(&errs),
            ["spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"1.1%\"}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"]
        );
        let errs = validate_spec(&pdb(json!({"minAvailable": 1, "maxUnavailable": "10%"})));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec");
        assert!(errs[0]
            .message
            .ends_with(": minAvailable and maxUnavailable cannot be both set"));
    }

    /// `TestValidateUnhealthyPodEvictionPolicyDisruptionBudgetSpec`.
    #[test]
    fn unhealthy_pod_eviction_policy_is_one_of_two_values() {
        for ok in ["IfHealthyBudget", "AlwaysAllow"] {
            assert!(validate_spec(&pdb(json!({"unhealthyPodEvictionPolicy": ok}))).is_empty());
        }
        let errs = validate_spec(&pdb(json!({"unhealthyPodEvictionPolicy": "Invalid"})));
        assert_eq!(
            messages(&errs),
            ["spec.unhealthyPodEvictionPolicy: Unsupported value: \"Invalid\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\""]
        );
    }

    #[test]
    fn the_selector_is_validated() {
        let errs = validate_spec(&pdb(json!({"selector": {"matchLabels": {"bad key": "x"}}})));
        assert_eq!(errs[0].field, "spec.selector.matchLabels");
    }

    /// `TestPodDisruptionBudgetStrategy` "invalid label value in selector" cases.
    #[test]
    fn stored_invalid_label_values_may_stay_on_update() {
        let selector = json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["bad value!"]}]});
        let obj = pdb(json!({"minAvailable": 1, "selector": selector}));
        assert!(!validate_spec(&obj).is_empty());
        let clean = pdb(json!({"minAvailable": 1}));
        assert!(!validate_update(&obj, &clean).is_empty());
        let mut newer = obj.clone();
        newer["spec"]["minAvailable"] = json!(2);
        assert!(
            validate_update(&newer, &obj).is_empty(),
            "{:?}",
            validate_update(&newer, &obj)
        );
    }

    /// `TestValidatePodDisruptionBudgetStatus` (policy/v1).
    #[test]
    fn status_counters_may_not_be_negative() {
        let old = {
            let mut o = pdb(json!({"minAvailable": 1}));
            s().prepare_for_create(&mut o);
            o
        };
        let mut new = old.clone();
        new["status"] = json!({"disruptionsAllowed": -1, "currentHealthy": 1, "desiredHealthy": -3, "expectedPods": 2});
        s().prepare_for_status_update(&mut new, &old);
        assert_eq!(
            messages(&s().validate_update(&new, &old)),
            [
                "status.disruptionsAllowed: Invalid value: -1: must be greater than or equal to 0",
                "status.desiredHealthy: Invalid value: -3: must be greater than or equal to 0",
            ]
        );
        let mut partial = old.clone();
        partial["status"] = json!({"observedGeneration": 1});
        s().prepare_for_status_update(&mut partial, &old);
        assert_eq!(partial["status"]["expectedPods"], 0);
    }

    #[test]
    fn spec_changes_bump_the_generation_and_keep_the_status() {
        let mut old = pdb(json!({"minAvailable": 1}));
        s().prepare_for_create(&mut old);
        old["status"]["expectedPods"] = json!(3);
        let mut new = pdb(json!({"minAvailable": 2}));
        new["metadata"]["generation"] = json!(1);
        s().prepare_for_update(&mut new, &old);
        assert_eq!(new["metadata"]["generation"], 2);
        assert_eq!(new["status"]["expectedPods"], 3);
        let mut status = old.clone();
        status["spec"]["minAvailable"] = json!(5);
        s().prepare_for_status_update(&mut status, &old);
        assert_eq!(status["spec"]["minAvailable"], 1);
        assert_eq!(status["metadata"]["generation"], 1);
    }
}
