//! End to end: kubelets' identities on `rkcm up` (`--authorization-mode Node,RBAC` and
//! NodeRestriction, as kubeadm runs kube-apiserver), driven by the real kubectl impersonating
//! `system:node:<name>` in `system:nodes`, in one cluster whose simulated kubelets and scheduler
//! talk with their own certificates.

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

#[test]
fn a_node_reads_what_its_pods_use_and_changes_only_itself() {
    let cluster = Cluster::start(&["--nodes", "2"]);
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
