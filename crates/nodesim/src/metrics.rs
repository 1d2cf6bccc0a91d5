//! The simulated nodes' resource metrics: what metrics-server would scrape from their kubelets,
//! snapshotted every [`crate::Config::metric_resolution`] (15 s, metrics-server's
//! `--metric-resolution`) and served by the API server as `metrics.k8s.io/v1beta1` through the
//! [`MetricsSource`] trait.
//!
//! A pod's usage is read from its annotations [`CPU_USAGE_ANNOTATION`] (`rkcm.io/cpu-usage:
//! "250m"`) and [`MEMORY_USAGE_ANNOTATION`] (`rkcm.io/memory-usage: "64Mi"`), 0 without them
//! (or when they do not parse as quantities). Only Running pods on a simulated node have figures.
//! The pod's usage is all its first container's; its other containers report 0. A node's usage
//! is the sum of its pods'. A changed annotation shows at the next snapshot, not before.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod};
use parking_lot::RwLock;
use rkcm_apimachinery::quantity::Quantity;
use rkcm_registry::resource_metrics::{
    ContainerUsage, MetricsSource, NodeUsage, PodUsage, UsageSnapshot,
};

use crate::node_set::NodeSet;

/// A pod's CPU usage (a quantity: `"250m"`).
pub const CPU_USAGE_ANNOTATION: &str = "rkcm.io/cpu-usage";
/// A pod's memory usage (a quantity: `"64Mi"`).
pub const MEMORY_USAGE_ANNOTATION: &str = "rkcm.io/memory-usage";
/// metrics-server's default `--metric-resolution`.
pub const DEFAULT_METRIC_RESOLUTION: Duration = Duration::from_secs(15);

/// The latest snapshot, shared between the simulator (which takes it) and the API server
/// (which serves it). Clones share the same snapshot.
#[derive(Clone, Debug, Default)]
pub struct UsageSnapshots {
    latest: Arc<RwLock<Option<Arc<UsageSnapshot>>>>,
}

impl UsageSnapshots {
    /// No snapshot yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the served snapshot.
    pub fn publish(&self, snapshot: UsageSnapshot) {
        *self.latest.write() = Some(Arc::new(snapshot));
    }
}

impl MetricsSource for UsageSnapshots {
    fn snapshot(&self) -> Option<Arc<UsageSnapshot>> {
        self.latest.read().clone()
    }
}

/// An annotation's quantity scaled to `scale` (−9 for nanocores, 0 for bytes); 0 when absent or
/// malformed.
fn annotated(pod: &Pod, annotation: &str, scale: i32) -> i64 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotation))
        .and_then(|v| Quantity::parse(v.trim()).ok())
        .map(|q| q.scaled_value(scale).max(0))
        .unwrap_or(0)
}

/// The usage of `pod` if it has figures: Running, on a node in `served`.
pub fn pod_usage(pod: &Pod, served: &NodeSet) -> Option<PodUsage> {
    let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
    let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref())?;
    if !running || !served.contains(node) || pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let cpu = annotated(pod, CPU_USAGE_ANNOTATION, -9);
    let memory = annotated(pod, MEMORY_USAGE_ANNOTATION, 0);
    let containers = pod
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default()
        .iter()
        .enumerate()
        .map(|(i, c)| ContainerUsage {
            name: c.name.clone(),
            cpu_nanocores: if i == 0 { cpu } else { 0 },
            memory_bytes: if i == 0 { memory } else { 0 },
        })
        .collect();
    Some(PodUsage {
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        labels: pod.metadata.labels.clone().unwrap_or_default(),
        containers,
    })
}

