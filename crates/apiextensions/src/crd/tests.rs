//! Cases in the spirit of apiextensions `validation_test.go` (`TestValidateCustomResourceDefinition`), on v1 CRDs.

use super::*;
use serde_json::{json, Value};

fn crd(v: Value) -> CustomResourceDefinition {
    let mut c: CustomResourceDefinition = serde_json::from_value(v).expect("test CRD parses");
    set_defaults(&mut c);
    c
}

fn base() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "plural.group.com"},
        "spec": {
            "group": "group.com",
            "scope": "Namespaced",
            "names": {"plural": "plural", "singular": "singular", "kind": "Plural", "listKind": "PluralList"},
            "versions": [{
                "name": "version", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}},
            }],
        },
    })
}

fn with_schema(schema: Value) -> Value {
    let mut v = base();
    v["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema;
    v
}

fn errors(v: Value) -> Vec<String> {
    let mut errs: Vec<String> = validate_custom_resource_definition(&crd(v))
        .iter()
        .map(ToString::to_string)
        .collect();
    errs.sort();
    errs
}

#[test]
fn a_valid_crd_has_no_errors() {
    assert_eq!(errors(base()), Vec::<String>::new());
}

#[test]
fn defaults_fill_singular_list_kind_conversion_and_stored_versions() {
    let mut v = base();
    v["spec"]["names"] = json!({"plural": "plural", "kind": "Plural"});
    let c = crd(v);
    assert_eq!(c.spec.names.singular.as_deref(), Some("plural"));
    assert_eq!(c.spec.names.list_kind.as_deref(), Some("PluralList"));
    assert_eq!(
        c.spec.conversion.as_ref().map(|c| c.strategy.as_str()),
        Some("None")
    );
    assert_eq!(
        c.status.as_ref().and_then(|s| s.stored_versions.clone()),
        Some(vec!["version".to_string()])
    );
}

#[test]
fn name_must_be_plural_dot_group() {
    let mut v = base();
    v["metadata"]["name"] = json!("other.group.com");
    assert_eq!(
        errors(v),
        vec![
            r#"metadata.name: Invalid value: "other.group.com": must be spec.names.plural+"."+spec.group"#
        ]
    );
}

#[test]
fn group_scope_and_names_are_checked() {
    let mut v = base();
    v["metadata"]["name"] = json!("Plural.group");
    v["spec"]["group"] = json!("group");
    v["spec"]["scope"] = json!("Galaxy");
    v["spec"]["names"] = json!({"plural": "Plural", "singular": "sin gular", "kind": "9Kind", "listKind": "9Kind", "shortNames": ["A"], "categories": ["_"]});
    let errs = errors(v);
    let expect = [
        r#"spec.group: Invalid value: "group": should be a domain with at least one dot"#,
        r#"spec.scope: Unsupported value: "Galaxy": supported values: "Cluster", "Namespaced""#,
        r#"spec.names.listKind: Invalid value: "9Kind": kind and listKind may not be the same"#,
    ];
    for e in expect {
        assert!(errs.contains(&e.to_string()), "missing {e} in {errs:#?}");
    }
    for prefix in [
        "metadata.name: Invalid value: \"Plural.group\": a lowercase RFC 1123 subdomain",
        "spec.names.plural: Invalid value: \"Plural\": a DNS-1035 label",
        "spec.names.singular: Invalid value: \"sin gular\": a DNS-1035 label",
        "spec.names.kind: Invalid value: \"9Kind\": may have mixed case, but should otherwise match: a DNS-1035 label",
        "spec.names.listKind: Invalid value: \"9Kind\": may have mixed case, but should otherwise match: a DNS-1035 label",
        "spec.names.shortNames[0]: Invalid value: \"A\": a DNS-1035 label",
        "spec.names.categories[0]: Invalid value: \"_\": a DNS-1035 label",
    ] {
        assert!(errs.iter().any(|e| e.starts_with(prefix)), "missing {prefix} in {errs:#?}");
    }
}

#[test]
fn exactly_one_storage_version_and_unique_names() {
    let mut v = base();
    let version = v["spec"]["versions"][0].clone();
    let mut second = version.clone();
    second["storage"] = json!(true);
    v["spec"]["versions"] = json!([version, second]);
    let errs = errors(v);
    assert!(
        errs.iter()
            .any(|e| e.starts_with("spec.versions: Invalid value: [{")
                && e.ends_with(": must contain unique version names")),
        "{errs:#?}"
    );
    assert!(
        errs.iter()
            .any(|e| e.ends_with(": must have exactly one version marked as storage version")),
        "{errs:#?}"
    );

    let mut none = base();
    none["spec"]["versions"][0]["storage"] = json!(false);
    let errs = errors(none);
    assert!(errs.contains(&"status.storedVersions: Invalid value: []string(nil): must have at least one stored version".to_string()), "{errs:#?}");
}

#[test]
fn a_schema_is_required_for_every_version() {
    let mut v = base();
    v["spec"]["versions"][0]
        .as_object_mut()
        .expect("object")
        .remove("schema");
    assert_eq!(
        errors(v),
        vec!["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"]
    );
}

#[test]
fn identical_schemas_are_reported_at_spec_validation() {
    // One version (or several with equal schemas): kube validates the schema as spec.validation.
    assert_eq!(
        errors(with_schema(json!({"type": "object", "properties": {"foo": {}}}))),
        vec!["spec.validation.openAPIV3Schema.properties[foo].type: Required value: must not be empty for specified object fields"]
    );
    // Different schemas per version: each at its own path.
    let mut v = with_schema(json!({"type": "object", "properties": {"foo": {}}}));
    let mut second = v["spec"]["versions"][0].clone();
    second["name"] = json!("v2");
    second["storage"] = json!(false);
    second["schema"]["openAPIV3Schema"] = json!({"type": "object", "properties": {"bar": {}}});
    v["spec"]["versions"]
        .as_array_mut()
        .expect("array")
        .push(second);
    assert_eq!(
        errors(v),
        vec![
            "spec.versions[0].schema.openAPIV3Schema.properties[foo].type: Required value: must not be empty for specified object fields",
            "spec.versions[1].schema.openAPIV3Schema.properties[bar].type: Required value: must not be empty for specified object fields",
        ]
    );
}

#[test]
fn additional_properties_and_properties_are_mutually_exclusive() {
    assert_eq!(
        errors(with_schema(json!({"type": "object", "properties": {"m": {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "additionalProperties": {"type": "string"},
        }}}))),
        vec!["spec.validation.openAPIV3Schema.properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"]
    );
}

#[test]
fn unsupported_keywords_and_types() {
    let errs = errors(with_schema(json!({"type": "object", "properties": {
        "a": {"type": "foo"},
        "b": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
        "c": {"type": "object", "x-kubernetes-preserve-unknown-fields": false},
    }})));
    let p = "spec.validation.openAPIV3Schema";
    for e in [
        format!(r#"{p}.properties[a].type: Unsupported value: "foo": supported values: "array", "boolean", "integer", "number", "object", "string""#),
        format!("{p}.properties[b].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"),
        format!("{p}.properties[c].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"),
    ] {
        assert!(errs.contains(&e), "missing {e} in {errs:#?}");
    }
}

#[test]
fn defaults_must_validate_and_be_pruned_and_not_be_in_top_level_metadata() {
    let errs = errors(with_schema(json!({"type": "object", "properties": {
        "metadata": {"type": "object", "default": {"name": "x"}},
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "minimum": 1, "default": 0},
            "obj": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": "y"}},
            "ok": {"type": "string", "default": "fine"},
        }},
    }})));
    let p = "spec.validation.openAPIV3Schema";
    assert_eq!(
        errs,
        vec![
            format!("{p}.properties[metadata].default: Forbidden: must not be set in top-level metadata"),
            format!(r#"{p}.properties[spec].properties[obj].default: Invalid value: map[string]interface {{}}{{"a":"x", "b":"y"}}: must not have unknown fields"#),
            // The default is validated as a document of its own, so kube-openapi names no field in the message.
            format!("{p}.properties[spec].properties[replicas].default: Invalid value: 0:  in body should be greater than or equal to 1"),
        ]
    );
}

