//! End to end: volumes on `rkcm up` with the real kubectl. A static PersistentVolume and the
//! claim that binds it (kube's columns), a Retain volume Released with its claim gone; a claim on
//! the default class `standard` waiting for its first consumer, provisioned on the node its pod
//! is scheduled to; that claim deleted while its pod runs staying Terminating with its finalizer
//! until the pod goes; the provisioned volume deleted after its claim (reclaim Delete); a pod's
//! generic ephemeral volume getting its owned claim, grown on the expandable class; a StatefulSet whose claim templates get bound
//! claims. One cluster.

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

const STATIC: &str = r#"apiVersion: v1
kind: PersistentVolume
metadata:
  name: static-pv
spec:
  capacity:
    storage: 2Gi
  accessModes: ["ReadWriteOnce"]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: manual
  hostPath:
    path: /tmp/static-pv
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: static-claim
spec:
  storageClassName: manual
  accessModes: ["ReadWriteOnce"]
  resources:
    requests:
      storage: 1Gi
"#;

const DYNAMIC_CLAIM: &str = r#"apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: ["ReadWriteOnce"]
  resources:
    requests:
      storage: 3Gi
"#;

const DYNAMIC_POD: &str = r#"apiVersion: v1
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

const EPHEMERAL_POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: scratch
spec:
  containers:
    - name: app
      image: busybox
      command: ["sleep", "3600"]
      volumeMounts:
        - name: scratch
          mountPath: /scratch
  volumes:
    - name: scratch
      ephemeral:
        volumeClaimTemplate:
          spec:
            accessModes: ["ReadWriteOnce"]
            resources:
              requests:
                storage: 1Gi
"#;

const STATEFULSET: &str = r#"apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 2
  podManagementPolicy: Parallel
  selector:
    matchLabels:
      app: db
  template:
    metadata:
      labels:
        app: db
    spec:
      containers:
        - name: db
          image: postgres:17
          volumeMounts:
            - name: pgdata
              mountPath: /var/lib/postgresql/data
  volumeClaimTemplates:
    - metadata:
        name: pgdata
      spec:
        accessModes: ["ReadWriteOnce"]
        resources:
          requests:
            storage: 1Gi
"#;

fn phase(cluster: &Cluster, kind: &str, name: &str) -> String {
    cluster.jsonpath(&["get", kind, name], "{.status.phase}")
}

