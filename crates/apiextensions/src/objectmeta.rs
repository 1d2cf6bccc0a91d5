//! Validation of embedded resources (`x-kubernetes-embedded-resource`): apiVersion and kind are required and
//! well-formed, metadata is a valid ObjectMeta; kube's `schema/objectmeta/validation.go`.

use serde_json::{Map, Value};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rkcm_labels::validation as names;

use crate::field::{ErrorList, FieldError, Path};
use crate::structural::Structural;

/// Validates every embedded resource in `x` (kube's `objectmeta.Validate`). With `is_resource_root`, `x` itself is
/// validated as an embedded resource too; the API server validates a custom resource's own metadata itself, so it
/// passes `false`.
pub fn validate_embedded_resources(
    path: &Path,
    x: &Value,
    s: Option<&Structural>,
    is_resource_root: bool,
) -> ErrorList {
    if is_resource_root {
        let mut root = s.cloned().unwrap_or_default();
        root.extensions.x_embedded_resource = true;
        return validate(path, x, Some(&root));
    }
    validate(path, x, s)
}

fn validate(path: &Path, x: &Value, s: Option<&Structural>) -> ErrorList {
    let Some(s) = s else { return Vec::new() };
    let mut errs = Vec::new();
    match x {
        Value::Object(map) => {
            if s.extensions.x_embedded_resource {
                errs.extend(validate_embedded_resource(path, map));
            }
            for (k, v) in map {
                if let Some(prop) = s.properties.get(k) {
                    errs.extend(validate(&path.child(k), v, Some(prop)));
                } else if s.generic.additional_properties.is_some() {
                    errs.extend(validate(&path.key(k), v, s.additional_properties_schema()));
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                errs.extend(validate(&path.index(i), v, s.items.as_deref()));
            }
        }
        _ => {}
    }
    errs
}

fn validate_embedded_resource(path: &Path, x: &Map<String, Value>) -> ErrorList {
    let mut errs = Vec::new();
    if !x.contains_key("apiVersion") {
        errs.push(FieldError::required(
            &path.child("apiVersion"),
            "must not be empty",
        ));
    }
    if !x.contains_key("kind") {
        errs.push(FieldError::required(
            &path.child("kind"),
            "must not be empty",
        ));
    }
    for (k, v) in x {
        match k.as_str() {
            "apiVersion" => {
                let p = path.child("apiVersion");
                match v.as_str() {
                    None => errs.push(FieldError::invalid(&p, v.clone(), "must be a string")),
                    Some("") => errs.push(FieldError::invalid(&p, "", "must not be empty")),
                    Some(api_version) if api_version.matches('/').count() > 1 => {
                        errs.push(FieldError::invalid(
                            &p,
                            api_version,
                            format!("unexpected GroupVersion string: {api_version}"),
                        ))
                    }
                    Some(_) => {}
                }
            }
            "kind" => {
                let p = path.child("kind");
                match v.as_str() {
                    None => errs.push(FieldError::invalid(&p, v.clone(), "must be a string")),
                    Some("") => errs.push(FieldError::invalid(&p, "", "must not be empty")),
                    Some(kind) => {
                        let problems = names::is_dns1035_label(&kind.to_lowercase());
                        if !problems.is_empty() {
                            errs.push(FieldError::invalid(
                                &p,
                                kind,
                                format!(
                                    "may have mixed case, but should otherwise match: {}",
                                    problems.join(",")
                                ),
                            ));
                        }
                    }
                }
            }
            "metadata" => errs.extend(validate_embedded_object_meta(&path.child("metadata"), v)),
            _ => {}
        }
    }
    errs
}

/// kube's `ValidateObjectMeta` with path-segment names, for an embedded resource's metadata: name and
/// generateName, namespace (when set), labels and annotations.
fn validate_embedded_object_meta(path: &Path, v: &Value) -> ErrorList {
    if !v.is_object() {
        return vec![FieldError::invalid(
            path,
            v.clone(),
            "invalid metadata type: must be an object",
        )];
    }
    let meta: ObjectMeta = match serde_json::from_value(v.clone()) {
        Ok(m) => m,
        Err(e) => return vec![FieldError::invalid(path, v.clone(), e.to_string())],
    };
    let mut errs = Vec::new();
    if let Some(generate_name) = meta.generate_name.as_deref().filter(|g| !g.is_empty()) {
        for msg in path_segment_name(generate_name, true) {
            errs.push(FieldError::invalid(
                &path.child("generateName"),
                generate_name,
                msg,
            ));
        }
    }
    // kube validates an embedded object without a name as if it had one.
    if let Some(name) = meta.name.as_deref().filter(|n| !n.is_empty()) {
        for msg in path_segment_name(name, false) {
            errs.push(FieldError::invalid(&path.child("name"), name, msg));
        }
    }
    if let Some(namespace) = meta.namespace.as_deref().filter(|n| !n.is_empty()) {
        for msg in names::is_dns1123_label(namespace) {
            errs.push(FieldError::invalid(
                &path.child("namespace"),
                namespace,
                msg,
            ));
        }
    }
    for (k, val) in meta.labels.iter().flatten() {
        for msg in names::is_qualified_name(k) {
            errs.push(FieldError::invalid(&path.child("labels"), k.as_str(), msg));
        }
        for msg in names::is_valid_label_value(val) {
            errs.push(FieldError::invalid(
                &path.child("labels"),
                val.as_str(),
                msg,
            ));
        }
    }
    let mut total = 0usize;
    for (k, val) in meta.annotations.iter().flatten() {
        for msg in names::is_qualified_name(&k.to_lowercase()) {
            errs.push(FieldError::invalid(
                &path.child("annotations"),
                k.as_str(),
                msg,
            ));
        }
        total += k.len() + val.len();
    }
    const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(
            &path.child("annotations"),
            TOTAL_ANNOTATION_SIZE_LIMIT as i64,
        ));
    }
    errs
}

