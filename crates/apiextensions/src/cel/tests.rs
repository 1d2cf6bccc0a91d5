//! Ported from kube's `schema/cel/validation_test.go` (TestValidationExpressions and the
//! transition, ratcheting and message cases), `compilation_test.go` and the
//! `apiserver/pkg/cel/library/*_test.go` cases of the functions implemented here.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use serde_json::{json, Value};

use super::*;
use crate::field::Path;
use crate::structural::Structural;

fn structural(schema: Value) -> Structural {
    let props: JSONSchemaProps = serde_json::from_value(schema).expect("schema parses");
    Structural::from_props(&props).expect("structural")
}

/// The errors (`field: message`) of `obj` (an update of `old`) under `schema`.
fn errors_of(schema: Value, obj: &Value, old: Option<&Value>) -> Vec<String> {
    let s = structural(schema);
    let v = Validator::new(&s, false).expect("the schema has rules");
    v.validate(&Path::root(), obj, old)
        .errors
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// `schema` with `rules` at its root.
fn with_rules(mut schema: Value, rules: &[&str]) -> Value {
    schema["x-kubernetes-validations"] = rules.iter().map(|r| json!({"rule": r})).collect();
    schema
}

/// An object schema with properties `val1`, `val2`, … of the given schemas.
fn schemas(types: &[Value]) -> Value {
    let props: serde_json::Map<String, Value> = types
        .iter()
        .enumerate()
        .map(|(i, t)| (format!("val{}", i + 1), t.clone()))
        .collect();
    json!({"type": "object", "properties": props})
}

/// An object with fields `val1`, `val2`, … of the given values.
fn objs(values: &[Value]) -> Value {
    Value::Object(
        values
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("val{}", i + 1), v.clone()))
            .collect(),
    )
}

/// Every rule in `valid` passes on `obj`; every rule of `errors` fails with an error containing
/// its message.
fn check(schema: Value, obj: Value, valid: &[&str], errors: &[(&str, &str)]) {
    for rule in valid {
        let errs = errors_of(with_rules(schema.clone(), &[rule]), &obj, None);
        assert!(errs.is_empty(), "{rule} should pass: {errs:?}");
    }
    for (rule, want) in errors {
        let errs = errors_of(with_rules(schema.clone(), &[rule]), &obj, None);
        assert!(
            errs.iter().any(|e| e.contains(want)),
            "{rule} should fail with {want:?}: {errs:?}"
        );
    }
}

