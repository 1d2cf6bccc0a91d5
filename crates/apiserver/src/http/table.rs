//! `meta.k8s.io/v1` Table and `PartialObjectMetadata` renderings of objects.

use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::printers;

use crate::http::negotiate::IncludeObject;

/// `PartialObjectMetadata` of an object.
pub fn partial_metadata(obj: &Value) -> Value {
    printers::partial_object_metadata(obj)
}

/// The columns and rows of a table of custom resources (their `additionalPrinterColumns`).
fn custom_resource_table(
    custom: &crate::crd::served::ServedVersion,
    objects: &[&Value],
    include: IncludeObject,
) -> (Vec<Value>, Vec<Value>) {
    let (columns, cells) =
        crate::crd::printers::table(&custom.columns, objects, jiff::Timestamp::now());
    let rows = cells
        .into_iter()
        .zip(objects)
        .map(|(cells, obj)| {
            let mut row = json!({"cells": cells});
            if include == IncludeObject::Metadata {
                row["object"] = partial_metadata(obj);
            }
            row
        })
        .collect();
    (columns, rows)
}

/// A Table of `objects` with the kind's kubectl columns; `list_meta` becomes its `metadata`
/// (resourceVersion, continue).
pub fn table(
    info: &ResourceInfo,
    objects: &[&Value],
    include: IncludeObject,
    list_meta: Value,
) -> Value {
    // Some kinds list in their own order (FlowSchemas by matching precedence).
    let mut objects = objects.to_vec();
    printers::sort_for_table(info, &mut objects);
    let (columns, mut rows) = match crate::crd::served::lookup(info) {
        Some(custom) => custom_resource_table(&custom, &objects, include),
        None => printers::table(
            info,
            &objects,
            jiff::Timestamp::now(),
            include == IncludeObject::Metadata,
        ),
    };
    if include == IncludeObject::Object {
        for (row, obj) in rows.iter_mut().zip(&objects) {
            row["object"] = (*obj).clone();
        }
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": columns,
        "rows": rows,
    })
}
