//! The CEL type of a structural schema node, as kube's `model.SchemaDeclType`
//! (`k8s.io/apiserver/pkg/cel/common/schemas.go`) derives it, for type-checking rules.

use std::collections::BTreeMap;

use rkcm_cel::{escape, Type};

use crate::structural::Structural;

/// The type `self` has in the rules of `s`; `resource_root` for the root of a custom resource
/// or of an embedded resource (`apiVersion`, `kind` and `metadata.name`/`generateName` are
/// then declared besides the schema's own properties). A schema of unknown type is `dyn`.
pub fn decl_type(s: &Structural, resource_root: bool) -> Type {
    decl(s, resource_root).unwrap_or(Type::Dyn)
}

/// The declared type, `None` where kube declares none: values of unknown type
/// (`x-kubernetes-preserve-unknown-fields` without a type), and lists and maps of them. Such
/// fields are left out of their object, so rules cannot select them.
fn decl(s: &Structural, resource_root: bool) -> Option<Type> {
    if s.extensions.x_int_or_string {
        return Some(Type::Dyn);
    }
    let embedded = resource_root || s.extensions.x_embedded_resource;
    Some(match s.type_() {
        "array" => Type::list(decl(
            s.items.as_deref()?,
            s.items.as_deref()?.extensions.x_embedded_resource,
        )?),
        "object" if !embedded && s.additional_properties_schema().is_some() => {
            let ap = s.additional_properties_schema()?;
            Type::map(Type::String, decl(ap, ap.extensions.x_embedded_resource)?)
        }
        "object" => object_type(s, embedded),
        "" if embedded => object_type(s, embedded),
        "string" => match s
            .value_validation
            .as_deref()
            .map_or("", |v| v.format.as_str())
        {
            "byte" => Type::Bytes,
            "duration" => Type::Duration,
            "date" | "date-time" => Type::Timestamp,
            _ => Type::String,
        },
        "integer" => Type::Int,
        "number" => Type::Double,
        "boolean" => Type::Bool,
        _ => return None,
    })
}

fn object_type(s: &Structural, embedded: bool) -> Type {
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
        if embedded && name == "metadata" {
            continue;
        }
        let (Some(escaped), Some(t)) = (
            escape(name),
            decl(prop, prop.extensions.x_embedded_resource),
        ) else {
            continue;
        };
        fields.insert(escaped, t);
    }
    Type::object("object", fields)
}