fn string() -> Value {
    json!({"type": "string"})
}
fn integer() -> Value {
    json!({"type": "integer"})
}
fn number() -> Value {
    json!({"type": "number"})
}
fn boolean() -> Value {
    json!({"type": "boolean"})
}
fn format(f: &str) -> Value {
    json!({"type": "string", "format": f})
}
fn list_of(items: Value) -> Value {
    json!({"type": "array", "items": items})
}
fn map_of(values: Value) -> Value {
    json!({"type": "object", "additionalProperties": values})
}
fn object(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

/// `a == a`, `a == b`, `a == literal` and their negations, as kube's
/// `ValsEqualThemselvesAndDataLiteral`.
fn vals_equal(a: &str, b: &str, literal: &str) -> String {
    format!("{a} == {a} && {b} == {b} && {a} == {b} && {a} == {literal} && {literal} == {a} && {b} == {literal} && {literal} == {b} && !({a} != {b}) && !({a} != {literal})")
}

#[test]
fn integers() {
    let max = i64::MAX.to_string();
    let v1 = vals_equal("self.val1", "self.val2", &max);
    let v3 = vals_equal("self.val3", "self.val4", &i32::MAX.to_string());
    check(
        schemas(&[integer(), integer(), integer(), integer()]),
        objs(&[
            json!(i64::MAX),
            json!(i64::MAX),
            json!(i32::MAX),
            json!(i32::MAX),
        ]),
        &[
            &v1,
            &v3,
            "type(self.val1) == int",
            &format!("self.val3 + 1 == {} + 1", i32::MAX),
        ],
        &[
            ("self.val1 + 1 == 0", "integer overflow"),
            ("1 / 0 == 1 / 0", "division by zero"),
        ],
    );
}

#[test]
fn numbers() {
    check(
        schemas(&[number(), number(), number()]),
        objs(&[json!(1.5), json!(1.5), json!(1)]),
        &[
            &vals_equal("self.val1", "self.val2", "1.5"),
            "type(self.val1) == double",
            // An integer in a `number` field is a double.
            "type(self.val3) == double",
            "self.val3 == 1.0",
        ],
        &[],
    );
}

#[test]
fn numeric_comparisons() {
    check(
        schemas(&[integer(), integer(), integer(), number(), number()]),
        objs(&[json!(5), json!(10), json!(15), json!(10.0), json!(10)]),
        &[
            "double(self.val1) < self.val4",
            "double(self.val2) == self.val4",
            "double(self.val3) > self.val4",
            "self.val1 < int(self.val4)",
            "self.val2 == int(self.val4)",
            "double(self.val2) == self.val5",
            "self.val3 > int(self.val5)",
            "double(5) < 10.0",
            "10 == int(10.0)",
        ],
        &[],
    );
}

#[test]
fn unicode_strings() {
    check(
        schemas(&[string(), string()]),
        objs(&[json!("Rook takes 👑"), json!("Rook takes 👑")]),
        &[
            &vals_equal("self.val1", "self.val2", "'Rook takes 👑'"),
            "self.val1.startsWith('Rook')",
            "!self.val1.startsWith('knight')",
            "self.val1.contains('takes')",
            "self.val1.endsWith('👑')",
            "self.val1.matches('^[^0-9]*$')",
            "!self.val1.matches('^[0-9]*$')",
            "type(self.val1) == string",
            "size(self.val1) == 12",
            "self.val1.charAt(3) == 'k'",
            "self.val1.indexOf('o') == 1",
            "self.val1.indexOf('o', 2) == 2",
            "self.val1.replace(' ', 'x') == 'Rookxtakesx👑'",
            "self.val1.replace(' ', 'x', 1) == 'Rookxtakes 👑'",
            "self.val1.split(' ') == ['Rook', 'takes', '👑']",
            "self.val1.split(' ', 2) == ['Rook', 'takes 👑']",
            "self.val1.substring(5) == 'takes 👑'",
            "self.val1.substring(0, 4) == 'Rook'",
            "self.val1.substring(4, 10).trim() == 'takes'",
            "self.val1.upperAscii() == 'ROOK TAKES 👑'",
            "self.val1.lowerAscii() == 'rook takes 👑'",
        ],
        &[],
    );
}

#[test]
fn bytes_booleans_and_escaped_strings() {
    check(
        schemas(&[
            format("byte"),
            format("byte"),
            boolean(),
            boolean(),
            string(),
        ]),
        objs(&[
            json!("QUI="),
            json!("QUI="),
            json!(true),
            json!(false),
            json!("l1\nl2"),
        ]),
        &[
            "self.val1 == self.val2",
            "self.val1 == b'AB'",
            "self.val1 == bytes('AB')",
            "self.val1 == b'\\x41\\x42'",
            "type(self.val1) == bytes",
            "size(self.val1) == 2",
            "self.val3 != self.val4",
            "type(self.val3) == bool",
            "self.val5 == '''l1\nl2'''",
            "self.val5 == 'l1\\nl2'",
        ],
        &[],
    );
}

#[test]
fn durations_dates_and_timestamps() {
    check(
        schemas(&[format("duration"), format("date"), format("date-time")]),
        objs(&[
            json!("1h2m3s4ms"),
            json!("1997-07-16"),
            json!("2011-08-18T19:03:37.010000000+01:00"),
        ]),
        &[
            "self.val1 == duration('1h2m3s4ms')",
            "self.val1 == duration('1h2m') + duration('3s4ms')",
            "self.val1.getHours() == 1",
            "self.val1.getMinutes() == 62",
            "self.val1.getSeconds() == 3723",
            "self.val1.getMilliseconds() == 3723004",
            "self.val2 == timestamp('1997-07-16T00:00:00.000Z')",
            "self.val2.getDate() == 16",
            "self.val2.getMonth() == 06",
            "self.val2.getFullYear() == 1997",
            "self.val3 == timestamp('2011-08-18T19:03:37.010+01:00')",
            "self.val3 == timestamp('2011-08-18T00:00:00.000+01:00') + duration('19h3m37s10ms')",
            "self.val3.getHours('UTC') == 18",
        ],
        &[],
    );
}

#[test]
fn enums_and_conversions() {
    check(
        schemas(&[string(), integer(), number(), number(), boolean(), string()]),
        objs(&[
            json!("Pending"),
            json!(10),
            json!(10.0),
            json!(10.49),
            json!(true),
            json!("10"),
        ]),
        &[
            "self.val1 == 'Pending'",
            "self.val1 in ['Pending', 'Available']",
            "int(self.val3) == self.val2",
            "int(self.val4) == self.val2",
            "int(self.val6) == self.val2",
            "double(self.val2) == self.val3",
            "string(self.val2) == self.val6",
            "string(self.val5) == 'true'",
        ],
        &[],
    );
}

#[test]
fn lists_and_maps() {
    check(
        schemas(&[
            list_of(integer()),
            list_of(integer()),
            map_of(string()),
            map_of(string()),
        ]),
        objs(&[
            json!([1, 2, 3]),
            json!([1, 2, 3]),
            json!({"k1": "a", "k2": "b"}),
            json!({"k2": "b", "k1": "a"}),
        ]),
        &[
            &vals_equal("self.val1", "self.val2", "[1, 2, 3]"),
            "1 in self.val1",
            "self.val2[0] in self.val1",
            "!(0 in self.val1)",
            "self.val1 + self.val2 == [1, 2, 3, 1, 2, 3]",
            "self.val1 + [4, 5] == [1, 2, 3, 4, 5]",
            "self.val3 == self.val4",
            "'k1' in self.val3",
            "!('k3' in self.val3)",
            "self.val3 == {'k1': 'a', 'k2': 'b'}",
        ],
        &[("self.val1[100] == 0", "index out of bounds: 100")],
    );
}

#[test]
fn object_access() {
    check(
        object(json!({
            "a": object(json!({"b": integer(), "c": integer(), "d": {"type": "integer", "nullable": true}})),
            "a1": object(json!({"b1": object(json!({"c1": integer()})), "d2": object(json!({"e2": integer()}))})),
        })),
        json!({"a": {"b": 1, "d": null}, "a1": {"b1": {"c1": 4}}, "a3": {}}),
        &[
            "has(self.a.b)",
            "!has(self.a.c)",
            "!has(self.a.d)",
            "has(self.a1.b1.c1)",
            "!(has(self.a1.d2) && has(self.a1.d2.e2))",
            "!has(self.a1.d2)",
        ],
        &[
            ("has(self.a.z)", "undefined field 'z'"),
            ("has(self.a1.d2.e2)", "no such key: d2"),
        ],
    );
}

#[test]
fn map_access() {
    check(
        object(json!({"val": map_of(integer())})),
        json!({"val": {"b": 1, "d": 2}}),
        &[
            "!('a' in self.val)",
            "'b' in self.val",
            "!has(self.val.a)",
            "has(self.val.b)",
            "self.val.all(k, self.val[k] > 0)",
            "self.val.exists(k, self.val[k] > 1)",
            "self.val.exists_one(k, self.val[k] == 2)",
            "!self.val.exists(k, self.val[k] > 2)",
            "size(self.val) == 2",
            "self.val.map(k, self.val[k]).exists(v, v == 1)",
            "size(self.val.filter(k, self.val[k] > 1)) == 1",
        ],
        &[("self.val['c'] == 1", "no such key: c")],
    );
}

#[test]
fn list_map_and_list_access() {
    let item = object(json!({"k": string(), "v": string(), "v2": string()}));
    check(
        object(json!({
            "listMap": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"], "items": item},
            "array": list_of(integer()),
        })),
        json!({
            "listMap": [{"k": "a1", "v": "b1"}, {"k": "a2", "v": "b2"}, {"k": "a3", "v": "b3", "v2": "z"}],
            "array": [1, 1, 2, 2, 3, 3, 4, 5],
        }),
        &[
            "has(self.listMap[0].v)",
            "self.listMap.all(m, m.k.startsWith('a'))",
            "self.listMap.all(m, !has(m.v2) || m.v2 == 'z')",
            "self.listMap.exists(m, m.k.endsWith('1'))",
            "self.listMap.exists_one(m, m.k == 'a3')",
            "!self.listMap.all(m, m.k.endsWith('1'))",
            "size(self.listMap.filter(m, m.k == 'a1')) == 1",
            "self.listMap.map(m, m.v).exists(v, v == 'b1')",
            "self.listMap.exists(m, has(m.v2) && m.v2 == 'z')",
            "self.listMap.filter(m, has(m.v2) && m.v2 == 'z').size() == 1",
            "2 in self.array",
            "self.array.all(e, e > 0)",
            "self.array.exists_one(e, e > 4)",
            "!self.array.exists_one(e, e == 2)",
            "size(self.array.filter(e, e%2 == 0)) == 3",
            "self.array.map(e, e * 20).filter(e, e > 50).exists(e, e == 60)",
        ],
        &[
            (
                "self.listMap.filter(m, m.v2 == 'z').size() == 1",
                "no such key: v2",
            ),
            ("self.listMap.map(m, m.v2).size() == 1", "no such key: v2"),
        ],
    );
}

#[test]
fn type_and_object_meta_at_resource_roots() {
    let schema = with_rules(
        object(json!({"spec": object(json!({"field1": string()}))})),
        &[
            "self.kind == 'Pod' && self.apiVersion == 'v1' && self.metadata.name == 'foo' && self.metadata.generateName == 'pickItForMe' && self.spec.field1 == 'a'",
        ],
    );
    let s = structural(schema);
    let v = Validator::new(&s, true).expect("rules");
    let obj = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "foo", "generateName": "pickItForMe", "namespace": "xyz"},
        "spec": {"field1": "a"},
    });
    assert!(v.validate(&Path::root(), &obj, None).errors.is_empty());
    // Only name and generateName of the metadata are declared.
    let s = structural(with_rules(
        object(json!({})),
        &["has(self.metadata.namespace)"],
    ));
    let errs: Vec<String> = Validator::new(&s, true)
        .expect("rules")
        .validate(&Path::root(), &obj, None)
        .errors
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(errs[0].contains("undefined field 'namespace'"), "{errs:?}");
}

