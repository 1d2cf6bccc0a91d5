//! End to end: the node controllers in `rkcm up` with three simulated nodes, driven by kubectl.
//! A node whose simulated kubelet is stopped (`rkcm.io/heartbeat=stopped`) goes Unknown, is
//! tainted unreachable, its pods are marked not ready and evicted after their tolerationSeconds,
//! and it comes back when the annotation goes; node CIDRs, pod IPs and the TTL annotation.

mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::Cluster;
use serde_json::Value;

const MINUTE: Duration = Duration::from_secs(60);
/// `--node-monitor-grace-period` of the test cluster.
const GRACE: &str = "4s";

fn apply(cluster: &Cluster, manifest: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, manifest).expect("manifest written");
    cluster.kubectl(&["apply", "-f", path.to_str().expect("utf-8 path")]);
}

fn get_json(cluster: &Cluster, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&cluster.kubectl(&all)).expect("kubectl prints JSON")
}

/// `10.244.3.0/24` → (network, prefix length).
fn parse_cidr(cidr: &str) -> (Ipv4Addr, u32) {
    let (ip, len) = cidr.split_once('/').expect("a CIDR has a prefix length");
    (
        ip.parse().expect("an IPv4 network"),
        len.parse().expect("a numeric prefix length"),
    )
}

fn contains(cidr: &str, ip: Ipv4Addr) -> bool {
    let (net, len) = parse_cidr(cidr);
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    u32::from(ip) & mask == u32::from(net) & mask
}

