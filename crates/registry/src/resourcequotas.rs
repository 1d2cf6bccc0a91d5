//! ResourceQuotas: the checks of `ValidateResourceQuota` (resource names and quantities of
//! `spec.hard`, `status.hard` and `status.used`; scopes and the scope selector, and which
//! resources a scope may limit), immutable scopes, and the spec/status split of
//! `pkg/registry/core/resourcequota/strategy.go` (no generation).

use std::collections::BTreeSet;

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::hooked::{nothing, nothing_on_update, HookedStrategy, Hooks};
use super::object::{get, get_str};
use super::resources::{
    default_resource_list, entries, is_standard_quota_resource_name, validate_quantity_value,
    validate_quota_resource_name,
};
use super::{FieldError, FieldErrorKind};

/// `standardResourceQuotaScopes`. `VolumeAttributesClass` is left out: its feature gate is off
/// by default in 1.33.
const STANDARD_SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// Scopes that may not be combined.
const CONFLICTING_SCOPES: [(&str, &str); 2] = [
    ("BestEffort", "NotBestEffort"),
    ("Terminating", "NotTerminating"),
];

/// `IsResourceQuotaScopeValidForResource`.
fn scope_valid_for_resource(scope: &str, resource: &str) -> bool {
    const POD_COMPUTE: &[&str] = &[
        "cpu",
        "memory",
        "limits.cpu",
        "limits.memory",
        "requests.cpu",
        "requests.memory",
    ];
    match scope {
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => resource == "pods" || POD_COMPUTE.contains(&resource),
        "BestEffort" => resource == "pods",
        _ => true,
    }
}

/// `SetDefaults_ResourceList` on the quota's lists.
fn default_quota(obj: &mut Value) {
    for (section, list) in [("spec", "hard"), ("status", "hard"), ("status", "used")] {
        default_resource_list(obj.get_mut(section).and_then(|s| s.get_mut(list)));
    }
}

