//! Pruning of unknown fields from custom resources; kube's `schema/pruning/algorithm.go`.
//!
//! Fields the structural schema does not specify are removed, except below `x-kubernetes-preserve-unknown-fields`
//! (until properties or additionalProperties are specified again), and except `apiVersion`, `kind` and `metadata`
//! of embedded resources and of the object itself (metadata is kube's ObjectMeta business, not the schema's).

use serde_json::{Map, Value};

use crate::structural::Structural;

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Removes the fields of `x` that `s` does not specify and returns their paths, sorted (`spec.foo`,
/// `spec.list[0].bar`), as kube's `PruneWithOptions` reports them. `is_resource_root` treats `x` as a whole
/// object: its `apiVersion`, `kind` and `metadata` are kept.
pub fn prune(x: &mut Value, s: Option<&Structural>, is_resource_root: bool) -> Vec<String> {
    let mut pruner = Pruner {
        path: String::new(),
        pruned: Vec::new(),
    };
    if is_resource_root {
        let mut root = s.cloned().unwrap_or_default();
        root.extensions.x_embedded_resource = true;
        pruner.prune(x, Some(&root));
    } else {
        pruner.prune(x, s);
    }
    pruner.pruned.sort();
    pruner.pruned
}

/// kube's warning for a pruned field: `unknown field "spec.foo"`.
pub fn unknown_field_warning(path: &str) -> String {
    format!("unknown field {path:?}")
}

struct Pruner {
    path: String,
    pruned: Vec<String>,
}

impl Pruner {
    fn with_key<R>(&mut self, key: &str, f: impl FnOnce(&mut Self) -> R) -> R {
        let len = self.path.len();
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(key);
        let r = f(self);
        self.path.truncate(len);
        r
    }

    fn with_index<R>(&mut self, index: usize, f: impl FnOnce(&mut Self) -> R) -> R {
        let len = self.path.len();
        self.path.push_str(&format!("[{index}]"));
        let r = f(self);
        self.path.truncate(len);
        r
    }

    fn record(&mut self, key: &str) {
        self.with_key(key, |p| {
            let path = p.path.clone();
            p.pruned.push(path);
        });
    }

    fn prune(&mut self, x: &mut Value, s: Option<&Structural>) {
        if let Some(s) = s.filter(|s| s.extensions.x_preserve_unknown_fields) {
            self.skip_prune(x, s);
            return;
        }
        match x {
            Value::Object(map) => {
                let Some(s) = s else {
                    let keys: Vec<String> = map.keys().cloned().collect();
                    for k in keys {
                        self.record(&k);
                    }
                    map.clear();
                    return;
                };
                self.prune_object(map, s);
            }
            Value::Array(items) => {
                let item_schema = s.and_then(|s| s.items.as_deref());
                for (i, v) in items.iter_mut().enumerate() {
                    self.with_index(i, |p| p.prune(v, item_schema));
                }
            }
            _ => {}
        }
    }

    fn prune_object(&mut self, map: &mut Map<String, Value>, s: &Structural) {
        let mut unknown = Vec::new();
        for (k, v) in map.iter_mut() {
            if s.extensions.x_embedded_resource && META_FIELDS.contains(&k.as_str()) {
                continue;
            }
            if let Some(prop) = s.properties.get(k) {
                self.with_key(k, |p| p.prune(v, Some(prop)));
            } else if s.generic.additional_properties.is_some() {
                let additional = s.additional_properties_schema();
                self.with_key(k, |p| p.prune(v, additional));
            } else {
                unknown.push(k.clone());
            }
        }
        for k in unknown {
            if !META_FIELDS.contains(&k.as_str()) || !self.path.is_empty() {
                self.record(&k);
            }
            map.remove(&k);
        }
    }

    fn skip_prune(&mut self, x: &mut Value, s: &Structural) {
        match x {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    if s.extensions.x_embedded_resource && META_FIELDS.contains(&k.as_str()) {
                        continue;
                    }
                    if let Some(prop) = s.properties.get(k) {
                        self.with_key(k, |p| p.prune(v, Some(prop)));
                    } else if s.generic.additional_properties.is_some() {
                        let additional = s.additional_properties_schema();
                        self.with_key(k, |p| p.prune(v, additional));
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item_schema) = s.items.as_deref() {
                    for (i, v) in items.iter_mut().enumerate() {
                        self.with_index(i, |p| p.skip_prune(v, item_schema));
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
    use serde_json::json;

    fn schema(v: Value) -> Structural {
        let props: JSONSchemaProps = serde_json::from_value(v).expect("test schema parses");
        Structural::from_props(&props).expect("converts")
    }

    #[test]
    fn unknown_fields_are_removed_and_reported() {
        let s = schema(
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
                "replicas": {"type": "integer"},
                "list": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
            }}}}),
        );
        let mut x = json!({
            "apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x", "whatever": 1},
            "spec": {"replicas": 1, "foo": 2, "list": [{"a": "x", "b": "y"}]},
            "status": {},
        });
        let pruned = prune(&mut x, Some(&s), true);
        assert_eq!(pruned, vec!["spec.foo", "spec.list[0].b", "status"]);
        assert_eq!(
            x,
            json!({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x", "whatever": 1}, "spec": {"replicas": 1, "list": [{"a": "x"}]}})
        );
        assert_eq!(
            unknown_field_warning(&pruned[0]),
            r#"unknown field "spec.foo""#
        );
    }

    #[test]
    fn preserve_unknown_fields_keeps_fields_until_the_schema_specifies_again() {
        let s = schema(json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}},
        }}}));
        let mut x = json!({"spec": {"free": {"deep": 1}, "known": {"a": "x", "b": "y"}}});
        assert_eq!(prune(&mut x, Some(&s), true), vec!["spec.known.b"]);
        assert_eq!(
            x,
            json!({"spec": {"free": {"deep": 1}, "known": {"a": "x"}}})
        );
    }

    #[test]
    fn embedded_resources_keep_type_and_object_meta() {
        let s = schema(json!({"type": "object", "properties": {"template": {
            "type": "object",
            "x-kubernetes-embedded-resource": true,
            "properties": {"spec": {"type": "object"}},
        }}}));
        let mut x = json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1}, "status": 1}});
        assert_eq!(
            prune(&mut x, Some(&s), true),
            vec!["template.spec.x", "template.status"]
        );
        assert_eq!(
            x,
            json!({"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}})
        );
    }

    #[test]
    fn additional_properties_schemas_prune_their_values() {
        let s = schema(json!({"type": "object", "properties": {"m": {
            "type": "object",
            "additionalProperties": {"type": "object", "properties": {"a": {"type": "string"}}},
        }}}));
        let mut x = json!({"m": {"k1": {"a": "x", "z": 1}, "k2": {}}});
        assert_eq!(prune(&mut x, Some(&s), true), vec!["m.k1.z"]);
        assert_eq!(x, json!({"m": {"k1": {"a": "x"}, "k2": {}}}));
    }

    #[test]
    fn without_a_schema_everything_but_type_and_object_meta_goes() {
        let mut x = json!({"apiVersion": "a/v1", "kind": "K", "metadata": {}, "spec": {"a": 1}});
        assert_eq!(prune(&mut x, None, true), vec!["spec"]);
        assert_eq!(
            x,
            json!({"apiVersion": "a/v1", "kind": "K", "metadata": {}})
        );
        let mut nested = json!({"a": {"b": 1}});
        assert_eq!(prune(&mut nested, None, false), vec!["a"]);
    }

    // Cases of TestPrune (pruning/algorithm_test.go).
    fn check(
        json: Value,
        schema: Option<Value>,
        root: bool,
        expected: Value,
        expected_pruned: &[&str],
    ) {
        let s = schema.map(schema_of);
        let mut x = json;
        let pruned = prune(&mut x, s.as_ref(), root);
        assert_eq!(x, expected);
        assert_eq!(pruned, expected_pruned);
    }

    fn schema_of(v: Value) -> Structural {
        schema(v)
    }

    #[test]
    fn go_cases_scalars_and_arrays() {
        check(Value::Null, None, false, Value::Null, &[]);
        check(json!(4), Some(json!({})), false, json!(4), &[]);
        check(
            json!([1, 2]),
            Some(json!({"items": {}})),
            false,
            json!([1, 2]),
            &[],
        );
        check(
            json!([{"a": 1}, {"b": 1}, {"a": 1, "b": 2, "c": 3}]),
            Some(json!({"items": {"properties": {"a": {}, "c": {}}}})),
            false,
            json!([{"a": 1}, {}, {"a": 1, "c": 3}]),
            &["[1].b", "[2].b"],
        );
        check(
            json!([{"a": 1}, {"b": 1}, {"a": 1, "b": 2, "c": 3}]),
            None,
            false,
            json!([{}, {}, {}]),
            &["[0].a", "[1].b", "[2].a", "[2].b", "[2].c"],
        );
        check(
            json!({"array": [{"a": 1}, {"b": 1}, {"a": 1, "b": 2, "c": 3}], "unspecified": {"a": 1}, "specified": {"a": 1, "b": 2, "c": 3}}),
            Some(json!({"properties": {
                "array": {"items": {"properties": {"a": {}, "c": {}}}},
                "specified": {"properties": {"a": {}, "c": {}}},
            }})),
            false,
            json!({"array": [{"a": 1}, {}, {"a": 1, "c": 3}], "specified": {"a": 1, "c": 3}}),
            &["array[1].b", "array[2].b", "specified.b", "unspecified"],
        );
    }

    #[test]
    fn go_case_nested_preserve_unknown_fields() {
        let input = json!({
            "unspecified": "bar", "alpha": "abc", "beta": 42.0,
            "unspecifiedObject": {"unspecified": "bar"},
            "pruning": {
                "unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
                "pruning": {"unspecified": "bar"}, "apiVersion": "unknown", "preserving": {"unspecified": "bar"},
            },
            "preserving": {
                "unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
                "pruning": {"unspecified": "bar"}, "preserving": {"unspecified": "bar"},
            },
            "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {"foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}},
            "preservingAdditionalPropertiesKeyPruneValues": {"foo": {"specified": {"unspecified": "bar"}, "unspecified": "bar"}},
        });
        let additional = json!({"type": "object", "properties": {"specified": {"type": "object"}}});
        let schema = json!({
            "type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {
                "alpha": {"type": "string"}, "beta": {"type": "number"},
                "pruning": {"type": "object", "properties": {
                    "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "pruning": {"type": "object"},
                }},
                "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                    "preserving": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "pruning": {"type": "object"},
                }},
                "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true, "additionalProperties": additional,
                },
                "preservingAdditionalPropertiesKeyPruneValues": {"type": "object", "additionalProperties": additional},
            },
        });
        check(
            input,
            Some(schema),
            false,
            json!({
                "unspecified": "bar", "alpha": "abc", "beta": 42.0,
                "unspecifiedObject": {"unspecified": "bar"},
                "pruning": {"pruning": {}, "preserving": {"unspecified": "bar"}},
                "preserving": {
                    "unspecified": "bar", "unspecifiedObject": {"unspecified": "bar"},
                    "pruning": {}, "preserving": {"unspecified": "bar"},
                },
                "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields": {"foo": {"specified": {}}},
                "preservingAdditionalPropertiesKeyPruneValues": {"foo": {"specified": {}}},
            }),
            &[
                "preserving.pruning.unspecified",
                "preservingAdditionalPropertiesKeyPruneValues.foo.specified.unspecified",
                "preservingAdditionalPropertiesKeyPruneValues.foo.unspecified",
                "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.specified.unspecified",
                "preservingAdditionalPropertiesNotInheritingXPreserveUnknownFields.foo.unspecified",
                "pruning.apiVersion",
                "pruning.pruning.unspecified",
                "pruning.unspecified",
                "pruning.unspecifiedObject",
            ],
        );
    }

    #[test]
    fn go_cases_additional_properties_with_schema_and_bool() {
        check(
            json!({"a": 1, "b": 1, "c": {"a": 1, "b": 2, "c": {"a": 1}}}),
            Some(
                json!({"properties": {"a": {}, "c": {"additionalProperties": {"type": "integer"}}}}),
            ),
            false,
            json!({"a": 1, "c": {"a": 1, "b": 2, "c": {}}}),
            &["b", "c.c.a"],
        );
        check(
            json!({"a": 1, "b": 1, "c": {"a": 1, "b": 2, "c": {"a": 1, "apiVersion": "unknown"}}}),
            Some(json!({"properties": {"a": {}, "c": {"additionalProperties": false}}})),
            false,
            json!({"a": 1, "c": {"a": 1, "b": 2, "c": {}}}),
            &["b", "c.c.a", "c.c.apiVersion"],
        );
    }

    #[test]
    fn go_cases_embedded_resources_with_and_without_root() {
        let embedded = |extra: Value| {
            let mut v = json!({
                "apiVersion": "foo/v1", "kind": "Foo", "unspecified": "bar",
                "metadata": {"name": "instance", "unspecified": "bar"},
                "spec": {"unspecified": "bar"},
            });
            if let (Some(m), Value::Object(e)) = (v.as_object_mut(), extra) {
                m.extend(e);
            }
            v
        };
        let mut nested = embedded(json!({}));
        nested["spec"]["embedded"] = embedded(json!({}));
        let mut input = json!({
            "apiVersion": "foo/v1", "kind": "Foo",
            "metadata": {"name": "instance", "unspecified": "bar"},
            "unspecified": "bar",
            "pruned": embedded(json!({})),
            "preserving": embedded(json!({})),
        });
        input["nested"] = nested;
        let schema = json!({"type": "object", "properties": {
            "pruned": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}},
            "preserving": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
            "nested": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object", "properties": {
                "embedded": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object"}}},
            }}}},
        }});
        let kept = json!({"apiVersion": "foo/v1", "kind": "Foo", "metadata": {"name": "instance", "unspecified": "bar"}, "spec": {}});
        let mut nested_kept = kept.clone();
        nested_kept["spec"] = json!({"embedded": kept.clone()});
        let expected_pruned = [
            "nested.spec.embedded.spec.unspecified",
            "nested.spec.embedded.unspecified",
            "nested.spec.unspecified",
            "nested.unspecified",
            "pruned.spec.unspecified",
            "pruned.unspecified",
            "unspecified",
        ];
        let body =
            json!({"pruned": kept, "preserving": embedded(json!({})), "nested": nested_kept});
        check(
            input.clone(),
            Some(schema.clone()),
            false,
            body.clone(),
            &expected_pruned,
        );
        let mut with_meta = body;
        with_meta["apiVersion"] = json!("foo/v1");
        with_meta["kind"] = json!("Foo");
        with_meta["metadata"] = json!({"name": "instance", "unspecified": "bar"});
        check(input, Some(schema), true, with_meta, &expected_pruned);
    }
}
