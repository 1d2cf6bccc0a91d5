//! Uniqueness of `x-kubernetes-list-type: set` and `map` lists; kube's `schema/listtype/validation.go`.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::field::{ErrorList, FieldError, Path};
use crate::go_format;
use crate::structural::Structural;

/// Checks that every `set` list in `obj` has unique items and every `map` list unique keys, reporting the
/// second occurrence of each duplicate as `Duplicate value` (kube's `ValidateListSetsAndMaps`).
pub fn validate_list_sets_and_maps(
    path: &Path,
    s: Option<&Structural>,
    obj: &Map<String, Value>,
) -> ErrorList {
    let Some(s) = s else { return Vec::new() };
    let mut errs = Vec::new();
    if let Some(additional) = s.additional_properties_schema() {
        for (k, v) in obj {
            errs.extend(validate_value(&path.key(k), additional, v));
        }
    }
    for (k, v) in obj {
        if let Some(sub) = s.properties.get(k) {
            errs.extend(validate_value(&path.child(k), sub, v));
        }
    }
    errs
}

fn validate_value(path: &Path, s: &Structural, v: &Value) -> ErrorList {
    match v {
        Value::Array(items) => validate_array(path, s, items),
        Value::Object(map) => validate_list_sets_and_maps(path, Some(s), map),
        _ => Vec::new(),
    }
}

fn validate_array(path: &Path, s: &Structural, items: &[Value]) -> ErrorList {
    let mut errs = Vec::new();
    match s.extensions.x_list_type.as_deref() {
        Some("set") => {
            let keys: Vec<Key> = items.iter().map(|x| Key::Value(x.clone())).collect();
            for i in non_unique(&keys) {
                errs.push(FieldError::duplicate(&path.index(i), items[i].clone()));
            }
        }
        Some("map") => errs.extend(validate_list_map(path, s, items)),
        _ => {}
    }
    if let Some(item_schema) = s.items.as_deref() {
        for (i, x) in items.iter().enumerate() {
            errs.extend(validate_value(&path.index(i), item_schema, x));
        }
    }
    errs
}

/// A list-map key: a value, or "unspecified" (which differs from an explicit `null`).
#[derive(Clone)]
enum Key {
    Unspecified,
    Value(Value),
}

impl Key {
    /// A string under which equal keys collide: Go compares scalars by type and value and compounds by
    /// their JSON encoding (sorted keys).
    fn identity(&self) -> String {
        match self {
            Key::Unspecified => "unspecified".into(),
            Key::Value(v @ (Value::Object(_) | Value::Array(_))) => {
                format!("json:{}", canonical_json(v))
            }
            Key::Value(Value::Number(n)) if n.is_f64() => format!("float:{}", go_format::number(n)),
            Key::Value(Value::Number(n)) => format!("int:{n}"),
            Key::Value(v) => format!("scalar:{v}"),
        }
    }
}

fn canonical_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys
                .iter()
                .map(|k| {
                    format!(
                        "{}:{}",
                        Value::String((*k).clone()),
                        canonical_json(&m[k.as_str()])
                    )
                })
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical_json).collect::<Vec<_>>().join(",")
        ),
        Value::Number(n) => go_format::number(n),
        other => other.to_string(),
    }
}

