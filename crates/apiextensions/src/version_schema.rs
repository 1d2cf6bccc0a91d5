//! One served CRD version's schema, prepared once for the requests that use it.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use serde_json::Value;

use crate::cel;
use crate::defaulting;
use crate::field::{ErrorList, ErrorType, FieldError, Path};
use crate::listtype::validate_list_sets_and_maps;
use crate::objectmeta::validate_embedded_resources;
use crate::pruning;
use crate::structural::{ConvertError, Structural};
use crate::validation::SchemaValidator;

/// A CRD version's `openAPIV3Schema` as its structural schema and its validator, built once when the CRD is
/// served. Immutable, so it can be shared between request handlers.
///
/// Per request, kube prunes unknown fields and coerces embedded resources while decoding, then defaults, then
/// validates: [`prune`](Self::prune) → [`coerce`](Self::coerce) → [`apply_defaults`](Self::apply_defaults) →
/// [`validate`](Self::validate) (or [`validate_update`](Self::validate_update)).
#[derive(Debug)]
pub struct VersionSchema {
    structural: Structural,
    validator: SchemaValidator,
    /// The compiled `x-kubernetes-validations` rules, when the schema has any.
    rules: Option<cel::Validator>,
}

impl VersionSchema {
    /// Prepares `schema`, which CRD validation has accepted (it is structural).
    pub fn new(schema: &JSONSchemaProps) -> Result<Self, ConvertError> {
        let structural = Structural::from_props(schema)?;
        Ok(VersionSchema {
            rules: cel::Validator::new(&structural, true),
            structural,
            validator: SchemaValidator::new(schema),
        })
    }

    /// The structural schema.
    pub fn structural(&self) -> &Structural {
        &self.structural
    }

