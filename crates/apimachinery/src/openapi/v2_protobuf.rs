//! The gnostic protobuf encoding of the OpenAPI v2 document (`openapi.v2.Document` of
//! `github.com/google/gnostic-models` `openapiv2/OpenAPIv2.proto`), which kubectl ≤ 1.28 asks
//! for (`Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`).
//!
//! The JSON document is walked and written with a small protobuf writer. Field numbers are those
//! of OpenAPIv2.proto. Values of `default`, `example`, `enum` and vendor extensions are `Any`
//! messages carrying YAML text; JSON is YAML, so the JSON text of the value is written, which
//! kube-openapi's `VendorExtensionToMap` parses back. Swagger keys without a protobuf field
//! (`oneOf`, `anyOf`) are left out, as gnostic leaves them out.

use serde_json::{Map, Value};

/// Protobuf wire types.
const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;

/// Appends protobuf fields to a buffer.
#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn key(&mut self, field: u64, wire: u64) {
        self.varint((field << 3) | wire);
    }

    fn bytes(&mut self, field: u64, b: &[u8]) {
        self.key(field, LEN);
        self.varint(b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    /// A string field; empty strings are the proto3 default and are not written.
    fn string(&mut self, field: u64, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn bool(&mut self, field: u64, b: bool) {
        if b {
            self.key(field, VARINT);
            self.varint(1);
        }
    }

    fn int64(&mut self, field: u64, v: i64) {
        if v != 0 {
            self.key(field, VARINT);
            // Negative int64 values are written as their 64-bit two's complement.
            self.varint(v as u64);
        }
    }

    fn double(&mut self, field: u64, v: f64) {
        if v != 0.0 {
            self.key(field, FIXED64);
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
    }

    /// A message field written by `f` (always present, even when empty).
    fn message(&mut self, field: u64, f: impl FnOnce(&mut Writer)) {
        let mut inner = Writer::default();
        f(&mut inner);
        self.bytes(field, &inner.buf);
    }
}

fn str_of<'a>(m: &'a Map<String, Value>, key: &str) -> &'a str {
    m.get(key).and_then(Value::as_str).unwrap_or("")
}

fn bool_of(m: &Map<String, Value>, key: &str) -> bool {
    m.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn strings(w: &mut Writer, field: u64, v: Option<&Value>) {
    for s in v.and_then(Value::as_array).into_iter().flatten() {
        if let Some(s) = s.as_str() {
            w.bytes(field, s.as_bytes());
        }
    }
}

/// `Any { yaml = 2 }` holding `v` as YAML (its JSON text).
fn any(w: &mut Writer, field: u64, v: &Value) {
    w.message(field, |a| a.string(2, &v.to_string()));
}

/// `repeated NamedAny vendor_extension`: every `x-` key.
fn vendor_extensions(w: &mut Writer, field: u64, m: &Map<String, Value>) {
    for (name, value) in m.iter().filter(|(k, _)| k.starts_with("x-")) {
        w.message(field, |n| {
            n.string(1, name);
            any(n, 2, value);
        });
    }
}

/// `openapi.v2.Document` of the swagger 2.0 document `doc`.
pub(crate) fn document(doc: &Value) -> Vec<u8> {
    let empty = Map::new();
    let m = doc.as_object().unwrap_or(&empty);
    let mut w = Writer::default();
    w.string(1, str_of(m, "swagger"));
    if let Some(info) = m.get("info").and_then(Value::as_object) {
        w.message(2, |i| {
            i.string(1, str_of(info, "title"));
            i.string(2, str_of(info, "version"));
            i.string(3, str_of(info, "description"));
            vendor_extensions(i, 7, info);
        });
    }
    w.string(3, str_of(m, "host"));
    w.string(4, str_of(m, "basePath"));
    strings(&mut w, 5, m.get("schemes"));
    strings(&mut w, 6, m.get("consumes"));
    strings(&mut w, 7, m.get("produces"));
    if let Some(paths) = m.get("paths").and_then(Value::as_object) {
        w.message(8, |p| {
            vendor_extensions(p, 1, paths);
            for (name, item) in paths.iter().filter(|(k, _)| !k.starts_with("x-")) {
                p.message(2, |n| {
                    n.string(1, name);
                    n.message(2, |i| path_item(i, item));
                });
            }
        });
    }
    if let Some(defs) = m.get("definitions").and_then(Value::as_object) {
        w.message(9, |d| named_schemas(d, 1, defs));
    }
    for requirement in m
        .get("security")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(req) = requirement.as_object() else {
            continue;
        };
        w.message(12, |s| {
            for (name, scopes) in req {
                s.message(1, |n| {
                    n.string(1, name);
                    n.message(2, |a| strings(a, 1, Some(scopes)));
                });
            }
        });
    }
    if let Some(defs) = m.get("securityDefinitions").and_then(Value::as_object) {
        w.message(13, |s| {
            for (name, def) in defs {
                let Some(d) = def.as_object() else { continue };
                s.message(1, |n| {
                    n.string(1, name);
                    n.message(2, |item| security_definition(item, d));
                });
            }
        });
    }
    vendor_extensions(&mut w, 16, m);
    w.buf
}

/// `SecurityDefinitionsItem`: basic (1) or API key (2); OAuth2 flows are not used here.
fn security_definition(w: &mut Writer, d: &Map<String, Value>) {
    match str_of(d, "type") {
        "basic" => w.message(1, |b| {
            b.string(1, "basic");
            b.string(2, str_of(d, "description"));
            vendor_extensions(b, 3, d);
        }),
        "apiKey" => w.message(2, |k| {
            k.string(1, "apiKey");
            k.string(2, str_of(d, "name"));
            k.string(3, str_of(d, "in"));
            k.string(4, str_of(d, "description"));
            vendor_extensions(k, 5, d);
        }),
        _ => {}
    }
}

fn path_item(w: &mut Writer, item: &Value) {
    let Some(m) = item.as_object() else { return };
    w.string(1, str_of(m, "$ref"));
    for (field, method) in [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (6, "options"),
        (7, "head"),
        (8, "patch"),
    ] {
        if let Some(op) = m.get(method).and_then(Value::as_object) {
            w.message(field, |o| operation(o, op));
        }
    }
    parameters(w, 9, m.get("parameters"));
    vendor_extensions(w, 10, m);
}

fn operation(w: &mut Writer, op: &Map<String, Value>) {
    strings(w, 1, op.get("tags"));
    w.string(2, str_of(op, "summary"));
    w.string(3, str_of(op, "description"));
    w.string(5, str_of(op, "operationId"));
    strings(w, 6, op.get("produces"));
    strings(w, 7, op.get("consumes"));
    parameters(w, 8, op.get("parameters"));
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        w.message(9, |r| {
            for (code, resp) in responses.iter().filter(|(k, _)| !k.starts_with("x-")) {
                let Some(resp) = resp.as_object() else {
                    continue;
                };
                r.message(1, |n| {
                    n.string(1, code);
                    n.message(2, |v| response_value(v, resp));
                });
            }
            vendor_extensions(r, 2, responses);
        });
    }
    strings(w, 10, op.get("schemes"));
    w.bool(11, bool_of(op, "deprecated"));
    vendor_extensions(w, 13, op);
}

