//! Conversion of HorizontalPodAutoscalers between autoscaling/v1 and autoscaling/v2.
//!
//! Mirrors `pkg/apis/autoscaling/v1/conversion.go`: v1 has only
//! `targetCPUUtilizationPercentage`; the other metrics, the current metrics, the conditions and
//! the behavior travel in the annotations `autoscaling.alpha.kubernetes.io/metrics`,
//! `.../current-metrics`, `.../conditions` and `.../behavior`, written in v1's own metric
//! shapes (and, for the behavior, as kube marshals its internal type: Go field names).
//!
//! Both directions are pure functions over JSON. kube fails a conversion whose annotation does
//! not decode; here such an annotation is dropped and the object converted without it.

use serde_json::{json, Map, Value};

use super::horizontalpodautoscalers::default_cpu_metric;

/// `autoscaling.MetricSpecsAnnotation`.
pub const METRIC_SPECS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// `autoscaling.MetricStatusesAnnotation`.
pub const METRIC_STATUSES_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// `autoscaling.HorizontalPodAutoscalerConditionsAnnotation`.
pub const CONDITIONS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// `autoscaling.BehaviorSpecsAnnotation`.
pub const BEHAVIOR_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";

const ROUND_TRIP_ANNOTATIONS: &[&str] = &[
    METRIC_SPECS_ANNOTATION,
    METRIC_STATUSES_ANNOTATION,
    CONDITIONS_ANNOTATION,
    BEHAVIOR_ANNOTATION,
];

/// Inserts `key: value` when `value` is present and not `null` (a Go `omitempty` pointer).
fn put(map: &mut Map<String, Value>, key: &str, value: Option<&Value>) {
    if let Some(v) = value.filter(|v| !v.is_null()) {
        map.insert(key.to_string(), v.clone());
    }
}

/// A non-pointer `resource.Quantity`: always written, `"0"` when unset.
fn quantity_or_zero(value: Option<&Value>) -> Value {
    value
        .filter(|v| !v.is_null())
        .cloned()
        .unwrap_or_else(|| json!("0"))
}

fn is_cpu_resource(metric: &Value) -> bool {
    metric.get("type").and_then(Value::as_str) == Some("Resource")
        && metric
            .get("resource")
            .and_then(|r| r.get("name"))
            .and_then(Value::as_str)
            == Some("cpu")
}

/// `CrossVersionObjectReference` with v1/v2's field order.
fn object_reference(r: Option<&Value>) -> Value {
    let r = r.unwrap_or(&Value::Null);
    let mut out = Map::new();
    out.insert("kind".into(), r.get("kind").cloned().unwrap_or(json!("")));
    out.insert("name".into(), r.get("name").cloned().unwrap_or(json!("")));
    if let Some(v) = r
        .get("apiVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        out.insert("apiVersion".into(), json!(v));
    }
    Value::Object(out)
}

// ---- v2 → v1 ----

