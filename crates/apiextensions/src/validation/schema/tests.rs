//! Cases ported from apiextensions-apiserver `pkg/apiserver/validation/validation_test.go`
//! (`TestValidateCustomResource`, `TestItemsProperty`).

use super::*;
use serde_json::json;

fn errors(schema: Value, object: Value) -> Vec<String> {
    let props: JSONSchemaProps = serde_json::from_value(schema).expect("test schema parses");
    let mut errs: Vec<String> = SchemaValidator::new(&props)
        .validate(&object)
        .iter()
        .map(ToString::to_string)
        .collect();
    errs.sort();
    errs
}

fn assert_errors(schema: Value, object: Value, expected: &[&str]) {
    let mut expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(errors(schema, object.clone()), expected, "object {object}");
}

#[test]
fn nullable_int_or_string() {
    let schema = json!({"type": "object", "properties": {"field": {"nullable": true, "x-kubernetes-int-or-string": true}}});
    for ok in [
        json!({}),
        json!({"field": 42}),
        json!({"field": "foo"}),
        json!({"field": null}),
    ] {
        assert_errors(schema.clone(), ok, &[]);
    }
    for (v, t) in [
        (json!(true), "boolean"),
        (json!(1.2), "number"),
        (json!({}), "object"),
        (json!([]), "array"),
    ] {
        assert_errors(
            schema.clone(),
            json!({"field": v}),
            &[&format!(
                r#"field: Invalid value: "{t}": field in body must be of type integer,string: "{t}""#
            )],
        );
    }
}

#[test]
fn nullable_int_or_string_and_user_provided_any_of() {
    let schema = json!({"type": "object", "properties": {"field": {
        "nullable": true, "x-kubernetes-int-or-string": true,
        "anyOf": [{"type": "integer"}, {"type": "string"}],
    }}});
    for ok in [
        json!({}),
        json!({"field": null}),
        json!({"field": 42}),
        json!({"field": "foo"}),
    ] {
        assert_errors(schema.clone(), ok, &[]);
    }
    for (v, t) in [
        (json!(true), "boolean"),
        (json!(1.2), "number"),
        (json!({}), "object"),
        (json!([]), "array"),
    ] {
        assert_errors(
            schema.clone(),
            json!({"field": v}),
            &[
                r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
                &format!(
                    r#"field: Invalid value: "{t}": field in body must be of type integer,string: "{t}""#
                ),
                &format!(
                    r#"field: Invalid value: "{t}": field in body must be of type integer: "{t}""#
                ),
            ],
        );
    }
}

#[test]
fn nullable_int_or_string_and_user_provided_all_of() {
    let schema = json!({"type": "object", "properties": {"field": {
        "nullable": true, "x-kubernetes-int-or-string": true,
        "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}],
    }}});
    for ok in [
        json!({}),
        json!({"field": null}),
        json!({"field": 42}),
        json!({"field": "foo"}),
    ] {
        assert_errors(schema.clone(), ok, &[]);
    }
    assert_errors(
        schema,
        json!({"field": true}),
        &[
            r#"<nil>: Invalid value: "": "field" must validate all the schemas (allOf). None validated"#,
            r#"<nil>: Invalid value: "": "field" must validate at least one schema (anyOf)"#,
            r#"field: Invalid value: "boolean": field in body must be of type integer,string: "boolean""#,
            r#"field: Invalid value: "boolean": field in body must be of type integer: "boolean""#,
        ],
    );
}

