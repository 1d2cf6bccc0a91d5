//! Coercion of embedded resources' type and object meta: `apiVersion` and `kind` must be strings and `metadata`
//! must decode as an ObjectMeta, which is then written back in its canonical form (dropping unknown fields);
//! kube's `schema/objectmeta/algorithm.go` (`Coerce`) and `coerce.go`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value};

use crate::field::{FieldError, Path};
use crate::structural::Structural;

/// Coerces every embedded resource in `x` (and `x` itself with `is_resource_root`) and returns the paths of the
/// metadata fields ObjectMeta does not know, which were dropped, sorted (kube's `CoerceWithOptions` with
/// `ReturnUnknownFieldPaths`; the server warns about them as about pruned fields). With `drop_invalid_fields`
/// (kube's choice when reading from storage), wrongly typed `apiVersion`, `kind` and metadata fields are dropped;
/// without it (for requests), the first one is returned as an error.
pub fn coerce(
    path: &Path,
    x: &mut Value,
    s: Option<&Structural>,
    is_resource_root: bool,
    drop_invalid_fields: bool,
) -> Result<Vec<String>, Box<FieldError>> {
    let mut unknown = Vec::new();
    if is_resource_root {
        let mut root = s.cloned().unwrap_or_default();
        root.extensions.x_embedded_resource = true;
        coerce_value(path, x, Some(&root), drop_invalid_fields, &mut unknown)?;
    } else {
        coerce_value(path, x, s, drop_invalid_fields, &mut unknown)?;
    }
    unknown.sort();
    Ok(unknown)
}

fn coerce_value(
    path: &Path,
    x: &mut Value,
    s: Option<&Structural>,
    drop: bool,
    unknown: &mut Vec<String>,
) -> Result<(), Box<FieldError>> {
    let Some(s) = s else { return Ok(()) };
    match x {
        Value::Object(map) => {
            if s.extensions.x_embedded_resource {
                coerce_type_and_object_meta(path, map, drop, unknown)?;
            }
            let additional = s.generic.additional_properties.is_some();
            for (k, v) in map.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    coerce_value(&path.child(k), v, Some(prop), drop, unknown)?;
                } else if additional {
                    coerce_value(
                        &path.key(k),
                        v,
                        s.additional_properties_schema(),
                        drop,
                        unknown,
                    )?;
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                coerce_value(&path.index(i), v, s.items.as_deref(), drop, unknown)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn coerce_type_and_object_meta(
    path: &Path,
    map: &mut Map<String, Value>,
    drop: bool,
    unknown: &mut Vec<String>,
) -> Result<(), Box<FieldError>> {
    for k in ["apiVersion", "kind"] {
        match map.get(k) {
            Some(v) if !v.is_string() => {
                if drop {
                    map.remove(k);
                } else {
                    let e = FieldError::invalid(&path.child(k), v.clone(), "must be a string");
                    return Err(Box::new(e));
                }
            }
            _ => {}
        }
    }
    let Some(metadata) = map.get("metadata").cloned() else {
        return Ok(());
    };
    let meta = match serde_json::from_value::<ObjectMeta>(metadata.clone()) {
        Ok(meta) => meta,
        Err(e) if !drop => {
            let e = FieldError::invalid(&path.child("metadata"), metadata, e.to_string());
            return Err(Box::new(e));
        }
        Err(_) => match &metadata {
            // Field by field, keeping what decodes.
            Value::Object(fields) => {
                let mut kept = Map::new();
                for (k, v) in fields {
                    let single = Value::Object(Map::from_iter([(k.clone(), v.clone())]));
                    if serde_json::from_value::<ObjectMeta>(single).is_ok() {
                        kept.insert(k.clone(), v.clone());
                    }
                }
                serde_json::from_value::<ObjectMeta>(Value::Object(kept)).unwrap_or_default()
            }
            // kube passes a non-object metadata through when dropping invalid fields.
            _ => return Ok(()),
        },
    };
    let canonical = serde_json::to_value(&meta).map_err(|e| {
        FieldError::invalid(&path.child("metadata"), metadata.clone(), e.to_string())
    })?;
    unknown_fields(&path.child("metadata"), &metadata, &canonical, unknown);
    map.insert("metadata".into(), canonical);
    Ok(())
}

/// The fields of `original` that decoding dropped, as `canonical` lacks them (a `null` is not a field).
fn unknown_fields(path: &Path, original: &Value, canonical: &Value, out: &mut Vec<String>) {
    match (original, canonical) {
        (Value::Object(o), Value::Object(c)) => {
            for (k, v) in o {
                match c.get(k) {
                    None if !v.is_null() => out.push(path.child(k).to_string()),
                    Some(cv) => unknown_fields(&path.child(k), v, cv, out),
                    None => {}
                }
            }
        }
        (Value::Array(o), Value::Array(c)) => {
            for (i, (v, cv)) in o.iter().zip(c).enumerate() {
                unknown_fields(&path.index(i), v, cv, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
    use serde_json::json;

    fn schema() -> Structural {
        let props: JSONSchemaProps = serde_json::from_value(json!({"type": "object", "properties": {
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
            "list": {"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}},
        }}))
        .expect("parses");
        Structural::from_props(&props).expect("converts")
    }

    #[test]
    fn embedded_metadata_is_written_back_without_unknown_fields() {
        let s = schema();
        let mut x = json!({
            "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "unknown": 42, "labels": {"a": "b"}}},
            "list": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "unspecified": "x"}}],
        });
        coerce(&Path::root(), &mut x, Some(&s), false, false).expect("coerces");
        assert_eq!(
            x["embedded"]["metadata"],
            json!({"name": "p", "labels": {"a": "b"}})
        );
        assert_eq!(x["list"][0]["metadata"], json!({"name": "q"}));
    }

    #[test]
    fn wrong_types_are_errors_for_requests_and_dropped_from_storage() {
        let s = schema();
        let mut x = json!({"embedded": {"apiVersion": 1, "kind": "Pod"}});
        assert_eq!(
            coerce(&Path::root(), &mut x, Some(&s), false, false).map_err(|e| e.to_string()),
            Err("embedded.apiVersion: Invalid value: 1: must be a string".to_string())
        );
        coerce(&Path::root(), &mut x, Some(&s), false, true).expect("drops");
        assert_eq!(x, json!({"embedded": {"kind": "Pod"}}));

        let mut bad_meta = json!({"embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 42, "namespace": "ns"}}});
        let err = coerce(&Path::root(), &mut bad_meta.clone(), Some(&s), false, false)
            .expect_err("name is not a string");
        assert_eq!(err.field, "embedded.metadata");
        coerce(&Path::root(), &mut bad_meta, Some(&s), false, true).expect("drops");
        assert_eq!(bad_meta["embedded"]["metadata"], json!({"namespace": "ns"}));
    }

    #[test]
    fn the_resource_root_is_coerced_only_when_asked() {
        let s = schema();
        let mut x = json!({"apiVersion": 1, "metadata": {"name": "x", "unknown": 1}});
        coerce(&Path::root(), &mut x, Some(&s), false, false).expect("root is not embedded");
        assert_eq!(x["metadata"]["unknown"], json!(1));
        assert!(coerce(&Path::root(), &mut x, Some(&s), true, false).is_err());
    }
}
