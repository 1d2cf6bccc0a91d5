//! End to end: kubelets' identities on `rkcm up` (`--authorization-mode Node,RBAC` and
//! NodeRestriction, as kubeadm runs kube-apiserver), driven by the real kubectl impersonating
//! `system:node:<name>` in `system:nodes`, in one cluster whose simulated kubelets and scheduler
//! talk with their own certificates; and pods that wait, as on kube, for the Secrets and
//! ConfigMaps their kubelet reads as the node.

mod common;

use std::time::Duration;

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);

/// kubectl `args` as node `node`: whether it succeeded, its stdout and its stderr.
fn as_node(cluster: &Cluster, node: &str, args: &[&str]) -> (bool, String, String) {
    let user = format!("--as=system:node:{node}");
    let mut all = vec![user.as_str(), "--as-group=system:nodes"];
    all.extend(args);
    let out = cluster.kubectl_output(&all);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: uses-secret
spec:
  containers:
  - name: c
    image: busybox
    command: ["sleep", "3600"]
    envFrom:
    - secretRef:
        name: used
"#;

const WAITING_PODS: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: needs-cert
spec:
  containers:
  - name: c
    image: registry.k8s.io/ingress-nginx/controller:v1.12.1
    volumeMounts:
    - name: webhook-cert
      mountPath: /usr/local/certificates/
  volumes:
  - name: webhook-cert
    secret:
      secretName: ingress-nginx-admission
---
apiVersion: v1
kind: Pod
metadata:
  name: needs-key
spec:
  containers:
  - name: c
    image: busybox
    command: ["sleep", "3600"]
    env:
    - name: TOKEN
      valueFrom:
        secretKeyRef:
          name: api-key
          key: token
    envFrom:
    - configMapRef:
        name: optional-settings
        optional: true
"#;

/// `jsonpath` of pod `name`, one field.
fn pod_field(cluster: &Cluster, name: &str, path: &str) -> String {
    cluster.jsonpath(&["get", "pod", name], path)
}

/// The messages of the events with `reason` about pod `name`, and their source component.
fn pod_events(cluster: &Cluster, name: &str, reason: &str) -> Vec<(String, String)> {
    let selector = format!("reason={reason},involvedObject.name={name}");
    let out = cluster.kubectl(&["get", "events", "--field-selector", &selector, "-o", "json"]);
    let list: serde_json::Value = serde_json::from_str(&out).expect("kubectl prints JSON");
    list["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["message"].as_str().unwrap_or_default().to_string(),
                e["source"]["component"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect()
}

/// Pods whose volume or environment refers to a missing Secret are held as a kubelet holds
/// them (the ingress-nginx controller's webhook certificate, created later by a Job), with
/// kube's events, and go on once the Secret exists.
fn pods_wait_for_the_secrets_they_use(cluster: &Cluster) {
    let dir = tempfile::tempdir().expect("temp dir");
    let manifest = dir.path().join("waiting.yaml");
    std::fs::write(&manifest, WAITING_PODS).expect("manifest written");
    cluster.kubectl(&["apply", "-f", manifest.to_str().expect("utf-8 path")]);

    cluster.eventually("needs-cert waiting in ContainerCreating", MINUTE, || {
        (!pod_field(cluster, "needs-cert", "{.spec.nodeName}").is_empty()
            && pod_field(
                cluster,
                "needs-cert",
                "{.status.containerStatuses[0].state.waiting.reason}",
            ) == "ContainerCreating")
            .then_some(())
    });
    cluster.eventually(
        "needs-key waiting in CreateContainerConfigError",
        MINUTE,
        || {
            (pod_field(
                cluster,
                "needs-key",
                "{.status.containerStatuses[0].state.waiting.reason}",
            ) == "CreateContainerConfigError")
                .then_some(())
        },
    );
    assert_eq!(
        pod_field(
            cluster,
            "needs-key",
            "{.status.containerStatuses[0].state.waiting.message}"
        ),
        r#"secret "api-key" not found"#
    );
    let failed_mount = r#"MountVolume.SetUp failed for volume "webhook-cert" : secret "ingress-nginx-admission" not found"#;
    cluster.eventually("the FailedMount event", MINUTE, || {
        pod_events(cluster, "needs-cert", "FailedMount")
            .contains(&(failed_mount.to_string(), "kubelet".to_string()))
            .then_some(())
    });
    cluster.eventually("the Failed event", MINUTE, || {
        pod_events(cluster, "needs-key", "Failed")
            .contains(&(
                r#"Error: secret "api-key" not found"#.to_string(),
                "kubelet".to_string(),
            ))
            .then_some(())
    });
    // Neither is ready, nor was any container started.
    for name in ["needs-cert", "needs-key"] {
        assert_eq!(pod_field(cluster, name, "{.status.phase}"), "Pending");
        assert_eq!(
            pod_field(
                cluster,
                name,
                r#"{.status.conditions[?(@.type=="Ready")].status}"#
            ),
            "False"
        );
        assert!(pod_events(cluster, name, "Started").is_empty(), "{name}");
    }
    assert_eq!(
        pod_field(
            cluster,
            "needs-cert",
            r#"{.status.conditions[?(@.type=="PodReadyToStartContainers")].status}"#
        ),
        "False"
    );
    let table = cluster.kubectl(&["get", "pods", "needs-cert", "needs-key"]);
    assert!(
        table.contains("ContainerCreating") && table.contains("CreateContainerConfigError"),
        "{table}"
    );

    // A Secret without the key: kube's message names the key.
    cluster.kubectl(&[
        "create",
        "secret",
        "generic",
        "api-key",
        "--from-literal=other=x",
    ]);
    cluster.eventually("the missing key reported", MINUTE, || {
        (pod_field(
            cluster,
            "needs-key",
            "{.status.containerStatuses[0].state.waiting.message}",
        ) == "couldn't find key token in Secret default/api-key")
            .then_some(())
    });
    cluster.kubectl(&[
        "patch",
        "secret",
        "api-key",
        "--type=merge",
        "-p",
        r#"{"stringData":{"token":"t"}}"#,
    ]);
    cluster.kubectl(&[
        "create",
        "secret",
        "generic",
        "ingress-nginx-admission",
        "--from-literal=cert=c",
        "--from-literal=key=k",
    ]);
    for name in ["needs-cert", "needs-key"] {
        cluster.eventually(&format!("{name} running and ready"), MINUTE, || {
            (pod_field(cluster, name, "{.status.phase}") == "Running"
                && pod_field(
                    cluster,
                    name,
                    r#"{.status.conditions[?(@.type=="Ready")].status}"#,
                ) == "True")
                .then_some(())
        });
    }
    cluster.kubectl(&["delete", "pod", "needs-cert", "needs-key", "--wait=false"]);
}

#[test]
fn a_node_reads_what_its_pods_use_and_changes_only_itself() {
    let cluster = Cluster::start(&["--nodes", "2"]);
    pods_wait_for_the_secrets_they_use(&cluster);
    cluster.kubectl(&["create", "secret", "generic", "used", "--from-literal=k=v"]);
    cluster.kubectl(&[
        "create",
        "secret",
        "generic",
        "unused",
        "--from-literal=k=v",
    ]);
    let dir = tempfile::tempdir().expect("temp dir");
    let manifest = dir.path().join("pod.yaml");
    std::fs::write(&manifest, POD).expect("manifest written");
    cluster.kubectl(&["apply", "-f", manifest.to_str().expect("utf-8 path")]);

    // The scheduler (system:kube-scheduler) binds it and the kubelet (system:node:<node>)
    // runs it, each under kube's roles and the Node authorizer alone.
    cluster.eventually("the pod to run", MINUTE, || {
        (cluster.jsonpath(&["get", "pod", "uses-secret"], "{.status.phase}") == "Running")
            .then_some(())
    });
    let node = cluster.jsonpath(&["get", "pod", "uses-secret"], "{.spec.nodeName}");
    // The kubelet records its events as the node (kube's system:node rules allow it).
    cluster.eventually("the kubelet's Started event", MINUTE, || {
        cluster
            .kubectl(&[
                "get",
                "events",
                "--field-selector",
                "reason=Started,involvedObject.name=uses-secret",
                "-o",
                "name",
            ])
            .contains("event")
            .then_some(())
    });
    let other = if node == "rkcm-node-1" {
        "rkcm-node-2"
    } else {
        "rkcm-node-1"
    };

    // Its own Node, and the secret its pod uses.
    let (ok, out, err) = as_node(&cluster, &node, &["get", "node", &node, "-o", "name"]);
    assert!(ok, "{err}");
    assert_eq!(out.trim(), format!("node/{node}"));
    let (ok, _, err) = as_node(&cluster, &node, &["get", "secret", "used"]);
    assert!(ok, "{err}");
    let (_, out, _) = as_node(&cluster, &node, &["auth", "can-i", "get", "secret/used"]);
    assert_eq!(out.trim(), "yes");

    // Not another secret, not as the other node, not another Node.
    let (ok, _, err) = as_node(&cluster, &node, &["get", "secret", "unused"]);
    assert!(!ok);
    assert!(
        err.contains(&format!(
            "secrets \"unused\" is forbidden: User \"system:node:{node}\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\": no relationship found between node '{node}' and this object"
        )),
        "{err}"
    );
    let (ok, _, err) = as_node(&cluster, other, &["get", "secret", "used"]);
    assert!(!ok, "the other node has no pod using it");
    assert!(err.contains("no relationship found between node"), "{err}");
    let (ok, _, err) = as_node(&cluster, &node, &["get", "node", other]);
    assert!(!ok);
    assert!(
        err.contains(&format!(
            "node '{node}' cannot read '{other}', only its own Node object"
        )),
        "{err}"
    );
    let (ok, _, err) = as_node(&cluster, &node, &["get", "nodes"]);
    assert!(!ok);
    assert!(
        err.contains(&format!(
            "node '{node}' cannot read all nodes, only its own Node object"
        )),
        "{err}"
    );

    // Another node's labels: kubectl reads the Node before patching it, which the Node
    // authorizer refuses (NodeRestriction would refuse the patch itself, see the API server's
    // node_authorization test).
    let (ok, _, err) = as_node(
        &cluster,
        &node,
        &[
            "patch",
            "node",
            other,
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"team":"a"}}}"#,
        ],
    );
    assert!(!ok);
    assert!(
        err.contains(&format!(
            "nodes \"{other}\" is forbidden: User \"system:node:{node}\" cannot get resource \"nodes\" in API group \"\" at the cluster scope: node '{node}' cannot read '{other}', only its own Node object"
        )),
        "{err}"
    );
    assert!(
        !cluster
            .jsonpath(&["get", "node", other], "{.metadata.labels}")
            .contains("team"),
        "the other node was not labelled"
    );
    // NodeRestriction: a label a kubelet may not set on itself.
    let (ok, _, err) = as_node(
        &cluster,
        &node,
        &[
            "patch",
            "node",
            &node,
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}"#,
        ],
    );
    assert!(!ok);
    assert!(
        err.contains(&format!(
            "nodes \"{node}\" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/control-plane"
        )),
        "{err}"
    );
    let (ok, _, err) = as_node(
        &cluster,
        &node,
        &[
            "patch",
            "node",
            &node,
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"node.kubernetes.io/rack":"r1"}}}"#,
        ],
    );
    assert!(ok, "a kubelet label: {err}");
    assert_eq!(
        cluster.jsonpath(
            &["get", "node", &node],
            "{.metadata.labels.node\\.kubernetes\\.io/rack}"
        ),
        "r1"
    );

    // The pod and the node's access to its secret go together.
    cluster.kubectl(&["delete", "pod", "uses-secret", "--wait=true"]);
    cluster.eventually("the node to lose the secret", MINUTE, || {
        (!as_node(&cluster, &node, &["get", "secret", "used"]).0).then_some(())
    });

    // The kubelets keep their leases as themselves.
    for n in [node.as_str(), other] {
        let holder = cluster.jsonpath(
            &["get", "lease", "-n", "kube-node-lease", n],
            "{.spec.holderIdentity}",
        );
        assert_eq!(holder, n);
    }
}