/// `ResponseValue`: a `Response` (1) or a `JsonReference` (2).
fn response_value(w: &mut Writer, resp: &Map<String, Value>) {
    if let Some(r) = resp.get("$ref").and_then(Value::as_str) {
        w.message(2, |j| {
            j.string(1, r);
            j.string(2, str_of(resp, "description"));
        });
        return;
    }
    w.message(1, |r| {
        r.string(1, str_of(resp, "description"));
        if let Some(schema) = resp.get("schema") {
            // SchemaItem { schema = 1 }
            r.message(2, |s| s.message(1, |inner| self::schema(inner, schema)));
        }
        vendor_extensions(r, 5, resp);
    });
}

/// `repeated ParametersItem`: a `Parameter` (1) or a `JsonReference` (2).
fn parameters(w: &mut Writer, field: u64, params: Option<&Value>) {
    for p in params.and_then(Value::as_array).into_iter().flatten() {
        let Some(p) = p.as_object() else { continue };
        w.message(field, |item| {
            if let Some(r) = p.get("$ref").and_then(Value::as_str) {
                item.message(2, |j| {
                    j.string(1, r);
                    j.string(2, str_of(p, "description"));
                });
            } else {
                item.message(1, |param| parameter(param, p));
            }
        });
    }
}

/// `Parameter`: a `BodyParameter` (1) or a `NonBodyParameter` (2) holding the sub-schema of its
/// location: header (1), formData (2), query (3), path (4).
fn parameter(w: &mut Writer, p: &Map<String, Value>) {
    let location = str_of(p, "in");
    if location == "body" {
        w.message(1, |b| {
            b.string(1, str_of(p, "description"));
            b.string(2, str_of(p, "name"));
            b.string(3, location);
            b.bool(4, bool_of(p, "required"));
            if let Some(s) = p.get("schema") {
                b.message(5, |inner| schema(inner, s));
            }
            vendor_extensions(b, 6, p);
        });
        return;
    }
    let (which, allow_empty) = match location {
        "header" => (1, false),
        "formData" => (2, true),
        "query" => (3, true),
        "path" => (4, false),
        _ => return,
    };
    w.message(2, |nb| {
        nb.message(which, |s| {
            s.bool(1, bool_of(p, "required"));
            s.string(2, location);
            s.string(3, str_of(p, "description"));
            s.string(4, str_of(p, "name"));
            // Query and form parameters have `allow_empty_value = 5`, shifting what follows.
            let base = if allow_empty {
                s.bool(5, bool_of(p, "allowEmptyValue"));
                6
            } else {
                5
            };
            s.string(base, str_of(p, "type"));
            s.string(base + 1, str_of(p, "format"));
            s.string(base + 3, str_of(p, "collectionFormat"));
            if let Some(d) = p.get("default") {
                any(s, base + 4, d);
            }
            s.bool(base + 14, bool_of(p, "uniqueItems"));
            for e in p
                .get("enum")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                any(s, base + 15, e);
            }
            vendor_extensions(s, base + 17, p);
        });
    });
}

