//! The checks workload kinds share: `ValidatePodTemplateSpecForReplicaSet` / `ForRC`, apps/v1
//! selectors, non-negative counts and replica-count status.

use rkcm_labels::validation::is_valid_percent;
use serde_json::{json, Value};

use crate::meta::validate_nonnegative;
use crate::object::{get, get_i64, string_map};
use crate::podspec::validate_pod_template;
use crate::selector::{validate_label_selector, LabelSelector};
use crate::FieldError;

/// `ValidatePodTemplateSpecForReplicaSet` / `ValidatePodTemplateSpecForRC`: the template is
/// required, matches a non-empty selector, is a valid pod template, restarts `Always` and has
/// no `activeDeadlineSeconds`. `owner` names the kind in the last message.
pub(crate) fn validate_template(
    template: Option<&Value>,
    selector: &LabelSelector,
    path: &str,
    owner: &str,
) -> Vec<FieldError> {
    let Some(template) = template.filter(|t| !t.is_null()) else {
        return vec![FieldError::required(path, "")];
    };
    let mut errs = Vec::new();
    let labels_value = get(template, &["metadata", "labels"]);
    if !selector.is_empty() && !selector.matches(&string_map(labels_value)) {
        errs.push(FieldError::invalid(
            format!("{path}.metadata.labels"),
            labels_value.unwrap_or(&Value::Null),
            "`selector` does not match template `labels`",
        ));
    }
    errs.extend(validate_pod_template(Some(template), path));
    let restart = get(template, &["spec", "restartPolicy"]);
    if restart.and_then(Value::as_str) != Some("Always") {
        errs.push(FieldError::not_supported(
            format!("{path}.spec.restartPolicy"),
            restart.unwrap_or(&Value::Null),
            &["Always"],
        ));
    }
    if get(template, &["spec", "activeDeadlineSeconds"]).is_some_and(|v| !v.is_null()) {
        errs.push(FieldError::forbidden(
            format!("{path}.spec.activeDeadlineSeconds"),
            &format!("activeDeadlineSeconds in {owner} is not Supported"),
        ));
    }
    errs
}

/// The selector and template checks of `ValidateDeploymentSpec` / `ValidateReplicaSetSpec`
/// (apps/v1 `LabelSelector`s). kube says "deployment" for replica sets too.
pub(crate) fn validate_apps_selector_and_template(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let selector = get(obj, &["spec", "selector"]).filter(|v| !v.is_null());
    match selector {
        None => errs.push(FieldError::required("spec.selector", "")),
        Some(sel) => {
            errs.extend(validate_label_selector(Some(sel), "spec.selector"));
            let count = |k: &str| {
                sel.get(k)
                    .map(|v| match v {
                        Value::Object(m) => m.len(),
                        Value::Array(a) => a.len(),
                        _ => 0,
                    })
                    .unwrap_or(0)
            };
            if count("matchLabels") + count("matchExpressions") == 0 {
                errs.push(FieldError::invalid(
                    "spec.selector",
                    sel,
                    "empty selector is invalid for deployment",
                ));
            }
        }
    }
    match LabelSelector::from_json(selector) {
        Ok(s) => errs.extend(validate_template(
            get(obj, &["spec", "template"]),
            &s,
            "spec.template",
            "ReplicaSet",
        )),
        Err(_) => errs.push(FieldError::invalid(
            "spec.selector",
            selector.unwrap_or(&Value::Null),
            "invalid label selector",
        )),
    }
    errs
}

/// A percentage (`25%`) as its number, if the value is a valid percent string.
pub(crate) fn percent(v: &Value) -> Option<i64> {
    let s = v.as_str()?;
    let digits = s.strip_suffix('%')?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// `ValidatePositiveIntOrPercent`: a non-negative integer or a valid percent string.
pub(crate) fn validate_int_or_percent(v: Option<&Value>, path: &str) -> Vec<FieldError> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(_)) if percent(v.unwrap_or(&Value::Null)).is_some() => Vec::new(),
        Some(s @ Value::String(text)) => is_valid_percent(text)
            .iter()
            .map(|m| FieldError::invalid(path, s, m))
            .collect(),
        Some(n @ Value::Number(_)) => validate_nonnegative(Some(n), path),
        Some(other) => vec![FieldError::invalid(
            path,
            other,
            "must be an integer or percentage (e.g '5%')",
        )],
    }
}

/// `getIntOrPercentValue`: the number of an integer or a valid percentage, else 0.
pub(crate) fn int_or_percent_value(v: Option<&Value>) -> i64 {
    v.and_then(|v| percent(v).or_else(|| v.as_i64()))
        .unwrap_or(0)
}

/// `IsNotMoreThan100Percent`.
pub(crate) fn validate_not_over_100_percent(v: Option<&Value>, path: &str) -> Vec<FieldError> {
    match v {
        Some(value) if percent(value).is_some_and(|p| p > 100) => vec![FieldError::invalid(
            path,
            value,
            "must not be greater than 100%",
        )],
        _ => Vec::new(),
    }
}

/// `ValidateNonnegativeField` of `spec.replicas` and `spec.minReadySeconds`.
pub(crate) fn validate_counts(obj: &Value) -> Vec<FieldError> {
    let mut errs = validate_nonnegative(get(obj, &["spec", "replicas"]), "spec.replicas");
    errs.extend(validate_nonnegative(
        get(obj, &["spec", "minReadySeconds"]),
        "spec.minReadySeconds",
    ));
    errs
}

/// Replica-count status validation (`ValidateReplicaSetStatus`, `ValidateDeploymentStatus`,
/// `ValidateReplicationControllerStatus`): counters are non-negative; `bounded` counters do not
/// exceed `status.replicas`; `availableReplicas` does not exceed `readyReplicas` (the detail
/// differs between kinds).
pub(crate) fn validate_replica_status(
    obj: &Value,
    counters: &[&str],
    bounded: &[&str],
    available_over_ready: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for c in counters {
        errs.extend(validate_nonnegative(
            get(obj, &["status", c]),
            &format!("status.{c}"),
        ));
    }
    let n = |c: &str| get_i64(obj, &["status", c]).unwrap_or(0);
    let replicas = n("replicas");
    for c in bounded {
        if n(c) > replicas {
            errs.push(FieldError::invalid(
                format!("status.{c}"),
                &json!(n(c)),
                "cannot be greater than status.replicas",
            ));
        }
    }
    if n("availableReplicas") > n("readyReplicas") {
        errs.push(FieldError::invalid(
            "status.availableReplicas",
            &json!(n("availableReplicas")),
            available_over_ready,
        ));
    }
    errs
}

/// `status.collisionCount` may not be decremented (`IsDecremented`).
pub(crate) fn validate_collision_count(new: &Value, old: &Value) -> Vec<FieldError> {
    let new_c = get_i64(new, &["status", "collisionCount"]);
    let old_c = get_i64(old, &["status", "collisionCount"]);
    match (new_c, old_c) {
        (n, Some(o)) if n.unwrap_or(0) < o => vec![FieldError::invalid(
            "status.collisionCount",
            &json!(n.unwrap_or(0)),
            "cannot be decremented",
        )],
        _ => Vec::new(),
    }
}