#[test]
fn embedded_objects() {
    let embedded = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "foo", "generateName": "pickItForMe", "namespace": "xyz"},
        "spec": {"field1": "a"},
    });
    check(
        object(
            json!({"embedded": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}),
        ),
        json!({"embedded": embedded}),
        &[
            "self.embedded.kind == 'Pod'",
            "self.embedded.apiVersion == 'v1'",
            "self.embedded.metadata.name == 'foo'",
            "self.embedded.metadata.generateName == 'pickItForMe'",
            "has(self.embedded)",
        ],
        &[
            (
                "has(self.embedded.metadata.namespace)",
                "undefined field 'namespace'",
            ),
            ("has(self.embedded.spec)", "undefined field 'spec'"),
        ],
    );
}

#[test]
fn int_or_string() {
    let schema = object(json!({"something": {"x-kubernetes-int-or-string": true}}));
    let rules = [
        "self.something == 1 || self.something == '25%'",
        "self.something == '25%' || self.something == 1",
        "type(self.something) == int ? self.something == 1 : self.something == '25%'",
        "self.something != ['anything']",
    ];
    check(schema.clone(), json!({"something": "25%"}), &rules, &[]);
    check(schema.clone(), json!({"something": 1}), &rules, &[]);
    check(
        schema,
        json!({"something": "25%"}),
        &[
            "self.something == '25%'",
            "self.something != 1",
            "type(self.something) == string && self.something == '25%'",
        ],
        &[],
    );
    check(
        object(json!({"min": {"x-kubernetes-int-or-string": true}, "current": integer(), "available": integer()})),
        json!({"min": "50%", "current": 5, "available": 10}),
        &[
            r"type(self.min) == string && self.min.matches(r'(\d+(\.\d+)?%)')",
            "type(self.min) == int ? self.current <= self.min : double(self.current) / double(self.available) >= double(self.min.replace('%', '')) / 100.0",
        ],
        &[],
    );
}

#[test]
fn preserve_unknown_fields() {
    check(
        object(json!({
            "withUnknown": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "withUnknownList": list_of(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})),
            "anyvalList": list_of(json!({"x-kubernetes-preserve-unknown-fields": true})),
            "anyvalField1": {"x-kubernetes-preserve-unknown-fields": true},
            "known": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"known": integer()}},
        })),
        json!({
            "withUnknown": {"field1": "a", "field2": "b"},
            "withUnknownList": [{"field1": "a", "field2": "b"}, {"field1": "x", "field2": "y"}, {"field1": "x", "field2": "y"}, {}, {}],
            "anyvalList": ["a", 2],
            "anyvalField1": 1,
            "known": {"known": 1, "unknown": "a"},
        }),
        &[
            "has(self.withUnknown)",
            "self.withUnknownList.size() == 5",
            // Unknown fields count in equality.
            "self.withUnknownList[0] != self.withUnknownList[1]",
            "self.withUnknownList[1] == self.withUnknownList[2]",
            "self.withUnknownList[3] == self.withUnknownList[4]",
            "self.known.known == 1",
        ],
        &[
            ("has(self.withUnknown.field1)", "undefined field 'field1'"),
            ("has(self.anyvalList)", "undefined field 'anyvalList'"),
            ("has(self.anyvalField1)", "undefined field 'anyvalField1'"),
            ("has(self.known.unknown)", "undefined field 'unknown'"),
        ],
    );
}