/// `Convert_autoscaling_MetricSpec_To_v1_MetricSpec`.
fn metric_spec_to_v1(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), m.get("type").cloned().unwrap_or(json!("")));
    let target = |src: &Value| src.get("target").cloned().unwrap_or(Value::Null);
    let metric = |src: &Value| src.get("metric").cloned().unwrap_or(Value::Null);
    if let Some(src) = m.get("object").filter(|v| !v.is_null()) {
        let (t, id) = (target(src), metric(src));
        let mut o = Map::new();
        o.insert(
            "target".into(),
            object_reference(src.get("describedObject")),
        );
        o.insert(
            "metricName".into(),
            id.get("name").cloned().unwrap_or(json!("")),
        );
        o.insert("targetValue".into(), quantity_or_zero(t.get("value")));
        put(&mut o, "selector", id.get("selector"));
        put(&mut o, "averageValue", t.get("averageValue"));
        out.insert("object".into(), Value::Object(o));
    }
    if let Some(src) = m.get("pods").filter(|v| !v.is_null()) {
        let (t, id) = (target(src), metric(src));
        let mut o = Map::new();
        o.insert(
            "metricName".into(),
            id.get("name").cloned().unwrap_or(json!("")),
        );
        o.insert(
            "targetAverageValue".into(),
            quantity_or_zero(t.get("averageValue")),
        );
        put(&mut o, "selector", id.get("selector"));
        out.insert("pods".into(), Value::Object(o));
    }
    for key in ["resource", "containerResource"] {
        if let Some(src) = m.get(key).filter(|v| !v.is_null()) {
            let t = target(src);
            let mut o = Map::new();
            o.insert("name".into(), src.get("name").cloned().unwrap_or(json!("")));
            put(
                &mut o,
                "targetAverageUtilization",
                t.get("averageUtilization"),
            );
            put(&mut o, "targetAverageValue", t.get("averageValue"));
            if key == "containerResource" {
                o.insert(
                    "container".into(),
                    src.get("container").cloned().unwrap_or(json!("")),
                );
            }
            out.insert(key.into(), Value::Object(o));
        }
    }
    if let Some(src) = m.get("external").filter(|v| !v.is_null()) {
        let (t, id) = (target(src), metric(src));
        let mut o = Map::new();
        o.insert(
            "metricName".into(),
            id.get("name").cloned().unwrap_or(json!("")),
        );
        put(&mut o, "metricSelector", id.get("selector"));
        put(&mut o, "targetValue", t.get("value"));
        put(&mut o, "targetAverageValue", t.get("averageValue"));
        out.insert("external".into(), Value::Object(o));
    }
    Value::Object(out)
}

/// `Convert_autoscaling_MetricStatus_To_v1_MetricStatus`.
fn metric_status_to_v1(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), m.get("type").cloned().unwrap_or(json!("")));
    let current = |src: &Value| src.get("current").cloned().unwrap_or(Value::Null);
    let metric = |src: &Value| src.get("metric").cloned().unwrap_or(Value::Null);
    if let Some(src) = m.get("object").filter(|v| !v.is_null()) {
        let (c, id) = (current(src), metric(src));
        let mut o = Map::new();
        o.insert(
            "target".into(),
            object_reference(src.get("describedObject")),
        );
        o.insert(
            "metricName".into(),
            id.get("name").cloned().unwrap_or(json!("")),
        );
        o.insert("currentValue".into(), quantity_or_zero(c.get("value")));
        put(&mut o, "selector", id.get("selector"));
        put(&mut o, "averageValue", c.get("averageValue"));
        out.insert("object".into(), Value::Object(o));
    }
    if let Some(src) = m.get("pods").filter(|v| !v.is_null()) {
        let (c, id) = (current(src), metric(src));
        let mut o = Map::new();
        o.insert(
            "metricName".into(),
            id.get("name").cloned().unwrap_or(json!("")),
        );
        o.insert(
            "currentAverageValue".into(),
            quantity_or_zero(c.get("averageValue")),
        );
        put(&mut o, "selector", id.get("selector"));
        out.insert("pods".into(), Value::Object(o));
    }
    for key in ["resource", "containerResource"] {
        if let Some(src) = m.get(key).filter(|v| !v.is_null()) {
            let c = current(src);
            let mut o = Map::new();
            o.insert("name".into(), src.get("name").cloned().unwrap_or(json!("")));
            put(
                &mut o,
                "currentAverageUtilization",
                c.get("averageUtilization"),
            );
            o.insert(
                "currentAverageValue".into(),
                quantity_or_zero(c.get("averageValue")),
            );
            if key == "containerResource" {
                o.insert(
                    "container".into(),
                    src.get("container").cloned().unwrap_or(json!("")),
                );
            }
            out.insert(key.into(), Value::Object(o));
        }
    }
    if let Some(src) = m.get("external").filter(|v| !v.is_null()) {
        let (c, id) = (current(src), metric(src));
        let mut o = Map::new();
        o.insert(
            "metricName".into(),
            id.get("name").cloned().unwrap_or(json!("")),
        );
        put(&mut o, "metricSelector", id.get("selector"));
        o.insert("currentValue".into(), quantity_or_zero(c.get("value")));
        put(&mut o, "currentAverageValue", c.get("averageValue"));
        out.insert("external".into(), Value::Object(o));
    }
    Value::Object(out)
}

