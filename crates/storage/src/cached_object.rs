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

/// `json` with `"resourceVersion":"<revision>"` added before `close`, the closing brace of its
/// `metadata` (`empty`: that object has no member yet).
fn with_resource_version(json: &[u8], close: usize, empty: bool, revision: i64) -> Bytes {
    let (head, tail) = json.split_at(close);
    let mut out = Vec::with_capacity(json.len() + 40);
    out.extend_from_slice(head);
    if !empty {
        out.push(b',');
    }
    out.extend_from_slice(b"\"resourceVersion\":\"");
    out.extend_from_slice(revision.to_string().as_bytes());
    out.push(b'"');
    out.extend_from_slice(tail);
    Bytes::from(out)
}

/// Where the top-level `metadata` object of the JSON object `json` ends: the index of its
/// closing brace, and whether it is empty. `None` when `json` is not an object with a
/// `metadata` object.
fn metadata_end(json: &[u8]) -> Option<(usize, bool)> {
    let mut i = skip_ws(json, 0);
    if json.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = skip_ws(json, i);
        match json.get(i)? {
            b',' => {
                i += 1;
                continue;
            }
            b'"' => {}
            _ => return None,
        }
        let key_end = string_end(json, i)?;
        let key = &json[i + 1..key_end - 1];
        i = skip_ws(json, key_end);
        if json.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(json, i + 1);
        let end = value_end(json, i)?;
        if key == b"metadata" {
            if json.get(i) != Some(&b'{') {
                return None;
            }
            let close = end - 1;
            let empty = json[i + 1..close].iter().all(u8::is_ascii_whitespace);
            return Some((close, empty));
        }
        i = end;
    }
}

fn skip_ws(json: &[u8], mut i: usize) -> usize {
    while json.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The index after the string whose opening quote is at `i`.
fn string_end(json: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        match json.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// The index after the value that starts at `i`.
fn value_end(json: &[u8], i: usize) -> Option<usize> {
    match json.get(i)? {
        b'"' => string_end(json, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match json.get(j)? {
                    b'"' => {
                        j = string_end(json, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while json
                .get(j)
                .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
            {
                j += 1;
            }
            Some(j)
        }
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

    /// [`CachedObject::with_fields`] of `value` whose JSON without `metadata.resourceVersion`
    /// is `stored`, the bytes the store wrote for it: the JSON is `stored` with the
    /// resourceVersion added where serializing `value` with it would put it (last in
    /// `metadata`), so the object is not serialized a second time. Falls back to serializing
    /// when `value` has a resourceVersion or `stored` has no `metadata` object.
    pub fn with_fields_stored(
        value: Value,
        stored: &[u8],
        revision: i64,
        fields: &'static [&'static str],
        field_value: FieldValue<'_>,
    ) -> Self {
        let has_rv = value
            .get("metadata")
            .and_then(|m| m.get("resourceVersion"))
            .is_some();
        match metadata_end(stored).filter(|_| !has_rv) {
            Some((close, empty)) => Self {
                revision,
                attrs: Attrs::of(&value, fields, field_value),
                json: with_resource_version(stored, close, empty, revision),
            },
            None => Self::with_fields(value, revision, fields, field_value),
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

    #[test]
    fn stored_bytes_with_the_resource_version_added_are_the_object_serialized_with_it() {
        let values = [
            pod(),
            json!({"kind": "Pod", "metadata": {}, "spec": {}}),
            json!({"a": "}{\"metadata\"", "b": [1, {"metadata": {"x": "]"}}], "metadata": {"name": "q\"}", "annotations": {"k": "{[\\"}}, "z": -1.5e3}),
            json!({"metadata": {"name": "x", "labels": {}}, "status": {"phase": "Running"}}),
        ];
        for value in values {
            let stored = serde_json::to_vec(&value).unwrap();
            let spliced =
                CachedObject::with_fields_stored(value.clone(), &stored, 42, &[], &no_fields);
            let encoded = CachedObject::new(value, 42);
            assert_eq!(spliced.json(), encoded.json());
            assert_eq!(spliced.name(), encoded.name());
            assert_eq!(spliced.value()["metadata"]["resourceVersion"], "42");
        }
        // Without a metadata object, or with a resourceVersion already, the object is serialized.
        for value in [
            json!({"kind": "X"}),
            json!({"metadata": "x"}),
            json!({"metadata": {"resourceVersion": "3", "name": "a"}}),
        ] {
            let stored = serde_json::to_vec(&value).unwrap();
            let spliced =
                CachedObject::with_fields_stored(value.clone(), &stored, 7, &[], &no_fields);
            assert_eq!(spliced.json(), CachedObject::new(value, 7).json());
        }
    }

    #[test]
    fn the_metadata_object_is_found_at_the_top_level_only() {
        let json = br#" { "spec" : {"metadata": {"a": 1}} , "metadata" : { } , "x": 1}"#;
        let (close, empty) = metadata_end(json).unwrap();
        assert_eq!(json[close], b'}');
        assert!(empty);
        assert_eq!(&json[close - 2..close], b"{ ");
        assert_eq!(metadata_end(br#"{"spec": {"metadata": {}}}"#), None);
        assert_eq!(metadata_end(br#"[1]"#), None);
        assert_eq!(metadata_end(br#"{"metadata": {"a": "#), None);
    }

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