#[test]
fn field_nullability() {
    check(
        object(json!({
            "unsetPlainStr": string(),
            "unsetNullableStr": {"type": "string", "nullable": true},
            "setPlainStr": string(),
            "setToNullNullableStr": {"type": "string", "nullable": true},
        })),
        json!({"setPlainStr": "v1", "setToNullNullableStr": null}),
        &[
            "!has(self.unsetPlainStr)",
            "!has(self.unsetNullableStr)",
            "has(self.setPlainStr) && self.setPlainStr == 'v1'",
            "!has(self.setToNullNullableStr)",
        ],
        &[
            (
                "self.unsetPlainStr == null",
                "no matching overload for '_==_' applied to '(string, null)",
            ),
            (
                "self.setPlainStr != null",
                "no matching overload for '_!=_' applied to '(string, null)",
            ),
        ],
    );
    check(
        object(
            json!({"m": map_of(json!({"type": "string", "nullable": true})), "l": list_of(json!({"type": "string", "nullable": true}))}),
        ),
        json!({"m": {"a": null, "b": "not-nil"}, "l": [null, "not-nil"]}),
        &[
            "self.m.size() == 2",
            "'a' in self.m",
            "type(self.m['a']) == null_type",
            "type(self.l[0]) == null_type",
        ],
        &[],
    );
}

#[test]
fn escaping() {
    let names = [
        ("true", "__true__"),
        ("in", "__in__"),
        ("namespace", "__namespace__"),
        ("int", "int"),
        ("self", "self"),
        ("all", "all"),
        ("_true", "_true"),
        ("dot.dot", "dot__dot__dot"),
        ("dash-dash", "dash__dash__dash"),
        ("slash/slash", "slash__slash__slash"),
        ("underscore_underscore", "underscore_underscore"),
        (
            "doubleunderscore__doubleunderscore",
            "doubleunderscore__underscores__doubleunderscore",
        ),
    ];
    let props: serde_json::Map<String, Value> = names
        .iter()
        .map(|(n, _)| (n.to_string(), integer()))
        .collect();
    let obj: serde_json::Map<String, Value> = names
        .iter()
        .enumerate()
        .map(|(i, (n, _))| (n.to_string(), json!(i)))
        .collect();
    let valid: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, (_, e))| format!("self.{e} == {i}"))
        .collect();
    let valid: Vec<&str> = valid.iter().map(String::as_str).collect();
    check(
        json!({"type": "object", "properties": props}),
        Value::Object(obj),
        &valid,
        &[
            ("self.true == 1", "Syntax error"),
            ("self == 201", "found no matching overload for '_==_'"),
            ("self.__illegal__ == 301", "undefined field '__illegal__'"),
        ],
    );
    check(
        object(json!({"m": map_of(integer())})),
        json!({"m": {"@": 1, "9": 2, "int": 3, "./-": 4, "👑": 5}}),
        &[
            "self.m['@'] == 1",
            "self.m['9'] == 2",
            "self.m['int'] == 3",
            "self.m['./-'] == 4",
            "self.m['👑'] == 5",
        ],
        &[],
    );
}

/// kube's TestValidationExpressions "messages", "reason" and "fieldPath" cases: the error
/// names the node (`<nil>` at the root) and prints the schema type as the value.
#[test]
fn failures_name_the_node_with_messages_reasons_and_field_paths() {
    let schema = json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "properties": {"replicas": integer(), "name": string(), "m": map_of(string())},
            "x-kubernetes-validations": [
                {"rule": "self.replicas < 10"},
                {"rule": "self.replicas < 5", "message": "too many replicas  "},
                {"rule": "self.replicas < 4", "messageExpression": "'replicas ' + string(self.replicas) + ' too many'"},
                {"rule": "self.replicas < 3", "reason": "FieldValueForbidden", "fieldPath": ".replicas", "message": "no"},
                {"rule": "self.replicas < 2", "reason": "FieldValueRequired", "fieldPath": ".m['a.b']", "message": "needed"},
                {"rule": "self.replicas < 1", "messageExpression": "'  '"},
            ],
        }},
        "x-kubernetes-validations": [{"rule": "self.spec.name != 'bad'", "message": "bad name"}],
    });
    let errs = errors_of(
        schema,
        &json!({"spec": {"replicas": 10, "name": "bad"}}),
        None,
    );
    assert_eq!(
        errs,
        vec![
            r#"<nil>: Invalid value: "object": bad name"#,
            r#"spec: Invalid value: "object": failed rule: self.replicas < 10"#,
            r#"spec: Invalid value: "object": too many replicas"#,
            r#"spec: Invalid value: "object": replicas 10 too many"#,
            "spec.replicas: Forbidden: no",
            "spec.m[a.b]: Required value: needed",
            // An empty messageExpression result falls back to the rule.
            r#"spec: Invalid value: "object": failed rule: self.replicas < 1"#,
        ]
    );
}

#[test]
fn rules_on_scalars_lists_and_map_values_run_per_element() {
    let schema = object(json!({
        "names": list_of(json!({"type": "string", "x-kubernetes-validations": [{"rule": "self.startsWith('s')"}]})),
        "limits": map_of(json!({"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0", "message": "must be positive"}]})),
    }));
    let errs = errors_of(
        schema,
        &json!({"names": ["sa", "b", "sc", "d"], "limits": {"cpu": -1, "mem": 2}}),
        None,
    );
    assert_eq!(
        errs,
        vec![
            r#"names[1]: Invalid value: "string": failed rule: self.startsWith('s')"#,
            r#"names[3]: Invalid value: "string": failed rule: self.startsWith('s')"#,
            r#"limits[cpu]: Invalid value: "integer": must be positive"#,
        ]
    );
}

#[test]
fn transition_rules_run_on_updates_only() {
    let schema = object(json!({"spec": {
        "type": "object",
        "properties": {"name": string(), "count": integer()},
        "x-kubernetes-validations": [
            {"rule": "self.name == oldSelf.name", "message": "name is immutable"},
            {"rule": "!has(oldSelf.count) || self.count >= oldSelf.count", "message": "count may not decrease"},
        ],
    }}));
    let old = json!({"spec": {"name": "a", "count": 2}});
    // Creates never run transition rules.
    assert!(errors_of(
        schema.clone(),
        &json!({"spec": {"name": "b", "count": 1}}),
        None
    )
    .is_empty());
    assert!(errors_of(
        schema.clone(),
        &json!({"spec": {"name": "a", "count": 3}}),
        Some(&old)
    )
    .is_empty());
    assert_eq!(
        errors_of(
            schema,
            &json!({"spec": {"name": "b", "count": 1}}),
            Some(&old)
        ),
        vec![
            r#"spec: Invalid value: "object": name is immutable"#,
            r#"spec: Invalid value: "object": count may not decrease"#,
        ]
    );
}

