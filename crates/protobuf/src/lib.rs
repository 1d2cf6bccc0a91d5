//! Decoding of `application/vnd.kubernetes.protobuf` request bodies into JSON objects.
//!
//! kubectl 1.32+ sends built-in objects in Kubernetes' protobuf envelope (`k8s\0` followed by a
//! `runtime.Unknown` holding the type and the encoded object; apimachinery
//! `pkg/runtime/serializer/protobuf`). The server keeps JSON, so bodies are converted with the
//! field tables of [`schema`] (generated from Kubernetes' generated.proto through the `k8s-pb`
//! crate) and the JSON field names of the OpenAPI definitions. Responses are always JSON.

mod schema;

use std::collections::HashMap;
use std::sync::OnceLock;

use base64::Engine;
use serde_json::{json, Map, Value};

use rkcm_apimachinery::openapi::definitions;

/// Prefix of every Kubernetes protobuf body.
pub const MAGIC: &[u8] = b"k8s\x00";

/// Wire kind of a field.
#[derive(Debug)]
pub(crate) enum Kind {
    /// `string`.
    Str,
    /// `bytes` (base64 in JSON).
    Bytes,
    /// `bool`.
    Bool,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `double` (no served kind has one today; kept so regenerated tables always compile).
    #[allow(dead_code)]
    Double,
    /// A nested message, by qualified name.
    Message(&'static str),
    /// `map<string, V>`.
    Map(&'static Kind),
}

/// One field of a message.
#[derive(Debug)]
pub(crate) struct Field {
    tag: u32,
    name: &'static str,
    kind: Kind,
    repeated: bool,
}

/// A message and its fields.
#[derive(Debug)]
pub(crate) struct Message {
    name: &'static str,
    fields: &'static [Field],
}

/// Why a body could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The body is not in the protobuf envelope.
    #[error("the body does not start with the Kubernetes protobuf prefix")]
    NoMagic,
    /// The bytes are not valid protobuf.
    #[error("malformed protobuf: {0}")]
    Malformed(&'static str),
    /// The kind is not one the server knows the protobuf form of.
    #[error("protobuf is not supported for {0}")]
    UnknownKind(String),
}

struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, Error> {
        let mut out = 0u64;
        for i in 0..10 {
            let (&b, rest) = self
                .buf
                .split_first()
                .ok_or(Error::Malformed("truncated varint"))?;
            self.buf = rest;
            out |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(Error::Malformed("varint too long"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if self.buf.len() < n {
            return Err(Error::Malformed("truncated field"));
        }
        let (head, rest) = self.buf.split_at(n);
        self.buf = rest;
        Ok(head)
    }

    /// The next `(tag, wire type)`, or `None` at the end.
    fn key(&mut self) -> Result<Option<(u32, u8)>, Error> {
        if self.buf.is_empty() {
            return Ok(None);
        }
        let k = self.varint()?;
        Ok(Some(((k >> 3) as u32, (k & 7) as u8)))
    }
}

/// A decoded wire value before it is typed.
enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Bytes(&'a [u8]),
    Fixed32(u32),
}

fn read_value<'a>(r: &mut Reader<'a>, wire: u8) -> Result<Wire<'a>, Error> {
    Ok(match wire {
        0 => Wire::Varint(r.varint()?),
        1 => {
            let b = r.take(8)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            Wire::Fixed64(u64::from_le_bytes(a))
        }
        2 => {
            let n =
                usize::try_from(r.varint()?).map_err(|_| Error::Malformed("length overflow"))?;
            Wire::Bytes(r.take(n)?)
        }
        5 => {
            let b = r.take(4)?;
            let mut a = [0u8; 4];
            a.copy_from_slice(b);
            Wire::Fixed32(u32::from_le_bytes(a))
        }
        _ => return Err(Error::Malformed("unsupported wire type")),
    })
}

/// Message tables by lower-cased name, and JSON names of their fields.
struct Tables {
    messages: HashMap<String, &'static Message>,
    /// (message, field) → JSON name; `None` for embedded structs whose fields are inlined.
    json_names: HashMap<(&'static str, u32), Option<String>>,
}

fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let defs = definitions::definitions();
        let defs_by_lower: HashMap<String, &Value> =
            defs.iter().map(|(k, v)| (k.to_lowercase(), v)).collect();
        let mut messages = HashMap::new();
        let mut json_names = HashMap::new();
        for m in schema::MESSAGES {
            messages.insert(m.name.to_lowercase(), m);
            let props = defs_by_lower
                .get(&m.name.to_lowercase())
                .and_then(|d| d.get("properties"))
                .and_then(Value::as_object);
            for f in m.fields {
                let name = match props {
                    Some(props) => {
                        let wanted = normalize(f.name);
                        match props.keys().find(|k| normalize(k) == wanted) {
                            Some(k) => Some(k.clone()),
                            // An embedded Go struct: its fields are inlined in JSON.
                            None if matches!(f.kind, Kind::Message(_)) => None,
                            None => Some(camel(f.name)),
                        }
                    }
                    None => Some(camel(f.name)),
                };
                json_names.insert((m.name, f.tag), name);
            }
        }
        Tables {
            messages,
            json_names,
        }
    })
}

