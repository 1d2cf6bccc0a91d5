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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn endpoint_slice_rows_match_kube() {
        // TestPrintEndpointSlice.
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let one = json!({"metadata":{"name":"abcslice.123","creationTimestamp":"2026-01-01T00:00:01.9Z"},
            "addressType":"IPv4","ports":[{"name":"http","port":80,"protocol":"TCP"}],
            "endpoints":[{"addresses":["10.1.2.3","2001:db8::1234:5678"]}]});
        assert_eq!(
            Value::Array(cells(&one, now)),
            json!([
                "abcslice.123",
                "IPv4",
                "80",
                "10.1.2.3,2001:db8::1234:5678",
                "0s"
            ])
        );
        let many = json!({"metadata":{"name":"multiportslice.123","creationTimestamp":"2025-12-31T23:55:00Z"},
            "addressType":"IPv4",
            "ports":[{"name":"http","port":80},{"name":"https","port":443},
                {"name":"extra1","port":3000},{"name":"extra2","port":3001}],
            "endpoints":[{"addresses":["10.1.2.3","2001:db8::1234:5678"]},
                {"addresses":["10.2.3.4","2001:db8::2345:6789"]}]});
        assert_eq!(
            Value::Array(cells(&many, now)),
            json!([
                "multiportslice.123",
                "IPv4",
                "80,443,3000 + 1 more...",
                "10.1.2.3,2001:db8::1234:5678,10.2.3.4 + 1 more...",
                "5m"
            ])
        );
        let bare = json!({"metadata":{"name":"s"},"addressType":"FQDN",
            "ports":[{"name":"dns"},{}]});
        assert_eq!(
            Value::Array(cells(&bare, now)),
            json!(["s", "FQDN", "dns,*", "<unset>", "<unknown>"])
        );
    }
}