#[test]
fn invalid_regex() {
    let errs = errors(
        json!({"type": "object", "properties": {"field": {"type": "string", "pattern": "+"}}}),
        json!({"field": "foo"}),
    );
    assert_eq!(errs.len(), 1);
    assert!(errs[0].starts_with(r#"field: Invalid value: "foo": field in body should match '+, but pattern is invalid: "#), "{errs:?}");
}

#[test]
fn required_field() {
    let schema = json!({"type": "object", "required": ["field"], "properties": {"field": {
        "type": "object", "required": ["nested"], "properties": {"nested": {}},
    }}});
    assert_errors(
        schema.clone(),
        json!({"test": "a"}),
        &["field: Required value"],
    );
    assert_errors(
        schema,
        json!({"field": {}}),
        &["field.nested: Required value"],
    );
}

#[test]
fn enum_values() {
    let schema = json!({"type": "object", "properties": {"field": {
        "type": "object", "required": ["nestedint", "nestedstring"],
        "properties": {
            "nestedint": {"type": "integer", "enum": [1, 2]},
            "nestedstring": {"type": "string", "enum": ["a", "b"]},
        },
    }}});
    assert_errors(
        schema.clone(),
        json!({"field": {}}),
        &[
            "field.nestedint: Required value",
            "field.nestedstring: Required value",
        ],
    );
    assert_errors(
        schema.clone(),
        json!({"field": {"nestedint": "x", "nestedstring": true}}),
        &[
            r#"field.nestedint: Invalid value: "string": field.nestedint in body must be of type integer: "string""#,
            r#"field.nestedint: Unsupported value: "x": supported values: "1", "2""#,
            r#"field.nestedstring: Invalid value: "boolean": field.nestedstring in body must be of type string: "boolean""#,
            r#"field.nestedstring: Unsupported value: true: supported values: "a", "b""#,
        ],
    );
    assert_errors(
        schema,
        json!({"field": {"nestedint": 2, "nestedstring": "a"}}),
        &[],
    );
}

#[test]
fn max_properties_max_items_and_max_length() {
    assert_errors(
        json!({"type": "object", "properties": {"fieldX": {"type": "object", "maxProperties": 2}}}),
        json!({"fieldX": {"a": true, "b": true, "c": true}}),
        &["fieldX: Too many: 3: must have at most 2 items"],
    );
    assert_errors(
        json!({"type": "object", "properties": {"fieldX": {"type": "array", "maxItems": 2}}}),
        json!({"fieldX": ["a", "b", "c"]}),
        &["fieldX: Too many: 3: must have at most 2 items"],
    );
    assert_errors(
        json!({"type": "object", "properties": {"fieldX": {"type": "string", "maxLength": 2}}}),
        json!({"fieldX": "abc"}),
        &["fieldX: Too long: may not be more than 2 bytes"],
    );
}

#[test]
fn items_property() {
    // TestItemsProperty: a field called "items" in an object is not an array's items.
    assert_errors(
        json!({"properties": {"spec": {"properties": {"replicas": {"type": "integer"}}}}}),
        json!({"spec": {"replicas": 1, "items": ["1", "2"]}}),
        &[],
    );
    assert_errors(
        json!({"properties": {"secrets": {"type": "array", "items": {"type": "string"}}}}),
        json!({"secrets": ["1", "2"]}),
        &[],
    );
}

#[test]
fn wrong_types_are_reported_with_the_json_type_seen() {
    assert_errors(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}),
        json!({"spec": {"replicas": "string"}}),
        &[
            r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#,
        ],
    );
    // An integral float is an integer; an integer is a number.
    assert_errors(
        json!({"type": "object", "properties": {"i": {"type": "integer"}, "n": {"type": "number"}}}),
        json!({"i": 2.0, "n": 3}),
        &[],
    );
    assert_errors(
        json!({"type": "object", "properties": {"s": {"type": "string"}}}),
        json!({"s": null}),
        &[r#"s: Invalid value: "null": s in body must be of type string: "null""#],
    );
    assert_errors(
        json!({"type": "object", "properties": {"s": {"type": "string", "nullable": true}}}),
        json!({"s": null}),
        &[],
    );
}

#[test]
fn bounds_lengths_and_patterns() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "multipleOf": 2},
        "ratio": {"type": "number", "minimum": 0.5, "exclusiveMinimum": true},
        "name": {"type": "string", "minLength": 3, "pattern": "^a"},
        "tags": {"type": "array", "minItems": 1, "uniqueItems": true, "items": {"type": "string"}},
        "labels": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "string", "maxLength": 3}},
    }}}});
    assert_errors(
        schema.clone(),
        json!({"spec": {"replicas": 0, "ratio": 0.5, "name": "ab", "tags": [], "labels": {}}}),
        &[
            "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
            "spec.ratio: Invalid value: 0.5: spec.ratio in body should be greater than 0.5",
            r#"spec.name: Invalid value: "ab": spec.name in body should be at least 3 chars long"#,
            "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items",
            "spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties",
        ],
    );
    assert_errors(
        schema.clone(),
        json!({"spec": {"replicas": 11, "name": "bcd", "tags": ["x", "x"], "labels": {"k": "long"}}}),
        &[
            "spec.replicas: Invalid value: 11: spec.replicas in body should be a multiple of 2",
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
            r#"spec.name: Invalid value: "bcd": spec.name in body should match '^a'"#,
            r#"spec.tags: Invalid value: "": spec.tags in body shouldn't contain duplicates"#,
            "spec.labels.k: Too long: may not be more than 3 bytes",
        ],
    );
    assert_errors(
        schema,
        json!({"spec": {"replicas": 4, "ratio": 0.6, "name": "abc", "tags": ["x"], "labels": {"k": "v"}}}),
        &[],
    );
}

