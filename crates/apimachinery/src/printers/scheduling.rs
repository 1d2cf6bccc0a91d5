//! The PriorityClass table (`printPriorityClass`).

use jiff::Timestamp;
use serde_json::Value;

use super::{age, bool_at, col, int_at, name, str_at, Column, Description, AGE, NAME};

const PRIORITY_CLASS: &str = "io.k8s.api.scheduling.v1.PriorityClass";

/// PriorityClass columns. PreemptionPolicy is a default column in kube, not a wide one.
pub(super) const COLUMNS: &[Column] = &[
    NAME,
    col(
        "Value",
        "integer",
        Description::Field(PRIORITY_CLASS, "value"),
    ),
    col(
        "Global-Default",
        "boolean",
        Description::Field(PRIORITY_CLASS, "globalDefault"),
    ),
    AGE,
    col(
        "PreemptionPolicy",
        "string",
        Description::Field(PRIORITY_CLASS, "preemptionPolicy"),
    ),
];

/// The cells of one PriorityClass's row.
pub(super) fn cells(pc: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(pc),
        int_at(pc, "/value", 0).into(),
        bool_at(pc, "/globalDefault", false).into(),
        age(pc, now),
        str_at(pc, "/preemptionPolicy").into(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn priority_class_rows_match_kube() {
        // TestPrintPriorityClass, as the server prints it (wide).
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let pc1 = json!({"metadata":{"name":"pc1","creationTimestamp":"2026-01-01T00:00:01.9Z"},
            "value":1,"preemptionPolicy":"Never"});
        assert_eq!(
            Value::Array(cells(&pc1, now)),
            json!(["pc1", 1, false, "0s", "Never"])
        );
        let pc2 = json!({"metadata":{"name":"pc2","creationTimestamp":"2025-12-31T23:55:00Z"},
            "value":1000000000,"globalDefault":true});
        assert_eq!(
            Value::Array(cells(&pc2, now)),
            json!(["pc2", 1000000000, true, "5m", ""])
        );
        assert!(COLUMNS.iter().all(|c| c.priority == 0));
    }
}
