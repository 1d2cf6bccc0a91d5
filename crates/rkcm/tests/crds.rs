//! End to end: a CustomResourceDefinition driven with kubectl on `rkcm up` — established, listed
//! by `api-resources`, explained, its objects created with printer columns, validated (422 with
//! the field path), pruned of unknown fields, written through `/status` and `/scale`, found
//! by the garbage collector and the namespace controller through discovery, and deleted with the
//! CRD.

mod common;

use std::path::Path;
use std::time::Duration;

use common::Cluster;
use serde_json::json;

const MINUTE: Duration = Duration::from_secs(60);

fn write(dir: &Path, name: &str, value: &serde_json::Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(value).expect("json")).expect("write manifest");
    path.to_string_lossy().into_owned()
}

fn crontab(name: &str, spec: serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
           "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_crd_and_its_objects_with_kubectl() {
    let cluster = Cluster::start(&["--nodes", "0"]);
    let dir = tempfile::tempdir().expect("temp dir");
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com", "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "description": "What the CronTab runs.", "properties": {
                        "cronSpec": {"type": "string", "description": "When to run, in cron format."},
                        "image": {"type": "string"},
                        "replicas": {"type": "integer", "minimum": 0, "default": 1}}},
                    "status": {"type": "object", "properties": {
                        "replicas": {"type": "integer"}, "labelSelector": {"type": "string"}}}}}},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                    "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.labelSelector"}},
                "additionalPrinterColumns": [
                    {"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
            }]
        }
    });
    let crd_file = write(dir.path(), "crd.json", &crd);
    cluster.kubectl(&["apply", "-f", &crd_file]);
    cluster.kubectl(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=60s",
        "crd/crontabs.stable.example.com",
    ]);
    let crds = cluster.kubectl(&["get", "crd"]);
    assert!(
        crds.lines().next().unwrap_or("").starts_with("NAME"),
        "{crds}"
    );
    assert!(crds.contains("CREATED AT"), "{crds}");
    assert!(crds.contains("crontabs.stable.example.com"), "{crds}");

    let resources = cluster.kubectl(&["api-resources", "--api-group=stable.example.com"]);
    let line = resources
        .lines()
        .find(|l| l.starts_with("crontabs"))
        .unwrap_or_else(|| panic!("{resources}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        words,
        ["crontabs", "ct", "stable.example.com/v1", "true", "CronTab"]
    );

    let explained = cluster.kubectl(&["explain", "crontabs.spec"]);
    assert!(explained.contains("cronSpec"), "{explained}");
    assert!(
        explained.contains("When to run, in cron format."),
        "{explained}"
    );

    // Created with kubectl's default (strict) validation; printer columns in `get`.
    let ct = write(
        dir.path(),
        "ct.json",
        &crontab(
            "nightly",
            json!({"cronSpec": "0 3 * * *", "image": "backup"}),
        ),
    );
    cluster.kubectl(&["apply", "-f", &ct]);
    let table = cluster.kubectl(&["get", "ct"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "SPEC", "REPLICAS", "AGE"], "{table}");
    assert!(
        table.contains("nightly") && table.contains("0 3 * * *"),
        "{table}"
    );
    assert_eq!(
        cluster.jsonpath(&["get", "ct", "nightly"], "{.spec.replicas}"),
        "1",
        "defaulted"
    );

    // Invalid: 422 naming the field.
    let bad = write(
        dir.path(),
        "bad.json",
        &crontab("bad", json!({"replicas": -1})),
    );
    let out = cluster.kubectl_output(&["apply", "-f", &bad]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("is invalid") && err.contains("spec.replicas"),
        "{err}"
    );

    // Unknown fields: refused by strict validation, pruned with a warning otherwise.
    let unknown = write(
        dir.path(),
        "unknown.json",
        &crontab("extra", json!({"cronSpec": "* * * * *", "colour": "red"})),
    );
    let out = cluster.kubectl_output(&["apply", "-f", &unknown]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("unknown field \"spec.colour\""),
        "{}",
        stderr(&out)
    );
    let out = cluster.kubectl_output(&["apply", "--validate=warn", "-f", &unknown]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("unknown field \"spec.colour\""),
        "{}",
        stderr(&out)
    );
    let spec = cluster.jsonpath(&["get", "crontab", "extra"], "{.spec}");
    assert!(!spec.contains("colour"), "{spec}");
    // kube's words: the create's decoding error, server-side apply's typed conversion, and
    // the 415 of a strategic merge patch, which custom resources do not take.
    let colour = write(
        dir.path(),
        "colour.json",
        &crontab("colour", json!({"cronSpec": "* * * * *", "colour": "red"})),
    );
    let out = cluster.kubectl_output(&["create", "-f", &colour]);
    assert!(
        stderr(&out).contains(
            r#"CronTab in version "v1" cannot be handled as a CronTab: strict decoding error: unknown field "spec.colour""#
        ),
        "{}",
        stderr(&out)
    );
    let out = cluster.kubectl_output(&["apply", "--server-side", "-f", &colour]);
    assert!(
        stderr(&out).contains(
            "failed to create typed patch object (default/colour; stable.example.com/v1, Kind=CronTab): .spec.colour: field not declared in schema"
        ),
        "{}",
        stderr(&out)
    );
    let out = cluster.kubectl_output(&["patch", "ct", "extra", "-p", r#"{"spec":{"image":"x"}}"#]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "is not supported by stable.example.com/v1, Kind=CronTab: the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        ),
        "{}",
        stderr(&out)
    );

    // Status subresource, then scale.
    cluster.kubectl(&[
        "patch",
        "ct",
        "nightly",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":1,"labelSelector":"app=backup"}}"#,
    ]);
    assert_eq!(
        cluster.jsonpath(&["get", "ct", "nightly"], "{.status.replicas}"),
        "1"
    );
    cluster.kubectl(&["scale", "crontab/nightly", "--replicas=3"]);
    assert_eq!(
        cluster.jsonpath(&["get", "ct", "nightly"], "{.spec.replicas}"),
        "3"
    );

    // kubectl 1.27 reads the OpenAPI v2 document in its protobuf form: the custom resource is
    // in it (explained from v2, strict validation, client-side apply and its three-way patch).
    if let Some(k127) = common::older_kubectl("1.27") {
        kubectl_127_round(&cluster, &k127, dir.path());
    }

    // The garbage collector finds custom resources through discovery: an object owned by a
    // deleted owner goes.
    let owner_uid = cluster.jsonpath(&["get", "ct", "extra"], "{.metadata.uid}");
    let mut dependent = crontab("dependent", json!({"cronSpec": "* * * * *"}));
    dependent["metadata"]["ownerReferences"] = json!([{
        "apiVersion": "stable.example.com/v1", "kind": "CronTab", "name": "extra", "uid": owner_uid}]);
    let dependent = write(dir.path(), "dependent.json", &dependent);
    cluster.kubectl(&["apply", "-f", &dependent]);
    cluster.kubectl(&["delete", "ct", "extra"]);
    cluster.eventually(
        "the garbage collector deletes the dependent",
        MINUTE,
        || {
            let out = cluster.kubectl_output(&["get", "ct", "dependent"]);
            (!out.status.success()).then_some(())
        },
    );

    // The namespace controller finds them through discovery too: deleting a namespace deletes
    // its custom resources, then the namespace.
    cluster.kubectl(&["create", "namespace", "team-a"]);
    let mut in_team = crontab("hourly", json!({"cronSpec": "0 * * * *"}));
    in_team["metadata"]["namespace"] = json!("team-a");
    let in_team = write(dir.path(), "team.json", &in_team);
    cluster.kubectl(&["apply", "-f", &in_team]);
    cluster.kubectl(&["delete", "namespace", "team-a", "--wait=false"]);
    cluster.eventually("the namespace and its CronTab are gone", MINUTE, || {
        let out = cluster.kubectl_output(&["get", "namespace", "team-a"]);
        (!out.status.success()).then_some(())
    });

    // Deleting the CRD deletes its objects and the kind leaves discovery.
    cluster.kubectl(&[
        "delete",
        "crd",
        "crontabs.stable.example.com",
        "--timeout=60s",
    ]);
    cluster.eventually("the kind leaves discovery", MINUTE, || {
        let out = cluster.kubectl_output(&["api-resources", "--api-group=stable.example.com"]);
        (!String::from_utf8_lossy(&out.stdout).contains("crontabs")).then_some(())
    });
    cluster.kubectl(&["apply", "-f", &crd_file]);
    cluster.kubectl(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=60s",
        "crd/crontabs.stable.example.com",
    ]);
    let left = cluster.kubectl(&["get", "crontabs", "-A", "-o", "name"]);
    assert_eq!(left.trim(), "", "objects of the deleted CRD are gone");
}

