//! The `scale` subresource's JSON paths and additional printer columns of a CRD; kube's
//! `ValidateCustomResourceDefinitionSubresources` and `ValidateCustomResourceColumnDefinition`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceSubresources,
};

use crate::field::{ErrorList, FieldError, Path};

const PRINTER_COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const PRINTER_COLUMN_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";

pub(super) fn validate_subresources(
    s: Option<&CustomResourceSubresources>,
    path: &Path,
) -> ErrorList {
    let mut errs = Vec::new();
    let Some(scale) = s.and_then(|s| s.scale.as_ref()) else {
        return errs;
    };
    // kube names these paths with a dot inside one child ("scale.specReplicasPath").
    let spec_path = path.child("scale.specReplicasPath");
    if scale.spec_replicas_path.is_empty() {
        errs.push(FieldError::required(&spec_path, ""));
    } else {
        let e = validate_simple_json_path(&scale.spec_replicas_path, &spec_path);
        if !e.is_empty() {
            errs.extend(e);
        } else if !scale.spec_replicas_path.starts_with(".spec.") {
            errs.push(FieldError::invalid(
                &spec_path,
                scale.spec_replicas_path.as_str(),
                "should be a json path under .spec",
            ));
        }
    }
    let status_path = path.child("scale.statusReplicasPath");
    if scale.status_replicas_path.is_empty() {
        errs.push(FieldError::required(&status_path, ""));
    } else {
        let e = validate_simple_json_path(&scale.status_replicas_path, &status_path);
        if !e.is_empty() {
            errs.extend(e);
        } else if !scale.status_replicas_path.starts_with(".status.") {
            errs.push(FieldError::invalid(
                &status_path,
                scale.status_replicas_path.as_str(),
                "should be a json path under .status",
            ));
        }
    }
    if let Some(selector) = scale
        .label_selector_path
        .as_deref()
        .filter(|p| !p.is_empty())
    {
        let selector_path = path.child("scale.labelSelectorPath");
        let e = validate_simple_json_path(selector, &selector_path);
        if !e.is_empty() {
            errs.extend(e);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            errs.push(FieldError::invalid(
                &selector_path,
                selector,
                "should be a json path under either .spec or .status",
            ));
        }
    }
    errs
}

pub(super) fn validate_column(col: &CustomResourceColumnDefinition, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if col.name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    }
    let types_msg = format!("must be one of {PRINTER_COLUMN_TYPES}");
    if col.type_.is_empty() {
        errs.push(FieldError::required(&path.child("type"), types_msg));
    } else if !PRINTER_COLUMN_TYPES.split(',').any(|t| t == col.type_) {
        errs.push(FieldError::invalid(
            &path.child("type"),
            col.type_.as_str(),
            types_msg,
        ));
    }
    if let Some(format) = col.format.as_deref().filter(|f| !f.is_empty()) {
        if !PRINTER_COLUMN_FORMATS.split(',').any(|f| f == format) {
            errs.push(FieldError::invalid(
                &path.child("format"),
                format,
                format!("must be one of {PRINTER_COLUMN_FORMATS}"),
            ));
        }
    }
    // kube reports the internal field name.
    let json_path = path.child("JSONPath");
    if col.json_path.is_empty() {
        errs.push(FieldError::required(&json_path, ""));
    } else {
        errs.extend(validate_simple_json_path(&col.json_path, &json_path));
    }
    errs
}

fn validate_simple_json_path(s: &str, path: &Path) -> ErrorList {
    if s.is_empty() {
        return vec![FieldError::invalid(path, s, "must not be empty")];
    }
    if !s.starts_with('.') {
        return vec![FieldError::invalid(
            path,
            s,
            "must be a simple json path starting with .",
        )];
    }
    Vec::new()
}