/// apimachinery's `path.IsValidPathSegmentName` (and `…Prefix` for generateName).
fn path_segment_name(name: &str, prefix: bool) -> Vec<String> {
    let mut msgs = Vec::new();
    if !prefix && (name == "." || name == "..") {
        msgs.push(format!("may not be '{name}'"));
    }
    for illegal in ["/", "%"] {
        if name.contains(illegal) {
            msgs.push(format!("may not contain '{illegal}'"));
        }
    }
    msgs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::ErrorType;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
    use serde_json::json;

    fn errors(x: Value) -> Vec<String> {
        let props: JSONSchemaProps = serde_json::from_value(json!({"type": "object", "properties": {
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
            "list": {"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}},
        }}))
        .expect("parses");
        let s = Structural::from_props(&props).expect("converts");
        let mut errs: Vec<String> = validate_embedded_resources(&Path::root(), &x, Some(&s), false)
            .iter()
            .map(ToString::to_string)
            .collect();
        errs.sort();
        errs
    }

    #[test]
    fn embedded_resources_need_api_version_and_kind() {
        assert!(errors(json!({"embedded": {"apiVersion": "v1", "kind": "Pod"}})).is_empty());
        assert_eq!(
            errors(
                json!({"embedded": {}, "list": [{"apiVersion": "a/v1", "kind": "Foo"}, {"kind": "Foo"}]})
            ),
            vec![
                "embedded.apiVersion: Required value: must not be empty",
                "embedded.kind: Required value: must not be empty",
                "list[1].apiVersion: Required value: must not be empty",
            ]
        );
    }

    #[test]
    fn api_version_and_kind_must_be_well_formed() {
        assert_eq!(
            errors(json!({"embedded": {"apiVersion": 1, "kind": ""}})),
            vec![
                "embedded.apiVersion: Invalid value: 1: must be a string",
                r#"embedded.kind: Invalid value: "": must not be empty"#
            ]
        );
        assert_eq!(
            errors(json!({"embedded": {"apiVersion": "a/b/c", "kind": "Foo_Bar"}})),
            vec![
                r#"embedded.apiVersion: Invalid value: "a/b/c": unexpected GroupVersion string: a/b/c"#,
                r#"embedded.kind: Invalid value: "Foo_Bar": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"#,
            ]
        );
    }

    #[test]
    fn embedded_metadata_is_validated() {
        assert!(errors(json!({"embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}}}})).is_empty());
        let errs = errors(
            json!({"embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": "a/b", "namespace": "Not_A_Label", "labels": {"bad key!": "v"},
            }}}),
        );
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert!(errs.contains(
            &r#"embedded.metadata.name: Invalid value: "a/b": may not contain '/'"#.to_string()
        ));
        assert!(errs.iter().any(
            |e| e.starts_with(r#"embedded.metadata.namespace: Invalid value: "Not_A_Label": "#)
        ));
        assert!(errs
            .iter()
            .any(|e| e.starts_with(r#"embedded.metadata.labels: Invalid value: "bad key!": "#)));
        assert_eq!(
            errors(json!({"embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": "x"}})),
            vec![
                r#"embedded.metadata: Invalid value: "x": invalid metadata type: must be an object"#
            ]
        );
    }

    fn matches(errs: ErrorList) -> Vec<(ErrorType, String)> {
        let mut v: Vec<(ErrorType, String)> =
            errs.into_iter().map(|e| (e.error_type, e.field)).collect();
        v.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.reason().cmp(b.0.reason())));
        v
    }

    fn expect(list: &[(ErrorType, &str)]) -> Vec<(ErrorType, String)> {
        matches(
            list.iter()
                .map(|(t, p)| FieldError {
                    error_type: *t,
                    field: p.to_string(),
                    bad_value: crate::field::BadValue::Omitted,
                    detail: String::new(),
                })
                .collect(),
        )
    }

    // TestValidateEmbeddedResource (objectmeta/validation_test.go).
    #[test]
    fn go_validate_embedded_resource() {
        use ErrorType::{Invalid, Required};
        let check = |obj: Value| match obj {
            Value::Object(m) => matches(validate_embedded_resource(&Path::root(), &m)),
            _ => panic!("test object is an object"),
        };
        assert_eq!(
            check(json!({})),
            expect(&[(Required, "apiVersion"), (Required, "kind")])
        );
        assert!(check(json!({"apiVersion": "foo/v1", "kind": "Foo"})).is_empty());
        assert_eq!(
            check(json!({"apiVersion": "foo/v1", "kind": "foo.bar-com"})),
            expect(&[(Invalid, "kind")])
        );
        assert!(check(
            json!({"apiVersion": "foo/v1", "kind": "Foo", "metadata": {"namespace": "kube-system"}})
        )
        .is_empty());
        assert!(
            check(json!({"apiVersion": "foo/v1", "kind": "Foo", "metadata": {"name": "foo"}}))
                .is_empty()
        );
        assert_eq!(
            check(json!({"apiVersion": "foo/v1", "kind": "Foo", "metadata": {
                "name": "..", "namespace": "$$$", "labels": {"#": "#"}, "annotations": {"#": "#"},
            }})),
            expect(&[
                (Invalid, "metadata.name"),
                (Invalid, "metadata.namespace"),
                (Invalid, "metadata.labels"),
                (Invalid, "metadata.labels"),
                (Invalid, "metadata.annotations"),
            ])
        );
    }

    // TestValidate (objectmeta/validation_test.go).
    #[test]
    fn go_validate_walks_properties_items_and_additional_properties() {
        use ErrorType::Required;
        let props: JSONSchemaProps = serde_json::from_value(json!({"properties": {
            "embedded": {"x-kubernetes-embedded-resource": true},
            "nested": {"x-kubernetes-embedded-resource": true, "properties": {"embedded": {"x-kubernetes-embedded-resource": true}}},
            "items": {"items": {"x-kubernetes-embedded-resource": true}},
            "additionalProperties": {"additionalProperties": {"x-kubernetes-embedded-resource": true}},
        }}))
        .expect("parses");
        let s = Structural::from_props(&props).expect("converts");
        let check = |obj: Value, root: bool| {
            matches(validate_embedded_resources(
                &Path::root(),
                &obj,
                Some(&s),
                root,
            ))
        };
        assert!(check(json!({}), false).is_empty());
        assert_eq!(
            check(json!({}), true),
            expect(&[(Required, "apiVersion"), (Required, "kind")])
        );
        assert_eq!(
            check(json!({"embedded": {}}), false),
            expect(&[
                (Required, "embedded.apiVersion"),
                (Required, "embedded.kind")
            ])
        );
        assert_eq!(
            check(json!({"nested": {"embedded": {}}}), false),
            expect(&[
                (Required, "nested.apiVersion"),
                (Required, "nested.kind"),
                (Required, "nested.embedded.apiVersion"),
                (Required, "nested.embedded.kind"),
            ])
        );
        assert_eq!(
            check(json!({"items": [{}]}), false),
            expect(&[
                (Required, "items[0].apiVersion"),
                (Required, "items[0].kind")
            ])
        );
        assert_eq!(
            check(json!({"additionalProperties": {"foo": {}}}), false),
            expect(&[
                (Required, "additionalProperties[foo].apiVersion"),
                (Required, "additionalProperties[foo].kind")
            ])
        );
    }
}