/// `HPAScalingRules` as `json.Marshal` writes kube's internal type (no JSON tags).
fn rules_to_internal(rules: Option<&Value>) -> Value {
    let Some(r) = rules.filter(|v| !v.is_null()) else {
        return Value::Null;
    };
    let policies = r.get("policies").and_then(Value::as_array).map(|ps| {
        ps.iter()
            .map(|p| {
                json!({"Type": p.get("type").cloned().unwrap_or(json!("")),
                    "Value": p.get("value").cloned().unwrap_or(json!(0)),
                    "PeriodSeconds": p.get("periodSeconds").cloned().unwrap_or(json!(0))})
            })
            .collect::<Vec<_>>()
    });
    json!({
        "StabilizationWindowSeconds": r.get("stabilizationWindowSeconds").cloned().unwrap_or(Value::Null),
        "SelectPolicy": r.get("selectPolicy").cloned().unwrap_or(Value::Null),
        "Policies": policies.map_or(Value::Null, Value::from),
        "Tolerance": r.get("tolerance").cloned().unwrap_or(Value::Null),
    })
}

/// `HorizontalPodAutoscalerCondition` of v1 (`lastTransitionTime` is written as `null` when
/// unset; `reason` and `message` are omitted when empty).
fn condition_to_v1(c: &Value) -> Value {
    let mut o = Map::new();
    o.insert("type".into(), c.get("type").cloned().unwrap_or(json!("")));
    o.insert(
        "status".into(),
        c.get("status").cloned().unwrap_or(json!("")),
    );
    o.insert(
        "lastTransitionTime".into(),
        c.get("lastTransitionTime").cloned().unwrap_or(Value::Null),
    );
    for key in ["reason", "message"] {
        if let Some(v) = c.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()) {
            o.insert(key.into(), json!(v));
        }
    }
    Value::Object(o)
}

