//! End to end: the admission plugins of `rkcm up` as kubectl sees them (ServiceAccount,
//! LimitRanger, Priority, DefaultTolerationSeconds, DefaultStorageClass,
//! StorageObjectInUseProtection), in one cluster.

mod common;

use common::Cluster;

fn apply(cluster: &Cluster, manifest: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, manifest).expect("manifest written");
    cluster.kubectl(&["apply", "-f", path.to_str().expect("utf-8 path")]);
}

/// Applies `manifest`, expecting kubectl to fail; returns its stderr.
fn apply_refused(cluster: &Cluster, manifest: &str) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, manifest).expect("manifest written");
    let out = cluster.kubectl_output(&["apply", "-f", path.to_str().expect("utf-8 path")]);
    assert!(!out.status.success(), "{manifest} was admitted");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn pod(name: &str, namespace: &str, spec: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {namespace}\nspec:\n{spec}  containers:\n  - name: c\n    image: nginx\n"
    )
}

#[test]
fn admission_plugins_shape_and_refuse_what_kubectl_creates() {
    let cluster = Cluster::start(&["--pod-ready-delay", "100ms"]);

    // ServiceAccount: the default account and the kube-api-access volume, mounted.
    cluster.kubectl(&["create", "namespace", "adm"]);
    cluster.wait_for_default_service_account("adm");
    apply(&cluster, &pod("plain", "adm", ""));
    let get = |path: &str| cluster.jsonpath(&["get", "pod", "plain", "-n", "adm"], path);
    assert_eq!(get("{.spec.serviceAccountName}"), "default");
    let volume = get("{.spec.volumes[0].name}");
    assert!(volume.starts_with("kube-api-access-"), "{volume}");
    assert_eq!(
        get("{.spec.volumes[0].projected.sources[0].serviceAccountToken.expirationSeconds}"),
        "3607"
    );
    assert_eq!(
        get("{.spec.containers[0].volumeMounts[0].mountPath}"),
        "/var/run/secrets/kubernetes.io/serviceaccount"
    );
    // DefaultTolerationSeconds and Priority (no class: 0).
    assert_eq!(
        get("{.spec.tolerations[*].key}"),
        "node.kubernetes.io/not-ready node.kubernetes.io/unreachable"
    );
    assert_eq!(get("{.spec.tolerations[*].tolerationSeconds}"), "300 300");
    assert_eq!(get("{.spec.priority}"), "0");

    // A missing service account is refused with kube's message.
    let stderr = apply_refused(
        &cluster,
        &pod("lost", "adm", "  serviceAccountName: ghost\n"),
    );
    assert!(
        stderr.contains(
            "pods \"lost\" is forbidden: error looking up service account adm/ghost: serviceaccount \"ghost\" not found"
        ),
        "{stderr}"
    );

    // LimitRanger: defaults applied, a request over the max refused.
    apply(
        &cluster,
        "apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: limits\n  namespace: adm\nspec:\n  limits:\n  - type: Container\n    default:\n      cpu: 500m\n      memory: 256Mi\n    defaultRequest:\n      cpu: 100m\n      memory: 128Mi\n    max:\n      cpu: \"1\"\n",
    );
    apply(&cluster, &pod("defaulted", "adm", ""));
    let resources = |what: &str| {
        cluster.jsonpath(
            &["get", "pod", "defaulted", "-n", "adm"],
            &format!("{{.spec.containers[0].resources.{what}}}"),
        )
    };
    assert_eq!(resources("requests.cpu"), "100m");
    assert_eq!(resources("limits.memory"), "256Mi");
    let annotation = cluster.jsonpath(
        &["get", "pod", "defaulted", "-n", "adm"],
        "{.metadata.annotations.kubernetes\\.io/limit-ranger}",
    );
    assert!(
        annotation.starts_with("LimitRanger plugin set: "),
        "{annotation}"
    );
    let big = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: big\n  namespace: adm\nspec:\n  containers:\n  - name: c\n    image: nginx\n    resources:\n      limits:\n        cpu: \"2\"\n";
    let stderr = apply_refused(&cluster, big);
    assert!(
        stderr.contains(
            "pods \"big\" is forbidden: maximum cpu usage per Container is 1, but limit is 2"
        ),
        "{stderr}"
    );

    // Priority: the built-in class in kube-system, an unknown class refused.
    cluster.wait_for_default_service_account("kube-system");
    apply(
        &cluster,
        &pod(
            "critical",
            "kube-system",
            "  priorityClassName: system-cluster-critical\n",
        ),
    );
    assert_eq!(
        cluster.jsonpath(
            &["get", "pod", "critical", "-n", "kube-system"],
            "{.spec.priority}"
        ),
        "2000000000"
    );
    let stderr = apply_refused(&cluster, &pod("gold", "adm", "  priorityClassName: gold\n"));
    assert!(
        stderr.contains("pods \"gold\" is forbidden: no PriorityClass with name gold was found"),
        "{stderr}"
    );

    // DefaultStorageClass and the pvc-protection finalizer.
    let claim = |name: &str| {
        format!("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: {name}\n  namespace: adm\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n")
    };
    apply(&cluster, &claim("before"));
    let claim_field =
        |name: &str, path: &str| cluster.jsonpath(&["get", "pvc", name, "-n", "adm"], path);
    // `rkcm up` ships the default class `standard`, as kind does.
    assert_eq!(
        claim_field("before", "{.spec.storageClassName}"),
        "standard"
    );
    assert_eq!(
        claim_field("before", "{.metadata.finalizers}"),
        "[\"kubernetes.io/pvc-protection\"]"
    );
    apply(
        &cluster,
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: fast\n  annotations:\n    storageclass.kubernetes.io/is-default-class: \"true\"\nprovisioner: example.com/none\n",
    );
    // With two default classes, the newest wins (kube 1.33).
    apply(&cluster, &claim("after"));
    assert_eq!(claim_field("after", "{.spec.storageClassName}"), "fast");
}
