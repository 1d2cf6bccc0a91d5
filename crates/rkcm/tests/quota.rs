//! End to end: resource quotas on `rkcm up` with the real kubectl — usage shown by `get` and
//! `describe`, pods, Deployments and config maps refused with kube's messages once a quota is
//! spent, room freed by deletes, requests required by a quota on cpu, BestEffort scope.

mod common;

use std::time::Duration;

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);

fn apply(cluster: &Cluster, namespace: &str, manifest: &str) -> std::process::Output {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, manifest).expect("manifest written");
    cluster.kubectl_output(&[
        "-n",
        namespace,
        "apply",
        "-f",
        path.to_str().expect("utf-8 path"),
    ])
}

fn pod(name: &str, cpu: Option<&str>) -> String {
    let resources = match cpu {
        Some(cpu) => format!("\n      resources:\n        requests:\n          cpu: {cpu}"),
        None => String::new(),
    };
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\nspec:\n  containers:\n    - name: c\n      image: busybox\n      command: [sleep, \"3600\"]{resources}\n"
    )
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn used(cluster: &Cluster, namespace: &str, quota: &str, resource: &str) -> String {
    let path = format!("{{.status.used.{}}}", resource.replace('.', "\\."));
    cluster.jsonpath(&["-n", namespace, "get", "quota", quota], &path)
}

fn wait_used(cluster: &Cluster, namespace: &str, quota: &str, resource: &str, want: &str) {
    cluster.eventually(
        &format!("quota {namespace}/{quota} used {resource}={want}"),
        MINUTE,
        || (used(cluster, namespace, quota, resource) == want).then_some(()),
    );
}

fn pod_names(cluster: &Cluster, namespace: &str, selector: &str) -> Vec<String> {
    let out = cluster.jsonpath(
        &["-n", namespace, "get", "pods", "-l", selector],
        "{range .items[*]}{.metadata.name}{\" \"}{.metadata.deletionTimestamp}{\"\\n\"}{end}",
    );
    // Pods being deleted still count until they are gone; the caller waits for both.
    out.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string())
        .collect()
}

#[test]
fn quotas_count_refuse_and_free_room() {
    let cluster = Cluster::start(&["--pod-ready-delay", "100ms"]);
    let ns = "qe";
    cluster.kubectl(&["create", "namespace", ns]);
    cluster.wait_for_default_service_account(ns);
    // The namespace's root CA config map is counted too; wait until it exists.
    cluster.eventually("kube-root-ca.crt in qe", MINUTE, || {
        cluster
            .kubectl_output(&["-n", ns, "get", "configmap", "kube-root-ca.crt"])
            .status
            .success()
            .then_some(())
    });

    cluster.kubectl(&[
        "-n",
        ns,
        "create",
        "quota",
        "q",
        "--hard=pods=2,count/configmaps=3,requests.cpu=1",
    ]);
    wait_used(&cluster, ns, "q", "pods", "0");
    wait_used(&cluster, ns, "q", "count/configmaps", "1");

    // Two pods are charged, the third is refused with kube's message.
    for name in ["p1", "p2"] {
        let out = apply(&cluster, ns, &pod(name, Some("200m")));
        assert!(out.status.success(), "{}", stderr(&out));
    }
    assert_eq!(used(&cluster, ns, "q", "pods"), "2");
    assert_eq!(used(&cluster, ns, "q", "requests.cpu"), "400m");
    let get = cluster.kubectl(&["-n", ns, "get", "quota", "q"]);
    assert!(get.contains("pods: 2/2"), "{get}");
    assert!(get.contains("requests.cpu: 400m/1"), "{get}");
    let describe = cluster.kubectl(&["-n", ns, "describe", "quota", "q"]);
    assert!(
        describe
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["pods", "2", "2"]),
        "{describe}"
    );
    let out = apply(&cluster, ns, &pod("p3", Some("200m")));
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "pods \"p3\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
        ),
        "{}",
        stderr(&out)
    );
    // A quota on requests.cpu requires every container to state it.
    let out = apply(&cluster, ns, &pod("no-cpu", None));
    assert!(
        stderr(&out).contains("failed quota: q: must specify requests.cpu for: c"),
        "{}",
        stderr(&out)
    );

    // Deleting the pods frees their room once the controller recounted.
    cluster.kubectl(&["-n", ns, "delete", "pod", "p1", "p2", "--wait=true"]);
    wait_used(&cluster, ns, "q", "pods", "0");

    // A Deployment of 3 gets 2 pods and a FailedCreate event with the quota's message.
    let deployment = r#"apiVersion: apps/v1
kind: Deployment
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
      containers:
        - name: c
          image: nginx
          resources:
            requests:
              cpu: 100m
"#;
    let out = apply(&cluster, ns, deployment);
    assert!(out.status.success(), "{}", stderr(&out));
    cluster.eventually("FailedCreate event with the quota message", MINUTE, || {
        let events = cluster.kubectl(&[
            "-n",
            ns,
            "get",
            "events",
            "--field-selector",
            "reason=FailedCreate",
        ]);
        events.contains("exceeded quota: q").then_some(())
    });
    let before = cluster.eventually("2 web pods", MINUTE, || {
        let names = pod_names(&cluster, ns, "app=web");
        (names.len() == 2).then_some(names)
    });
    assert_eq!(used(&cluster, ns, "q", "pods"), "2");

    // Deleting one pod makes room, and the ReplicaSet fills it.
    cluster.kubectl(&["-n", ns, "delete", "pod", &before[0], "--wait=true"]);
    cluster.eventually("the ReplicaSet replaced the deleted pod", MINUTE, || {
        let names = pod_names(&cluster, ns, "app=web");
        (names.len() == 2 && !names.contains(&before[0])).then_some(())
    });

    // Config maps: the root CA one and two more fit; the fourth is refused.
    for name in ["cm1", "cm2"] {
        cluster.kubectl(&["-n", ns, "create", "configmap", name]);
    }
    let out = cluster.kubectl_output(&["-n", ns, "create", "configmap", "cm3"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=3, limited: count/configmaps=3"
        ),
        "{}",
        stderr(&out)
    );

    // A BestEffort-scoped quota limits only pods without requests.
    let scoped = "qb";
    cluster.kubectl(&["create", "namespace", scoped]);
    cluster.wait_for_default_service_account(scoped);
    cluster.kubectl(&[
        "-n",
        scoped,
        "create",
        "quota",
        "be",
        "--hard=pods=1",
        "--scopes=BestEffort",
    ]);
    wait_used(&cluster, scoped, "be", "pods", "0");
    let out = apply(&cluster, scoped, &pod("be1", None));
    assert!(out.status.success(), "{}", stderr(&out));
    let out = apply(&cluster, scoped, &pod("be2", None));
    assert!(
        stderr(&out)
            .contains("exceeded quota: be, requested: pods=1, used: pods=1, limited: pods=1"),
        "{}",
        stderr(&out)
    );
    let out = apply(&cluster, scoped, &pod("burstable", Some("100m")));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(used(&cluster, scoped, "be", "pods"), "1");
}
