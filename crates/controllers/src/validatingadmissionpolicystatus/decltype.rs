//! The CEL type of an OpenAPI schema, as kube's `SchemaDeclType`
//! (`k8s.io/apiserver/pkg/cel/common/schemas.go`) derives it.
//!
//! kube names object types after the kind with a nanosecond count appended
//! (`generateUniqueTypeName`) and nested ones after their path (`<Kind>.spec.template`); rkcm
//! leaves the count out, so the names in messages are stable.

use std::collections::BTreeMap;

use serde_json::Value;

use super::cel::escape;
use super::cel::Type;

/// Deepest schema nesting followed; deeper (recursive) schemas are `dyn`.
const MAX_DEPTH: usize = 48;

/// Converts schemas, following `$ref`s through `resolve`.
pub struct DeclTypes<'a> {
    resolve: &'a dyn Fn(&str) -> Option<&'a Value>,
    /// The `$ref`s being expanded, outermost first: a reference back into one of them is a
    /// recursive schema (JSONSchemaProps), typed `dyn` there.
    expanding: std::cell::RefCell<Vec<String>>,
}

impl<'a> DeclTypes<'a> {
    /// A converter resolving `$ref` with `resolve`.
    pub fn new(resolve: &'a dyn Fn(&str) -> Option<&'a Value>) -> Self {
        Self {
            resolve,
            expanding: std::cell::RefCell::new(Vec::new()),
        }
    }

    /// The type of the resource schema `schema` of kind `kind`; `None` when the schema has no
    /// type (then the object is `dyn`).
    pub fn resource(&self, kind: &str, schema: &'a Value) -> Option<Type> {
        self.decl(schema, kind, true, 0)
    }