#[test]
fn formats_are_checked_for_strings() {
    let schema = json!({"type": "object", "properties": {
        "t": {"type": "string", "format": "date-time"},
        "u": {"type": "string", "format": "uuid"},
        "x": {"type": "string", "format": "unknown-format"},
    }});
    assert_errors(
        schema.clone(),
        json!({"t": "yesterday", "u": "nope", "x": "anything"}),
        &[
            r#"t: Invalid value: "yesterday": t in body must be of type date-time: "yesterday""#,
            r#"u: Invalid value: "nope": u in body must be of type uuid: "nope""#,
        ],
    );
    assert_errors(
        schema,
        json!({"t": "2024-05-06T07:08:09Z", "u": "123e4567-e89b-12d3-a456-426614174000"}),
        &[],
    );
}

#[test]
fn one_of_and_not_report_at_the_root() {
    let schema = json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
        "not": {"required": ["c"]},
    }}});
    assert_errors(schema.clone(), json!({"spec": {"a": "x"}}), &[]);
    assert_errors(
        schema.clone(),
        json!({"spec": {"a": "x", "b": "y"}}),
        &[
            r#"<nil>: Invalid value: "": "spec" must validate one and only one schema (oneOf). Found 2 valid alternatives"#,
        ],
    );
    assert_errors(
        schema.clone(),
        json!({"spec": {}}),
        &[
            r#"<nil>: Invalid value: "": "spec" must validate one and only one schema (oneOf). Found none valid"#,
            "spec.a: Required value",
        ],
    );
    let not_schema = json!({"type": "object", "properties": {"spec": {"type": "object", "not": {"required": ["a"]}}}});
    assert_errors(
        not_schema,
        json!({"spec": {"a": 1}}),
        &[r#"<nil>: Invalid value: "": "spec" must not validate the schema (not)"#],
    );
}

#[test]
fn validate_at_reports_below_the_given_path() {
    let props: JSONSchemaProps =
        serde_json::from_value(json!({"type": "object", "properties": {"a": {"type": "integer"}}, "anyOf": [{"required": ["b"]}]}))
            .expect("parses");
    let errs: Vec<String> = SchemaValidator::new(&props)
        .validate_at(&Path::new("x"), &json!({"a": "s"}))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        errs.contains(
            &r#"x.a: Invalid value: "string": a in body must be of type integer: "string""#
                .to_string()
        ),
        "{errs:?}"
    );
    assert!(
        errs.contains(
            &r#"x: Invalid value: "": "" must validate at least one schema (anyOf)"#.to_string()
        ),
        "{errs:?}"
    );
    assert!(
        errs.contains(&"x.b: Required value".to_string()),
        "{errs:?}"
    );
}

#[test]
fn enum_matching_converts_numbers_like_go() {
    let schema =
        json!({"type": "object", "properties": {"n": {"type": "number", "enum": [1.5, 2]}}});
    assert_errors(schema.clone(), json!({"n": 1.5}), &[]);
    assert_errors(schema.clone(), json!({"n": 2}), &[]);
    assert_errors(
        schema,
        json!({"n": 3}),
        &[r#"n: Unsupported value: 3: supported values: "1.5", "2""#],
    );
}

fn update_errors(schema: Value, new: Value, old: Value) -> Vec<String> {
    let props: JSONSchemaProps = serde_json::from_value(schema).expect("test schema parses");
    let mut errs: Vec<String> = SchemaValidator::new(&props)
        .validate_update(&new, &old)
        .iter()
        .map(ToString::to_string)
        .collect();
    errs.sort();
    errs
}

#[test]
fn ratcheting_keeps_unchanged_invalid_values() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 2},
        "b": {"type": "string", "maxLength": 2},
    }});
    let old = json!({"a": "too long", "b": "ok"});
    assert!(update_errors(schema.clone(), old.clone(), old.clone()).is_empty());
    assert!(update_errors(
        schema.clone(),
        json!({"a": "too long", "b": "no"}),
        old.clone()
    )
    .is_empty());
    assert_eq!(
        update_errors(
            schema.clone(),
            json!({"a": "still too long", "b": "ok"}),
            old.clone()
        ),
        vec!["a: Too long: may not be more than 2 bytes"]
    );
    assert_eq!(
        update_errors(schema, json!({"a": "too long", "b": "now too long"}), old),
        vec!["b: Too long: may not be more than 2 bytes"]
    );
}

