//! End to end: CSI volumes attached and detached on `rkcm up` with the real kubectl. The
//! simulated storage is the CSI driver `simulated.csi.rkcm.io` (a CSIDriver with attachRequired,
//! a CSINode per node, nodes annotated for controller-managed attach/detach); a pod with a claim
//! of class `standard` runs once the attach/detach controller's VolumeAttachment is attached by
//! the simulated external-attacher and the node lists the volume in `volumesAttached`; deleting
//! the pod detaches it (the VolumeAttachment goes, the node lists nothing). A ReadWriteOnce
//! volume wanted on two nodes is refused to the second with kube's Multi-Attach event until the
//! first pod goes. One cluster.

mod common;

use std::time::Duration;

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);
const DRIVER: &str = "simulated.csi.rkcm.io";

fn apply(cluster: &Cluster, manifest: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, manifest).expect("manifest written");
    cluster.kubectl(&["apply", "-f", path.to_str().expect("utf-8 path")]);
}

const CLAIM_AND_POD: &str = r#"apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  storageClassName: standard
  accessModes: ["ReadWriteOnce"]
  resources:
    requests:
      storage: 1Gi
---
apiVersion: v1
kind: Pod
metadata:
  name: app
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: busybox
      command: ["sleep", "3600"]
      volumeMounts:
        - name: data
          mountPath: /data
  volumes:
    - name: data
      persistentVolumeClaim:
        claimName: data
"#;

const STATIC: &str = r#"apiVersion: v1
kind: PersistentVolume
metadata:
  name: shared-pv
spec:
  capacity:
    storage: 1Gi
  accessModes: ["ReadWriteOnce"]
  storageClassName: ""
  csi:
    driver: simulated.csi.rkcm.io
    volumeHandle: shared-1
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: shared
spec:
  storageClassName: ""
  volumeName: shared-pv
  accessModes: ["ReadWriteOnce"]
  resources:
    requests:
      storage: 1Gi
"#;

fn pod_on(name: &str, node: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  nodeName: {node}
  terminationGracePeriodSeconds: 1
  containers:
    - name: app
      image: busybox
      command: ["sleep", "3600"]
  volumes:
    - name: data
      persistentVolumeClaim:
        claimName: shared
"#
    )
}

fn events_of(cluster: &Cluster, name: &str) -> String {
    cluster.jsonpath(
        &[
            "get",
            "events",
            "--field-selector",
            &format!("involvedObject.name={name}"),
        ],
        "{range .items[*]}{.reason}: {.message}\n{end}",
    )
}