fn exists(cluster: &Cluster, kind: &str, name: &str) -> bool {
    let out = cluster.kubectl(&["get", kind, "--ignore-not-found", "-o", "name"]);
    out.lines().any(|l| l.ends_with(&format!("/{name}")))
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
fn volumes_bind_provision_and_go_away_as_on_kube() {
    let cluster = Cluster::start(&["--nodes", "2"]);

    // The default class, as kind ships one.
    let class = cluster.kubectl(&["get", "storageclass"]);
    assert!(class.contains("standard (default)"), "{class}");
    assert!(class.contains("rkcm.io/simulated"), "{class}");
    assert!(class.contains("WaitForFirstConsumer"), "{class}");

    // A static volume and the claim that binds it.
    apply(&cluster, STATIC);
    cluster.eventually("the static claim is Bound", MINUTE, || {
        (phase(&cluster, "pvc", "static-claim") == "Bound").then_some(())
    });
    assert_eq!(
        cluster.jsonpath(&["get", "pvc", "static-claim"], "{.spec.volumeName}"),
        "static-pv"
    );
    cluster.eventually("the static volume is Bound", MINUTE, || {
        (phase(&cluster, "pv", "static-pv") == "Bound").then_some(())
    });
    let table = cluster.kubectl(&["get", "pv,pvc"]);
    for column in [
        "CAPACITY",
        "ACCESS MODES",
        "RECLAIM POLICY",
        "STATUS",
        "CLAIM",
        "STORAGECLASS",
        "VOLUME",
    ] {
        assert!(table.contains(column), "{column} missing:\n{table}");
    }
    let pv_row = table
        .lines()
        .find(|l| l.starts_with("persistentvolume/static-pv"))
        .unwrap_or_else(|| panic!("no static-pv row:\n{table}"));
    let cells: Vec<&str> = pv_row.split_whitespace().collect();
    assert_eq!(
        &cells[1..7],
        [
            "2Gi",
            "RWO",
            "Retain",
            "Bound",
            "default/static-claim",
            "manual"
        ],
        "{table}"
    );
    let pvc_row = table
        .lines()
        .find(|l| l.starts_with("persistentvolumeclaim/static-claim"))
        .unwrap_or_else(|| panic!("no static-claim row:\n{table}"));
    let cells: Vec<&str> = pvc_row.split_whitespace().collect();
    assert_eq!(
        &cells[1..6],
        ["Bound", "static-pv", "2Gi", "RWO", "manual"],
        "{table}"
    );

    // A Retain volume is Released when its claim goes.
    cluster.kubectl(&["delete", "pvc", "static-claim"]);
    cluster.eventually("the Retain volume is Released", MINUTE, || {
        (phase(&cluster, "pv", "static-pv") == "Released").then_some(())
    });

    // A claim on the default class waits for its first consumer.
    apply(&cluster, DYNAMIC_CLAIM);
    cluster.eventually("the claim gets the default class", MINUTE, || {
        (cluster.jsonpath(&["get", "pvc", "data"], "{.spec.storageClassName}") == "standard")
            .then_some(())
    });
    cluster.eventually("the WaitForFirstConsumer event", MINUTE, || {
        events_of(&cluster, "data")
            .contains(
                "WaitForFirstConsumer: waiting for first consumer to be created before binding",
            )
            .then_some(())
    });
    assert_eq!(phase(&cluster, "pvc", "data"), "Pending");

    // A pod using it: the claim is provisioned on the pod's node and bound, the pod runs there.
    apply(&cluster, DYNAMIC_POD);
    cluster.eventually("the claim is Bound", MINUTE, || {
        (phase(&cluster, "pvc", "data") == "Bound").then_some(())
    });
    let volume = cluster.jsonpath(&["get", "pvc", "data"], "{.spec.volumeName}");
    let uid = cluster.jsonpath(&["get", "pvc", "data"], "{.metadata.uid}");
    assert_eq!(volume, format!("pvc-{uid}"));
    cluster.eventually("the pod runs", MINUTE, || {
        (phase(&cluster, "pod", "app") == "Running").then_some(())
    });
    let node = cluster.jsonpath(&["get", "pod", "app"], "{.spec.nodeName}");
    let selected = cluster.jsonpath(
        &["get", "pvc", "data"],
        "{.metadata.annotations.volume\\.kubernetes\\.io/selected-node}",
    );
    assert_eq!(selected, node);
    let affinity = cluster.jsonpath(
        &["get", "pv", &volume],
        "{.spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values[0]}",
    );
    assert_eq!(affinity, node);
    assert_eq!(
        cluster.jsonpath(&["get", "pv", &volume], "{.spec.capacity.storage}"),
        "3Gi"
    );
    assert_eq!(
        cluster.jsonpath(
            &["get", "pv", &volume],
            "{.metadata.annotations.pv\\.kubernetes\\.io/provisioned-by}"
        ),
        "rkcm.io/simulated"
    );
    let events = events_of(&cluster, "data");
    assert!(events.contains("ExternalProvisioning"), "{events}");
    assert!(events.contains("ProvisioningSucceeded"), "{events}");

    // A claim deleted while its pod runs stays Terminating with its finalizer until the pod goes.
    assert_eq!(
        cluster.jsonpath(&["get", "pvc", "data"], "{.metadata.finalizers}"),
        r#"["kubernetes.io/pvc-protection"]"#
    );
    assert_eq!(
        cluster.jsonpath(&["get", "pv", &volume], "{.metadata.finalizers}"),
        r#"["kubernetes.io/pv-protection"]"#
    );
    cluster.kubectl(&["delete", "pvc", "data", "--wait=false"]);
    cluster.eventually("the claim shows Terminating", MINUTE, || {
        let table = cluster.kubectl(&["get", "pvc", "data"]);
        table.contains("Terminating").then_some(())
    });
    // `kubectl delete` of an unused claim returns once the protection controller, which saw the
    // first deletion before it, released it: the claim in use is still there then.
    apply(
        &cluster,
        &DYNAMIC_CLAIM.replace("name: data", "name: unused"),
    );
    cluster.eventually("the unused claim gets its finalizer", MINUTE, || {
        cluster
            .jsonpath(&["get", "pvc", "unused"], "{.metadata.finalizers}")
            .contains("pvc-protection")
            .then_some(())
    });
    cluster.kubectl(&["delete", "pvc", "unused"]);
    assert!(exists(&cluster, "pvc", "data"), "the claim in use stays");
    assert_eq!(phase(&cluster, "pod", "app"), "Running");

    // The provisioned volume goes with its claim (reclaim Delete) once the pod is gone.
    cluster.kubectl(&["delete", "pod", "app"]);
    cluster.eventually("the claim goes with its pod", MINUTE, || {
        (!exists(&cluster, "pvc", "data")).then_some(())
    });
    cluster.eventually("the provisioned volume is deleted", MINUTE, || {
        (!exists(&cluster, "pv", &volume)).then_some(())
    });

    // A generic ephemeral volume: the pod's own claim, provisioned, and the pod runs.
    apply(&cluster, EPHEMERAL_POD);
    cluster.eventually("the ephemeral claim is Bound", MINUTE, || {
        (exists(&cluster, "pvc", "scratch-scratch")
            && phase(&cluster, "pvc", "scratch-scratch") == "Bound")
            .then_some(())
    });
    assert_eq!(
        cluster.jsonpath(
            &["get", "pvc", "scratch-scratch"],
            "{.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name}"
        ),
        "Pod/scratch"
    );
    cluster.eventually("the pod with the ephemeral volume runs", MINUTE, || {
        (phase(&cluster, "pod", "scratch") == "Running").then_some(())
    });

    // Growing a claim on the expandable default class resizes its volume.
    cluster.kubectl(&[
        "patch",
        "pvc",
        "scratch-scratch",
        "-p",
        r#"{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}"#,
    ]);
    cluster.eventually("the claim's capacity grows", MINUTE, || {
        (cluster.jsonpath(
            &["get", "pvc", "scratch-scratch"],
            "{.status.capacity.storage}",
        ) == "2Gi")
            .then_some(())
    });
    let scratch_volume = cluster.jsonpath(&["get", "pvc", "scratch-scratch"], "{.spec.volumeName}");
    assert_eq!(
        cluster.jsonpath(&["get", "pv", &scratch_volume], "{.spec.capacity.storage}"),
        "2Gi"
    );
    cluster.eventually(
        "the expander hands the claim to the external resizer",
        MINUTE,
        || {
            let events = events_of(&cluster, "scratch-scratch");
            (events.contains(
                "ExternalExpanding: waiting for an external controller to expand this PVC",
            ) && events.contains("VolumeResizeSuccessful"))
            .then_some(())
        },
    );

    // A StatefulSet's claim templates get bound claims, and its pods run.
    apply(&cluster, STATEFULSET);
    for ordinal in 0..2 {
        let claim = format!("pgdata-db-{ordinal}");
        cluster.eventually(&format!("{claim} is Bound"), MINUTE, || {
            (exists(&cluster, "pvc", &claim) && phase(&cluster, "pvc", &claim) == "Bound")
                .then_some(())
        });
        let pod = format!("db-{ordinal}");
        cluster.eventually(&format!("{pod} runs"), MINUTE, || {
            (exists(&cluster, "pod", &pod) && phase(&cluster, "pod", &pod) == "Running")
                .then_some(())
        });
    }
}