/// Runs kubectl 1.27, with a cache of its own, against `cluster`; returns its output.
fn old_kubectl(
    cluster: &Cluster,
    kubectl: &Path,
    cache: &Path,
    env: &[(&str, &str)],
    args: &[&str],
) -> std::process::Output {
    std::process::Command::new(kubectl)
        .env("KUBECONFIG", &cluster.kubeconfig)
        .envs(env.iter().copied())
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("kubectl 1.27 runs")
}

fn kubectl_127_round(cluster: &Cluster, kubectl: &Path, dir: &Path) {
    let cache = tempfile::tempdir().expect("cache dir");
    let ok = |env: &[(&str, &str)], args: &[&str]| {
        let out = old_kubectl(cluster, kubectl, cache.path(), env, args);
        assert!(
            out.status.success(),
            "kubectl 1.27 {} failed: {}",
            args.join(" "),
            stderr(&out)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };

    // `explain` from the v2 document (kubectl 1.27 reads v3 unless told otherwise).
    let explained = ok(
        &[("KUBECTL_EXPLAIN_OPENAPIV3", "false")],
        &["explain", "crontabs.spec"],
    );
    assert!(
        explained.contains("cronSpec") && explained.contains("When to run, in cron format."),
        "{explained}"
    );

    // Strict validation refuses an unknown field, naming it.
    let unknown = write(
        dir,
        "legacy-unknown.json",
        &crontab("legacy", json!({"cronSpec": "* * * * *", "colour": "blue"})),
    );
    let out = old_kubectl(
        cluster,
        kubectl,
        cache.path(),
        &[],
        &["create", "-f", &unknown],
    );
    assert!(!out.status.success(), "an unknown field is refused");
    assert!(stderr(&out).contains("colour"), "{}", stderr(&out));

    // Client-side apply, then a change applied as kubectl's three-way patch.
    let first = write(
        dir,
        "legacy.json",
        &crontab("legacy", json!({"cronSpec": "* * * * *", "image": "old"})),
    );
    ok(&[], &["apply", "-f", &first]);
    let second = write(
        dir,
        "legacy.json",
        &crontab("legacy", json!({"cronSpec": "*/5 * * * *", "replicas": 2})),
    );
    ok(&[], &["apply", "-f", &second]);
    let spec = cluster.jsonpath(&["get", "ct", "legacy"], "{.spec}");
    let spec: serde_json::Value = serde_json::from_str(&spec).expect("spec is JSON");
    assert_eq!(
        spec,
        json!({"cronSpec": "*/5 * * * *", "replicas": 2}),
        "the field dropped from the manifest is removed"
    );
    let table = ok(&[], &["get", "ct", "legacy"]);
    assert!(
        table.lines().next().unwrap_or("").contains("SPEC"),
        "{table}"
    );
    ok(&[], &["delete", "ct", "legacy"]);
}