#[test]
fn list_types_need_matching_types_and_keys() {
    let errs = errors(with_schema(json!({"type": "object", "properties": {
        "s": {"type": "object", "x-kubernetes-list-type": "set"},
        "m": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
        "n": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["missing"], "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
    }})));
    let p = "spec.validation.openAPIV3Schema";
    for e in [
        format!(r#"{p}.properties[s].type: Invalid value: "object": must be array if x-kubernetes-list-type is specified"#),
        format!("{p}.properties[m].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"),
        format!(r#"{p}.properties[n].x-kubernetes-list-map-keys: Invalid value: []string{{"missing"}}: entries must all be names of item properties"#),
    ] {
        assert!(errs.contains(&e), "missing {e} in {errs:#?}");
    }
}

#[test]
fn status_subresource_restricts_the_root() {
    let mut v = with_schema(json!({"type": "object", "additionalProperties": true}));
    v["spec"]["versions"][0]["subresources"] = json!({"status": {}});
    let errs = errors(v);
    assert!(
        errs.iter().any(|e| e.starts_with("spec.validation.openAPIV3Schema: Invalid value: {")
            && e.ends_with("fields are allowed at the root of the schema if the status subresource is enabled")),
        "{errs:#?}"
    );
}

#[test]
fn scale_paths_and_printer_columns() {
    let mut v = base();
    v["spec"]["versions"][0]["subresources"] = json!({"scale": {"specReplicasPath": ".status.replicas", "statusReplicasPath": "status.replicas"}});
    v["spec"]["versions"][0]["additionalPrinterColumns"] =
        json!([{"name": "x", "type": "widget", "jsonPath": "spec"}]);
    assert_eq!(
        errors(v),
        vec![
            r#"spec.additionalPrinterColumns[0].JSONPath: Invalid value: "spec": must be a simple json path starting with ."#,
            r#"spec.additionalPrinterColumns[0].type: Invalid value: "widget": must be one of boolean,date,integer,number,string"#,
            r#"spec.subresources.scale.specReplicasPath: Invalid value: ".status.replicas": should be a json path under .spec"#,
            r#"spec.subresources.scale.statusReplicasPath: Invalid value: "status.replicas": must be a simple json path starting with ."#,
        ]
    );
}

#[test]
fn webhook_conversion_needs_a_client_config_and_review_versions() {
    let mut v = base();
    v["spec"]["conversion"] =
        json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v2"]}});
    assert_eq!(
        errors(v),
        vec![
            r#"spec.conversion.conversionReviewVersions: Invalid value: []string{"v2"}: must include at least one of v1, v1beta1"#,
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
        ]
    );
}

#[test]
fn protected_groups_need_api_approval() {
    let mut v = base();
    v["metadata"]["name"] = json!("plural.x.k8s.io");
    v["spec"]["group"] = json!("x.k8s.io");
    assert_eq!(
        errors(v.clone()),
        vec![
            r#"metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111"#
        ]
    );
    v["metadata"]["annotations"] =
        json!({"api-approved.kubernetes.io": "unapproved, experimental"});
    assert!(errors(v.clone()).is_empty());
    v["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/78458"});
    assert!(errors(v.clone()).is_empty());
    v["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": "yes please"});
    assert_eq!(
        errors(v),
        vec![
            r#"metadata.annotations[api-approved.kubernetes.io]: Invalid value: "yes please": protected groups must have approval annotation "api-approved.kubernetes.io" with either a URL or a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111"#
        ]
    );
}

