//! `metav1.LabelSelector` held as JSON: validation, matching and the canonical string form.
//!
//! Mirrors `k8s.io/apimachinery/pkg/apis/meta/v1/validation` (`ValidateLabelSelector`) and
//! `metav1.LabelSelectorAsSelector(...).String()`.

use std::collections::BTreeMap;

use serde_json::Value;

use super::meta::{is_qualified_name, is_valid_label_value, validate_labels};
use super::FieldError;

/// One parsed requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Requirement {
    fn key(&self) -> &str {
        match self {
            Requirement::Equals(k, _)
            | Requirement::In(k, _)
            | Requirement::NotIn(k, _)
            | Requirement::Exists(k)
            | Requirement::DoesNotExist(k) => k,
        }
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        }
    }

    fn render(&self) -> String {
        fn values(vs: &[String]) -> String {
            let mut vs = vs.to_vec();
            vs.sort();
            vs.join(",")
        }
        match self {
            Requirement::Equals(k, v) => format!("{k}={v}"),
            Requirement::In(k, vs) => format!("{k} in ({})", values(vs)),
            Requirement::NotIn(k, vs) => format!("{k} notin ({})", values(vs)),
            Requirement::Exists(k) => k.clone(),
            Requirement::DoesNotExist(k) => format!("!{k}"),
        }
    }
}

/// A label selector converted for matching (`labels.Selector`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelSelector {
    /// `None` selects nothing (a nil selector); empty selects everything.
    requirements: Option<Vec<Requirement>>,
}

impl LabelSelector {
    /// `LabelSelectorAsSelector`: `None`/`null` selects nothing, `{}` everything. `Err` when
    /// the selector cannot be converted (bad operator, missing values).
    pub fn from_json(selector: Option<&Value>) -> Result<Self, String> {
        let Some(sel) = selector.filter(|v| !v.is_null()) else {
            return Ok(LabelSelector { requirements: None });
        };
        let Some(sel) = sel.as_object() else {
            return Err("a label selector must be an object".to_string());
        };
        let mut reqs = Vec::new();
        if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
            for (k, v) in ml {
                let v = v
                    .as_str()
                    .ok_or_else(|| format!("matchLabels value of {k} is not a string"))?;
                reqs.push(Requirement::Equals(k.clone(), v.to_string()));
            }
        }
        if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
            for e in exprs {
                let key = e
                    .get("key")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let values: Vec<String> = e
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default();
                let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
                let req = match op {
                    "In" | "NotIn" if values.is_empty() => {
                        return Err(format!("for '{op}' operator, values set can't be empty"))
                    }
                    "In" => Requirement::In(key, values),
                    "NotIn" => Requirement::NotIn(key, values),
                    "Exists" | "DoesNotExist" if !values.is_empty() => {
                        return Err(
                            "values set must be empty for exists and does not exist".to_string()
                        )
                    }
                    "Exists" => Requirement::Exists(key),
                    "DoesNotExist" => Requirement::DoesNotExist(key),
                    other => {
                        return Err(format!("{other:?} is not a valid label selector operator"))
                    }
                };
                reqs.push(req);
            }
        }
        // labels.Selector.Add sorts by key; equal keys keep their order here.
        reqs.sort_by(|a, b| a.key().cmp(b.key()));
        Ok(LabelSelector {
            requirements: Some(reqs),
        })
    }

    /// `labels.SelectorFromSet` of a map selector (replication controllers); an empty map
    /// selects everything.
    pub fn from_map(map: &BTreeMap<String, String>) -> Self {
        LabelSelector {
            requirements: Some(
                map.iter()
                    .map(|(k, v)| Requirement::Equals(k.clone(), v.clone()))
                    .collect(),
            ),
        }
    }

    /// Whether the selector selects everything (`Selector.Empty()`).
    pub fn is_empty(&self) -> bool {
        self.requirements.as_ref().is_some_and(Vec::is_empty)
    }

    /// Whether `labels` are selected.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match &self.requirements {
            None => false,
            Some(reqs) => reqs.iter().all(|r| r.matches(labels)),
        }
    }

    /// The canonical string form (`Selector.String()`): requirements sorted by key,
    /// `k=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, joined by commas.
    pub fn render(&self) -> String {
        match &self.requirements {
            None => String::new(),
            Some(reqs) => reqs
                .iter()
                .map(Requirement::render)
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

/// `ValidateLabelSelector` of the selector at `path` (e.g. `spec.selector`).
pub fn validate_label_selector(selector: Option<&Value>, path: &str) -> Vec<FieldError> {
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

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

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