fn message(name: &str) -> Option<&'static Message> {
    tables().messages.get(&name.to_lowercase()).copied()
}

fn time_string(seconds: i64, nanos: i64, micro: bool) -> Value {
    let Ok(t) = jiff::Timestamp::new(seconds, nanos.clamp(0, 999_999_999) as i32) else {
        return Value::Null;
    };
    let s = if micro {
        t.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
    } else {
        t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    };
    Value::String(s)
}

/// Converts messages whose JSON form is not an object (Time, Quantity, IntOrString, ...).
fn special(name: &str, obj: &Map<String, Value>) -> Option<Value> {
    let int = |k: &str| obj.get(k).and_then(Value::as_i64).unwrap_or(0);
    Some(match name {
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time" => {
            time_string(int("seconds"), int("nanos"), false)
        }
        "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime" => {
            time_string(int("seconds"), int("nanos"), true)
        }
        "io.k8s.apimachinery.pkg.api.resource.Quantity" => {
            obj.get("string").cloned().unwrap_or(json!("0"))
        }
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString" => {
            if int("type") == 1 {
                obj.get("strVal").cloned().unwrap_or(json!(""))
            } else {
                json!(int("intVal"))
            }
        }
        _ => return None,
    })
}

fn raw_json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or(Value::Null)
}

fn scalar(kind: &Kind, w: Wire<'_>) -> Result<Value, Error> {
    Ok(match (kind, w) {
        (Kind::Str, Wire::Bytes(b)) => Value::String(String::from_utf8_lossy(b).into_owned()),
        (Kind::Bytes, Wire::Bytes(b)) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (Kind::Bool, Wire::Varint(v)) => Value::Bool(v != 0),
        (Kind::Int32, Wire::Varint(v)) => json!(v as i64 as i32),
        (Kind::Int64, Wire::Varint(v)) => json!(v as i64),
        (Kind::Double, Wire::Fixed64(v)) => json!(f64::from_bits(v)),
        (Kind::Double, Wire::Fixed32(v)) => json!(f32::from_bits(v)),
        _ => return Err(Error::Malformed("wire type does not match the field")),
    })
}

/// Decodes one message into a JSON value.
fn decode_message(name: &str, bytes: &[u8], depth: usize) -> Result<Value, Error> {
    if depth > 64 {
        return Err(Error::Malformed("nesting too deep"));
    }
    let msg = message(name).ok_or_else(|| Error::UnknownKind(name.to_string()))?;
    // RawExtension and FieldsV1 hold JSON bytes.
    if matches!(
        msg.name,
        "io.k8s.apimachinery.pkg.runtime.RawExtension"
            | "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1"
    ) {
        let mut r = Reader { buf: bytes };
        let mut out = Value::Null;
        while let Some((tag, wire)) = r.key()? {
            if let (1, Wire::Bytes(b)) = (tag, read_value(&mut r, wire)?) {
                out = raw_json(b);
            }
        }
        return Ok(out);
    }
    let names = &tables().json_names;
    let mut obj = Map::new();
    let mut r = Reader { buf: bytes };
    while let Some((tag, wire)) = r.key()? {
        let w = read_value(&mut r, wire)?;
        let Some(field) = msg.fields.iter().find(|f| f.tag == tag) else {
            continue;
        };
        let json_name = names.get(&(msg.name, tag)).cloned().flatten();
        let value = match (&field.kind, w) {
            (Kind::Message(inner), Wire::Bytes(b)) => decode_message(inner, b, depth + 1)?,
            (Kind::Map(value_kind), Wire::Bytes(b)) => {
                let (k, v) = map_entry(value_kind, b, depth)?;
                let target = obj
                    .entry(json_name.clone().unwrap_or_else(|| camel(field.name)))
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(m) = target {
                    m.insert(k, v);
                }
                continue;
            }
            // Unpacked and packed repeated scalars.
            (k @ (Kind::Int32 | Kind::Int64 | Kind::Bool), Wire::Bytes(b)) if field.repeated => {
                let mut inner = Reader { buf: b };
                let mut values = Vec::new();
                while !inner.buf.is_empty() {
                    values.push(scalar(k, Wire::Varint(inner.varint()?))?);
                }
                let key = json_name.unwrap_or_else(|| camel(field.name));
                if let Value::Array(a) = obj.entry(key).or_insert_with(|| Value::Array(Vec::new()))
                {
                    a.extend(values);
                }
                continue;
            }
            (k, w) => scalar(k, w)?,
        };
        match json_name {
            None => {
                // Embedded struct: inline its fields.
                if let Value::Object(inner) = value {
                    obj.extend(inner);
                }
            }
            Some(key) if field.repeated => {
                if let Value::Array(a) = obj.entry(key).or_insert_with(|| Value::Array(Vec::new()))
                {
                    a.push(value);
                }
            }
            Some(key) => {
                obj.insert(key, value);
            }
        }
    }
    Ok(special(msg.name, &obj).unwrap_or(Value::Object(obj)))
}