/// The figures of every served node and of its Running pods at `now`, covering `window`.
/// `pods_on` gives the pods bound to one node: only served nodes' pods are read, one node at a
/// time, so a snapshot never holds every pod of the cluster decoded at once.
pub fn take_snapshot(
    pods_on: impl Fn(&str) -> Vec<Arc<Pod>>,
    nodes: &[Arc<Node>],
    served: &NodeSet,
    now: Timestamp,
    window: Duration,
) -> UsageSnapshot {
    let mut per_node: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    let mut pod_usages = Vec::new();
    for node in served.list() {
        let mut total = (0i64, 0i64);
        for pod in pods_on(&node.name) {
            let Some(usage) = pod_usage(&pod, served) else {
                continue;
            };
            for c in &usage.containers {
                total.0 = total.0.saturating_add(c.cpu_nanocores);
                total.1 = total.1.saturating_add(c.memory_bytes);
            }
            pod_usages.push(usage);
        }
        per_node.insert(node.name, total);
    }
    pod_usages.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    let labels_of = |name: &str| {
        nodes
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(name))
            .and_then(|n| n.metadata.labels.clone())
            .unwrap_or_default()
    };
    UsageSnapshot {
        timestamp: now,
        window,
        pods: pod_usages,
        nodes: per_node
            .into_iter()
            .map(|(name, (cpu, memory))| NodeUsage {
                labels: labels_of(&name),
                name,
                cpu_nanocores: cpu,
                memory_bytes: memory,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{Container, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::node_set::SimNode;

    fn served() -> NodeSet {
        let set = NodeSet::default();
        for (i, name) in ["n1", "n2"].into_iter().enumerate() {
            set.insert(SimNode {
                name: name.into(),
                index: i + 1,
                uid: String::new(),
                registered_at: Timestamp::UNIX_EPOCH,
            });
        }
        set
    }

    fn pod(name: &str, node: &str, phase: &str, annotations: &[(&str, &str)]) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                annotations: Some(
                    annotations
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                node_name: Some(node.into()),
                containers: vec![
                    Container {
                        name: "app".into(),
                        ..Container::default()
                    },
                    Container {
                        name: "sidecar".into(),
                        ..Container::default()
                    },
                ],
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                phase: Some(phase.into()),
                ..PodStatus::default()
            }),
        })
    }

    #[test]
    fn a_pods_annotated_usage_is_its_first_containers() {
        let p = pod(
            "a",
            "n1",
            "Running",
            &[
                (CPU_USAGE_ANNOTATION, "250m"),
                (MEMORY_USAGE_ANNOTATION, "64Mi"),
            ],
        );
        let usage = pod_usage(&p, &served()).expect("running on a simulated node");
        assert_eq!(usage.containers[0].cpu_nanocores, 250_000_000);
        assert_eq!(usage.containers[0].memory_bytes, 64 << 20);
        assert_eq!(usage.containers[1].cpu_nanocores, 0);
    }

    #[test]
    fn pods_without_annotations_or_with_bad_ones_use_nothing() {
        let p = pod("a", "n1", "Running", &[(CPU_USAGE_ANNOTATION, "lots")]);
        let usage = pod_usage(&p, &served()).expect("running");
        assert_eq!(usage.containers[0].cpu_nanocores, 0);
        assert_eq!(usage.containers[0].memory_bytes, 0);
    }

    #[test]
    fn only_running_pods_on_simulated_nodes_have_figures() {
        assert!(pod_usage(&pod("a", "n1", "Pending", &[]), &served()).is_none());
        assert!(pod_usage(&pod("a", "n1", "Succeeded", &[]), &served()).is_none());
        assert!(pod_usage(&pod("a", "elsewhere", "Running", &[]), &served()).is_none());
    }

    #[test]
    fn a_nodes_usage_is_the_sum_of_its_pods() {
        let pods = [
            pod("a", "n1", "Running", &[(CPU_USAGE_ANNOTATION, "250m")]),
            pod(
                "b",
                "n1",
                "Running",
                &[
                    (CPU_USAGE_ANNOTATION, "1"),
                    (MEMORY_USAGE_ANNOTATION, "1Ki"),
                ],
            ),
            pod("c", "n1", "Pending", &[(CPU_USAGE_ANNOTATION, "5")]),
        ];
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
        let pods_on = |node: &str| -> Vec<Arc<Pod>> {
            pods.iter()
                .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
                .cloned()
                .collect()
        };
        let s = take_snapshot(pods_on, &[], &served(), now, DEFAULT_METRIC_RESOLUTION);
        assert_eq!(s.timestamp, now);
        assert_eq!(s.pods.len(), 2);
        assert_eq!(s.nodes.len(), 2);
        assert_eq!(
            (s.nodes[0].name.as_str(), s.nodes[0].cpu_nanocores),
            ("n1", 1_250_000_000)
        );
        assert_eq!(s.nodes[0].memory_bytes, 1024);
        assert_eq!(
            (s.nodes[1].name.as_str(), s.nodes[1].cpu_nanocores),
            ("n2", 0)
        );
    }
}
