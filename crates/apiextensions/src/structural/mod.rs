//! Structural schemas: the typed skeleton of a CRD's OpenAPI schema that validation, defaulting and
//! pruning walk. Mirrors apiextensions-apiserver `pkg/apiserver/schema` (structural.go).
//!
//! A structural schema specifies a type for every field and every array's items outside of the logical
//! junctors (`allOf`, `anyOf`, `oneOf`, `not`), which may only add value validations.

mod complete;
mod convert;
mod invariants;

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule;
use serde_json::Value;

pub use convert::ConvertError;
pub use invariants::validate_structural;

/// A structural schema; kube's `schema.Structural`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Structural {
    /// The schema of an array's items.
    pub items: Option<Box<Structural>>,
    /// The schemas of an object's known fields.
    pub properties: BTreeMap<String, Structural>,
    /// Type, default, nullability and other fields not allowed under a logical junctor.
    pub generic: Generic,
    /// The `x-kubernetes-*` vendor extensions.
    pub extensions: Extensions,
    /// Value validations (formats, bounds, enums, junctors).
    pub value_validation: Option<Box<ValueValidation>>,
}

/// Either a schema or a boolean, as `additionalProperties` is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StructuralOrBool {
    /// The schema, when one is given.
    pub structural: Option<Box<Structural>>,
    /// The boolean (true when a schema is given).
    pub allows: bool,
}

/// The schema fields that make the structure; kube's `schema.Generic`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Generic {
    /// `description`.
    pub description: String,
    /// `type`: object, array, number, integer, boolean, string, or empty.
    pub type_: String,
    /// `title`.
    pub title: String,
    /// `default`.
    pub default: Option<Value>,
    /// `additionalProperties`.
    pub additional_properties: Option<StructuralOrBool>,
    /// `nullable`.
    pub nullable: bool,
    /// Whether `externalDocs` is set (only its presence matters).
    pub external_docs: bool,
}

/// The Kubernetes vendor extensions; kube's `schema.Extensions`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extensions {
    /// `x-kubernetes-preserve-unknown-fields`: unknown fields below are not pruned.
    pub x_preserve_unknown_fields: bool,
    /// `x-kubernetes-embedded-resource`: the value is a Kubernetes object with apiVersion, kind and metadata.
    pub x_embedded_resource: bool,
    /// `x-kubernetes-int-or-string`: the value is an integer or a string.
    pub x_int_or_string: bool,
    /// `x-kubernetes-list-map-keys`.
    pub x_list_map_keys: Vec<String>,
    /// `x-kubernetes-list-type`: atomic, set or map.
    pub x_list_type: Option<String>,
    /// `x-kubernetes-map-type`: granular or atomic.
    pub x_map_type: Option<String>,
    /// The `x-kubernetes-validations` CEL rules (compiled and evaluated by [`crate::cel`]).
    pub x_validations: Vec<ValidationRule>,
}

/// Value validations; kube's `schema.ValueValidation`.
#[derive(Clone, Debug, Default, PartialEq)]
#[allow(missing_docs)]
pub struct ValueValidation {
    pub format: String,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub pattern: String,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub multiple_of: Option<f64>,
    pub enum_: Vec<Value>,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub required: Vec<String>,
    pub all_of: Vec<NestedValueValidation>,
    pub one_of: Vec<NestedValueValidation>,
    pub any_of: Vec<NestedValueValidation>,
    pub not: Option<Box<NestedValueValidation>>,
}

/// A schema under a logical junctor: value validations plus whatever else was written there, kept so
/// that it can be reported as not structural; kube's `schema.NestedValueValidation`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NestedValueValidation {
    /// The value validations.
    pub value_validation: ValueValidation,
    /// `items` under the junctor.
    pub items: Option<Box<NestedValueValidation>>,
    /// `properties` under the junctor.
    pub properties: BTreeMap<String, NestedValueValidation>,
    /// Generic fields written under the junctor; anything set here is not structural.
    pub forbidden_generics: Generic,
    /// Extensions written under the junctor; anything set here is not structural.
    pub forbidden_extensions: Extensions,
}

impl Structural {
    /// The `type`.
    pub fn type_(&self) -> &str {
        &self.generic.type_
    }

    /// The schema of `additionalProperties`, when it is a schema.
    pub fn additional_properties_schema(&self) -> Option<&Structural> {
        self.generic
            .additional_properties
            .as_ref()
            .and_then(|a| a.structural.as_deref())
    }
}
