//! OpenAPI v3 documents of the served custom resources, as kube's CRD OpenAPI builder
//! (`pkg/controller/openapi/builder`) publishes them: one document per group version, listed
//! in the `/openapi/v3` index next to the built-in ones, so that `kubectl explain` and
//! kubectl's field-validation check see a kind as soon as its CRD is established. The same
//! paths and definitions are added to the `/openapi/v2` JSON document ([`v2`]).

use serde_json::{json, Map, Value};

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::openapi;

use super::served::{self, ServedVersion};

const OBJECT_META: &str = "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// `com.example.stable.v1.CronTab` for `stable.example.com/v1` `CronTab`.
pub fn definition_name(info: &ResourceInfo) -> String {
    let mut group: Vec<&str> = info.group.split('.').collect();
    group.reverse();
    format!("{}.{}.{}", group.join("."), info.version, info.kind)
}

/// The definition of one served version's kind: its schema with `apiVersion`, `kind` and
/// `metadata` described as for every kind, and its group-version-kind.
fn definition(v: &ServedVersion) -> Value {
    let mut schema = v
        .openapi_schema
        .clone()
        .unwrap_or_else(|| json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}));
    let Some(m) = schema.as_object_mut() else {
        return schema;
    };
    m.entry("type").or_insert_with(|| json!("object"));
    let props = m.entry("properties").or_insert_with(|| json!({}));
    if let Some(p) = props.as_object_mut() {
        p.insert(
            "apiVersion".into(),
            json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"}),
        );
        p.insert(
            "kind".into(),
            json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"}),
        );
        p.insert(
            "metadata".into(),
            json!({"allOf": [{"$ref": OBJECT_META}], "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"}),
        );
    }
    m.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([{"group": v.info.group, "kind": v.info.kind, "version": v.info.version}]),
    );
    schema
}

fn served_in(group: &str, version: &str) -> Vec<std::sync::Arc<ServedVersion>> {
    served::all()
        .into_iter()
        .filter(|v| v.info.group == group && v.info.version == version)
        .collect()
}

/// The v3 document at `path` (`apis/<group>/<version>`, optionally with `/openapi/v3/` in
/// front) when it is a group version of custom resources.
pub fn v3_document(path: &str) -> Option<Vec<u8>> {
    let path = path.split('?').next().unwrap_or_default();
    let path = path.trim_start_matches('/');
    let path = path.strip_prefix("openapi/v3/").unwrap_or(path);
    let rest = path.trim_end_matches('/').strip_prefix("apis/")?;
    let (group, version) = rest.split_once('/')?;
    let versions = served_in(group, version);
    if versions.is_empty() {
        return None;
    }
    let resources: Vec<(&'static ResourceInfo, String, Value)> = versions
        .iter()
        .map(|v| (v.info, definition_name(v.info), definition(v)))
        .collect();
    Some(openapi::custom_resource_v3_document(
        group, version, &resources,
    ))
}

/// The `/openapi/v3` index `builtin` with the group versions of custom resources added.
pub fn v3_index(builtin: &[u8]) -> Vec<u8> {
    let mut gvs: Vec<(String, String)> = Vec::new();
    for v in served::all() {
        let gv = (v.info.group.to_string(), v.info.version.to_string());
        if !gvs.contains(&gv) {
            gvs.push(gv);
        }
    }
    if gvs.is_empty() {
        return builtin.to_vec();
    }
    let Ok(mut index) = serde_json::from_slice::<Value>(builtin) else {
        return builtin.to_vec();
    };
    let mut added = Map::new();
    for (g, v) in gvs {
        let key = format!("apis/{g}/{v}");
        if let Some(doc) = v3_document(&key) {
            let hash = openapi::hash(&doc);
            added.insert(
                key.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash}")}),
            );
        }
    }
    if let Some(paths) = index.get_mut("paths").and_then(Value::as_object_mut) {
        paths.extend(added);
    }
    serde_json::to_vec(&index).unwrap_or_else(|_| builtin.to_vec())
}

/// `v` with every `#/components/schemas/` reference pointing at `#/definitions/` instead.
fn v2_refs(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref") {
                if let Some(name) = r.strip_prefix("#/components/schemas/") {
                    *r = format!("#/definitions/{name}");
                }
            }
            m.values_mut().for_each(v2_refs);
        }
        Value::Array(a) => a.iter_mut().for_each(v2_refs),
        _ => {}
    }
}

