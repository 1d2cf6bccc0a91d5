//! `metav1.LabelSelector` held as JSON: validation, matching and the canonical string form.
//!
//! Mirrors `k8s.io/apimachinery/pkg/apis/meta/v1/validation` (`ValidateLabelSelector`) and
//! `metav1.LabelSelectorAsSelector(...).String()`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::meta::{is_qualified_name, is_valid_label_value, validate_labels};
use super::FieldError;

/// A label selector converted for matching and rendering: a thin layer over
/// [`rkcm_labels::Selector`], the selector implementation the server shares with the runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelSelector {
    selector: rkcm_labels::Selector,
}

impl LabelSelector {
    /// `LabelSelectorAsSelector`: `None`/`null` selects nothing, `{}` everything. `Err` when
    /// the selector cannot be converted (not a selector, bad operator, missing values, invalid
    /// keys or values).
    pub fn from_json(selector: Option<&Value>) -> Result<Self, String> {
        let Some(sel) = selector.filter(|v| !v.is_null()) else {
            return Ok(LabelSelector {
                selector: rkcm_labels::Selector::nothing(),
            });
        };
        let typed: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector =
            serde_json::from_value(sel.clone()).map_err(|e| e.to_string())?;
        rkcm_labels::Selector::from_label_selector(&typed)
            .map(|selector| LabelSelector { selector })
            .map_err(|e| e.to_string())
    }

    /// `labels.SelectorFromSet` of a map selector (replication controllers); an empty map
    /// selects everything.
    pub fn from_map(map: &BTreeMap<String, String>) -> Self {
        LabelSelector {
            selector: rkcm_labels::Selector::from_map(map),
        }
    }

    /// Whether the selector selects everything (`Selector.Empty()`).
    pub fn is_empty(&self) -> bool {
        self.selector.is_empty()
    }

    /// Whether `labels` are selected.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.selector.matches(labels)
    }

    /// The canonical string form (`Selector.String()`): requirements sorted by key,
    /// `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, joined by commas.
    pub fn render(&self) -> String {
        self.selector.to_string()
    }
}

/// `ValidateLabelSelector` of the selector at `path` (e.g. `spec.selector`).
pub fn validate_label_selector(selector: Option<&Value>, path: &str) -> Vec<FieldError> {
    validate_label_selector_with(selector, path, false)
}

/// `ValidateLabelSelector` with `LabelSelectorValidationOptions`: when
/// `allow_invalid_label_values`, the values of `matchExpressions` are not checked as label
/// values (kube keeps accepting objects stored before values were validated).
pub fn validate_label_selector_with(
    selector: Option<&Value>,
    path: &str,
    allow_invalid_label_values: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(sel) = selector.filter(|v| !v.is_null()) else {
        return errs;
    };
    errs.extend(validate_labels(
        sel.get("matchLabels"),
        &format!("{path}.matchLabels"),
    ));
    let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) else {
        return errs;
    };
    for (i, e) in exprs.iter().enumerate() {
        let p = format!("{path}.matchExpressions[{i}]");
        let values: Vec<&Value> = e
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let op = e
            .get("operator")
            .cloned()
            .unwrap_or(Value::String(String::new()));
        match op.as_str() {
            Some("In") | Some("NotIn") => {
                if values.is_empty() {
                    errs.push(FieldError::required(
                        format!("{p}.values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            Some("Exists") | Some("DoesNotExist") => {
                if !values.is_empty() {
                    errs.push(FieldError::forbidden(
                        format!("{p}.values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            _ => errs.push(FieldError::invalid(
                format!("{p}.operator"),
                &op,
                "not a valid selector operator",
            )),
        }
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        for m in is_qualified_name(key) {
            errs.push(FieldError::invalid(
                format!("{p}.key"),
                &Value::String(key.to_string()),
                &m,
            ));
        }
        if allow_invalid_label_values {
            continue;
        }
        for (j, v) in values.iter().enumerate() {
            for m in is_valid_label_value(v.as_str().unwrap_or("")) {
                errs.push(FieldError::invalid(format!("{p}.values[{j}]"), v, &m));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use rkcm_labels::set as labels;

    #[test]
    fn selectors_render_sorted_by_key_with_sorted_values() {
        let sel = json!({
            "matchLabels": {"tier": "web", "app": "nginx"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "zone", "operator": "DoesNotExist"},
                {"key": "canary", "operator": "Exists"},
                {"key": "b", "operator": "NotIn", "values": ["x"]}
            ]
        });
        let s = LabelSelector::from_json(Some(&sel)).expect("valid");
        assert_eq!(
            s.render(),
            "app=nginx,b notin (x),canary,env in (dev,prod),tier=web,!zone"
        );
    }

    #[test]
    fn nil_selects_nothing_and_empty_selects_everything() {
        let l = labels(&[("a", "b")]);
        assert!(!LabelSelector::from_json(None).expect("valid").matches(&l));
        let empty = LabelSelector::from_json(Some(&json!({}))).expect("valid");
        assert!(empty.is_empty());
        assert!(empty.matches(&l));
    }

    #[test]
    fn requirements_match_as_kube_does() {
        let sel = json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]});
        let s = LabelSelector::from_json(Some(&sel)).expect("valid");
        assert!(s.matches(&labels(&[("app", "web")])));
        assert!(s.matches(&labels(&[("app", "web"), ("env", "prod")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("env", "dev")])));
        assert!(!s.matches(&labels(&[("app", "db")])));
    }

    #[test]
    fn invalid_operators_and_values_are_reported_per_field() {
        let sel = json!({"matchExpressions": [
            {"key": "a", "operator": "In"},
            {"key": "b", "operator": "Exists", "values": ["x"]},
            {"key": "c", "operator": "Like", "values": ["x"]}
        ]});
        let errs = validate_label_selector(Some(&sel), "spec.selector");
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.selector.matchExpressions[0].values",
                "spec.selector.matchExpressions[1].values",
                "spec.selector.matchExpressions[2].operator"
            ]
        );
        assert!(LabelSelector::from_json(Some(&sel)).is_err());
    }
}
