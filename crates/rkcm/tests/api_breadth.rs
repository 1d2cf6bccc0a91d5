//! End to end: the breadth of the built-in API on `rkcm up --nodes 1`, driven by kubectl 1.33
//! and 1.27 — every `kubectl create` generator and the columns `kubectl get` shows for what it
//! made, `api-resources` listing every group, the APIServices, component statuses and API
//! Priority and Fairness bootstrap objects, `kubectl autoscale` in autoscaling/v2 (1.33) and
//! autoscaling/v1 (1.27), and `kubectl create -f` of kinds without PATCH (Binding,
//! TokenReview) validated on the client.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);

/// Runs `kubectl` (the binary `bin`) against `cluster` with its own discovery cache.
fn kubectl_with(cluster: &Cluster, bin: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .env("KUBECONFIG", &cluster.kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("kubectl runs")
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// Asserts success; returns stdout.
fn ok(bin: &Path, args: &[&str], out: Output) -> String {
    assert!(
        out.status.success(),
        "{} {} failed:\nstdout: {}\nstderr: {}",
        bin.display(),
        args.join(" "),
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// The words of the header line of a `kubectl get` table.
fn header(table: &str) -> Vec<String> {
    table
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

/// The row of `name` in a table, as words.
fn row(table: &str, name: &str) -> Vec<String> {
    table
        .lines()
        .map(words)
        .find(|w| w.first().map(String::as_str) == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{table}"))
}

fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, content).expect("file written");
    path
}

/// Every generator of `kubectl create` (the same set in 1.27 and 1.33), then `kubectl get`
/// of each object with kube's printer columns.
fn every_generator(cluster: &Cluster, bin: &Path, suffix: &str) {
    let cache = tempfile::tempdir().expect("cache dir");
    let run = |args: &[&str]| ok(bin, args, kubectl_with(cluster, bin, cache.path(), args));
    let ns = format!("gen-{suffix}");
    let cluster_name = |base: &str| format!("{base}-{suffix}");
    run(&["create", "namespace", &ns]);
    cluster.wait_for_default_service_account(&ns);
    let crt = cluster.data_dir.join("apiserver.crt");
    let key = cluster.data_dir.join("apiserver.key");
    let (crt, key) = (
        format!("--cert={}", crt.display()),
        format!("--key={}", key.display()),
    );
    let (pc, cr, crb) = (
        cluster_name("pc"),
        cluster_name("reader"),
        cluster_name("reader"),
    );
    let crb_role = format!("--clusterrole={cr}");
    let creates: Vec<Vec<&str>> = vec![
        vec!["secret", "generic", "s-generic", "--from-literal=a=b"],
        vec!["secret", "tls", "s-tls", &crt, &key],
        vec![
            "secret",
            "docker-registry",
            "s-docker",
            "--docker-server=registry.example.com",
            "--docker-username=u",
            "--docker-password=p",
        ],
        vec!["configmap", "cm", "--from-literal=a=b"],
        vec!["serviceaccount", "sa"],
        vec!["job", "job", "--image=busybox", "--", "sleep", "1"],
        vec!["cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *"],
        vec!["deployment", "web", "--image=nginx"],
        vec!["service", "clusterip", "svc-cip", "--tcp=80:8080"],
        vec!["service", "nodeport", "svc-np", "--tcp=80:8080"],
        vec!["service", "loadbalancer", "svc-lb", "--tcp=80:8080"],
        vec![
            "service",
            "externalname",
            "svc-ext",
            "--external-name=example.com",
        ],
        vec!["quota", "q", "--hard=pods=10,count/configmaps=20"],
        vec!["pdb", "pdb", "--selector=app=web", "--min-available=1"],
        vec!["role", "role", "--verb=get", "--resource=pods"],
        vec!["rolebinding", "rb", "--role=role", "--user=jane"],
        vec!["ingress", "ing", "--rule=foo.example.com/bar=svc-cip:80"],
    ];
    for args in &creates {
        let mut all = vec!["-n", &ns, "create"];
        all.extend(args.iter().copied());
        run(&all);
    }
    run(&["create", "priorityclass", &pc, "--value=1000"]);
    run(&[
        "create",
        "clusterrole",
        &cr,
        "--verb=get",
        "--resource=pods",
    ]);
    run(&[
        "create",
        "clusterrolebinding",
        &crb,
        &crb_role,
        "--user=jane",
    ]);
    let token = run(&["-n", &ns, "create", "token", "sa"]);
    assert_eq!(token.trim().split('.').count(), 3, "a JWT: {token}");

    // kube's printers.go columns.
    let expect = |resource: &str, name: &str, namespaced: bool, columns: &str| {
        let mut args = vec!["get", resource, name];
        if namespaced {
            args.extend(["-n", &ns]);
        }
        let table = run(&args);
        assert_eq!(header(&table), words(columns), "{resource}:\n{table}");
        row(&table, name)
    };
    let secret = expect("secret", "s-tls", true, "NAME TYPE DATA AGE");
    assert_eq!(secret[1..3], ["kubernetes.io/tls", "2"]);
    let docker = expect("secret", "s-docker", true, "NAME TYPE DATA AGE");
    assert_eq!(docker[1], "kubernetes.io/dockerconfigjson");
    expect("secret", "s-generic", true, "NAME TYPE DATA AGE");
    expect("configmap", "cm", true, "NAME DATA AGE");
    expect("serviceaccount", "sa", true, "NAME SECRETS AGE");
    expect("job", "job", true, "NAME STATUS COMPLETIONS DURATION AGE");
    let cj = expect(
        "cronjob",
        "cj",
        true,
        "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE",
    );
    assert_eq!(cj[1..7], ["*/5", "*", "*", "*", "*", "<none>"]);
    expect(
        "deployment",
        "web",
        true,
        "NAME READY UP-TO-DATE AVAILABLE AGE",
    );
    let services = "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE";
    let cip = expect("service", "svc-cip", true, services);
    assert_eq!(cip[1], "ClusterIP");
    assert!(cip[2].starts_with("10."), "{cip:?}");
    let np = expect("service", "svc-np", true, services);
    assert!(np[4].starts_with("80:3"), "a node port: {np:?}");
    let lb = expect("service", "svc-lb", true, services);
    assert_eq!(
        (lb[1].as_str(), lb[3].as_str()),
        ("LoadBalancer", "<pending>")
    );
    let ext = expect("service", "svc-ext", true, services);
    assert_eq!(ext[1..4], ["ExternalName", "<none>", "example.com"]);
    let quota = expect("quota", "q", true, "NAME REQUEST LIMIT AGE");
    assert!(
        quota[1].starts_with("count/configmaps:") || quota[1].starts_with("pods:"),
        "{quota:?}"
    );
    expect(
        "pdb",
        "pdb",
        true,
        "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE",
    );
    expect("role", "role", true, "NAME CREATED AT");
    let rb = expect("rolebinding", "rb", true, "NAME ROLE AGE");
    assert_eq!(rb[1], "Role/role");
    expect("ingress", "ing", true, "NAME CLASS HOSTS ADDRESS PORTS AGE");
    expect("namespace", &ns, false, "NAME STATUS AGE");
    let pc_row = expect(
        "priorityclass",
        &pc,
        false,
        "NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY",
    );
    assert_eq!(pc_row[1..3], ["1000", "false"]);
    expect("clusterrole", &cr, false, "NAME CREATED AT");
    let crb_row = expect("clusterrolebinding", &crb, false, "NAME ROLE AGE");
    assert_eq!(crb_row[1], format!("ClusterRole/{cr}"));
}

#[test]
fn api_breadth_with_kubectl() {
    let cluster = Cluster::start(&["--nodes", "1"]);
    let files = tempfile::tempdir().expect("temp dir");
    let kubectl = cluster.kubectl.clone();

    every_generator(&cluster, &kubectl, "133");
    let kubectl_127 = common::older_kubectl("1.27");
    if let Some(old) = &kubectl_127 {
        every_generator(&cluster, old, "127");
    }

    // Every group of the built-in API, in discovery.
    let resources = cluster.kubectl(&["api-resources", "--no-headers"]);
    let versions = cluster.kubectl(&["api-versions"]);
    for gv in [
        "v1",
        "admissionregistration.k8s.io/v1",
        "apiregistration.k8s.io/v1",
        "apps/v1",
        "authentication.k8s.io/v1",
        "authorization.k8s.io/v1",
        "autoscaling/v2",
        "batch/v1",
        "certificates.k8s.io/v1",
        "coordination.k8s.io/v1",
        "discovery.k8s.io/v1",
        "events.k8s.io/v1",
        "flowcontrol.apiserver.k8s.io/v1",
        "networking.k8s.io/v1",
        "node.k8s.io/v1",
        "policy/v1",
        "rbac.authorization.k8s.io/v1",
        "scheduling.k8s.io/v1",
        "storage.k8s.io/v1",
    ] {
        assert!(
            resources.lines().any(|l| words(l).iter().any(|w| w == gv)),
            "api-resources lacks {gv}:\n{resources}"
        );
        assert!(versions.lines().any(|l| l == gv), "api-versions lacks {gv}");
    }
    assert!(
        versions.lines().any(|l| l == "autoscaling/v1"),
        "{versions}"
    );

    // APIServices: one Local, available APIService per served group-version.
    let apiservices = cluster.kubectl(&["get", "apiservices"]);
    assert_eq!(header(&apiservices), words("NAME SERVICE AVAILABLE AGE"));
    for name in [
        "v1.",
        "v1.apps",
        "v1.autoscaling",
        "v2.autoscaling",
        "v1.batch",
    ] {
        assert_eq!(row(&apiservices, name)[1..3], ["Local", "True"], "{name}");
    }

    // Component statuses, with kube's deprecation warning.
    let out = cluster.kubectl_output(&["get", "componentstatuses"]);
    let cs = ok(&kubectl, &["get", "cs"], out.clone());
    assert!(
        text(&out.stderr).contains("v1 ComponentStatus is deprecated in v1.19+"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(header(&cs), words("NAME STATUS MESSAGE ERROR"));
    let out = cluster.kubectl_output(&["get", "endpoints", "-n", "default"]);
    ok(&kubectl, &["get", "endpoints"], out.clone());
    assert!(
        text(&out.stderr).contains(
            "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
        ),
        "{}",
        text(&out.stderr)
    );
    for name in ["scheduler", "controller-manager", "etcd-0"] {
        let r = cluster.eventually(&format!("{name} healthy"), MINUTE, || {
            let cs = cluster.kubectl(&["get", "cs"]);
            let r = row(&cs, name);
            (r[1] == "Healthy").then_some(r)
        });
        assert_eq!(r[1..], ["Healthy", "ok"], "{name}");
    }

    // API Priority and Fairness bootstrap objects.
    let schemas = cluster.kubectl(&["get", "flowschemas"]);
    assert_eq!(
        header(&schemas),
        words("NAME PRIORITYLEVEL MATCHINGPRECEDENCE DISTINGUISHERMETHOD AGE MISSINGPL")
    );
    assert_eq!(row(&schemas, "exempt")[1..4], ["exempt", "1", "<none>"]);
    assert_eq!(
        row(&schemas, "catch-all")[1..4],
        ["catch-all", "10000", "ByUser"]
    );
    assert_eq!(
        row(&schemas, "kube-controller-manager")[1..4],
        ["workload-high", "800", "ByNamespace"]
    );
    assert_eq!(schemas.lines().count(), 14, "13 schemas:\n{schemas}");
    let levels = cluster.kubectl(&["get", "prioritylevelconfigurations"]);
    assert_eq!(
        header(&levels),
        words("NAME TYPE NOMINALCONCURRENCYSHARES QUEUES HANDSIZE QUEUELENGTHLIMIT AGE")
    );
    assert_eq!(
        row(&levels, "exempt")[1..6],
        ["Exempt", "<none>", "<none>", "<none>", "<none>"]
    );
    assert_eq!(
        row(&levels, "workload-low")[1..6],
        ["Limited", "100", "128", "6", "50"]
    );
    assert_eq!(row(&levels, "catch-all")[1..3], ["Limited", "5"]);

    // kubectl autoscale: 1.33 writes autoscaling/v2, 1.27 autoscaling/v1; one object each,
    // readable in both versions.
    cluster.kubectl(&["create", "deployment", "scaled", "--image=nginx"]);
    cluster.kubectl(&["autoscale", "deployment", "scaled", "--max", "3"]);
    if let Some(old) = &kubectl_127 {
        let cache = tempfile::tempdir().expect("cache dir");
        let args = [
            "autoscale",
            "deployment",
            "scaled",
            "--max",
            "4",
            "--name",
            "scaled-v1",
            "-v=6",
        ];
        let out = kubectl_with(&cluster, old, cache.path(), &args);
        ok(old, &args, out.clone());
        assert!(
            text(&out.stderr)
                .contains("/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"),
            "kubectl 1.27 writes autoscaling/v1:\n{}",
            text(&out.stderr)
        );
        let v1 = cluster.kubectl(&[
            "get",
            "horizontalpodautoscalers.v1.autoscaling",
            "scaled-v1",
            "-o",
            "jsonpath={.apiVersion} {.spec.maxReplicas} {.spec.targetCPUUtilizationPercentage}",
        ]);
        assert_eq!(v1, "autoscaling/v1 4 80");
        let v2 = cluster.kubectl(&[
            "get",
            "horizontalpodautoscalers.v2.autoscaling",
            "scaled-v1",
            "-o",
            "jsonpath={.apiVersion} {.spec.metrics[0].resource.name}",
        ]);
        assert_eq!(v2, "autoscaling/v2 cpu");
    }
    let hpas = cluster.kubectl(&["get", "hpa"]);
    assert_eq!(
        header(&hpas),
        words("NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE")
    );
    let scaled = row(&hpas, "scaled");
    assert_eq!(scaled[1..4], ["Deployment/scaled", "cpu:", "<unknown>/80%"]);
    assert_eq!(scaled[4..6], ["1", "3"]);
    let in_v1 = cluster.kubectl(&["get", "horizontalpodautoscalers.v1.autoscaling"]);
    assert_eq!(row(&in_v1, "scaled")[1..6], scaled[1..6]);

    // Kinds without PATCH validate on the client (no "failed to check CRD").
    cluster.kubectl(&[
        "run",
        "unbound",
        "--image=nginx",
        "--overrides",
        r#"{"spec":{"schedulerName":"nobody"}}"#,
    ]);
    let node = cluster.eventually("a registered node", MINUTE, || {
        let n = cluster.jsonpath(&["get", "nodes"], "{.items[0].metadata.name}");
        (!n.is_empty()).then_some(n)
    });
    let binding = write(
        files.path(),
        "binding.yaml",
        &format!("apiVersion: v1\nkind: Binding\nmetadata:\n  name: unbound\ntarget:\n  kind: Node\n  name: {node}\n"),
    );
    cluster.kubectl(&["create", "-f", binding.to_str().expect("utf-8")]);
    assert_eq!(
        cluster.jsonpath(&["get", "pod", "unbound"], "{.spec.nodeName}"),
        node
    );
    let review = write(
        files.path(),
        "tokenreview.yaml",
        "apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec:\n  token: not-a-token\n",
    );
    let out = cluster.kubectl(&[
        "create",
        "-f",
        review.to_str().expect("utf-8"),
        "-o",
        "jsonpath={.status.authenticated}",
    ]);
    assert_ne!(out, "true");
    let bad = write(
        files.path(),
        "bad.yaml",
        "apiVersion: authentication.k8s.io/v1\nkind: TokenReview\nspec:\n  token: x\n  bogus: 1\n",
    );
    let out = cluster.kubectl_output(&["create", "-f", bad.to_str().expect("utf-8")]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains(r#"unknown field "bogus""#),
        "{}",
        text(&out.stderr)
    );

    // Unknown fields, worded as kube words them: the create's decoding error, and server-side
    // apply's typed conversion (a 500 without a reason in kube 1.33).
    let bogus = write(
        files.path(),
        "bogus-cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nbogus: 1\n",
    );
    let bogus = bogus.to_str().expect("utf-8");
    let out = cluster.kubectl_output(&["create", "-f", bogus]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains(
            r#"ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus""#
        ),
        "{}",
        text(&out.stderr)
    );
    let out = cluster.kubectl_output(&["apply", "--server-side", "-f", bogus]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains(
            "Error from server: failed to create typed patch object (default/x; /v1, Kind=ConfigMap): .bogus: field not declared in schema"
        ),
        "{}",
        text(&out.stderr)
    );
}
