//! The structured-merge type of a custom resource, from its CRD version's `openAPIV3Schema`.
//!
//! As apiextensions-apiserver builds the type converter of a served version
//! (`buildOpenAPIModelsForApply` in `apiserver/customresource_handler.go`, then kube-openapi's
//! `schemaconv`): the root gets `apiVersion` and `kind` as strings and `metadata` as
//! `ObjectMeta` whatever the schema says (`builder.go`), as does every object marked
//! `x-kubernetes-embedded-resource` (`addEmbeddedProperties`). A list's relationship is its
//! `x-kubernetes-list-type` (`map` keyed by `x-kubernetes-list-map-keys`), atomic without one;
//! an object is granular unless `x-kubernetes-map-type: atomic` (`granular` is the default);
//! `x-kubernetes-preserve-unknown-fields` keeps the declared properties typed and merges the
//! others untyped; `x-kubernetes-int-or-string` is a scalar. Value validations (`allOf`,
//! `anyOf`, `oneOf`, `not`) say nothing about shape and are ignored, as the builder strips them.
//!
//! The type is inline (CRD schemas have no references) except for `ObjectMeta`, which names
//! the built-in definition of [`super::schema::schema`].

use std::collections::BTreeMap;

use rkcm_structured_merge::{Atom, TypeRef};
use serde_json::Value;

use super::schema::{object, Dialect};

