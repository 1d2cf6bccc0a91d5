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
    use crate::field::ErrorType;
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

    // TestValidateListSetsAndMaps (listtype/validation_test.go): compares error types and paths.
    fn matches(schema: Value, obj: Value) -> Vec<(ErrorType, String)> {
        let props: JSONSchemaProps = serde_json::from_value(schema).expect("test schema parses");
        let s = Structural::from_props(&props).expect("converts");
        let Value::Object(obj) = obj else {
            panic!("test object is an object")
        };
        let mut out: Vec<(ErrorType, String)> =
            validate_list_sets_and_maps(&Path::new("root"), Some(&s), &obj)
                .into_iter()
                .map(|e| (e.error_type, e.field))
                .collect();
        out.sort_by(|a, b| a.1.cmp(&b.1));
        out
    }

    fn dups(paths: &[&str]) -> Vec<(ErrorType, String)> {
        let mut v: Vec<(ErrorType, String)> = paths
            .iter()
            .map(|p| (ErrorType::Duplicate, p.to_string()))
            .collect();
        v.sort_by(|a, b| a.1.cmp(&b.1));
        v
    }

    fn array(list_type: Option<&str>, keys: &[&str], items: Option<Value>) -> Value {
        let mut v = json!({"type": "array"});
        if let Some(lt) = list_type {
            v["x-kubernetes-list-type"] = json!(lt);
        }
        if !keys.is_empty() {
            v["x-kubernetes-list-map-keys"] = json!(keys);
        }
        if let Some(i) = items {
            v["items"] = i;
        }
        v
    }

    #[test]
    fn go_simple_cases() {
        assert!(validate_list_sets_and_maps(&Path::new("root"), None, &Map::new()).is_empty());
        let obj = json!({"array": ["a", "b", "a"]});
        let props = |p: Value| json!({"type": "object", "properties": {"array": p}});
        assert!(matches(props(array(None, &[], None)), obj.clone()).is_empty());
        assert!(matches(
            props(array(Some("set"), &[], None)),
            json!({"array": ["a"]})
        )
        .is_empty());
        assert_eq!(
            matches(
                props(array(Some("set"), &[], None)),
                json!({"array": ["a", "a"]})
            ),
            dups(&["root.array[1]"])
        );
        assert_eq!(
            matches(
                props(array(Some("set"), &[], None)),
                json!({"array": ["a", "a", "b", "c", "d", "c"]})
            ),
            dups(&["root.array[1]", "root.array[5]"])
        );
        assert!(matches(
            props(array(None, &[], Some(json!({"type": "string"})))),
            obj.clone()
        )
        .is_empty());
        assert_eq!(
            matches(
                props(array(Some("set"), &[], Some(json!({"type": "string"})))),
                obj.clone()
            ),
            dups(&["root.array[2]"])
        );
        assert_eq!(
            matches(
                json!({"type": "object", "additionalProperties": array(Some("set"), &[], Some(json!({"type": "string"})))}),
                obj
            ),
            dups(&["root[array][2]"])
        );
        assert_eq!(
            matches(
                props(array(
                    None,
                    &[],
                    Some(array(Some("set"), &[], Some(json!({"type": "string"}))))
                )),
                json!({"array": [["a", "b", "a"], ["b", "b", "a"]]})
            ),
            dups(&["root.array[0][2]", "root.array[1][1]"])
        );
        assert_eq!(
            matches(
                props(array(Some("set"), &[], Some(array(Some("set"), &[], None)))),
                json!({"array": ["a", "b", "a", ["b", "b", "a"]]})
            ),
            dups(&["root.array[2]", "root.array[3][1]"])
        );
        assert_eq!(
            matches(
                props(array(Some("set"), &[], Some(json!({"type": "string"})))),
                json!({"array": [[], ["a"], ["a"]]})
            ),
            dups(&["root.array[2]"])
        );
    }

    #[test]
    fn go_set_list_with_compound_map_items() {
        let set = |items: Value| array(Some("set"), &[], Some(items));
        let string_map = json!({"type": "object", "additionalProperties": {"type": "string"}});
        let schema = json!({"type": "object", "properties": {
            "strings": set(json!({"type": "string"})),
            "integers": set(json!({"type": "integer"})),
            "booleans": set(json!({"type": "boolean"})),
            "float64": set(json!({"type": "number"})),
            "nil": set(json!({"type": "string", "nullable": true})),
            "empty maps": set(string_map.clone()),
            "map values": set(string_map.clone()),
            "nil values": set(json!({"type": "object", "additionalProperties": {"type": "string", "nullable": true}})),
            "array": set(json!({"type": "array", "items": {"type": "string"}})),
            "nil array": set(json!({"type": "array", "items": {"type": "string", "nullable": true}})),
            "multiple duplicates": set(string_map),
        }});
        let obj = json!({
            "strings": ["a", "b", "a"],
            "integers": [1, 2, 1],
            "booleans": [false, true, true],
            "float64": [1.0, 2.0, 2.0],
            "nil": ["a", null, null],
            "empty maps": [{"a": "b"}, {}, {}],
            "map values": [{"a": "b"}, {"a": "c"}, {"a": "b"}],
            "nil values": [{"a": null}, {"b": "c", "a": null}],
            "array": [[], ["a"], ["b"], ["a"]],
            "nil array": [[], [null], [null, null], [null], ["a"]],
            "multiple duplicates": [{"a": "b"}, {"a": "c"}, {"a": "b"}, {"a": "c"}, {"a": "c"}],
        });
        assert_eq!(
            matches(schema, obj),
            dups(&[
                "root.strings[2]",
                "root.integers[2]",
                "root.booleans[2]",
                "root.float64[2]",
                "root.nil[2]",
                "root.empty maps[2]",
                "root.map values[2]",
                "root.array[3]",
                "root.nil array[3]",
                "root.multiple duplicates[2]",
                "root.multiple duplicates[3]",
            ])
        );
    }

    #[test]
    fn go_map_list_with_compound_map_items() {
        let map = |keys: &[&str], items: Value| array(Some("map"), keys, Some(items));
        let string_map = json!({"type": "object", "additionalProperties": {"type": "string"}});
        let nullable_string_map =
            json!({"type": "object", "additionalProperties": {"type": "string", "nullable": true}});
        let nil_key_items = json!({"type": "object", "properties": {
            "a": {"type": "array", "nullable": true, "items": {"type": "string"}}, "c": {"type": "string"},
        }});
        let schema = json!({"type": "object", "properties": {
            "strings": map(&["a"], json!({"type": "string"})),
            "integers": map(&["a"], json!({"type": "integer"})),
            "booleans": map(&["a"], json!({"type": "boolean"})),
            "float64": map(&["a"], json!({"type": "number"})),
            "nil": map(&["a"], json!({"type": "string", "nullable": true})),
            "array": map(&["a"], json!({"type": "array", "items": {"type": "string"}})),
            "one key": map(&["a"], string_map.clone()),
            "two keys": map(&["a", "b"], string_map.clone()),
            "undefined key": map(&["a", "b"], string_map),
            "compound key": map(&["a"], nullable_string_map.clone()),
            "nil key": map(&["a"], nil_key_items.clone()),
            "nil item": map(&["a"], nil_key_items),
            "nil item multiple keys": map(&["a", "b"], json!({"type": "object", "properties": {
                "a": {"type": "array", "nullable": true, "items": {"type": "string"}}, "b": {"type": "string"}, "c": {"type": "string"},
            }})),
            "multiple duplicates": map(&["a"], nullable_string_map),
        }});
        let obj = json!({
            "strings": ["a"],
            "integers": [1],
            "booleans": [false],
            "float64": [1.0],
            "nil": [null],
            "array": [["a"]],
            "one key": [{"a": "0", "c": "2"}, {"a": "1", "c": "1"}, {"a": "1", "c": "2"}, {}],
            "two keys": [{"a": "1", "b": "1", "c": "1"}, {"a": "1", "b": "2", "c": "2"}, {"a": "1", "b": "2", "c": "3"}, {}],
            "undefined key": [{"a": "1", "b": "1", "c": "1"}, {"a": "1", "c": "2"}, {"a": "1", "c": "3"}, {}],
            "compound key": [{"a": [], "c": "1"}, {"a": null, "c": "1"}, {"a": ["a"], "c": "1"}, {"a": ["a", 42], "c": "2"}, {"a": ["a", 42], "c": ["3"]}],
            "nil key": [{"a": [], "c": "1"}, {"a": null, "c": "1"}, {"c": "1"}, {"a": null}],
            "nil item": [null, {"a": "0", "c": "1"}, {"a": null}, {"c": "1"}],
            "nil item multiple keys": [null, {"b": "0", "c": "1"}, {"a": null}, {"c": "1"}],
            "multiple duplicates": [
                {"a": [], "c": "1"}, {"a": null, "c": "1"}, {"a": ["a"], "c": "1"}, {"a": ["a", 42], "c": "2"},
                {"a": ["a", 42], "c": ["3"]}, {"a": ["a"], "c": "1", "d": "1"}, {"a": ["a"], "c": "1", "d": "2"},
            ],
        });
        let mut expected = dups(&[
            "root.one key[2]",
            "root.two keys[2]",
            "root.undefined key[2]",
            "root.compound key[4]",
            "root.nil key[3]",
            "root.nil item[3]",
            "root.nil item multiple keys[3]",
            "root.multiple duplicates[4]",
            "root.multiple duplicates[5]",
        ]);
        for p in [
            "root.strings[0]",
            "root.integers[0]",
            "root.booleans[0]",
            "root.float64[0]",
            "root.array[0]",
        ] {
            expected.push((ErrorType::Invalid, p.to_string()));
        }
        expected.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(matches(schema, obj), expected);
    }
}
