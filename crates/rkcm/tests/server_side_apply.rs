//! `kubectl apply --server-side` against `rkcm up`: field managers, conflicts after
//! `kubectl scale`, `--force-conflicts`, moving between client-side and server-side apply, and
//! a CRD applied by two managers, with kubectl 1.33 and, when installed, 1.27.

mod common;

use std::path::Path;
use std::time::Duration;

use common::Cluster;
use serde_json::Value;

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("manifest is written");
    p.to_string_lossy().into_owned()
}

fn deployment(name: &str, replicas: u32, image: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels:
      app: {name}
  template:
    metadata:
      labels:
        app: {name}
    spec:
      containers:
      - name: web
        image: {image}
"
    )
}

fn config_map(name: &str, value: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  key: {value}\n")
}

/// The object as JSON, managed fields included.
fn get(cluster: &Cluster, kubectl: &Path, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend(["-o", "json", "--show-managed-fields"]);
    serde_json::from_str(&ok(cluster, kubectl, &all)).expect("kubectl prints JSON")
}

fn managers(obj: &Value) -> Vec<String> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            format!(
                "{}/{}{}",
                e["manager"].as_str().unwrap_or_default(),
                e["operation"].as_str().unwrap_or_default(),
                e["subresource"]
                    .as_str()
                    .map(|s| format!("/{s}"))
                    .unwrap_or_default()
            )
        })
        .collect()
}

/// Runs `kubectl` (a given version) against the cluster; (success, stdout, stderr).
fn run(cluster: &Cluster, kubectl: &Path, args: &[&str]) -> (bool, String, String) {
    let cache = cluster.data_dir.join(format!(
        "kubectl-cache-{}",
        kubectl
            .file_name()
            .and_then(|f| f.to_str())
            .unwrap_or("kubectl")
    ));
    let out = std::process::Command::new(kubectl)
        .env("KUBECONFIG", &cluster.kubeconfig)
        .arg("--cache-dir")
        .arg(&cache)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("kubectl runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn ok(cluster: &Cluster, kubectl: &Path, args: &[&str]) -> String {
    let (success, stdout, stderr) = run(cluster, kubectl, args);
    assert!(
        success,
        "{} {} failed:\n{stdout}\n{stderr}",
        kubectl.display(),
        args.join(" ")
    );
    stdout
}

fn server_side_apply_round(cluster: &Cluster, kubectl: &Path, v: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let name = format!("web-{v}");
    let file = write(dir.path(), "d.yaml", &deployment(&name, 2, "nginx:1.25"));

    // Create on apply; the applier is `kubectl`.
    let out = ok(cluster, kubectl, &["apply", "--server-side", "-f", &file]);
    assert!(out.contains("serverside-applied"), "{out}");
    let obj = get(cluster, kubectl, &["deployment", &name]);
    assert!(
        managers(&obj).contains(&"kubectl/Apply".to_string()),
        "{obj}"
    );
    let entry = obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|es| es.iter().find(|e| e["manager"] == "kubectl"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert_eq!(
        entry["fieldsV1"]["f:spec"]["f:replicas"],
        serde_json::json!({})
    );
    assert!(
        entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]
            .get("k:{\"name\":\"web\"}")
            .is_some()
    );

    // Re-applying the same manifest changes nothing and succeeds.
    ok(cluster, kubectl, &["apply", "--server-side", "-f", &file]);

    // `kubectl scale` takes spec.replicas; applying the old count conflicts with it.
    ok(
        cluster,
        kubectl,
        &["scale", "deployment", &name, "--replicas", "5"],
    );
    let (success, _, stderr) = run(cluster, kubectl, &["apply", "--server-side", "-f", &file]);
    assert!(!success, "the apply conflicts");
    assert!(
        // `kubectl scale` names no field manager: it is the user agent's first segment, the
        // binary's name (`kubectl`, or `kubectl.1.27` for the SDK's versioned copies).
        stderr.contains("Apply failed with 1 conflict: conflict with \"kubectl")
            && stderr.contains("\" with subresource \"scale\" using apps/v1: .spec.replicas"),
        "{stderr}"
    );
    assert_eq!(
        cluster.jsonpath(&["get", "deployment", &name], "{.spec.replicas}"),
        "5"
    );

    // --force-conflicts takes it back.
    ok(
        cluster,
        kubectl,
        &["apply", "--server-side", "--force-conflicts", "-f", &file],
    );
    assert_eq!(
        cluster.jsonpath(&["get", "deployment", &name], "{.spec.replicas}"),
        "2"
    );

    // Client-side apply of an object created server-side: kubectl adds its annotation.
    let file2 = write(dir.path(), "d2.yaml", &deployment(&name, 2, "nginx:1.26"));
    ok(cluster, kubectl, &["apply", "-f", &file2]);
    let obj = get(cluster, kubectl, &["deployment", &name]);
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.26"
    );
    assert!(obj["metadata"]["annotations"]
        .get("kubectl.kubernetes.io/last-applied-configuration")
        .is_some());
    assert!(
        managers(&obj).contains(&"kubectl-client-side-apply/Update".to_string()),
        "{:?}",
        managers(&obj)
    );

    // Client-side apply first, then server-side with a changed value: the fields client-side
    // apply owned move to `kubectl` without a conflict, and the annotation follows.
    let cm = format!("cfg-{v}");
    let cm1 = write(dir.path(), "cm1.yaml", &config_map(&cm, "one"));
    ok(cluster, kubectl, &["apply", "-f", &cm1]);
    let cm2 = write(dir.path(), "cm2.yaml", &config_map(&cm, "two"));
    ok(cluster, kubectl, &["apply", "--server-side", "-f", &cm2]);
    let obj = get(cluster, kubectl, &["configmap", &cm]);
    assert_eq!(obj["data"]["key"], "two");
    let last: Value = serde_json::from_str(
        obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .unwrap_or_default(),
    )
    .expect("the annotation is JSON");
    assert_eq!(last["data"]["key"], "two");
    // And back to client-side apply.
    let cm3 = write(dir.path(), "cm3.yaml", &config_map(&cm, "three"));
    ok(cluster, kubectl, &["apply", "-f", &cm3]);
    assert_eq!(
        cluster.jsonpath(&["get", "configmap", &cm], "{.data.key}"),
        "three"
    );
}

