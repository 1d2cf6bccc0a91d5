//! Conversion of a CRD's `JSONSchemaProps` into a [`Structural`] schema; kube's `schema/convert.go`.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};

use super::{
    Extensions, Generic, NestedValueValidation, Structural, StructuralOrBool, ValueValidation,
};

/// A schema that cannot be made structural at all. CRD validation rejects these fields first, so a
/// validated CRD never fails conversion.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// A JSON-Schema keyword that CRDs do not support (`id`, `$schema`, `$ref`, `patternProperties`,
    /// `dependencies`, `additionalItems`, `definitions`).
    #[error("OpenAPIV3Schema '{0}' is not supported")]
    Unsupported(&'static str),
    /// `items` is an array of schemas.
    #[error("OpenAPIV3Schema 'items' must be a schema, but is an array")]
    ItemsArray,
    /// `x-kubernetes-preserve-unknown-fields: false`.
    #[error("internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined")]
    PreserveUnknownFieldsFalse,
}

impl Structural {
    /// Converts an OpenAPI v3 schema into a structural schema (kube's `NewStructural`). The result may still
    /// violate structural invariants: check it with [`super::validate_structural`].
    pub fn from_props(s: &JSONSchemaProps) -> Result<Structural, ConvertError> {
        validate_unsupported_fields(s)?;
        let mut ss = Structural {
            items: None,
            properties: BTreeMap::new(),
            generic: generic(s)?,
            extensions: extensions(s)?,
            value_validation: Some(Box::new(value_validation(s)?)),
        };
        match &s.items {
            Some(JSONSchemaPropsOrArray::Schemas(_)) => return Err(ConvertError::ItemsArray),
            Some(JSONSchemaPropsOrArray::Schema(item)) => {
                ss.items = Some(Box::new(Structural::from_props(item)?))
            }
            None => {}
        }
        for (k, v) in s.properties.iter().flatten() {
            ss.properties.insert(k.clone(), Structural::from_props(v)?);
        }
        Ok(ss)
    }
}

fn generic(s: &JSONSchemaProps) -> Result<Generic, ConvertError> {
    let additional_properties = match &s.additional_properties {
        None => None,
        Some(JSONSchemaPropsOrBool::Schema(schema)) => Some(StructuralOrBool {
            structural: Some(Box::new(Structural::from_props(schema)?)),
            allows: true,
        }),
        Some(JSONSchemaPropsOrBool::Bool(b)) => Some(StructuralOrBool {
            structural: None,
            allows: *b,
        }),
    };
    Ok(Generic {
        description: s.description.clone().unwrap_or_default(),
        type_: s.type_.clone().unwrap_or_default(),
        title: s.title.clone().unwrap_or_default(),
        default: s.default.as_ref().map(|d| d.0.clone()),
        additional_properties,
        nullable: s.nullable.unwrap_or(false),
        external_docs: s.external_docs.is_some(),
    })
}

fn extensions(s: &JSONSchemaProps) -> Result<Extensions, ConvertError> {
    if s.x_kubernetes_preserve_unknown_fields == Some(false) {
        return Err(ConvertError::PreserveUnknownFieldsFalse);
    }
    Ok(Extensions {
        x_preserve_unknown_fields: s.x_kubernetes_preserve_unknown_fields == Some(true),
        x_embedded_resource: s.x_kubernetes_embedded_resource.unwrap_or(false),
        x_int_or_string: s.x_kubernetes_int_or_string.unwrap_or(false),
        x_list_map_keys: s.x_kubernetes_list_map_keys.clone().unwrap_or_default(),
        x_list_type: s.x_kubernetes_list_type.clone(),
        x_map_type: s.x_kubernetes_map_type.clone(),
        x_validations: s.x_kubernetes_validations.clone().unwrap_or_default(),
    })
}