/// Go's `json.Marshal` of a value built here (compact, `<`, `>` and `&` escaped).
fn go_json(v: &Value) -> String {
    v.to_string()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

/// An autoscaling/v2 object as autoscaling/v1: `Convert_autoscaling_HorizontalPodAutoscaler_To_v1_HorizontalPodAutoscaler`.
pub fn v2_to_v1(v2: &Value) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("autoscaling/v1"));
    out.insert("kind".into(), json!("HorizontalPodAutoscaler"));
    let mut metadata = v2
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    // Only the annotations produced by this conversion may carry round-trip data.
    let mut annotations = metadata
        .remove("annotations")
        .and_then(|a| a.as_object().cloned())
        .unwrap_or_default();
    for key in ROUND_TRIP_ANNOTATIONS {
        annotations.remove(*key);
    }

    let spec = v2.get("spec").unwrap_or(&Value::Null);
    let metrics = spec
        .get("metrics")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out_spec = Map::new();
    out_spec.insert(
        "scaleTargetRef".into(),
        object_reference(spec.get("scaleTargetRef")),
    );
    put(&mut out_spec, "minReplicas", spec.get("minReplicas"));
    out_spec.insert(
        "maxReplicas".into(),
        spec.get("maxReplicas").cloned().unwrap_or(json!(0)),
    );
    let cpu_utilization = |m: &Value| {
        m.get("resource")
            .and_then(|r| r.get("target"))
            .and_then(|t| t.get("averageUtilization"))
            .filter(|u| !u.is_null())
            .cloned()
    };
    // The first CPU metric with a utilization target (kubernetes#101370: a CPU average-value
    // metric before it does not hide it).
    if let Some(u) = metrics
        .iter()
        .filter(|m| is_cpu_resource(m))
        .find_map(cpu_utilization)
    {
        out_spec.insert("targetCPUUtilizationPercentage".into(), u);
    }
    let other_metrics: Vec<Value> = metrics
        .iter()
        .filter(|m| !(is_cpu_resource(m) && cpu_utilization(m).is_some()))
        .map(metric_spec_to_v1)
        .collect();

    let status = v2.get("status").unwrap_or(&Value::Null);
    let current_metrics = status
        .get("currentMetrics")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let conditions = status
        .get("conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let mut out_status = Map::new();
    put(
        &mut out_status,
        "observedGeneration",
        status.get("observedGeneration"),
    );
    put(
        &mut out_status,
        "lastScaleTime",
        status.get("lastScaleTime"),
    );
    out_status.insert(
        "currentReplicas".into(),
        status.get("currentReplicas").cloned().unwrap_or(json!(0)),
    );
    out_status.insert(
        "desiredReplicas".into(),
        status.get("desiredReplicas").cloned().unwrap_or(json!(0)),
    );
    // Every CPU resource status is visited; the last one wins, as in kube.
    for m in current_metrics.iter().filter(|m| is_cpu_resource(m)) {
        put(
            &mut out_status,
            "currentCPUUtilizationPercentage",
            m.get("resource")
                .and_then(|r| r.get("current"))
                .and_then(|c| c.get("averageUtilization")),
        );
    }

    if !other_metrics.is_empty() {
        annotations.insert(
            METRIC_SPECS_ANNOTATION.into(),
            json!(go_json(&Value::from(other_metrics))),
        );
    }
    if !current_metrics.is_empty() {
        let list: Vec<Value> = current_metrics.iter().map(metric_status_to_v1).collect();
        annotations.insert(
            METRIC_STATUSES_ANNOTATION.into(),
            json!(go_json(&Value::from(list))),
        );
    }
    if let Some(behavior) = spec.get("behavior").filter(|b| !b.is_null()) {
        let internal = json!({
            "ScaleUp": rules_to_internal(behavior.get("scaleUp")),
            "ScaleDown": rules_to_internal(behavior.get("scaleDown")),
        });
        annotations.insert(BEHAVIOR_ANNOTATION.into(), json!(go_json(&internal)));
    }
    if !conditions.is_empty() {
        let list: Vec<Value> = conditions.iter().map(condition_to_v1).collect();
        annotations.insert(
            CONDITIONS_ANNOTATION.into(),
            json!(go_json(&Value::from(list))),
        );
    }
    if !annotations.is_empty() {
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    out.insert("metadata".into(), Value::Object(metadata));
    out.insert("spec".into(), Value::Object(out_spec));
    out.insert("status".into(), Value::Object(out_status));
    Value::Object(out)
}

// ---- v1 → v2 ----

fn identifier(name: Option<&Value>, selector: Option<&Value>) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), name.cloned().unwrap_or(json!("")));
    put(&mut o, "selector", selector);
    Value::Object(o)
}

fn target(
    ty: &str,
    value: Option<&Value>,
    average_value: Option<&Value>,
    utilization: Option<&Value>,
) -> Value {
    let mut o = Map::new();
    o.insert("type".into(), json!(ty));
    put(&mut o, "value", value);
    put(&mut o, "averageValue", average_value);
    put(&mut o, "averageUtilization", utilization);
    Value::Object(o)
}

fn present(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| !v.is_null())
}

