//! The HorizontalPodAutoscaler table for autoscaling/v1 and v2 alike (`printHorizontalPodAutoscaler`
//! and its `formatHPAMetrics`).
//!
//! kube converts both versions to the internal HPA, whose metrics have v2's shape, before
//! printing; here a v1 object's `targetCPUUtilizationPercentage` and
//! `currentCPUUtilizationPercentage` are read as the one CPU resource metric they convert to.

use jiff::Timestamp;
use serde_json::{json, Value};

use super::{age, array_at, col, int_at, name, str_at, Column, Description, AGE, NAME};

const HPA_SPEC: &str = "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerSpec";

/// HorizontalPodAutoscaler columns.
pub(super) const COLUMNS: &[Column] = &[
    NAME,
    col(
        "Reference",
        "string",
        Description::Field(HPA_SPEC, "scaleTargetRef"),
    ),
    col("Targets", "string", Description::Field(HPA_SPEC, "metrics")),
    col(
        "MinPods",
        "string",
        Description::Field(HPA_SPEC, "minReplicas"),
    ),
    col(
        "MaxPods",
        "string",
        Description::Field(HPA_SPEC, "maxReplicas"),
    ),
    col(
        "Replicas",
        "string",
        Description::Field(
            "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
            "currentReplicas",
        ),
    ),
    AGE,
];

/// The spec metrics and status metrics in v2's shape.
fn metrics(hpa: &Value) -> (Vec<Value>, Vec<Value>) {
    if hpa.pointer("/spec/metrics").is_some() {
        return (
            array_at(hpa, "/spec/metrics").to_vec(),
            array_at(hpa, "/status/currentMetrics").to_vec(),
        );
    }
    let cpu = |target: Option<&Value>, key: &str| {
        target.and_then(Value::as_i64).map(|u| {
            json!({"type": "Resource", "resource": {"name": "cpu", key: {"averageUtilization": u}}})
        })
    };
    let specs = cpu(
        hpa.pointer("/spec/targetCPUUtilizationPercentage"),
        "target",
    );
    let statuses = cpu(
        hpa.pointer("/status/currentCPUUtilizationPercentage"),
        "current",
    );
    (specs.into_iter().collect(), statuses.into_iter().collect())
}

/// A `*resource.Quantity`'s `String()`: `<nil>` when absent.
fn quantity(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "<nil>".to_string(),
    }
}

/// `formatHPAMetrics`: each metric as `current/target`, two at most, then ` + N more...`.
fn format_metrics(specs: &[Value], statuses: &[Value]) -> String {
    const MAX: usize = 2;
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let kind = str_at(spec, "/type");
            // The status of the same type at the same index, if the controller reported one.
            let field = match kind {
                "External" => "external",
                "Pods" => "pods",
                "Object" => "object",
                "Resource" => "resource",
                "ContainerResource" => "containerResource",
                _ => return "<unknown type>".to_string(),
            };
            let source = spec.get(field).unwrap_or(&Value::Null);
            let status = statuses
                .get(i)
                .and_then(|s| s.get(field))
                .filter(|s| s.is_object());
            let current = |key: &str| status.and_then(|s| s.pointer(&format!("/current/{key}")));
            let target = |key: &str| source.pointer(&format!("/target/{key}"));
            let unknown = || "<unknown>".to_string();
            match kind {
                "Pods" => format!(
                    "{}/{}",
                    status.map_or_else(unknown, |_| quantity(current("averageValue"))),
                    quantity(target("averageValue"))
                ),
                "External" | "Object" => match target("averageValue") {
                    Some(average) => format!(
                        "{}/{} (avg)",
                        current("averageValue").map_or_else(unknown, |c| quantity(Some(c))),
                        quantity(Some(average))
                    ),
                    None => format!(
                        "{}/{}",
                        status.map_or_else(unknown, |_| quantity(current("value"))),
                        quantity(target("value"))
                    ),
                },
                _ => {
                    let resource = str_at(source, "/name");
                    match target("averageValue") {
                        Some(average) => format!(
                            "{resource}: {}/{}",
                            status.map_or_else(unknown, |_| quantity(current("averageValue"))),
                            quantity(Some(average))
                        ),
                        None => {
                            let percent = |v: Option<&Value>| {
                                v.and_then(Value::as_i64).map(|u| format!("{u}%"))
                            };
                            format!(
                                "{resource}: {}/{}",
                                percent(current("averageUtilization")).unwrap_or_else(unknown),
                                percent(target("averageUtilization"))
                                    .unwrap_or_else(|| "<auto>".to_string())
                            )
                        }
                    }
                }
            }
        })
        .collect();
    let shown = list[..list.len().min(MAX)].join(", ");
    if list.len() > MAX {
        format!("{shown} + {} more...", list.len() - MAX)
    } else {
        shown
    }
}

/// The cells of one HorizontalPodAutoscaler's row.
pub(super) fn cells(hpa: &Value, now: Timestamp) -> Vec<Value> {
    let (specs, statuses) = metrics(hpa);
    let reference = format!(
        "{}/{}",
        str_at(hpa, "/spec/scaleTargetRef/kind"),
        str_at(hpa, "/spec/scaleTargetRef/name")
    );
    let min_pods = hpa
        .pointer("/spec/minReplicas")
        .and_then(Value::as_i64)
        .map_or_else(|| "<unset>".to_string(), |n| n.to_string());
    vec![
        name(hpa),
        reference.into(),
        format_metrics(&specs, &statuses).into(),
        min_pods.into(),
        int_at(hpa, "/spec/maxReplicas", 0).into(),
        int_at(hpa, "/status/currentReplicas", 0).into(),
        age(hpa, now),
    ]
}