fn value_validation(s: &JSONSchemaProps) -> Result<ValueValidation, ConvertError> {
    let nested =
        |list: &Option<Vec<JSONSchemaProps>>| -> Result<Vec<NestedValueValidation>, ConvertError> {
            list.iter().flatten().map(nested_value_validation).collect()
        };
    Ok(ValueValidation {
        format: s.format.clone().unwrap_or_default(),
        maximum: s.maximum,
        exclusive_maximum: s.exclusive_maximum.unwrap_or(false),
        minimum: s.minimum,
        exclusive_minimum: s.exclusive_minimum.unwrap_or(false),
        max_length: s.max_length,
        min_length: s.min_length,
        pattern: s.pattern.clone().unwrap_or_default(),
        max_items: s.max_items,
        min_items: s.min_items,
        unique_items: s.unique_items.unwrap_or(false),
        multiple_of: s.multiple_of,
        enum_: s.enum_.iter().flatten().map(|e| e.0.clone()).collect(),
        max_properties: s.max_properties,
        min_properties: s.min_properties,
        required: s.required.clone().unwrap_or_default(),
        all_of: nested(&s.all_of)?,
        one_of: nested(&s.one_of)?,
        any_of: nested(&s.any_of)?,
        not: match &s.not {
            Some(n) => Some(Box::new(nested_value_validation(n)?)),
            None => None,
        },
    })
}

fn nested_value_validation(s: &JSONSchemaProps) -> Result<NestedValueValidation, ConvertError> {
    validate_unsupported_fields(s)?;
    let mut v = NestedValueValidation {
        value_validation: value_validation(s)?,
        items: None,
        properties: BTreeMap::new(),
        forbidden_generics: generic(s)?,
        forbidden_extensions: extensions(s)?,
    };
    match &s.items {
        Some(JSONSchemaPropsOrArray::Schemas(_)) => return Err(ConvertError::ItemsArray),
        Some(JSONSchemaPropsOrArray::Schema(item)) => {
            v.items = Some(Box::new(nested_value_validation(item)?))
        }
        None => {}
    }
    for (k, p) in s.properties.iter().flatten() {
        v.properties.insert(k.clone(), nested_value_validation(p)?);
    }
    Ok(v)
}

fn validate_unsupported_fields(s: &JSONSchemaProps) -> Result<(), ConvertError> {
    if s.id.as_deref().is_some_and(|x| !x.is_empty()) {
        return Err(ConvertError::Unsupported("id"));
    }
    if s.schema.as_deref().is_some_and(|x| !x.is_empty()) {
        return Err(ConvertError::Unsupported("schema"));
    }
    if s.ref_path.as_deref().is_some_and(|x| !x.is_empty()) {
        return Err(ConvertError::Unsupported("$ref"));
    }
    if s.pattern_properties.as_ref().is_some_and(|x| !x.is_empty()) {
        return Err(ConvertError::Unsupported("patternProperties"));
    }
    if s.dependencies.as_ref().is_some_and(|x| !x.is_empty()) {
        return Err(ConvertError::Unsupported("dependencies"));
    }
    if s.additional_items.is_some() {
        return Err(ConvertError::Unsupported("additionalItems"));
    }
    if s.definitions.as_ref().is_some_and(|x| !x.is_empty()) {
        return Err(ConvertError::Unsupported("definitions"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn props(v: serde_json::Value) -> JSONSchemaProps {
        serde_json::from_value(v).expect("test schema parses")
    }

    #[test]
    fn converts_properties_items_and_additional_properties() {
        let s = Structural::from_props(&props(json!({
            "type": "object",
            "properties": {
                "a": {"type": "array", "items": {"type": "string", "default": "x"}},
                "m": {"type": "object", "additionalProperties": {"type": "integer"}},
            },
            "anyOf": [{"required": ["a"]}],
        })))
        .expect("converts");
        assert_eq!(
            s.properties["a"]
                .items
                .as_ref()
                .map(|i| i.generic.default.clone()),
            Some(Some(json!("x")))
        );
        assert_eq!(
            s.properties["m"]
                .additional_properties_schema()
                .map(|a| a.type_()),
            Some("integer")
        );
        assert_eq!(s.value_validation.as_ref().map(|v| v.any_of.len()), Some(1));
    }

    #[test]
    fn refuses_unsupported_keywords() {
        assert_eq!(
            Structural::from_props(&props(json!({"$ref": "#/x"}))),
            Err(ConvertError::Unsupported("$ref"))
        );
        assert_eq!(
            Structural::from_props(&props(json!({"items": [{"type": "string"}]}))),
            Err(ConvertError::ItemsArray)
        );
    }
}
