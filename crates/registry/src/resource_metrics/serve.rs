//! Requests to `/apis/metrics.k8s.io/v1beta1/...` and the group's discovery documents, answered
//! from a [`MetricsSource`] as metrics-server answers them (`pkg/api/pod.go`, `pkg/api/node.go`
//! in kubernetes-sigs/metrics-server).

use http::Method;
use serde_json::{json, Map, Value};

use rkcm_apimachinery::quantity::{Format, Quantity};
use rkcm_labels::{FieldSelector, Selector};

use super::{MetricsSource, NodeUsage, PodUsage, UsageSnapshot, GROUP, VERSION};
use rkcm_server::error::{ApiError, ApiResult};

/// `metrics.k8s.io/v1beta1`.
pub const GROUP_VERSION: &str = "metrics.k8s.io/v1beta1";

/// What a metrics path addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetricsPath {
    /// `nodes` or `nodes/{name}`.
    Nodes {
        /// The node, for a get.
        name: Option<String>,
    },
    /// `pods`, `namespaces/{ns}/pods` or `namespaces/{ns}/pods/{name}`.
    Pods {
        /// The namespace; every namespace when `None`.
        namespace: Option<String>,
        /// The pod, for a get.
        name: Option<String>,
    },
}

/// Parses the path under `/apis/metrics.k8s.io/v1beta1/`; `None` when it addresses nothing.
pub fn parse(path: &str) -> Option<MetricsPath> {
    let rest = path
        .strip_prefix("/apis/")?
        .strip_prefix(GROUP)?
        .strip_prefix('/')?
        .strip_prefix(VERSION)?
        .strip_prefix('/')?;
    let segs: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return None;
    }
    let owned = |s: &str| Some(s.to_string());
    Some(match segs.as_slice() {
        ["nodes"] => MetricsPath::Nodes { name: None },
        ["nodes", name] => MetricsPath::Nodes { name: owned(name) },
        ["pods"] => MetricsPath::Pods {
            namespace: None,
            name: None,
        },
        ["namespaces", ns, "pods"] => MetricsPath::Pods {
            namespace: owned(ns),
            name: None,
        },
        ["namespaces", ns, "pods", name] => MetricsPath::Pods {
            namespace: owned(ns),
            name: owned(name),
        },
        _ => return None,
    })
}

/// Whether `path` is under the metrics group's version (discovery aside).
pub fn is_metrics_path(path: &str) -> bool {
    path.starts_with("/apis/metrics.k8s.io/v1beta1/")
}

/// Answers a request for `path` with the source's latest snapshot: a list or one object.
/// `labelSelector` matches the pods' or nodes' labels, `fieldSelector` their `metadata.name`
/// and `metadata.namespace`.
pub fn serve(
    source: &dyn MetricsSource,
    method: &Method,
    path: &str,
    label_selector: Option<&str>,
    field_selector: Option<&str>,
) -> ApiResult<Value> {
    let target = parse(path).ok_or_else(ApiError::no_route)?;
    if method != Method::GET {
        return Err(ApiError::method_not_allowed(method.as_str()));
    }
    let labels = match label_selector {
        Some(s) => Selector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?,
        None => Selector::everything(),
    };
    let fields = match field_selector {
        Some(s) => FieldSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?,
        None => FieldSelector::everything(),
    };
    let snapshot = source.snapshot();
    match target {
        MetricsPath::Nodes { name: Some(name) } => snapshot
            .as_deref()
            .and_then(|s| s.nodes.iter().find(|n| n.name == name).map(|n| (s, n)))
            .map(|(s, n)| node_metrics(s, n))
            .ok_or_else(|| not_found("nodemetrics", &name)),
        MetricsPath::Nodes { name: None } => {
            let items = snapshot
                .as_deref()
                .map(|s| {
                    s.nodes
                        .iter()
                        .filter(|n| labels.matches(&n.labels))
                        .filter(|n| {
                            fields.matches(|f| match f {
                                "metadata.name" => Some(n.name.clone()),
                                _ => None,
                            })
                        })
                        .map(|n| node_metrics(s, n))
                        .collect()
                })
                .unwrap_or_default();
            Ok(list("NodeMetricsList", items))
        }
        MetricsPath::Pods {
            namespace: Some(ns),
            name: Some(name),
        } => snapshot
            .as_deref()
            .and_then(|s| {
                s.pods
                    .iter()
                    .find(|p| p.namespace == ns && p.name == name)
                    .map(|p| (s, p))
            })
            .map(|(s, p)| pod_metrics(s, p))
            .ok_or_else(|| not_found("podmetrics", &format!("{ns}/{name}"))),
        MetricsPath::Pods { namespace, .. } => {
            let items = snapshot
                .as_deref()
                .map(|s| {
                    s.pods
                        .iter()
                        .filter(|p| namespace.as_deref().is_none_or(|ns| p.namespace == ns))
                        .filter(|p| labels.matches(&p.labels))
                        .filter(|p| {
                            fields.matches(|f| match f {
                                "metadata.name" => Some(p.name.clone()),
                                "metadata.namespace" => Some(p.namespace.clone()),
                                _ => None,
                            })
                        })
                        .map(|p| pod_metrics(s, p))
                        .collect()
                })
                .unwrap_or_default();
            Ok(list("PodMetricsList", items))
        }
    }
}

