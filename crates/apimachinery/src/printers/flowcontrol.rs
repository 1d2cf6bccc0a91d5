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
