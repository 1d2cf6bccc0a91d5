//! `metav1.Condition` lists: `ValidateConditions` / `ValidateCondition` of
//! `k8s.io/apimachinery/pkg/apis/meta/v1/validation`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::meta::is_qualified_name;
use super::FieldError;

const MAX_REASON_LEN: usize = 1024;
const MAX_MESSAGE_LEN: usize = 32 * 1024;
const STATUSES: &[&str] = &["False", "True", "Unknown"];

/// `isValidConditionReason`: `[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?`.
fn reason_errors(reason: &str) -> Vec<String> {
    let b = reason.as_bytes();
    let inner_ok = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'_' | b',' | b':');
    let valid = b.first().is_some_and(u8::is_ascii_alphabetic)
        && b.iter().all(inner_ok)
        && b.last()
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
    if valid {
        return Vec::new();
    }
    vec!["a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')".to_string()]
}

/// `ValidateConditions` of the list at `path` (e.g. `status.conditions`).
pub(crate) fn validate_conditions(conditions: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, c) in conditions
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let p = format!("{path}[{i}]");
        let str_of = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("");
        let ty = str_of("type");
        if !seen.insert(ty.to_string()) {
            errs.push(FieldError::duplicate(format!("{p}.type"), &Value::from(ty)));
        }
        for m in is_qualified_name(ty) {
            errs.push(FieldError::invalid(
                format!("{p}.type"),
                &Value::from(ty),
                &m,
            ));
        }
        let status = str_of("status");
        if !STATUSES.contains(&status) {
            errs.push(FieldError::not_supported(
                format!("{p}.status"),
                &Value::from(status),
                STATUSES,
            ));
        }
        if let Some(g) = c.get("observedGeneration").and_then(Value::as_i64) {
            if g < 0 {
                errs.push(FieldError::invalid(
                    format!("{p}.observedGeneration"),
                    &Value::from(g),
                    "must be greater than or equal to zero",
                ));
            }
        }
        if str_of("lastTransitionTime").is_empty() {
            errs.push(FieldError::required(
                format!("{p}.lastTransitionTime"),
                "must be set",
            ));
        }
        let reason = str_of("reason");
        if reason.is_empty() {
            errs.push(FieldError::required(format!("{p}.reason"), "must be set"));
        } else {
            for m in reason_errors(reason) {
                errs.push(FieldError::invalid(
                    format!("{p}.reason"),
                    &Value::from(reason),
                    &m,
                ));
            }
            if reason.len() > MAX_REASON_LEN {
                errs.push(FieldError::too_long(format!("{p}.reason"), MAX_REASON_LEN));
            }
        }
        if str_of("message").len() > MAX_MESSAGE_LEN {
            errs.push(FieldError::too_long(
                format!("{p}.message"),
                MAX_MESSAGE_LEN,
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Cases of `TestValidateConditions` (apimachinery meta/v1 validation).
    #[test]
    fn conditions_need_type_status_reason_and_transition_time() {
        let good = json!([{"type": "DisruptionAllowed", "status": "True", "reason": "SufficientPods",
            "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": 1}]);
        assert!(validate_conditions(Some(&good), "status.conditions").is_empty());
        let bad = json!([
            {"type": "A", "status": "Maybe", "reason": "1bad", "lastTransitionTime": "2024-01-01T00:00:00Z", "observedGeneration": -1},
            {"type": "A", "status": "True"}
        ]);
        let errs: Vec<String> = validate_conditions(Some(&bad), "status.conditions")
            .iter()
            .map(|e| e.field.clone())
            .collect();
        assert_eq!(
            errs,
            [
                "status.conditions[0].status",
                "status.conditions[0].observedGeneration",
                "status.conditions[0].reason",
                "status.conditions[1].type",
                "status.conditions[1].lastTransitionTime",
                "status.conditions[1].reason",
            ]
        );
    }
}
