//! One stored object as the server holds it: its JSON bytes plus the few decoded fields that
//! selectors and keys need.
//!
//! kube's watch cache keeps decoded Go structs plus a `storeElement` of name, namespace, labels
//! and the kind's selectable fields (`staging/src/k8s.io/apiserver/pkg/storage/cacher/store.go`).
//! A decoded `serde_json::Value` tree costs several times the object's JSON, so here the JSON is
//! the object: it is written to clients as it is (lists, gets, watch events), and decoded only by
//! code that needs the whole object ([`CachedObject::value`]).

use bytes::Bytes;
use serde_json::Value;

use crate::object;

/// A stored object at one revision: its JSON (with `metadata.resourceVersion` set to the
/// revision) and its name, namespace, uid, labels and selectable fields.
///
/// Immutable once built; shared between the cache, watch events and readers through `Arc`.
#[derive(Debug)]
pub struct CachedObject {
    /// Revision of the write that produced it (its `resourceVersion`).
    pub revision: i64,
    json: Bytes,
    attrs: Attrs,
}

/// The decoded fields, packed: every string is a slice of one buffer, so an object costs two
/// allocations beyond its JSON however many labels it has.
#[derive(Debug)]
struct Attrs {
    /// namespace, name, uid, then each label's key and value, then each field value.
    text: Box<str>,
    /// End offset in `text` of each piece, in the order above.
    ends: Box<[u32]>,
    labels: u32,
    /// Names of the field values at the end of `ends` (the kind's selectable fields).
    fields: &'static [&'static str],
}

const NAMESPACE: usize = 0;
const NAME: usize = 1;
const UID: usize = 2;
const LABELS: usize = 3;

impl Attrs {
    fn of(value: &Value, fields: &'static [&'static str], field_value: FieldValue<'_>) -> Self {
        let mut text = String::new();
        let mut ends = Vec::new();
        let mut push = |s: &str| {
            text.push_str(s);
            ends.push(u32::try_from(text.len()).unwrap_or(u32::MAX));
        };
        push(object::namespace(value));
        push(object::name(value));
        push(object::uid(value));
        let mut labels = 0;
        if let Some(map) = value
            .get("metadata")
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
        {
            for (k, v) in map {
                if let Some(v) = v.as_str() {
                    push(k);
                    push(v);
                    labels += 1;
                }
            }
        }
        for f in fields {
            push(field_value(value, f).as_deref().unwrap_or(""));
        }
        Self {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
            labels,
            fields,
        }
    }

    fn piece(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        let end = self.ends[i] as usize;
        self.text.get(start..end).unwrap_or("")
    }
}

/// How the kind computes a field-selector value (`Strategy::field_value`).
pub type FieldValue<'a> = &'a dyn Fn(&Value, &str) -> Option<String>;

fn no_fields(_: &Value, _: &str) -> Option<String> {
    None
}

/// `value` as JSON in an allocation of its own size.
///
/// The serializer doubles its buffer as it writes, so an object of 2.1 KB ends in a buffer of
/// 4 KB; the cache keeps every object for its whole life, so the bytes are copied once into a
/// buffer that fits when more than an eighth of it would be spare.
fn encode(value: &Value) -> Bytes {
    // Serializing a Value cannot fail (its map keys are strings).
    let buf = serde_json::to_vec(value).unwrap_or_else(|_| b"{}".to_vec());
    if buf.capacity() - buf.len() > buf.len() / 8 {
        Bytes::copy_from_slice(&buf)
    } else {
        Bytes::from(buf)
    }
}

impl CachedObject {
    /// `value` at `revision`, with no selectable fields kept (they are computed on demand).
    pub fn new(value: Value, revision: i64) -> Self {
        Self::with_fields(value, revision, &[], &no_fields)
    }

