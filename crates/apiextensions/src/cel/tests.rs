//! Ported from kube's `schema/cel/validation_test.go`, `compilation_test.go` and the
//! `apiserver/pkg/cel/library/*_test.go` cases this library implements.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use serde_json::{json, Value};

use super::*;
use crate::field::Path;
use crate::structural::Structural;

fn structural(schema: Value) -> Structural {
    let props: JSONSchemaProps = serde_json::from_value(schema).expect("schema parses");
    Structural::from_props(&props).expect("structural")
}

/// The errors of `obj` against a schema whose root has `rules`, as `field: message` lines.
fn errors_of(schema: Value, obj: Value, old: Option<Value>) -> Vec<String> {
    let s = structural(schema);
    let v = Validator::new(&s, false).expect("the schema has rules");
    v.validate(&Path::root(), &obj, old.as_ref())
        .errors
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// A schema of `type_` whose root holds `rules`.
fn with_rules(mut schema: Value, rules: &[&str]) -> Value {
    schema["x-kubernetes-validations"] = rules.iter().map(|r| json!({"rule": r})).collect();
    schema
}

/// Asserts every rule passes on `obj`.
fn passes(schema: Value, obj: Value, rules: &[&str]) {
    for rule in rules {
        let errs = errors_of(with_rules(schema.clone(), &[rule]), obj.clone(), None);
        assert!(errs.is_empty(), "{rule}: {errs:?}");
    }
}

/// Asserts the rule fails with `expected` (a substring of the one error).
fn fails(schema: Value, obj: Value, rule: &str, expected: &str) {
    let errs = errors_of(with_rules(schema, &[rule]), obj, None);
    assert_eq!(errs.len(), 1, "{rule}: {errs:?}");
    assert!(errs[0].contains(expected), "{rule}: {errs:?} lacks {expected:?}");
}

#[test]
fn smoke() {
    passes(json!({"type": "object", "properties": {"a": {"type": "integer"}}}), json!({"a": 1}), &["self.a == 1", "has(self.a)", "self.a + 1 == 2"]);
    fails(json!({"type": "object", "properties": {"a": {"type": "integer"}}}), json!({"a": 2}), "self.a == 1", "<nil>: Invalid value: \"object\": failed rule: self.a == 1");
}
