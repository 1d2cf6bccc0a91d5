//! Tables of custom resources (`apiextensions-apiserver` `pkg/registry/customresource/tableconvertor`):
//! `NAME`, then the served version's `additionalPrinterColumns` (kube defaults them to `AGE`
//! from `.metadata.creationTimestamp` when a CRD names none).

use jiff::Timestamp;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceColumnDefinition;
use rkcm_apimachinery::printers::duration::human_duration;
use serde_json::{json, Value};

use super::jsonpath;

fn default_columns() -> Vec<CustomResourceColumnDefinition> {
    vec![CustomResourceColumnDefinition {
        name: "Age".into(),
        type_: "date".into(),
        json_path: ".metadata.creationTimestamp".into(),
        ..Default::default()
    }]
}

/// `(columnDefinitions, cells of each object)` of a table of custom resources with `columns`.
pub fn table(
    columns: &[CustomResourceColumnDefinition],
    objects: &[&Value],
    now: Timestamp,
) -> (Vec<Value>, Vec<Vec<Value>>) {
    let columns = if columns.is_empty() {
        default_columns()
    } else {
        columns.to_vec()
    };
    let mut defs = vec![json!({
        "name": "Name", "type": "string", "format": "name",
        "description": "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        "priority": 0,
    })];
    defs.extend(columns.iter().map(|c| {
        json!({
            "name": c.name,
            "type": c.type_,
            "format": c.format.clone().unwrap_or_default(),
            "description": c.description.clone().unwrap_or_default(),
            "priority": c.priority.unwrap_or(0),
        })
    }));
    let rows = objects
        .iter()
        .map(|obj| {
            let mut cells = vec![json!(obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or(""))];
            cells.extend(columns.iter().map(|c| cell(c, obj, now)));
            cells
        })
        .collect();
    (defs, rows)
}

/// One cell: the value at the column's path, dates as ages, `null` when absent (kubectl
/// prints `<none>`).
fn cell(column: &CustomResourceColumnDefinition, obj: &Value, now: Timestamp) -> Value {
    let Some(v) = jsonpath::get(obj, &column.json_path) else {
        return Value::Null;
    };
    match (column.type_.as_str(), v) {
        ("date", Value::String(s)) => match s.parse::<Timestamp>() {
            Ok(t) => {
                let nanos = now.duration_since(t).as_nanos();
                json!(human_duration(nanos))
            }
            Err(_) => json!(s),
        },
        ("integer", Value::Number(n)) => json!(n),
        ("number", Value::Number(n)) => json!(n),
        ("boolean", Value::Bool(b)) => json!(b),
        ("string", Value::String(s)) => json!(s),
        (_, Value::String(s)) => json!(s),
        (_, other) => json!(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_default_to_age_and_read_their_paths() {
        let obj = json!({"metadata": {"name": "a", "creationTimestamp": "2024-01-01T00:00:00Z"},
                         "spec": {"cronSpec": "* * * * */5", "replicas": 3}});
        let now: Timestamp = "2024-01-01T00:05:00Z".parse().expect("time");
        let (defs, rows) = table(&[], &[&obj], now);
        assert_eq!(defs[1]["name"], json!("Age"));
        assert_eq!(rows[0], vec![json!("a"), json!("5m")]);
        let cols = vec![
            CustomResourceColumnDefinition {
                name: "Spec".into(),
                type_: "string".into(),
                json_path: ".spec.cronSpec".into(),
                ..Default::default()
            },
            CustomResourceColumnDefinition {
                name: "Replicas".into(),
                type_: "integer".into(),
                json_path: ".spec.replicas".into(),
                ..Default::default()
            },
            CustomResourceColumnDefinition {
                name: "Missing".into(),
                type_: "string".into(),
                json_path: ".status.x".into(),
                ..Default::default()
            },
        ];
        let (defs, rows) = table(&cols, &[&obj], now);
        assert_eq!(defs.len(), 4);
        assert_eq!(
            rows[0],
            vec![json!("a"), json!("* * * * */5"), json!(3), Value::Null]
        );
    }
}
