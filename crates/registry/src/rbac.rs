//! RBAC: rules of Roles and ClusterRoles, ClusterRole aggregation rules, and the role
//! reference and subjects of RoleBindings and ClusterRoleBindings.
//!
//! Mirrors `pkg/apis/rbac/validation` and `pkg/registry/rbac/{role,clusterrole,rolebinding,
//! clusterrolebinding}/strategy.go`. None of these kinds has a status or a generation.
//!
//! The escalation checks of kube's RBAC storage (`policybased`: a user may only create or
//! update a role granting what they hold, or bind a role they may `bind`) need the requesting
//! user and the authorizer: the write handlers run them ([`rkcm_server::auth::escalation`]).

use rkcm_apimachinery::catalog::ResourceInfo;
use serde_json::Value;

use super::generic::GenericStrategy;
use super::hooked::{HookedStrategy, Hooks};
use super::meta::name_is_dns_subdomain;
use super::object::{get, get_str};
use super::poddisruptionbudgets::{selector_has_errors, validate_selector};
use super::selector::LabelSelector;
use super::{FieldError, FieldErrorKind};

/// `rbac.GroupName`.
const GROUP: &str = "rbac.authorization.k8s.io";

/// RBAC objects are named by path segments (`ValidateRBACName` = `path.IsValidPathSegmentName`,
/// which ignores `prefix`): anything but `.`, `..` and names containing `/` or `%`, so
/// `system:controller:job` is valid.
pub(crate) fn name_is_path_segment(name: &str, _prefix: bool) -> Vec<String> {
    let mut errs = Vec::new();
    if name == "." || name == ".." {
        errs.push(format!("may not be '{name}'"));
    }
    for c in ["/", "%"] {
        if name.contains(c) {
            errs.push(format!("may not contain '{c}'"));
        }
    }
    errs
}

fn strings<'a>(rule: &'a Value, key: &str) -> Vec<&'a Value> {
    rule.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

