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