/// `Convert_v1_MetricSpec_To_autoscaling_MetricSpec`.
fn metric_spec_from_v1(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), m.get("type").cloned().unwrap_or(json!("")));
    if let Some(src) = present(m.get("object")) {
        let average = present(src.get("averageValue"));
        let ty = if average.is_none() {
            "Value"
        } else {
            "AverageValue"
        };
        let value = quantity_or_zero(src.get("targetValue"));
        out.insert(
            "object".into(),
            json!({"describedObject": object_reference(src.get("target")),
                "target": target(ty, Some(&value), average, None),
                "metric": identifier(src.get("metricName"), src.get("selector"))}),
        );
    }
    if let Some(src) = present(m.get("pods")) {
        let average = quantity_or_zero(src.get("targetAverageValue"));
        out.insert(
            "pods".into(),
            json!({"metric": identifier(src.get("metricName"), src.get("selector")),
                "target": target("AverageValue", None, Some(&average), None)}),
        );
    }
    for key in ["resource", "containerResource"] {
        if let Some(src) = present(m.get(key)) {
            let utilization = present(src.get("targetAverageUtilization"));
            let ty = if utilization.is_none() {
                "AverageValue"
            } else {
                "Utilization"
            };
            let mut o = Map::new();
            o.insert("name".into(), src.get("name").cloned().unwrap_or(json!("")));
            o.insert(
                "target".into(),
                target(ty, None, src.get("targetAverageValue"), utilization),
            );
            if key == "containerResource" {
                o.insert(
                    "container".into(),
                    src.get("container").cloned().unwrap_or(json!("")),
                );
            }
            out.insert(key.into(), Value::Object(o));
        }
    }
    if let Some(src) = present(m.get("external")) {
        let value = present(src.get("targetValue"));
        let ty = if value.is_none() {
            "AverageValue"
        } else {
            "Value"
        };
        out.insert(
            "external".into(),
            json!({"metric": identifier(src.get("metricName"), src.get("metricSelector")),
                "target": target(ty, value, src.get("targetAverageValue"), None)}),
        );
    }
    Value::Object(out)
}

fn current(
    value: Option<&Value>,
    average_value: Option<&Value>,
    utilization: Option<&Value>,
) -> Value {
    let mut o = Map::new();
    put(&mut o, "value", value);
    put(&mut o, "averageValue", average_value);
    put(&mut o, "averageUtilization", utilization);
    Value::Object(o)
}

/// `Convert_v1_MetricStatus_To_autoscaling_MetricStatus`.
fn metric_status_from_v1(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), m.get("type").cloned().unwrap_or(json!("")));
    if let Some(src) = present(m.get("object")) {
        let value = quantity_or_zero(src.get("currentValue"));
        out.insert(
            "object".into(),
            json!({"metric": identifier(src.get("metricName"), src.get("selector")),
                "current": current(Some(&value), src.get("averageValue"), None),
                "describedObject": object_reference(src.get("target"))}),
        );
    }
    if let Some(src) = present(m.get("pods")) {
        let average = quantity_or_zero(src.get("currentAverageValue"));
        out.insert(
            "pods".into(),
            json!({"metric": identifier(src.get("metricName"), src.get("selector")),
                "current": current(None, Some(&average), None)}),
        );
    }
    for key in ["resource", "containerResource"] {
        if let Some(src) = present(m.get(key)) {
            let average = quantity_or_zero(src.get("currentAverageValue"));
            let mut o = Map::new();
            o.insert("name".into(), src.get("name").cloned().unwrap_or(json!("")));
            o.insert(
                "current".into(),
                current(None, Some(&average), src.get("currentAverageUtilization")),
            );
            if key == "containerResource" {
                o.insert(
                    "container".into(),
                    src.get("container").cloned().unwrap_or(json!("")),
                );
            }
            out.insert(key.into(), Value::Object(o));
        }
    }
    if let Some(src) = present(m.get("external")) {
        let value = quantity_or_zero(src.get("currentValue"));
        out.insert(
            "external".into(),
            json!({"metric": identifier(src.get("metricName"), src.get("metricSelector")),
                "current": current(Some(&value), src.get("currentAverageValue"), None)}),
        );
    }
    Value::Object(out)
}

/// A field of a Go struct decoded by `encoding/json`, which matches names case-insensitively.
fn go_field<'a>(obj: &'a Value, name: &str) -> Option<&'a Value> {
    let map = obj.as_object()?;
    map.get(name)
        .or_else(|| {
            map.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v)
        })
        .filter(|v| !v.is_null())
}