fn named_schemas(w: &mut Writer, field: u64, schemas: &Map<String, Value>) {
    for (name, s) in schemas {
        w.message(field, |n| {
            n.string(1, name);
            n.message(2, |inner| schema(inner, s));
        });
    }
}

/// `Schema`.
fn schema(w: &mut Writer, s: &Value) {
    let Some(m) = s.as_object() else { return };
    let int = |key: &str| m.get(key).and_then(Value::as_i64).unwrap_or(0);
    let float = |key: &str| m.get(key).and_then(Value::as_f64).unwrap_or(0.0);
    w.string(1, str_of(m, "$ref"));
    w.string(2, str_of(m, "format"));
    w.string(3, str_of(m, "title"));
    w.string(4, str_of(m, "description"));
    if let Some(d) = m.get("default") {
        any(w, 5, d);
    }
    w.double(6, float("multipleOf"));
    w.double(7, float("maximum"));
    w.bool(8, bool_of(m, "exclusiveMaximum"));
    w.double(9, float("minimum"));
    w.bool(10, bool_of(m, "exclusiveMinimum"));
    w.int64(11, int("maxLength"));
    w.int64(12, int("minLength"));
    w.string(13, str_of(m, "pattern"));
    w.int64(14, int("maxItems"));
    w.int64(15, int("minItems"));
    w.bool(16, bool_of(m, "uniqueItems"));
    w.int64(17, int("maxProperties"));
    w.int64(18, int("minProperties"));
    strings(w, 19, m.get("required"));
    for e in m
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        any(w, 20, e);
    }
    match m.get("additionalProperties") {
        Some(Value::Bool(b)) => w.message(21, |a| {
            // AdditionalPropertiesItem { boolean = 2 }: written even when false.
            a.key(2, VARINT);
            a.varint(u64::from(*b));
        }),
        Some(v @ Value::Object(_)) => w.message(21, |a| a.message(1, |inner| schema(inner, v))),
        _ => {}
    }
    match m.get("type") {
        Some(Value::String(t)) => w.message(22, |t_| t_.string(1, t)),
        Some(types @ Value::Array(_)) => w.message(22, |t_| strings(t_, 1, Some(types))),
        _ => {}
    }
    match m.get("items") {
        Some(v @ Value::Object(_)) => w.message(23, |i| i.message(1, |inner| schema(inner, v))),
        Some(Value::Array(items)) => w.message(23, |i| {
            for v in items {
                i.message(1, |inner| schema(inner, v));
            }
        }),
        _ => {}
    }
    for v in m
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        w.message(24, |inner| schema(inner, v));
    }
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        w.message(25, |p| named_schemas(p, 1, props));
    }
    w.string(26, str_of(m, "discriminator"));
    w.bool(27, bool_of(m, "readOnly"));
    if let Some(e) = m.get("example") {
        any(w, 30, e);
    }
    vendor_extensions(w, 31, m);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn varints_and_keys_follow_the_wire_format() {
        let mut w = Writer::default();
        w.varint(300);
        assert_eq!(w.buf, [0xac, 0x02]);
        let mut w = Writer::default();
        w.int64(11, -1);
        assert_eq!(w.buf.len(), 1 + 10, "negative int64 takes ten bytes");
        let mut w = Writer::default();
        w.string(1, "2.0");
        assert_eq!(w.buf, [0x0a, 3, b'2', b'.', b'0']);
    }

    #[test]
    fn a_small_document_encodes_as_gnostic_does() {
        let doc = json!({
            "swagger": "2.0",
            "definitions": {"A": {"type": "object", "x-k": {"a": 1},
                "properties": {"n": {"type": "integer", "format": "int32"}}}}
        });
        let got = document(&doc);
        // Document.swagger = 1
        let mut want = vec![0x0a, 3, b'2', b'.', b'0'];
        // NamedSchema { name = "n", value = Schema { format = "int32", type = ["integer"] } }
        let n_schema = [
            &[0x12, 5][..],
            b"int32",
            &[0xb2, 0x01, 9, 0x0a, 7],
            b"integer",
        ]
        .concat();
        let named_n = [&[0x0a, 1, b'n', 0x12, n_schema.len() as u8][..], &n_schema].concat();
        let props = [&[0x0a, named_n.len() as u8][..], &named_n].concat();
        // Schema A: type (22), properties (25), vendor extension (31)
        let ext_any = [&[0x12, 7][..], br#"{"a":1}"#].concat();
        let ext = [
            &[0x0a, 3][..],
            b"x-k",
            &[0x12, ext_any.len() as u8],
            &ext_any,
        ]
        .concat();
        let a_schema = [
            &[0xb2, 0x01, 8, 0x0a, 6][..],
            b"object",
            &[0xca, 0x01, props.len() as u8],
            &props,
            &[0xfa, 0x01, ext.len() as u8],
            &ext,
        ]
        .concat();
        let named_a = [&[0x0a, 1, b'A', 0x12, a_schema.len() as u8][..], &a_schema].concat();
        let definitions = [&[0x0a, named_a.len() as u8][..], &named_a].concat();
        want.extend_from_slice(&[0x4a, definitions.len() as u8]);
        want.extend_from_slice(&definitions);
        assert_eq!(got, want);
    }

    /// A field of a decoded message: varints and fixed64 as numbers, the rest as bytes.
    #[derive(Debug)]
    enum Field<'a> {
        Num(u64),
        Bytes(&'a [u8]),
    }

    fn decode(mut b: &[u8]) -> Vec<(u64, Field<'_>)> {
        fn varint(b: &mut &[u8]) -> u64 {
            let mut v = 0u64;
            for shift in (0..64).step_by(7) {
                let (byte, rest) = b.split_first().expect("truncated varint");
                *b = rest;
                v |= u64::from(byte & 0x7f) << shift;
                if byte & 0x80 == 0 {
                    break;
                }
            }
            v
        }
        let mut out = Vec::new();
        while !b.is_empty() {
            let key = varint(&mut b);
            let field = match key & 7 {
                VARINT => Field::Num(varint(&mut b)),
                FIXED64 => {
                    let (v, rest) = b.split_at(8);
                    b = rest;
                    Field::Num(u64::from_le_bytes(v.try_into().expect("8 bytes")))
                }
                LEN => {
                    let len = varint(&mut b) as usize;
                    let (v, rest) = b.split_at(len);
                    b = rest;
                    Field::Bytes(v)
                }
                other => panic!("unexpected wire type {other}"),
            };
            out.push((key >> 3, field));
        }
        out
    }

    fn messages(b: &[u8], field: u64) -> Vec<&[u8]> {
        decode(b)
            .into_iter()
            .filter(|(f, _)| *f == field)
            .map(|(_, v)| match v {
                Field::Bytes(b) => b,
                Field::Num(n) => panic!("field {field} is a number {n}"),
            })
            .collect()
    }

    fn text(b: &[u8], field: u64) -> String {
        messages(b, field)
            .first()
            .map(|v| String::from_utf8(v.to_vec()).expect("utf-8"))
            .unwrap_or_default()
    }

    /// `(name, value)` pairs of a repeated `Named*` field.
    fn named(b: &[u8], field: u64) -> Vec<(String, &[u8])> {
        messages(b, field)
            .into_iter()
            .map(|n| (text(n, 1), messages(n, 2).first().copied().unwrap_or(&[])))
            .collect()
    }

    #[test]
    fn the_served_document_decodes_back_to_its_json() {
        let json: Value = serde_json::from_slice(crate::openapi::v2()).expect("json");
        let pb = crate::openapi::v2_protobuf();
        assert_eq!(text(pb, 1), "2.0");

        let defs = named(messages(pb, 9)[0], 1);
        assert_eq!(
            defs.len(),
            json["definitions"].as_object().expect("defs").len()
        );
        let (_, deployment) = defs
            .iter()
            .find(|(n, _)| n == "io.k8s.api.apps.v1.Deployment")
            .expect("Deployment definition");
        let want = &json["definitions"]["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            text(deployment, 4),
            want["description"].as_str().expect("description")
        );
        assert_eq!(text(messages(deployment, 22)[0], 1), "object");
        let props: Vec<String> = named(messages(deployment, 25)[0], 1)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        let want_props: Vec<&String> = want["properties"]
            .as_object()
            .expect("props")
            .keys()
            .collect();
        assert_eq!(props.iter().collect::<Vec<_>>(), want_props);
        let ext = named(deployment, 31);
        let (_, gvk) = ext
            .iter()
            .find(|(n, _)| n == "x-kubernetes-group-version-kind")
            .expect("gvk extension");
        let yaml: Value = serde_json::from_str(&text(gvk, 2)).expect("extension value");
        assert_eq!(yaml, want["x-kubernetes-group-version-kind"]);

        // Every definition decodes, and every reference points at a definition.
        let names: std::collections::BTreeSet<&str> =
            defs.iter().map(|(n, _)| n.as_str()).collect();
        // What kube-openapi's `proto.NewOpenAPIData` refuses: several types, arrays without
        // exactly one item schema, references with a type or properties.
        fn refs(schema: &[u8], out: &mut Vec<String>) {
            let r = text(schema, 1);
            let types: Vec<&[u8]> = messages(schema, 22)
                .into_iter()
                .flat_map(|t| messages(t, 1))
                .collect();
            assert!(types.len() <= 1, "several types");
            if types == [b"array".as_slice()] {
                let items: Vec<&[u8]> = messages(schema, 23)
                    .into_iter()
                    .flat_map(|i| messages(i, 1))
                    .collect();
                assert_eq!(items.len(), 1, "array without one item schema");
            }
            if !r.is_empty() {
                assert!(
                    types.is_empty() && messages(schema, 25).is_empty(),
                    "{r} with a type"
                );
                out.push(r);
            }
            for props in messages(schema, 25) {
                for (_, s) in named(props, 1) {
                    refs(s, out);
                }
            }
            for items in messages(schema, 23) {
                for s in messages(items, 1) {
                    refs(s, out);
                }
            }
            for add in messages(schema, 21) {
                for s in messages(add, 1) {
                    refs(s, out);
                }
            }
        }
        let mut all = Vec::new();
        for (_, s) in &defs {
            refs(s, &mut all);
        }
        assert!(!all.is_empty());
        for r in all {
            let name = r.strip_prefix("#/definitions/").expect("v2 reference");
            assert!(names.contains(name), "unresolved {r}");
        }

        // kubectl's query param verifier: the Deployment PATCH operation takes fieldValidation.
        let paths = named(messages(pb, 8)[0], 2);
        let (_, item) = paths
            .iter()
            .find(|(n, _)| n == "/apis/apps/v1/namespaces/{namespace}/deployments/{name}")
            .expect("deployment path");
        let patch = messages(item, 8)[0];
        assert_eq!(text(patch, 5), "patchAppsV1NamespacedDeployment");
        let query_names: Vec<String> = messages(patch, 8)
            .into_iter()
            .flat_map(|item| messages(item, 1))
            .flat_map(|param| messages(param, 2))
            .flat_map(|non_body| messages(non_body, 3))
            .map(|query| text(query, 4))
            .collect();
        assert!(
            query_names.iter().any(|n| n == "fieldValidation"),
            "{query_names:?}"
        );
    }
}
