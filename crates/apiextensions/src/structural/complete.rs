//! Completeness of a structural schema: every field or array that a junctor reasons about is also specified
//! outside of it; kube's `schema/complete.go`.

use super::{NestedValueValidation, Structural, ValueValidation};
use crate::field::{ErrorList, FieldError, Path};

pub(super) fn validate_structural_completeness(s: &Structural, path: &Path) -> ErrorList {
    match &s.value_validation {
        Some(v) => value_validation_completeness(v, Some(s), path, path),
        None => Vec::new(),
    }
}

fn value_validation_completeness(
    v: &ValueValidation,
    s: Option<&Structural>,
    s_path: &Path,
    v_path: &Path,
) -> ErrorList {
    let Some(s) = s else {
        return vec![FieldError::required(
            s_path,
            format!("because it is defined in {v_path}"),
        )];
    };
    let mut errs = Vec::new();
    errs.extend(nested_completeness(
        v.not.as_deref(),
        Some(s),
        s_path,
        &v_path.child("not"),
    ));
    for (i, n) in v.all_of.iter().enumerate() {
        errs.extend(nested_completeness(
            Some(n),
            Some(s),
            s_path,
            &v_path.child("allOf").index(i),
        ));
    }
    for (i, n) in v.any_of.iter().enumerate() {
        errs.extend(nested_completeness(
            Some(n),
            Some(s),
            s_path,
            &v_path.child("anyOf").index(i),
        ));
    }
    for (i, n) in v.one_of.iter().enumerate() {
        errs.extend(nested_completeness(
            Some(n),
            Some(s),
            s_path,
            &v_path.child("oneOf").index(i),
        ));
    }
    errs
}

fn nested_completeness(
    v: Option<&NestedValueValidation>,
    s: Option<&Structural>,
    s_path: &Path,
    v_path: &Path,
) -> ErrorList {
    let Some(v) = v else { return Vec::new() };
    let Some(s) = s else {
        return vec![FieldError::required(
            s_path,
            format!("because it is defined in {v_path}"),
        )];
    };
    let mut errs = value_validation_completeness(&v.value_validation, Some(s), s_path, v_path);
    errs.extend(nested_completeness(
        v.items.as_deref(),
        s.items.as_deref(),
        &s_path.child("items"),
        &v_path.child("items"),
    ));
    for (k, v_fld) in &v.properties {
        let s_fld_path = s_path.child("properties").key(k);
        let v_fld_path = v_path.child("properties").key(k);
        match s.properties.get(k) {
            None => errs.push(FieldError::required(
                &s_fld_path,
                format!("because it is defined in {v_fld_path}"),
            )),
            Some(s_fld) => errs.extend(nested_completeness(
                Some(v_fld),
                Some(s_fld),
                &s_fld_path,
                &v_fld_path,
            )),
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
    use serde_json::json;

    #[test]
    fn fields_and_items_used_in_junctors_must_be_specified() {
        let props: JSONSchemaProps = serde_json::from_value(json!({
            "type": "object",
            "properties": {"a": {"type": "object"}, "b": {"type": "string"}},
            "anyOf": [{"properties": {"a": {"properties": {"x": {"minimum": 1}}}}}],
            "allOf": [{"properties": {"b": {"items": {"pattern": "^a"}}}}],
            "oneOf": [{"properties": {"c": {}}}],
        }))
        .expect("parses");
        let s = Structural::from_props(&props).expect("converts");
        let msgs: Vec<String> = validate_structural_completeness(&s, &Path::root())
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            msgs,
            vec![
                "properties[b].items: Required value: because it is defined in allOf[0].properties[b].items",
                "properties[a].properties[x]: Required value: because it is defined in anyOf[0].properties[a].properties[x]",
                "properties[c]: Required value: because it is defined in oneOf[0].properties[c]",
            ]
        );
    }
}
