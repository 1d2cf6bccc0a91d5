//! End to end: PodDisruptionBudgets on `rkcm up --nodes 2` with the real kubectl — the
//! disruption controller's status, `kubectl drain` evicting while honouring a budget, evictions
//! refused with kube's message, `maxUnavailable: 0`, `kubectl uncordon`.

mod common;

use std::time::Duration;

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);

/// The nodes of the pods labelled `app=<app>`, one entry per pod.
fn nodes_of(cluster: &Cluster, app: &str) -> Vec<String> {
    let selector = format!("app={app}");
    cluster
        .jsonpath(
            &["get", "pods", "-l", &selector],
            "{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}",
        )
        .lines()
        .map(str::to_string)
        .collect()
}

/// Waits until `deployment` has `n` ready replicas, all up to date.
fn wait_ready(cluster: &Cluster, deployment: &str, n: usize) {
    let target = format!("deployment/{deployment}");
    cluster.kubectl(&["rollout", "status", &target, "--timeout=120s"]);
    let want = n.to_string();
    cluster.eventually(&format!("{deployment} has {n} ready pods"), MINUTE, || {
        let ready = cluster.jsonpath(
            &["get", "deployment", deployment],
            "{.status.readyReplicas}",
        );
        (ready == want).then_some(())
    });
}

/// Waits until budget `name` allows `n` disruptions, its generation observed.
fn wait_allowed(cluster: &Cluster, name: &str, n: i32) {
    let want = format!(
        "{n} {}",
        cluster.jsonpath(&["get", "pdb", name], "{.metadata.generation}")
    );
    cluster.eventually(
        &format!("pdb {name} allows {n} disruptions"),
        MINUTE,
        || {
            let got = cluster.jsonpath(
                &["get", "pdb", name],
                "{.status.disruptionsAllowed} {.status.observedGeneration}",
            );
            (got == want).then_some(())
        },
    );
}

/// POSTs an Eviction of `pod` with `kubectl create --raw`; returns kubectl's output.
fn evict_raw(cluster: &Cluster, pod: &str) -> std::process::Output {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("eviction.json");
    let body = format!(
        r#"{{"apiVersion":"policy/v1","kind":"Eviction","metadata":{{"name":"{pod}","namespace":"default"}}}}"#
    );
    std::fs::write(&path, body).expect("eviction written");
    let url = format!("/api/v1/namespaces/default/pods/{pod}/eviction");
    cluster.kubectl_output(&[
        "create",
        "--raw",
        &url,
        "-f",
        path.to_str().expect("utf-8 path"),
    ])
}

fn first_pod(cluster: &Cluster, app: &str) -> String {
    let selector = format!("app={app}");
    cluster.jsonpath(
        &["get", "pods", "-l", &selector],
        "{.items[0].metadata.name}",
    )
}

const VIOLATES: &str = "Cannot evict pod as it would violate the pod's disruption budget";

