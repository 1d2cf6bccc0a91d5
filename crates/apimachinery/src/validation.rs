//! Strict field validation (`fieldValidation=Strict|Warn`): unknown and duplicate JSON fields.
//!
//! kube decodes request bodies with `sigs.k8s.io/json`'s strict mode and reports every field the
//! Go type does not have and every key that appears twice in one object
//! (`staging/src/k8s.io/apimachinery/pkg/runtime/serializer/json`). Here the raw JSON text is
//! walked with a streaming visitor — a parsed `serde_json::Value` would already have dropped
//! duplicates — against the kind's OpenAPI schema from [`crate::openapi::definitions`].

use std::borrow::Cow;
use std::cell::RefCell;
use std::fmt;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::openapi::definitions;

/// One strict-decoding problem, with the field's path (`spec.template.spec.containers[0].imagee`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldProblem {
    /// A field the kind's type does not have.
    Unknown(String),
    /// A key that appears more than once in the same JSON object.
    Duplicate(String),
}

impl FieldProblem {
    /// The field's path.
    pub fn path(&self) -> &str {
        match self {
            FieldProblem::Unknown(p) | FieldProblem::Duplicate(p) => p,
        }
    }
}

impl fmt::Display for FieldProblem {
    /// Formats like kube: `unknown field "spec.foo"` / `duplicate field "spec.replicas"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldProblem::Unknown(p) => write!(f, "unknown field {p:?}"),
            FieldProblem::Duplicate(p) => write!(f, "duplicate field {p:?}"),
        }
    }
}

/// kube's message for a request rejected by strict validation:
/// `strict decoding error: unknown field "spec.foo", duplicate field "spec.replicas"`.
pub fn strict_decoding_message(problems: &[FieldProblem]) -> String {
    let list: Vec<String> = problems.iter().map(ToString::to_string).collect();
    format!("strict decoding error: {}", list.join(", "))
}

/// Checks the JSON `body` of an `api_version`/`kind` object for unknown and duplicate fields.
///
/// Returns the problems in document order (empty when the body is clean, and for kinds without a
/// schema, which cannot be checked). Known fields with `null` values are fine. The error is the
/// JSON syntax error of a body that does not parse.
pub fn check_fields(
    api_version: &str,
    kind: &str,
    body: &[u8],
) -> Result<Vec<FieldProblem>, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let problems = walk(api_version, kind, &mut de)?;
    de.end()?;
    Ok(problems)
}

/// [`check_fields`] of an object already parsed (the object a patch made): the same unknown
/// fields in the same order as a check of its serialized form, without serializing it. A parsed
/// value has no duplicate keys.
pub fn check_value_fields(
    api_version: &str,
    kind: &str,
    value: &Value,
) -> Result<Vec<FieldProblem>, serde_json::Error> {
    walk(api_version, kind, value)
}

/// The problems of the document `de` reads, checked against the `api_version`/`kind` schema.
fn walk<'de, D: serde::Deserializer<'de>>(
    api_version: &str,
    kind: &str,
    de: D,
) -> Result<Vec<FieldProblem>, D::Error> {
    let schema = definitions::root_definition(api_version, kind)
        .and_then(|name| definitions::definitions().get(name));
    let problems = RefCell::new(Vec::new());
    Walker {
        schema,
        at: None,
        problems: &problems,
    }
    .deserialize(de)?;
    Ok(problems.into_inner())
}

/// One step from the document's root: a key of an object or an index of an array. The path of
/// a field is only written out when a problem is found there.
struct Step<'p> {
    parent: Option<&'p Step<'p>>,
    at: At<'p>,
}

enum At<'p> {
    Key(&'p str),
    Index(usize),
}

impl Step<'_> {
    /// kube's rendering: keys joined by dots, indices in brackets (`spec.containers[0].image`).
    fn render(&self) -> String {
        let mut steps = vec![self];
        while let Some(parent) = steps[steps.len() - 1].parent {
            steps.push(parent);
        }
        let mut path = String::new();
        for step in steps.iter().rev() {
            match step.at {
                At::Key(key) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                }
                At::Index(i) => {
                    use std::fmt::Write as _;
                    let _ = write!(path, "[{i}]");
                }
            }
        }
        path
    }
}

