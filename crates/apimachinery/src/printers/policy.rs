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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pod_disruption_budget_rows_match_kube() {
        // TestPrintPodDisruptionBudget.
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let min = json!({"metadata":{"namespace":"ns1","name":"pdb1",
                "creationTimestamp":"2026-01-01T00:00:01.9Z"},
            "spec":{"minAvailable":22},"status":{"disruptionsAllowed":5}});
        assert_eq!(
            Value::Array(cells(&min, now)),
            json!(["pdb1", "22", "N/A", 5, "0s"])
        );
        let max = json!({"metadata":{"name":"pdb2"},
            "spec":{"maxUnavailable":"10%"},"status":{"disruptionsAllowed":3}});
        assert_eq!(
            Value::Array(cells(&max, now)),
            json!(["pdb2", "N/A", "10%", 3, "<unknown>"])
        );
    }
}