/// The definition every custom resource's `metadata` refers to.
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The type of the objects of a CRD version whose `openAPIV3Schema` is `schema` (`None`: the
/// version has none, and its objects are merged untyped, as kube's).
pub fn custom_resource_type(schema: Option<&Value>) -> TypeRef {
    match schema {
        Some(s) => resource(s),
        None => TypeRef::deduced(),
    }
}

/// An object that is a Kubernetes resource: `apiVersion`, `kind` and `metadata` are TypeMeta's
/// and ObjectMeta's (ones the schema declares are replaced, as `SetProperty` does).
pub(super) fn resource(node: &Value) -> TypeRef {
    let mut atom = match object(node, Dialect::CustomResource) {
        Atom::Deduced => Atom::Map {
            fields: BTreeMap::new(),
            element: Some(TypeRef::deduced()),
            atomic: false,
        },
        atom => atom,
    };
    if let Atom::Map { fields, .. } = &mut atom {
        fields.insert("apiVersion".into(), TypeRef::scalar());
        fields.insert("kind".into(), TypeRef::scalar());
        fields.insert("metadata".into(), TypeRef::named(OBJECT_META));
    }
    TypeRef::inline(atom)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::schema::schema;
    use crate::apply::{ApplyError, FieldManager};
    use rkcm_structured_merge::typed::to_field_set;
    use rkcm_structured_merge::ListType;
    use serde_json::json;

    fn resolve(t: &TypeRef) -> Atom {
        schema().resolve(t).expect("type resolves").clone()
    }

    fn field(t: &TypeRef, name: &str) -> TypeRef {
        resolve(t).field_type(name).clone()
    }

    #[test]
    fn the_root_has_type_meta_and_object_meta_whatever_the_schema_declares() {
        let root = custom_resource_type(Some(&json!({"type":"object","properties":{
            "metadata":{"type":"object","properties":{"name":{"type":"string"}}},
            "spec":{"type":"object","properties":{"size":{"type":"integer"}}}}})));
        assert_eq!(field(&root, "metadata"), TypeRef::named(OBJECT_META));
        assert_eq!(field(&root, "apiVersion"), TypeRef::scalar());
        assert_eq!(field(&root, "kind"), TypeRef::scalar());
        assert_eq!(field(&field(&root, "spec"), "size"), TypeRef::scalar());
        // finalizers are ObjectMeta's: a set.
        assert!(matches!(
            resolve(&field(&field(&root, "metadata"), "finalizers")),
            Atom::List {
                list_type: ListType::Set,
                ..
            }
        ));
    }

    #[test]
    fn lists_follow_their_list_type_and_are_atomic_without_one() {
        let root = custom_resource_type(Some(
            &json!({"type":"object","properties":{"spec":{"type":"object","properties":{
                "plain":{"type":"array","items":{"type":"string"}},
                "tags":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},
                "ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["containerPort","protocol"],
                    "items":{"type":"object","properties":{"containerPort":{"type":"integer"},"protocol":{"type":"string"}}}},
                "whole":{"type":"array","x-kubernetes-list-type":"atomic","items":{"type":"object","properties":{"a":{"type":"string"}}}}
            }}}}),
        ));
        let spec = field(&root, "spec");
        let list = |name: &str| match resolve(&field(&spec, name)) {
            Atom::List { list_type, .. } => list_type,
            other => panic!("{name} is a list, got {other:?}"),
        };
        assert_eq!(list("plain"), ListType::Atomic);
        assert_eq!(list("tags"), ListType::Set);
        assert_eq!(
            list("ports"),
            ListType::Map(vec!["containerPort".into(), "protocol".into()])
        );
        assert_eq!(list("whole"), ListType::Atomic);
    }

    #[test]
    fn maps_are_granular_unless_atomic_and_preserved_fields_are_deduced() {
        let root = custom_resource_type(Some(
            &json!({"type":"object","properties":{"spec":{"type":"object","properties":{
                "labels":{"type":"object","additionalProperties":{"type":"string"}},
                "selector":{"type":"object","x-kubernetes-map-type":"atomic","properties":{"app":{"type":"string"}}},
                "config":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"mode":{"type":"string"}}},
                "anything":{"x-kubernetes-preserve-unknown-fields":true},
                "port":{"x-kubernetes-int-or-string":true,"anyOf":[{"type":"integer"},{"type":"string"}]},
                "template":{"type":"object","x-kubernetes-embedded-resource":true,"properties":{"spec":{"type":"object","properties":{"x":{"type":"string"}}}}}
            }}}}),
        ));
        let spec = field(&root, "spec");
        assert!(matches!(
            resolve(&field(&spec, "labels")),
            Atom::Map {
                atomic: false,
                element: Some(_),
                ..
            }
        ));
        assert!(matches!(
            resolve(&field(&spec, "selector")),
            Atom::Map { atomic: true, .. }
        ));
        let config = resolve(&field(&spec, "config"));
        assert_eq!(config.field_type("mode"), &TypeRef::scalar());
        assert_eq!(config.field_type("other"), &TypeRef::deduced());
        assert_eq!(field(&spec, "anything"), TypeRef::deduced());
        assert_eq!(field(&spec, "port"), TypeRef::scalar());
        let template = field(&spec, "template");
        assert_eq!(field(&template, "metadata"), TypeRef::named(OBJECT_META));
        assert_eq!(field(&field(&template, "spec"), "x"), TypeRef::scalar());
    }

    #[test]
    fn a_version_without_a_schema_is_merged_untyped() {
        assert_eq!(custom_resource_type(None), TypeRef::deduced());
    }

    #[test]
    fn a_field_set_names_map_list_items_by_all_their_keys() {
        let root = custom_resource_type(Some(&crontab_schema()));
        let obj = json!({"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"t","finalizers":["f"]},
            "spec":{"cronSpec":"* * * * */5","replicas":1,"ports":[{"name":"x","containerPort":80,"protocol":"TCP"}]}});
        let set = to_field_set(schema(), &root, &obj).expect("a field set");
        let paths: Vec<String> = set.paths().iter().map(ToString::to_string).collect();
        for want in [
            ".metadata.finalizers[=\"f\"]",
            ".spec.cronSpec",
            ".spec.replicas",
            ".spec.ports[containerPort=80,protocol=\"TCP\"].name",
        ] {
            assert!(paths.iter().any(|p| p == want), "{want} in {paths:?}");
        }
    }

    fn at(s: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_800_000_000 + s).expect("a valid time")
    }

    fn conflicts(r: Result<Value, ApplyError>) -> Vec<(String, String)> {
        match r {
            Err(ApplyError::Conflicts { causes, .. }) => causes,
            other => panic!("expected conflicts, got {other:?}"),
        }
    }

    /// kube's `TestApplyCRDStructuralSchema` (`apply_crd_test.go`), on the field manager.
    #[test]
    fn crd_typed_apply_sets_finalizers_keys_ports_and_conflicts_per_item() {
        let fm = FieldManager::new("stable.example.com/v1", "CronTab", "")
            .with_type(custom_resource_type(Some(&crontab_schema())));
        let config = json!({"apiVersion":"stable.example.com/v1","kind":"CronTab",
            "metadata":{"name":"mytest","finalizers":["test-finalizer"]},
            "spec":{"cronSpec":"* * * * */5","replicas":1,"ports":[{"name":"x","containerPort":80,"protocol":"TCP"}]}});
        let obj = fm
            .apply(None, &config, "apply_test", false, at(0))
            .expect("created by apply");

        // A merge patch adds a finalizer: finalizers are a set, so re-applying keeps both.
        let mut patched = obj.clone();
        patched["metadata"]["finalizers"] = json!(["test-finalizer", "another-one"]);
        fm.update(Some(&obj), &mut patched, "patcher", at(1));
        let obj = fm
            .apply(Some(&patched), &config, "apply_test", false, at(2))
            .expect("the same configuration applies again");
        assert_eq!(
            obj["metadata"]["finalizers"],
            json!(["test-finalizer", "another-one"])
        );

        // Another writer changes replicas: applying again conflicts on that one field.
        let mut patched = obj.clone();
        patched["spec"]["replicas"] = json!(5);
        fm.update(Some(&obj), &mut patched, "patcher", at(3));
        let causes = conflicts(fm.apply(Some(&patched), &config, "apply_test", false, at(4)));
        assert_eq!(
            causes,
            vec![(
                "conflict with \"patcher\" using stable.example.com/v1".to_string(),
                ".spec.replicas".to_string()
            )]
        );
        let obj = fm
            .apply(Some(&patched), &config, "apply_test", true, at(5))
            .expect("force takes the field");
        assert_eq!(obj["spec"]["replicas"], json!(1));

        // A second applier editing an item the first owns conflicts on that item's field…
        let edit = json!({"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"mytest"},
            "spec":{"ports":[{"name":"y","containerPort":80,"protocol":"TCP"}]}});
        let causes = conflicts(fm.apply(Some(&obj), &edit, "apply_test_2", false, at(6)));
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert_eq!(
            causes[0].1,
            ".spec.ports[containerPort=80,protocol=\"TCP\"].name"
        );
        // …but adding its own item (another key) merges next to it.
        let add = json!({"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"mytest"},
            "spec":{"ports":[{"name":"y","containerPort":8080,"protocol":"TCP"}]}});
        let obj = fm
            .apply(Some(&obj), &add, "apply_test_2", false, at(7))
            .expect("a new item of a map list does not conflict");
        assert_eq!(
            obj["spec"]["ports"],
            json!([{"name":"x","containerPort":80,"protocol":"TCP"},{"name":"y","containerPort":8080,"protocol":"TCP"}])
        );

        // Untyped, the same ports list is atomic: the second applier's list conflicts whole.
        let untyped = FieldManager::new("stable.example.com/v1", "CronTab", "");
        let obj = untyped
            .apply(None, &config, "apply_test", false, at(8))
            .expect("created");
        let causes = conflicts(untyped.apply(Some(&obj), &add, "apply_test_2", false, at(9)));
        assert_eq!(causes[0].1, ".spec.ports");
    }

    #[test]
    fn status_is_owned_with_the_object_without_a_status_subresource() {
        let widget = |status: Value| json!({"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"status":status});
        let schema = json!({"type":"object","properties":{"status":{"type":"object","properties":{"phase":{"type":"string"}}}}});
        let plain = FieldManager::new("example.com/v1", "Widget", "")
            .with_type(custom_resource_type(Some(&schema)));
        let fm = plain.clone().without_status_subresource();
        // Owned: applying without it removes it.
        let obj = fm
            .apply(None, &widget(json!({"phase":"Ready"})), "m", false, at(0))
            .expect("created");
        let obj = fm
            .apply(Some(&obj), &widget(json!({})), "m", false, at(1))
            .expect("applied");
        assert_eq!(obj.pointer("/status/phase"), None, "{obj}");
        // With the subresource, status written with the object is nobody's: it stays.
        let obj = plain
            .apply(None, &widget(json!({"phase":"Ready"})), "m", false, at(0))
            .expect("created");
        let obj = plain
            .apply(Some(&obj), &widget(json!({})), "m", false, at(1))
            .expect("applied");
        assert_eq!(obj.pointer("/status/phase"), Some(&json!("Ready")), "{obj}");
    }

    /// The schema of kube's `TestApplyCRDStructuralSchema` (`apply_crd_test.go`).
    pub(crate) fn crontab_schema() -> Value {
        json!({"type":"object","properties":{"spec":{"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{
            "cronSpec":{"type":"string","pattern":"^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
            "ports":{"type":"array","x-kubernetes-list-map-keys":["containerPort","protocol"],"x-kubernetes-list-type":"map",
                "items":{"type":"object","required":["containerPort","protocol"],"properties":{
                    "containerPort":{"type":"integer","format":"int32"},"hostIP":{"type":"string"},
                    "hostPort":{"type":"integer","format":"int32"},"name":{"type":"string"},"protocol":{"type":"string"}}}}
        }}}})
    }
}