    /// `value` at `revision`, keeping the values of `fields` as `field_value` computes them.
    pub fn with_fields(
        mut value: Value,
        revision: i64,
        fields: &'static [&'static str],
        field_value: FieldValue<'_>,
    ) -> Self {
        object::set_resource_version(&mut value, revision);
        let attrs = Attrs::of(&value, fields, field_value);
        let json = encode(&value);
        Self {
            revision,
            json,
            attrs,
        }
    }

    /// The same object at another revision (the last state of a deleted object carries the
    /// delete's resourceVersion).
    pub fn at_revision(&self, revision: i64) -> Self {
        let mut value = self.value();
        object::set_resource_version(&mut value, revision);
        Self {
            revision,
            json: encode(&value),
            attrs: Attrs {
                text: self.attrs.text.clone(),
                ends: self.attrs.ends.clone(),
                labels: self.attrs.labels,
                fields: self.attrs.fields,
            },
        }
    }

    /// The object serialized as JSON, `metadata.resourceVersion` included.
    pub fn json(&self) -> &Bytes {
        &self.json
    }

    /// The object decoded (each call decodes; keep the result rather than calling twice).
    pub fn value(&self) -> Value {
        match serde_json::from_slice(&self.json) {
            Ok(v) => v,
            Err(e) => {
                // The bytes were serialized from a Value by `with_fields`.
                tracing::error!(error = %e, "cached object is not JSON");
                Value::Null
            }
        }
    }

    /// The object with only its `metadata` decoded (the rest is skipped, not built), for
    /// PartialObjectMetadata answers.
    pub fn metadata_only(&self) -> Value {
        #[derive(serde::Deserialize)]
        struct MetadataOnly {
            #[serde(default)]
            metadata: Value,
        }
        match serde_json::from_slice::<MetadataOnly>(&self.json) {
            Ok(m) => serde_json::json!({ "metadata": m.metadata }),
            Err(e) => {
                tracing::error!(error = %e, "cached object is not JSON");
                Value::Null
            }
        }
    }

    /// `metadata.namespace` (empty if unset).
    pub fn namespace(&self) -> &str {
        self.attrs.piece(NAMESPACE)
    }

    /// `metadata.name` (empty if unset).
    pub fn name(&self) -> &str {
        self.attrs.piece(NAME)
    }

    /// `metadata.uid` (empty if unset).
    pub fn uid(&self) -> &str {
        self.attrs.piece(UID)
    }

    /// The value of label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        (0..self.attrs.labels as usize)
            .map(|i| LABELS + 2 * i)
            .find(|&i| self.attrs.piece(i) == key)
            .map(|i| self.attrs.piece(i + 1))
    }

    /// The kept value of field selector `field`; `None` when it was not kept (decode the object
    /// to compute it).
    pub fn field(&self, field: &str) -> Option<&str> {
        let first = LABELS + 2 * self.attrs.labels as usize;
        self.attrs
            .fields
            .iter()
            .position(|f| *f == field)
            .map(|i| self.attrs.piece(first + i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "labels": {"app": "web", "tier": "", "n": 1}},
            "spec": {"nodeName": "n1"}
        })
    }

    #[test]
    fn the_json_carries_the_revision_and_decodes_back() {
        let obj = CachedObject::new(pod(), 7);
        let v = obj.value();
        assert_eq!(v["metadata"]["resourceVersion"], "7");
        assert_eq!(v["spec"]["nodeName"], "n1");
        assert_eq!(
            obj.at_revision(9).value()["metadata"]["resourceVersion"],
            "9"
        );
        assert_eq!(obj.metadata_only(), json!({"metadata": v["metadata"]}));
    }

    #[test]
    fn name_namespace_uid_and_string_labels_are_kept() {
        let obj = CachedObject::new(pod(), 1);
        assert_eq!((obj.namespace(), obj.name(), obj.uid()), ("ns", "p", "u-1"));
        assert_eq!(obj.label("app"), Some("web"));
        assert_eq!(obj.label("tier"), Some(""));
        assert_eq!(obj.label("n"), None, "non-string label values are ignored");
        assert_eq!(obj.label("missing"), None);
    }

    #[test]
    fn kept_fields_are_answered_and_others_are_not() {
        let node_name = |v: &Value, f: &str| match f {
            "spec.nodeName" => Some(v["spec"]["nodeName"].as_str().unwrap_or("").to_string()),
            _ => Some(String::new()),
        };
        let obj =
            CachedObject::with_fields(pod(), 1, &["spec.nodeName", "status.phase"], &node_name);
        assert_eq!(obj.field("spec.nodeName"), Some("n1"));
        assert_eq!(obj.field("status.phase"), Some(""));
        assert_eq!(obj.field("spec.schedulerName"), None);
        assert_eq!(obj.at_revision(2).field("spec.nodeName"), Some("n1"));
    }
}
