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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn local_and_available_api_service() {
        let local = json!({"metadata":{"name":"v1.apps","creationTimestamp":"2025-12-31T23:55:00Z"},
            "spec":{"group":"apps","version":"v1"},
            "status":{"conditions":[{"type":"Available","status":"True","reason":"Local"}]}});
        assert_eq!(
            Value::Array(cells(&local, now())),
            json!(["v1.apps", "Local", "True", "5m"])
        );
    }

    #[test]
    fn aggregated_api_service_shows_why_it_is_unavailable() {
        let svc = json!({"metadata":{"name":"v1beta1.metrics.k8s.io"},
            "spec":{"service":{"namespace":"kube-system","name":"metrics-server"}},
            "status":{"conditions":[{"type":"Available","status":"False",
                "reason":"MissingEndpoints"}]}});
        assert_eq!(
            Value::Array(cells(&svc, now())),
            json!([
                "v1beta1.metrics.k8s.io",
                "kube-system/metrics-server",
                "False (MissingEndpoints)",
                "<unknown>"
            ])
        );
        let no_reason = json!({"metadata":{"name":"x"},"spec":{"service":{"namespace":"ns","name":"s"}},
            "status":{"conditions":[{"type":"Available","status":"Unknown"}]}});
        assert_eq!(cells(&no_reason, now())[2], "Unknown");
        let no_status = json!({"metadata":{"name":"y"},"spec":{}});
        assert_eq!(cells(&no_status, now())[2], "Unknown");
    }
}
