//! OpenAPI v3 documents of the served custom resources, as kube's CRD OpenAPI builder
//! (`pkg/controller/openapi/builder`) publishes them: one document per group version, listed
//! in the `/openapi/v3` index next to the built-in ones, so that `kubectl explain` and
//! kubectl's field-validation check see a kind as soon as its CRD is established.

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
