//! End to end: StatefulSets on `rkcm up --nodes 2` driven by the real kubectl: ordered start with
//! claims behind a headless Service, scaling, partitioned and full rollouts, `rollout history`
//! and `rollout undo`, scale-down in reverse order, and Parallel pod management. One cluster.

mod common;

use std::time::Duration;

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);

fn apply(cluster: &Cluster, manifest: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, manifest).expect("manifest written");
    cluster.kubectl(&["apply", "-f", path.to_str().expect("utf-8 path")]);
}

const WEB: &str = r#"apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  clusterIP: None
  selector:
    app: web
  ports:
    - port: 80
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: web
spec:
  serviceName: web
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
        - name: web
          image: nginx:1.27
          volumeMounts:
            - name: data
              mountPath: /usr/share/nginx/html
  volumeClaimTemplates:
    - metadata:
        name: data
      spec:
        accessModes: ["ReadWriteOnce"]
        resources:
          requests:
            storage: 1Gi
"#;

/// Pod names of `app`, not being deleted, by ordinal.
fn pods(cluster: &Cluster, app: &str) -> Vec<String> {
    let out = cluster.jsonpath(
        &["get", "pods", "-l", &format!("app={app}")],
        "{range .items[?(@.metadata.deletionTimestamp)]}-{.metadata.name} {end}|{range .items[*]}{.metadata.name} {end}",
    );
    let (deleting, all) = out.split_once('|').unwrap_or(("", ""));
    let mut names: Vec<String> = all
        .split_whitespace()
        .filter(|n| !deleting.split_whitespace().any(|d| d == format!("-{n}")))
        .map(str::to_string)
        .collect();
    names.sort_by_key(|n| n.rsplit('-').next().and_then(|o| o.parse::<u32>().ok()));
    names
}

fn image(cluster: &Cluster, pod: &str) -> String {
    cluster.jsonpath(&["get", "pod", pod], "{.spec.containers[0].image}")
}

/// Seconds since the epoch of an RFC 3339 timestamp kubectl printed.
fn seconds(ts: &str) -> i64 {
    ts.trim()
        .parse::<jiff::Timestamp>()
        .unwrap_or_else(|e| panic!("timestamp {ts:?}: {e}"))
        .as_second()
}

fn rollout_status(cluster: &Cluster) -> String {
    cluster.kubectl(&["rollout", "status", "statefulset/web", "--timeout=60s"])
}

