//! Custom resource data as CEL values, typed by the schema as kube's `UnstructuredToVal`
//! (`schema/cel/model` and `apiserver/pkg/cel/common/values.go`) types it: integers of
//! `number` fields are doubles, strings of format `byte`, `duration`, `date` and `date-time`
//! are bytes, durations and timestamps, objects with properties are maps keyed by the escaped
//! property names, and resource roots show only `apiVersion`, `kind`, `metadata.name` and
//! `metadata.generateName` of the object's meta.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;
use cel::objects::{Key, Map};
use cel::Value;
use serde_json::Value as Json;

use crate::structural::Structural;

/// `v` as a CEL value typed by the schema node `s` (`None`: untyped, as under
/// `x-kubernetes-preserve-unknown-fields`); `resource_root` at a resource's root.
pub fn to_value(v: &Json, s: Option<&Structural>, resource_root: bool) -> Value {
    let embedded = resource_root || s.is_some_and(|s| s.extensions.x_embedded_resource);
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => {
            if s.is_some_and(|s| s.type_() == "number") {
                Value::Float(n.as_f64().unwrap_or(f64::NAN))
            } else if let Some(i) = n.as_i64() {
                Value::Int(i)
            } else if let Some(u) = n.as_u64() {
                Value::UInt(u)
            } else {
                Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Json::String(st) => string_value(st, s),
        Json::Array(items) => {
            let item_schema = s.and_then(|s| s.items.as_deref());
            Value::List(Arc::new(
                items
                    .iter()
                    .map(|i| {
                        to_value(
                            i,
                            item_schema,
                            item_schema.is_some_and(|s| s.extensions.x_embedded_resource),
                        )
                    })
                    .collect(),
            ))
        }
        Json::Object(fields) => {
            let mut map: HashMap<Key, Value> = HashMap::new();
            let ap = s.and_then(Structural::additional_properties_schema);
            match s {
                Some(s) if ap.is_none() && (!s.properties.is_empty() || embedded) => {
                    for (name, value) in fields {
                        // A field set to null is absent to rules (`has()` is false).
                        if value.is_null() {
                            continue;
                        }
                        let prop = s.properties.get(name);
                        let meta =
                            embedded && matches!(name.as_str(), "apiVersion" | "kind" | "metadata");
                        if prop.is_none() && !meta {
                            if s.extensions.x_preserve_unknown_fields {
                                map.insert(
                                    Key::String(Arc::new(name.clone())),
                                    to_value(value, None, false),
                                );
                            }
                            continue;
                        }
                        let Some(escaped) = rkcm_cel::escape(name) else {
                            continue;
                        };
                        let value = match (name.as_str(), embedded) {
                            ("metadata", true) => object_meta(value),
                            _ => to_value(
                                value,
                                prop,
                                prop.is_some_and(|p| p.extensions.x_embedded_resource),
                            ),
                        };
                        map.insert(Key::String(Arc::new(escaped)), value);
                    }
                }
                _ => {
                    for (name, value) in fields {
                        let value = to_value(
                            value,
                            ap,
                            ap.is_some_and(|p| p.extensions.x_embedded_resource),
                        );
                        map.insert(Key::String(Arc::new(name.clone())), value);
                    }
                }
            }
            Value::Map(Map { map: Arc::new(map) })
        }
    }
}

/// The part of an object's `metadata` CEL rules see: `name` and `generateName`.
fn object_meta(v: &Json) -> Value {
    let mut map: HashMap<Key, Value> = HashMap::new();
    for field in ["name", "generateName"] {
        if let Some(Json::String(s)) = v.get(field) {
            map.insert(
                Key::String(Arc::new(field.to_string())),
                Value::String(Arc::new(s.clone())),
            );
        }
    }
    Value::Map(Map { map: Arc::new(map) })
}

fn string_value(st: &str, s: Option<&Structural>) -> Value {
    let format = s
        .filter(|s| s.type_() == "string")
        .and_then(|s| s.value_validation.as_deref())
        .map_or("", |v| v.format.as_str());
    let parsed = match format {
        "byte" => base64::engine::general_purpose::STANDARD
            .decode(st)
            .ok()
            .map(|b| Value::Bytes(Arc::new(b))),
        "duration" => rkcm_apimachinery::duration::Duration::parse(st)
            .ok()
            .map(|d| Value::Duration(chrono::Duration::nanoseconds(d.as_nanos()))),
        "date" => chrono::NaiveDate::parse_from_str(st, "%Y-%m-%d")
            .ok()
            .and_then(|d| {
                d.and_hms_opt(0, 0, 0)
                    .map(|t| Value::Timestamp(t.and_utc().fixed_offset()))
            }),
        "date-time" => chrono::DateTime::parse_from_rfc3339(st)
            .ok()
            .map(Value::Timestamp),
        _ => None,
    };
    parsed.unwrap_or_else(|| Value::String(Arc::new(st.to_string())))
}
