//! End to end: DaemonSets on `rkcm up --nodes 3` driven by the real kubectl: taints and
//! tolerations, a rolling update with its history and undo, a node selector, a cordoned node.

mod common;

use std::time::Duration;

use common::Cluster;

const TIMEOUT: Duration = Duration::from_secs(90);

fn apply(cluster: &Cluster, manifest: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, manifest).expect("manifest written");
    cluster.kubectl(&["apply", "-f", path.to_str().expect("utf-8 path")]);
}

/// The columns of `kubectl get ds <name>`'s row, with the header checked.
fn ds_row(cluster: &Cluster, name: &str) -> Vec<String> {
    let out = cluster.kubectl(&["get", "ds", name]);
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "NODE",
            "SELECTOR",
            "AGE"
        ],
        "{out}"
    );
    lines
        .next()
        .unwrap_or("")
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// `(pod name, node)` of the DaemonSet's running pods (not being deleted), sorted by node.
fn pods_by_node(cluster: &Cluster, app: &str) -> Vec<(String, String)> {
    let out = cluster.jsonpath(
        &["get", "pods", "-l", &format!("app={app}")],
        r#"{range .items[?(@.status.phase=="Running")]}{.metadata.name} {.spec.nodeName} {.metadata.deletionTimestamp}{"\n"}{end}"#,
    );
    let mut pods: Vec<(String, String)> = out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() == 2)
        .map(|f| (f[0].to_string(), f[1].to_string()))
        .collect();
    pods.sort_by(|a, b| a.1.cmp(&b.1));
    pods
}

/// Images of the DaemonSet's pods not being deleted.
fn pod_images(cluster: &Cluster, app: &str) -> Vec<String> {
    let out = cluster.jsonpath(
        &["get", "pods", "-l", &format!("app={app}")],
        r#"{range .items[*]}{.spec.containers[0].image} {.metadata.deletionTimestamp}{"\n"}{end}"#,
    );
    out.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() == 1)
        .map(|f| f[0].to_string())
        .collect()
}

fn daemon_set(name: &str, image: &str, extra_pod_spec: &str) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {name}
spec:
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
{extra_pod_spec}      containers:
        - name: {name}
          image: {image}
"#
    )
}