fn taints(node: &Value) -> Vec<(String, String)> {
    node["spec"]["taints"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| {
                    (
                        t["key"].as_str().unwrap_or_default().to_string(),
                        t["effect"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn condition<'a>(object: &'a Value, type_: &str) -> Option<&'a Value> {
    object["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

fn timestamp(v: &Value) -> jiff::Timestamp {
    v.as_str()
        .expect("a timestamp string")
        .parse()
        .expect("an RFC 3339 timestamp")
}

/// A pod pinned to `node` tolerating `unreachable:NoExecute` for `seconds` (forever if `None`).
fn pinned_pod(name: &str, node: &str, seconds: Option<u32>) -> String {
    let seconds = seconds
        .map(|s| format!("\n      tolerationSeconds: {s}"))
        .unwrap_or_default();
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  nodeName: {node}
  tolerations:
    - key: node.kubernetes.io/unreachable
      operator: Exists
      effect: NoExecute{seconds}
  containers:
    - name: c
      image: busybox
      command: ["sleep", "3600"]
"#
    )
}

#[test]
fn dead_nodes_are_tainted_and_their_pods_evicted_and_nodes_get_cidrs() {
    let cluster = Cluster::start(&[
        "--pod-ready-delay",
        "100ms",
        "--node-monitor-period",
        "200ms",
        "--node-monitor-grace-period",
        GRACE,
        "--node-startup-grace-period",
        GRACE,
    ]);

    // Node IPAM: every node gets its own /24 of 10.244.0.0/16; the TTL controller annotates
    // every node with the TTL for a small cluster, 0.
    let names: Vec<String> = cluster.eventually("three nodes with pod CIDRs", MINUTE, || {
        let nodes = get_json(&cluster, &["get", "nodes"]);
        let items = nodes["items"].as_array()?;
        let cidrs: Vec<&str> = items
            .iter()
            .filter_map(|n| n["spec"]["podCIDR"].as_str())
            .collect();
        (items.len() == 3 && cidrs.len() == 3).then(|| {
            items
                .iter()
                .filter_map(|n| n["metadata"]["name"].as_str().map(String::from))
                .collect()
        })
    });
    let wide = cluster.kubectl(&[
        "get",
        "nodes",
        "-o",
        "custom-columns=NAME:.metadata.name,CIDR:.spec.podCIDR",
        "--no-headers",
    ]);
    let mut seen = Vec::new();
    for name in &names {
        let cidr = cluster.jsonpath(&["get", "node", name], "{.spec.podCIDR}");
        let (_, len) = parse_cidr(&cidr);
        assert_eq!(len, 24, "node {name} has a /24: {cidr}");
        assert!(
            contains("10.244.0.0/16", parse_cidr(&cidr).0),
            "{cidr} is in the cluster CIDR"
        );
        assert!(!seen.contains(&cidr), "{cidr} is given once");
        assert!(
            wide.lines()
                .any(|l| l.starts_with(name.as_str()) && l.contains(&cidr)),
            "{wide}"
        );
        let cidrs = cluster.jsonpath(&["get", "node", name], "{.spec.podCIDRs[0]}");
        assert_eq!(cidrs, cidr);
        seen.push(cidr);
        cluster.eventually("the TTL annotation", MINUTE, || {
            let ttl = cluster.jsonpath(
                &["get", "node", name],
                r"{.metadata.annotations.node\.alpha\.kubernetes\.io/ttl}",
            );
            (ttl == "0").then_some(())
        });
    }

    // A ReplicaSet whose pods tolerate an unreachable node for 5 seconds, one pod per node.
    apply(
        &cluster,
        r#"apiVersion: apps/v1
kind: ReplicaSet
metadata:
  name: web
spec:
  replicas: 3
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      tolerations:
        - key: node.kubernetes.io/unreachable
          operator: Exists
          effect: NoExecute
          tolerationSeconds: 5
      containers:
        - name: c
          image: busybox
          command: ["sleep", "3600"]
"#,
    );
    let pods = cluster.eventually("three running web pods", MINUTE, || {
        let pods = get_json(&cluster, &["get", "pods", "-l", "app=web"]);
        let items = pods["items"].as_array()?.clone();
        let running = items
            .iter()
            .filter(|p| p["status"]["phase"] == "Running" && p["status"]["podIP"].is_string())
            .count();
        (items.len() == 3 && running == 3).then_some(items)
    });
    // Pod IPs come from the pod CIDR of the pod's node.
    for pod in &pods {
        let node = pod["spec"]["nodeName"].as_str().expect("a bound pod");
        let cidr = cluster.jsonpath(&["get", "node", node], "{.spec.podCIDR}");
        let ip: Ipv4Addr = pod["status"]["podIP"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .expect("an IPv4 pod IP");
        assert!(contains(&cidr, ip), "pod IP {ip} is in {node}'s {cidr}");
    }
    let victim = pods[0]["spec"]["nodeName"]
        .as_str()
        .expect("a bound pod")
        .to_string();
    let victim_pod = pods[0]["metadata"]["name"]
        .as_str()
        .expect("a named pod")
        .to_string();

    // Two pods pinned to the same node: one tolerating it forever, one for 5 seconds.
    apply(&cluster, &pinned_pod("forever", &victim, None));
    apply(&cluster, &pinned_pod("five", &victim, Some(5)));
    cluster.kubectl(&[
        "wait",
        "--for=condition=Ready",
        "pod/forever",
        "pod/five",
        "--timeout=60s",
    ]);

    // The node's kubelet stops: Ready goes Unknown with kube's reason and message, and the
    // node is tainted unreachable, NoSchedule and NoExecute.
    cluster.kubectl(&["annotate", "node", &victim, "rkcm.io/heartbeat=stopped"]);
    let node = cluster.eventually("the node tainted unreachable", MINUTE, || {
        let node = get_json(&cluster, &["get", "node", &victim]);
        let t = taints(&node);
        let unreachable = |effect: &str| {
            t.contains(&(
                "node.kubernetes.io/unreachable".to_string(),
                effect.to_string(),
            ))
        };
        (unreachable("NoSchedule") && unreachable("NoExecute")).then_some(node)
    });
    let ready = condition(&node, "Ready").expect("a Ready condition");
    assert_eq!(ready["status"], "Unknown", "{ready}");
    assert_eq!(ready["reason"], "NodeStatusUnknown");
    assert_eq!(ready["message"], "Kubelet stopped posting node status.");
    for type_ in ["MemoryPressure", "DiskPressure", "PIDPressure"] {
        assert_eq!(
            condition(&node, type_).expect("a pressure condition")["status"],
            "Unknown"
        );
    }
    let no_execute_added = node["spec"]["taints"]
        .as_array()
        .and_then(|ts| {
            ts.iter().find(|t| {
                t["key"] == "node.kubernetes.io/unreachable" && t["effect"] == "NoExecute"
            })
        })
        .map(|t| timestamp(&t["timeAdded"]))
        .expect("the NoExecute taint has its timeAdded");
    let printed = cluster.kubectl(&["get", "node", &victim, "--no-headers"]);
    assert!(printed.contains("NotReady"), "{printed}");

    // Its pods are marked not ready by the controller (the kubelet is gone).
    cluster.eventually("the forever pod marked not ready", MINUTE, || {
        let pod = get_json(&cluster, &["get", "pod", "forever"]);
        (condition(&pod, "Ready")?["status"] == "False").then_some(())
    });

    // After 5 seconds the pods tolerating 5 seconds are evicted: DisruptionTarget with
    // DeletionByTaintManager, then deleted (they stay Terminating: their kubelet is stopped).
    for name in [victim_pod.as_str(), "five"] {
        let pod = cluster.eventually(&format!("pod {name} evicted"), MINUTE, || {
            let out = cluster.kubectl_output(&["get", "pod", name, "-o", "json"]);
            if !out.status.success() {
                return None;
            }
            let pod: Value = serde_json::from_slice(&out.stdout).ok()?;
            pod["metadata"]["deletionTimestamp"]
                .is_string()
                .then_some(pod)
        });
        let target = condition(&pod, "DisruptionTarget").expect("a DisruptionTarget condition");
        assert_eq!(target["status"], "True");
        assert_eq!(target["reason"], "DeletionByTaintManager");
        assert_eq!(
            target["message"],
            "Taint manager: deleting due to NoExecute taint"
        );
        let waited = timestamp(&target["lastTransitionTime"]).duration_since(no_execute_added);
        // Timestamps are whole seconds.
        assert!(
            waited >= jiff::SignedDuration::from_secs(4),
            "pod {name} was evicted {waited:?} after the taint"
        );
    }
    let events = cluster.eventually("the eviction event", MINUTE, || {
        let out = cluster.kubectl(&[
            "get",
            "events",
            "--field-selector",
            "reason=TaintManagerEviction",
        ]);
        out.contains("Marking for deletion Pod default/five")
            .then_some(out)
    });
    assert!(events.contains("pod/five"), "{events}");

    // The ReplicaSet replaces its evicted pod on another node.
    cluster.eventually(
        "the ReplicaSet back to 3 ready pods elsewhere",
        MINUTE,
        || {
            let pods = get_json(&cluster, &["get", "pods", "-l", "app=web"]);
            let live: Vec<&Value> = pods["items"]
                .as_array()?
                .iter()
                .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
                .collect();
            let ready = live
                .iter()
                .filter(|p| {
                    p["spec"]["nodeName"].as_str() != Some(victim.as_str())
                        && condition(p, "Ready").is_some_and(|c| c["status"] == "True")
                })
                .count();
            (live.len() == 3 && ready == 3).then_some(())
        },
    );

    // The pod tolerating forever stays.
    let forever = get_json(&cluster, &["get", "pod", "forever"]);
    assert!(forever["metadata"]["deletionTimestamp"].is_null());

    // The kubelet comes back: Ready again, the taints go, and the evicted pods are finished.
    cluster.kubectl(&["annotate", "node", &victim, "rkcm.io/heartbeat-"]);
    cluster.eventually("the node Ready and untainted", MINUTE, || {
        let node = get_json(&cluster, &["get", "node", &victim]);
        let ready = condition(&node, "Ready")?["status"] == "True";
        let left = taints(&node)
            .iter()
            .any(|(k, _)| k == "node.kubernetes.io/unreachable");
        (ready && !left).then_some(())
    });
    cluster.eventually("the evicted pod removed", MINUTE, || {
        let out = cluster.kubectl_output(&["get", "pod", "five"]);
        (!out.status.success()).then_some(())
    });
    let forever = get_json(&cluster, &["get", "pod", "forever"]);
    assert!(forever["metadata"]["deletionTimestamp"].is_null());
    assert_eq!(forever["spec"]["nodeName"], victim.as_str());
}
