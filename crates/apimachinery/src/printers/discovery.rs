//! The EndpointSlice table (`printEndpointSlice`, with `formatDiscoveryPorts` and
//! `formatDiscoveryEndpoints`).

use jiff::Timestamp;
use serde_json::Value;

use super::{age, array_at, col, list_with_more, name, str_at, Column, Description, AGE, NAME};

const ENDPOINT_SLICE: &str = "io.k8s.api.discovery.v1.EndpointSlice";

/// EndpointSlice columns.
pub(super) const COLUMNS: &[Column] = &[
    NAME,
    col(
        "AddressType",
        "string",
        Description::Field(ENDPOINT_SLICE, "addressType"),
    ),
    col(
        "Ports",
        "string",
        Description::Field(ENDPOINT_SLICE, "ports"),
    ),
    col(
        "Endpoints",
        "string",
        Description::Field(ENDPOINT_SLICE, "endpoints"),
    ),
    AGE,
];

/// The cells of one EndpointSlice's row: up to three ports and three addresses each.
pub(super) fn cells(slice: &Value, now: Timestamp) -> Vec<Value> {
    let ports: Vec<String> = array_at(slice, "/ports")
        .iter()
        .map(
            |p| match (p.get("port").and_then(Value::as_i64), p.get("name")) {
                (Some(port), _) => port.to_string(),
                (None, Some(Value::String(name))) => name.clone(),
                _ => "*".to_string(),
            },
        )
        .collect();
    let addresses: Vec<String> = array_at(slice, "/endpoints")
        .iter()
        .flat_map(|e| array_at(e, "/addresses"))
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    vec![
        name(slice),
        str_at(slice, "/addressType").into(),
        list_with_more(&ports, 3).into(),
        list_with_more(&addresses, 3).into(),
        age(slice, now),
    ]
}