#[test]
fn csi_volumes_are_attached_to_their_pods_node_and_detached_when_the_pod_goes() {
    let cluster = Cluster::start(&["--nodes", "2"]);

    // The simulated storage is a CSI driver that needs attaching, registered on every node.
    cluster.eventually("the CSIDriver", MINUTE, || {
        cluster
            .kubectl_output(&["get", "csidriver", DRIVER])
            .status
            .success()
            .then_some(())
    });
    assert_eq!(
        cluster.jsonpath(&["get", "csidriver", DRIVER], "{.spec.attachRequired}"),
        "true"
    );
    for node in ["rkcm-node-1", "rkcm-node-2"] {
        let drivers = cluster.eventually("the node's CSINode", MINUTE, || {
            let out = cluster.kubectl_output(&[
                "get",
                "csinode",
                node,
                "-o",
                "jsonpath={.spec.drivers[*].name}",
            ]);
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        });
        assert_eq!(drivers, DRIVER);
        let managed = cluster.jsonpath(
            &["get", "node", node],
            "{.metadata.annotations.volumes\\.kubernetes\\.io/controller-managed-attach-detach}",
        );
        assert_eq!(managed, "true");
    }

    // A pod with a claim of the default class runs once its volume is attached.
    apply(&cluster, CLAIM_AND_POD);
    cluster.eventually("the pod runs", MINUTE, || {
        (cluster.jsonpath(&["get", "pod", "app"], "{.status.phase}") == "Running").then_some(())
    });
    let node = cluster.jsonpath(&["get", "pod", "app"], "{.spec.nodeName}");
    let pv = cluster.jsonpath(&["get", "pvc", "data"], "{.spec.volumeName}");
    assert_eq!(
        cluster.jsonpath(&["get", "pv", &pv], "{.spec.csi.driver}"),
        DRIVER
    );
    let handle = cluster.jsonpath(&["get", "pv", &pv], "{.spec.csi.volumeHandle}");
    let unique = format!("kubernetes.io/csi/{DRIVER}^{handle}");

    // kubectl shows the attachment: attacher, volume, node, attached.
    let table = cluster.kubectl(&["get", "volumeattachments"]);
    for column in ["ATTACHER", "PV", "NODE", "ATTACHED"] {
        assert!(table.contains(column), "{column} missing:\n{table}");
    }
    let row = table
        .lines()
        .find(|l| l.contains(&pv))
        .unwrap_or_else(|| panic!("no attachment of {pv}:\n{table}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert!(cells[0].starts_with("csi-"), "{table}");
    assert_eq!(
        &cells[1..5],
        [DRIVER, pv.as_str(), node.as_str(), "true"],
        "{table}"
    );
    let attachment = cells[0].to_string();
    assert_eq!(
        cluster.jsonpath(
            &["get", "volumeattachment", &attachment],
            "{.metadata.finalizers[*]}"
        ),
        "external-attacher/simulated-csi-rkcm-io"
    );

    // The node lists it attached and in use; the pod got kube's attach event.
    assert_eq!(
        cluster.jsonpath(&["get", "node", &node], "{.status.volumesAttached[*].name}"),
        unique
    );
    cluster.eventually("the node reports the volume in use", MINUTE, || {
        (cluster.jsonpath(&["get", "node", &node], "{.status.volumesInUse[*]}") == unique)
            .then_some(())
    });
    let events = events_of(&cluster, "app");
    assert!(
        events.contains(&format!(
            "SuccessfulAttachVolume: AttachVolume.Attach succeeded for volume \"{pv}\""
        )),
        "{events}"
    );

    // Deleting the pod detaches the volume: the attachment goes, the node lists nothing.
    cluster.kubectl(&["delete", "pod", "app"]);
    cluster.eventually("the VolumeAttachment is deleted", MINUTE, || {
        let out = cluster.kubectl(&["get", "volumeattachments", "-o", "name"]);
        (!out.contains(&attachment)).then_some(())
    });
    cluster.eventually("the node lists no volume attached", MINUTE, || {
        cluster
            .jsonpath(&["get", "node", &node], "{.status.volumesAttached[*].name}")
            .is_empty()
            .then_some(())
    });
    assert_eq!(
        cluster.jsonpath(&["get", "node", &node], "{.status.volumesInUse[*]}"),
        ""
    );

    // A new pod on the same claim gets the volume attached again.
    apply(&cluster, CLAIM_AND_POD);
    cluster.eventually("the new pod runs", MINUTE, || {
        (cluster.jsonpath(&["get", "pod", "app"], "{.status.phase}") == "Running").then_some(())
    });
    let out = cluster.kubectl(&["get", "volumeattachments", "-o", "name"]);
    assert!(out.contains(&attachment), "{out}");

    // A read-write-once volume wanted on two nodes: the second pod is refused until the first goes.
    apply(&cluster, STATIC);
    cluster.eventually("the static claim is Bound", MINUTE, || {
        (cluster.jsonpath(&["get", "pvc", "shared"], "{.status.phase}") == "Bound").then_some(())
    });
    apply(&cluster, &pod_on("holder", "rkcm-node-1"));
    cluster.eventually("the holder runs", MINUTE, || {
        (cluster.jsonpath(&["get", "pod", "holder"], "{.status.phase}") == "Running").then_some(())
    });
    apply(&cluster, &pod_on("waiter", "rkcm-node-2"));
    cluster.eventually("the Multi-Attach event", MINUTE, || {
        events_of(&cluster, "waiter")
            .contains("FailedAttachVolume: Multi-Attach error for volume \"shared-pv\" Volume is already used by pod(s) holder")
            .then_some(())
    });
    assert_eq!(
        cluster.jsonpath(&["get", "pod", "waiter"], "{.status.phase}"),
        "Pending"
    );
    cluster.kubectl(&["delete", "pod", "holder"]);
    cluster.eventually("the waiter runs on node 2", MINUTE, || {
        (cluster.jsonpath(&["get", "pod", "waiter"], "{.status.phase}") == "Running").then_some(())
    });
    let table = cluster.kubectl(&["get", "volumeattachments"]);
    let rows: Vec<&str> = table.lines().filter(|l| l.contains("shared-pv")).collect();
    assert_eq!(rows.len(), 1, "{table}");
    assert!(rows[0].contains("rkcm-node-2"), "{table}");
}
