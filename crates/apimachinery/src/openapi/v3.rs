//! OpenAPI v3 documents, one per group version (`/openapi/v3/apis/apps/v1`).

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use super::definitions::{self, REF_PREFIX};
use super::operations::{self, GroupVersion, Method, Operation, Param, PathItem};
use super::{PATCH_CONTENT_TYPES, RESPONSE_CONTENT_TYPES};
use crate::catalog::ResourceInfo;

/// The v3 document of one group version.
pub(crate) fn document(gv: &GroupVersion) -> Value {
    let items = operations::paths(gv.group, gv.version);
    let tag = operations::gv_tag(gv.group, gv.version);
    let mut roots = BTreeSet::new();
    let mut paths = Map::new();
    for item in &items {
        paths.insert(
            item.path.clone(),
            path_item(item, &tag, PATCH_CONTENT_TYPES, &mut roots),
        );
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": super::KUBE_VERSION},
        "paths": paths,
        "components": {
            "schemas": closure(roots, REF_PREFIX),
            "securitySchemes": {
                "BearerToken": {
                    "type": "apiKey",
                    "description": "Bearer Token authentication",
                    "name": "authorization",
                    "in": "header"
                }
            }
        },
        "security": [{"BearerToken": []}]
    })
}

/// Content types a custom resource's PATCH operations consume: no strategic merge patch, which
/// custom resources refuse with 415 (kube's CRD OpenAPI builder lists these; kubectl's
/// client-side `apply` reads them to choose a JSON merge patch).
const CUSTOM_RESOURCE_PATCH_CONTENT_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// The v3 document of a group version of custom resources: each resource's paths, its object
/// and list definitions from `schemas` (`(resource, definition name, definition)`), and the
/// built-in definitions they refer to.
pub(crate) fn custom_document(
    group: &str,
    version: &str,
    resources: &[(&'static ResourceInfo, String, Value)],
) -> Value {
    let tag = operations::gv_tag(group, version);
    let mut roots = BTreeSet::new();
    let mut paths = Map::new();
    let mut own = Map::new();
    for (info, def, schema) in resources {
        let list_def = format!("{def}List");
        let mut items = Vec::new();
        operations::resource_paths_with(info, def.clone(), list_def.clone(), &mut items);
        for item in &items {
            paths.insert(
                item.path.clone(),
                path_item(item, &tag, CUSTOM_RESOURCE_PATCH_CONTENT_TYPES, &mut roots),
            );
        }
        let mut refs = Vec::new();
        collect_refs(schema, REF_PREFIX, &mut refs);
        roots.extend(refs);
        own.insert(def.clone(), schema.clone());
        own.insert(
            list_def.clone(),
            json!({
                "description": format!("{}List is a list of {}", info.kind, info.kind),
                "type": "object",
                "required": ["items"],
                "properties": {
                    "apiVersion": {"type": "string"},
                    "items": {"type": "array", "items": {"$ref": format!("{REF_PREFIX}{def}")}},
                    "kind": {"type": "string"},
                    "metadata": {"$ref": format!("{REF_PREFIX}io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")},
                },
                "x-kubernetes-group-version-kind": [{"group": info.group, "kind": format!("{}List", info.kind), "version": info.version}],
            }),
        );
        roots.insert("io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta".to_string());
    }
    let mut schemas = closure(
        roots.into_iter().filter(|r| !own.contains_key(r)).collect(),
        REF_PREFIX,
    );
    schemas.extend(own);
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {
                    "type": "apiKey",
                    "description": "Bearer Token authentication",
                    "name": "authorization",
                    "in": "header"
                }
            }
        },
        "security": [{"BearerToken": []}]
    })
}