#[test]
fn daemon_sets_follow_taints_selectors_and_roll_out_node_by_node() {
    let cluster = Cluster::start(&["--nodes", "3", "--pod-ready-delay", "300ms"]);
    cluster.kubectl(&[
        "taint",
        "nodes",
        "rkcm-node-3",
        "dedicated=special:NoSchedule",
    ]);

    // Two of three nodes: the third is tainted.
    apply(&cluster, &daemon_set("tolerant", "nginx:1.27", ""));
    let row = cluster.eventually("2 desired, 2 ready", TIMEOUT, || {
        let row = ds_row(&cluster, "tolerant");
        (row.get(1).map(String::as_str) == Some("2") && row.get(3).map(String::as_str) == Some("2"))
            .then_some(row)
    });
    assert_eq!(row[0], "tolerant");
    let nodes: Vec<String> = pods_by_node(&cluster, "tolerant")
        .into_iter()
        .map(|p| p.1)
        .collect();
    assert_eq!(nodes, ["rkcm-node-1", "rkcm-node-2"]);

    // A toleration brings the third.
    cluster.kubectl(&[
        "patch",
        "ds",
        "tolerant",
        "-p",
        r#"{"spec":{"template":{"spec":{"tolerations":[{"key":"dedicated","operator":"Equal","value":"special","effect":"NoSchedule"}]}}}}"#,
    ]);
    cluster.eventually("a pod on the tainted node", TIMEOUT, || {
        let nodes: Vec<String> = pods_by_node(&cluster, "tolerant")
            .into_iter()
            .map(|p| p.1)
            .collect();
        (nodes == ["rkcm-node-1", "rkcm-node-2", "rkcm-node-3"]).then_some(())
    });
    cluster.kubectl(&["rollout", "status", "daemonset/tolerant", "--timeout=90s"]);
    assert_eq!(ds_row(&cluster, "tolerant")[1], "3");

    // An image change rolls out one node at a time; history and undo.
    apply(
        &cluster,
        &daemon_set(
            "agent",
            "nginx:1.27",
            "      tolerations:\n        - key: dedicated\n          operator: Exists\n",
        ),
    );
    cluster.kubectl(&["rollout", "status", "daemonset/agent", "--timeout=90s"]);
    cluster.kubectl(&["set", "image", "daemonset/agent", "agent=nginx:1.28"]);
    cluster.eventually("every agent pod on nginx:1.28", TIMEOUT, || {
        let running = pods_by_node(&cluster, "agent");
        assert!(
            running.len() >= 2,
            "maxUnavailable 1: more than one node without a running agent: {running:?}"
        );
        let images = pod_images(&cluster, "agent");
        (images.len() == 3 && images.iter().all(|i| i == "nginx:1.28")).then_some(())
    });
    let status = cluster.kubectl(&["rollout", "status", "daemonset/agent", "--timeout=90s"]);
    assert!(status.contains("successfully rolled out"), "{status}");

    let history = cluster.kubectl(&["rollout", "history", "daemonset/agent"]);
    let revisions: Vec<&str> = history
        .lines()
        .skip_while(|l| !l.starts_with("REVISION"))
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(revisions, ["1", "2"], "{history}");

    cluster.kubectl(&["rollout", "undo", "daemonset/agent"]);
    let image = cluster.jsonpath(
        &["get", "ds", "agent"],
        "{.spec.template.spec.containers[0].image}",
    );
    assert_eq!(image, "nginx:1.27");
    cluster.eventually("every agent pod back on nginx:1.27", TIMEOUT, || {
        let images = pod_images(&cluster, "agent");
        (images.len() == 3 && images.iter().all(|i| i == "nginx:1.27")).then_some(())
    });
    cluster.kubectl(&["rollout", "status", "daemonset/agent", "--timeout=90s"]);
    // The first revision came back as revision 3, and kubectl recognises it as the current one
    // (its bytes match what kubectl encodes from the DaemonSet).
    let history = cluster.eventually("revisions 2 and 3", TIMEOUT, || {
        let history = cluster.kubectl(&["rollout", "history", "daemonset/agent"]);
        history.contains("\n3 ").then_some(history)
    });
    assert!(history.contains("\n2 "), "{history}");
    assert!(!history.contains("\n1 "), "{history}");
    let skipped = cluster.kubectl(&["rollout", "undo", "daemonset/agent", "--to-revision=3"]);
    assert!(
        skipped.contains("skipped rollback (current template already matches revision 3)"),
        "{skipped}"
    );

    // A node selector matching one labelled node gives one pod.
    cluster.kubectl(&["label", "node", "rkcm-node-2", "role=edge"]);
    apply(
        &cluster,
        &daemon_set(
            "edge",
            "nginx:1.27",
            "      nodeSelector:\n        role: edge\n",
        ),
    );
    cluster.eventually("one edge pod on rkcm-node-2", TIMEOUT, || {
        let pods = pods_by_node(&cluster, "edge");
        let row = ds_row(&cluster, "edge");
        (pods.len() == 1 && pods[0].1 == "rkcm-node-2" && row[1] == "1").then_some(())
    });

    // A cordoned node keeps its daemon pod, and a replacement lands there (daemon pods tolerate
    // node.kubernetes.io/unschedulable).
    let before = pods_by_node(&cluster, "agent");
    cluster.kubectl(&["cordon", "rkcm-node-1"]);
    let on_node_1 = before
        .iter()
        .find(|p| p.1 == "rkcm-node-1")
        .map(|p| p.0.clone())
        .expect("an agent pod on rkcm-node-1");
    cluster.kubectl(&["delete", "pod", &on_node_1, "--wait=false"]);
    cluster.eventually(
        "a new agent pod running on the cordoned node",
        TIMEOUT,
        || {
            let pods = pods_by_node(&cluster, "agent");
            pods.iter()
                .any(|p| p.1 == "rkcm-node-1" && p.0 != on_node_1)
                .then_some(())
        },
    );
    let after = pods_by_node(&cluster, "agent");
    for (name, node) in before.iter().filter(|p| p.1 != "rkcm-node-1") {
        assert!(
            after.contains(&(name.clone(), node.clone())),
            "{name} on {node} was replaced: {after:?}"
        );
    }
    let unschedulable = cluster.jsonpath(&["get", "node", "rkcm-node-1"], "{.spec.unschedulable}");
    assert_eq!(unschedulable, "true");
}