/// A v3 parameter as swagger 2.0 writes it (`type` beside `in`, not in a `schema`).
fn v2_parameter(p: &Value) -> Value {
    let mut out = p.clone();
    if let Some(m) = out.as_object_mut() {
        if let Some(Value::Object(schema)) = m.remove("schema") {
            m.extend(schema);
        }
    }
    out
}

/// A v3 operation as swagger 2.0 writes it: a `body` parameter for the request body,
/// `consumes`/`produces`, and responses with a `schema`.
fn v2_operation(op: &Value) -> Value {
    let mut out = op.clone();
    let Some(m) = out.as_object_mut() else {
        return out;
    };
    let mut params: Vec<Value> = m
        .get("parameters")
        .and_then(Value::as_array)
        .map(|p| p.iter().map(v2_parameter).collect())
        .unwrap_or_default();
    if let Some(body) = m.remove("requestBody") {
        let content = body.get("content").and_then(Value::as_object);
        let consumes: Vec<&String> = content.map(|c| c.keys().collect()).unwrap_or_default();
        m.insert("consumes".into(), json!(consumes));
        let schema = content
            .and_then(|c| c.values().next())
            .and_then(|c| c.get("schema"))
            .cloned()
            .unwrap_or(Value::Null);
        params.insert(
            0,
            json!({"name": "body", "in": "body", "required": true, "schema": schema}),
        );
    }
    m.insert("parameters".into(), Value::Array(params));
    if let Some(Value::Object(responses)) = m.get_mut("responses") {
        for r in responses.values_mut() {
            let Some(r) = r.as_object_mut() else {
                continue;
            };
            if let Some(Value::Object(content)) = r.remove("content") {
                if let Some(schema) = content.values().next().and_then(|c| c.get("schema")) {
                    r.insert("schema".into(), schema.clone());
                }
            }
        }
    }
    m.insert(
        "produces".into(),
        json!(["application/json", "application/yaml"]),
    );
    m.insert("schemes".into(), json!(["https"]));
    out
}

/// The `/openapi/v2` document `builtin` with the custom resources' paths and definitions
/// added; `None` while no custom resource is served (the built-in document is served as is).
pub fn v2(builtin: &[u8]) -> Option<Vec<u8>> {
    let mut gvs: Vec<(String, String)> = Vec::new();
    for v in served::all() {
        let gv = (v.info.group.to_string(), v.info.version.to_string());
        if !gvs.contains(&gv) {
            gvs.push(gv);
        }
    }
    if gvs.is_empty() {
        return None;
    }
    let mut doc: Value = serde_json::from_slice(builtin).ok()?;
    for (g, v) in gvs {
        let Some(v3) = v3_document(&format!("apis/{g}/{v}"))
            .and_then(|d| serde_json::from_slice::<Value>(&d).ok())
        else {
            continue;
        };
        let mut v3 = v3;
        v2_refs(&mut v3);
        if let (Some(defs), Some(schemas)) = (
            doc.get_mut("definitions").and_then(Value::as_object_mut),
            v3.pointer("/components/schemas").and_then(Value::as_object),
        ) {
            for (name, schema) in schemas {
                defs.entry(name.clone()).or_insert_with(|| schema.clone());
            }
        }
        if let (Some(paths), Some(new)) = (
            doc.get_mut("paths").and_then(Value::as_object_mut),
            v3.get("paths").and_then(Value::as_object),
        ) {
            for (path, item) in new {
                let Some(item) = item.as_object() else {
                    continue;
                };
                let converted: Map<String, Value> = item
                    .iter()
                    .map(|(k, op)| {
                        let op = if k == "parameters" {
                            Value::Array(
                                op.as_array()
                                    .map(|p| p.iter().map(v2_parameter).collect())
                                    .unwrap_or_default(),
                            )
                        } else {
                            v2_operation(op)
                        };
                        (k.clone(), op)
                    })
                    .collect();
                paths.insert(path.clone(), Value::Object(converted));
            }
        }
    }
    serde_json::to_vec(&doc).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_are_named_by_the_reversed_group() {
        let info = rkcm_apimachinery::custom_resources::intern(
            &rkcm_apimachinery::custom_resources::CustomResource {
                group: "stable.example.com".into(),
                version: "v1".into(),
                kind: "CronTab".into(),
                plural: "crontabs".into(),
                singular: "crontab".into(),
                namespaced: true,
                ..Default::default()
            },
        );
        assert_eq!(definition_name(info), "com.example.stable.v1.CronTab");
    }
}
