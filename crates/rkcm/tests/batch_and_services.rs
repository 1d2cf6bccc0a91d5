//! End to end: `rkcm up` driven by the real kubectl through Jobs, Services and what every
//! namespace gets, in one cluster.

mod common;

use std::net::Ipv4Addr;
use std::time::Duration;

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);

fn apply(cluster: &Cluster, manifest: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, manifest).expect("manifest written");
    cluster.kubectl(&["apply", "-f", path.to_str().expect("utf-8 path")]);
}

#[test]
fn jobs_services_secrets_and_namespace_defaults() {
    let cluster = Cluster::start(&["--pod-ready-delay", "100ms"]);

    // A Job whose container echoes, sleeps and exits 0 completes, and its output is its log.
    cluster.kubectl(&[
        "create",
        "job",
        "pi",
        "--image=busybox",
        "--",
        "sh",
        "-c",
        "echo hello; sleep 1; echo done",
    ]);
    cluster.kubectl(&[
        "wait",
        "--for=condition=complete",
        "job/pi",
        "--timeout=60s",
    ]);
    assert_eq!(cluster.kubectl(&["logs", "job/pi"]), "hello\ndone\n");
    let succeeded = cluster.jsonpath(&["get", "job", "pi"], "{.status.succeeded}");
    assert_eq!(succeeded, "1");

    // Completions and parallelism, and a Job that fails past its backoff limit.
    apply(
        &cluster,
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: five
spec:
  completions: 5
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: c
          image: busybox
          command: ["sleep", "0.2"]
---
apiVersion: batch/v1
kind: Job
metadata:
  name: broken
spec:
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: c
          image: busybox
          command: ["sh", "-c", "exit 3"]
"#,
    );
    cluster.kubectl(&[
        "wait",
        "--for=condition=complete",
        "job/five",
        "--timeout=60s",
    ]);
    assert_eq!(
        cluster.jsonpath(&["get", "job", "five"], "{.status.succeeded}"),
        "5"
    );
    // The pod back-off (10s, then 20s) stands between the two failures.
    cluster.kubectl(&[
        "wait",
        "--for=condition=failed",
        "job/broken",
        "--timeout=90s",
    ]);
    let reason = cluster.jsonpath(
        &["get", "job", "broken"],
        r#"{.status.conditions[?(@.type=="Failed")].reason}"#,
    );
    assert_eq!(reason, "BackoffLimitExceeded");

    // A Service gets a cluster IP from the default range; the kubernetes Service has the first.
    cluster.kubectl(&["create", "deployment", "web", "--image=nginx"]);
    cluster.kubectl(&["expose", "deployment", "web", "--port", "80"]);
    let ip: Ipv4Addr = cluster
        .jsonpath(&["get", "service", "web"], "{.spec.clusterIP}")
        .parse()
        .expect("an IPv4 cluster IP");
    let [first, second, ..] = ip.octets();
    assert!(
        first == 10 && (96..112).contains(&second),
        "{ip} is in 10.96.0.0/12"
    );
    assert_eq!(
        cluster.jsonpath(&["get", "service", "kubernetes"], "{.spec.clusterIP}"),
        "10.96.0.1"
    );
    // Nothing runs behind a Service here: its proxy answers as kube's does without endpoints,
    // or, once the endpoints controller listed the pods, that they run no containers.
    let out = cluster.kubectl_output(&[
        "get",
        "--raw",
        "/api/v1/namespaces/default/services/web:80/proxy/",
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no endpoints available for service \"web\"")
            || stderr.contains("are pods on simulated nodes, which run no containers"),
        "{stderr}"
    );

    // Every namespace gets its default ServiceAccount and the root CA ConfigMap.
    cluster.kubectl(&["create", "namespace", "team"]);
    cluster.wait_for_default_service_account("team");
    cluster.eventually("kube-root-ca.crt in team", MINUTE, || {
        let out = cluster.kubectl_output(&[
            "get",
            "configmap",
            "kube-root-ca.crt",
            "-n",
            "team",
            "-o",
            "jsonpath={.data.ca\\.crt}",
        ]);
        String::from_utf8_lossy(&out.stdout)
            .starts_with("-----BEGIN CERTIFICATE-----")
            .then_some(())
    });

    // Secrets: stringData is stored as data; a bad type is refused with kube's message.
    cluster.kubectl(&["create", "secret", "generic", "s", "--from-literal=a=b"]);
    assert_eq!(
        cluster.jsonpath(&["get", "secret", "s"], "{.data.a}"),
        "Yg=="
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("secret.yaml");
    std::fs::write(
        &path,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bad\ntype: kubernetes.io/tls\nstringData:\n  tls.crt: x\n",
    )
    .expect("manifest written");
    let out = cluster.kubectl_output(&["create", "-f", path.to_str().expect("utf-8 path")]);
    assert!(
        !out.status.success(),
        "a TLS secret without a key is refused"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("data[tls.key]: Required value"), "{stderr}");
}
