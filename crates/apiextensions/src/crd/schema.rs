//! A CRD version's OpenAPI schema: the keywords CRDs allow, Kubernetes extensions used consistently, the status
//! subresource's root restrictions, structural invariants and valid, pruned defaults; kube's
//! `validateCustomResourceDefinitionValidation` and `ValidateCustomResourceDefinitionOpenAPISchema`.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceValidation, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use serde_json::Value;

use crate::field::{BadValue, ErrorList, FieldError, Path};
use crate::objectmeta::validate_embedded_resources;
use crate::pruning::prune;
use crate::structural::{validate_structural, Structural};
use crate::validation::SchemaValidator;

const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
const META_FIELDS: [&str; 3] = ["metadata", "kind", "apiVersion"];
const VALIDATION_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// Validates `validation` (a version's `schema`) at `path` (`spec.versions[0].schema` or `spec.validation`) as kube
/// does when a CRD is created: `status_enabled` restricts the root to the fields that survive extracting
/// `properties.status`.
pub(super) fn validate_validation(
    validation: Option<&CustomResourceValidation>,
    status_enabled: bool,
    path: &Path,
) -> ErrorList {
    let Some(schema) = validation.and_then(|v| v.open_api_v3_schema.as_ref()) else {
        return Vec::new();
    };
    validate_schema(schema, status_enabled, path)
}

/// Validates a CRD version's `openAPIV3Schema` found at `path.openAPIV3Schema`, as kube does on CRD create: allowed
/// keywords and extensions, the status subresource's root restrictions (with `status_enabled`), the structural
/// invariants, defaults that validate against their schema and contain no unknown fields, and the CEL rules
/// of `x-kubernetes-validations`, which must compile ([`crate::cel::validate_schema_rules`]).
pub fn validate_schema(schema: &JSONSchemaProps, status_enabled: bool, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let schema_path = path.child("openAPIV3Schema");
    if status_enabled {
        errs.extend(validate_status_root(schema, path));
    }
    if schema.nullable == Some(true) {
        // kube names the path with a dot inside one child.
        errs.push(FieldError::forbidden(
            &path.child("openAPIV3Schema.nullable"),
            "nullable cannot be true at the root",
        ));
    }

    let mut structural_init_errs = Vec::new();
    // The rules compile only against a structural schema; kube reports their errors after
    // the schema's.
    let mut cel_errs = Vec::new();
    match Structural::from_props(schema) {
        Err(e) => structural_init_errs.push(FieldError::invalid(&schema_path, "", e.to_string())),
        Ok(ss) => {
            let structural_errs = validate_structural(&schema_path, &ss);
            if !structural_errs.is_empty() {
                errs.extend(structural_errs);
            } else {
                let mut root = ss.clone();
                root.extensions.x_embedded_resource = true;
                errs.extend(validate_defaults(&schema_path, schema, &root, false));
                cel_errs = crate::cel::validate_schema_rules(&ss, &schema_path);
            }
        }
    }

    let ssv = SpecValidator {
        allow_defaults: true,
        disallow_defaults_reason: String::new(),
        inside_resource_meta: false,
    };
    errs.extend(validate_open_api_schema(
        Some(schema),
        &schema_path,
        &ssv,
        true,
    ));
    if errs.is_empty() {
        // These overlap with the keyword checks above, so kube only reports them when nothing else is wrong.
        errs.extend(structural_init_errs);
    }
    errs.extend(cel_errs);
    errs
}

/// The fields allowed at the root of a schema whose status subresource is enabled.
const ALLOWED_AT_ROOT: &str = "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations]";

