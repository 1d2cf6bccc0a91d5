//! Field paths: the steps from an object's root to one of its fields or list items.
//!
//! Mirrors `fieldpath/element.go` and `fieldpath/path.go`: a step names a struct or map field,
//! a map-list item by its keys (`k:{...}`), a set item by its value (`v:...`) or an atomic
//! list item by its index (`i:N`). Steps are totally ordered (fields, then keys, then values,
//! then indexes) because `FieldsV1` documents list them in that order.

use std::cmp::Ordering;
use std::fmt;

use serde_json::Value;

use crate::value;

/// One step of a [`Path`]; steps that hold values are equal when their values are
/// ([`value::equals`]: `1` and `1.0` name the same set item).
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A struct or map field by name (`f:name`).
    Field(String),
    /// A map-list item by its key fields, sorted by name (`k:{"name":"c"}`).
    Key(Vec<(String, Value)>),
    /// A set item by its value (`v:"a"`).
    Value(Value),
    /// An item of a list by position (`i:0`).
    Index(usize),
}

impl PathElement {
    /// A field step.
    pub fn field(name: impl Into<String>) -> PathElement {
        PathElement::Field(name.into())
    }

    /// A key step from name/value pairs, sorted by name as kube's `KeyByFields`.
    pub fn key<I, S>(fields: I) -> PathElement
    where
        I: IntoIterator<Item = (S, Value)>,
        S: Into<String>,
    {
        let mut fields: Vec<(String, Value)> =
            fields.into_iter().map(|(n, v)| (n.into(), v)).collect();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => compare_field_lists(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => value::compare(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn compare_field_lists(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((an, av), (bn, bv)) in a.iter().zip(b) {
        let c = an.cmp(bn).then_with(|| value::compare(av, bv));
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

/// A value as `value.ToString` prints it in paths: strings quoted, numbers and booleans bare.
fn value_string(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::String(s) => Value::String(s.clone()).to_string(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(value_string).collect::<Vec<_>>().join(",")
        ),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", value_string(v)))
            .collect::<String>(),
    }
}

impl fmt::Display for PathElement {
    /// `.name`, `[k1=v1,k2=v2]`, `[=value]` or `[3]`, as `PathElement.String`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(n, v)| format!("{n}={}", value_string(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={}]", value_string(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path from an object's root; the empty path is the root itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Path(pub Vec<PathElement>);

impl Path {
    /// A path of field names, e.g. `Path::fields(["spec", "replicas"])`.
    pub fn fields<I, S>(names: I) -> Path
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Path(names.into_iter().map(PathElement::field).collect())
    }

    /// This path followed by `pe`.
    pub fn child(&self, pe: PathElement) -> Path {
        let mut p = self.0.clone();
        p.push(pe);
        Path(p)
    }
}

impl From<Vec<PathElement>> for Path {
    fn from(v: Vec<PathElement>) -> Path {
        Path(v)
    }
}

impl fmt::Display for Path {
    /// The concatenated steps, `.spec.template.spec.containers[name="c"].image`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in &self.0 {
            write!(f, "{pe}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn elements_order_fields_then_keys_then_values_then_indexes() {
        let mut v = [
            PathElement::Index(0),
            PathElement::Value(json!("a")),
            PathElement::key([("name", json!("c"))]),
            PathElement::field("b"),
            PathElement::field("a"),
        ];
        v.sort();
        assert_eq!(v[0], PathElement::field("a"));
        assert_eq!(v[1], PathElement::field("b"));
        assert!(matches!(v[2], PathElement::Key(_)));
        assert!(matches!(v[3], PathElement::Value(_)));
        assert_eq!(v[4], PathElement::Index(0));
    }

    #[test]
    fn paths_print_as_kube_prints_them_in_conflicts() {
        let p = Path(vec![
            PathElement::field("spec"),
            PathElement::field("containers"),
            PathElement::key([("name", json!("c")), ("containerPort", json!(80))]),
            PathElement::field("image"),
        ]);
        assert_eq!(
            p.to_string(),
            ".spec.containers[containerPort=80,name=\"c\"].image"
        );
        let s = Path(vec![
            PathElement::field("finalizers"),
            PathElement::Value(json!("x")),
        ]);
        assert_eq!(s.to_string(), ".finalizers[=\"x\"]");
        assert_eq!(Path(vec![PathElement::Index(2)]).to_string(), "[2]");
    }

    #[test]
    fn numbers_compare_numerically_before_strings() {
        assert_eq!(value::compare(&json!(2), &json!(10)), Ordering::Less);
        assert_eq!(value::compare(&json!(1.5), &json!(2)), Ordering::Less);
        assert_eq!(value::compare(&json!(10), &json!("1")), Ordering::Less);
    }

    #[test]
    fn steps_naming_the_same_number_are_equal() {
        assert_eq!(PathElement::Value(json!(1)), PathElement::Value(json!(1.0)));
        assert_eq!(
            PathElement::key([("port", json!(80))]),
            PathElement::key([("port", json!(80.0))])
        );
        assert_ne!(PathElement::Value(json!(1)), PathElement::Value(json!("1")));
    }
}