fn map_entry(value_kind: &Kind, bytes: &[u8], depth: usize) -> Result<(String, Value), Error> {
    let mut r = Reader { buf: bytes };
    let mut key = String::new();
    let mut value = match value_kind {
        Kind::Str | Kind::Bytes => json!(""),
        _ => Value::Null,
    };
    while let Some((tag, wire)) = r.key()? {
        let w = read_value(&mut r, wire)?;
        match (tag, w) {
            (1, Wire::Bytes(b)) => key = String::from_utf8_lossy(b).into_owned(),
            (2, w) => {
                value = match (value_kind, w) {
                    (Kind::Message(inner), Wire::Bytes(b)) => decode_message(inner, b, depth + 1)?,
                    (k, w) => scalar(k, w)?,
                }
            }
            _ => {}
        }
    }
    Ok((key, value))
}

/// The qualified message name of `api_version`/`kind`: its OpenAPI definition name, which is
/// also its protobuf message name (`io.k8s.api.apps.v1.Deployment`,
/// `io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService`).
fn message_for(api_version: &str, kind: &str) -> String {
    if kind == "DeleteOptions" {
        return "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions".into();
    }
    if let Some(definition) = definitions::root_definition(api_version, kind) {
        return definition.to_string();
    }
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let short = match group {
        "" => "core",
        g => g.split('.').next().unwrap_or(g),
    };
    format!("io.k8s.api.{short}.{version}.{kind}")
}