#[test]
fn budgets_drain_and_refused_evictions() {
    let cluster = Cluster::start(&["--nodes", "2", "--pod-ready-delay", "200ms"]);

    // A budget over a Deployment: ALLOWED DISRUPTIONS 1 once the controller has seen it.
    cluster.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=3",
    ]);
    // Replacement pods take 3 s to become ready, so that a drain must wait for the budget
    // whatever the timing of its concurrent evictions.
    cluster.kubectl(&[
        "patch",
        "deployment",
        "web",
        "-p",
        r#"{"spec":{"template":{"metadata":{"annotations":{"rkcm.io/ready-delay":"3s"}}}}}"#,
    ]);
    wait_ready(&cluster, "web", 3);
    cluster.kubectl(&[
        "create",
        "pdb",
        "web",
        "--selector=app=web",
        "--min-available=2",
    ]);
    wait_allowed(&cluster, "web", 1);
    let table = cluster.kubectl(&["get", "pdb", "web"]);
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().expect("header").split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "MIN",
            "AVAILABLE",
            "MAX",
            "UNAVAILABLE",
            "ALLOWED",
            "DISRUPTIONS",
            "AGE"
        ]
    );
    let row: Vec<&str> = lines.next().expect("row").split_whitespace().collect();
    assert_eq!(&row[..4], ["web", "2", "N/A", "1"], "{table}");
    // The pods of the first rollout may still be terminating: they count as expected (an
    // integer minAvailable counts the matching pods) until they are gone.
    cluster.eventually("pdb web counts 3 pods", MINUTE, || {
        let status = cluster.jsonpath(
            &["get", "pdb", "web"],
            "{.status.currentHealthy} {.status.desiredHealthy} {.status.expectedPods} {.status.conditions[0].type}={.status.conditions[0].status}/{.status.conditions[0].reason}",
        );
        (status == "3 2 3 DisruptionAllowed=True/SufficientPods").then_some(())
    });
    cluster.eventually("3 web pods", MINUTE, || {
        (nodes_of(&cluster, "web").len() == 3).then_some(())
    });

    // Draining the node with most of the pods (two at least) evicts them one disruption at a
    // time: the second eviction is refused until the first pod's replacement, on the other
    // node, is ready; kubectl retries it and the drain completes.
    let nodes = nodes_of(&cluster, "web");
    let busiest = |n: &str| nodes.iter().filter(|m| m.as_str() == n).count();
    let (drained, other) = if busiest("rkcm-node-1") >= busiest("rkcm-node-2") {
        ("rkcm-node-1".to_string(), "rkcm-node-2")
    } else {
        ("rkcm-node-2".to_string(), "rkcm-node-1")
    };
    assert!(busiest(&drained) >= 2, "{nodes:?}");
    let out = cluster.kubectl_output(&[
        "drain",
        &drained,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=180s",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("node/{drained} drained")),
        "{stdout}"
    );
    assert!(
        stderr.contains(VIOLATES) && stderr.contains("will retry after 5s"),
        "the budget held the second eviction back: {stderr}"
    );
    assert_eq!(
        cluster.jsonpath(&["get", "node", &drained], "{.spec.unschedulable}"),
        "true"
    );
    cluster.eventually("web runs on the other node only", 2 * MINUTE, || {
        let nodes = nodes_of(&cluster, "web");
        (nodes.len() == 3 && nodes.iter().all(|n| n == other)).then_some(())
    });
    wait_ready(&cluster, "web", 3);
    wait_allowed(&cluster, "web", 1);
    let out = cluster.kubectl(&["uncordon", &drained]);
    assert!(out.contains(&format!("node/{drained} uncordoned")), "{out}");
    assert_eq!(
        cluster.jsonpath(&["get", "node", &drained], "{.spec.unschedulable}"),
        ""
    );

    // A budget with no disruption left refuses an eviction with kube's 429.
    cluster.kubectl(&[
        "create",
        "deployment",
        "db",
        "--image=postgres",
        "--replicas=2",
    ]);
    wait_ready(&cluster, "db", 2);
    cluster.kubectl(&[
        "create",
        "pdb",
        "db",
        "--selector=app=db",
        "--min-available=2",
    ]);
    wait_allowed(&cluster, "db", 0);
    let status = cluster.jsonpath(
        &["get", "pdb", "db"],
        "{.status.currentHealthy} {.status.desiredHealthy} {.status.conditions[0].status}/{.status.conditions[0].reason}",
    );
    assert_eq!(status, "2 2 False/InsufficientPods");
    let pod = first_pod(&cluster, "db");
    let out = evict_raw(&cluster, &pod);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("TooManyRequests") && stderr.contains(VIOLATES),
        "{stderr}"
    );
    assert!(
        cluster
            .jsonpath(&["get", "pod", &pod], "{.metadata.deletionTimestamp}")
            .is_empty(),
        "a refused eviction deletes nothing"
    );

    // maxUnavailable: 0 blocks every eviction: a drain of the node times out saying why.
    cluster.kubectl(&[
        "create",
        "deployment",
        "cache",
        "--image=redis",
        "--replicas=1",
    ]);
    wait_ready(&cluster, "cache", 1);
    cluster.kubectl(&[
        "create",
        "pdb",
        "cache",
        "--selector=app=cache",
        "--max-unavailable=0",
    ]);
    wait_allowed(&cluster, "cache", 0);
    let node = nodes_of(&cluster, "cache").remove(0);
    let out = cluster.kubectl_output(&[
        "drain",
        &node,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--pod-selector=app=cache",
        "--timeout=12s",
    ]);
    assert!(!out.status.success(), "the drain cannot finish");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(VIOLATES), "{stderr}");
    let cache_pod = first_pod(&cluster, "cache");
    assert!(cluster
        .jsonpath(&["get", "pod", &cache_pod], "{.metadata.deletionTimestamp}")
        .is_empty());
    cluster.kubectl(&["uncordon", &node]);

    // A server-side dry-run drain evicts nothing and takes no disruption.
    let web_node = nodes_of(&cluster, "web").remove(0);
    let out = cluster.kubectl(&[
        "drain",
        &web_node,
        "--ignore-daemonsets",
        "--pod-selector=app=web",
        "--dry-run=server",
    ]);
    assert!(out.contains("(server dry run)"), "{out}");
    assert_eq!(
        cluster.jsonpath(&["get", "node", &web_node], "{.spec.unschedulable}"),
        ""
    );
    assert_eq!(
        cluster.jsonpath(&["get", "pdb", "web"], "{.status.disruptionsAllowed}"),
        "1"
    );
    let terminating = cluster.jsonpath(
        &["get", "pods", "-l", "app=web"],
        "{range .items[*]}{.metadata.deletionTimestamp}{end}",
    );
    assert!(terminating.is_empty(), "{terminating}");
}