/// metrics-server's 404: `podmetrics.metrics.k8s.io "default/web" not found`.
fn not_found(resource: &str, name: &str) -> ApiError {
    let mut e = ApiError::new(
        404,
        "NotFound",
        format!("{resource}.{GROUP} \"{name}\" not found"),
    );
    e.details.name = Some(name.to_string());
    e.details.group = Some(GROUP.to_string());
    e.details.kind = Some(resource.to_string());
    e
}

fn list(kind: &str, items: Vec<Value>) -> Value {
    json!({"kind": kind, "apiVersion": GROUP_VERSION, "metadata": {}, "items": items})
}

/// `usage` as metrics-server writes it: CPU scaled from nanocores, memory in binary SI.
fn usage(cpu_nanocores: i64, memory_bytes: i64) -> Value {
    json!({
        "cpu": Quantity::new_scaled(cpu_nanocores, -9).to_string(),
        "memory": Quantity::new(memory_bytes, Format::BinarySI).to_string(),
    })
}

fn metadata(s: &UsageSnapshot, name: &str, namespace: Option<&str>, labels: &Value) -> Value {
    let mut meta = Map::new();
    meta.insert("name".into(), json!(name));
    if let Some(ns) = namespace {
        meta.insert("namespace".into(), json!(ns));
    }
    // metrics-server stamps its objects with the time they are served.
    meta.insert(
        "creationTimestamp".into(),
        json!(jiff::Timestamp::now()
            .max(s.timestamp)
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string()),
    );
    if labels.as_object().is_some_and(|m| !m.is_empty()) {
        meta.insert("labels".into(), labels.clone());
    }
    Value::Object(meta)
}