#[test]
fn optional_old_self_runs_on_creates_with_an_absent_old_self() {
    let schema = object(json!({"spec": {
        "type": "object",
        "properties": {"name": string()},
        "x-kubernetes-validations": [
            {"rule": "oldSelf.hasValue() ? self.name == oldSelf.value().name : self.name.startsWith('n')", "optionalOldSelf": true, "message": "bad"},
        ],
    }}));
    assert!(errors_of(schema.clone(), &json!({"spec": {"name": "new"}}), None).is_empty());
    assert_eq!(
        errors_of(schema.clone(), &json!({"spec": {"name": "old"}}), None),
        vec![r#"spec: Invalid value: "object": bad"#]
    );
    assert_eq!(
        errors_of(
            schema,
            &json!({"spec": {"name": "n2"}}),
            Some(&json!({"spec": {"name": "n1"}}))
        ),
        vec![r#"spec: Invalid value: "object": bad"#]
    );
}

#[test]
fn transition_rules_in_map_lists_correlate_items_by_key() {
    let schema = object(json!({"items": {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["k"],
        "items": {
            "type": "object",
            "properties": {"k": string(), "v": string()},
            "x-kubernetes-validations": [{"rule": "self.v == oldSelf.v", "message": "v is immutable"}],
        },
    }}));
    let old = json!({"items": [{"k": "a", "v": "1"}, {"k": "b", "v": "2"}]});
    // Reordered and added items: only `b` changed its value.
    let errs = errors_of(
        schema,
        &json!({"items": [{"k": "c", "v": "9"}, {"k": "b", "v": "3"}, {"k": "a", "v": "1"}]}),
        Some(&old),
    );
    assert_eq!(
        errs,
        vec![r#"items[1]: Invalid value: "object": v is immutable"#]
    );
}

#[test]
fn unchanged_values_are_ratcheted_on_update() {
    let schema = object(json!({
        "a": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 3"}]},
        "b": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 3"}]},
    }));
    let old = json!({"a": "long", "b": "ok"});
    let s = structural(schema);
    let v = Validator::new(&s, false).expect("rules");
    let out = v.validate(
        &Path::root(),
        &json!({"a": "long", "b": "longer"}),
        Some(&old),
    );
    let errs: Vec<String> = out.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        errs,
        vec![r#"b: Invalid value: "string": failed rule: self.size() < 3"#]
    );
    assert_eq!(
        out.warnings,
        vec![r#"a: Invalid value: "string": failed rule: self.size() < 3"#]
    );

    // A rule at the root ratchets when the object is unchanged, not otherwise.
    let s = structural(with_rules(object(json!({"n": integer()})), &["self.n < 3"]));
    let v = Validator::new(&s, false).expect("rules");
    let old = json!({"n": 5});
    let same = v.validate(&Path::root(), &old, Some(&old));
    assert!(same.errors.is_empty());
    assert_eq!(same.warnings.len(), 1);
    let changed = v.validate(&Path::root(), &json!({"n": 6}), Some(&old));
    assert_eq!(changed.errors.len(), 1);
}

#[test]
fn runtime_errors_name_the_rule() {
    check(
        object(json!({"m": map_of(integer())})),
        json!({"m": {"a": 1}}),
        &[],
        &[(
            "self.m['x'] == 1",
            "<nil>: Invalid value: \"object\": no such key: x evaluating rule: self.m['x'] == 1",
        )],
    );
}

// ---- compilation (compilation_test.go) ----

fn compile_errors(schema: Value) -> Vec<String> {
    let s = structural(schema);
    validate_schema_rules(&s, &Path::new("spec.validation.openAPIV3Schema"))
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn rules_that_do_not_compile_are_invalid() {
    let errs = compile_errors(json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "properties": {"a": integer()},
            "x-kubernetes-validations": [
                {"rule": "self.a == "},
                {"rule": "self.b == 1"},
                {"rule": "42"},
                {"rule": "self.a > 0", "messageExpression": "42"},
                {"rule": "self.a > 0", "messageExpression": "\"abc"},
                {"rule": "self.a > 0", "optionalOldSelf": true},
                {"rule": "self.a > 0", "fieldPath": ".b"},
            ],
        }},
    }));
    let at = |i: usize, f: &str| {
        format!(
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[{i}].{f}"
        )
    };
    assert_eq!(errs.len(), 7, "{errs:#?}");
    assert!(errs[0].starts_with(&format!(
        "{}: Invalid value: apiextensions.ValidationRule{{Rule:\"self.a == \", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: compilation failed: ERROR: <input>:1:",
        at(0, "rule")
    )), "{}", errs[0]);
    assert!(
        errs[1].starts_with(&at(1, "rule"))
            && errs[1].contains("compilation failed: ERROR: <input>:1:5: undefined field 'b'"),
        "{}",
        errs[1]
    );
    assert!(
        errs[2].starts_with(&at(2, "rule"))
            && errs[2].ends_with("cel expression must evaluate to a bool"),
        "{}",
        errs[2]
    );
    assert!(
        errs[3].starts_with(&at(3, "messageExpression"))
            && errs[3].ends_with("messageExpression must evaluate to a string"),
        "{}",
        errs[3]
    );
    assert!(
        errs[4].starts_with(&at(4, "messageExpression"))
            && errs[4].contains("messageExpression compilation failed: ERROR: <input>:1:"),
        "{}",
        errs[4]
    );
    assert_eq!(
        errs[5],
        format!(
            "{}: Invalid value: true: may not be set if oldSelf is not used in rule",
            at(5, "optionalOldSelf")
        )
    );
    assert_eq!(
        errs[6],
        format!(
            "{}: Invalid value: \".b\": fieldPath must be a valid path",
            at(6, "fieldPath")
        )
    );
}

#[test]
fn transition_rules_need_correlatable_nodes() {
    let errs = compile_errors(json!({
        "type": "object",
        "properties": {
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}},
            "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"], "items": {
                "type": "object", "properties": {"k": string()}, "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}},
        },
    }));
    assert_eq!(
        errs,
        vec![
            r#"spec.validation.openAPIV3Schema.properties[set].items.x-kubernetes-validations[0].rule: Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[set].items"#
        ]
    );
}

