//! End to end: `x-kubernetes-validations` CEL rules of a CustomResourceDefinition with kubectl
//! on `rkcm up` — a rule that does not compile makes the CRD invalid (422 naming the rule),
//! custom resources breaking a rule get kube's 422 and are not stored, a transition rule
//! (`self == oldSelf`) refuses an update, and `/status` writes are checked by the status rules.

mod common;

use std::path::Path;

use common::Cluster;
use serde_json::{json, Value};

fn write(dir: &Path, name: &str, value: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(value).expect("json")).expect("write manifest");
    path.to_string_lossy().into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs kubectl, asserting that it fails with `expected` in its error output.
fn refused(cluster: &Cluster, args: &[&str], expected: &str) {
    let out = cluster.kubectl_output(args);
    assert!(
        !out.status.success(),
        "kubectl {} succeeded",
        args.join(" ")
    );
    let err = stderr(&out);
    assert!(err.contains(expected), "{err}");
}

fn crd(spec_rules: Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {
                        "type": "object",
                        "properties": {
                            "replicas": {"type": "integer"},
                            "maxReplicas": {"type": "integer"},
                            "name": {"type": "string", "x-kubernetes-validations": [
                                {"rule": "self == oldSelf", "message": "name is immutable"}]},
                        },
                        "x-kubernetes-validations": spec_rules,
                    },
                    "status": {"type": "object", "properties": {"phase": {"type": "string"}},
                        "x-kubernetes-validations": [{"rule": "self.phase in ['Pending', 'Ready']",
                            "messageExpression": "'unknown phase ' + self.phase"}]},
                }}},
            }],
        },
    })
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
           "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

#[test]
fn validation_rules_with_kubectl() {
    let cluster = Cluster::start(&["--nodes", "0"]);
    let dir = tempfile::tempdir().expect("temp dir");

    // A rule that does not compile: the CRD is invalid and not created.
    let broken = write(
        dir.path(),
        "broken.json",
        &crd(json!([{"rule": "self.replicas <= "}])),
    );
    let out = cluster.kubectl_output(&["create", "-f", &broken]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(r#"The CustomResourceDefinition "widgets.example.com" is invalid: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:"self.replicas <= ""#)
            && err.contains("compilation failed: ERROR: <input>:1:"),
        "{err}"
    );
    let out = cluster.kubectl_output(&["get", "crd", "widgets.example.com"]);
    assert!(!out.status.success(), "the invalid CRD was stored");

    // An undefined field is a type error.
    let undefined = write(
        dir.path(),
        "undefined.json",
        &crd(json!([{"rule": "self.replica > 0"}])),
    );
    refused(
        &cluster,
        &["create", "-f", &undefined],
        "undefined field 'replica'",
    );

    let good = write(
        dir.path(),
        "crd.json",
        &crd(
            json!([{"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"}]),
        ),
    );
    cluster.kubectl(&["create", "-f", &good]);
    cluster.kubectl(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=60s",
        "crd/widgets.example.com",
    ]);

    // A custom resource breaking a rule: 422 with kube's message, not stored.
    let bad = write(
        dir.path(),
        "bad.json",
        &widget("w1", json!({"replicas": 5, "maxReplicas": 3, "name": "a"})),
    );
    refused(
        &cluster,
        &["create", "-f", &bad],
        r#"The Widget "w1" is invalid: spec: Invalid value: "object": replicas must not exceed maxReplicas"#,
    );
    let out = cluster.kubectl_output(&["get", "widget", "w1"]);
    assert!(!out.status.success(), "the invalid widget was stored");

    // A valid one is stored; changing the immutable name is refused by the transition rule.
    let ok = write(
        dir.path(),
        "ok.json",
        &widget("w1", json!({"replicas": 1, "maxReplicas": 3, "name": "a"})),
    );
    cluster.kubectl(&["create", "-f", &ok]);
    let patch = |body: &'static str| ["patch", "widget", "w1", "--type=merge", "-p", body];
    refused(
        &cluster,
        &patch(r#"{"spec":{"name":"b"}}"#),
        r#"spec.name: Invalid value: "string": name is immutable"#,
    );
    assert_eq!(
        cluster.jsonpath(&["get", "widget", "w1"], "{.spec.name}"),
        "a"
    );
    // Other changes pass the transition rule.
    cluster.kubectl(&patch(r#"{"spec":{"replicas":2}}"#));
    assert_eq!(
        cluster.jsonpath(&["get", "widget", "w1"], "{.spec.replicas}"),
        "2"
    );

    // `/status` writes are validated by the status rules.
    let status = |body: &'static str| {
        [
            "patch",
            "widget",
            "w1",
            "--subresource=status",
            "--type=merge",
            "-p",
            body,
        ]
    };
    cluster.kubectl(&status(r#"{"status":{"phase":"Ready"}}"#));
    refused(
        &cluster,
        &status(r#"{"status":{"phase":"Gone"}}"#),
        r#"status: Invalid value: "object": unknown phase Gone"#,
    );
    assert_eq!(
        cluster.jsonpath(&["get", "widget", "w1"], "{.status.phase}"),
        "Ready"
    );
}
