//! API priority and fairness tables: FlowSchema and PriorityLevelConfiguration
//! (`printFlowSchema`, `printPriorityLevelConfiguration`).

use jiff::Timestamp;
use serde_json::Value;

use super::{age, array_at, col, int_at, name, str_at, Column, Description, AGE, NAME};

const FLOW_SCHEMA_SPEC: &str = "io.k8s.api.flowcontrol.v1.FlowSchemaSpec";

/// FlowSchema columns.
pub(super) const FLOW_SCHEMA_COLUMNS: &[Column] = &[
    NAME,
    col(
        "PriorityLevel",
        "string",
        Description::Field(
            "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationReference",
            "name",
        ),
    ),
    col(
        "MatchingPrecedence",
        "string",
        Description::Field(FLOW_SCHEMA_SPEC, "matchingPrecedence"),
    ),
    col(
        "DistinguisherMethod",
        "string",
        Description::Field(FLOW_SCHEMA_SPEC, "distinguisherMethod"),
    ),
    AGE,
    col(
        "MissingPL",
        "string",
        Description::Text("references a broken or non-existent PriorityLevelConfiguration"),
    ),
];

/// The cells of one FlowSchema's row; MissingPL is the status of the `Dangling` condition, or
/// `?` before the API server has judged the reference.
pub(super) fn flow_schema_cells(fs: &Value, now: Timestamp) -> Vec<Value> {
    let distinguisher = fs
        .pointer("/spec/distinguisherMethod")
        .filter(|d| d.is_object())
        .map_or("<none>", |d| str_at(d, "/type"));
    let dangling = array_at(fs, "/status/conditions")
        .iter()
        .find(|c| str_at(c, "/type") == "Dangling")
        .map_or("?", |c| str_at(c, "/status"));
    vec![
        name(fs),
        str_at(fs, "/spec/priorityLevelConfiguration/name").into(),
        int_at(fs, "/spec/matchingPrecedence", 0).into(),
        distinguisher.into(),
        age(fs, now),
        dangling.into(),
    ]
}

const QUEUING: &str = "io.k8s.api.flowcontrol.v1.QueuingConfiguration";

/// PriorityLevelConfiguration columns.
pub(super) const PRIORITY_LEVEL_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Type",
        "string",
        Description::Field(
            "io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationSpec",
            "type",
        ),
    ),
    col(
        "NominalConcurrencyShares",
        "string",
        Description::Field(
            "io.k8s.api.flowcontrol.v1.LimitedPriorityLevelConfiguration",
            "nominalConcurrencyShares",
        ),
    ),
    col("Queues", "string", Description::Field(QUEUING, "queues")),
    col(
        "HandSize",
        "string",
        Description::Field(QUEUING, "handSize"),
    ),
    col(
        "QueueLengthLimit",
        "string",
        Description::Field(QUEUING, "queueLengthLimit"),
    ),
    AGE,
];

/// The cells of one PriorityLevelConfiguration's row: numbers for a limited level, `<none>`
/// where a field does not apply.
pub(super) fn priority_level_cells(pl: &Value, now: Timestamp) -> Vec<Value> {
    let none = || Value::from("<none>");
    let limited = pl.pointer("/spec/limited").filter(|l| l.is_object());
    let queuing = limited
        .and_then(|l| l.pointer("/limitResponse/queuing"))
        .filter(|q| q.is_object());
    let queuing_field = |field: &str| queuing.map_or_else(none, |q| int_at(q, field, 0).into());
    vec![
        name(pl),
        str_at(pl, "/spec/type").into(),
        limited.map_or_else(none, |l| int_at(l, "/nominalConcurrencyShares", 0).into()),
        queuing_field("/queues"),
        queuing_field("/handSize"),
        queuing_field("/queueLengthLimit"),
        age(pl, now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn flow_schema_rows_match_kube() {
        // TestPrintFlowSchema.
        let all = json!({"metadata":{"name":"all-matcher","creationTimestamp":"2026-01-01T00:00:01.9Z"},
            "spec":{"priorityLevelConfiguration":{"name":"allee"},"matchingPrecedence":2147483647,
                "distinguisherMethod":{"type":"ByUser"}}});
        assert_eq!(
            Value::Array(flow_schema_cells(&all, now())),
            json!(["all-matcher", "allee", 2147483647, "ByUser", "0s", "?"])
        );
        let dangling = json!({"metadata":{"name":"some-matcher","creationTimestamp":"2025-12-31T23:55:00Z"},
            "spec":{"priorityLevelConfiguration":{"name":"allee"},"matchingPrecedence":0,
                "distinguisherMethod":{"type":"ByNamespace"}},
            "status":{"conditions":[{"type":"Dangling","status":"True"}]}});
        assert_eq!(
            Value::Array(flow_schema_cells(&dangling, now())),
            json!(["some-matcher", "allee", 0, "ByNamespace", "5m", "True"])
        );
        let exempt = json!({"metadata":{"name":"exempt","creationTimestamp":"2025-12-31T23:55:00Z"},
            "spec":{"priorityLevelConfiguration":{"name":"allee"},"matchingPrecedence":0}});
        assert_eq!(
            Value::Array(flow_schema_cells(&exempt, now())),
            json!(["exempt", "allee", 0, "<none>", "5m", "?"])
        );
    }

    #[test]
    fn priority_level_configuration_rows_match_kube() {
        // TestPrintPriorityLevelConfiguration.
        let exempt = json!({"metadata":{"name":"unlimited","creationTimestamp":"2026-01-01T00:00:01.9Z"},
            "spec":{"type":"Exempt"}});
        assert_eq!(
            Value::Array(priority_level_cells(&exempt, now())),
            json!([
                "unlimited",
                "Exempt",
                "<none>",
                "<none>",
                "<none>",
                "<none>",
                "0s"
            ])
        );
        let unqueued = json!({"metadata":{"name":"unqueued","creationTimestamp":"2026-01-01T00:00:01.9Z"},
            "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":47,
                "limitResponse":{"type":"Reject"}}}});
        assert_eq!(
            Value::Array(priority_level_cells(&unqueued, now())),
            json!(["unqueued", "Limited", 47, "<none>", "<none>", "<none>", "0s"])
        );
        let queued = json!({"metadata":{"name":"queued","creationTimestamp":"2026-01-01T00:00:01.9Z"},
            "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":42,
                "limitResponse":{"type":"Queue",
                    "queuing":{"queues":8,"handSize":3,"queueLengthLimit":4}}}}});
        assert_eq!(
            Value::Array(priority_level_cells(&queued, now())),
            json!(["queued", "Limited", 42, 8, 3, 4, "0s"])
        );
    }
}