#[test]
fn preserve_unknown_fields_true_is_refused() {
    let mut v = base();
    v["spec"]["preserveUnknownFields"] = json!(true);
    assert_eq!(
        errors(v),
        vec!["spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"]
    );
}

#[test]
fn updates_keep_group_and_plural_and_once_established_scope_and_kind() {
    let mut old = crd(base());
    if let Some(status) = old.status.as_mut() {
        status.conditions = Some(vec![serde_json::from_value(
            json!({"type": "Established", "status": "True"}),
        )
        .expect("condition")]);
    }
    let mut v = base();
    v["spec"]["scope"] = json!("Cluster");
    v["spec"]["names"]["kind"] = json!("Other");
    let errs: Vec<String> = validate_custom_resource_definition_update(&crd(v), &old)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errs,
        vec![
            r#"spec.scope: Invalid value: "Cluster": field is immutable"#,
            r#"spec.names.kind: Invalid value: "Other": field is immutable"#,
        ]
    );
}

/// The error types and fields of the CRD's errors, sorted, as the Go tests compare them.
fn matches(v: Value) -> Vec<(crate::field::ErrorType, String)> {
    let mut errs: Vec<(crate::field::ErrorType, String)> =
        validate_custom_resource_definition(&crd(v))
            .into_iter()
            .map(|e| (e.error_type, e.field))
            .collect();
    errs.sort_by(|a, b| a.1.cmp(&b.1));
    errs
}

fn expect(list: &[(crate::field::ErrorType, &str)]) -> Vec<(crate::field::ErrorType, String)> {
    let mut v: Vec<(crate::field::ErrorType, String)> =
        list.iter().map(|(t, p)| (*t, p.to_string())).collect();
    v.sort_by(|a, b| a.1.cmp(&b.1));
    v
}

#[test]
fn go_case_defaults_without_types_are_not_structural() {
    use crate::field::ErrorType::Required;
    assert_eq!(
        matches(with_schema(json!({"properties": {"a": {"default": 42.0}}}))),
        expect(&[
            (
                Required,
                "spec.validation.openAPIV3Schema.properties[a].type"
            ),
            (Required, "spec.validation.openAPIV3Schema.type"),
        ])
    );
    assert!(matches(with_schema(
        json!({"type": "object", "properties": {"a": {"type": "number", "default": 42.0}}})
    ))
    .is_empty());
}