#[test]
fn valid_rules_compile() {
    assert!(compile_errors(json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "properties": {"a": integer(), "s": string(), "l": list_of(string())},
            "x-kubernetes-validations": [
                {"rule": "self.a > 0 && self.s.startsWith('x') && self.l.all(e, e != '')"},
                {"rule": "self.s == oldSelf.s", "message": "immutable"},
                {"rule": "self.a > 0", "messageExpression": "'a is ' + string(self.a)"},
                {"rule": "self.l.isSorted() && url('https://x').getHost() == 'x'"},
            ],
        }},
    }))
    .is_empty());
}

// ---- kube's libraries (apiserver/pkg/cel/library/*_test.go) ----

/// Evaluates a closed expression in the rules' environment.
fn eval(expr: &str) -> Result<cel::Value, String> {
    let program = library::env().compile(expr).map_err(|e| e.to_string())?;
    let ctx = cel::Context::with_env(library::env());
    program
        .execute(&ctx)
        .map_err(|e| library::execution_error_message(&e))
}

/// Every expression evaluates to true.
fn all_true(exprs: &[&str]) {
    for e in exprs {
        assert_eq!(eval(e), Ok(cel::Value::Bool(true)), "{e}");
    }
}

/// Every expression fails at run time with an error containing the message.
fn all_fail(cases: &[(&str, &str)]) {
    for (e, want) in cases {
        match eval(e) {
            Err(got) => assert!(got.contains(want), "{e}: {got:?} lacks {want:?}"),
            Ok(v) => panic!("{e} evaluated to {v:?}"),
        }
    }
}

#[test]
fn lists_library() {
    all_true(&[
        "[1, 2, 3].isSorted()",
        "['a', 'b', 'b', 'c'].isSorted()",
        "![2.0, 1.0].isSorted()",
        "[1].isSorted()",
        "[].isSorted()",
        "[1, 3].sum() == 4",
        "[1.0, 3.0].sum() == 4.0",
        "[duration('1m'), duration('1s')].sum() == duration('1m1s')",
        "[].sum() == 0",
        "[1, 3].min() == 1",
        "[1, 3].max() == 3",
        "[1].min() == 1",
        "['b', 'a', 'c'].max() == 'c'",
        "[1, 2, 2, 3].indexOf(2) == 1",
        "['a', 'b', 'b', 'c'].lastIndexOf('b') == 2",
        "[1.0].indexOf(1.1) == -1",
        "[].indexOf('string') == -1",
    ]);
    all_fail(&[
        ("[].min()", "min called on empty list"),
        ("[].max()", "max called on empty list"),
    ]);
}

#[test]
fn regex_library() {
    all_true(&[
        "'abc 123'.find('[0-9]+') == '123'",
        "'abc'.find('[0-9]+') == ''",
        "'123 abc 456'.findAll('[0-9]+') == ['123', '456']",
        "'123 abc 456'.findAll('[0-9]+', 1) == ['123']",
        "'123 abc 456'.findAll('xyz') == []",
    ]);
    all_fail(&[("'abc'.find(')')", "Illegal regex")]);
}

#[test]
fn url_library() {
    all_true(&[
        "url('https://example.com/path?k1=a&k2=b&k2=c').getScheme() == 'https'",
        "url('https://example.com:80/').getHost() == 'example.com:80'",
        "url('https://example.com:80/').getHostname() == 'example.com'",
        "url('https://example.com:80/').getPort() == '80'",
        "url('https://example.com/').getPort() == ''",
        "url('https://[::1]:80/').getHost() == '[::1]:80'",
        "url('https://[::1]:80/').getHostname() == '::1'",
        "url('https://example.com/path/to').getEscapedPath() == '/path/to'",
        "url('https://example.com/path?k1=a&k2=b&k2=c').getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
        "url('/absolute-path').getScheme() == ''",
        "isURL('https://example.com')",
        "isURL('/absolute-path')",
        "!isURL('relative-path')",
        "!isURL('')",
        "!isURL('https://example.com:port/')",
    ]);
    all_fail(&[(
        "url('relative')",
        "URL parse error during conversion from string",
    )]);
}

#[test]
fn quantity_library() {
    all_true(&[
        "isQuantity('20')",
        "isQuantity('20M')",
        "isQuantity('20Mi')",
        "!isQuantity('20Mo')",
        "!isQuantity('10Mm')",
        "quantity('200M') == quantity('200M')",
        "quantity('200M') == quantity('0.2G') && quantity('0.2G') == quantity('200M')",
        "quantity('2M') == quantity('0.002G') && quantity('2000k') == quantity('2M')",
        "quantity('200M') != quantity('0.3G')",
        "quantity('50M').isLessThan(quantity('50Mi'))",
        "!quantity('100M').isLessThan(quantity('50M'))",
        "quantity('50Mi').isGreaterThan(quantity('50M'))",
        "!quantity('50M').isGreaterThan(quantity('100M'))",
        "quantity('200M').compareTo(quantity('0.2G')) == 0",
        "quantity('50M').compareTo(quantity('50Mi')) == -1",
        "quantity('50Mi').compareTo(quantity('50M')) == 1",
        "quantity('50k').add(quantity('20')) == quantity('50.02k')",
        "!quantity('50k').add(20).isLessThan(quantity('50020'))",
        "quantity('50k').sub(quantity('20')) == quantity('49.98k')",
        "quantity('50k').sub(20) == quantity('49980')",
        "quantity('50k').add(20).sub(quantity('100k')).asInteger() == -49980",
        "quantity('50k').add(20).sub(quantity('100k')).sub(-50000).asInteger() == 20",
        "quantity('50k').asInteger() == 50000",
        "quantity('50').isInteger()",
        "!quantity('1.5').isInteger()",
        "quantity('50.703k').asApproximateFloat() == 50703.0",
        "quantity('-1').sign() == -1",
    ]);
    all_fail(&[
        (
            "quantity('10Mo')",
            "quantities must match the regular expression",
        ),
        ("quantity('10Mm')", "unable to parse quantity's suffix"),
        (
            "quantity('1.5').asInteger()",
            "cannot convert value to integer",
        ),
    ]);
}