/// The definitions named in `roots` and every definition they refer to, transitively.
pub(crate) fn closure(roots: BTreeSet<String>, prefix: &str) -> Map<String, Value> {
    let defs = definitions::definitions();
    let mut seen = BTreeSet::new();
    let mut stack: Vec<String> = roots.into_iter().collect();
    while let Some(name) = stack.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(schema) = defs.get(&name) {
            collect_refs(schema, prefix, &mut stack);
        }
    }
    seen.into_iter()
        .filter_map(|name| defs.get(&name).map(|s| (name, s.clone())))
        .collect()
}

fn collect_refs(v: &Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(name) = m.get("$ref").and_then(Value::as_str).and_then(|r| {
                r.strip_prefix(REF_PREFIX)
                    .or_else(|| r.strip_prefix(prefix))
            }) {
                out.push(name.to_string());
            }
            m.values().for_each(|v| collect_refs(v, prefix, out));
        }
        Value::Array(a) => a.iter().for_each(|v| collect_refs(v, prefix, out)),
        _ => {}
    }
}

fn query_param(p: &Param) -> Value {
    json!({
        "name": p.name,
        "in": "query",
        "description": p.description,
        "schema": {"type": p.type_, "uniqueItems": true}
    })
}

fn path_params(item: &PathItem) -> Vec<Value> {
    let mut params = Vec::new();
    if let Some(kind) = item.name_of {
        params.push(json!({
            "name": "name", "in": "path", "description": format!("name of the {kind}"),
            "required": true, "schema": {"type": "string", "uniqueItems": true}
        }));
    }
    if item.namespaced {
        params.push(json!({
            "name": "namespace", "in": "path", "description": operations::NAMESPACE.description,
            "required": true, "schema": {"type": "string", "uniqueItems": true}
        }));
    }
    params.push(query_param(&operations::PRETTY));
    params
}

fn path_item(
    item: &PathItem,
    tag: &str,
    patch_types: &[&str],
    roots: &mut BTreeSet<String>,
) -> Value {
    let mut out = Map::new();
    for op in &item.operations {
        out.insert(
            op.method.key().to_string(),
            operation(op, tag, patch_types, roots),
        );
    }
    out.insert("parameters".into(), Value::Array(path_params(item)));
    Value::Object(out)
}

fn content(types: &[&str], definition: &str) -> Value {
    let schema = json!({"$ref": format!("{REF_PREFIX}{definition}")});
    Value::Object(
        types
            .iter()
            .map(|t| (t.to_string(), json!({"schema": schema})))
            .collect(),
    )
}

fn operation(
    op: &Operation,
    tag: &str,
    patch_types: &[&str],
    roots: &mut BTreeSet<String>,
) -> Value {
    let mut out = Map::new();
    out.insert("tags".into(), json!([tag]));
    out.insert("description".into(), op.description.clone().into());
    out.insert("operationId".into(), op.operation_id.clone().into());
    out.insert(
        "parameters".into(),
        Value::Array(op.query.iter().map(|p| query_param(p)).collect()),
    );
    if let Some(body) = &op.body {
        roots.insert(body.clone());
        let types: &[&str] = if op.method == Method::Patch {
            patch_types
        } else {
            &["*/*"]
        };
        out.insert(
            "requestBody".into(),
            json!({"content": content(types, body), "required": true}),
        );
    }
    roots.insert(op.response.clone());
    let ok = json!({"description": "OK", "content": content(RESPONSE_CONTENT_TYPES, &op.response)});
    let mut responses = Map::new();
    responses.insert("200".into(), ok);
    if op.creates {
        responses.insert(
            "201".into(),
            json!({"description": "Created", "content": content(RESPONSE_CONTENT_TYPES, &op.response)}),
        );
        responses.insert(
            "202".into(),
            json!({"description": "Accepted", "content": content(RESPONSE_CONTENT_TYPES, &op.response)}),
        );
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    out.insert("responses".into(), Value::Object(responses));
    out.insert("x-kubernetes-action".into(), op.action.into());
    let (group, version, kind) = op.gvk;
    out.insert(
        "x-kubernetes-group-version-kind".into(),
        json!({"group": group, "version": version, "kind": kind}),
    );
    Value::Object(out)
}
