//! Names of a CRD: `metadata.name` is `<plural>.<group>`, and every name in `spec.names` is a DNS-1035 label;
//! kube's `ValidateCustomResourceDefinitionNames`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames,
};
use rkcm_labels::validation as names;

use crate::field::{ErrorList, FieldError, Path};

/// `metadata.name` must be a DNS subdomain equal to `spec.names.plural + "." + spec.group`; a CRD has no namespace.
pub(super) fn validate_metadata_name(crd: &CustomResourceDefinition) -> ErrorList {
    let meta = Path::new("metadata");
    let mut errs = Vec::new();
    let name = crd.metadata.name.as_deref().unwrap_or("");
    let generate_name = crd.metadata.generate_name.as_deref().unwrap_or("");
    if !generate_name.is_empty() {
        for msg in check_name(crd, generate_name, true) {
            errs.push(FieldError::invalid(
                &meta.child("generateName"),
                generate_name,
                msg,
            ));
        }
    }
    if name.is_empty() {
        errs.push(FieldError::required(
            &meta.child("name"),
            "name or generateName is required",
        ));
    } else {
        for msg in check_name(crd, name, false) {
            errs.push(FieldError::invalid(&meta.child("name"), name, msg));
        }
    }
    if crd
        .metadata
        .namespace
        .as_deref()
        .is_some_and(|n| !n.is_empty())
    {
        errs.push(FieldError::forbidden(
            &meta.child("namespace"),
            "not allowed on this type",
        ));
    }
    errs
}

fn check_name(crd: &CustomResourceDefinition, name: &str, prefix: bool) -> Vec<String> {
    let mut msgs = names::name_is_dns_subdomain(name, prefix);
    if name != format!("{}.{}", crd.spec.names.plural, crd.spec.group) {
        msgs.push(r#"must be spec.names.plural+"."+spec.group"#.to_string());
    }
    msgs
}

/// kube's `ValidateCustomResourceDefinitionNames` (also used for `status.acceptedNames`).
pub(super) fn validate_names(n: &CustomResourceDefinitionNames, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let label = |value: &str, p: Path, errs: &mut ErrorList| {
        let problems = names::is_dns1035_label(value);
        if !value.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid(&p, value, problems.join(",")));
        }
    };
    let mixed_case = |value: &str, p: Path, errs: &mut ErrorList| {
        let problems = names::is_dns1035_label(&value.to_lowercase());
        if !value.is_empty() && !problems.is_empty() {
            errs.push(FieldError::invalid(
                &p,
                value,
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    problems.join(",")
                ),
            ));
        }
    };
    let list_kind = n.list_kind.as_deref().unwrap_or("");
    label(&n.plural, path.child("plural"), &mut errs);
    label(
        n.singular.as_deref().unwrap_or(""),
        path.child("singular"),
        &mut errs,
    );
    mixed_case(&n.kind, path.child("kind"), &mut errs);
    mixed_case(list_kind, path.child("listKind"), &mut errs);
    for (i, short) in n.short_names.iter().flatten().enumerate() {
        let problems = names::is_dns1035_label(short);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("shortNames").index(i),
                short.as_str(),
                problems.join(","),
            ));
        }
    }
    if !n.kind.is_empty() && n.kind == list_kind {
        errs.push(FieldError::invalid(
            &path.child("listKind"),
            list_kind,
            "kind and listKind may not be the same",
        ));
    }
    for (i, category) in n.categories.iter().flatten().enumerate() {
        let problems = names::is_dns1035_label(category);
        if !problems.is_empty() {
            errs.push(FieldError::invalid(
                &path.child("categories").index(i),
                category.as_str(),
                problems.join(","),
            ));
        }
    }
    errs
}
