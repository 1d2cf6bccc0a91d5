//! The structured-merge schema of the served kinds, derived from their OpenAPI definitions.
//!
//! As kube-apiserver's type converter reads its OpenAPI models: a list's relationship comes from
//! `x-kubernetes-list-type` (+ `x-kubernetes-list-map-keys`), else from the strategic-merge
//! tags (`x-kubernetes-patch-strategy: merge` with `x-kubernetes-patch-merge-key` is a map keyed
//! by that key, without a key a set), else it is atomic; `x-kubernetes-map-type: atomic` makes a
//! map or struct atomic. The strategic-merge tags are those [`crate::patch::merge_keys`] puts
//! into the definitions, so apply and strategic merge patch share one table. The same walk, in
//! its CRD dialect, types custom resources ([`super::custom_resource`]).

use std::sync::OnceLock;

use rkcm_structured_merge::{Atom, ListType, Schema, TypeRef};
use serde_json::Value;

use crate::openapi::definitions::{self, REF_PREFIX};

static SCHEMA: OnceLock<Schema> = OnceLock::new();

/// The schema of every generated definition, by definition name.
pub fn schema() -> &'static Schema {
    SCHEMA.get_or_init(|| {
        let mut s = Schema::new();
        for (name, def) in definitions::definitions() {
            if let TypeRef::Inline(atom) = type_ref(def, Dialect::BuiltIn) {
                s.insert(name.clone(), *atom);
            }
        }
        s
    })
}

/// The root type of objects of `api_version`/`kind`, if the server has a schema for it.
pub fn root_type(api_version: &str, kind: &str) -> Option<TypeRef> {
    let name = definitions::root_definition(api_version, kind)?;
    schema().contains(name).then(|| TypeRef::named(name))
}

fn ref_name(node: &Value) -> Option<&str> {
    let r = node.get("$ref").and_then(Value::as_str)?;
    r.strip_prefix(REF_PREFIX)
        .or_else(|| r.strip_prefix("#/definitions/"))
}

/// Which OpenAPI a schema node comes from: the generated definitions of the built-in kinds, or
/// a CRD version's structural `openAPIV3Schema` (see [`super::custom_resource`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dialect {
    /// `$ref`s to other definitions; `x-kubernetes-preserve-unknown-fields` marks free-form
    /// JSON.
    BuiltIn,
    /// No references; `x-kubernetes-embedded-resource` objects are resources, and
    /// `x-kubernetes-preserve-unknown-fields` keeps the declared properties typed.
    CustomResource,
}

fn flag(node: &Value, name: &str) -> bool {
    node.get(name) == Some(&Value::Bool(true))
}

/// The type a schema node describes.
pub(super) fn type_ref(node: &Value, dialect: Dialect) -> TypeRef {
    if dialect == Dialect::BuiltIn {
        if let Some(name) = ref_name(node) {
            return TypeRef::named(name);
        }
        if let Some([inner]) = node
            .get("allOf")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
        {
            return type_ref(inner, dialect);
        }
    }
    if flag(node, "x-kubernetes-int-or-string") {
        return TypeRef::scalar();
    }
    match dialect {
        Dialect::BuiltIn if flag(node, "x-kubernetes-preserve-unknown-fields") => {
            return TypeRef::deduced()
        }
        Dialect::CustomResource if flag(node, "x-kubernetes-embedded-resource") => {
            return super::custom_resource::resource(node)
        }
        _ => {}
    }
    let ty = match node.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null"),
        _ => None,
    };
    match ty {
        Some("array") => {
            let element = node
                .get("items")
                .map(|items| type_ref(items, dialect))
                .unwrap_or_else(TypeRef::deduced);
            TypeRef::inline(Atom::list(element, list_type(node)))
        }
        Some("object") => match object(node, dialect) {
            Atom::Deduced => TypeRef::deduced(),
            atom => TypeRef::inline(atom),
        },
        Some(_) => TypeRef::scalar(),
        // Only `x-kubernetes-preserve-unknown-fields` (or nothing, in a schema that is not
        // structural) stands without a type: an object if it has properties, else anything.
        None if node.get("properties").is_some() => match object(node, dialect) {
            Atom::Deduced => TypeRef::deduced(),
            atom => TypeRef::inline(atom),
        },
        None => TypeRef::deduced(),
    }
}