fn validate_status_root(s: &JSONSchemaProps, path: &Path) -> ErrorList {
    if let Some(t) = s.type_.as_deref().filter(|t| !t.is_empty()) {
        if t != "object" {
            return vec![FieldError::invalid(
                &path.child("openAPIV3Schema.type"),
                t,
                r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
            )];
        }
    }
    let disallowed = s.additional_items.is_some()
        || s.additional_properties.is_some()
        || s.all_of.as_ref().is_some_and(|v| !v.is_empty())
        || s.any_of.as_ref().is_some_and(|v| !v.is_empty())
        || s.one_of.as_ref().is_some_and(|v| !v.is_empty())
        || s.not.is_some()
        || s.default.is_some()
        || s.definitions.as_ref().is_some_and(|v| !v.is_empty())
        || s.dependencies.as_ref().is_some_and(|v| !v.is_empty())
        || s.enum_.as_ref().is_some_and(|v| !v.is_empty())
        || s.id.as_deref().is_some_and(|v| !v.is_empty())
        || s.schema.as_deref().is_some_and(|v| !v.is_empty())
        || s.ref_path.is_some()
        || s.max_properties.is_some()
        || s.min_properties.is_some()
        || s.pattern_properties.as_ref().is_some_and(|v| !v.is_empty())
        || s.nullable == Some(true)
        || s.x_kubernetes_embedded_resource == Some(true)
        || s.x_kubernetes_int_or_string == Some(true)
        || s.x_kubernetes_list_map_keys
            .as_ref()
            .is_some_and(|v| !v.is_empty())
        || s.x_kubernetes_list_type.is_some()
        || s.x_kubernetes_map_type.is_some();
    if disallowed {
        return vec![FieldError::invalid(
            &path.child("openAPIV3Schema"),
            BadValue::Raw(serde_json::to_string(s).unwrap_or_default()),
            format!("only {ALLOWED_AT_ROOT} fields are allowed at the root of the schema if the status subresource is enabled"),
        )];
    }
    Vec::new()
}

/// kube's `specStandardValidatorV3`: what the walk knows about where it is.
#[derive(Clone)]
struct SpecValidator {
    allow_defaults: bool,
    disallow_defaults_reason: String,
    inside_resource_meta: bool,
}

impl SpecValidator {
    fn with_forbidden_defaults(&self, reason: &str) -> Self {
        SpecValidator {
            allow_defaults: false,
            disallow_defaults_reason: reason.to_string(),
            ..self.clone()
        }
    }

    fn with_inside_resource_meta(&self) -> Self {
        SpecValidator {
            inside_resource_meta: true,
            ..self.clone()
        }
    }

