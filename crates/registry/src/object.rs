//! Small accessors over objects held as JSON: read a path, set a default, compare subtrees.

use serde_json::{Map, Value};

/// The value at `path` (object keys), if every step exists.
pub(crate) fn get<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = obj;
    for key in path {
        cur = cur.as_object()?.get(*key)?;
    }
    Some(cur)
}

/// The string at `path`, if present and a string.
pub(crate) fn get_str<'a>(obj: &'a Value, path: &[&str]) -> Option<&'a str> {
    get(obj, path).and_then(Value::as_str)
}

/// The integer at `path`, if present and an integer.
pub(crate) fn get_i64(obj: &Value, path: &[&str]) -> Option<i64> {
    get(obj, path).and_then(Value::as_i64)
}

/// The object at `path`, created (and any non-object on the way replaced) as needed.
/// `None` only when `obj` itself is not an object.
pub(crate) fn object_mut<'a>(
    obj: &'a mut Value,
    path: &[&str],
) -> Option<&'a mut Map<String, Value>> {
    let mut cur = obj.as_object_mut()?;
    for key in path {
        let entry = cur
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        cur = entry.as_object_mut()?;
    }
    Some(cur)
}

/// The object at `path` if it already exists and is an object; never creates anything.
pub(crate) fn existing_object_mut<'a>(
    obj: &'a mut Value,
    path: &[&str],
) -> Option<&'a mut Map<String, Value>> {
    let mut cur = obj;
    for key in path {
        cur = cur.as_object_mut()?.get_mut(*key)?;
    }
    cur.as_object_mut()
}

/// Sets `map[key] = value` when `key` is absent, `null` or `""` (a defaulting step: Go
/// defaulting tests strings against `""` and pointers against `nil`).
pub(crate) fn default_field(map: &mut Map<String, Value>, key: &str, value: Value) {
    match map.get(key) {
        None | Some(Value::Null) => {
            map.insert(key.to_string(), value);
        }
        Some(Value::String(s)) if s.is_empty() => {
            map.insert(key.to_string(), value);
        }
        Some(_) => {}
    }
}

/// Like [`default_field`], and also replaces `0`: for Go fields that are plain integers
/// (`if obj.TimeoutSeconds == 0`).
pub(crate) fn default_nonzero(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).and_then(Value::as_i64) == Some(0) {
        map.insert(key.to_string(), value);
    } else {
        default_field(map, key, value);
    }
}

/// Sets or removes (`None`) the value at `path` inside `obj`, creating parents as needed.
pub(crate) fn set(obj: &mut Value, path: &[&str], value: Option<Value>) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    match value {
        Some(v) => {
            if let Some(m) = object_mut(obj, parents) {
                m.insert(last.to_string(), v);
            }
        }
        None => {
            if let Some(m) = existing_object_mut(obj, parents) {
                m.remove(*last);
            }
        }
    }
}

/// Copies the value at `path` from `src` into `dst` (removing it from `dst` when `src` lacks it).
pub(crate) fn copy(dst: &mut Value, src: &Value, path: &[&str]) {
    set(dst, path, get(src, path).cloned());
}

/// Whether two optional subtrees are semantically equal, treating absent, `null`, empty
/// objects/arrays and zero scalars (`""`, `0`, `false`) alike, as Go's
/// `apiequality.Semantic.DeepEqual` does on typed structs where omitted fields are zero values.
pub(crate) fn semantically_equal(a: Option<&Value>, b: Option<&Value>) -> bool {
    fn is_empty(v: Option<&Value>) -> bool {
        match v {
            None | Some(Value::Null) => true,
            Some(Value::Object(m)) => m.values().all(|v| is_empty(Some(v))),
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::String(s)) => s.is_empty(),
            Some(Value::Bool(b)) => !b,
            Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        }
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter()
                .all(|k| semantically_equal(x.get(k), y.get(k)))
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(a, b)| semantically_equal(Some(a), Some(b)))
        }
        (Some(Value::Number(x)), Some(Value::Number(y))) => {
            x == y || (x.as_f64().is_some() && x.as_f64() == y.as_f64())
        }
        (x, y) if is_empty(x) && is_empty(y) => true,
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// A `map[string]string` (labels, selectors) as string pairs; non-string values are skipped
/// (validation reports them).
pub(crate) fn string_map(v: Option<&Value>) -> std::collections::BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_fill_only_absent_null_or_empty_fields() {
        let mut obj = json!({"spec": {"replicas": 3, "paused": null, "type": ""}});
        let spec = object_mut(&mut obj, &["spec"]).expect("object");
        default_field(spec, "replicas", json!(1));
        default_field(spec, "paused", json!(false));
        default_field(spec, "minReadySeconds", json!(0));
        default_field(spec, "type", json!("RollingUpdate"));
        default_nonzero(spec, "replicas", json!(1));
        assert_eq!(
            obj,
            json!({"spec": {"replicas": 3, "paused": false, "type": "RollingUpdate", "minReadySeconds": 0}})
        );
        let mut probe = json!({"periodSeconds": 0});
        let probe_map = object_mut(&mut probe, &[]).expect("object");
        default_nonzero(probe_map, "periodSeconds", json!(10));
        assert_eq!(probe, json!({"periodSeconds": 10}));
    }

    #[test]
    fn semantic_equality_treats_absent_and_empty_alike() {
        assert!(semantically_equal(
            Some(&json!({"a": {}})),
            Some(&json!({}))
        ));
        assert!(semantically_equal(None, Some(&json!({"a": []}))));
        assert!(!semantically_equal(
            Some(&json!({"a": 1})),
            Some(&json!({}))
        ));
        assert!(semantically_equal(
            Some(&json!({"a": 1})),
            Some(&json!({"a": 1.0}))
        ));
        assert!(semantically_equal(
            Some(&json!({"a": "", "b": false})),
            None
        ));
        assert!(!semantically_equal(Some(&json!({"a": "x"})), None));
    }

    #[test]
    fn set_and_copy_create_parents_and_remove() {
        let mut dst = json!({});
        set(&mut dst, &["status", "phase"], Some(json!("Active")));
        assert_eq!(dst, json!({"status": {"phase": "Active"}}));
        copy(&mut dst, &json!({}), &["status"]);
        assert_eq!(dst, json!({}));
    }
}