/// An object node: a struct of its properties and/or a map of its `additionalProperties`, or
/// [`Atom::Deduced`] when it declares neither (an object that holds anything: RawExtension,
/// JSON).
pub(super) fn object(node: &Value, dialect: Dialect) -> Atom {
    let fields: std::collections::BTreeMap<String, TypeRef> = node
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .map(|(k, v)| (k.clone(), type_ref(v, dialect)))
                .collect()
        })
        .unwrap_or_default();
    let element = match node.get("additionalProperties") {
        Some(schema @ Value::Object(_)) => Some(type_ref(schema, dialect)),
        Some(Value::Bool(true)) => Some(TypeRef::deduced()),
        _ if dialect == Dialect::CustomResource
            && flag(node, "x-kubernetes-preserve-unknown-fields") =>
        {
            Some(TypeRef::deduced())
        }
        _ => None,
    };
    let atomic = node.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
    if fields.is_empty() && element.is_none() && !atomic {
        return Atom::Deduced;
    }
    Atom::Map {
        fields,
        element,
        atomic,
    }
}

/// The relationship of a list's items (see the module docs for the order of precedence).
fn list_type(node: &Value) -> ListType {
    match node.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("atomic") => return ListType::Atomic,
        Some("set") => return ListType::Set,
        Some("map") => {
            let keys: Vec<String> = node
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|ks| {
                    ks.iter()
                        .filter_map(Value::as_str)
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            if !keys.is_empty() {
                return ListType::Map(keys);
            }
        }
        _ => {}
    }
    let merge = node
        .get("x-kubernetes-patch-strategy")
        .and_then(Value::as_str)
        .is_some_and(|s| s.split(',').any(|s| s == "merge"));
    if !merge {
        return ListType::Atomic;
    }
    match node
        .get("x-kubernetes-patch-merge-key")
        .and_then(Value::as_str)
    {
        Some(key) => ListType::Map(vec![key.to_string()]),
        None => ListType::Set,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_structured_merge::typed::to_field_set;
    use serde_json::json;

    fn field(atom: &Atom, name: &str) -> Atom {
        schema()
            .resolve(atom.field_type(name))
            .expect("field type resolves")
            .clone()
    }

    #[test]
    fn containers_are_a_map_list_keyed_by_name_and_args_atomic() {
        let spec = schema()
            .resolve(&TypeRef::named("io.k8s.api.core.v1.PodSpec"))
            .unwrap()
            .clone();
        let Atom::List { element, list_type } = field(&spec, "containers") else {
            panic!("containers is a list");
        };
        assert_eq!(list_type, ListType::Map(vec!["name".into()]));
        let container = schema().resolve(&element).unwrap().clone();
        assert!(matches!(
            field(&container, "args"),
            Atom::List {
                list_type: ListType::Atomic,
                ..
            }
        ));
        assert!(matches!(
            field(&spec, "tolerations"),
            Atom::List {
                list_type: ListType::Atomic,
                ..
            }
        ));
    }

    #[test]
    fn finalizers_are_a_set_and_labels_a_granular_map() {
        let meta = schema()
            .resolve(&TypeRef::named(
                "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            ))
            .unwrap()
            .clone();
        assert!(matches!(
            field(&meta, "finalizers"),
            Atom::List {
                list_type: ListType::Set,
                ..
            }
        ));
        assert!(matches!(
            field(&meta, "labels"),
            Atom::Map {
                atomic: false,
                element: Some(_),
                ..
            }
        ));
    }

    #[test]
    fn a_deployment_field_set_names_containers_by_key() {
        let root = root_type("apps/v1", "Deployment").unwrap();
        let d = json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"}},
            "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},
            "spec":{"containers":[{"name":"nginx","image":"nginx","resources":{"limits":{"cpu":"1"}},"ports":[{"containerPort":80}]}]}}}});
        let set = to_field_set(schema(), &root, &d).unwrap();
        let paths: Vec<String> = set.paths().iter().map(ToString::to_string).collect();
        for want in [
            ".spec.replicas",
            ".spec.selector.matchLabels.app",
            ".spec.template.spec.containers[name=\"nginx\"]",
            ".spec.template.spec.containers[name=\"nginx\"].image",
            ".spec.template.spec.containers[name=\"nginx\"].resources.limits.cpu",
            ".spec.template.spec.containers[name=\"nginx\"].ports[containerPort=80].containerPort",
            ".metadata.labels.app",
        ] {
            assert!(paths.iter().any(|p| p == want), "{want} in {paths:?}");
        }
        assert!(root_type("example.com/v1", "Widget").is_none());
    }
}