#[test]
fn ip_library() {
    all_true(&[
        "isIP('192.168.0.1')",
        "!isIP('192.168.0.1.0')",
        "ip.isCanonical('127.0.0.1')",
        "ip('192.168.0.1').family() == 4",
        "ip('0.0.0.0').isUnspecified()",
        "!ip('127.0.0.1').isUnspecified()",
        "ip('127.0.0.1').isLoopback()",
        "!ip('1.2.3.4').isLoopback()",
        "ip('224.0.0.1').isLinkLocalMulticast()",
        "!ip('224.0.1.1').isLinkLocalMulticast()",
        "ip('169.254.169.254').isLinkLocalUnicast()",
        "!ip('192.168.0.1').isLinkLocalUnicast()",
        "ip('192.168.0.1').isGlobalUnicast()",
        "!ip('255.255.255.255').isGlobalUnicast()",
        "isIP('2001:db8::68')",
        "!isIP('2001:db8:::68')",
        "ip.isCanonical('2001:db8::68')",
        "!ip.isCanonical('2001:DB8::68')",
        "ip('2001:db8::68').family() == 6",
        "ip('::').isUnspecified()",
        "ip('::1').isLoopback()",
        "ip('ff02::1').isLinkLocalMulticast()",
        "!ip('fd00::1').isLinkLocalMulticast()",
        "ip('fe80::1').isLinkLocalUnicast()",
        "!ip('fd80::1').isLinkLocalUnicast()",
        "ip('2001:db8::abcd').isGlobalUnicast()",
        "!ip('ff00::1').isGlobalUnicast()",
        "string(ip('192.168.0.1')) == '192.168.0.1'",
        "ip('192.168.0.1') == ip('192.168.0.1')",
        "!isIP('::ffff:1.2.3.4')",
        "!isIP('fe80::1%eth0')",
    ]);
    all_fail(&[
        (
            "ip('192.168.0.1.0')",
            "IP Address \"192.168.0.1.0\" parse error during conversion from string",
        ),
        (
            "ip('::ffff:1.2.3.4')",
            "IPv4-mapped IPv6 address is not allowed",
        ),
        (
            "ip('fe80::1%eth0')",
            "IP address with zone value is not allowed",
        ),
    ]);
}

#[test]
fn cidr_library() {
    all_true(&[
        "isCIDR('192.168.0.0/24')",
        "!isCIDR('192.168.0.0/33')",
        "!isCIDR('192.168.0.0')",
        "cidr('192.168.0.0/24').containsIP(ip('192.168.0.1'))",
        "!cidr('192.168.0.0/24').containsIP(ip('192.168.1.1'))",
        "cidr('192.168.0.0/24').containsIP('192.168.0.1')",
        "cidr('192.168.0.0/24').containsCIDR(cidr('192.168.0.0/25'))",
        "!cidr('192.168.0.0/24').containsCIDR('192.168.0.0/23')",
        "cidr('192.168.0.1/24').ip() == ip('192.168.0.1')",
        "cidr('192.168.0.1/24').masked() == cidr('192.168.0.0/24')",
        "cidr('192.168.0.0/24').prefixLength() == 24",
        "cidr('2001:db8::/32').containsIP(ip('2001:db8::1'))",
        "!cidr('2001:db8::/32').containsIP(ip('192.168.0.1'))",
        "string(cidr('192.168.0.0/24')) == '192.168.0.0/24'",
    ]);
}

#[test]
fn format_library() {
    all_true(&[
        "!format.named('dns1123Label').value().validate('my-name').hasValue()",
        "format.named('dns1123Label').value().validate('My_Name').hasValue()",
        "!format.named('dns1123Subdomain').value().validate('a.b.c').hasValue()",
        "!format.named('labelValue').value().validate('v1.2').hasValue()",
        "!format.named('uuid').value().validate('123e4567-e89b-12d3-a456-426614174000').hasValue()",
        "format.named('uuid').value().validate('nope').hasValue()",
        "!format.named('unknown').hasValue()",
        "!format.dns1123Label().validate('my-name').hasValue()",
        "format.dns1035Label().validate('1abc').hasValue()",
        "!format.qualifiedName().validate('example.com/name').hasValue()",
    ]);
}

#[test]
fn sets_library() {
    all_true(&[
        "sets.contains([], [])",
        "sets.contains([1, 2, 3], [2, 3])",
        "!sets.contains([1, 2], [2, 3])",
        "sets.contains([1, 2.0, 3u], [1.0, 2u, 3])",
        "sets.equivalent([1, 2, 3], [3, 2, 1, 1])",
        "!sets.equivalent([1, 2], [1, 2, 3])",
        "sets.intersects([1, 2], [2, 3])",
        "!sets.intersects([1], [2])",
        "!sets.intersects([], [])",
    ]);
}

// ---- costs ----

#[test]
fn a_rule_whose_cost_exceeds_the_per_call_limit_stops_validation() {
    let schema = object(json!({"l": list_of(integer()), "n": integer()}));
    let rules = [
        "self.l.all(x, self.l.all(y, x == y || x != y))",
        "self.n > 100",
    ];
    let mut l: Vec<Value> = (0..300).map(|i| json!(i)).collect();
    let errs = errors_of(
        with_rules(schema.clone(), &rules),
        &json!({"l": l, "n": 1}),
        None,
    );
    assert_eq!(
        errs,
        vec!["<nil>: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.l.all(x, self.l.all(y, x == y || x != y))"]
    );
    // Shorter lists are evaluated.
    l.truncate(20);
    let errs = errors_of(with_rules(schema, &rules), &json!({"l": l, "n": 1}), None);
    assert_eq!(
        errs,
        vec!["<nil>: Invalid value: \"object\": failed rule: self.n > 100"]
    );
}

#[test]
fn costs_grow_with_comprehension_depth() {
    let shape = |src: &str| {
        let s = structural(with_rules(object(json!({"l": list_of(integer())})), &[src]));
        compile_rules(&s.extensions.x_validations, &decl_type(&s, false))[0].shape
    };
    let flat = shape("self.l.size() > 1");
    assert_eq!(flat.depth, 0);
    assert_eq!(flat.cost(1000), flat.nodes);
    let one = shape("self.l.all(x, x > 0)");
    assert_eq!(one.depth, 1);
    assert_eq!(one.cost(1000), one.nodes * 1000);
    let two = shape("self.l.all(x, self.l.exists(y, y == x))");
    assert_eq!(two.depth, 2);
    assert_eq!(two.cost(1000), two.nodes * 1_000_000);
    assert_eq!(two.cost(u64::MAX), u64::MAX);
}

