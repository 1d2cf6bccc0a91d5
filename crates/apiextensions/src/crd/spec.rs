//! `spec` of a CRD: group, scope, versions and their schemas, subresources and columns, conversion, and the
//! checks kube makes across fields (stored versions, API approval, preserveUnknownFields).

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionSpec, CustomResourceDefinitionVersion,
    CustomResourceValidation, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use rkcm_labels::validation as names;

use super::names::validate_names;
use super::schema::validate_validation;
use super::subresources::{validate_column, validate_subresources};
use super::webhook;
use crate::field::{BadValue, ErrorList, FieldError, Path};
use crate::go_format;

/// Where the schemas, subresources and columns of the versions are validated: at the top level when all versions
/// have identical ones (kube's conversion to its internal type moves them there), per version otherwise.
struct Hoisted {
    schema: bool,
    subresources: bool,
    columns: bool,
}

fn hoisted(versions: &[CustomResourceDefinitionVersion]) -> Hoisted {
    let Some(first) = versions.first() else {
        return Hoisted {
            schema: false,
            subresources: false,
            columns: false,
        };
    };
    Hoisted {
        schema: versions.iter().all(|v| v.schema == first.schema),
        subresources: versions
            .iter()
            .all(|v| v.subresources == first.subresources),
        columns: versions
            .iter()
            .all(|v| v.additional_printer_columns == first.additional_printer_columns),
    }
}

/// `spec.versions` as kube prints it in "must contain unique version names" and similar messages (kube prints the
/// Go struct; this is its JSON).
fn versions_value(versions: &[CustomResourceDefinitionVersion]) -> BadValue {
    BadValue::Raw(serde_json::to_string(versions).unwrap_or_default())
}

