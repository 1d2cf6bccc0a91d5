//! The RuntimeClass table (`printRuntimeClass`).

use jiff::Timestamp;
use serde_json::Value;

use super::{age, col, name, str_at, Column, Description, AGE, NAME, OBJECT_META};

/// RuntimeClass columns. kube takes the Handler description from `ObjectMeta`, which has no
/// `handler` field, so it is empty.
pub(super) const COLUMNS: &[Column] = &[
    NAME,
    col(
        "Handler",
        "string",
        Description::Field(OBJECT_META, "handler"),
    ),
    AGE,
];

/// The cells of one RuntimeClass's row.
pub(super) fn cells(rc: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(rc), str_at(rc, "/handler").into(), age(rc, now)]
}
