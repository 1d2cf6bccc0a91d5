//! End to end: in `rkcm up` each controller runs as its own ServiceAccount in `kube-system`
//! (`--use-service-account-credentials`, on by default in `up`) under kube's bootstrap role
//! `system:controller:<name>` alone — checked with the real kubectl, in one cluster.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);

const RS_ROLE: &str = "system:controller:replicaset-controller";
const RS_USER: &str = "system:serviceaccount:kube-system:replicaset-controller";

fn can_i(cluster: &Cluster, user: &str, verb: &str, resource: &str) -> String {
    let out = cluster.kubectl_output(&["auth", "can-i", &format!("--as={user}"), verb, resource]);
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// The messages of the `reason` events about `kind/name`, with their source component.
fn events(cluster: &Cluster, kind: &str, name: &str, reason: &str) -> Vec<(String, String)> {
    let selector = format!("involvedObject.kind={kind},involvedObject.name={name},reason={reason}");
    let list: Value = serde_json::from_str(&cluster.kubectl(&[
        "get",
        "events",
        "--field-selector",
        &selector,
        "-o",
        "json",
    ]))
    .expect("events as JSON");
    list["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|e| {
            (
                e["source"]["component"].as_str().unwrap_or("").to_string(),
                e["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// A bootstrap token Secret usable for signing, valid for an hour.
fn bootstrap_token(id: &str) -> String {
    let expiration = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(3600)).to_string();
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bootstrap-token-{id}\n  namespace: kube-system\n\
         type: bootstrap.kubernetes.io/token\nstringData:\n  token-id: {id}\n  token-secret: 0123456789abcdef\n\
         \x20 usage-bootstrap-signing: \"true\"\n  expiration: \"{expiration}\"\n"
    )
}

/// A `rkcm controller-manager` process, killed when dropped.
struct Manager(Child);

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn controllers_run_as_their_own_service_accounts_under_kubes_roles() {
    let cluster = Cluster::start(&[
        "--nodes",
        "2",
        "--pod-ready-delay",
        "100ms",
        "--pod-termination-max",
        "500ms",
    ]);

    // The ServiceAccounts kube-controller-manager's client builder makes, by kube's names; the
    // service-account token controller runs on the manager's own identity and has none.
    for sa in [
        "replicaset-controller",
        "deployment-controller",
        "generic-garbage-collector",
        "namespace-controller",
        "node-controller",
        "daemon-set-controller",
        "horizontal-pod-autoscaler",
        "pvc-protection-controller",
        "certificate-controller",
    ] {
        cluster.eventually(&format!("ServiceAccount kube-system/{sa}"), MINUTE, || {
            cluster
                .kubectl_output(&["get", "serviceaccount", sa, "-n", "kube-system"])
                .status
                .success()
                .then_some(())
        });
    }
    let tokens = cluster.kubectl_output(&[
        "get",
        "serviceaccount",
        "tokens-controller",
        "-n",
        "kube-system",
    ]);
    assert!(
        !tokens.status.success(),
        "the token controller uses the root client"
    );

    // What kube's role lets the ReplicaSet controller do, and what it does not.
    assert_eq!(can_i(&cluster, RS_USER, "create", "pods"), "yes");
    assert_eq!(can_i(&cluster, RS_USER, "delete", "nodes"), "no");
    assert_eq!(can_i(&cluster, RS_USER, "create", "deployments.apps"), "no");
    assert_eq!(
        can_i(
            &cluster,
            "system:serviceaccount:kube-system:deployment-controller",
            "create",
            "replicasets.apps"
        ),
        "yes"
    );

    // A Deployment rolls out: the deployment and ReplicaSet controllers, each as its own
    // ServiceAccount, make the ReplicaSet and its pods.
    cluster.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=registry.k8s.io/pause:3.10",
        "--replicas=2",
    ]);
    cluster.kubectl(&["rollout", "status", "deployment/web", "--timeout=90s"]);
    let rs = cluster.jsonpath(
        &["get", "replicasets", "-l", "app=web"],
        "{.items[0].metadata.name}",
    );
    assert!(rs.starts_with("web-"), "{rs:?}");

    // Take pod creation out of the ReplicaSet controller's role: it is refused, and its
    // FailedCreate event shows the API server's verdict on who asked, as kube's does.
    let rules: Value =
        serde_json::from_str(&cluster.jsonpath(&["get", "clusterrole", RS_ROLE], "{.rules}"))
            .expect("rules as JSON");
    let without_create: Vec<Value> = rules
        .as_array()
        .expect("a list of rules")
        .iter()
        .map(|r| {
            let mut r = r.clone();
            if r["resources"] == serde_json::json!(["pods"]) {
                let verbs: Vec<Value> = r["verbs"]
                    .as_array()
                    .expect("verbs")
                    .iter()
                    .filter(|v| *v != "create")
                    .cloned()
                    .collect();
                r["verbs"] = Value::Array(verbs);
            }
            r
        })
        .collect();
    assert_ne!(
        Value::Array(without_create.clone()),
        rules,
        "the role had pods create"
    );
    let patch = |rules: &Value| {
        cluster.kubectl(&[
            "patch",
            "clusterrole",
            RS_ROLE,
            "--type=merge",
            "-p",
            &serde_json::json!({ "rules": rules }).to_string(),
        ]);
    };
    patch(&Value::Array(without_create));
    assert_eq!(can_i(&cluster, RS_USER, "create", "pods"), "no");
    cluster.kubectl(&["scale", "deployment/web", "--replicas=3"]);
    let (source, message) = cluster.eventually("a FailedCreate event", MINUTE, || {
        events(&cluster, "ReplicaSet", &rs, "FailedCreate")
            .into_iter()
            .next()
    });
    assert_eq!(source, "replicaset-controller");
    assert!(
        message.contains(&format!(
            "User \"{RS_USER}\" cannot create resource \"pods\" in API group \"\" in the namespace \"default\""
        )),
        "{message}"
    );
    assert_eq!(
        cluster.jsonpath(&["get", "replicaset", &rs], "{.status.replicas}"),
        "2"
    );

    // Give the right back: the controller's retries create the third pod.
    patch(&rules);
    cluster.eventually("the third replica", 2 * MINUTE, || {
        (cluster.jsonpath(&["get", "replicaset", &rs], "{.status.readyReplicas}") == "3")
            .then_some(())
    });

    // `rkcm controller-manager --use-service-account-credentials`, run on the admin's
    // kubeconfig beside `up` with the one controller `up` leaves off: it makes the bootstrap
    // signer's ServiceAccount and signs cluster-info as that account, under kube's Roles in
    // kube-system and kube-public.
    let before = cluster.kubectl_output(&[
        "get",
        "serviceaccount",
        "bootstrap-signer",
        "-n",
        "kube-system",
    ]);
    assert!(!before.status.success(), "up runs no bootstrap signer");
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = dir.path().join("cluster-kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n  name: \"\"\n",
    )
    .expect("file written");
    cluster.kubectl(&[
        "create",
        "configmap",
        "cluster-info",
        "-n",
        "kube-public",
        &format!("--from-file=kubeconfig={}", kubeconfig.display()),
    ]);
    let token = dir.path().join("token.yaml");
    std::fs::write(&token, bootstrap_token("abcdef")).expect("file written");
    cluster.kubectl(&["apply", "-f", token.to_str().expect("utf-8")]);
    let _manager = Manager(
        Command::new(env!("CARGO_BIN_EXE_rkcm"))
            .arg("controller-manager")
            .arg("--kubeconfig")
            .arg(&cluster.kubeconfig)
            .args([
                "--controllers=bootstrapsigner",
                "--use-service-account-credentials",
                "--leader-elect=false",
                "--secure-port=0",
            ])
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("controller manager starts"),
    );
    cluster.eventually(
        "ServiceAccount kube-system/bootstrap-signer",
        MINUTE,
        || {
            cluster
                .kubectl_output(&[
                    "get",
                    "serviceaccount",
                    "bootstrap-signer",
                    "-n",
                    "kube-system",
                ])
                .status
                .success()
                .then_some(())
        },
    );
    cluster.eventually("cluster-info signed for token abcdef", MINUTE, || {
        (!cluster
            .jsonpath(
                &["get", "configmap", "cluster-info", "-n", "kube-public"],
                "{.data.jws-kubeconfig-abcdef}",
            )
            .is_empty())
        .then_some(())
    });
    let signer = "system:serviceaccount:kube-system:bootstrap-signer";
    // kube's Role lets it update cluster-info alone.
    let can = |what: &str, ns: &str| {
        let out = cluster.kubectl_output(&[
            "auth",
            "can-i",
            &format!("--as={signer}"),
            "update",
            what,
            "-n",
            ns,
        ]);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(can("configmaps/cluster-info", "kube-public"), "yes");
    assert_eq!(can("configmaps/other", "kube-public"), "no");
    assert_eq!(can("configmaps/cluster-info", "default"), "no");
}