/// A position in the document: the schema describing the value there (`None`: anything goes).
struct Walker<'a, 'p> {
    schema: Option<&'static Value>,
    at: Option<&'p Step<'p>>,
    problems: &'a RefCell<Vec<FieldProblem>>,
}

/// How an object's keys are checked.
enum Fields {
    /// A struct: only these properties exist.
    Struct(&'static serde_json::Map<String, Value>),
    /// A map: every key is allowed, values follow the schema.
    Map(Option<&'static Value>),
}

fn fields_of(schema: Option<&'static Value>) -> Fields {
    let Some(node) = schema.and_then(definitions::resolve) else {
        return Fields::Map(None);
    };
    match (node.get("properties"), node.get("additionalProperties")) {
        (_, Some(add)) if add.is_object() => Fields::Map(Some(add)),
        (_, Some(Value::Bool(true))) => Fields::Map(None),
        (Some(Value::Object(props)), _)
            if node.get("x-kubernetes-preserve-unknown-fields") != Some(&Value::Bool(true)) =>
        {
            Fields::Struct(props)
        }
        // An object without properties (RawExtension) holds anything.
        _ => Fields::Map(None),
    }
}

/// An object's key, borrowed from the body unless it has escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

impl<'de> DeserializeSeed<'de> for Walker<'_, '_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walker<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let items = self
            .schema
            .and_then(definitions::resolve)
            .and_then(|n| n.get("items"));
        let mut i = 0usize;
        loop {
            let step = Step {
                parent: self.at,
                at: At::Index(i),
            };
            let walker = Walker {
                schema: items,
                at: Some(&step),
                problems: self.problems,
            };
            if seq.next_element_seed(walker)?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let fields = fields_of(self.schema);
        let mut seen = Seen::default();
        while let Some(Key(key)) = map.next_key::<Key<'de>>()? {
            {
                let step = Step {
                    parent: self.at,
                    at: At::Key(&key),
                };
                if seen.contains(&key) {
                    self.problems
                        .borrow_mut()
                        .push(FieldProblem::Duplicate(step.render()));
                }
                let child = match &fields {
                    Fields::Map(values) => Some(*values),
                    Fields::Struct(props) => props.get(key.as_ref()).map(Some),
                };
                match child {
                    Some(schema) => map.next_value_seed(Walker {
                        schema,
                        at: Some(&step),
                        problems: self.problems,
                    })?,
                    None => {
                        // Like Go's decoder, the value of an unknown field is skipped unchecked.
                        self.problems
                            .borrow_mut()
                            .push(FieldProblem::Unknown(step.render()));
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            seen.insert(key);
        }
        Ok(())
    }
}

/// The keys of one object seen so far: a list while it is short (most objects have few keys,
/// and comparing them is cheaper than hashing), a set beyond.
#[derive(Default)]
struct Seen<'de> {
    few: Vec<Cow<'de, str>>,
    many: std::collections::HashSet<Cow<'de, str>>,
}

impl<'de> Seen<'de> {
    const FEW: usize = 16;

    fn contains(&self, key: &str) -> bool {
        self.few.iter().any(|k| k == key) || self.many.contains(key)
    }

    fn insert(&mut self, key: Cow<'de, str>) {
        if self.few.len() < Self::FEW {
            self.few.push(key);
        } else {
            self.many.insert(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(api_version: &str, kind: &str, body: &str) -> Vec<String> {
        check_fields(api_version, kind, body.as_bytes())
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn clean_deployment_has_no_problems() {
        let body = r#"{"apiVersion":"apps/v1","kind":"Deployment",
            "metadata":{"name":"web","labels":{"app":"web"},"annotations":null},
            "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},
              "strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"25%"}},
              "template":{"metadata":{"labels":{"app":"web"}},
                "spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80}],
                  "resources":{"limits":{"cpu":"1"}}}]}}},
            "status":{"replicas":0}}"#;
        assert!(check("apps/v1", "Deployment", body).is_empty());
    }

    #[test]
    fn unknown_fields_are_reported_with_their_path() {
        let body = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","nmae":"x"},
            "spec":{"foo":1,"template":{"spec":{"containers":[{"name":"c","imagee":"nginx"}]}}}}"#;
        assert_eq!(
            check("apps/v1", "Deployment", body),
            [
                r#"unknown field "metadata.nmae""#,
                r#"unknown field "spec.foo""#,
                r#"unknown field "spec.template.spec.containers[0].imagee""#,
            ]
        );
    }

