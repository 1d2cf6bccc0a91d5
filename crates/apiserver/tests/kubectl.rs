//! The real kubectl against the in-process server: discovery, create/apply, get (tables),
//! scale, label, patch, delete, namespace lifecycle.

use std::path::{Path, PathBuf};

use rkcm_apiserver::testing::{self, TestServer};

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
        ports:
        - containerPort: 80
"#;

struct Kubectl {
    bin: PathBuf,
    dir: tempfile::TempDir,
}

impl Kubectl {
    fn new(server: &TestServer, bin: &str) -> Option<Self> {
        let bin = PathBuf::from(bin);
        if !bin.exists() {
            eprintln!("skipping: {} not installed", bin.display());
            return None;
        }
        let dir = tempfile::tempdir().expect("tempdir");
        server
            .write_kubeconfig(dir.path().join("kubeconfig"))
            .expect("write kubeconfig");
        Some(Self { bin, dir })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn write(&self, name: &str, contents: &str) -> PathBuf {
        let p = self.path(name);
        std::fs::write(&p, contents).expect("write manifest");
        p
    }

    /// Runs kubectl; returns (success, stdout, stderr).
    async fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = tokio::process::Command::new(&self.bin)
            .args(args)
            .arg("--cache-dir")
            .arg(self.path("cache"))
            .env("KUBECONFIG", self.path("kubeconfig"))
            .env("HOME", self.dir.path())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(std::time::Duration::from_secs(60), out)
            .await
            .expect("kubectl finished within 60s (server likely hung)")
            .expect("kubectl runs");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    async fn ok(&self, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.run(args).await;
        assert!(ok, "kubectl {args:?} failed:\n{stdout}\n{stderr}");
        stdout
    }
}

fn file(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

async fn exercise(bin: &str, validate: &str) {
    let server = testing::start().await;
    let Some(k) = Kubectl::new(&server, bin) else {
        return;
    };

    let version = k.ok(&["version", "-o", "json"]).await;
    assert!(version.contains("\"minor\": \"33\""), "{version}");

    let resources = k.ok(&["api-resources"]).await;
    for line in ["deployments", "deploy", "replicasets", "rs", "pods", "po"] {
        assert!(
            resources.contains(line),
            "api-resources lacks {line}:\n{resources}"
        );
    }

    let ns = k.ok(&["get", "namespaces"]).await;
    assert!(ns.contains("kube-system") && ns.contains("Active"), "{ns}");

    let manifest = k.write("deploy.yaml", DEPLOYMENT);
    let out = k.ok(&["create", "-f", file(&manifest), validate]).await;
    assert!(out.contains("deployment.apps/web created"), "{out}");

    // Strict validation: unknown fields are refused by the server, naming the field.
    let bad = k.write(
        "bad.yaml",
        &DEPLOYMENT
            .replace("name: web\n  labels", "name: bad\n  labels")
            .replace("replicas: 2", "replicas: 2\n  replicaz: 3"),
    );
    let (ok, _, stderr) = k.run(&["create", "-f", file(&bad), validate]).await;
    assert!(!ok && stderr.contains("replicaz"), "{stderr}");

    let explain = k.ok(&["explain", "deployment.spec.replicas"]).await;
    assert!(explain.contains("replicas"), "{explain}");

    let table = k.ok(&["get", "deploy"]).await;
    assert!(table.contains("READY") && table.contains("web"), "{table}");

    let (ok, _, stderr) = k.run(&["create", "-f", file(&manifest), validate]).await;
    assert!(!ok && stderr.contains("already exists"), "{stderr}");

    k.ok(&["scale", "deploy/web", "--replicas=4"]).await;
    let replicas = k
        .ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"])
        .await;
    assert_eq!(replicas, "4");

    k.ok(&["label", "deploy", "web", "tier=frontend"]).await;
    let labels = k
        .ok(&["get", "deploy", "-l", "tier=frontend", "-o", "name"])
        .await;
    assert_eq!(labels.trim(), "deployment.apps/web");

    k.ok(&[
        "patch",
        "deploy",
        "web",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.26"}]}}}}"#,
    ])
    .await;
    let image = k
        .ok(&[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        ])
        .await;
    assert_eq!(image, "nginx:1.26");
    let generation = k
        .ok(&[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.metadata.generation}",
        ])
        .await;
    assert_eq!(generation, "3");

    // apply updates the existing object through a strategic merge patch.
    let applied = k.write(
        "apply.yaml",
        &DEPLOYMENT.replace("replicas: 2", "replicas: 1"),
    );
    k.ok(&["apply", "-f", file(&applied), validate]).await;
    k.ok(&["apply", "-f", file(&applied), validate]).await;
    let replicas = k
        .ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"])
        .await;
    assert_eq!(replicas, "1");

    // Typed `create` subcommands (kubectl 1.32+ sends these bodies as protobuf).
    k.ok(&["create", "namespace", "typed"]).await;
    k.ok(&[
        "create",
        "configmap",
        "cfg",
        "-n",
        "typed",
        "--from-literal=a=b",
    ])
    .await;
    let data = k
        .ok(&[
            "get",
            "cm",
            "cfg",
            "-n",
            "typed",
            "-o",
            "jsonpath={.data.a}",
        ])
        .await;
    assert_eq!(data, "b");
    k.ok(&[
        "create",
        "deployment",
        "typed",
        "-n",
        "typed",
        "--image=nginx:1.25",
        "--replicas=2",
        "--port=80",
    ])
    .await;
    let port = k
        .ok(&["get", "deploy", "typed", "-n", "typed", "-o", "jsonpath={.spec.template.spec.containers[0].ports[0].containerPort} {.spec.replicas} {.spec.selector.matchLabels.app}"])
        .await;
    assert_eq!(port, "80 2 typed");

    let described = k.ok(&["describe", "deploy", "web"]).await;
    assert!(described.contains("Replicas:"), "{described}");
    let all = k.ok(&["get", "all"]).await;
    assert!(all.contains("deployment.apps/web"), "{all}");
    let watched = k
        .ok(&["get", "deploy", "web", "-w", "--request-timeout=2s"])
        .await;
    assert!(watched.contains("web"), "{watched}");

    k.ok(&["delete", "deploy", "web"]).await;
    let (ok, _, stderr) = k.run(&["get", "deploy", "web"]).await;
    assert!(
        !ok && stderr.contains("NotFound") || stderr.contains("not found"),
        "{stderr}"
    );

    // Namespace lifecycle: the namespace stays Terminating while its finalizer is there,
    // refuses new content, and goes once /finalize clears the finalizer.
    let ns_manifest = k.write(
        "ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: scratch\n",
    );
    k.ok(&["create", "-f", file(&ns_manifest), validate]).await;
    k.ok(&["delete", "namespace", "scratch", "--wait=false"])
        .await;
    let phase = k
        .ok(&["get", "ns", "scratch", "-o", "jsonpath={.status.phase}"])
        .await;
    assert_eq!(phase, "Terminating");
    let cm = k.write(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: scratch\n",
    );
    let (ok, _, stderr) = k.run(&["create", "-f", file(&cm), validate]).await;
    assert!(
        !ok && stderr.contains("because it is being terminated"),
        "{stderr}"
    );
    let (ok, _, stderr) = k
        .run(&["delete", "namespace", "kube-system", "--wait=false"])
        .await;
    assert!(
        !ok && stderr.contains("this namespace may not be deleted"),
        "{stderr}"
    );
}

#[tokio::test]
async fn current_kubectl_drives_the_server() {
    exercise("/usr/bin/kubectl", "--validate=strict").await;
}

#[tokio::test]
async fn kubectl_1_29_drives_the_server() {
    exercise(
        "/usr/lib/google-cloud-sdk/bin/kubectl.1.29",
        "--validate=strict",
    )
    .await;
}

#[tokio::test]
async fn kubectl_1_28_drives_the_server() {
    exercise(
        "/usr/lib/google-cloud-sdk/bin/kubectl.1.28",
        "--validate=strict",
    )
    .await;
}

/// kubectl 1.28 fetches the OpenAPI v2 document as protobuf before `apply` and `create`; with
/// default flags both work, and unknown fields are still refused.
#[tokio::test]
async fn kubectl_1_28_applies_with_default_flags() {
    let server = testing::start().await;
    let Some(k) = Kubectl::new(&server, "/usr/lib/google-cloud-sdk/bin/kubectl.1.28") else {
        return;
    };
    let manifest = k.write("deploy.yaml", DEPLOYMENT);
    let out = k.ok(&["apply", "-f", file(&manifest)]).await;
    assert!(out.contains("deployment.apps/web created"), "{out}");
    let applied = k.write(
        "apply.yaml",
        &DEPLOYMENT.replace("replicas: 2", "replicas: 3"),
    );
    let out = k.ok(&["apply", "-f", file(&applied)]).await;
    assert!(out.contains("deployment.apps/web configured"), "{out}");
    let replicas = k
        .ok(&["get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"])
        .await;
    assert_eq!(replicas, "3");
    let other = k.write(
        "other.yaml",
        &DEPLOYMENT.replace("name: web\n  labels", "name: other\n  labels"),
    );
    let out = k.ok(&["create", "-f", file(&other)]).await;
    assert!(out.contains("deployment.apps/other created"), "{out}");
    let bad = k.write(
        "bad.yaml",
        &DEPLOYMENT
            .replace("name: web\n  labels", "name: bad\n  labels")
            .replace("replicas: 2", "replicas: 2\n  replicaz: 3"),
    );
    let (ok, _, stderr) = k.run(&["create", "-f", file(&bad)]).await;
    assert!(!ok && stderr.contains("replicaz"), "{stderr}");
}

const POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: sim
spec:
  nodeName: node-1
  containers:
  - name: app
    image: nginx:1.25
    ports:
    - containerPort: 80
"#;

/// `kubectl exec`, `attach` and `port-forward` fail at once with the server's reason:
/// simulated nodes run no containers; `kubectl logs` prints the output the simulated kubelet
/// recorded, empty while there is none.
async fn streams_are_refused(bin: &str, validate: &str) {
    let server = testing::start().await;
    let Some(k) = Kubectl::new(&server, bin) else {
        return;
    };
    let manifest = k.write("pod.yaml", POD);
    k.ok(&["create", "-f", file(&manifest), validate]).await;
    // attach and port-forward want a running pod before they ask the server.
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(server.client(), "default");
    pods.patch_status(
        "sim",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({"status": {"phase": "Running"}})),
    )
    .await
    .expect("mark the pod running");

