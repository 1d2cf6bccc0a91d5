//! The PodDisruptionBudget table (`printPodDisruptionBudget`).

use jiff::Timestamp;
use serde_json::Value;

use super::{age, col, int_at, name, Column, Description, AGE, NAME};

/// PodDisruptionBudget columns.
pub(super) const COLUMNS: &[Column] = &[
    NAME,
    col(
        "Min Available",
        "string",
        Description::Text("The minimum number of pods that must be available."),
    ),
    col(
        "Max Unavailable",
        "string",
        Description::Text("The maximum number of pods that may be unavailable."),
    ),
    col(
        "Allowed Disruptions",
        "integer",
        Description::Text("Calculated number of pods that may be disrupted at this time."),
    ),
    AGE,
];

/// An `IntOrString`'s `String()`, or `N/A` when unset.
fn int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".to_string(),
    }
}

/// The cells of one PodDisruptionBudget's row.
pub(super) fn cells(pdb: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(pdb),
        int_or_string(pdb.pointer("/spec/minAvailable")).into(),
        int_or_string(pdb.pointer("/spec/maxUnavailable")).into(),
        int_at(pdb, "/status/disruptionsAllowed", 0).into(),
        age(pdb, now),
    ]
}