fn timestamp(s: &UsageSnapshot) -> String {
    s.timestamp.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn node_metrics(s: &UsageSnapshot, n: &NodeUsage) -> Value {
    json!({
        "kind": "NodeMetrics",
        "apiVersion": GROUP_VERSION,
        "metadata": metadata(s, &n.name, None, &json!(n.labels)),
        "timestamp": timestamp(s),
        "window": rkcm_apimachinery::duration::format_std(s.window),
        "usage": usage(n.cpu_nanocores, n.memory_bytes),
    })
}

fn pod_metrics(s: &UsageSnapshot, p: &PodUsage) -> Value {
    json!({
        "kind": "PodMetrics",
        "apiVersion": GROUP_VERSION,
        "metadata": metadata(s, &p.name, Some(&p.namespace), &json!(p.labels)),
        "timestamp": timestamp(s),
        "window": rkcm_apimachinery::duration::format_std(s.window),
        "containers": p.containers.iter().map(|c| json!({
            "name": c.name,
            "usage": usage(c.cpu_nanocores, c.memory_bytes),
        })).collect::<Vec<_>>(),
    })
}

/// The group's two resources as discovery lists them (`APIResourceList` entries).
pub fn api_resources() -> Vec<Value> {
    vec![
        json!({"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"]}),
        json!({"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]}),
    ]
}

/// The group's entry of aggregated discovery (`APIGroupDiscovery`).
pub fn aggregated_group() -> Value {
    let resource = |plural: &str, kind: &str, scope: &str| {
        json!({
            "resource": plural,
            "responseKind": {"group": GROUP, "version": VERSION, "kind": kind},
            "scope": scope,
            "singularResource": "",
            "verbs": ["get", "list"],
        })
    };
    json!({
        "metadata": {"name": GROUP},
        "versions": [{
            "version": VERSION,
            "resources": [resource("nodes", "NodeMetrics", "Cluster"), resource("pods", "PodMetrics", "Namespaced")],
            "freshness": "Current",
        }],
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::resource_metrics::ContainerUsage;

    struct Fixed(Option<Arc<UsageSnapshot>>);

    impl MetricsSource for Fixed {
        fn snapshot(&self) -> Option<Arc<UsageSnapshot>> {
            self.0.clone()
        }
    }

    fn source() -> Fixed {
        let labels = |app: &str| BTreeMap::from([("app".to_string(), app.to_string())]);
        Fixed(Some(Arc::new(UsageSnapshot {
            timestamp: "2026-01-02T03:04:05Z".parse().expect("time"),
            window: Duration::from_secs(15),
            pods: vec![
                PodUsage {
                    namespace: "default".into(),
                    name: "web-1".into(),
                    labels: labels("web"),
                    containers: vec![ContainerUsage {
                        name: "web".into(),
                        cpu_nanocores: 250_000_000,
                        memory_bytes: 64 << 20,
                    }],
                },
                PodUsage {
                    namespace: "other".into(),
                    name: "db-1".into(),
                    labels: labels("db"),
                    containers: vec![],
                },
            ],
            nodes: vec![NodeUsage {
                name: "n1".into(),
                labels: BTreeMap::new(),
                cpu_nanocores: 1_500_000,
                memory_bytes: 1000,
            }],
        })))
    }

    const PODS: &str = "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods";

    #[test]
    fn paths_address_nodes_and_namespaced_pods() {
        assert_eq!(
            parse("/apis/metrics.k8s.io/v1beta1/nodes/n1"),
            Some(MetricsPath::Nodes {
                name: Some("n1".into())
            })
        );
        assert_eq!(
            parse("/apis/metrics.k8s.io/v1beta1/pods"),
            Some(MetricsPath::Pods {
                namespace: None,
                name: None
            })
        );
        assert!(parse("/apis/metrics.k8s.io/v1beta1/namespaces/x").is_none());
        assert!(parse("/apis/metrics.k8s.io/v1beta1/pods/x").is_none());
    }

    #[test]
    fn pod_metrics_carry_usage_timestamp_and_window_as_metrics_server() {
        let got = serve(
            &source(),
            &Method::GET,
            &format!("{PODS}/web-1"),
            None,
            None,
        )
        .expect("served");
        assert_eq!(got["kind"], "PodMetrics");
        assert_eq!(got["apiVersion"], "metrics.k8s.io/v1beta1");
        assert_eq!(got["metadata"]["namespace"], "default");
        assert_eq!(got["metadata"]["labels"]["app"], "web");
        assert_eq!(got["timestamp"], "2026-01-02T03:04:05Z");
        assert_eq!(got["window"], "15s");
        assert_eq!(got["containers"][0]["usage"]["cpu"], "250m");
        assert_eq!(got["containers"][0]["usage"]["memory"], "64Mi");
    }

    #[test]
    fn lists_are_filtered_by_namespace_and_selectors() {
        let s = source();
        let all = serve(
            &s,
            &Method::GET,
            "/apis/metrics.k8s.io/v1beta1/pods",
            None,
            None,
        )
        .expect("served");
        assert_eq!(all["kind"], "PodMetricsList");
        assert_eq!(all["items"].as_array().map(Vec::len), Some(2));
        let ns = serve(&s, &Method::GET, PODS, None, None).expect("served");
        assert_eq!(ns["items"].as_array().map(Vec::len), Some(1));
        let none = serve(&s, &Method::GET, PODS, Some("app=db"), None).expect("served");
        assert_eq!(none["items"].as_array().map(Vec::len), Some(0));
        let by_name = serve(
            &s,
            &Method::GET,
            "/apis/metrics.k8s.io/v1beta1/pods",
            None,
            Some("metadata.name=db-1"),
        )
        .expect("served");
        assert_eq!(by_name["items"][0]["metadata"]["name"], "db-1");
        assert!(serve(&s, &Method::GET, PODS, Some("a in ("), None).is_err());
    }

    #[test]
    fn node_metrics_and_not_found_messages_are_metrics_servers() {
        let s = source();
        let n = serve(
            &s,
            &Method::GET,
            "/apis/metrics.k8s.io/v1beta1/nodes/n1",
            None,
            None,
        )
        .expect("served");
        assert_eq!(n["usage"]["cpu"], "1500u");
        // As Go's Quantity: binary values under 1024 print in decimal SI.
        assert_eq!(n["usage"]["memory"], "1k");
        let e = serve(&s, &Method::GET, &format!("{PODS}/nope"), None, None).expect_err("absent");
        assert_eq!(e.code, 404);
        assert_eq!(
            e.message,
            "podmetrics.metrics.k8s.io \"default/nope\" not found"
        );
        let e = serve(&s, &Method::POST, PODS, None, None).expect_err("read only");
        assert_eq!(e.code, 405);
    }

    #[test]
    fn before_the_first_snapshot_lists_are_empty() {
        let got = serve(&Fixed(None), &Method::GET, PODS, None, None).expect("served");
        assert_eq!(got["items"], json!([]));
    }
}