/// The behavior annotation (kube's internal type, any letter case) as v2 `HPAScalingRules`.
fn rules_from_internal(rules: Option<&Value>) -> Option<Value> {
    let r = rules?;
    let mut o = Map::new();
    put(
        &mut o,
        "stabilizationWindowSeconds",
        go_field(r, "StabilizationWindowSeconds"),
    );
    put(&mut o, "selectPolicy", go_field(r, "SelectPolicy"));
    if let Some(ps) = go_field(r, "Policies").and_then(Value::as_array) {
        let policies: Vec<Value> = ps
            .iter()
            .map(|p| {
                json!({"type": go_field(p, "Type").cloned().unwrap_or(json!("")),
                    "value": go_field(p, "Value").cloned().unwrap_or(json!(0)),
                    "periodSeconds": go_field(p, "PeriodSeconds").cloned().unwrap_or(json!(0))})
            })
            .collect();
        o.insert("policies".into(), Value::from(policies));
    }
    put(&mut o, "tolerance", go_field(r, "Tolerance"));
    Some(Value::Object(o))
}

fn parse_list(annotation: Option<Value>) -> Option<Vec<Value>> {
    let text = annotation?;
    serde_json::from_str::<Vec<Value>>(text.as_str()?).ok()
}

/// An autoscaling/v1 object as autoscaling/v2: `Convert_v1_HorizontalPodAutoscaler_To_autoscaling_HorizontalPodAutoscaler`.
pub fn v1_to_v2(v1: &Value) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), json!("autoscaling/v2"));
    out.insert("kind".into(), json!("HorizontalPodAutoscaler"));
    let mut metadata = v1
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut annotations = metadata
        .remove("annotations")
        .and_then(|a| a.as_object().cloned())
        .unwrap_or_default();

    let spec = v1.get("spec").unwrap_or(&Value::Null);
    let mut out_spec = Map::new();
    out_spec.insert(
        "scaleTargetRef".into(),
        object_reference(spec.get("scaleTargetRef")),
    );
    put(&mut out_spec, "minReplicas", spec.get("minReplicas"));
    out_spec.insert(
        "maxReplicas".into(),
        spec.get("maxReplicas").cloned().unwrap_or(json!(0)),
    );
    let mut metrics: Vec<Value> = Vec::new();
    if let Some(cpu) = present(spec.get("targetCPUUtilizationPercentage")) {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": cpu}}}));
    }
    if let Some(others) = parse_list(annotations.remove(METRIC_SPECS_ANNOTATION)) {
        // The annotation's metrics come first, then the CPU target.
        let mut all: Vec<Value> = others.iter().map(metric_spec_from_v1).collect();
        all.append(&mut metrics);
        metrics = all;
    }
    if metrics.is_empty() {
        // autoscaling/v1 had this default in the controller; v2 states it.
        metrics.push(default_cpu_metric());
    }
    out_spec.insert("metrics".into(), Value::from(metrics));
    if let Some(behavior) = annotations
        .remove(BEHAVIOR_ANNOTATION)
        .and_then(|a| {
            a.as_str()
                .and_then(|s| serde_json::from_str::<Value>(s).ok())
        })
        .filter(Value::is_object)
    {
        let mut b = Map::new();
        if let Some(up) = rules_from_internal(go_field(&behavior, "ScaleUp")) {
            b.insert("scaleUp".into(), up);
        }
        if let Some(down) = rules_from_internal(go_field(&behavior, "ScaleDown")) {
            b.insert("scaleDown".into(), down);
        }
        out_spec.insert("behavior".into(), Value::Object(b));
    }

    let status = v1.get("status").unwrap_or(&Value::Null);
    let mut out_status = Map::new();
    put(
        &mut out_status,
        "observedGeneration",
        status.get("observedGeneration"),
    );
    put(
        &mut out_status,
        "lastScaleTime",
        status.get("lastScaleTime"),
    );
    if let Some(n) = status
        .get("currentReplicas")
        .filter(|n| n.as_i64().is_some_and(|n| n != 0))
    {
        out_status.insert("currentReplicas".into(), n.clone());
    }
    out_status.insert(
        "desiredReplicas".into(),
        status.get("desiredReplicas").cloned().unwrap_or(json!(0)),
    );
    let mut current_metrics = Value::Null;
    if let Some(cpu) = present(status.get("currentCPUUtilizationPercentage")) {
        current_metrics = json!([{"type": "Resource", "resource": {"name": "cpu",
            "current": {"averageUtilization": cpu}}}]);
    }
    if let Some(list) = parse_list(annotations.remove(METRIC_STATUSES_ANNOTATION)) {
        // The annotation has more information than the CPU percentage.
        current_metrics = Value::from(list.iter().map(metric_status_from_v1).collect::<Vec<_>>());
    }
    out_status.insert("currentMetrics".into(), current_metrics);
    if let Some(list) = parse_list(annotations.remove(CONDITIONS_ANNOTATION)) {
        if !list.is_empty() {
            out_status.insert("conditions".into(), Value::from(list));
        }
    }
    for key in ROUND_TRIP_ANNOTATIONS {
        annotations.remove(*key);
    }
    if !annotations.is_empty() {
        metadata.insert("annotations".into(), Value::Object(annotations));
    }
    out.insert("metadata".into(), Value::Object(metadata));
    out.insert("spec".into(), Value::Object(out_spec));
    out.insert("status".into(), Value::Object(out_status));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1_hpa(annotations: Value, spec_extra: Value) -> Value {
        let mut spec = json!({"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
            "minReplicas": 1, "maxReplicas": 10});
        if let (Some(s), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
            s.extend(extra.clone());
        }
        json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default", "annotations": annotations},
            "spec": spec, "status": {"currentReplicas": 0, "desiredReplicas": 0}})
    }

    /// `TestHorizontalPodAutoscalerConversion`-style: the CPU target becomes the CPU metric.
    #[test]
    fn the_cpu_target_becomes_a_resource_metric_and_back() {
        let v1 = v1_hpa(json!({}), json!({"targetCPUUtilizationPercentage": 50}));
        let v2 = v1_to_v2(&v1);
        assert_eq!(
            v2["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}])
        );
        assert!(v2["metadata"].get("annotations").is_none());
        let back = v2_to_v1(&v2);
        assert_eq!(back["spec"], v1["spec"]);
        assert!(back["metadata"].get("annotations").is_none());
        assert_eq!(
            back["status"],
            json!({"currentReplicas": 0, "desiredReplicas": 0})
        );
    }

    /// `TestConvert_autoscaling_HorizontalPodAutoscalerSpec_To_v1_HorizontalPodAutoscalerSpec`.
    #[test]
    fn the_cpu_target_is_the_first_cpu_utilization_metric() {
        let v2 = |metrics: Value| {
            json!({"metadata": {"name": "web"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 3, "metrics": metrics}})
        };
        let average = json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "AverageValue", "averageValue": "300m"}}});
        let utilization = json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}});
        let both = v2_to_v1(&v2(json!([average, utilization])));
        assert_eq!(
            both["spec"],
            json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 3,
                "targetCPUUtilizationPercentage": 70})
        );
        // The average-value CPU metric travels in the annotation.
        assert_eq!(
            both["metadata"]["annotations"][METRIC_SPECS_ANNOTATION],
            r#"[{"type":"Resource","resource":{"name":"cpu","targetAverageValue":"300m"}}]"#
        );
        let none = v2_to_v1(&v2(json!([])));
        assert!(none["spec"].get("targetCPUUtilizationPercentage").is_none());
        let only = v2_to_v1(&v2(json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 60}}}])));
        assert_eq!(only["spec"]["targetCPUUtilizationPercentage"], 60);
        assert!(only["metadata"].get("annotations").is_none());
    }

    #[test]
    fn a_v1_object_without_target_gets_the_default_cpu_metric() {
        let v2 = v1_to_v2(&v1_hpa(json!({}), json!({})));
        assert_eq!(v2["spec"]["metrics"], json!([default_cpu_metric()]));
        assert_eq!(v2_to_v1(&v2)["spec"]["targetCPUUtilizationPercentage"], 80);
    }

    /// `TestHorizontalPodAutoscalerAnnotations`: other metrics, current metrics, conditions
    /// and behavior survive v2 → v1 → v2, and the annotations are gone again in v2.
    #[test]
    fn other_metrics_conditions_and_behavior_round_trip_through_annotations() {
        let v2 = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default", "annotations": {"keep": "me",
                METRIC_SPECS_ANNOTATION: "stale"}},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                "minReplicas": 2, "maxReplicas": 10,
                "metrics": [
                    {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "100Mi"}}},
                    {"type": "Object", "object": {"describedObject": {"kind": "Service", "name": "s", "apiVersion": "v1"},
                        "target": {"type": "Value", "value": "5"}, "metric": {"name": "rps"}}},
                    {"type": "External", "external": {"metric": {"name": "queue", "selector": {"matchLabels": {"q": "a"}}},
                        "target": {"type": "AverageValue", "averageValue": "3"}}},
                    {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}
                ],
                "behavior": {"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]},
                    "scaleDown": {"selectPolicy": "Min", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}},
            "status": {"currentReplicas": 3, "desiredReplicas": 4,
                "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "200m", "averageUtilization": 40}}}],
                "conditions": [{"type": "AbleToScale", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z", "reason": "ReadyForNewScale"}]}});
        let v1 = v2_to_v1(&v2);
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70);
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 40);
        let annotations = &v1["metadata"]["annotations"];
        assert_eq!(annotations["keep"], "me");
        assert_eq!(
            annotations[METRIC_SPECS_ANNOTATION],
            r#"[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}},{"type":"Resource","resource":{"name":"memory","targetAverageValue":"100Mi"}},{"type":"Object","object":{"target":{"kind":"Service","name":"s","apiVersion":"v1"},"metricName":"rps","targetValue":"5"}},{"type":"External","external":{"metricName":"queue","metricSelector":{"matchLabels":{"q":"a"}},"targetAverageValue":"3"}}]"#
        );
        assert_eq!(
            annotations[METRIC_STATUSES_ANNOTATION],
            r#"[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,"currentAverageValue":"200m"}}]"#
        );
        assert_eq!(
            annotations[BEHAVIOR_ANNOTATION],
            r#"{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15}],"Tolerance":null},"ScaleDown":{"StabilizationWindowSeconds":null,"SelectPolicy":"Min","Policies":[{"Type":"Percent","Value":100,"PeriodSeconds":15}],"Tolerance":null}}"#
        );
        assert_eq!(
            annotations[CONDITIONS_ANNOTATION],
            r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2024-01-01T00:00:00Z","reason":"ReadyForNewScale"}]"#
        );
        let _: k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler =
            serde_json::from_value(v1.clone()).expect("valid v1");

        let again = v1_to_v2(&v1);
        assert_eq!(again["metadata"]["annotations"], json!({"keep": "me"}));
        assert_eq!(again["spec"]["behavior"], v2["spec"]["behavior"]);
        assert_eq!(again["status"]["conditions"], v2["status"]["conditions"]);
        assert_eq!(
            again["status"]["currentMetrics"],
            v2["status"]["currentMetrics"]
        );
        // The CPU metric moves to the end; the others come back in order, as in kube.
        let metrics = again["spec"]["metrics"].as_array().expect("metrics");
        assert_eq!(metrics.len(), 5);
        assert_eq!(
            metrics[..4],
            v2["spec"]["metrics"].as_array().expect("metrics")[..4]
        );
        assert_eq!(metrics[4], v2["spec"]["metrics"][4]);
        let _: k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler =
            serde_json::from_value(again).expect("valid v2");
    }

    #[test]
    fn malformed_annotations_are_dropped() {
        let v1 = v1_hpa(
            json!({METRIC_SPECS_ANNOTATION: "{not json", BEHAVIOR_ANNOTATION: "[]"}),
            json!({"targetCPUUtilizationPercentage": 30}),
        );
        let v2 = v1_to_v2(&v1);
        assert!(v2["metadata"].get("annotations").is_none());
        assert_eq!(v2["spec"]["metrics"].as_array().map(Vec::len), Some(1));
        assert!(v2["spec"].get("behavior").is_none());
    }
}