/// The names of `spec.scopes`, as strings.
fn scopes(obj: &Value) -> Vec<String> {
    get(obj, &["spec", "scopes"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| s.as_str().unwrap_or_default().to_string())
        .collect()
}

/// A `[]core.ResourceQuotaScope` as Go's `%#v` prints it in kube's messages.
fn render_scopes(scopes: &[String]) -> String {
    let quoted: Vec<String> = scopes.iter().map(|s| format!("{s:?}")).collect();
    format!("[]core.ResourceQuotaScope{{{}}}", quoted.join(", "))
}

fn invalid_rendered(path: &str, rendered: &str, detail: &str) -> FieldError {
    FieldError {
        field: path.to_string(),
        kind: FieldErrorKind::Invalid,
        message: format!("Invalid value: {rendered}: {detail}"),
    }
}

/// The resource names of `spec.hard`, sorted as `sets.List` sorts them.
fn hard_names(obj: &Value) -> BTreeSet<String> {
    entries(get(obj, &["spec", "hard"]))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Names and quantities of one resource list.
fn validate_list(obj: &Value, section: &str, list: &str, errs: &mut Vec<FieldError>) {
    for (name, q) in entries(get(obj, &[section, list])) {
        let path = format!("{section}.{list}[{name}]");
        errs.extend(validate_quota_resource_name(name, &path));
        errs.extend(validate_quantity_value(name, q, &path));
    }
}

/// `validateResourceQuotaScopes`.
fn validate_scopes(obj: &Value, errs: &mut Vec<FieldError>) {
    let scopes = scopes(obj);
    if scopes.is_empty() {
        return;
    }
    let rendered = render_scopes(&scopes);
    let hard = hard_names(obj);
    for scope in &scopes {
        if !STANDARD_SCOPES.contains(&scope.as_str()) {
            errs.push(invalid_rendered(
                "spec.scopes",
                &rendered,
                "unsupported scope",
            ));
        }
        for k in &hard {
            if is_standard_quota_resource_name(k) && !scope_valid_for_resource(scope, k) {
                errs.push(invalid_rendered(
                    "spec.scopes",
                    &rendered,
                    "unsupported scope applied to resource",
                ));
            }
        }
    }
    for (a, b) in CONFLICTING_SCOPES {
        if scopes.iter().any(|s| s == a) && scopes.iter().any(|s| s == b) {
            errs.push(invalid_rendered(
                "spec.scopes",
                &rendered,
                "conflicting scopes",
            ));
        }
    }
}

/// `validateScopedResourceSelectorRequirement`. The selector itself, where kube prints the
/// Go struct, is shown as JSON.
fn validate_scope_selector(obj: &Value, errs: &mut Vec<FieldError>) {
    let Some(selector) = get(obj, &["spec", "scopeSelector"]).filter(|v| !v.is_null()) else {
        return;
    };
    let path = "spec.scopeSelector.matchExpressions";
    let hard = hard_names(obj);
    let mut seen = BTreeSet::new();
    let exprs = get(selector, &["matchExpressions"]).and_then(Value::as_array);
    for req in exprs.into_iter().flatten() {
        let scope = get_str(req, &["scopeName"]).unwrap_or("");
        let operator = get_str(req, &["operator"]).unwrap_or("");
        let values = get(req, &["values"])
            .and_then(Value::as_array)
            .filter(|v| !v.is_empty());
        if !STANDARD_SCOPES.contains(&scope) {
            errs.push(FieldError::invalid(
                format!("{path}.scopeName"),
                &json!(scope),
                "unsupported scope",
            ));
        }
        for k in &hard {
            if is_standard_quota_resource_name(k) && !scope_valid_for_resource(scope, k) {
                errs.push(FieldError::invalid(
                    path,
                    selector,
                    "unsupported scope applied to resource",
                ));
            }
        }
        if matches!(
            scope,
            "BestEffort"
                | "NotBestEffort"
                | "Terminating"
                | "NotTerminating"
                | "CrossNamespacePodAffinity"
        ) && operator != "Exists"
        {
            errs.push(FieldError::invalid(
                format!("{path}.operator"),
                &json!(operator),
                "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
            ));
        }
        match operator {
            "In" | "NotIn" => {
                if values.is_none() {
                    errs.push(FieldError::required(
                        format!("{path}.values"),
                        "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if let Some(values) = values {
                    errs.push(FieldError::invalid(
                        format!("{path}.values"),
                        &Value::Array(values.clone()),
                        "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                    ));
                }
            }
            _ => errs.push(FieldError::invalid(
                format!("{path}.operator"),
                &json!(operator),
                "not a valid selector operator",
            )),
        }
        seen.insert(scope);
    }
    for (a, b) in CONFLICTING_SCOPES {
        if seen.contains(a) && seen.contains(b) {
            errs.push(FieldError::invalid(path, selector, "conflicting scopes"));
        }
    }
}

/// `ValidateResourceQuotaSpec`.
fn validate_spec(obj: &Value, errs: &mut Vec<FieldError>) {
    validate_list(obj, "spec", "hard", errs);
    validate_scopes(obj, errs);
    validate_scope_selector(obj, errs);
}

/// `ValidateResourceQuota` without the metadata.
fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_spec(obj, &mut errs);
    validate_list(obj, "status", "hard", &mut errs);
    validate_list(obj, "status", "used", &mut errs);
    errs
}

/// `ValidateResourceQuotaUpdate` (and the status lists `ValidateResourceQuotaStatusUpdate`
/// checks; a full update keeps the old status, a status update the old spec).
fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_spec(new, &mut errs);
    let (new_scopes, old_scopes) = (scopes(new), scopes(old));
    let set = |s: &[String]| s.iter().cloned().collect::<BTreeSet<String>>();
    if set(&new_scopes) != set(&old_scopes) {
        errs.push(invalid_rendered(
            "spec.scopes",
            &render_scopes(&new_scopes),
            "field is immutable",
        ));
    }
    validate_list(new, "status", "hard", &mut errs);
    validate_list(new, "status", "used", &mut errs);
    errs
}

static HOOKS: Hooks = Hooks {
    default: default_quota,
    prepare_create: nothing,
    prepare_update: nothing_on_update,
    prepare_status_update: nothing_on_update,
    validate,
    validate_update,
    fields: &[],
};

/// The strategy of resource quotas: the generic spec/status split, no generation.
pub(crate) fn strategy(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(GenericStrategy::new(info), HOOKS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn s() -> HookedStrategy {
        strategy(catalog::by_kind("v1", "ResourceQuota").expect("served"))
    }

    fn quota(spec: Value) -> Value {
        json!({"metadata": {"name": "q", "namespace": "default"}, "spec": spec})
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::message_with_field).collect()
    }

    #[test]
    fn quotas_are_validated_as_kube_does() {
        // Cases of TestValidateResourceQuota (validation_test.go).
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (
                json!({"hard": {"cpu": "100", "memory": "10000", "requests.cpu": "100",
                    "pods": "5", "count/deployments.apps": "3", "requests.storage": "10Gi",
                    "example.com/gpu": "2"}}),
                vec![],
            ),
            (
                json!({"hard": {"cpu": "-10"}}),
                vec!["spec.hard[cpu]: Invalid value: \"-10\": must be greater than or equal to 0"],
            ),
            (
                json!({"hard": {"pods": "1500m"}}),
                vec!["spec.hard[pods]: Invalid value: 1500m: must be an integer"],
            ),
            (
                json!({"hard": {"storage": "10Gi"}}),
                vec!["spec.hard[storage]: Invalid value: \"storage\": must be a standard resource for quota"],
            ),
            (
                json!({"hard": {"bad/bad/bad": "1"}}),
                vec!["spec.hard[bad/bad/bad]: Invalid value: \"bad/bad/bad\": a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"],
            ),
            (
                json!({"hard": {"pods": "1"}, "scopes": ["BadScope"]}),
                vec!["spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BadScope\"}: unsupported scope"],
            ),
            (
                json!({"hard": {"cpu": "1"}, "scopes": ["BestEffort"]}),
                vec!["spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\"}: unsupported scope applied to resource"],
            ),
            (
                json!({"hard": {"pods": "1"}, "scopes": ["BestEffort", "NotBestEffort"]}),
                vec!["spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\"}: conflicting scopes"],
            ),
            (
                json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}),
                vec![],
            ),
            (
                json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In"}]}}),
                vec!["spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"],
            ),
            (
                json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
                    {"scopeName": "Terminating", "operator": "In", "values": ["x"]}]}}),
                vec!["spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"],
            ),
            (
                json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "Exists", "values": ["x"]}]}}),
                vec!["spec.scopeSelector.matchExpressions.values: Invalid value: [\"x\"]: must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"],
            ),
            (
                json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "Gt", "values": ["x"]}]}}),
                vec!["spec.scopeSelector.matchExpressions.operator: Invalid value: \"Gt\": not a valid selector operator"],
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(
                messages(&s().validate_create(&quota(spec.clone()))),
                want,
                "{spec}"
            );
        }
    }

    #[test]
    fn scopes_are_immutable() {
        let old = quota(json!({"hard": {"pods": "1"}, "scopes": ["BestEffort"]}));
        let mut new = old.clone();
        new["spec"]["scopes"] = json!(["NotBestEffort"]);
        assert_eq!(
            messages(&s().validate_update(&new, &old)),
            ["spec.scopes: Invalid value: []core.ResourceQuotaScope{\"NotBestEffort\"}: field is immutable"]
        );
    }

    #[test]
    fn status_and_spec_are_written_through_their_own_endpoints() {
        let mut obj = quota(json!({"hard": {"pods": 10}}));
        obj["status"] = json!({"hard": {"pods": "99"}});
        s().default(&mut obj);
        s().prepare_for_create(&mut obj);
        assert_eq!(obj["status"], json!({}));
        assert_eq!(obj["spec"]["hard"]["pods"], "10");
        assert_eq!(obj["metadata"].get("generation"), None);

        let mut spec_update = obj.clone();
        spec_update["spec"]["hard"]["pods"] = json!("20");
        spec_update["status"] = json!({"used": {"pods": "1"}});
        s().prepare_for_update(&mut spec_update, &obj);
        assert_eq!(spec_update["status"], json!({}));
        assert_eq!(spec_update["spec"]["hard"]["pods"], "20");
        assert_eq!(spec_update["metadata"].get("generation"), None);

        let mut status_update = obj.clone();
        status_update["spec"]["hard"]["pods"] = json!("30");
        status_update["status"] = json!({"hard": {"pods": "10"}, "used": {"pods": 3}});
        s().prepare_for_status_update(&mut status_update, &obj);
        assert_eq!(status_update["spec"]["hard"]["pods"], "10");
        assert_eq!(status_update["status"]["used"]["pods"], "3");

        let mut bad_status = obj.clone();
        bad_status["status"] = json!({"used": {"pods": "-1"}});
        assert_eq!(
            messages(&s().validate_update(&bad_status, &obj)),
            ["status.used[pods]: Invalid value: \"-1\": must be greater than or equal to 0"]
        );
    }
}
