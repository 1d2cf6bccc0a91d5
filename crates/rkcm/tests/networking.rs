//! End to end: Endpoints and EndpointSlices under `rkcm up --nodes 2`, driven by the real
//! kubectl: a Deployment behind a Service, scaling, a pod that stops being ready, a selectorless
//! Service with hand-written Endpoints, the Service proxy, and deletion.

mod common;

use std::time::Duration;

use common::Cluster;
use serde_json::Value;

const MINUTE: Duration = Duration::from_secs(60);

fn apply(cluster: &Cluster, manifest: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, manifest).expect("manifest written");
    cluster.kubectl(&["apply", "-f", path.to_str().expect("utf-8 path")]);
}

fn json(cluster: &Cluster, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&cluster.kubectl(&all)).expect("kubectl prints JSON")
}

/// (ready, not ready) IPs of the Endpoints `name`, each sorted; `None` if it does not exist.
fn endpoint_ips(cluster: &Cluster, name: &str) -> Option<(Vec<String>, Vec<String>)> {
    let out = cluster.kubectl_output(&["get", "endpoints", name, "-o", "json"]);
    if !out.status.success() {
        return None;
    }
    let e: Value = serde_json::from_slice(&out.stdout).expect("kubectl prints JSON");
    let collect = |field: &str| {
        let mut ips: Vec<String> = e["subsets"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|s| s[field].as_array().cloned().unwrap_or_default())
            .filter_map(|a| a["ip"].as_str().map(String::from))
            .collect();
        ips.sort();
        ips
    };
    Some((collect("addresses"), collect("notReadyAddresses")))
}

/// The slices of Service `name` and their (address, ready) endpoints, sorted.
fn slices(cluster: &Cluster, name: &str) -> (Vec<Value>, Vec<(String, bool)>) {
    let selector = format!("kubernetes.io/service-name={name}");
    let list = json(cluster, &["get", "endpointslices", "-l", &selector]);
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let mut endpoints: Vec<(String, bool)> = items
        .iter()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .map(|e| {
            (
                e["addresses"][0].as_str().unwrap_or_default().to_string(),
                e["conditions"]["ready"].as_bool().unwrap_or(false),
            )
        })
        .collect();
    endpoints.sort();
    (items, endpoints)
}

fn pod_ips(cluster: &Cluster) -> Vec<String> {
    let out = cluster.jsonpath(
        &["get", "pods", "-l", "app=web"],
        "{.items[*].status.podIP}",
    );
    let mut ips: Vec<String> = out.split_whitespace().map(String::from).collect();
    ips.sort();
    ips
}

/// Waits until the Endpoints and the slices of `web` list exactly the running pods' IPs, `n` of
/// them, all ready.
fn wait_for_ready_endpoints(cluster: &Cluster, n: usize) -> Vec<String> {
    cluster.eventually(&format!("{n} ready endpoints of web"), MINUTE, || {
        let ips = pod_ips(cluster);
        if ips.len() != n || ips.iter().any(|ip| ip.is_empty()) {
            return None;
        }
        let (ready, not_ready) = endpoint_ips(cluster, "web")?;
        let (_, in_slices) = slices(cluster, "web");
        let want: Vec<(String, bool)> = ips.iter().map(|ip| (ip.clone(), true)).collect();
        (ready == ips && not_ready.is_empty() && in_slices == want).then_some(ips)
    })
}

#[test]
fn endpoints_and_endpoint_slices_follow_pods() {
    let mut cluster = Cluster::start(&["--nodes", "2", "--pod-ready-delay", "200ms"]);

    // A Deployment of 3 behind a Service: 3 addresses, one slice with 3 ready endpoints.
    cluster.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=3",
    ]);
    cluster.kubectl(&["expose", "deployment", "web", "--port", "80"]);
    let ips = wait_for_ready_endpoints(&cluster, 3);
    let (items, _) = slices(&cluster, "web");
    assert_eq!(items.len(), 1, "{items:?}");
    let slice = &items[0];
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(
        slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    assert_eq!(slice["metadata"]["ownerReferences"][0]["kind"], "Service");
    assert_eq!(slice["ports"][0]["port"], 80);
    let nodes: Vec<&str> = slice["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .filter_map(|e| e["nodeName"].as_str())
        .collect();
    assert_eq!(nodes.len(), 3);
    assert!(
        nodes.iter().all(|n| n.starts_with("rkcm-node-")),
        "{nodes:?}"
    );
    let table = cluster.kubectl(&["get", "endpoints", "web"]);
    assert!(table.contains(&format!("{}:80", ips[0])), "{table}");

    // The proxy is honest: the endpoints exist, but nothing runs behind them.
    let out = cluster.kubectl_output(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/services/web:80/proxy/",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("are pods on simulated nodes, which run no containers"),
        "{stderr}"
    );

    // Scale down to 1 and back to 3.
    cluster.kubectl(&["scale", "deployment", "web", "--replicas=1"]);
    wait_for_ready_endpoints(&cluster, 1);
    cluster.kubectl(&["scale", "deployment", "web", "--replicas=3"]);
    let ips = wait_for_ready_endpoints(&cluster, 3);

    // A pod that stops being ready moves to notReadyAddresses and `ready: false`, and back.
    let name = cluster.jsonpath(
        &[
            "get",
            "pods",
            "--field-selector",
            &format!("status.podIP={}", ips[0]),
        ],
        "{.items[0].metadata.name}",
    );
    cluster.kubectl(&["annotate", "pod", &name, "rkcm.io/never-ready=true"]);
    cluster.eventually("the unready pod in notReadyAddresses", MINUTE, || {
        let (ready, not_ready) = endpoint_ips(&cluster, "web")?;
        let (_, in_slices) = slices(&cluster, "web");
        let flagged = in_slices.contains(&(ips[0].clone(), false));
        (not_ready == [ips[0].clone()] && ready == ips[1..] && flagged).then_some(())
    });
    cluster.kubectl(&["annotate", "pod", &name, "rkcm.io/never-ready-"]);
    wait_for_ready_endpoints(&cluster, 3);

    // A selectorless Service with hand-written Endpoints gets a mirrored slice.
    apply(
        &cluster,
        "apiVersion: v1
kind: Service
metadata:
  name: db
spec:
  ports:
  - port: 5432
---
apiVersion: v1
kind: Endpoints
metadata:
  name: db
subsets:
- addresses:
  - ip: 192.0.2.10
  - ip: 192.0.2.11
  ports:
  - port: 5432
",
    );
    let mirrored = cluster.eventually("a mirrored slice for db", MINUTE, || {
        let (items, endpoints) = slices(&cluster, "db");
        let want = [
            ("192.0.2.10".to_string(), true),
            ("192.0.2.11".to_string(), true),
        ];
        (items.len() == 1 && endpoints == want).then(|| items[0].clone())
    });
    assert_eq!(
        mirrored["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslicemirroring-controller.k8s.io"
    );
    assert_eq!(
        mirrored["metadata"]["ownerReferences"][0]["kind"],
        "Endpoints"
    );

    // Deleting the Services removes their Endpoints and slices.
    cluster.kubectl(&["delete", "service", "web", "db"]);
    cluster.eventually(
        "the Endpoints and slices of web and db to go",
        MINUTE,
        || {
            let gone = |name: &str| {
                endpoint_ips(&cluster, name).is_none() && slices(&cluster, name).0.is_empty()
            };
            (gone("web") && gone("db")).then_some(())
        },
    );
    assert!(cluster.stop(), "rkcm up exits cleanly");
}