#[test]
fn statefulsets_start_in_order_roll_out_undo_and_scale() {
    let cluster = Cluster::start(&["--nodes", "2", "--pod-termination-max", "200ms"]);

    // Comes up in order, each pod with its claim, hostname and subdomain.
    apply(&cluster, WEB);
    let status = rollout_status(&cluster);
    assert!(status.contains("roll out complete"), "{status}");
    assert_eq!(pods(&cluster, "web"), ["web-0", "web-1", "web-2"]);
    for i in 0..2 {
        let ready = cluster.jsonpath(
            &["get", "pod", &format!("web-{i}")],
            "{.status.conditions[?(@.type==\"Ready\")].lastTransitionTime}",
        );
        let next_created = cluster.jsonpath(
            &["get", "pod", &format!("web-{}", i + 1)],
            "{.metadata.creationTimestamp}",
        );
        assert!(
            seconds(&ready) <= seconds(&next_created),
            "web-{} was created ({next_created}) before web-{i} was ready ({ready})",
            i + 1
        );
    }
    let identity = cluster.jsonpath(
        &["get", "pod", "web-1"],
        "{.spec.hostname}.{.spec.subdomain} {.metadata.labels.statefulset\\.kubernetes\\.io/pod-name} {.metadata.labels.apps\\.kubernetes\\.io/pod-index}",
    );
    assert_eq!(identity, "web-1.web web-1 1");
    let claims = cluster.jsonpath(&["get", "pvc"], "{.items[*].metadata.name}");
    assert_eq!(claims, "data-web-0 data-web-1 data-web-2");
    let claim_of_pod = cluster.jsonpath(
        &["get", "pod", "web-2"],
        "{.spec.volumes[?(@.name==\"data\")].persistentVolumeClaim.claimName}",
    );
    assert_eq!(claim_of_pod, "data-web-2");

    // Scaled 3 → 5: web-3 and web-4 with their claims.
    cluster.kubectl(&["scale", "statefulset/web", "--replicas=5"]);
    rollout_status(&cluster);
    assert_eq!(
        pods(&cluster, "web"),
        ["web-0", "web-1", "web-2", "web-3", "web-4"]
    );
    for claim in ["data-web-3", "data-web-4"] {
        cluster.kubectl(&["get", "pvc", claim]);
    }
    let ready = cluster.jsonpath(&["get", "statefulset", "web"], "{.status.readyReplicas}");
    assert_eq!(ready, "5");

    // Partitioned rollout: only ordinals ≥ 3 move to the new image.
    cluster.kubectl(&[
        "patch",
        "statefulset/web",
        "-p",
        r#"{"spec":{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":3}}}}"#,
    ]);
    cluster.kubectl(&["set", "image", "statefulset/web", "web=nginx:1.28"]);
    let status = rollout_status(&cluster);
    assert!(status.contains("partitioned roll out complete"), "{status}");
    cluster.eventually("web-3 and web-4 updated", MINUTE, || {
        (image(&cluster, "web-3") == "nginx:1.28" && image(&cluster, "web-4") == "nginx:1.28")
            .then_some(())
    });
    for pod in ["web-0", "web-1", "web-2"] {
        assert_eq!(
            image(&cluster, pod),
            "nginx:1.27",
            "{pod} is below the partition"
        );
    }
    let updated = cluster.jsonpath(&["get", "statefulset", "web"], "{.status.updatedReplicas}");
    assert_eq!(updated, "2");

    // Partition 0: the rollout completes.
    cluster.kubectl(&[
        "patch",
        "statefulset/web",
        "-p",
        r#"{"spec":{"updateStrategy":{"rollingUpdate":{"partition":0}}}}"#,
    ]);
    let status = rollout_status(&cluster);
    assert!(status.contains("roll out complete"), "{status}");
    for i in 0..5 {
        assert_eq!(image(&cluster, &format!("web-{i}")), "nginx:1.28");
    }
    let revisions = cluster.jsonpath(
        &["get", "statefulset", "web"],
        "{.status.currentRevision} {.status.updateRevision}",
    );
    let (current, update) = revisions.split_once(' ').expect("two revisions");
    assert_eq!(current, update);

    // History lists both revisions; undo returns the old image.
    let history = cluster.kubectl(&["rollout", "history", "statefulset/web"]);
    let numbers: Vec<&str> = history
        .lines()
        .skip_while(|l| !l.starts_with("REVISION"))
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(numbers, ["1", "2"], "{history}");
    let detail = cluster.kubectl(&["rollout", "history", "statefulset/web", "--revision=1"]);
    assert!(detail.contains("nginx:1.27"), "{detail}");
    cluster.kubectl(&["rollout", "undo", "statefulset/web"]);
    let status = rollout_status(&cluster);
    assert!(status.contains("roll out complete"), "{status}");
    for i in 0..5 {
        assert_eq!(image(&cluster, &format!("web-{i}")), "nginx:1.27");
    }
    let history = cluster.kubectl(&["rollout", "history", "statefulset/web"]);
    assert!(
        history.contains('3'),
        "the undone revision is renumbered: {history}"
    );

    // Scaled down in reverse order: web-4 goes first, then web-3.
    cluster.kubectl(&["scale", "statefulset/web", "--replicas=3"]);
    let mut seen = Vec::new();
    cluster.eventually("scaled down to 3", MINUTE, || {
        let now = pods(&cluster, "web");
        if seen.last() != Some(&now) {
            seen.push(now.clone());
        }
        (now == ["web-0", "web-1", "web-2"]).then_some(())
    });
    for snapshot in &seen {
        // web-3 never goes while web-4 is still there.
        let has = |n: &str| snapshot.iter().any(|p| p == n);
        assert!(!has("web-4") || has("web-3"), "{seen:?}");
    }
    // Claims are retained when scaling down (the default policy).
    cluster.kubectl(&["get", "pvc", "data-web-4"]);

    // Parallel: every pod is created at once, none waits for another.
    apply(
        &cluster,
        r#"apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: par
spec:
  serviceName: par
  replicas: 4
  podManagementPolicy: Parallel
  selector:
    matchLabels:
      app: par
  template:
    metadata:
      labels:
        app: par
      annotations:
        rkcm.io/never-ready: "true"
    spec:
      containers:
        - name: c
          image: busybox
"#,
    );
    cluster.eventually("all four Parallel pods, none ready", MINUTE, || {
        (pods(&cluster, "par") == ["par-0", "par-1", "par-2", "par-3"]).then_some(())
    });
    let ready = cluster.jsonpath(&["get", "statefulset", "par"], "{.status.readyReplicas}");
    assert!(ready.is_empty() || ready == "0", "{ready}");

    // Deleting the set removes its pods (garbage collector), claims stay.
    cluster.kubectl(&[
        "delete",
        "statefulset",
        "web",
        "--wait=true",
        "--timeout=60s",
    ]);
    cluster.eventually("web pods gone", MINUTE, || {
        pods(&cluster, "web").is_empty().then_some(())
    });
    cluster.kubectl(&["get", "pvc", "data-web-0"]);
}
