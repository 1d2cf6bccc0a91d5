//! The `FieldsV1` encoding of a [`Set`], as kube serialises `metadata.managedFields[].fieldsV1`.
//!
//! Mirrors `fieldpath/serialize.go` and `serialize-pe.go`: each step is a key (`f:name`,
//! `k:{"name":"c"}`, `v:"a"`, `i:0`) whose value is `{}` for a member, or an object of the
//! steps below it; a step that is both a member and a prefix has a `"."` entry first.

use serde_json::{Map, Value};

use crate::path::PathElement;
use crate::set::Set;
use crate::Error;

/// The `FieldsV1` text of one step.
pub fn encode_element(pe: &PathElement) -> String {
    match pe {
        PathElement::Field(name) => format!("f:{name}"),
        PathElement::Key(fields) => {
            let body: Vec<String> = fields
                .iter()
                .map(|(n, v)| format!("{}:{}", Value::String(n.clone()), v))
                .collect();
            format!("k:{{{}}}", body.join(","))
        }
        PathElement::Value(v) => format!("v:{v}"),
        PathElement::Index(i) => format!("i:{i}"),
    }
}

/// Parses the `FieldsV1` text of one step.
pub fn decode_element(s: &str) -> Result<PathElement, Error> {
    let bad = |why: &str| Error::FieldsV1(format!("{why}: {s:?}"));
    let (kind, rest) = s.split_once(':').ok_or_else(|| bad("missing colon"))?;
    match kind {
        "f" => Ok(PathElement::Field(rest.to_string())),
        "v" => serde_json::from_str(rest)
            .map(PathElement::Value)
            .map_err(|_| bad("invalid value")),
        "k" => match serde_json::from_str::<Value>(rest) {
            Ok(Value::Object(m)) => Ok(PathElement::key(m)),
            _ => Err(bad("invalid key")),
        },
        "i" => rest
            .parse()
            .map(PathElement::Index)
            .map_err(|_| bad("invalid index")),
        _ => Err(bad("unknown path element type")),
    }
}

/// The `FieldsV1` document of `set`.
pub fn to_fields_v1(set: &Set) -> Value {
    Value::Object(emit(set, false))
}

fn emit(set: &Set, include_self: bool) -> Map<String, Value> {
    let mut out = Map::new();
    if include_self && !set.is_empty() {
        out.insert(".".to_string(), Value::Object(Map::new()));
    }
    let mut members = set.members.iter().peekable();
    let mut children = set.children.iter().peekable();
    loop {
        let next = match (members.peek(), children.peek()) {
            (None, None) => break,
            (Some(m), Some((c, _))) if *m < *c => None,
            (Some(_), None) => None,
            (m, Some((c, _))) => Some(m.is_some_and(|m| m == c)),
        };
        match next {
            None => {
                if let Some(m) = members.next() {
                    out.insert(encode_element(m), Value::Object(Map::new()));
                }
            }
            Some(also_member) => {
                if also_member {
                    members.next();
                }
                if let Some((c, child)) = children.next() {
                    out.insert(encode_element(c), Value::Object(emit(child, also_member)));
                }
            }
        }
    }
    out
}

/// The set a `FieldsV1` document describes.
pub fn from_fields_v1(doc: &Value) -> Result<Set, Error> {
    let Value::Object(m) = doc else {
        return Err(Error::FieldsV1("not a JSON object".to_string()));
    };
    let mut set = Set::new();
    for (k, v) in m {
        if k == "." {
            continue;
        }
        let pe = decode_element(k)?;
        let Value::Object(inner) = v else {
            return Err(Error::FieldsV1(format!("{k:?} is not an object")));
        };
        if inner.is_empty() {
            set.members.insert(pe);
            continue;
        }
        if inner.contains_key(".") {
            set.members.insert(pe.clone());
        }
        let child = from_fields_v1(v)?;
        if !child.is_empty() {
            set.children.insert(pe, child);
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::Path;
    use serde_json::json;

    #[test]
    fn encodes_as_kube_does_with_dot_for_items_owned_whole_and_by_field() {
        let c = PathElement::key([("name", json!("nginx"))]);
        let base = Path::fields(["spec", "template", "spec", "containers"]);
        let set = Set::from_paths([
            Path::fields(["spec", "replicas"]),
            base.child(c.clone()),
            base.child(c.clone()).child(PathElement::field("image")),
            base.child(c).child(PathElement::field("name")),
            Path::fields(["metadata", "finalizers"]).child(PathElement::Value(json!("a"))),
        ]);
        let doc = to_fields_v1(&set);
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"f:metadata":{"f:finalizers":{"v:\"a\"":{}}},"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{}}}}}}}"#
        );
        assert_eq!(from_fields_v1(&doc).unwrap(), set);
    }

    #[test]
    fn decodes_kubectl_client_side_apply_fields() {
        let doc = json!({"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},
            "f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{}}},"f:x":{"i:0":{}}}});
        let set = from_fields_v1(&doc).unwrap();
        assert!(set.has(&Path::fields(["metadata", "annotations"])));
        let key = PathElement::key([("protocol", json!("TCP")), ("port", json!(80))]);
        assert!(set.has(&Path::fields(["spec", "ports"]).child(key)));
        assert!(set.has(&Path::fields(["spec", "x"]).child(PathElement::Index(0))));
        assert_eq!(to_fields_v1(&set), doc);
    }

    #[test]
    fn refuses_malformed_documents() {
        assert!(from_fields_v1(&json!({"x:a": {}})).is_err());
        assert!(from_fields_v1(&json!({"f:a": 1})).is_err());
        assert!(from_fields_v1(&json!({"k:[1]": {}})).is_err());
        assert!(from_fields_v1(&json!([])).is_err());
    }
}
