//! The APIService table, as kube-aggregator's `REST.ConvertToTable` prints it.

use jiff::Timestamp;
use serde_json::Value;

use super::{age, array_at, col, name, str_at, Column, Description, AGE, NAME};

/// APIService columns.
pub(super) const COLUMNS: &[Column] = &[
    NAME,
    col(
        "Service",
        "string",
        Description::Text("The reference to the service that hosts this API endpoint."),
    ),
    col(
        "Available",
        "string",
        Description::Text("Whether this service is available."),
    ),
    AGE,
];

/// The cells of one APIService's row: `Local` for APIs the server serves itself, and the
/// `Available` condition with its reason unless it is true.
pub(super) fn cells(svc: &Value, now: Timestamp) -> Vec<Value> {
    let service = match svc.pointer("/spec/service").filter(|s| s.is_object()) {
        Some(s) => format!("{}/{}", str_at(s, "/namespace"), str_at(s, "/name")),
        None => "Local".to_string(),
    };
    let available = match array_at(svc, "/status/conditions")
        .iter()
        .find(|c| str_at(c, "/type") == "Available")
    {
        Some(c) => match (str_at(c, "/status"), str_at(c, "/reason")) {
            ("True", _) => "True".to_string(),
            (status, "") => status.to_string(),
            (status, reason) => format!("{status} ({reason})"),
        },
        None => "Unknown".to_string(),
    };
    vec![name(svc), service.into(), available.into(), age(svc, now)]
}