/// `ValidatePolicyRule`.
fn validate_policy_rule(rule: &Value, namespaced: bool, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if strings(rule, "verbs").is_empty() {
        errs.push(FieldError::required(
            format!("{path}.verbs"),
            "verbs must contain at least one value",
        ));
    }
    let urls = strings(rule, "nonResourceURLs");
    let api_groups = strings(rule, "apiGroups");
    let resources = strings(rule, "resources");
    let resource_names = strings(rule, "resourceNames");
    if !urls.is_empty() {
        let urls_value = rule.get("nonResourceURLs").unwrap_or(&Value::Null);
        if namespaced {
            errs.push(FieldError::invalid(
                format!("{path}.nonResourceURLs"),
                urls_value,
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !api_groups.is_empty() || !resources.is_empty() || !resource_names.is_empty() {
            errs.push(FieldError::invalid(
                format!("{path}.nonResourceURLs"),
                urls_value,
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errs;
    }
    if api_groups.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if resources.is_empty() {
        errs.push(FieldError::required(
            format!("{path}.resources"),
            "resource rules must supply at least one resource",
        ));
    }
    errs
}

fn validate_rules(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, rule) in get(obj, &["rules"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        errs.extend(validate_policy_rule(
            rule,
            namespaced,
            &format!("rules[{i}]"),
        ));
    }
    errs
}

/// `ValidateRole` (after the metadata).
fn validate_role(obj: &Value) -> Vec<FieldError> {
    validate_rules(obj, true)
}

/// `ValidateClusterRole` (after the metadata): rules and the aggregation rule.
fn validate_cluster_role(obj: &Value) -> Vec<FieldError> {
    validate_cluster_role_with(obj, false)
}

/// `ValidateClusterRoleUpdate` (after the metadata): a stored role whose aggregation selectors
/// do not validate may keep invalid label values (`AllowInvalidLabelValueInSelector`).
fn validate_cluster_role_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let tolerate = strings(
        get(old, &["aggregationRule"]).unwrap_or(&Value::Null),
        "clusterRoleSelectors",
    )
    .into_iter()
    .any(|s| selector_has_errors(Some(s)));
    validate_cluster_role_with(new, tolerate)
}

fn validate_cluster_role_with(obj: &Value, allow_invalid_values: bool) -> Vec<FieldError> {
    let mut errs = validate_rules(obj, false);
    let Some(rule) = get(obj, &["aggregationRule"]).filter(|v| !v.is_null()) else {
        return errs;
    };
    let selectors = strings(rule, "clusterRoleSelectors");
    if selectors.is_empty() {
        errs.push(FieldError::required(
            "aggregationRule.clusterRoleSelectors",
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ));
    }
    for (i, selector) in selectors.into_iter().enumerate() {
        let path = format!("aggregationRule.clusterRoleSelectors[{i}]");
        errs.extend(validate_selector(
            Some(selector),
            &path,
            allow_invalid_values,
        ));
        if LabelSelector::from_json(Some(selector)).is_err() {
            errs.push(FieldError::invalid(
                path,
                &Value::Null,
                "invalid label selector.",
            ));
        }
    }
    errs
}

/// The role reference and subjects of a binding; `namespaced` for RoleBindings.
fn validate_binding(obj: &Value, namespaced: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let role_ref = get(obj, &["roleRef"]).unwrap_or(&Value::Null);
    let field = |k: &str| get_str(role_ref, &[k]).unwrap_or("");
    if field("apiGroup") != GROUP {
        errs.push(FieldError::not_supported(
            "roleRef.apiGroup",
            &Value::from(field("apiGroup")),
            &[GROUP],
        ));
    }
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&field("kind")) {
        errs.push(FieldError::not_supported(
            "roleRef.kind",
            &Value::from(field("kind")),
            kinds,
        ));
    }
    let name = field("name");
    if name.is_empty() {
        errs.push(FieldError::required("roleRef.name", ""));
    } else {
        for m in name_is_path_segment(name, false) {
            errs.push(FieldError::invalid("roleRef.name", &Value::from(name), &m));
        }
    }
    for (i, subject) in get(obj, &["subjects"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        errs.extend(validate_subject(
            subject,
            namespaced,
            &format!("subjects[{i}]"),
        ));
    }
    errs
}

/// `validateRoleBindingSubject`.
fn validate_subject(subject: &Value, namespaced: bool, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let field = |k: &str| get_str(subject, &[k]).unwrap_or("");
    let name = field("name");
    let api_group = field("apiGroup");
    if name.is_empty() {
        errs.push(FieldError::required(format!("{path}.name"), ""));
    }
    match field("kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                // ValidateServiceAccountName
                for m in name_is_dns_subdomain(name, false) {
                    errs.push(FieldError::invalid(
                        format!("{path}.name"),
                        &Value::from(name),
                        &m,
                    ));
                }
            }
            if !api_group.is_empty() {
                errs.push(FieldError::not_supported(
                    format!("{path}.apiGroup"),
                    &Value::from(api_group),
                    &[""],
                ));
            }
            if !namespaced && field("namespace").is_empty() {
                errs.push(FieldError::required(format!("{path}.namespace"), ""));
            }
        }
        "User" | "Group" => {
            if api_group != GROUP {
                errs.push(FieldError::not_supported(
                    format!("{path}.apiGroup"),
                    &Value::from(api_group),
                    &[GROUP],
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            format!("{path}.kind"),
            &Value::from(other),
            &["ServiceAccount", "User", "Group"],
        )),
    }
    errs
}

/// `ValidateRoleBindingUpdate` / `ValidateClusterRoleBindingUpdate`: the role reference never
/// changes. The bad value is rendered as kube renders the Go struct (`%#v`).
fn validate_role_ref_unchanged(new: &Value, old: &Value) -> Vec<FieldError> {
    let part = |obj: &Value, k: &str| get_str(obj, &["roleRef", k]).unwrap_or("").to_string();
    let changed = ["apiGroup", "kind", "name"]
        .iter()
        .any(|k| part(new, k) != part(old, k));
    if !changed {
        return Vec::new();
    }
    vec![FieldError {
        field: "roleRef".to_string(),
        kind: FieldErrorKind::Invalid,
        message: format!(
            "Invalid value: rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}: cannot change roleRef",
            part(new, "apiGroup"),
            part(new, "kind"),
            part(new, "name")
        ),
    }]
}

fn validate_role_binding(obj: &Value) -> Vec<FieldError> {
    validate_binding(obj, true)
}

fn validate_cluster_role_binding(obj: &Value) -> Vec<FieldError> {
    validate_binding(obj, false)
}

/// The strategy of Roles.
pub(crate) fn roles(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(
        GenericStrategy::new(info).with_name_validator(name_is_path_segment),
        Hooks {
            validate: validate_role,
            validate_update: |new, _old| validate_role(new),
            ..Hooks::NONE
        },
    )
}

/// The strategy of ClusterRoles.
pub(crate) fn cluster_roles(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(
        GenericStrategy::new(info).with_name_validator(name_is_path_segment),
        Hooks {
            validate: validate_cluster_role,
            validate_update: validate_cluster_role_update,
            ..Hooks::NONE
        },
    )
}

/// The strategy of RoleBindings.
pub(crate) fn role_bindings(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(
        GenericStrategy::new(info).with_name_validator(name_is_path_segment),
        Hooks {
            validate: validate_role_binding,
            validate_update: |new, old| {
                let mut errs = validate_role_binding(new);
                errs.extend(validate_role_ref_unchanged(new, old));
                errs
            },
            ..Hooks::NONE
        },
    )
}

/// The strategy of ClusterRoleBindings.
pub(crate) fn cluster_role_bindings(info: &'static ResourceInfo) -> HookedStrategy {
    HookedStrategy::new(
        GenericStrategy::new(info).with_name_validator(name_is_path_segment),
        Hooks {
            validate: validate_cluster_role_binding,
            validate_update: |new, old| {
                let mut errs = validate_cluster_role_binding(new);
                errs.extend(validate_role_ref_unchanged(new, old));
                errs
            },
            ..Hooks::NONE
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;
    use serde_json::json;

    fn info(kind: &str) -> &'static ResourceInfo {
        catalog::by_kind("rbac.authorization.k8s.io/v1", kind).expect("served")
    }

    fn fields(errs: &[FieldError]) -> Vec<&str> {
        errs.iter().map(|e| e.field.as_str()).collect()
    }

    #[test]
    fn rbac_names_are_path_segments() {
        assert!(name_is_path_segment("system:controller:job", false).is_empty());
        assert_eq!(name_is_path_segment("..", false), ["may not be '..'"]);
        assert_eq!(name_is_path_segment("a/b", false), ["may not contain '/'"]);
        assert_eq!(name_is_path_segment("a%b", false), ["may not contain '%'"]);
        let role = json!({"metadata": {"name": "a/b", "namespace": "default"}});
        let errs = roles(info("Role")).validate_create(&role);
        assert_eq!(
            errs.iter()
                .map(FieldError::message_with_field)
                .collect::<Vec<_>>(),
            ["metadata.name: Invalid value: \"a/b\": may not contain '/'"]
        );
    }

    /// `TestValidateRoleZeroLengthNamespace`, `TestValidateRoleNonResourceURL`,
    /// `TestValidateRoleNamespacedNonResourceURL`, `TestValidateRoleNonResourceURLNoVerbs`,
    /// `TestValidateRoleMixedNonResourceAndResource`, `TestValidateRoleValidResource`,
    /// `TestValidateRoleNoAPIGroup`, `TestValidateRoleNoResources`.
    #[test]
    fn policy_rules_follow_kubes_cases() {
        let cr = cluster_roles(info("ClusterRole"));
        let r = roles(info("Role"));
        let cluster_role = |rules: Value| json!({"metadata": {"name": "default"}, "rules": rules});
        let role = |rules: Value| json!({"metadata": {"name": "default", "namespace": "default"}, "rules": rules});
        assert!(cr
            .validate_create(&cluster_role(
                json!([{"verbs": ["get"], "nonResourceURLs": ["/*"]}])
            ))
            .is_empty());
        let errs = r.validate_create(&role(
            json!([{"verbs": ["get"], "nonResourceURLs": ["/*"]}]),
        ));
        assert_eq!(
            errs[0].message_with_field(),
            "rules[0].nonResourceURLs: Invalid value: [\"/*\"]: namespaced rules cannot apply to non-resource URLs"
        );
        let errs = cr.validate_create(&cluster_role(json!([{"nonResourceURLs": ["/*"]}])));
        assert_eq!(
            errs[0].message_with_field(),
            "rules[0].verbs: Required value: verbs must contain at least one value"
        );
        let errs = r.validate_create(&role(
            json!([{"verbs": ["get"], "nonResourceURLs": ["/*"], "apiGroups": [""], "resources": ["pods"]}]),
        ));
        assert_eq!(
            fields(&errs),
            ["rules[0].nonResourceURLs", "rules[0].nonResourceURLs"]
        );
        assert!(errs[1]
            .message
            .ends_with("rules cannot apply to both regular resources and non-resource URLs"));
        assert!(r
            .validate_create(&role(
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}])
            ))
            .is_empty());
        let errs = r.validate_create(&role(json!([{"verbs": ["get"], "resources": ["pods"]}])));
        assert_eq!(
            errs[0].message_with_field(),
            "rules[0].apiGroups: Required value: resource rules must supply at least one api group"
        );
        let errs = r.validate_create(&role(json!([{"verbs": ["get"], "apiGroups": [""]}])));
        assert_eq!(
            errs[0].message_with_field(),
            "rules[0].resources: Required value: resource rules must supply at least one resource"
        );
        let errs = r.validate_create(&json!({"metadata": {"name": "default"}, "rules": []}));
        assert_eq!(fields(&errs), ["metadata.namespace"]);
    }

    /// `TestValidateClusterRoleAggregation`-style cases.
    #[test]
    fn aggregation_rules_need_valid_selectors() {
        let cr = cluster_roles(info("ClusterRole"));
        let role = |agg: Value| json!({"metadata": {"name": "agg"}, "aggregationRule": agg});
        assert!(cr
            .validate_create(&role(json!({"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate": "true"}}]})))
            .is_empty());
        let errs = cr.validate_create(&role(json!({"clusterRoleSelectors": []})));
        assert_eq!(
            errs[0].message_with_field(),
            "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"
        );
        let errs = cr.validate_create(&role(
            json!({"clusterRoleSelectors": [{"matchExpressions": [{"key": "k", "operator": "Bogus"}]}]}),
        ));
        assert!(
            errs.iter().any(|e| e.message_with_field()
                == "aggregationRule.clusterRoleSelectors[0]: Invalid value: null: invalid label selector."),
            "{errs:?}"
        );
    }

    /// `TestValidateRoleBindingSubject` and `TestValidateClusterRoleBindingSubject`.
    #[test]
    fn subjects_and_role_refs_follow_kubes_cases() {
        let rb = role_bindings(info("RoleBinding"));
        let crb = cluster_role_bindings(info("ClusterRoleBinding"));
        let binding = |ns: Option<&str>, role_ref: Value, subjects: Value| {
            let mut meta = json!({"name": "master"});
            if let Some(ns) = ns {
                meta["namespace"] = json!(ns);
            }
            json!({"metadata": meta, "roleRef": role_ref, "subjects": subjects})
        };
        let role_ref = json!({"apiGroup": GROUP, "kind": "Role", "name": "valid"});
        let good = json!([
            {"name": "validsaname", "apiGroup": "", "kind": "ServiceAccount"},
            {"name": "valid@username", "apiGroup": GROUP, "kind": "User"},
            {"name": "valid@groupname", "apiGroup": GROUP, "kind": "Group"}
        ]);
        assert!(rb
            .validate_create(&binding(Some("default"), role_ref.clone(), good.clone()))
            .is_empty());
        let errs = rb.validate_create(&binding(
            Some("default"),
            json!({"apiGroup": "rbac.GroupName", "kind": "ClusterRole", "name": "valid"}),
            json!([]),
        ));
        assert_eq!(
            errs[0].message_with_field(),
            "roleRef.apiGroup: Unsupported value: \"rbac.GroupName\": supported values: \"rbac.authorization.k8s.io\""
        );
        let errs = rb.validate_create(&binding(
            Some("default"),
            json!({"apiGroup": GROUP, "kind": "Type", "name": "valid"}),
            json!([]),
        ));
        assert_eq!(
            errs[0].message_with_field(),
            "roleRef.kind: Unsupported value: \"Type\": supported values: \"Role\", \"ClusterRole\""
        );
        let errs = rb.validate_create(&binding(
            Some("default"),
            json!({"apiGroup": GROUP, "kind": "Role"}),
            json!([]),
        ));
        assert_eq!(errs[0].message_with_field(), "roleRef.name: Required value");
        let errs = rb.validate_create(&binding(
            Some("default"),
            role_ref.clone(),
            json!([
                {"name": "subject", "kind": "Other"},
                {"name": "", "kind": "User", "apiGroup": GROUP},
                {"name": "sa", "kind": "ServiceAccount", "apiGroup": GROUP},
                {"name": "user", "kind": "User"}
            ]),
        ));
        assert_eq!(
            errs.iter().map(FieldError::message_with_field).collect::<Vec<_>>(),
            [
                "subjects[0].kind: Unsupported value: \"Other\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
                "subjects[1].name: Required value",
                "subjects[2].apiGroup: Unsupported value: \"rbac.authorization.k8s.io\": supported values: \"\"",
                "subjects[3].apiGroup: Unsupported value: \"\": supported values: \"rbac.authorization.k8s.io\"",
            ]
        );
        // ClusterRoleBindings bind ClusterRoles only, and service accounts need a namespace.
        let errs = crb.validate_create(&binding(
            None,
            role_ref,
            json!([{"name": "sa", "kind": "ServiceAccount"}]),
        ));
        assert_eq!(
            errs.iter()
                .map(FieldError::message_with_field)
                .collect::<Vec<_>>(),
            [
                "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
                "subjects[0].namespace: Required value",
            ]
        );
    }

    /// `TestValidateRoleBindingUpdate`.
    #[test]
    fn the_role_ref_cannot_change() {
        let rb = role_bindings(info("RoleBinding"));
        let old = json!({"metadata": {"name": "master", "namespace": "default", "resourceVersion": "1"},
            "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "valid"}});
        let mut new = old.clone();
        new["subjects"] = json!([{"kind": "User", "name": "u", "apiGroup": GROUP}]);
        rb.prepare_for_update(&mut new, &old);
        assert!(rb.validate_update(&new, &old).is_empty());
        new["roleRef"]["name"] = json!("changed");
        assert_eq!(
            rb.validate_update(&new, &old)
                .iter()
                .map(FieldError::message_with_field)
                .collect::<Vec<_>>(),
            ["roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"changed\"}: cannot change roleRef"]
        );
    }
}