/// Decodes a Kubernetes protobuf body (envelope included) into the object's JSON.
pub fn decode(body: &[u8]) -> Result<Value, Error> {
    let rest = body.strip_prefix(MAGIC).ok_or(Error::NoMagic)?;
    let mut r = Reader { buf: rest };
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    while let Some((tag, wire)) = r.key()? {
        match (tag, read_value(&mut r, wire)?) {
            (1, Wire::Bytes(tm)) => {
                let mut t = Reader { buf: tm };
                while let Some((tag, wire)) = t.key()? {
                    match (tag, read_value(&mut t, wire)?) {
                        (1, Wire::Bytes(b)) => {
                            api_version = String::from_utf8_lossy(b).into_owned()
                        }
                        (2, Wire::Bytes(b)) => kind = String::from_utf8_lossy(b).into_owned(),
                        _ => {}
                    }
                }
            }
            (2, Wire::Bytes(b)) => raw = b,
            _ => {}
        }
    }
    let name = message_for(&api_version, &kind);
    if message(&name).is_none() {
        return Err(Error::UnknownKind(format!("{api_version}, Kind={kind}")));
    }
    let mut obj = decode_message(&name, raw, 0)?;
    if let Value::Object(m) = &mut obj {
        // apiVersion and kind first, as in JSON bodies.
        let mut out = Map::new();
        out.insert("apiVersion".into(), Value::String(api_version));
        out.insert("kind".into(), Value::String(kind));
        out.extend(std::mem::take(m));
        return Ok(Value::Object(out));
    }
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return;
            }
            out.push(b | 0x80);
        }
    }

    fn field_bytes(tag: u32, bytes: &[u8], out: &mut Vec<u8>) {
        varint(u64::from(tag) << 3 | 2, out);
        varint(bytes.len() as u64, out);
        out.extend_from_slice(bytes);
    }

    fn field_varint(tag: u32, v: u64, out: &mut Vec<u8>) {
        varint(u64::from(tag) << 3, out);
        varint(v, out);
    }

    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let mut tm = Vec::new();
        field_bytes(1, api_version.as_bytes(), &mut tm);
        field_bytes(2, kind.as_bytes(), &mut tm);
        let mut unknown = Vec::new();
        field_bytes(1, &tm, &mut unknown);
        field_bytes(2, raw, &mut unknown);
        let mut out = MAGIC.to_vec();
        out.extend(unknown);
        out
    }

    #[test]
    fn token_and_self_subject_reviews_decode() {
        let mut spec = Vec::new();
        field_bytes(1, b"t0k3n", &mut spec);
        field_bytes(2, b"api", &mut spec);
        field_bytes(2, b"vault", &mut spec);
        let mut review = Vec::new();
        field_bytes(2, &spec, &mut review);
        let v = decode(&envelope(
            "authentication.k8s.io/v1",
            "TokenReview",
            &review,
        ))
        .expect("decodes");
        assert_eq!(
            v["spec"],
            json!({"token": "t0k3n", "audiences": ["api", "vault"]})
        );
        let mut meta = Vec::new();
        field_bytes(1, b"me", &mut meta);
        let mut ssr = Vec::new();
        field_bytes(1, &meta, &mut ssr);
        let v = decode(&envelope(
            "authentication.k8s.io/v1",
            "SelfSubjectReview",
            &ssr,
        ))
        .expect("decodes");
        assert_eq!(v["metadata"]["name"], "me");
    }

    #[test]
    fn namespace_with_labels_and_finalizers_decodes() {
        let mut meta = Vec::new();
        field_bytes(1, b"scratch", &mut meta);
        let mut label = Vec::new();
        field_bytes(1, b"team", &mut label);
        field_bytes(2, b"a", &mut label);
        field_bytes(11, &label, &mut meta);
        let mut ts = Vec::new();
        field_varint(1, 1_700_000_000, &mut ts);
        field_bytes(8, &ts, &mut meta);
        let mut spec = Vec::new();
        field_bytes(1, b"kubernetes", &mut spec);
        let mut ns = Vec::new();
        field_bytes(1, &meta, &mut ns);
        field_bytes(2, &spec, &mut ns);
        let v = decode(&envelope("v1", "Namespace", &ns)).expect("decodes");
        assert_eq!(
            v,
            json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "scratch", "labels": {"team": "a"}, "creationTimestamp": "2023-11-14T22:13:20Z"},
                "spec": {"finalizers": ["kubernetes"]}
            })
        );
    }

    #[test]
    fn acronyms_int_or_string_quantities_and_embedded_structs_follow_json_names() {
        // Deployment strategy maxSurge as IntOrString string "25%".
        let mut ios = Vec::new();
        field_varint(1, 1, &mut ios);
        field_bytes(3, b"25%", &mut ios);
        let mut ru = Vec::new();
        field_bytes(2, &ios, &mut ru);
        let mut strategy = Vec::new();
        field_bytes(1, b"RollingUpdate", &mut strategy);
        field_bytes(2, &ru, &mut strategy);
        let mut spec = Vec::new();
        field_varint(1, 3, &mut spec);
        field_bytes(4, &strategy, &mut spec);
        let mut d = Vec::new();
        field_bytes(2, &spec, &mut d);
        let v = decode(&envelope("apps/v1", "Deployment", &d)).expect("decodes");
        assert_eq!(v["spec"]["replicas"], 3);
        assert_eq!(v["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");

        // Pod status podIP and an env var from a ConfigMap key (embedded LocalObjectReference).
        let mut status = Vec::new();
        field_bytes(6, b"10.0.0.1", &mut status);
        let mut lor = Vec::new();
        field_bytes(1, b"cfg", &mut lor);
        let mut sel = Vec::new();
        field_bytes(1, &lor, &mut sel);
        field_bytes(2, b"k", &mut sel);
        let mut src = Vec::new();
        field_bytes(3, &sel, &mut src);
        let mut env = Vec::new();
        field_bytes(1, b"E", &mut env);
        field_bytes(3, &src, &mut env);
        let mut qty = Vec::new();
        field_bytes(1, b"100m", &mut qty);
        let mut entry = Vec::new();
        field_bytes(1, b"cpu", &mut entry);
        field_bytes(2, &qty, &mut entry);
        let mut res = Vec::new();
        field_bytes(2, &entry, &mut res);
        let mut c = Vec::new();
        field_bytes(1, b"c", &mut c);
        field_bytes(7, &env, &mut c);
        field_bytes(8, &res, &mut c);
        let mut pspec = Vec::new();
        field_bytes(2, &c, &mut pspec);
        let mut pod = Vec::new();
        field_bytes(2, &pspec, &mut pod);
        field_bytes(3, &status, &mut pod);
        let v = decode(&envelope("v1", "Pod", &pod)).expect("decodes");
        assert_eq!(v["status"]["podIP"], "10.0.0.1");
        let c = &v["spec"]["containers"][0];
        assert_eq!(
            c["env"][0]["valueFrom"]["configMapKeyRef"],
            json!({"name": "cfg", "key": "k"})
        );
        assert_eq!(c["resources"]["requests"]["cpu"], "100m");
    }

    #[test]
    fn bodies_without_the_envelope_are_refused() {
        assert!(matches!(decode(b"{}"), Err(Error::NoMagic)));
        assert!(decode(&envelope("v1", "Frobnicator", &[])).is_err());
    }
}
