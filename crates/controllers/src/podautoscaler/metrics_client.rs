//! Reads metrics for the autoscaler from the metrics APIs: `metrics.k8s.io` (resource usage),
//! `custom.metrics.k8s.io` (pods and object metrics) and `external.metrics.k8s.io`.
//!
//! Mirrors `pkg/controller/podautoscaler/metrics/client.go` (`resourceMetricsClient`,
//! `customMetricsClient`, `externalMetricsClient`); errors carry its messages.

use std::time::Duration;

use jiff::Timestamp;
use rkcm_apimachinery::quantity::Quantity;
use serde_json::Value;

use super::replica_calculator::{PodMetric, PodMetricsInfo};

/// kube's default metric window when a custom metrics item has none (`metricServerDefaultMetricWindow`).
const DEFAULT_WINDOW: Duration = Duration::from_secs(60);

fn encode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

async fn get(client: &kube::Client, path: String) -> Result<Value, String> {
    let req = http::Request::get(path)
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    client
        .request::<Value>(req)
        .await
        .map_err(|e| rkcm_runtime::api_error::message(&e))
}

fn milli(value: Option<&Value>) -> Option<i64> {
    value
        .and_then(|v| Quantity::from_json(v).ok())
        .map(|q| q.milli_value())
}

fn timestamp(item: &Value) -> Timestamp {
    item.get("timestamp")
        .and_then(Value::as_str)
        .and_then(|t| t.parse().ok())
        .unwrap_or(Timestamp::UNIX_EPOCH)
}

fn window(item: &Value) -> Duration {
    match item.get("window") {
        Some(Value::String(w)) => {
            rkcm_apimachinery::duration::parse_non_negative(w).unwrap_or(DEFAULT_WINDOW)
        }
        Some(Value::Number(secs)) => secs
            .as_u64()
            .map(Duration::from_secs)
            .unwrap_or(DEFAULT_WINDOW),
        _ => DEFAULT_WINDOW,
    }
}

/// Usage of `resource` by the pods `selector` picks, summed over their containers or taken from
/// `container` (`GetResourceMetric`).
pub async fn resource_metric(
    client: &kube::Client,
    resource: &str,
    namespace: &str,
    selector: &str,
    container: Option<&str>,
) -> Result<(PodMetricsInfo, Timestamp), String> {
    let list = get(
        client,
        format!(
            "/apis/metrics.k8s.io/v1beta1/namespaces/{}/pods?labelSelector={}",
            encode(namespace),
            encode(selector)
        ),
    )
    .await
    .map_err(|e| format!("unable to fetch metrics from resource metrics API: {e}"))?;
    let items = list
        .get("items")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if items.is_empty() {
        return Err("no metrics returned from resource metrics API".into());
    }
    let mut out = PodMetricsInfo::new();
    for item in &items {
        let Some(name) = item.pointer("/metadata/name").and_then(Value::as_str) else {
            continue;
        };
        let containers = item
            .get("containers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut sum = 0i64;
        let mut complete = true;
        let mut seen = false;
        for c in &containers {
            if container.is_some_and(|want| c.get("name").and_then(Value::as_str) != Some(want)) {
                continue;
            }
            seen = true;
            match milli(c.pointer(&format!("/usage/{resource}"))) {
                Some(v) => sum += v,
                None => {
                    complete = false;
                    break;
                }
            }
        }
        if complete && (seen || container.is_none()) {
            out.insert(
                name.to_string(),
                PodMetric {
                    value: sum,
                    timestamp: timestamp(item),
                    window: window(item),
                },
            );
        }
    }
    let at = items
        .first()
        .map(timestamp)
        .unwrap_or(Timestamp::UNIX_EPOCH);
    Ok((out, at))
}

/// A custom metric of the pods `selector` picks (`GetRawMetric`).
pub async fn pods_metric(
    client: &kube::Client,
    metric: &str,
    namespace: &str,
    selector: &str,
    metric_selector: &str,
) -> Result<(PodMetricsInfo, Timestamp), String> {
    let mut path = format!(
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/{}/pods/%2A/{}?labelSelector={}",
        encode(namespace),
        encode(metric),
        encode(selector)
    );
    if !metric_selector.is_empty() {
        path.push_str(&format!("&metricLabelSelector={}", encode(metric_selector)));
    }
    let list = get(client, path)
        .await
        .map_err(|e| format!("unable to fetch metrics from custom metrics API: {e}"))?;
    let items = list
        .get("items")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if items.is_empty() {
        return Err("no metrics returned from custom metrics API".into());
    }
    let mut out = PodMetricsInfo::new();
    for item in &items {
        let (Some(name), Some(value)) = (
            item.pointer("/describedObject/name")
                .and_then(Value::as_str),
            milli(item.get("value")),
        ) else {
            continue;
        };
        out.insert(
            name.to_string(),
            PodMetric {
                value,
                timestamp: timestamp(item),
                window: window(item),
            },
        );
    }
    Ok((out, timestamp(&items[0])))
}

/// A custom metric of one object, addressed by its resource (`GetObjectMetric`).
pub async fn object_metric(
    client: &kube::Client,
    metric: &str,
    namespace: &str,
    group_resource: &str,
    name: &str,
    metric_selector: &str,
) -> Result<(i64, Timestamp), String> {
    let mut path = format!(
        "/apis/custom.metrics.k8s.io/v1beta2/namespaces/{}/{}/{}/{}",
        encode(namespace),
        encode(group_resource),
        encode(name),
        encode(metric)
    );
    if !metric_selector.is_empty() {
        path.push_str(&format!("?metricLabelSelector={}", encode(metric_selector)));
    }
    let list = get(client, path)
        .await
        .map_err(|e| format!("unable to fetch metrics from custom metrics API: {e}"))?;
    let item = list
        .get("items")
        .and_then(Value::as_array)
        .and_then(|i| i.first().cloned())
        .ok_or_else(|| "no metrics returned from custom metrics API".to_string())?;
    let value = milli(item.get("value"))
        .ok_or_else(|| "no metrics returned from custom metrics API".to_string())?;
    Ok((value, timestamp(&item)))
}

/// The values of an external metric (`GetExternalMetric`).
pub async fn external_metric(
    client: &kube::Client,
    metric: &str,
    namespace: &str,
    selector: &str,
) -> Result<(Vec<i64>, Timestamp), String> {
    let list = get(
        client,
        format!(
            "/apis/external.metrics.k8s.io/v1beta1/namespaces/{}/{}?labelSelector={}",
            encode(namespace),
            encode(metric),
            encode(selector)
        ),
    )
    .await
    .map_err(|e| format!("unable to fetch metrics from external metrics API: {e}"))?;
    let items = list
        .get("items")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if items.is_empty() {
        return Err("no metrics returned from external metrics API".into());
    }
    let values = items.iter().filter_map(|i| milli(i.get("value"))).collect();
    Ok((values, timestamp(&items[0])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(
            encode("app=web,tier in (a)"),
            "app%3Dweb%2Ctier%20in%20%28a%29"
        );
    }

    #[test]
    fn windows_read_as_go_durations_or_seconds() {
        assert_eq!(
            window(&serde_json::json!({"window": "15s"})),
            Duration::from_secs(15)
        );
        assert_eq!(
            window(&serde_json::json!({"window": 30})),
            Duration::from_secs(30)
        );
        assert_eq!(window(&serde_json::json!({})), DEFAULT_WINDOW);
    }
}