    #[test]
    fn a_parsed_object_has_the_unknown_fields_of_its_text() {
        let bodies = [
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","nmae":"x",
                "labels":{"a":"b"},"annotations":null},
                "spec":{"foo":1,"template":{"spec":{"containers":[{"name":"c","imagee":"nginx",
                "ports":[{"containerPort":80,"bad":true}]}]}}},"status":{"replicas":0}}"#,
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}"#,
        ];
        for body in bodies {
            let value: Value = serde_json::from_str(body).unwrap();
            let parsed = check_value_fields("apps/v1", "Deployment", &value).unwrap();
            assert_eq!(
                parsed,
                check_fields("apps/v1", "Deployment", body.as_bytes()).unwrap()
            );
        }
        let value: Value = serde_json::from_str(bodies[0]).unwrap();
        assert_eq!(
            check_value_fields("apps/v1", "Deployment", &value)
                .unwrap()
                .len(),
            4
        );
    }

    #[test]
    fn duplicate_fields_are_reported_even_though_json_keeps_the_last() {
        let body = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
            "spec":{"replicas":1,"replicas":2}}"#;
        assert_eq!(
            check("apps/v1", "Deployment", body),
            [r#"duplicate field "spec.replicas""#]
        );
    }

    #[test]
    fn duplicates_are_found_among_many_keys_and_escaped_ones() {
        let mut data: Vec<String> = (0..20).map(|i| format!(r#""k{i}":"v""#)).collect();
        data.push(r#""k2":"again""#.to_string());
        data.push(r#""k18":"again""#.to_string());
        data.push(r#""\u006b3":"escaped k3""#.to_string());
        let body = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"c"}},"data":{{{}}}}}"#,
            data.join(",")
        );
        assert_eq!(
            check("v1", "ConfigMap", &body),
            [
                r#"duplicate field "data.k2""#,
                r#"duplicate field "data.k18""#,
                r#"duplicate field "data.k3""#,
            ]
        );
    }

    #[test]
    fn field_names_are_case_sensitive() {
        let body =
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"Containers":[]}}"#;
        assert_eq!(
            check("v1", "Pod", body),
            [r#"unknown field "spec.Containers""#]
        );
    }

    #[test]
    fn maps_and_raw_extensions_accept_any_key() {
        let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},
            "data":{"anything":"goes","x.y/z":"1"}}"#;
        assert!(check("v1", "ConfigMap", body).is_empty());
        let body = r#"{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"r"},
            "revision":1,"data":{"spec":{"template":{"whatever":true}}}}"#;
        assert!(check("apps/v1", "ControllerRevision", body).is_empty());
    }

    #[test]
    fn unknown_kinds_are_not_checked_and_bad_json_is_an_error() {
        assert!(check("example.com/v1", "Widget", r#"{"spec":{"x":1}}"#).is_empty());
        assert!(check_fields("v1", "Pod", b"{\"metadata\":").is_err());
    }

    #[test]
    fn strict_decoding_message_lists_every_problem() {
        let problems = [
            FieldProblem::Unknown("spec.foo".into()),
            FieldProblem::Duplicate("spec.replicas".into()),
        ];
        assert_eq!(
            strict_decoding_message(&problems),
            r#"strict decoding error: unknown field "spec.foo", duplicate field "spec.replicas""#
        );
    }

    #[test]
    fn duplicates_inside_unknown_fields_are_not_reported() {
        let body = r#"{"apiVersion":"v1","kind":"Pod","spec":{"bogus":{"a":1,"a":2}}}"#;
        assert_eq!(check("v1", "Pod", body), [r#"unknown field "spec.bogus""#]);
    }

    #[test]
    fn duplicate_label_keys_are_reported() {
        let body = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"a":"1","a":"2"}}}"#;
        assert_eq!(
            check("v1", "Pod", body),
            [r#"duplicate field "metadata.labels.a""#]
        );
    }
}