#[test]
fn go_case_defaults_in_value_validation() {
    use crate::field::ErrorType::Forbidden;
    let p = "spec.validation.openAPIV3Schema.properties[a]";
    assert_eq!(
        matches(with_schema(json!({"type": "object", "properties": {"a": {
            "type": "number",
            "not": {"default": 42.0},
            "anyOf": [{"default": 42.0}],
            "allOf": [{"default": 42.0}],
            "oneOf": [{"default": 42.0}],
        }}}))),
        expect(&[
            (Forbidden, &format!("{p}.not.default")),
            (Forbidden, &format!("{p}.allOf[0].default")),
            (Forbidden, &format!("{p}.anyOf[0].default")),
            (Forbidden, &format!("{p}.oneOf[0].default")),
        ])
    );
}

#[test]
fn go_case_invalid_defaults() {
    use crate::field::ErrorType::{Invalid, TypeInvalid};
    let foo = json!({"foo": {"type": "string"}});
    let embedded_meta =
        json!({"foo": "abc", "apiVersion": "foo/v1", "kind": "v1", "metadata": {"name": "foo"}});
    let mut embedded_preserve = embedded_meta.clone();
    embedded_preserve["bar"] = json!(42);
    let mut embedded_unpruned_meta = embedded_preserve.clone();
    embedded_unpruned_meta["metadata"]["unspecified"] = json!("bar");
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "object", "properties": foo, "default": {"foo": "abc", "bar": 42}},
        "b": {"type": "object", "properties": foo, "default": {"foo": "abc"}},
        "c": {"type": "object", "properties": foo, "default": {"foo": 42}},
        "d": {"type": "object", "properties": {
            "good": {"type": "string", "pattern": "a"}, "bad": {"type": "string", "pattern": "b"},
        }, "default": {"good": "a", "bad": "a"}},
        "e": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
            "preserveUnknownFields": {"type": "object", "default": {"foo": "abc", "bar": 42}},
            "nestedProperties": {"type": "object", "properties": foo, "default": {"foo": "abc", "bar": 42}},
        }},
        "embedded-fine": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": foo, "default": embedded_meta},
        "embedded-preserve": {
            "type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
            "properties": foo, "default": embedded_preserve,
        },
        "embedded-preserve-unpruned-objectmeta": {
            "type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
            "properties": foo, "default": embedded_unpruned_meta,
        },
    }});
    let p = "spec.validation.openAPIV3Schema";
    assert_eq!(
        matches(with_schema(schema)),
        expect(&[
            (Invalid, &format!("{p}.properties[a].default")),
            (TypeInvalid, &format!("{p}.properties[c].default.foo")),
            (Invalid, &format!("{p}.properties[d].default.bad")),
            (
                Invalid,
                &format!("{p}.properties[e].properties[preserveUnknownFields].default")
            ),
            (
                Invalid,
                &format!("{p}.properties[e].properties[nestedProperties].default")
            ),
        ])
    );
}

#[test]
fn go_case_additional_properties_at_resource_root() {
    use crate::field::ErrorType::{Forbidden, Required};
    let p = "spec.validation.openAPIV3Schema";
    assert_eq!(
        matches(with_schema(json!({"type": "object", "properties": {
            "embedded1": {"type": "object", "x-kubernetes-embedded-resource": true, "additionalProperties": {"type": "string"}},
            "embedded2": {
                "type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true,
                "additionalProperties": {"type": "string"},
            },
        }}))),
        expect(&[
            (
                Forbidden,
                &format!("{p}.properties[embedded1].additionalProperties")
            ),
            (Required, &format!("{p}.properties[embedded1].properties")),
            (
                Forbidden,
                &format!("{p}.properties[embedded2].additionalProperties")
            ),
        ])
    );
}

#[test]
fn deprecation_warnings_are_for_deprecated_versions_and_printable() {
    let mut v = base();
    v["spec"]["versions"][0]["deprecationWarning"] = json!("old");
    assert_eq!(
        errors(v.clone()),
        vec![
            r#"spec.versions[0].deprecationWarning: Invalid value: "old": can only be set for deprecated versions"#
        ]
    );
    v["spec"]["versions"][0]["deprecated"] = json!(true);
    assert!(errors(v.clone()).is_empty());
    v["spec"]["versions"][0]["deprecationWarning"] = json!("a\tb");
    assert_eq!(
        errors(v),
        vec![
            r#"spec.versions[0].deprecationWarning: Invalid value: "a\tb": must only contain printable UTF-8 characters; non-printable character found at index 1"#
        ]
    );
}
