//! The OpenAPI v2 (swagger 2.0) document of every served resource (`/openapi/v2`).
//!
//! Built from the same operations and definitions as v3; schemas are rewritten to v2 form:
//! `#/definitions/<name>` references, and a `$ref` wrapped in `allOf` to carry a description
//! becomes a `$ref` with sibling keys, as kube's v2 document has them.

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use super::definitions::REF_PREFIX;
use super::operations::{self, Method, Operation, Param, PathItem};
use super::{PATCH_CONTENT_TYPES, RESPONSE_CONTENT_TYPES};

const V2_PREFIX: &str = "#/definitions/";

/// The v2 document.
pub(crate) fn document() -> Value {
    let mut roots = BTreeSet::new();
    let mut paths = Map::new();
    for gv in operations::group_versions() {
        let tag = operations::gv_tag(gv.group, gv.version);
        for item in operations::paths(gv.group, gv.version) {
            paths.insert(item.path.clone(), path_item(&item, &tag, &mut roots));
        }
    }
    let definitions: Map<String, Value> = super::v3::closure(roots, REF_PREFIX)
        .into_iter()
        .map(|(name, schema)| (name, to_v2(schema)))
        .collect();
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": super::KUBE_VERSION},
        "paths": paths,
        "definitions": definitions,
        "securityDefinitions": {
            "BearerToken": {
                "description": "Bearer Token authentication",
                "type": "apiKey",
                "name": "authorization",
                "in": "header"
            }
        },
        "security": [{"BearerToken": []}]
    })
}

/// Rewrites a v3 schema to v2: references and `allOf` wrappers; `nullable` has no v2 form.
fn to_v2(schema: Value) -> Value {
    match schema {
        Value::Object(mut m) => {
            if let Some(Value::Array(all_of)) = m.get("allOf") {
                if let [Value::Object(inner)] = all_of.as_slice() {
                    if inner.len() == 1 && inner.contains_key("$ref") {
                        let inner = inner.clone();
                        m.shift_remove("allOf");
                        m.extend(inner);
                    }
                }
            }
            m.shift_remove("nullable");
            Value::Object(
                m.into_iter()
                    .map(|(k, v)| {
                        let v = match (k.as_str(), v) {
                            ("$ref", Value::String(r)) => Value::String(
                                r.strip_prefix(REF_PREFIX)
                                    .map(|n| format!("{V2_PREFIX}{n}"))
                                    .unwrap_or(r),
                            ),
                            (_, v) => to_v2(v),
                        };
                        (k, v)
                    })
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.into_iter().map(to_v2).collect()),
        v => v,
    }
}

fn query_param(p: &Param) -> Value {
    json!({"uniqueItems": true, "type": p.type_, "description": p.description, "name": p.name, "in": "query"})
}

fn path_item(item: &PathItem, tag: &str, roots: &mut BTreeSet<String>) -> Value {
    let mut out = Map::new();
    for op in &item.operations {
        out.insert(op.method.key().to_string(), operation(op, tag, roots));
    }
    let mut params = Vec::new();
    if let Some(kind) = item.name_of {
        params.push(json!({"uniqueItems": true, "type": "string", "description": format!("name of the {kind}"),
            "name": "name", "in": "path", "required": true}));
    }
    if item.namespaced {
        params.push(json!({"uniqueItems": true, "type": "string", "description": operations::NAMESPACE.description,
            "name": "namespace", "in": "path", "required": true}));
    }
    params.push(query_param(&operations::PRETTY));
    out.insert("parameters".into(), Value::Array(params));
    Value::Object(out)
}

fn operation(op: &Operation, tag: &str, roots: &mut BTreeSet<String>) -> Value {
    let mut params = Vec::new();
    if let Some(body) = &op.body {
        roots.insert(body.clone());
        params.push(json!({"name": "body", "in": "body", "required": true,
            "schema": {"$ref": format!("{V2_PREFIX}{body}")}}));
    }
    params.extend(op.query.iter().map(|p| query_param(p)));
    roots.insert(op.response.clone());
    let schema = json!({"$ref": format!("{V2_PREFIX}{}", op.response)});
    let mut responses = Map::new();
    responses.insert("200".into(), json!({"description": "OK", "schema": schema}));
    if op.creates {
        responses.insert(
            "201".into(),
            json!({"description": "Created", "schema": schema}),
        );
        responses.insert(
            "202".into(),
            json!({"description": "Accepted", "schema": schema}),
        );
    }
    responses.insert("401".into(), json!({"description": "Unauthorized"}));
    let consumes: &[&str] = if op.method == Method::Patch {
        PATCH_CONTENT_TYPES
    } else {
        &["*/*"]
    };
    let (group, version, kind) = op.gvk;
    json!({
        "description": op.description,
        "consumes": consumes,
        "produces": RESPONSE_CONTENT_TYPES,
        "schemes": ["https"],
        "tags": [tag],
        "operationId": op.operation_id,
        "parameters": params,
        "responses": responses,
        "x-kubernetes-action": op.action,
        "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": kind}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_of_wrappers_become_refs_with_siblings() {
        let v3 =
            json!({"description":"d","allOf":[{"$ref":"#/components/schemas/X"}],"nullable":true});
        assert_eq!(
            to_v2(v3),
            json!({"description":"d","$ref":"#/definitions/X"})
        );
    }
}
