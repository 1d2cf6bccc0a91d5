//! `meta.k8s.io/v1` Table and `PartialObjectMetadata` renderings of objects.

use serde_json::{json, Value};

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::printers;

use crate::http::negotiate::IncludeObject;
use crate::rest::Resources;

/// `PartialObjectMetadata` of an object.
pub fn partial_metadata(obj: &Value) -> Value {
    printers::partial_object_metadata(obj)
}

/// A Table of `objects` with the kind's kubectl columns; `list_meta` becomes its `metadata`
/// (resourceVersion, continue).
pub fn table(
    resources: &dyn Resources,
    info: &ResourceInfo,
    objects: &[&Value],
    include: IncludeObject,
    list_meta: Value,
) -> Value {
    // Some kinds list in their own order (FlowSchemas by matching precedence).
    let mut objects = objects.to_vec();
    printers::sort_for_table(info, &mut objects);
    let (columns, mut rows) = resources.table(info, &objects, include == IncludeObject::Metadata);
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