    // Nothing printed: an empty log; `-f` ends at once, as no container status says it runs.
    assert_eq!(k.ok(&["logs", "sim"]).await, "");
    assert_eq!(k.ok(&["logs", "sim", "-f"]).await, "");

    let started = std::time::Instant::now();
    for (args, what) in [
        (
            &["exec", "sim", "--", "ls"][..],
            "commands cannot be executed",
        ),
        (
            &["exec", "-it", "sim", "--", "sh"][..],
            "commands cannot be executed",
        ),
        (&["attach", "sim"][..], "no container process to attach to"),
        (&["port-forward", "sim", ":80"][..], "no ports to forward"),
    ] {
        let (ok, stdout, stderr) = k.run(args).await;
        assert!(!ok, "kubectl {args:?} succeeded:\n{stdout}\n{stderr}");
        assert!(
            stderr.contains("runs on simulated node \"node-1\": rkcm runs no containers")
                && stderr.contains(what),
            "kubectl {args:?}:\n{stderr}"
        );
    }
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );

    let (ok, _, stderr) = k.run(&["logs", "absent"]).await;
    assert!(!ok && stderr.contains("not found"), "{stderr}");
    let (ok, _, stderr) = k.run(&["exec", "absent", "--", "ls"]).await;
    assert!(!ok && stderr.contains("not found"), "{stderr}");

    // Output the simulated kubelet recorded is what `kubectl logs` prints.
    let runs = serde_json::json!({"app": [
        {"restartCount": 0, "log": "2026-01-01T00:00:00Z hello\n2026-01-01T00:00:01Z bye\n"},
    ]});
    pods.patch(
        "sim",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({
            "metadata": {"annotations": {"rkcm.io/container-logs": runs.to_string()}}
        })),
    )
    .await
    .expect("record output");
    assert_eq!(k.ok(&["logs", "sim"]).await, "hello\nbye\n");
    assert_eq!(k.ok(&["logs", "sim", "-f", "--tail=1"]).await, "bye\n");
    assert_eq!(
        k.ok(&["logs", "sim", "--timestamps", "--limit-bytes=26"])
            .await,
        "2026-01-01T00:00:00Z hello"
    );
    let (ok, _, stderr) = k.run(&["logs", "sim", "--previous"]).await;
    assert!(
        !ok && stderr.contains("previous terminated container \"app\" in pod \"sim\" not found"),
        "{stderr}"
    );
}

#[tokio::test]
async fn current_kubectl_exec_is_refused_and_logs_are_recorded_output() {
    streams_are_refused("/usr/bin/kubectl", "--validate=strict").await;
}

#[tokio::test]
async fn kubectl_1_28_exec_is_refused_and_logs_are_recorded_output() {
    streams_are_refused(
        "/usr/lib/google-cloud-sdk/bin/kubectl.1.28",
        "--validate=false",
    )
    .await;
}

#[tokio::test]
async fn kubectl_1_27_drives_the_server() {
    exercise(
        "/usr/lib/google-cloud-sdk/bin/kubectl.1.27",
        "--validate=strict",
    )
    .await;
}