    /// Removes the fields of the object `obj` that the schema does not know, keeping `apiVersion`, `kind` and
    /// `metadata`, and returns their paths, sorted; kube warns `unknown field "<path>"` for each
    /// ([`pruning::unknown_field_warning`]) or, with `fieldValidation=Strict`, refuses the request.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        pruning::prune(obj, Some(&self.structural), true)
    }

    /// Checks the `apiVersion` and `kind` of embedded resources and writes their metadata back as ObjectMeta,
    /// returning the paths of the unknown metadata fields it dropped (warned about as `unknown field` too).
    /// kube refuses a request whose embedded resources do not coerce (`drop_invalid_fields: false`) and drops the
    /// offending fields of stored objects (`true`).
    pub fn coerce(
        &self,
        obj: &mut Value,
        drop_invalid_fields: bool,
    ) -> Result<Vec<String>, Box<FieldError>> {
        crate::coerce::coerce(
            &Path::root(),
            obj,
            Some(&self.structural),
            false,
            drop_invalid_fields,
        )
    }

    /// Drops `null`s that are neither nullable nor defaulted, then applies the schema's defaults.
    pub fn apply_defaults(&self, obj: &mut Value) {
        defaulting::prune_non_nullable_nulls_without_defaults(obj, Some(&self.structural));
        defaulting::default(obj, Some(&self.structural));
    }

    /// Validates the object `obj` against the schema, its list-type sets and maps and its embedded resources,
    /// as kube's custom-resource strategy does. The object's own metadata is left to the server's ObjectMeta
    /// validation.
    pub fn validate(&self, obj: &Value) -> ErrorList {
        let errs = self.validator.validate(obj);
        let errs = self.with_list_and_embedded_errors(errs, obj);
        self.with_rule_errors(errs, obj, None)
    }

    /// Validates an update of `old` to `obj` as [`validate`](Self::validate) does, with kube's ratcheting: schema
    /// errors in parts the update left unchanged are not reported ([`SchemaValidator::validate_update`]), and
    /// list-type errors only when the old object had none. Embedded resources are validated as on create.
    pub fn validate_update(&self, obj: &Value, old: &Value) -> ErrorList {
        let mut errs = self.validator.validate_update(obj, old);
        let list_errs = self.list_errors(obj);
        if !list_errs.is_empty() && self.list_errors(old).is_empty() {
            errs.extend(list_errs);
        }
        errs.extend(validate_embedded_resources(
            &Path::root(),
            obj,
            Some(&self.structural),
            false,
        ));
        self.with_rule_errors(errs, obj, Some(old))
    }

    /// Adds the errors of the `x-kubernetes-validations` rules, as kube's strategy does: not
    /// evaluated when the object has values of the wrong type, unsupported or too long values,
    /// too many items or required fields missing (kube's `hasBlockingErr`: the object does not
    /// have the shape the rules were written for), saying so instead. Errors an update leaves as they were are
    /// ratcheted (dropped; kube returns them as warnings).
    fn with_rule_errors(&self, mut errs: ErrorList, obj: &Value, old: Option<&Value>) -> ErrorList {
        let Some(rules) = &self.rules else {
            return errs;
        };
        let blocking = errs.iter().any(|e| {
            matches!(
                e.error_type,
                ErrorType::NotSupported
                    | ErrorType::Required
                    | ErrorType::TooLong
                    | ErrorType::TooMany
                    | ErrorType::TypeInvalid
            )
        });
        if blocking {
            errs.push(FieldError::invalid(
                &Path::new("<nil>"),
                Value::Null,
                "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
            ));
        } else {
            errs.extend(rules.validate(&Path::root(), obj, old).errors);
        }
        errs
    }

    fn list_errors(&self, obj: &Value) -> ErrorList {
        match obj {
            Value::Object(map) => {
                validate_list_sets_and_maps(&Path::root(), Some(&self.structural), map)
            }
            _ => Vec::new(),
        }
    }

    fn with_list_and_embedded_errors(&self, mut errs: ErrorList, obj: &Value) -> ErrorList {
        errs.extend(self.list_errors(obj));
        errs.extend(validate_embedded_resources(
            &Path::root(),
            obj,
            Some(&self.structural),
            false,
        ));
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prune_default_validate_as_a_request_does() {
        let props: JSONSchemaProps = serde_json::from_value(json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["image"],
                    "properties": {
                        "replicas": {"type": "integer", "minimum": 1, "default": 1},
                        "image": {"type": "string"},
                        "ports": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"], "properties": {
                                "name": {"type": "string"}, "port": {"type": "integer"},
                            }},
                        },
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
                    },
                },
            },
        }))
        .expect("parses");
        let schema = VersionSchema::new(&props).expect("structural");
        let mut obj = json!({
            "apiVersion": "example.com/v1", "kind": "App", "metadata": {"name": "a"},
            "spec": {"image": "nginx", "colour": "blue", "replicas": null,
                     "ports": [{"name": "http", "port": 80}, {"name": "http", "port": 81}],
                     "template": {"kind": "Pod"}},
        });
        assert_eq!(schema.prune(&mut obj), vec!["spec.colour"]);
        schema
            .coerce(&mut obj, false)
            .expect("embedded resources coerce");
        schema.apply_defaults(&mut obj);
        assert_eq!(obj["spec"]["replicas"], json!(1));
        let errs: Vec<String> = schema
            .validate(&obj)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            vec![
                r#"spec.ports[1]: Duplicate value: map[string]interface {}{"name":"http"}"#,
                "spec.template.apiVersion: Required value: must not be empty",
            ]
        );
        let mut bad = json!({"apiVersion": "example.com/v1", "kind": "App", "metadata": {"name": "a"}, "spec": {"replicas": 0}});
        schema.apply_defaults(&mut bad);
        let errs: Vec<String> = schema
            .validate(&bad)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            vec![
                "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
                "spec.image: Required value",
            ]
        );
    }

    #[test]
    fn rules_run_after_the_schema_unless_the_object_has_blocking_errors() {
        let props: JSONSchemaProps = serde_json::from_value(json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "required": ["n"],
            "properties": {"n": {"type": "integer", "maximum": 10}, "s": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "self.n < 5", "message": "n must be below 5"}],
        }}}))
        .expect("parses");
        let schema = VersionSchema::new(&props).expect("structural");
        let errs = |obj: serde_json::Value| -> Vec<String> {
            schema
                .validate(&obj)
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        assert_eq!(
            errs(json!({"spec": {"n": 11}})),
            vec![
                "spec.n: Invalid value: 11: spec.n in body should be less than or equal to 10",
                r#"spec: Invalid value: "object": n must be below 5"#,
            ]
        );
        assert_eq!(
            errs(json!({"spec": {"s": "x"}})),
            vec![
                "spec.n: Required value",
                r#"<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"#,
            ]
        );
        assert!(errs(json!({"spec": {"n": 1}})).is_empty());
    }

    #[test]
    fn updates_ratchet_schema_and_list_type_errors() {
        let props: JSONSchemaProps = serde_json::from_value(json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "maximum": 3},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            },
        }}}))
        .expect("parses");
        let schema = VersionSchema::new(&props).expect("structural");
        let old = json!({"spec": {"n": 5, "tags": ["a", "a"]}});
        assert!(schema
            .validate_update(&json!({"spec": {"n": 5, "tags": ["a", "a", "b"]}}), &old)
            .is_empty());
        let fresh = json!({"spec": {"n": 1, "tags": ["a"]}});
        let errs: Vec<String> = schema
            .validate_update(&json!({"spec": {"n": 4, "tags": ["a", "a"]}}), &fresh)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errs,
            vec![
                "spec.n: Invalid value: 4: spec.n in body should be less than or equal to 3",
                r#"spec.tags[1]: Duplicate value: "a""#,
            ]
        );
    }
}
