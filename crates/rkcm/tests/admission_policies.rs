//! End to end: ValidatingAdmissionPolicies on `rkcm up` with the real kubectl — the
//! `validatingadmissionpolicy-status-controller` type-checks their expressions against the
//! matched kinds and reports kube's warnings and the observed generation in the status.

mod common;

use std::time::Duration;

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);

const POLICY: &str = r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replicas
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  validations:
  - expression: "object.spec.replicas <= 5"
  - expression: "object.spec.replicas > '1'"
    messageExpression: "'replicas: ' + string(object.spec.replicas)"
"#;

const WARNING: &str = "apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'\n | object.spec.replicas > '1'\n | .....................^\n";

fn apply(cluster: &Cluster, dir: &std::path::Path, name: &str, manifest: &str) {
    let path = dir.join(name);
    std::fs::write(&path, manifest).expect("manifest written");
    cluster.kubectl(&["apply", "-f", path.to_str().expect("utf-8")]);
}

#[test]
fn policies_report_kubes_type_checking_warnings() {
    let cluster = Cluster::start(&["--nodes", "0"]);
    let files = tempfile::tempdir().expect("temp dir");

    apply(&cluster, files.path(), "policy.yaml", POLICY);
    let yaml = cluster.eventually("the policy's type checking", MINUTE, || {
        let yaml = cluster.kubectl(&["get", "validatingadmissionpolicy", "replicas", "-o", "yaml"]);
        yaml.contains("observedGeneration: 1").then_some(yaml)
    });
    // Only the bad expression is reported, with kube's message, place and caret.
    assert!(yaml.contains("typeChecking:"), "{yaml}");
    assert!(
        yaml.contains("fieldRef: spec.validations[1].expression"),
        "{yaml}"
    );
    assert!(!yaml.contains("spec.validations[0]"), "{yaml}");
    // The message expression is well typed.
    assert!(
        !yaml.contains("fieldRef: spec.validations[1].messageExpression"),
        "{yaml}"
    );
    assert!(
        yaml.contains("found no matching overload for '_>_' applied to '(int, string)'"),
        "{yaml}"
    );
    assert!(yaml.contains(" | object.spec.replicas > '1'"), "{yaml}");
    let warning = cluster.jsonpath(
        &["get", "validatingadmissionpolicy", "replicas"],
        "{.status.typeChecking.expressionWarnings[0].warning}",
    );
    assert_eq!(warning, WARNING);

    // Fixing the expression is a new generation; its status has no warnings left.
    apply(
        &cluster,
        files.path(),
        "policy.yaml",
        &POLICY.replace("> '1'", "> 1"),
    );
    let yaml = cluster.eventually("the fixed policy's type checking", MINUTE, || {
        let yaml = cluster.kubectl(&["get", "validatingadmissionpolicy", "replicas", "-o", "yaml"]);
        yaml.contains("observedGeneration: 2").then_some(yaml)
    });
    assert!(!yaml.contains("expressionWarnings"), "{yaml}");

    // An undefined field of a core kind.
    apply(
        &cluster,
        files.path(),
        "pods.yaml",
        r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: pods
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["pods"]
  validations:
  - expression: "object.spec.containers.all(c, c.imag.startsWith('registry.example.com/'))"
"#,
    );
    let warning = cluster.eventually("the pod policy's warning", MINUTE, || {
        let w = cluster.jsonpath(
            &["get", "validatingadmissionpolicy", "pods"],
            "{.status.typeChecking.expressionWarnings[0].warning}",
        );
        (!w.is_empty()).then_some(w)
    });
    assert_eq!(
        warning,
        "/v1, Kind=Pod: ERROR: <input>:1:32: undefined field 'imag'\n | object.spec.containers.all(c, c.imag.startsWith('registry.example.com/'))\n | ...............................^\n"
    );
}
