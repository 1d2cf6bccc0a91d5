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
}