/// A CRD whose schema bounds are whole numbers, applied by two field managers (cert-manager's
/// and prometheus-operator's documented install): the second apply shares every field, as on
/// kube, because the stored `maximum: 10` stays `10` and numbers compare by value.
fn crd_applied_by_two_field_managers(cluster: &Cluster, kubectl: &Path) {
    let dir = tempfile::tempdir().expect("temp dir");
    let crd = write(
        dir.path(),
        "crd.yaml",
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.bounds.example.com
spec:
  group: bounds.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              replicas: {type: integer, minimum: 0, maximum: 10}
              ratio: {type: number, multipleOf: 0.5}
",
    );
    ok(
        cluster,
        kubectl,
        &[
            "apply",
            "--server-side",
            "--field-manager=first",
            "-f",
            &crd,
        ],
    );
    let (success, stdout, stderr) = run(
        cluster,
        kubectl,
        &[
            "apply",
            "--server-side",
            "--field-manager=second",
            "-f",
            &crd,
        ],
    );
    assert!(
        success,
        "the second manager applies the same CRD without a conflict:\n{stdout}\n{stderr}"
    );
    let obj = get(
        cluster,
        kubectl,
        &["customresourcedefinition", "widgets.bounds.example.com"],
    );
    let managers = managers(&obj);
    assert!(
        managers.contains(&"first/Apply".to_string())
            && managers.contains(&"second/Apply".to_string()),
        "{managers:?}"
    );
    // kubectl re-encodes what it prints; the raw body is what the server stored.
    let raw = ok(
        cluster,
        kubectl,
        &[
            "get",
            "--raw",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.bounds.example.com",
        ],
    );
    assert!(
        raw.contains(r#""maximum":10,"minimum":0,"type":"integer""#)
            && raw.contains(r#""multipleOf":0.5"#),
        "the schema's bounds are written as Go writes them: {raw}"
    );
}

#[test]
fn kubectl_server_side_apply_conflicts_force_and_client_side_interplay() {
    let cluster = Cluster::start(&["--nodes", "0"]);
    let kubectl_133 = common::older_kubectl("1.33").unwrap_or_else(|| cluster.kubectl.clone());
    server_side_apply_round(&cluster, &kubectl_133, "133");
    crd_applied_by_two_field_managers(&cluster, &kubectl_133);
    if let Some(k127) = common::older_kubectl("1.27") {
        server_side_apply_round(&cluster, &k127, "127");
    }
    // A Deployment applied server-side is rolled out by the controllers like any other.
    cluster.eventually(
        "the deployment controller observes web-133",
        Duration::from_secs(30),
        || {
            let g = cluster.jsonpath(
                &["get", "deployment", "web-133"],
                "{.status.observedGeneration}",
            );
            (!g.is_empty()).then_some(())
        },
    );
}