/// Rules as CRDs in the wild write them compile and hold on a matching object: the checker must
/// not refuse what kube accepts.
#[test]
fn common_rules_compile_and_hold() {
    let schema = json!({
        "type": "object",
        "properties": {
            "apiVersion": string(), "kind": string(), "metadata": {"type": "object"},
            "spec": object(json!({
                "replicas": integer(), "minReplicas": integer(), "n": integer(), "ratio": number(),
                "name": string(), "s": string(), "csv": string(), "enabled": boolean(),
                "l": list_of(integer()), "names": list_of(string()),
                "items": list_of(object(json!({"name": string(), "port": integer()}))),
                "m": map_of(string()),
                "obj": object(json!({"a": object(json!({"b": string()}))})),
                "opt": string(),
                "q": {"x-kubernetes-int-or-string": true},
                "u": string(), "ip": string(), "cidr": string(),
                "b": format("byte"), "ts": format("date-time"), "dur": format("duration"),
                "timeout": string(),
            })),
        },
    });
    let obj = json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "abc", "namespace": "ns"},
        "spec": {
            "replicas": 3, "minReplicas": 1, "n": 4, "ratio": 1.5,
            "name": "abc", "s": "a-z", "csv": "a,b", "enabled": true,
            "l": [1, 2, 3], "names": ["a", "b"],
            "items": [{"name": "a", "port": 80}, {"name": "b", "port": 443}],
            "m": {"k": "v"},
            "obj": {"a": {"b": "c"}},
            "q": "1Gi",
            "u": "https://example.com/x", "ip": "10.0.0.1", "cidr": "10.0.0.0/8",
            "b": "QUI=", "ts": "2024-01-01T00:00:00Z", "dur": "30m",
            "timeout": "5s",
        },
    });
    let rules = [
        "self.metadata.name.startsWith('a') && self.kind == 'Widget'",
        "self.spec.minReplicas <= self.spec.replicas",
        "has(self.spec.n) ? self.spec.n > 0 : true",
        "!has(self.spec.opt) || self.spec.opt.size() > 0",
        "self.spec.?opt.orValue('') == ''",
        "self.spec.s.matches('^[a-z-]+$')",
        "duration(self.spec.timeout) > duration('1s')",
        "self.spec.l.exists_one(x, x == 2)",
        "type(self.spec.name) == string",
        "self.spec.name.size() <= 10 && size(self.spec.l) == 3 && self.spec.m.size() == 1",
        "int(self.spec.ratio) == 1 && string(self.spec.n) == '4'",
        "self.spec.name.lowerAscii() == self.spec.name",
        "self.spec.items.map(i, i.name).isSorted()",
        "self.spec.name in ['abc', 'def']",
        "size(self.spec.l) == size(self.spec.l.filter(x, x > 0))",
        "self.spec.csv.split(',').all(p, p != '')",
        "quantity(self.spec.q).isLessThan(quantity('2Gi'))",
        "url(self.spec.u).getScheme() == 'https'",
        "isIP(self.spec.ip) && cidr(self.spec.cidr).containsIP(self.spec.ip)",
        "self.spec.m.exists(k, self.spec.m[k] == 'v') && 'k' in self.spec.m",
        "self.spec.l[0] == 1",
        "self.spec.enabled == true && self.spec.enabled",
        "self.spec.n % 2 == 0 && double(self.spec.n) / 2.0 > 1.0",
        "self.spec.obj.a.b == 'c'",
        "self.spec.s.startsWith('a') && self.spec.s.endsWith('z') && self.spec.s.contains('-')",
        "self.spec.names.all(x, x.matches('[a-z]+'))",
        "size(self.spec.b) == 2",
        "self.spec.ts > timestamp('2020-01-01T00:00:00Z')",
        "self.spec.dur < duration('1h')",
        "[1, 2, 3, 4].exists(x, x == self.spec.n)",
        "self.spec.items.all(i, i.port > 0 && i.port < 65536)",
        "self.spec.items.exists(i, i.name == 'a') ? self.spec.replicas > 0 : false",
        "!(self.spec.name == '') && self.spec.replicas >= 0",
    ];
    let compiled = structural(with_rules(schema, &rules));
    let errs: Vec<String> = validate_schema_rules(&compiled, &Path::new("openAPIV3Schema"))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(errs.is_empty(), "{errs:#?}");
    let v = Validator::new(&compiled, true).expect("rules");
    let errs: Vec<String> = v
        .validate(&Path::root(), &obj, None)
        .errors
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(errs.is_empty(), "{errs:#?}");
}

#[test]
fn semver_library() {
    all_true(&[
        "isSemver('1.2.3')",
        "isSemver('1.2.3-alpha.1+build.5')",
        "!isSemver('v1.2.3')",
        "!isSemver('1.2')",
        "!isSemver('01.2.3')",
        "isSemver('v1.2', true)",
        "isSemver('01.02.003', true)",
        "!isSemver('1.2-beta', true)",
        "semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3",
        "semver('v01.2', true) == semver('1.2.0')",
        "semver('1.2.3').compareTo(semver('1.2.3')) == 0",
        "semver('1.2.3').compareTo(semver('2.0.0')) == -1",
        "semver('1.2.3').compareTo(semver('0.1.2')) == 1",
        "semver('1.2.3').isGreaterThan(semver('1.2.3-rc.1'))",
        "semver('1.0.0-alpha').isLessThan(semver('1.0.0-alpha.1'))",
        "semver('1.0.0-alpha.1').isLessThan(semver('1.0.0-alpha.beta'))",
        "semver('1.0.0-beta.2').isLessThan(semver('1.0.0-beta.11'))",
        "semver('1.0.0+a').compareTo(semver('1.0.0+b')) == 0",
    ]);
    all_fail(&[
        ("semver('1.2')", "No Major.Minor.Patch elements found"),
        (
            "semver('1.02.3')",
            "Minor number must not contain leading zeroes \"02\"",
        ),
        (
            "semver('1.2.x')",
            "Invalid character(s) found in patch number \"x\"",
        ),
    ]);
}
