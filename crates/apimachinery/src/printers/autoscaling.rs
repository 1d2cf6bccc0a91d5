//! The HorizontalPodAutoscaler table for autoscaling/v1 and v2 alike (`printHorizontalPodAutoscaler`
//! and its `formatHPAMetrics`).
//!
//! kube converts both versions to the internal HPA, whose metrics have v2's shape, before
//! printing. Here a v1 object is converted the same way: the metrics its
//! `autoscaling.alpha.kubernetes.io/metrics` and `.../current-metrics` annotations carry come
//! first, then the CPU metric of `targetCPUUtilizationPercentage` and
//! `currentCPUUtilizationPercentage` (`pkg/apis/autoscaling/v1/conversion.go`).

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

/// The annotation in which autoscaling/v1 keeps the metrics it has no fields for.
const METRIC_SPECS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// The annotation in which autoscaling/v1 keeps the current values of those metrics.
const METRIC_STATUSES_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/current-metrics";

/// Whether the object is an autoscaling/v1 HPA: v2 has `spec.metrics`, v1 has none.
fn is_v1(hpa: &Value) -> bool {
    hpa.pointer("/spec/metrics").is_none()
        && (str_at(hpa, "/apiVersion") == "autoscaling/v1"
            || hpa
                .pointer("/spec/targetCPUUtilizationPercentage")
                .is_some()
            || annotation_metrics(hpa, METRIC_SPECS_ANNOTATION).is_some())
}

/// The v1 metrics encoded as JSON in an annotation.
fn annotation_metrics(hpa: &Value, key: &str) -> Option<Vec<Value>> {
    let encoded = hpa
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)?;
    serde_json::from_str(encoded).ok()
}

/// Copies the fields of a v1 metric source named in `fields` (`(v1 name, v2 name)`) into a
/// v2 `target` or `current`.
fn v2_value(source: &Value, fields: &[(&str, &str)]) -> Value {
    let mut value = serde_json::Map::new();
    for (from, to) in fields {
        if let Some(v) = source.get(*from).filter(|v| !v.is_null()) {
            value.insert((*to).to_string(), v.clone());
        }
    }
    Value::Object(value)
}

/// One autoscaling/v1 `MetricSpec` in v2's shape.
fn v1_spec_to_v2(spec: &Value) -> Value {
    let kind = str_at(spec, "/type");
    let (field, fields): (&str, &[(&str, &str)]) = match kind {
        "Resource" => (
            "resource",
            &[
                ("targetAverageUtilization", "averageUtilization"),
                ("targetAverageValue", "averageValue"),
            ],
        ),
        "ContainerResource" => (
            "containerResource",
            &[
                ("targetAverageUtilization", "averageUtilization"),
                ("targetAverageValue", "averageValue"),
            ],
        ),
        "Pods" => ("pods", &[("targetAverageValue", "averageValue")]),
        "Object" => (
            "object",
            &[("targetValue", "value"), ("averageValue", "averageValue")],
        ),
        "External" => (
            "external",
            &[
                ("targetValue", "value"),
                ("targetAverageValue", "averageValue"),
            ],
        ),
        _ => return json!({"type": kind}),
    };
    let source = spec.get(field).unwrap_or(&Value::Null);
    json!({"type": kind, field: {"name": source.get("name"), "target": v2_value(source, fields)}})
}

/// One autoscaling/v1 `MetricStatus` in v2's shape.
fn v1_status_to_v2(status: &Value) -> Value {
    let kind = str_at(status, "/type");
    let (field, fields): (&str, &[(&str, &str)]) = match kind {
        "Resource" => (
            "resource",
            &[
                ("currentAverageUtilization", "averageUtilization"),
                ("currentAverageValue", "averageValue"),
            ],
        ),
        "ContainerResource" => (
            "containerResource",
            &[
                ("currentAverageUtilization", "averageUtilization"),
                ("currentAverageValue", "averageValue"),
            ],
        ),
        "Pods" => ("pods", &[("currentAverageValue", "averageValue")]),
        "Object" => (
            "object",
            &[("currentValue", "value"), ("averageValue", "averageValue")],
        ),
        "External" => (
            "external",
            &[
                ("currentValue", "value"),
                ("currentAverageValue", "averageValue"),
            ],
        ),
        _ => return json!({"type": kind}),
    };
    let source = status.get(field).unwrap_or(&Value::Null);
    json!({"type": kind, field: {"name": source.get("name"), "current": v2_value(source, fields)}})
}

