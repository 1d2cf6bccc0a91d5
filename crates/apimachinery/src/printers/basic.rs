//! Small tables: Namespace, ConfigMap, Lease, and the default (Name, Created At) table.

use jiff::Timestamp;
use serde_json::Value;

use super::{age, col, name, str_at, Column, Description, AGE, NAME, OBJECT_META};

/// Namespace columns.
pub(super) const NAMESPACE_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Status",
        "string",
        Description::Text("The status of the namespace"),
    ),
    AGE,
];

/// The cells of one namespace's row.
pub(super) fn namespace_cells(ns: &Value, now: Timestamp) -> Vec<Value> {
    vec![name(ns), str_at(ns, "/status/phase").into(), age(ns, now)]
}

/// ConfigMap columns.
pub(super) const CONFIG_MAP_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Data",
        "string",
        Description::Field("io.k8s.api.core.v1.ConfigMap", "data"),
    ),
    AGE,
];

/// The cells of one ConfigMap's row: the number of keys in `data` and `binaryData`.
pub(super) fn config_map_cells(cm: &Value, now: Timestamp) -> Vec<Value> {
    let len = |key: &str| {
        cm.get(key)
            .and_then(Value::as_object)
            .map_or(0, |m| m.len())
    };
    let data = (len("data") + len("binaryData")) as i64;
    vec![name(cm), data.into(), age(cm, now)]
}

/// Lease columns.
pub(super) const LEASE_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Holder",
        "string",
        Description::Field("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity"),
    ),
    AGE,
];

/// The cells of one lease's row.
pub(super) fn lease_cells(lease: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        name(lease),
        str_at(lease, "/spec/holderIdentity").into(),
        age(lease, now),
    ]
}

/// Columns of the default table (`rest.NewDefaultTableConvertor`).
pub(super) const DEFAULT_COLUMNS: &[Column] = &[
    NAME,
    Column {
        name: "Created At",
        type_: "date",
        format: "",
        description: Description::Field(OBJECT_META, "creationTimestamp"),
        priority: 0,
    },
];

/// The cells of the default table: name and creation time in RFC 3339.
pub(super) fn default_cells(obj: &Value, _now: Timestamp) -> Vec<Value> {
    vec![name(obj), str_at(obj, "/metadata/creationTimestamp").into()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn small_tables() {
        let now: Timestamp = "2026-01-01T00:00:30Z".parse().unwrap();
        let ns = json!({"metadata":{"name":"default","creationTimestamp":"2026-01-01T00:00:00Z"},
            "status":{"phase":"Active"}});
        assert_eq!(
            Value::Array(namespace_cells(&ns, now)),
            json!(["default", "Active", "30s"])
        );
        let cm = json!({"metadata":{"name":"c"},"data":{"a":"1","b":"2"},"binaryData":{"c":""}});
        assert_eq!(config_map_cells(&cm, now)[1], 3);
        let lease = json!({"metadata":{"name":"kube-controller-manager"},"spec":{"holderIdentity":"host_1"}});
        assert_eq!(lease_cells(&lease, now)[1], "host_1");
        let other = json!({"metadata":{"name":"b","creationTimestamp":"2026-01-01T00:00:00Z"}});
        assert_eq!(
            Value::Array(default_cells(&other, now)),
            json!(["b", "2026-01-01T00:00:00Z"])
        );
    }
}
