//! End to end: `rkcm up` driven by the real kubectl through what users do with Deployments.

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

fn deployment(
    name: &str,
    replicas: i32,
    image: &str,
    extra_spec: &str,
    pod_annotations: &str,
) -> String {
    format!(
        r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
{extra_spec}
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
{pod_annotations}
    spec:
      containers:
        - name: app
          image: {image}
"#
    )
}

/// Pods of `app` that are not terminating, as `name image` lines.
fn live_pods(cluster: &Cluster, app: &str) -> Vec<(String, String)> {
    let out = cluster.kubectl(&[
        "get",
        "pods",
        "-l",
        &format!("app={app}"),
        "-o",
        r#"jsonpath={range .items[*]}{.metadata.name} {.spec.containers[0].image} {.metadata.deletionTimestamp}{"\n"}{end}"#,
    ]);
    out.lines()
        .filter_map(|l| {
            let parts: Vec<&str> = l.split_whitespace().collect();
            (parts.len() == 2).then(|| (parts[0].to_string(), parts[1].to_string()))
        })
        .collect()
}

#[test]
fn rolling_update_rollback_scale_and_wait() {
    let cluster = Cluster::start(&["--pod-ready-delay", "200ms"]);
    apply(&cluster, &deployment("web", 3, "nginx:1.27", "", ""));
    cluster.kubectl(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    cluster.kubectl(&[
        "wait",
        "--for=condition=Available",
        "deployment/web",
        "--timeout=60s",
    ]);

    cluster.kubectl(&["set", "image", "deployment/web", "app=nginx:1.28"]);
    cluster.kubectl(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    let history = cluster.kubectl(&["rollout", "history", "deployment/web"]);
    assert!(
        history.contains('1') && history.contains('2'),
        "history lists two revisions:\n{history}"
    );
    let pods = live_pods(&cluster, "web");
    assert_eq!(pods.len(), 3, "{pods:?}");
    assert!(
        pods.iter().all(|(_, image)| image == "nginx:1.28"),
        "{pods:?}"
    );

    cluster.kubectl(&["rollout", "undo", "deployment/web"]);
    cluster.kubectl(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    let image = cluster.jsonpath(
        &["get", "deployment/web"],
        "{.spec.template.spec.containers[0].image}",
    );
    assert_eq!(image, "nginx:1.27");
    let revision = cluster.jsonpath(
        &["get", "deployment/web"],
        r#"{.metadata.annotations.deployment\.kubernetes\.io/revision}"#,
    );
    assert_eq!(revision, "3", "an undo is a new revision");
    // kubectl sends the template back as Go encodes it (`creationTimestamp: null`,
    // `resources: {}`): semantically the revision-1 template, so that ReplicaSet is scaled back
    // up rather than a third one created.
    let replica_sets = cluster.kubectl(&[
        "get",
        "rs",
        "-l",
        "app=web",
        "-o",
        r#"jsonpath={range .items[*]}{.spec.template.spec.containers[0].image} {.spec.replicas} {.metadata.annotations.deployment\.kubernetes\.io/revision}{"\n"}{end}"#,
    ]);
    let mut replica_sets: Vec<&str> = replica_sets.lines().collect();
    replica_sets.sort_unstable();
    assert_eq!(
        replica_sets,
        ["nginx:1.27 3 3", "nginx:1.28 0 2"],
        "the revision-1 ReplicaSet is reused"
    );

    cluster.kubectl(&["scale", "deployment/web", "--replicas=5"]);
    cluster.eventually("five ready replicas", MINUTE, || {
        let ready = cluster.jsonpath(&["get", "deployment/web"], "{.status.readyReplicas}");
        (ready == "5").then_some(())
    });
    assert_eq!(live_pods(&cluster, "web").len(), 5);

    let events = cluster.kubectl(&["get", "events"]);
    assert!(
        events.contains("ScalingReplicaSet"),
        "deployment events recorded:\n{events}"
    );
    assert!(
        events.contains("SuccessfulCreate"),
        "replica set events recorded:\n{events}"
    );
}

#[test]
fn cascading_deletion_orphan_foreground_and_background() {
    let cluster = Cluster::start(&["--pod-ready-delay", "100ms"]);
    apply(&cluster, &deployment("orphaned", 2, "nginx", "", ""));
    cluster.kubectl(&["rollout", "status", "deployment/orphaned", "--timeout=60s"]);
    cluster.kubectl(&["delete", "deployment", "orphaned", "--cascade=orphan"]);
    let owners = cluster.jsonpath(
        &["get", "rs", "-l", "app=orphaned"],
        "{.items[*].metadata.ownerReferences}",
    );
    assert!(
        owners.trim().is_empty(),
        "orphaned ReplicaSet keeps no owner: {owners}"
    );
    assert_eq!(
        live_pods(&cluster, "orphaned").len(),
        2,
        "orphaned pods stay"
    );

    // Foreground: the ReplicaSet goes last, after its pods.
    cluster.kubectl(&["delete", "rs", "-l", "app=orphaned", "--cascade=foreground"]);
    cluster.eventually(
        "foreground deletion removes pods and the ReplicaSet",
        MINUTE,
        || {
            let left = cluster.kubectl(&["get", "rs,pods", "-l", "app=orphaned", "-o", "name"]);
            left.trim().is_empty().then_some(())
        },
    );

    // Background (the default): the Deployment goes at once, its ReplicaSet and pods after.
    apply(&cluster, &deployment("background", 2, "nginx", "", ""));
    cluster.kubectl(&[
        "rollout",
        "status",
        "deployment/background",
        "--timeout=60s",
    ]);
    cluster.kubectl(&["delete", "deployment", "background"]);
    cluster.eventually("background deletion collects dependents", MINUTE, || {
        let left = cluster.kubectl(&["get", "rs,pods", "-l", "app=background", "-o", "name"]);
        left.trim().is_empty().then_some(())
    });
}

#[test]
fn restart_mid_rollout_completes_with_exactly_the_desired_pods() {
    let mut cluster = Cluster::start(&["--pod-ready-delay", "1s"]);
    apply(&cluster, &deployment("steady", 6, "nginx:1.27", "", ""));
    cluster.kubectl(&["rollout", "status", "deployment/steady", "--timeout=60s"]);
    cluster.kubectl(&["set", "image", "deployment/steady", "app=nginx:1.28"]);
    // Stop while the rollout is in flight, then start again on the same data.
    cluster.eventually("the rollout to start", MINUTE, || {
        let updated = cluster.jsonpath(&["get", "deployment/steady"], "{.status.updatedReplicas}");
        (!updated.is_empty() && updated != "0").then_some(())
    });
    cluster.restart();
    cluster.kubectl(&["rollout", "status", "deployment/steady", "--timeout=90s"]);
    cluster.eventually("exactly six pods, all updated", MINUTE, || {
        let pods = live_pods(&cluster, "steady");
        (pods.len() == 6 && pods.iter().all(|(_, i)| i == "nginx:1.28")).then_some(())
    });
}

#[test]
fn a_pod_that_never_becomes_ready_exceeds_the_progress_deadline() {
    let cluster = Cluster::start(&["--pod-ready-delay", "100ms"]);
    apply(
        &cluster,
        &deployment(
            "stuck",
            2,
            "nginx",
            "  progressDeadlineSeconds: 3",
            "      annotations:\n        rkcm.io/never-ready: \"true\"",
        ),
    );
    let out = cluster.kubectl_output(&["rollout", "status", "deployment/stuck", "--timeout=60s"]);
    assert!(
        !out.status.success(),
        "rollout status fails on a stuck rollout"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("exceeded its progress deadline"),
        "{stderr}"
    );
    let reason = cluster.jsonpath(
        &["get", "deployment/stuck"],
        r#"{.status.conditions[?(@.type=="Progressing")].reason}"#,
    );
    assert_eq!(reason, "ProgressDeadlineExceeded");
}

#[test]
fn deleting_a_namespace_empties_and_removes_it() {
    let cluster = Cluster::start(&["--pod-ready-delay", "100ms"]);
    cluster.kubectl(&["create", "namespace", "scratch"]);
    cluster.wait_for_default_service_account("scratch");
    let manifest = deployment("inside", 3, "nginx", "", "");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("d.yaml");
    std::fs::write(&path, manifest).expect("written");
    cluster.kubectl(&[
        "apply",
        "-n",
        "scratch",
        "-f",
        path.to_str().expect("utf-8"),
    ]);
    cluster.kubectl(&[
        "rollout",
        "status",
        "-n",
        "scratch",
        "deployment/inside",
        "--timeout=60s",
    ]);
    cluster.kubectl(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "scratch",
        "--from-literal=a=b",
    ]);
    // kubectl waits for the namespace to be gone.
    cluster.kubectl(&["delete", "namespace", "scratch", "--timeout=90s"]);
    let out = cluster.kubectl_output(&["get", "namespace", "scratch"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not found"));
    let out = cluster.kubectl_output(&["delete", "namespace", "kube-system"]);
    assert!(!out.status.success(), "system namespaces cannot be deleted");
}

#[test]
fn replica_set_and_replication_controller_examples_run() {
    let cluster = Cluster::start(&["--pod-ready-delay", "100ms"]);
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    cluster.kubectl(&["apply", "-f", &format!("{root}/examples/replicaset.yaml")]);
    cluster.kubectl(&[
        "apply",
        "-f",
        &format!("{root}/examples/replicationcontroller.yaml"),
    ]);
    cluster.eventually("three ready pods each", MINUTE, || {
        let rs = cluster.jsonpath(&["get", "rs/frontend"], "{.status.readyReplicas}");
        let rc = cluster.jsonpath(&["get", "rc/nginx"], "{.status.readyReplicas}");
        (rs == "3" && rc == "3").then_some(())
    });
    cluster.kubectl(&["scale", "rc/nginx", "--replicas=1"]);
    cluster.eventually("the RC scaled down", MINUTE, || {
        let n = cluster.kubectl(&["get", "pods", "-l", "app=nginx", "-o", "name"]);
        (n.lines().count() == 1).then_some(())
    });
    // A container that runs until stopped has printed nothing: its log is empty, as a
    // kubelet's. There is no process to exec into: that fails clearly instead of hanging.
    let pod = cluster.kubectl(&["get", "pods", "-l", "tier=frontend", "-o", "name"]);
    let pod = pod.lines().next().expect("a frontend pod");
    assert_eq!(cluster.kubectl(&["logs", pod, "--request-timeout=20s"]), "");
    let out = cluster.kubectl_output(&["exec", pod, "--request-timeout=20s", "--", "true"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("rkcm runs no containers"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // `logs -f` of a running container stays open until the container ends, and gets what it
    // printed meanwhile.
    cluster.kubectl(&[
        "run",
        "printer",
        "--image=busybox",
        "--restart=Never",
        "--command",
        "--",
        "sh",
        "-c",
        "echo one; sleep 5; echo two",
    ]);
    cluster.eventually("the printer runs", MINUTE, || {
        let phase = cluster.jsonpath(&["get", "pod/printer"], "{.status.phase}");
        (phase == "Running").then_some(())
    });
    let followed = cluster.kubectl(&["logs", "-f", "pod/printer", "--request-timeout=60s"]);
    // The simulated container prints at its exit: both lines mean the follow waited for it.
    assert_eq!(followed, "one\ntwo\n");
}

#[test]
fn pause_resume_restart_edit_label_and_describe() {
    let cluster = Cluster::start(&["--pod-ready-delay", "100ms"]);
    apply(&cluster, &deployment("tuned", 2, "nginx:1.27", "", ""));
    cluster.kubectl(&["rollout", "status", "deployment/tuned", "--timeout=60s"]);

    // Paused: template changes make no new ReplicaSet until resumed.
    cluster.kubectl(&["rollout", "pause", "deployment/tuned"]);
    cluster.kubectl(&["set", "image", "deployment/tuned", "app=nginx:1.28"]);
    cluster.eventually(
        "the Progressing condition reports the pause",
        MINUTE,
        || {
            let reason = cluster.jsonpath(
                &["get", "deployment/tuned"],
                r#"{.status.conditions[?(@.type=="Progressing")].reason}"#,
            );
            (reason == "DeploymentPaused").then_some(())
        },
    );
    let replica_sets = cluster.kubectl(&["get", "rs", "-l", "app=tuned", "-o", "name"]);
    assert_eq!(
        replica_sets.lines().count(),
        1,
        "no rollout while paused: {replica_sets}"
    );
    cluster.kubectl(&["rollout", "resume", "deployment/tuned"]);
    cluster.kubectl(&["rollout", "status", "deployment/tuned", "--timeout=60s"]);
    assert!(live_pods(&cluster, "tuned")
        .iter()
        .all(|(_, i)| i == "nginx:1.28"));

    // `rollout restart` stamps the template and produces a new revision.
    cluster.kubectl(&["rollout", "restart", "deployment/tuned"]);
    cluster.kubectl(&["rollout", "status", "deployment/tuned", "--timeout=60s"]);
    let revision = cluster.jsonpath(
        &["get", "deployment/tuned"],
        r#"{.metadata.annotations.deployment\.kubernetes\.io/revision}"#,
    );
    assert_eq!(revision, "3");

    // `kubectl edit` through an editor script, then `label` and `describe`.
    let dir = tempfile::tempdir().expect("temp dir");
    let editor = dir.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i 's/replicas: 2/replicas: 4/' \"$1\"\n",
    )
    .expect("editor written");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let out = cluster
        .kubectl_cmd(&["edit", "deployment/tuned"])
        .env("KUBE_EDITOR", &editor)
        .output()
        .expect("kubectl edit runs");
    assert!(
        out.status.success(),
        "kubectl edit: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    cluster.eventually("four ready replicas after the edit", MINUTE, || {
        let ready = cluster.jsonpath(&["get", "deployment/tuned"], "{.status.readyReplicas}");
        (ready == "4").then_some(())
    });
    cluster.kubectl(&["label", "deployment/tuned", "tier=web"]);
    let shown = cluster.kubectl(&["get", "deployments", "-l", "tier=web", "-o", "name"]);
    assert_eq!(shown.trim(), "deployment.apps/tuned");
    let described = cluster.kubectl(&["describe", "deployment/tuned"]);
    assert!(
        described.contains("Replicas:") && described.contains("NewReplicaSet:"),
        "{described}"
    );
}