/// The spec metrics and status metrics in v2's shape.
fn metrics(hpa: &Value) -> (Vec<Value>, Vec<Value>) {
    if !is_v1(hpa) {
        return (
            array_at(hpa, "/spec/metrics").to_vec(),
            array_at(hpa, "/status/currentMetrics").to_vec(),
        );
    }
    let cpu = |percentage: Option<&Value>, key: &str| {
        percentage.and_then(Value::as_i64).map(|u| {
            json!({"type": "Resource", "resource": {"name": "cpu", key: {"averageUtilization": u}}})
        })
    };
    let mut specs: Vec<Value> = annotation_metrics(hpa, METRIC_SPECS_ANNOTATION)
        .unwrap_or_default()
        .iter()
        .map(v1_spec_to_v2)
        .collect();
    specs.extend(cpu(
        hpa.pointer("/spec/targetCPUUtilizationPercentage"),
        "target",
    ));
    let mut statuses: Vec<Value> = annotation_metrics(hpa, METRIC_STATUSES_ANNOTATION)
        .unwrap_or_default()
        .iter()
        .map(v1_status_to_v2)
        .collect();
    statuses.extend(cpu(
        hpa.pointer("/status/currentCPUUtilizationPercentage"),
        "current",
    ));
    (specs, statuses)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn hpa(metrics: Value, current: Value) -> Value {
        json!({"metadata":{"name":"some-hpa"},
            "spec":{"scaleTargetRef":{"kind":"ReplicationController","name":"some-rc"},
                "minReplicas":2,"maxReplicas":10,"metrics":metrics},
            "status":{"currentReplicas":4,"desiredReplicas":5,"currentMetrics":current}})
    }

    fn targets(hpa: &Value) -> Value {
        cells(hpa, "2026-01-01T00:00:00Z".parse().unwrap())[2].clone()
    }

    #[test]
    fn hpa_without_metrics_or_min_replicas() {
        // TestPrintHPA "minReplicas unset".
        let h = json!({"metadata":{"name":"some-hpa"},
            "spec":{"scaleTargetRef":{"kind":"ReplicationController","name":"some-rc"},"maxReplicas":10},
            "status":{"currentReplicas":4,"desiredReplicas":5}});
        assert_eq!(
            Value::Array(cells(&h, "2026-01-01T00:00:00Z".parse().unwrap())),
            json!([
                "some-hpa",
                "ReplicationController/some-rc",
                "<none>",
                "<unset>",
                10,
                4,
                "<unknown>"
            ])
        );
    }

    #[test]
    fn external_and_object_metrics() {
        // TestPrintHPA external and object cases.
        for (kind, field) in [("External", "external"), ("Object", "object")] {
            let avg = json!([{"type":kind, field:{"metric":{"name":"m"},
                "target":{"type":"AverageValue","averageValue":"100m"}}}]);
            assert_eq!(
                targets(&hpa(avg.clone(), json!([]))),
                "<unknown>/100m (avg)"
            );
            let current = json!([{"type":kind, field:{"current":{"averageValue":"50m"}}}]);
            assert_eq!(targets(&hpa(avg, current)), "50m/100m (avg)");
            let value = json!([{"type":kind, field:{"metric":{"name":"m"},
                "target":{"type":"Value","value":"100m"}}}]);
            assert_eq!(targets(&hpa(value.clone(), json!([]))), "<unknown>/100m");
            let current = json!([{"type":kind, field:{"current":{"value":"50m"}}}]);
            assert_eq!(targets(&hpa(value, current)), "50m/100m");
        }
    }

    #[test]
    fn pods_metrics() {
        let pods = json!([{"type":"Pods","pods":{"metric":{"name":"some-pods-metric"},
            "target":{"type":"AverageValue","averageValue":"100m"}}}]);
        assert_eq!(targets(&hpa(pods.clone(), json!([]))), "<unknown>/100m");
        let current = json!([{"type":"Pods","pods":{"current":{"averageValue":"50m"}}}]);
        assert_eq!(targets(&hpa(pods, current)), "50m/100m");
    }

    #[test]
    fn resource_and_container_resource_metrics() {
        for (kind, field) in [
            ("Resource", "resource"),
            ("ContainerResource", "containerResource"),
        ] {
            let avg = json!([{"type":kind, field:{"name":"cpu","container":"application",
                "target":{"type":"AverageValue","averageValue":"100m"}}}]);
            assert_eq!(targets(&hpa(avg.clone(), json!([]))), "cpu: <unknown>/100m");
            let current = json!([{"type":kind, field:{"name":"cpu",
                "current":{"averageValue":"50m"}}}]);
            assert_eq!(targets(&hpa(avg, current)), "cpu: 50m/100m");
            let util = json!([{"type":kind, field:{"name":"cpu",
                "target":{"type":"Utilization","averageUtilization":80}}}]);
            assert_eq!(targets(&hpa(util.clone(), json!([]))), "cpu: <unknown>/80%");
            let current = json!([{"type":kind, field:{"name":"cpu",
                "current":{"averageUtilization":50,"averageValue":"40m"}}}]);
            assert_eq!(targets(&hpa(util, current)), "cpu: 50%/80%");
            let auto =
                json!([{"type":kind, field:{"name":"memory","target":{"type":"Utilization"}}}]);
            assert_eq!(targets(&hpa(auto, json!([]))), "memory: <unknown>/<auto>");
        }
    }

    #[test]
    fn more_than_two_metrics_are_summarised() {
        // TestPrintHPA "multiple specs".
        let metrics = json!([
            {"type":"Pods","pods":{"metric":{"name":"some-pods-metric"},
                "target":{"type":"AverageValue","averageValue":"100m"}}},
            {"type":"Resource","resource":{"name":"cpu",
                "target":{"type":"Utilization","averageUtilization":80}}},
            {"type":"Pods","pods":{"metric":{"name":"other-pods-metric"},
                "target":{"type":"AverageValue","averageValue":"400m"}}}]);
        let current = json!([
            {"type":"Pods","pods":{"current":{"averageValue":"50m"}}},
            {"type":"Resource","resource":{"name":"cpu",
                "current":{"averageUtilization":50,"averageValue":"40m"}}}]);
        assert_eq!(
            targets(&hpa(metrics, current)),
            "50m/100m, cpu: 50%/80% + 1 more..."
        );
        assert_eq!(
            targets(&hpa(json!([{"type":"Bogus"}]), json!([]))),
            "<unknown type>"
        );
    }

    #[test]
    fn autoscaling_v1_cpu_target_reads_as_a_resource_metric() {
        let v1 = json!({"metadata":{"name":"web"},
            "spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"minReplicas":1,
                "maxReplicas":5,"targetCPUUtilizationPercentage":80},
            "status":{"currentReplicas":2,"desiredReplicas":2}});
        assert_eq!(targets(&v1), "cpu: <unknown>/80%");
        let mut measured = v1.clone();
        measured["status"]["currentCPUUtilizationPercentage"] = json!(65);
        let c = cells(&measured, "2026-01-01T00:00:00Z".parse().unwrap());
        assert_eq!(
            Value::Array(c),
            json!([
                "web",
                "Deployment/web",
                "cpu: 65%/80%",
                "1",
                5,
                2,
                "<unknown>"
            ])
        );
    }

    #[test]
    fn autoscaling_v1_annotation_metrics_come_before_the_cpu_target() {
        let specs = json!([
            {"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}},
            {"type":"External","external":{"metricName":"queue","targetAverageValue":"30"}}]);
        let current = json!([
            {"type":"Pods","pods":{"metricName":"qps","currentAverageValue":"7"}}]);
        let v1 = json!({"apiVersion":"autoscaling/v1","metadata":{"name":"web","annotations":{
                "autoscaling.alpha.kubernetes.io/metrics": specs.to_string(),
                "autoscaling.alpha.kubernetes.io/current-metrics": current.to_string()}},
            "spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"maxReplicas":5,
                "targetCPUUtilizationPercentage":80}});
        assert_eq!(targets(&v1), "7/10, <unknown>/30 (avg) + 1 more...");
        let resource = json!([{"type":"Resource","resource":{"name":"memory",
            "targetAverageValue":"100Mi"}}]);
        let resource_now = json!([{"type":"Resource","resource":{"name":"memory",
            "currentAverageValue":"50Mi"}}]);
        let only = json!({"apiVersion":"autoscaling/v1","metadata":{"name":"m","annotations":{
                "autoscaling.alpha.kubernetes.io/metrics": resource.to_string(),
                "autoscaling.alpha.kubernetes.io/current-metrics": resource_now.to_string()}},
            "spec":{"scaleTargetRef":{"kind":"Deployment","name":"m"},"maxReplicas":5}});
        assert_eq!(targets(&only), "memory: 50Mi/100Mi");
    }
}
