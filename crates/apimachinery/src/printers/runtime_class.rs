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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn runtime_class_rows_match_kube() {
        // TestPrintRuntimeClass.
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let rc1 = json!({"metadata":{"name":"rc1","creationTimestamp":"2026-01-01T00:00:01.9Z"},
            "handler":"h1"});
        assert_eq!(Value::Array(cells(&rc1, now)), json!(["rc1", "h1", "0s"]));
        let rc2 = json!({"metadata":{"name":"rc2","creationTimestamp":"2025-12-31T23:55:00Z"},
            "handler":"h2"});
        assert_eq!(Value::Array(cells(&rc2, now)), json!(["rc2", "h2", "5m"]));
    }
}