#[test]
fn ratcheting_keeps_a_missing_required_field_of_an_unchanged_object() {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "required": ["x"], "properties": {"x": {"type": "string"}, "y": {"type": "string"}}},
    }});
    let old = json!({"spec": {"y": "1"}});
    assert!(update_errors(schema.clone(), old.clone(), old.clone()).is_empty());
    assert_eq!(
        update_errors(schema, json!({"spec": {"y": "2"}}), old),
        vec!["spec.x: Required value"]
    );
}

#[test]
fn ratcheting_correlates_map_lists_by_key_and_never_sets() {
    let item = json!({"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"}, "v": {"type": "integer", "minimum": 0},
    }});
    let schema = json!({"type": "object", "properties": {
        "m": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": item},
        "s": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer", "minimum": 0}},
        "l": {"type": "array", "items": {"type": "integer", "minimum": 0}},
    }});
    let old =
        json!({"m": [{"name": "a", "v": -1}, {"name": "b", "v": 1}], "s": [-1], "l": [-1, 2]});
    // Reordering a map list keeps its items correlated; a set's items never are.
    let new =
        json!({"m": [{"name": "b", "v": 1}, {"name": "a", "v": -1}], "s": [-1], "l": [-1, 3]});
    assert_eq!(
        update_errors(schema.clone(), new, old.clone()),
        vec!["s[0]: Invalid value: -1: s[0] in body should be greater than or equal to 0"]
    );
    // By index: moving the invalid item in a plain list makes it new.
    let moved =
        json!({"m": [{"name": "a", "v": -1}, {"name": "b", "v": 1}], "s": [-1], "l": [2, -1]});
    assert_eq!(
        update_errors(schema, moved, old),
        vec![
            "l[1]: Invalid value: -1: l[1] in body should be greater than or equal to 0",
            "s[0]: Invalid value: -1: s[0] in body should be greater than or equal to 0",
        ]
    );
}

#[test]
fn ratcheting_treats_fields_outside_the_schema_as_changed() {
    let schema = json!({"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-preserve-unknown-fields": true, "minProperties": 3,
        "properties": {"a": {"type": "string"}},
    }}});
    let old = json!({"spec": {"a": "x", "free": 1}});
    // kube cannot compare the uncovered field, so the object counts as changed and its error stays.
    assert_eq!(
        update_errors(schema, old.clone(), old),
        vec!["spec: Invalid value: 2: spec in body should have at least 3 properties"]
    );
}

// TestScalarRatcheting, TestObjectScalarFieldsRatcheting, TestObjectObjectFieldsRatcheting (ratcheting_test.go).
#[test]
fn go_ratcheting_cases() {
    let medium = json!({"type": "number", "minimum": 50, "maximum": 10000});
    assert!(update_errors(medium.clone(), json!(1), json!(1)).is_empty());
    assert!(!update_errors(medium.clone(), json!(2), json!(1)).is_empty());

    let object = json!({"type": "object", "properties": {
        "zero": {"type": "number", "minimum": 0, "maximum": 0},
        "small": {"type": "number", "maximum": 50},
        "medium": medium,
        "large": {"type": "number", "minimum": 10000},
    }});
    let nested = json!({"type": "object", "properties": {"nested": object.clone()}});
    let wrap = |v: Value| json!({"nested": v});
    for (schema, w) in [(object, false), (nested, true)] {
        let v = |x: Value| if w { wrap(x) } else { x };
        assert!(update_errors(
            schema.clone(),
            v(json!({"small": 500})),
            v(json!({"small": 500}))
        )
        .is_empty());
        assert!(update_errors(
            schema.clone(),
            v(json!({"small": 501, "medium": 500})),
            v(json!({"small": 501}))
        )
        .is_empty());
        assert!(
            !update_errors(schema, v(json!({"small": 501})), v(json!({"small": 500}))).is_empty()
        );
    }
}
