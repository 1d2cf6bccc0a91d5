//! Structural-schema invariants with kube's messages and field paths; kube's `schema/validation.go`.

use super::complete::validate_structural_completeness;
use super::{Extensions, NestedValueValidation, Structural, ValueValidation};
use crate::field::{ErrorList, FieldError, Path};
use crate::validation::pattern;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Checks that `s`, the schema at `path`, is structural (kube's `ValidateStructural`):
///
/// - every specified field and array has a type, outside of `allOf`/`anyOf`/`oneOf`/`not` (which only add value
///   validations), with the two `x-kubernetes-int-or-string` exceptions;
/// - `x-kubernetes-embedded-resource` objects are objects with properties or preserved unknown fields;
/// - `metadata` at the root restricts at most `name` and `generateName`, and is not specified in nested contexts;
/// - `additionalProperties` is not used at the root.
///
/// Errors are sorted by their message, as kube sorts them.
pub fn validate_structural(path: &Path, s: &Structural) -> ErrorList {
    let mut errs = validate_structural_invariants(Some(s), Level::Root, path);
    errs.extend(validate_structural_completeness(s, path));
    errs.sort_by_key(|e| e.to_string());
    errs
}

fn validate_structural_invariants(s: Option<&Structural>, lvl: Level, path: &Path) -> ErrorList {
    let Some(s) = s else { return Vec::new() };
    let mut errs = Vec::new();

    if s.type_() == "array" && s.items.is_none() {
        errs.push(FieldError::required(
            &path.child("items"),
            "must be specified",
        ));
    }
    errs.extend(validate_structural_invariants(
        s.items.as_deref(),
        Level::Item,
        &path.child("items"),
    ));

    for (k, v) in &s.properties {
        errs.extend(validate_structural_invariants(
            Some(v),
            Level::Field,
            &path.child("properties").key(k),
        ));
    }

    if let Some(ap) = &s.generic.additional_properties {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                &path.child("additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(schema) = &ap.structural {
            errs.extend(validate_structural_invariants(
                Some(schema),
                Level::Field,
                &path.child("additionalProperties"),
            ));
        }
    }

    errs.extend(validate_extensions(&s.extensions, path));

    let skip_any_of = is_int_or_string_any_of_pattern(s);
    let skip_first_all_of_any_of = is_int_or_string_all_of_pattern(s);
    if let Some(vv) = &s.value_validation {
        errs.extend(validate_value_validation(
            vv,
            skip_any_of,
            skip_first_all_of_any_of,
            path,
        ));
    }

    let check_metadata = lvl == Level::Root || s.extensions.x_embedded_resource;

    if s.extensions.x_embedded_resource && s.type_() != "object" {
        let msg = "must be object if x-kubernetes-embedded-resource is true";
        if s.type_().is_empty() {
            errs.push(FieldError::required(&path.child("type"), msg));
        } else {
            errs.push(FieldError::invalid(&path.child("type"), s.type_(), msg));
        }
    } else if s.type_().is_empty()
        && !s.extensions.x_int_or_string
        && !s.extensions.x_preserve_unknown_fields
    {
        let msg = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(&path.child("type"), msg));
    }
    if s.extensions.x_embedded_resource && s.generic.additional_properties.is_some() {
        errs.push(FieldError::forbidden(
            &path.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }

    if lvl == Level::Root && !s.type_().is_empty() && s.type_() != "object" {
        errs.push(FieldError::invalid(
            &path.child("type"),
            s.type_(),
            "must be object at the root",
        ));
    }

    if check_metadata {
        for name in ["kind", "apiVersion"] {
            if let Some(p) = s.properties.get(name) {
                if p.type_() != "string" {
                    errs.push(FieldError::invalid(
                        &path.child("properties").key(name).child("type"),
                        p.type_(),
                        "must be string",
                    ));
                }
            }
        }
    }

    if let Some(metadata) = s.properties.get("metadata") {
        errs.extend(validate_structural_metadata_invariants(
            metadata,
            check_metadata,
            lvl,
            &path.child("properties").key("metadata"),
        ));
    }

    if s.extensions.x_embedded_resource
        && !s.extensions.x_preserve_unknown_fields
        && s.properties.is_empty()
    {
        errs.push(FieldError::required(
            &path.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }

    errs
}

fn validate_structural_metadata_invariants(
    s: &Structural,
    check_metadata: bool,
    lvl: Level,
    path: &Path,
) -> ErrorList {
    let mut errs = Vec::new();
    if check_metadata && s.type_() != "object" {
        errs.push(FieldError::invalid(
            &path.child("type"),
            s.type_(),
            "must be object",
        ));
    }
    if lvl == Level::Root {
        let mut m = s.clone();
        let found_name = m.properties.contains_key("name");
        let found_generate_name = m.properties.contains_key("generateName");
        let n = m.properties.len();
        if (found_name && found_generate_name && n == 2)
            || ((found_name || found_generate_name) && n == 1)
        {
            m.properties.clear();
        }
        m.generic.type_.clear();
        // A default of metadata is checked by CRD validation.
        m.generic.default = None;
        if m.value_validation.is_none() {
            m.value_validation = Some(Box::default());
        }
        let allowed = Structural {
            value_validation: Some(Box::default()),
            ..Structural::default()
        };
        if m != allowed {
            errs.push(FieldError::forbidden(
                path,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    errs
}

fn int_or_string_any_of() -> Vec<NestedValueValidation> {
    ["integer", "string"]
        .into_iter()
        .map(|t| {
            let mut n = NestedValueValidation::default();
            n.forbidden_generics.type_ = t.to_string();
            n
        })
        .collect()
}

fn is_int_or_string_any_of_pattern(s: &Structural) -> bool {
    s.value_validation
        .as_ref()
        .is_some_and(|v| v.any_of == int_or_string_any_of())
}

fn is_int_or_string_all_of_pattern(s: &Structural) -> bool {
    s.value_validation.as_ref().is_some_and(|v| {
        v.all_of
            .first()
            .is_some_and(|first| first.value_validation.any_of == int_or_string_any_of())
    })
}

fn validate_extensions(x: &Extensions, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if x.x_int_or_string && x.x_preserve_unknown_fields {
        errs.push(FieldError::invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if x.x_int_or_string && x.x_embedded_resource {
        errs.push(FieldError::invalid(
            &path.child("x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    errs
}

fn validate_value_validation(
    v: &ValueValidation,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &Path,
) -> ErrorList {
    let mut errs = Vec::new();
    if !skip_any_of {
        for (i, n) in v.any_of.iter().enumerate() {
            errs.extend(validate_nested_value_validation(
                Some(n),
                false,
                false,
                &path.child("anyOf").index(i),
            ));
        }
    }
    for (i, n) in v.all_of.iter().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        errs.extend(validate_nested_value_validation(
            Some(n),
            skip,
            false,
            &path.child("allOf").index(i),
        ));
    }
    for (i, n) in v.one_of.iter().enumerate() {
        errs.extend(validate_nested_value_validation(
            Some(n),
            false,
            false,
            &path.child("oneOf").index(i),
        ));
    }
    errs.extend(validate_nested_value_validation(
        v.not.as_deref(),
        false,
        false,
        &path.child("not"),
    ));
    if !v.pattern.is_empty() {
        if let Err(e) = pattern::compile(&v.pattern) {
            errs.push(FieldError::invalid(
                &path.child("pattern"),
                v.pattern.as_str(),
                format!("must be a valid regular expression, but isn't: {e}"),
            ));
        }
    }
    errs
}

fn validate_nested_value_validation(
    v: Option<&NestedValueValidation>,
    skip_any_of: bool,
    skip_all_of_any_of: bool,
    path: &Path,
) -> ErrorList {
    let Some(v) = v else { return Vec::new() };
    let mut errs =
        validate_value_validation(&v.value_validation, skip_any_of, skip_all_of_any_of, path);
    errs.extend(validate_nested_value_validation(
        v.items.as_deref(),
        false,
        false,
        &path.child("items"),
    ));
    for (k, p) in &v.properties {
        errs.extend(validate_nested_value_validation(
            Some(p),
            false,
            false,
            &path.child("properties").key(k),
        ));
    }

    let g = &v.forbidden_generics;
    if !g.type_.is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("type"),
            "must be empty to be structural",
        ));
    }
    if g.additional_properties.is_some() {
        errs.push(FieldError::forbidden(
            &path.child("additionalProperties"),
            "must be undefined to be structural",
        ));
    }
    if g.default.is_some() {
        errs.push(FieldError::forbidden(
            &path.child("default"),
            "must be undefined to be structural",
        ));
    }
    if !g.title.is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("title"),
            "must be empty to be structural",
        ));
    }
    if !g.description.is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("description"),
            "must be empty to be structural",
        ));
    }
    if g.nullable {
        errs.push(FieldError::forbidden(
            &path.child("nullable"),
            "must be false to be structural",
        ));
    }
    if g.external_docs {
        errs.push(FieldError::forbidden(
            &path.child("externalDocs"),
            "must be undefined to be structural",
        ));
    }

    let x = &v.forbidden_extensions;
    if x.x_preserve_unknown_fields {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            "must be false to be structural",
        ));
    }
    if x.x_embedded_resource {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-embedded-resource"),
            "must be false to be structural",
        ));
    }
    if x.x_int_or_string {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-int-or-string"),
            "must be false to be structural",
        ));
    }
    if !x.x_list_map_keys.is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-list-map-keys"),
            "must be empty to be structural",
        ));
    }
    if x.x_list_type.is_some() {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-list-type"),
            "must be undefined to be structural",
        ));
    }
    if x.x_map_type.is_some() {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-map-type"),
            "must be undefined to be structural",
        ));
    }
    if !x.x_validations.is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("x-kubernetes-validations"),
            "must be empty to be structural",
        ));
    }

    // Reasoning about metadata in a junctor could restrict metadata in ways kube does not want.
    if v.properties.contains_key("metadata") {
        errs.push(FieldError::forbidden(
            &path.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
    use serde_json::json;

    fn check(schema: serde_json::Value) -> Vec<String> {
        let props: JSONSchemaProps = serde_json::from_value(schema).expect("test schema parses");
        let s = Structural::from_props(&props).expect("converts");
        let root = Path::new("spec")
            .child("versions")
            .index(0)
            .child("schema")
            .child("openAPIV3Schema");
        validate_structural(&root, &s)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    const ROOT: &str = "spec.versions[0].schema.openAPIV3Schema";

    #[test]
    fn a_complete_schema_is_structural() {
        assert_eq!(
            check(json!({
                "type": "object",
                "properties": {
                    "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}},
                    "spec": {
                        "type": "object",
                        "properties": {"a": {"type": "integer"}, "l": {"type": "array", "items": {"type": "string"}}},
                        "anyOf": [{"required": ["a"]}, {"properties": {"a": {"minimum": 1}}}],
                    },
                },
            })),
            Vec::<String>::new()
        );
    }

    #[test]
    fn missing_types_are_required_at_every_level() {
        assert_eq!(
            check(json!({"properties": {"foo": {}, "l": {"type": "array", "items": {}}, "m": {"type": "array"}}})),
            vec![
                format!("{ROOT}.properties[foo].type: Required value: must not be empty for specified object fields"),
                format!("{ROOT}.properties[l].items.type: Required value: must not be empty for specified array items"),
                format!("{ROOT}.properties[m].items: Required value: must be specified"),
                format!("{ROOT}.type: Required value: must not be empty at the root"),
            ]
        );
    }

    #[test]
    fn the_root_must_be_an_object_without_additional_properties() {
        assert_eq!(
            check(json!({"type": "string"})),
            vec![format!(
                r#"{ROOT}.type: Invalid value: "string": must be object at the root"#
            )]
        );
        assert_eq!(
            check(json!({"type": "object", "additionalProperties": {"type": "string"}})),
            vec![format!(
                "{ROOT}.additionalProperties: Forbidden: must not be used at the root"
            )]
        );
    }

    #[test]
    fn generics_and_extensions_under_junctors_are_forbidden() {
        assert_eq!(
            check(json!({
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "anyOf": [{"type": "string", "default": "x", "nullable": true, "description": "d", "title": "t"}],
                "allOf": [{"x-kubernetes-preserve-unknown-fields": true, "x-kubernetes-list-type": "set"}],
                "not": {"properties": {"metadata": {}}},
            })),
            vec![
                format!("{ROOT}.allOf[0].x-kubernetes-list-type: Forbidden: must be undefined to be structural"),
                format!("{ROOT}.allOf[0].x-kubernetes-preserve-unknown-fields: Forbidden: must be false to be structural"),
                format!("{ROOT}.anyOf[0].default: Forbidden: must be undefined to be structural"),
                format!("{ROOT}.anyOf[0].description: Forbidden: must be empty to be structural"),
                format!("{ROOT}.anyOf[0].nullable: Forbidden: must be false to be structural"),
                format!("{ROOT}.anyOf[0].title: Forbidden: must be empty to be structural"),
                format!("{ROOT}.anyOf[0].type: Forbidden: must be empty to be structural"),
                format!("{ROOT}.not.properties[metadata]: Forbidden: must not be specified in a nested context"),
                format!("{ROOT}.properties[metadata]: Required value: because it is defined in {ROOT}.not.properties[metadata]"),
            ]
        );
    }

    #[test]
    fn int_or_string_allows_the_two_typed_any_of_patterns() {
        let any_of = json!([{"type": "integer"}, {"type": "string"}]);
        assert!(check(json!({"type": "object", "properties": {"a": {"x-kubernetes-int-or-string": true, "anyOf": any_of}}})).is_empty());
        assert!(check(json!({"type": "object", "properties": {"a": {
            "x-kubernetes-int-or-string": true, "allOf": [{"anyOf": any_of}, {"pattern": "^a"}]
        }}}))
        .is_empty());
        assert_eq!(
            check(json!({"type": "object", "properties": {"a": {"anyOf": any_of}}})),
            // The typed anyOf pattern is accepted as such (kube does not look at the extension for it); the
            // missing type is what is reported.
            vec![format!("{ROOT}.properties[a].type: Required value: must not be empty for specified object fields")]
        );
        assert_eq!(
            check(json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "integer"}]}}})),
            vec![
                format!("{ROOT}.properties[a].anyOf[0].type: Forbidden: must be empty to be structural"),
                format!("{ROOT}.properties[a].type: Required value: must not be empty for specified object fields"),
            ]
        );
    }

    #[test]
    fn int_or_string_excludes_preserve_unknown_fields_and_embedded_resource() {
        assert_eq!(
            check(json!({"type": "object", "properties": {"a": {
                "x-kubernetes-int-or-string": true,
                "x-kubernetes-preserve-unknown-fields": true,
                "x-kubernetes-embedded-resource": true,
            }}})),
            vec![
                format!("{ROOT}.properties[a].type: Required value: must be object if x-kubernetes-embedded-resource is true"),
                format!("{ROOT}.properties[a].x-kubernetes-embedded-resource: Invalid value: true: must be false if x-kubernetes-int-or-string is true"),
                format!("{ROOT}.properties[a].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true"),
            ]
        );
    }

    #[test]
    fn embedded_resources_are_objects_with_properties_or_preserved_fields() {
        assert_eq!(
            check(json!({"type": "object", "properties": {
                "e": {"type": "object", "x-kubernetes-embedded-resource": true},
                "f": {"type": "string", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                "g": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
                      "properties": {"kind": {"type": "integer"}, "metadata": {"type": "string"}}},
            }})),
            vec![
                format!("{ROOT}.properties[e].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"),
                format!(r#"{ROOT}.properties[f].type: Invalid value: "string": must be object if x-kubernetes-embedded-resource is true"#),
                format!(r#"{ROOT}.properties[g].properties[kind].type: Invalid value: "integer": must be string"#),
                format!(r#"{ROOT}.properties[g].properties[metadata].type: Invalid value: "string": must be object"#),
            ]
        );
    }

    #[test]
    fn root_metadata_may_only_restrict_name_and_generate_name() {
        // Ported from TestValidateStructuralMetadataInvariants: the type must be object …
        for t in ["array", "number", "integer", "boolean", "string"] {
            let errs = check(json!({"type": "object", "properties": {"metadata": {"type": t}}}));
            assert!(
                errs.iter().any(|e| e.contains("must be object")),
                "{t}: {errs:?}"
            );
        }
        // … name and generateName may be restricted, nothing else of ObjectMeta …
        assert!(check(
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
                "name": {"type": "string", "pattern": "^a"}, "generateName": {"type": "string"}
            }}}})
        )
        .is_empty());
        for field in ["namespace", "labels", "annotations", "uid", "finalizers"] {
            assert_eq!(
                check(json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {field: {"type": "string"}}}}})),
                vec![format!("{ROOT}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified")],
                "{field}"
            );
        }
        // … and no other schema field.
        assert_eq!(
            check(json!({"type": "object", "properties": {"metadata": {"type": "object", "description": "x"}}})).len(),
            1
        );
        assert!(check(json!({"type": "object", "properties": {"metadata": {"type": "object", "default": {"name": "x"}}}})).is_empty());
    }

    #[test]
    fn invalid_patterns_are_reported() {
        let errs = check(
            json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "(a"}}}),
        );
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with(&format!(r#"{ROOT}.properties[a].pattern: Invalid value: "(a": must be a valid regular expression, but isn't: "#)));
    }
}
