//! What Go's JSON encoder writes for fields a Go struct always has.
//!
//! `encoding/json` never omits a struct held by value (`omitempty` does not apply to structs), so
//! kube-apiserver returns `resources: {}` in every container and `creationTimestamp: null` in
//! every pod template's metadata. Clients rely on it: `kubectl rollout undo` sends a ReplicaSet's
//! template back as it reads it.

use serde_json::{Map, Value};

use super::shape::Shape;

/// Adds to `value`, JSON of the Go type `shape`, every field Go's encoder would write although
/// the JSON lacks it: an absent or null struct held by value becomes `{}` (and is filled in turn),
/// an absent time held by value becomes `null`. Other fields are left as they are.
pub fn fill_value_structs(shape: &Shape, value: &mut Value) {
    match shape {
        Shape::Struct(_) => {
            let (Some(fields), Value::Object(map)) = (shape.fields(), value) else {
                return;
            };
            for field in fields {
                match field.shape {
                    Shape::Struct(_) => {
                        let v = map
                            .entry(field.json)
                            .or_insert_with(|| Value::Object(Map::new()));
                        if v.is_null() {
                            *v = Value::Object(Map::new());
                        }
                        fill_value_structs(&field.shape, v);
                    }
                    Shape::Time => {
                        map.entry(field.json).or_insert(Value::Null);
                    }
                    _ => {
                        if let Some(v) = map.get_mut(field.json) {
                            fill_value_structs(&field.shape, v);
                        }
                    }
                }
            }
        }
        Shape::Pointer(inner) => fill_value_structs(inner, value),
        Shape::Slice(inner) => {
            if let Value::Array(items) = value {
                for item in items {
                    fill_value_structs(inner, item);
                }
            }
        }
        Shape::Map(inner) => {
            if let Value::Object(map) = value {
                for v in map.values_mut() {
                    fill_value_structs(inner, v);
                }
            }
        }
        Shape::Scalar(_) | Shape::Quantity | Shape::Time | Shape::IntOrString | Shape::Json => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::semantic::types;
    use serde_json::json;

    #[test]
    fn a_template_gets_empty_resources_and_a_null_creation_timestamp() {
        let mut t = json!({
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [
                {"name": "web", "image": "nginx"},
                {"name": "side", "image": "busybox", "resources": {"limits": {"cpu": "1"}}},
            ]},
        });
        fill_value_structs(&types::POD_TEMPLATE_SPEC, &mut t);
        assert_eq!(
            t,
            json!({
                "metadata": {"labels": {"app": "web"}, "creationTimestamp": null},
                "spec": {"containers": [
                    {"name": "web", "image": "nginx", "resources": {}},
                    {"name": "side", "image": "busybox", "resources": {"limits": {"cpu": "1"}}},
                ]},
            })
        );
    }

    #[test]
    fn pointers_stay_absent_and_present_pointers_are_filled() {
        let mut spec = json!({
            "containers": [{"name": "a"}],
            "volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}],
        });
        fill_value_structs(&types::POD_SPEC, &mut spec);
        assert_eq!(spec["containers"][0], json!({"name": "a", "resources": {}}));
        assert!(
            spec.get("securityContext").is_none(),
            "a pointer is not filled"
        );
        assert_eq!(
            spec["volumes"][0]["ephemeral"]["volumeClaimTemplate"]["metadata"],
            json!({"creationTimestamp": null}),
            "structs behind a present pointer are"
        );
    }

    #[test]
    fn a_pod_gets_an_empty_status_and_filling_twice_changes_nothing() {
        let mut pod = json!({"metadata": {"name": "p", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"containers": [{"name": "a"}]}});
        fill_value_structs(&types::POD, &mut pod);
        assert_eq!(pod["status"], json!({}));
        assert_eq!(pod["metadata"]["creationTimestamp"], "2024-01-01T00:00:00Z");
        let once = pod.clone();
        fill_value_structs(&types::POD, &mut pod);
        assert_eq!(pod, once);
    }
}