    fn validate(&self, s: &JSONSchemaProps, path: &Path) -> ErrorList {
        let mut errs = Vec::new();
        let t = s.type_.as_deref().unwrap_or("");
        if !t.is_empty() && !OPENAPI_V3_TYPES.contains(&t) {
            errs.push(FieldError::not_supported(
                &path.child("type"),
                t,
                &OPENAPI_V3_TYPES,
            ));
        }
        if s.default.is_some() && !self.allow_defaults {
            let mut detail = "must not be set".to_string();
            if !self.disallow_defaults_reason.is_empty() {
                detail.push(' ');
                detail.push_str(&self.disallow_defaults_reason);
            }
            errs.push(FieldError::forbidden(&path.child("default"), detail));
        }
        if s.id.as_deref().is_some_and(|v| !v.is_empty()) {
            errs.push(FieldError::forbidden(
                &path.child("id"),
                "id is not supported",
            ));
        }
        if s.additional_items.is_some() {
            errs.push(FieldError::forbidden(
                &path.child("additionalItems"),
                "additionalItems is not supported",
            ));
        }
        if s.pattern_properties.as_ref().is_some_and(|v| !v.is_empty()) {
            errs.push(FieldError::forbidden(
                &path.child("patternProperties"),
                "patternProperties is not supported",
            ));
        }
        if s.definitions.as_ref().is_some_and(|v| !v.is_empty()) {
            errs.push(FieldError::forbidden(
                &path.child("definitions"),
                "definitions is not supported",
            ));
        }
        if s.dependencies.is_some() {
            errs.push(FieldError::forbidden(
                &path.child("dependencies"),
                "dependencies is not supported",
            ));
        }
        if s.ref_path.is_some() {
            errs.push(FieldError::forbidden(
                &path.child("$ref"),
                "$ref is not supported",
            ));
        }
        if t == "null" {
            errs.push(FieldError::forbidden(
                &path.child("type"),
                "type cannot be set to null, use nullable as an alternative",
            ));
        }
        if matches!(&s.items, Some(JSONSchemaPropsOrArray::Schemas(l)) if !l.is_empty()) {
            errs.push(FieldError::forbidden(
                &path.child("items"),
                "items must be a schema object and not an array",
            ));
        }
        if self.inside_resource_meta && s.x_kubernetes_embedded_resource == Some(true) {
            errs.push(FieldError::forbidden(
                &path.child("x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            ));
        }
        errs
    }
}

fn validate_open_api_schema(
    s: Option<&JSONSchemaProps>,
    path: &Path,
    ssv: &SpecValidator,
    is_root: bool,
) -> ErrorList {
    let Some(s) = s else { return Vec::new() };
    let mut errs = ssv.validate(s, path);

    if s.unique_items == Some(true) {
        errs.push(FieldError::forbidden(
            &path.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }

    let has_properties = s.properties.as_ref().is_some_and(|p| !p.is_empty());
    if let Some(ap) = &s.additional_properties {
        // Properties are for structs, additionalProperties for maps; both would contradict ignoring unknown fields.
        if has_properties && !matches!(ap, JSONSchemaPropsOrBool::Bool(true)) {
            errs.push(FieldError::forbidden(
                &path.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let sub = if ssv.inside_resource_meta {
            // Pruning without the actual value would be ambiguous.
            ssv.with_forbidden_defaults("inside additionalProperties applying to object metadata")
        } else {
            ssv.clone()
        };
        if let JSONSchemaPropsOrBool::Schema(a) = ap {
            errs.extend(validate_open_api_schema(
                Some(a),
                &path.child("additionalProperties"),
                &sub,
                false,
            ));
        }
    }

    let embedded = s.x_kubernetes_embedded_resource == Some(true);
    for (name, prop) in s.properties.iter().flatten() {
        let mut sub = ssv.clone();
        if (is_root || embedded) && META_FIELDS.contains(&name.as_str()) {
            sub = sub.with_inside_resource_meta();
            if is_root {
                sub = sub.with_forbidden_defaults(&format!("in top-level {name}"));
            }
        }
        errs.extend(validate_open_api_schema(
            Some(prop),
            &path.child("properties").key(name),
            &sub,
            false,
        ));
    }

    errs.extend(validate_open_api_schema(
        s.not.as_deref(),
        &path.child("not"),
        ssv,
        false,
    ));
    for (junctor, list) in [
        ("allOf", &s.all_of),
        ("oneOf", &s.one_of),
        ("anyOf", &s.any_of),
    ] {
        for (i, sub) in list.iter().flatten().enumerate() {
            errs.extend(validate_open_api_schema(
                Some(sub),
                &path.child(junctor).index(i),
                ssv,
                false,
            ));
        }
    }
    for (k, sub) in s.definitions.iter().flatten() {
        errs.extend(validate_open_api_schema(
            Some(sub),
            &path.child("definitions").key(k),
            ssv,
            false,
        ));
    }
    match &s.items {
        Some(JSONSchemaPropsOrArray::Schema(item)) => {
            errs.extend(validate_open_api_schema(
                Some(item),
                &path.child("items"),
                ssv,
                false,
            ));
        }
        Some(JSONSchemaPropsOrArray::Schemas(list)) => {
            for (i, item) in list.iter().enumerate() {
                errs.extend(validate_open_api_schema(
                    Some(item),
                    &path.child("items").index(i),
                    ssv,
                    false,
                ));
            }
        }
        None => {}
    }

    errs.extend(validate_extensions(s, path));
    errs.extend(validate_map_list_keys_map_set(s, path));
    errs.extend(validate_x_validations_form(s, path));
    errs
}

fn item_schema(s: &JSONSchemaProps) -> Option<&JSONSchemaProps> {
    match &s.items {
        Some(JSONSchemaPropsOrArray::Schema(i)) => Some(i),
        _ => None,
    }
}

fn validate_extensions(s: &JSONSchemaProps, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let t = s.type_.as_deref().unwrap_or("");
    if s.x_kubernetes_preserve_unknown_fields == Some(false) {
        errs.push(FieldError::invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    if let Some(map_type) = &s.x_kubernetes_map_type {
        if t != "object" {
            let msg = "must be object if x-kubernetes-map-type is specified";
            if t.is_empty() {
                errs.push(FieldError::required(&path.child("type"), msg));
            } else {
                errs.push(FieldError::invalid(&path.child("type"), t, msg));
            }
        }
        if map_type != "atomic" && map_type != "granular" {
            errs.push(FieldError::not_supported(
                &path.child("x-kubernetes-map-type"),
                map_type.as_str(),
                &["atomic", "granular"],
            ));
        }
    }
    let list_type = s.x_kubernetes_list_type.as_deref();
    if list_type.is_some() && t != "array" {
        let msg = "must be array if x-kubernetes-list-type is specified";
        if t.is_empty() {
            errs.push(FieldError::required(&path.child("type"), msg));
        } else {
            errs.push(FieldError::invalid(&path.child("type"), t, msg));
        }
    } else if let (Some("set"), Some(items)) = (list_type, item_schema(s)) {
        let items_list_type = || match &items.x_kubernetes_list_type {
            Some(lt) => BadValue::from(lt.as_str()),
            None => BadValue::from(Value::Null),
        };
        match items.type_.as_deref() {
            Some("array")
                if items
                    .x_kubernetes_list_type
                    .as_deref()
                    .is_some_and(|lt| lt != "atomic") =>
            {
                errs.push(FieldError::invalid(
                    &path.child("items").child("x-kubernetes-list-type"),
                    items_list_type(),
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ));
            }
            Some("object") if items.x_kubernetes_map_type.as_deref() != Some("atomic") => {
                // kube reports the items' list type here.
                errs.push(FieldError::invalid(
                    &path.child("items").child("x-kubernetes-map-type"),
                    items_list_type(),
                    "must be atomic as item of a list with x-kubernetes-list-type=set",
                ));
            }
            _ => {}
        }
    }
    if let Some(lt) = list_type {
        if !["atomic", "set", "map"].contains(&lt) {
            errs.push(FieldError::not_supported(
                &path.child("x-kubernetes-list-type"),
                lt,
                &["atomic", "set", "map"],
            ));
        }
    }
    let keys = s.x_kubernetes_list_map_keys.as_deref().unwrap_or(&[]);
    if !keys.is_empty() {
        match list_type {
            None => errs.push(FieldError::required(
                &path.child("x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some(lt) if lt != "map" => errs.push(FieldError::invalid(
                &path.child("x-kubernetes-list-type"),
                lt,
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            _ => {}
        }
    }
    if list_type == Some("map") {
        let keys_value = || {
            BadValue::Raw(format!(
                "[]string{{{}}}",
                keys.iter()
                    .map(|k| crate::go_format::quote(k))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        };
        if keys.is_empty() {
            errs.push(FieldError::required(
                &path.child("x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match &s.items {
            None => errs.push(FieldError::required(
                &path.child("items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(JSONSchemaPropsOrArray::Schemas(list)) => errs.push(FieldError::invalid(
                &path.child("items"),
                BadValue::Raw(serde_json::to_string(list).unwrap_or_default()),
                "must only have a single schema if x-kubernetes-list-type is map",
            )),
            Some(JSONSchemaPropsOrArray::Schema(items)) => {
                let it = items.type_.as_deref().unwrap_or("");
                if it != "object" {
                    errs.push(FieldError::invalid(
                        &path.child("items").child("type"),
                        it,
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                } else {
                    let mut seen = std::collections::HashSet::new();
                    for k in keys {
                        match items.properties.as_ref().and_then(|p| p.get(k)) {
                            Some(p) => {
                                if matches!(p.type_.as_deref(), Some("array" | "object")) {
                                    errs.push(FieldError::invalid(
                                        &path.child("items").child("properties").key(k).child("type"),
                                        it,
                                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                                    ));
                                }
                            }
                            None => errs.push(FieldError::invalid(
                                &path.child("x-kubernetes-list-map-keys"),
                                keys_value(),
                                "entries must all be names of item properties",
                            )),
                        }
                        if !seen.insert(k.as_str()) {
                            errs.push(FieldError::invalid(
                                &path.child("x-kubernetes-list-map-keys"),
                                keys_value(),
                                "must not contain duplicate entries",
                            ));
                        }
                    }
                }
            }
        }
    }
    errs
}

fn validate_map_list_keys_map_set(s: &JSONSchemaProps, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let Some(items) = item_schema(s) else {
        return errs;
    };
    let Some(lt) = s
        .x_kubernetes_list_type
        .as_deref()
        .filter(|lt| *lt == "set" || *lt == "map")
    else {
        return errs;
    };
    if items.nullable == Some(true) {
        errs.push(FieldError::forbidden(
            &path.child("items").child("nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {lt}"),
        ));
    }
    if lt == "map" {
        let required = items.required.as_deref().unwrap_or(&[]);
        for k in s.x_kubernetes_list_map_keys.iter().flatten() {
            let Some(p) = items.properties.as_ref().and_then(|m| m.get(k)) else {
                continue;
            };
            let kp = path.child("items").child("properties").key(k);
            if !required.contains(k) && p.default.is_none() {
                errs.push(FieldError::required(
                    &kp.child("default"),
                    "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                ));
            }
            if p.nullable == Some(true) {
                errs.push(FieldError::forbidden(
                    &kp.child("nullable"),
                    "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                ));
            }
        }
    }
    errs
}

fn validate_x_validations_form(s: &JSONSchemaProps, path: &Path) -> ErrorList {
    let has_newlines = |x: &str| x.contains(['\n', '\r']);
    let mut errs = Vec::new();
    for (i, rule) in s.x_kubernetes_validations.iter().flatten().enumerate() {
        let rp = path.child("x-kubernetes-validations").index(i);
        let trimmed_rule = rule.rule.trim();
        let message = rule.message.as_deref().unwrap_or("");
        let trimmed_msg = message.trim();
        if trimmed_rule.is_empty() {
            errs.push(FieldError::required(
                &rp.child("rule"),
                "rule is not specified",
            ));
        } else if !message.is_empty() && trimmed_msg.is_empty() {
            errs.push(FieldError::invalid(
                &rp.child("message"),
                message,
                "message must be non-empty if specified",
            ));
        } else if has_newlines(trimmed_msg) {
            errs.push(FieldError::invalid(
                &rp.child("message"),
                message,
                "message must not contain line breaks",
            ));
        } else if has_newlines(trimmed_rule) && trimmed_msg.is_empty() {
            errs.push(FieldError::required(
                &rp.child("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if let Some(me) = rule.message_expression.as_deref() {
            if !me.is_empty() && me.trim().is_empty() {
                errs.push(FieldError::required(
                    &rp.child("messageExpression"),
                    "messageExpression must be non-empty if specified",
                ));
            }
        }
        if let Some(reason) = rule.reason.as_deref() {
            if !VALIDATION_REASONS.contains(&reason) {
                errs.push(FieldError::not_supported(
                    &rp.child("reason"),
                    reason,
                    &VALIDATION_REASONS,
                ));
            }
        }
        if let Some(fp) = rule.field_path.as_deref() {
            if !fp.is_empty() && fp.trim().is_empty() {
                errs.push(FieldError::invalid(
                    &rp.child("fieldPath"),
                    fp,
                    "fieldPath must be non-empty if specified",
                ));
            }
            if has_newlines(fp) {
                errs.push(FieldError::invalid(
                    &rp.child("fieldPath"),
                    fp,
                    "fieldPath must not contain line breaks",
                ));
            }
        }
    }
    errs
}

/// kube's `defaulting.ValidateDefaults`: every default outside of type and object meta must be pruned already and
/// valid against its own schema. `s` and `props` are the same schema node.
fn validate_defaults(
    path: &Path,
    props: &JSONSchemaProps,
    s: &Structural,
    inside_meta: bool,
) -> ErrorList {
    let mut errs = Vec::new();
    let inside_meta = inside_meta && !s.extensions.x_embedded_resource;
    // Defaults inside metadata are validated by kube against a whole object; here they are left to the
    // top-level-metadata rule that forbids them.
    if let (Some(default), false) = (&s.generic.default, inside_meta) {
        let default_path = path.child("default");
        let mut pruned = default.clone();
        prune(&mut pruned, Some(s), s.extensions.x_embedded_resource);
        if &pruned != default {
            errs.push(FieldError::invalid(
                &default_path,
                default.clone(),
                "must not have unknown fields",
            ));
        }
        let meta_errs = validate_embedded_resources(
            &default_path,
            default,
            Some(s),
            s.extensions.x_embedded_resource,
        );
        if !meta_errs.is_empty() {
            errs.extend(meta_errs);
        } else {
            errs.extend(SchemaValidator::new(props).validate_at(&default_path, default));
        }
    }
    // additionalProperties are not followed: defaults are forbidden there.
    if let (Some(items), Some(JSONSchemaPropsOrArray::Schema(item_props))) =
        (&s.items, &props.items)
    {
        errs.extend(validate_defaults(
            &path.child("items"),
            item_props,
            items,
            inside_meta,
        ));
    }
    for (k, sub) in &s.properties {
        let Some(sub_props) = props.properties.as_ref().and_then(|p| p.get(k)) else {
            continue;
        };
        let sub_inside_meta =
            inside_meta || (s.extensions.x_embedded_resource && META_FIELDS.contains(&k.as_str()));
        errs.extend(validate_defaults(
            &path.child("properties").key(k),
            sub_props,
            sub,
            sub_inside_meta,
        ));
    }
    errs
}