/// The indices of the second occurrence of every duplicated key (kube's `validateListSet`).
fn non_unique(keys: &[Key]) -> Vec<usize> {
    if keys.len() <= 1 {
        return Vec::new();
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let times = seen.entry(k.identity()).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

fn validate_list_map(path: &Path, s: &Structural, items: &[Value]) -> ErrorList {
    for (i, x) in items.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            return vec![FieldError::invalid(
                &path.index(i),
                x.clone(),
                "must be an object for an array of list-type map",
            )];
        }
    }
    if items.len() <= 1 {
        return Vec::new();
    }
    let key_fields = &s.extensions.x_list_map_keys;
    if key_fields.len() == 1 {
        let key_field = &key_fields[0];
        let keys: Vec<Key> = items
            .iter()
            .map(|x| match x.as_object().and_then(|m| m.get(key_field)) {
                Some(v) => Key::Value(v.clone()),
                None => Key::Unspecified,
            })
            .collect();
        return non_unique(&keys)
            .into_iter()
            .map(|i| {
                let mut shown = Map::new();
                if let Key::Value(v) = &keys[i] {
                    shown.insert(key_field.clone(), v.clone());
                }
                FieldError::duplicate(&path.index(i), Value::Object(shown))
            })
            .collect();
    }
    let keys: Vec<Key> = items
        .iter()
        .map(|x| {
            let mut key = Map::new();
            if let Some(m) = x.as_object() {
                for f in key_fields {
                    if let Some(v) = m.get(f) {
                        key.insert(f.clone(), v.clone());
                    }
                }
            }
            Key::Value(Value::Object(key))
        })
        .collect();
    non_unique(&keys)
        .into_iter()
        .map(|i| {
            let shown = match &keys[i] {
                Key::Value(v) => v.clone(),
                Key::Unspecified => Value::Object(Map::new()),
            };
            FieldError::duplicate(&path.index(i), shown)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
    use serde_json::json;

    fn errors(schema: Value, obj: Value) -> Vec<String> {
        let props: JSONSchemaProps = serde_json::from_value(schema).expect("test schema parses");
        let s = Structural::from_props(&props).expect("converts");
        let Value::Object(obj) = obj else {
            panic!("test object is an object")
        };
        validate_list_sets_and_maps(&Path::root(), Some(&s), &obj)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    fn list(list_type: &str, keys: &[&str], items: Value) -> Value {
        json!({"type": "object", "properties": {"field": {
            "type": "array", "x-kubernetes-list-type": list_type, "x-kubernetes-list-map-keys": keys, "items": items,
        }}})
    }

    #[test]
    fn sets_report_duplicate_scalars_once_each() {
        let s = list("set", &[], json!({"type": "string"}));
        assert!(errors(s.clone(), json!({"field": ["a", "b"]})).is_empty());
        assert_eq!(
            errors(s, json!({"field": ["a", "b", "a", "a", "b"]})),
            vec![
                r#"field[2]: Duplicate value: "a""#,
                r#"field[4]: Duplicate value: "b""#
            ]
        );
    }

    #[test]
    fn sets_compare_numbers_by_type_and_compounds_by_content() {
        let s = list(
            "set",
            &[],
            json!({"x-kubernetes-preserve-unknown-fields": true}),
        );
        assert!(errors(s.clone(), json!({"field": [1, 1.5, "1", true, null]})).is_empty());
        assert_eq!(
            errors(s.clone(), json!({"field": [null, null]})),
            vec![r#"field[1]: Duplicate value: "null""#]
        );
        assert_eq!(
            errors(s, json!({"field": [{"a": 1, "b": 2}, {"b": 2, "a": 1}]})),
            vec![r#"field[1]: Duplicate value: map[string]interface {}{"a":1, "b":2}"#]
        );
    }

    #[test]
    fn maps_with_one_key() {
        let s = list(
            "map",
            &["k"],
            json!({"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "string"}}}),
        );
        assert!(errors(s.clone(), json!({"field": [{"k": "a"}, {"k": "b"}]})).is_empty());
        assert_eq!(
            errors(
                s.clone(),
                json!({"field": [{"k": "a", "v": "1"}, {"k": "a", "v": "2"}]})
            ),
            vec![r#"field[1]: Duplicate value: map[string]interface {}{"k":"a"}"#]
        );
        assert_eq!(
            errors(s.clone(), json!({"field": [{"v": "1"}, null]})),
            vec![r#"field[1]: Duplicate value: map[string]interface {}{}"#]
        );
        assert_eq!(
            errors(s, json!({"field": [{"k": "a"}, "x"]})),
            vec![
                r#"field[1]: Invalid value: "x": must be an object for an array of list-type map"#
            ]
        );
    }

    #[test]
    fn maps_with_several_keys_and_nested_lists() {
        let s = list(
            "map",
            &["k1", "k2"],
            json!({"type": "object", "properties": {
                "k1": {"type": "string"}, "k2": {"type": "integer"},
                "inner": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}},
            }}),
        );
        assert!(errors(
            s.clone(),
            json!({"field": [{"k1": "a", "k2": 1}, {"k1": "a", "k2": 2}]})
        )
        .is_empty());
        assert_eq!(
            errors(
                s,
                json!({"field": [{"k1": "a", "k2": 1, "inner": [1, 1]}, {"k2": 1, "k1": "a"}]})
            ),
            vec![
                r#"field[1]: Duplicate value: map[string]interface {}{"k1":"a", "k2":1}"#,
                "field[0].inner[1]: Duplicate value: 1",
            ]
        );
    }

    #[test]
    fn lists_below_additional_properties_are_checked() {
        let s = json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {
            "type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"},
        }}}});
        assert_eq!(
            errors(s, json!({"m": {"x": ["a", "a"]}})),
            vec![r#"m[x][1]: Duplicate value: "a""#]
        );
    }
}