pub(super) fn validate_spec(spec: &CustomResourceDefinitionSpec, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let group = path.child("group");
    if spec.group.is_empty() {
        errs.push(FieldError::required(&group, ""));
    } else {
        let problems = names::is_dns1123_subdomain(&spec.group);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &group,
                spec.group.as_str(),
                problems.join(","),
            ));
        } else if spec.group.split('.').count() < 2 {
            errs.push(FieldError::invalid(
                &group,
                spec.group.as_str(),
                "should be a domain with at least one dot",
            ));
        }
    }

    let scope = path.child("scope");
    if spec.scope.is_empty() {
        errs.push(FieldError::required(&scope, ""));
    } else if spec.scope != "Cluster" && spec.scope != "Namespaced" {
        errs.push(FieldError::not_supported(
            &scope,
            spec.scope.as_str(),
            &["Cluster", "Namespaced"],
        ));
    }

    let h = hoisted(&spec.versions);
    let top_schema = if h.schema {
        spec.versions.first().and_then(|v| v.schema.as_ref())
    } else {
        None
    };
    let has_schema =
        |v: Option<&CustomResourceValidation>| v.is_some_and(|s| s.open_api_v3_schema.is_some());
    if !has_schema(top_schema) {
        for (i, v) in spec.versions.iter().enumerate() {
            if h.schema || !has_schema(v.schema.as_ref()) {
                errs.push(FieldError::required(
                    &path
                        .child("versions")
                        .index(i)
                        .child("schema")
                        .child("openAPIV3Schema"),
                    "schemas are required",
                ));
            }
        }
    }
    let preserve_unknown_fields = spec.preserve_unknown_fields == Some(true);
    if preserve_unknown_fields
        && spec
            .versions
            .iter()
            .any(|v| schema_has(v.schema.as_ref(), &|s| s.default.is_some()))
    {
        errs.push(FieldError::invalid(
            &path.child("preserveUnknownFields"),
            true,
            "must be false in order to use defaults in the schema",
        ));
    }

    let any_status = spec
        .versions
        .iter()
        .any(|v| v.subresources.as_ref().is_some_and(|s| s.status.is_some()));
    let mut storage = 0;
    let mut seen = HashSet::new();
    let mut unique = true;
    for (i, v) in spec.versions.iter().enumerate() {
        let vpath = path.child("versions").index(i);
        if v.storage {
            storage += 1;
        }
        if !seen.insert(v.name.as_str()) {
            unique = false;
        }
        let problems = names::is_dns1035_label(&v.name);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &vpath.child("name"),
                v.name.as_str(),
                problems.join(","),
            ));
        }
        for msg in validate_deprecation_warning(
            v.deprecated == Some(true),
            v.deprecation_warning.as_deref(),
        ) {
            let value = match &v.deprecation_warning {
                Some(w) => BadValue::from(w.as_str()),
                None => BadValue::from(serde_json::Value::Null),
            };
            errs.push(FieldError::invalid(
                &vpath.child("deprecationWarning"),
                value,
                msg,
            ));
        }
        let status_enabled = v.subresources.as_ref().is_some_and(|s| s.status.is_some());
        if !h.schema {
            errs.extend(validate_validation(
                v.schema.as_ref(),
                status_enabled,
                &vpath.child("schema"),
            ));
        }
        if !h.subresources {
            errs.extend(validate_subresources(
                v.subresources.as_ref(),
                &vpath.child("subresources"),
            ));
        }
        if !h.columns {
            for (j, col) in v.additional_printer_columns.iter().flatten().enumerate() {
                errs.extend(validate_column(
                    col,
                    &vpath.child("additionalPrinterColumns").index(j),
                ));
            }
        }
    }
    if !unique {
        errs.push(FieldError::invalid(
            &path.child("versions"),
            versions_value(&spec.versions),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(FieldError::invalid(
            &path.child("versions"),
            versions_value(&spec.versions),
            "must have exactly one version marked as storage version",
        ));
    }

    let n = &spec.names;
    let names_path = path.child("names");
    for (value, field) in [
        (n.plural.as_str(), "plural"),
        (n.singular.as_deref().unwrap_or(""), "singular"),
        (n.kind.as_str(), "kind"),
        (n.list_kind.as_deref().unwrap_or(""), "listKind"),
    ] {
        if value.is_empty() {
            errs.push(FieldError::required(&names_path.child(field), ""));
        }
    }
    errs.extend(validate_names(n, &names_path));

    if h.schema {
        errs.extend(validate_validation(
            top_schema,
            any_status,
            &path.child("validation"),
        ));
    }
    if h.subresources {
        errs.extend(validate_subresources(
            spec.versions.first().and_then(|v| v.subresources.as_ref()),
            &path.child("subresources"),
        ));
    }
    if h.columns {
        let columns = spec
            .versions
            .first()
            .and_then(|v| v.additional_printer_columns.as_ref());
        for (j, col) in columns.into_iter().flatten().enumerate() {
            errs.extend(validate_column(
                col,
                &path.child("additionalPrinterColumns").index(j),
            ));
        }
    }

    if let Some(conversion) = &spec.conversion {
        let conv_path = path.child("conversion");
        if conversion.strategy != "None" && preserve_unknown_fields {
            errs.push(FieldError::invalid(
                &conv_path.child("strategy"),
                conversion.strategy.as_str(),
                "must be None if spec.preserveUnknownFields is true",
            ));
        }
        errs.extend(validate_conversion(conversion, &conv_path));
    }
    errs
}

fn validate_conversion(
    conversion: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceConversion,
    path: &Path,
) -> ErrorList {
    let mut errs = Vec::new();
    let strategy = path.child("strategy");
    if conversion.strategy.is_empty() {
        errs.push(FieldError::required(&strategy, ""));
    } else if conversion.strategy != "None" && conversion.strategy != "Webhook" {
        errs.push(FieldError::not_supported(
            &strategy,
            conversion.strategy.as_str(),
            &["None", "Webhook"],
        ));
    }
    // kube validates its internal type, whose paths are webhookClientConfig and conversionReviewVersions.
    let client_config = conversion
        .webhook
        .as_ref()
        .and_then(|w| w.client_config.as_ref());
    let review_versions = conversion
        .webhook
        .as_ref()
        .map(|w| w.conversion_review_versions.as_slice())
        .unwrap_or(&[]);
    if conversion.strategy == "Webhook" {
        let cc_path = path.child("webhookClientConfig");
        match client_config {
            None => errs.push(FieldError::required(
                &cc_path,
                "required when strategy is set to Webhook",
            )),
            Some(cc) => match (&cc.url, &cc.service) {
                (Some(_), Some(_)) | (None, None) => errs.push(FieldError::required(
                    &cc_path,
                    "exactly one of url or service is required",
                )),
                (Some(url), None) => errs.extend(webhook::validate_url(&cc_path.child("url"), url)),
                (None, Some(service)) => errs.extend(webhook::validate_service(
                    &cc_path.child("service"),
                    service,
                )),
            },
        }
        let rv_path = path.child("conversionReviewVersions");
        if review_versions.is_empty() {
            errs.push(FieldError::required(&rv_path, ""));
        } else {
            let mut seen = HashSet::new();
            let mut accepted = false;
            for (i, v) in review_versions.iter().enumerate() {
                if !seen.insert(v.as_str()) {
                    errs.push(FieldError::invalid(
                        &rv_path.index(i),
                        v.as_str(),
                        "duplicate version",
                    ));
                    continue;
                }
                for msg in names::is_dns1035_label(v) {
                    errs.push(FieldError::invalid(&rv_path.index(i), v.as_str(), msg));
                }
                accepted |= v == "v1" || v == "v1beta1";
            }
            if !accepted {
                let listed: Vec<String> = review_versions
                    .iter()
                    .map(|v| go_format::quote(v))
                    .collect();
                errs.push(FieldError::invalid(
                    &rv_path,
                    BadValue::Raw(format!("[]string{{{}}}", listed.join(", "))),
                    "must include at least one of v1, v1beta1",
                ));
            }
        }
    } else {
        if client_config.is_some() {
            errs.push(FieldError::forbidden(
                &path.child("webhookClientConfig"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !review_versions.is_empty() {
            errs.push(FieldError::forbidden(
                &path.child("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
    }
    errs
}

fn validate_deprecation_warning(deprecated: bool, warning: Option<&str>) -> Vec<String> {
    if !deprecated && warning.is_some() {
        return vec!["can only be set for deprecated versions".into()];
    }
    let Some(w) = warning else { return Vec::new() };
    let mut errs = Vec::new();
    if w.len() > 256 {
        errs.push("must be <= 256 characters long".into());
    }
    if w.is_empty() {
        errs.push("must not be an empty string".into());
    }
    // Go checks unicode.IsPrint first, which already refuses control characters and every space but U+0020.
    for (i, c) in w.char_indices() {
        if c.is_control() || (c.is_whitespace() && c != ' ') {
            errs.push(format!(
                "must only contain printable UTF-8 characters; non-printable character found at index {i}"
            ));
            break;
        }
    }
    errs
}

/// kube's `ValidateCustomResourceDefinitionStoredVersions`.
pub(super) fn validate_stored_versions(
    stored: Option<&[String]>,
    versions: &[CustomResourceDefinitionVersion],
    path: &Path,
) -> ErrorList {
    let stored_value = |s: Option<&[String]>| match s {
        None => BadValue::Raw("[]string(nil)".into()),
        Some(list) => BadValue::Raw(format!(
            "[]string{{{}}}",
            list.iter()
                .map(|v| go_format::quote(v))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    };
    let Some(list) = stored.filter(|s| !s.is_empty()) else {
        return vec![FieldError::invalid(
            path,
            stored_value(stored),
            "must have at least one stored version",
        )];
    };
    let mut errs = Vec::new();
    let mut remaining: BTreeMap<&str, usize> = list
        .iter()
        .enumerate()
        .map(|(i, v)| (v.as_str(), i))
        .collect();
    for v in versions {
        let found = remaining.contains_key(v.name.as_str());
        if v.storage && !found {
            errs.push(FieldError::invalid(
                path,
                stored_value(stored),
                format!("must have the storage version {}", v.name),
            ));
        }
        remaining.remove(v.name.as_str());
    }
    for (v, i) in remaining {
        errs.push(FieldError::invalid(
            &path.index(i),
            v,
            format!("missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"),
        ));
    }
    errs
}

const API_APPROVAL_ANNOTATION: &str = "api-approved.kubernetes.io";

/// Groups `k8s.io`, `kubernetes.io` and their subdomains need the `api-approved.kubernetes.io` annotation (a URL of
/// the approval, or a reason starting with "unapproved"); kube's `validateAPIApproval`.
pub(super) fn validate_api_approval(
    crd: &CustomResourceDefinition,
    old: Option<&CustomResourceDefinition>,
) -> ErrorList {
    let group = crd.spec.group.as_str();
    let protected = group == "k8s.io"
        || group == "kubernetes.io"
        || group.ends_with(".k8s.io")
        || group.ends_with(".kubernetes.io");
    if !protected {
        return Vec::new();
    }
    let state = |c: &CustomResourceDefinition| -> ApprovalState {
        match c
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(API_APPROVAL_ANNOTATION))
        {
            None => ApprovalState::Missing,
            Some(v) if v.starts_with("unapproved") => ApprovalState::Bypassed,
            // Go's url.ParseRequestURI: an absolute URL or an absolute path.
            Some(v) if crate::validation::formats::is_request_uri(v) => ApprovalState::Approved,
            Some(_) => ApprovalState::Invalid,
        }
    };
    let new_state = state(crd);
    if old.is_some_and(|o| state(o) == new_state) {
        return Vec::new();
    }
    let path = Path::new("metadata")
        .child("annotations")
        .key(API_APPROVAL_ANNOTATION);
    match new_state {
        ApprovalState::Missing => vec![FieldError::required(
            &path,
            format!("protected groups must have approval annotation {API_APPROVAL_ANNOTATION:?}, see https://github.com/kubernetes/enhancements/pull/1111"),
        )],
        ApprovalState::Invalid => {
            let value = crd.metadata.annotations.as_ref().and_then(|a| a.get(API_APPROVAL_ANNOTATION)).cloned().unwrap_or_default();
            vec![FieldError::invalid(
                &path,
                value.as_str(),
                format!("protected groups must have approval annotation {API_APPROVAL_ANNOTATION:?} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"),
            )]
        }
        ApprovalState::Approved | ApprovalState::Bypassed => Vec::new(),
    }
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum ApprovalState {
    Missing,
    Invalid,
    Approved,
    Bypassed,
}

/// `spec.preserveUnknownFields: true` is refused unless the CRD already had it; kube's
/// `validatePreserveUnknownFields`.
pub(super) fn validate_preserve_unknown_fields(
    crd: &CustomResourceDefinition,
    old: Option<&CustomResourceDefinition>,
) -> ErrorList {
    if old.is_some_and(|o| o.spec.preserve_unknown_fields == Some(true)) {
        return Vec::new();
    }
    if crd.spec.preserve_unknown_fields == Some(true) {
        return vec![FieldError::invalid(
            &Path::new("spec").child("preserveUnknownFields"),
            true,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        )];
    }
    Vec::new()
}

/// Whether any schema node of `v` satisfies `pred` (kube's `SchemaHas`).
pub(super) fn schema_has(
    v: Option<&CustomResourceValidation>,
    pred: &dyn Fn(&JSONSchemaProps) -> bool,
) -> bool {
    fn walk(s: &JSONSchemaProps, pred: &dyn Fn(&JSONSchemaProps) -> bool) -> bool {
        if pred(s) {
            return true;
        }
        let lists = [&s.all_of, &s.any_of, &s.one_of];
        lists
            .iter()
            .any(|l| l.iter().flatten().any(|x| walk(x, pred)))
            || s.not.as_deref().is_some_and(|n| walk(n, pred))
            || s.properties
                .iter()
                .flat_map(|m| m.values())
                .any(|x| walk(x, pred))
            || match &s.items {
                Some(JSONSchemaPropsOrArray::Schema(i)) => walk(i, pred),
                Some(JSONSchemaPropsOrArray::Schemas(l)) => l.iter().any(|x| walk(x, pred)),
                None => false,
            }
            || matches!(&s.additional_properties, Some(JSONSchemaPropsOrBool::Schema(a)) if walk(a, pred))
    }
    v.and_then(|v| v.open_api_v3_schema.as_ref())
        .is_some_and(|s| walk(s, pred))
}