    /// Follows `$ref` and one-element `allOf` wrappers.
    fn deref(&self, s: &'a Value) -> &'a Value {
        self.deref_noting(s, &mut Vec::new())
    }

    /// [`Self::deref`], noting the references followed in `refs`.
    fn deref_noting(&self, mut s: &'a Value, refs: &mut Vec<String>) -> &'a Value {
        for _ in 0..16 {
            if let Some(r) = s.get("$ref").and_then(Value::as_str) {
                refs.push(r.to_string());
                match (self.resolve)(r) {
                    Some(t) => s = t,
                    None => return s,
                }
            } else if let Some([inner]) =
                s.get("allOf").and_then(Value::as_array).map(Vec::as_slice)
            {
                s = inner;
            } else {
                return s;
            }
        }
        s
    }

    fn decl(
        &self,
        schema: &'a Value,
        name: &str,
        resource_root: bool,
        depth: usize,
    ) -> Option<Type> {
        if depth > MAX_DEPTH {
            return Some(Type::Dyn);
        }
        let mut refs = Vec::new();
        let s = self.deref_noting(schema, &mut refs);
        if refs.iter().any(|r| self.expanding.borrow().contains(r)) {
            return Some(Type::Dyn);
        }
        let pushed = refs.len();
        self.expanding.borrow_mut().extend(refs);
        let t = self.decl_resolved(s, name, resource_root, depth);
        let mut expanding = self.expanding.borrow_mut();
        let keep = expanding.len() - pushed;
        expanding.truncate(keep);
        t
    }

    fn decl_resolved(
        &self,
        s: &'a Value,
        name: &str,
        resource_root: bool,
        depth: usize,
    ) -> Option<Type> {
        let flag = |k: &str| s.get(k).and_then(Value::as_bool).unwrap_or(false);
        if flag("x-kubernetes-int-or-string") {
            return Some(Type::Dyn);
        }
        let ty = s.get("type").and_then(Value::as_str).unwrap_or("");
        match ty {
            "array" => {
                let items = s.get("items")?;
                let elem = self.decl(
                    items,
                    &format!("{name}.@idx"),
                    flag_of(self.deref(items), "x-kubernetes-embedded-resource"),
                    depth + 1,
                )?;
                Some(Type::list(elem))
            }
            "object" => {
                if let Some(ap) = s.get("additionalProperties").filter(|v| v.is_object()) {
                    let embedded = flag_of(self.deref(ap), "x-kubernetes-embedded-resource");
                    let value = self.decl(ap, &format!("{name}.@elem"), embedded, depth + 1)?;
                    return Some(Type::map(Type::String, value));
                }
                let props = s.get("properties").and_then(Value::as_object);
                if props.is_none_or(|p| p.is_empty())
                    && !resource_root
                    && flag("x-kubernetes-preserve-unknown-fields")
                {
                    return Some(Type::Dyn);
                }
                let mut fields = BTreeMap::new();
                for (prop, sub) in props.into_iter().flatten() {
                    let Some(escaped) = escape(prop) else {
                        continue;
                    };
                    let embedded = flag_of(self.deref(sub), "x-kubernetes-embedded-resource");
                    let t = self
                        .decl(sub, &format!("{name}.{prop}"), embedded, depth + 1)
                        .unwrap_or(Type::Dyn);
                    fields.insert(escaped, t);
                }
                if resource_root {
                    add_type_and_object_meta(&mut fields, name);
                }
                Some(Type::object(name, fields))
            }
            "string" => Some(match s.get("format").and_then(Value::as_str) {
                Some("byte") => Type::Bytes,
                Some("duration") => Type::Duration,
                Some("date") | Some("date-time") => Type::Timestamp,
                _ => Type::String,
            }),
            "boolean" => Some(Type::Bool),
            "number" => Some(Type::Double),
            "integer" => Some(Type::Int),
            _ => None,
        }
    }
}

fn flag_of(s: &Value, k: &str) -> bool {
    s.get(k).and_then(Value::as_bool).unwrap_or(false)
}

/// `apiVersion`, `kind`, `metadata.name` and `metadata.generateName` are always there at the
/// root of a resource (`WithTypeAndObjectMeta`).
fn add_type_and_object_meta(fields: &mut BTreeMap<String, Type>, name: &str) {
    fields.entry("apiVersion".into()).or_insert(Type::String);
    fields.entry("kind".into()).or_insert(Type::String);
    let meta_ok = matches!(fields.get("metadata"), Some(Type::Object(o))
        if o.fields.get("name") == Some(&Type::String) && o.fields.get("generateName") == Some(&Type::String));
    if !meta_ok {
        let mut meta = match fields.get("metadata") {
            Some(Type::Object(o)) => o.fields.clone(),
            _ => BTreeMap::new(),
        };
        meta.insert("name".into(), Type::String);
        meta.insert("generateName".into(), Type::String);
        fields.insert(
            "metadata".into(),
            Type::object(format!("{name}.metadata"), meta),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_types_map_to_cel_types() {
        let schema = json!({
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "format": "int32"},
                "ratio": {"type": "number"},
                "when": {"type": "string", "format": "date-time"},
                "timeout": {"type": "string", "format": "duration"},
                "data": {"type": "string", "format": "byte"},
                "port": {"x-kubernetes-int-or-string": true},
                "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "items": {"type": "array", "items": {"type": "boolean"}},
                "x-y": {"type": "string"},
                "if": {"type": "string"},
                "untyped": {}
            }
        });
        let empty = json!({});
        let resolve = |r: &str| empty.get(r);
        let Some(Type::Object(o)) = DeclTypes::new(&resolve).resource("Thing", &schema) else {
            panic!("not an object")
        };
        let f = |k: &str| o.fields.get(k).cloned();
        assert_eq!(f("replicas"), Some(Type::Int));
        assert_eq!(f("ratio"), Some(Type::Double));
        assert_eq!(f("when"), Some(Type::Timestamp));
        assert_eq!(f("timeout"), Some(Type::Duration));
        assert_eq!(f("data"), Some(Type::Bytes));
        assert_eq!(f("port"), Some(Type::Dyn));
        assert_eq!(f("raw"), Some(Type::Dyn));
        assert_eq!(f("labels"), Some(Type::map(Type::String, Type::String)));
        assert_eq!(f("items"), Some(Type::list(Type::Bool)));
        assert_eq!(f("x__dash__y"), Some(Type::String));
        assert_eq!(f("__if__"), Some(Type::String));
        assert_eq!(f("untyped"), Some(Type::Dyn));
        // The root always has apiVersion, kind and metadata.name.
        assert_eq!(f("kind"), Some(Type::String));
        assert!(
            matches!(f("metadata"), Some(Type::Object(m)) if m.fields.contains_key("generateName"))
        );
    }

    #[test]
    fn refs_are_followed_and_a_schema_without_type_is_dyn() {
        let defs = json!({"Spec": {"type": "object", "properties": {"n": {"type": "integer"}}}});
        let resolve = |r: &str| {
            r.strip_prefix("#/components/schemas/")
                .and_then(|n| defs.get(n))
        };
        let schema = json!({"type": "object", "properties": {"spec": {"allOf": [{"$ref": "#/components/schemas/Spec"}]}}});
        let Some(Type::Object(o)) = DeclTypes::new(&resolve).resource("Thing", &schema) else {
            panic!("not an object")
        };
        assert!(
            matches!(o.fields.get("spec"), Some(Type::Object(s)) if s.name == "Thing.spec" && s.fields.get("n") == Some(&Type::Int))
        );
        assert_eq!(DeclTypes::new(&resolve).resource("Thing", &json!({})), None);
    }

    #[test]
    fn recursive_schemas_are_dyn_where_they_recur() {
        let defs = json!({"Props": {"type": "object", "properties": {
            "type": {"type": "string"},
            "items": {"$ref": "#/components/schemas/Props"},
            "properties": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Props"}},
            "not": {"$ref": "#/components/schemas/Props"}
        }}});
        let resolve = |r: &str| {
            r.strip_prefix("#/components/schemas/")
                .and_then(|n| defs.get(n))
        };
        let schema = json!({"type": "object", "properties": {"schema": {"$ref": "#/components/schemas/Props"}}});
        let Some(Type::Object(o)) = DeclTypes::new(&resolve).resource("Thing", &schema) else {
            panic!("not an object")
        };
        let Some(Type::Object(props)) = o.fields.get("schema") else {
            panic!("no schema field")
        };
        assert_eq!(props.fields.get("type"), Some(&Type::String));
        assert_eq!(props.fields.get("items"), Some(&Type::Dyn));
        assert_eq!(
            props.fields.get("properties"),
            Some(&Type::map(Type::String, Type::Dyn))
        );
    }
}
