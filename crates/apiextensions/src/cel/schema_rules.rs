//! Compiling a CRD schema's rules when the CRD is written, and the errors kube's
//! `ValidateCustomResourceDefinitionOpenAPISchema` reports for them: rules and message
//! expressions that do not compile, transition rules where old values cannot be correlated,
//! `optionalOldSelf` without `oldSelf`, and `fieldPath`s naming no field.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule;
use serde_json::Value;

use super::compile::compile_rules;
use super::decl::decl_type;
use super::field_path::valid_field_path;
use crate::field::{BadValue, ErrorList, FieldError, Path};
use crate::go_format::quote;
use crate::structural::Structural;

/// The errors of the rules of the structural schema `s`, found at `path` (the
/// `openAPIV3Schema`); `s` is a resource's root.
pub fn validate_schema_rules(s: &Structural, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    walk(s, path, true, None, &mut errs);
    errs
}

fn walk(
    s: &Structural,
    path: &Path,
    resource_root: bool,
    uncorrelatable: Option<&Path>,
    errs: &mut ErrorList,
) {
    if !s.extensions.x_validations.is_empty() {
        check_node(s, path, resource_root, uncorrelatable, errs);
    }
    if let Some(items) = s.items.as_deref() {
        let items_path = path.child("items");
        let correlatable = s.extensions.x_list_type.as_deref() == Some("map");
        let unc = match uncorrelatable {
            Some(p) => Some(p.clone()),
            None if !correlatable => Some(items_path.clone()),
            None => None,
        };
        walk(
            items,
            &items_path,
            items.extensions.x_embedded_resource,
            unc.as_ref(),
            errs,
        );
    }
    for (name, prop) in &s.properties {
        walk(
            prop,
            &path.child("properties").key(name),
            prop.extensions.x_embedded_resource,
            uncorrelatable,
            errs,
        );
    }
    if let Some(ap) = s.additional_properties_schema() {
        walk(
            ap,
            &path.child("additionalProperties"),
            ap.extensions.x_embedded_resource,
            uncorrelatable,
            errs,
        );
    }
}

fn check_node(
    s: &Structural,
    path: &Path,
    resource_root: bool,
    uncorrelatable: Option<&Path>,
    errs: &mut ErrorList,
) {
    let rules = &s.extensions.x_validations;
    let compiled = compile_rules(rules, &decl_type(s, resource_root));
    for (i, (rule, c)) in rules.iter().zip(&compiled).enumerate() {
        let rp = path.child("x-kubernetes-validations").index(i);
        if let Some(fp) = rule.field_path.as_deref().filter(|f| !f.is_empty()) {
            if valid_field_path(fp, s).is_err() {
                errs.push(FieldError::invalid(
                    &rp.child("fieldPath"),
                    fp,
                    "fieldPath must be a valid path",
                ));
            }
        }
        if let Some(e) = &c.error {
            errs.push(FieldError::invalid(
                &rp.child("rule"),
                rule_value(rule),
                e.detail.clone(),
            ));
        }
        if let Some(e) = &c.message_error {
            errs.push(FieldError::invalid(
                &rp.child("messageExpression"),
                rule_value(rule),
                e.detail.clone(),
            ));
        }
        if c.uses_old_self {
            if let Some(unc) = uncorrelatable {
                errs.push(FieldError::invalid(
                    &rp.child("rule"),
                    rule.rule.as_str(),
                    format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {unc}"),
                ));
            }
        } else if let (Some(optional), true) = (rule.optional_old_self, c.program.is_some()) {
            errs.push(FieldError::invalid(
                &rp.child("optionalOldSelf"),
                Value::Bool(optional),
                "may not be set if oldSelf is not used in rule",
            ));
        }
    }
}

/// A rule as kube prints the bad value of these errors: Go's `%#v` of its internal
/// `apiextensions.ValidationRule` (pointers print as addresses there; rkcm prints a fixed one).
fn rule_value(rule: &ValidationRule) -> BadValue {
    let ptr = |set: bool, ty: &str| {
        if set {
            format!("({ty})(0xc000000000)")
        } else {
            format!("({ty})(nil)")
        }
    };
    BadValue::Raw(format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
        quote(&rule.rule),
        quote(rule.message.as_deref().unwrap_or("")),
        quote(rule.message_expression.as_deref().unwrap_or("")),
        ptr(rule.reason.is_some(), "*apiextensions.FieldValueErrorReason"),
        quote(rule.field_path.as_deref().unwrap_or("")),
        ptr(rule.optional_old_self.is_some(), "*bool"),
    ))
}
