//! `meta.k8s.io/v1` Table and `PartialObjectMetadata` renderings of objects.

use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;

use crate::http::negotiate::IncludeObject;

/// `PartialObjectMetadata` of an object.
pub fn partial_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Columns and rows for `objects` (without the `object` of each row), using the kind's printer.
fn columns_and_cells(_info: &ResourceInfo, objects: &[&Value]) -> (Vec<Value>, Vec<Vec<Value>>) {
    // TODO: use rkcm_apimachinery::printers for the kubectl columns of each kind once it lands;
    // until then every kind gets kube's default table (`rest.NewDefaultTableConvertor`).
    let columns = vec![
        json!({"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names", "priority": 0}),
        json!({"name": "Created At", "type": "date", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata", "priority": 0}),
    ];
    let cells = objects
        .iter()
        .map(|o| {
            vec![
                o.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
                o.pointer("/metadata/creationTimestamp")
                    .cloned()
                    .unwrap_or(Value::Null),
            ]
        })
        .collect();
    (columns, cells)
}

/// A Table of `objects`; `list_meta` becomes its `metadata` (resourceVersion, continue).
pub fn table(
    info: &ResourceInfo,
    objects: &[&Value],
    include: IncludeObject,
    list_meta: Value,
) -> Value {
    let (columns, cells) = columns_and_cells(info, objects);
    let rows: Vec<Value> = objects
        .iter()
        .zip(cells)
        .map(|(o, cells)| {
            let mut row = json!({"cells": cells});
            match include {
                IncludeObject::None => {}
                IncludeObject::Metadata => row["object"] = partial_metadata(o),
                IncludeObject::Object => row["object"] = (*o).clone(),
            }
            row
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": columns,
        "rows": rows,
    })
}
