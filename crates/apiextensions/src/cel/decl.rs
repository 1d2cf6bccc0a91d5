//! The CEL type of a structural schema node, as kube's `model.SchemaDeclType`
//! (`k8s.io/apiserver/pkg/cel/common/schemas.go`) derives it, for type-checking rules.

use std::collections::BTreeMap;

use rkcm_cel::{escape, Type};

use crate::structural::Structural;

/// The type `self` has in the rules of `s`; `resource_root` for the root of a custom resource
/// or of an embedded resource (`apiVersion`, `kind` and `metadata.name`/`generateName` are
/// then declared besides the schema's own properties).
pub fn decl_type(s: &Structural, resource_root: bool) -> Type {
    if s.extensions.x_int_or_string {
        return Type::Dyn;
    }
    let embedded = resource_root || s.extensions.x_embedded_resource;
    match s.type_() {
        "array" => Type::list(s.items.as_deref().map_or(Type::Dyn, |i| decl_type(i, i.extensions.x_embedded_resource))),
        "object" | "" if embedded || s.type_() == "object" => {
            if let Some(ap) = s.additional_properties_schema() {
                return Type::map(Type::String, decl_type(ap, ap.extensions.x_embedded_resource));
            }
            if s.type_().is_empty() && !embedded {
                return Type::Dyn;
            }
            let mut fields = BTreeMap::new();
            if embedded {
                fields.insert("apiVersion".to_string(), Type::String);
                fields.insert("kind".to_string(), Type::String);
                let mut meta = BTreeMap::new();
                meta.insert("name".to_string(), Type::String);
                meta.insert("generateName".to_string(), Type::String);
                fields.insert("metadata".to_string(), Type::object("metadata", meta));
            }
            for (name, prop) in &s.properties {
                if let Some(escaped) = escape(name) {
                    fields.insert(escaped, decl_type(prop, prop.extensions.x_embedded_resource));
                }
            }
            if s.extensions.x_preserve_unknown_fields && s.properties.is_empty() && !embedded {
                // An object of unknown fields: kube declares it without fields; leaving it `dyn`
                // lets rules read the fields it keeps.
                return Type::Dyn;
            }
            Type::object("object", fields)
        }
        "string" => match s.value_validation.as_deref().map_or("", |v| v.format.as_str()) {
            "byte" => Type::Bytes,
            "duration" => Type::Duration,
            "date" | "date-time" => Type::Timestamp,
            _ => Type::String,
        },
        "integer" => Type::Int,
        "number" => Type::Double,
        "boolean" => Type::Bool,
        _ => Type::Dyn,
    }
}
