//! `rkcm controller-manager` as a drop-in for kube-controller-manager: `rkcm up --controllers=`
//! runs the API server and nodes only, on a PKI the test made as kubeadm lays it out
//! (`/etc/kubernetes/pki`: cluster CA, front-proxy CA, service-account key, and a
//! `controller-manager.conf` with a `system:kube-controller-manager` client certificate); two
//! `rkcm controller-manager` processes run with kubeadm 1.33's command line, unchanged, and drive
//! the workloads. One cluster, many scenarios.

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{eventually, Cluster};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

const MINUTE: Duration = Duration::from_secs(60);

/// A certificate authority the test signs with.
struct Ca {
    issuer: Issuer<'static, KeyPair>,
    cert_pem: String,
    key_pem: String,
}

/// `key_pem` is the CA's key as kubeadm writes it (an RSA key in PKCS#1 PEM), or `None` for a
/// fresh ECDSA P-256 key.
fn ca(name: &str, key_pem: Option<&str>) -> Ca {
    let key = match key_pem {
        Some(pem) => KeyPair::try_from(
            rkcm_apimachinery::keyutil::pkcs8_der(pem)
                .expect("a PEM key")
                .as_slice(),
        )
        .expect("a usable key"),
        None => KeyPair::generate().expect("key"),
    };
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let cert = params.self_signed(&key).expect("CA");
    Ca {
        cert_pem: cert.pem(),
        key_pem: key_pem.map_or_else(|| key.serialize_pem(), str::to_string),
        issuer: Issuer::new(params, key),
    }
}

/// A leaf certificate and key (PEM) signed by `ca`: a client certificate naming `cn` in `orgs`,
/// or a serving one for `sans`.
fn leaf(ca: &Ca, cn: &str, orgs: &[&str], sans: &[&str]) -> (String, String) {
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .expect("params");
    params.distinguished_name = rcgen::DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, cn);
    for o in orgs {
        params.distinguished_name.push(DnType::OrganizationName, *o);
    }
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![if sans.is_empty() {
        ExtendedKeyUsagePurpose::ClientAuth
    } else {
        ExtendedKeyUsagePurpose::ServerAuth
    }];
    let cert = params.signed_by(&key, &ca.issuer).expect("leaf");
    (cert.pem(), key.serialize_pem())
}

fn write(path: &Path, contents: &str) {
    std::fs::write(path, contents).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}

fn b64(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// kubeadm's `/etc/kubernetes` under a temporary directory.
struct Pki {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ca: Ca,
}

impl Pki {
    fn path(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }

    /// kubeadm 1.33's kube-controller-manager command line with this PKI's paths.
    fn kubeadm_command_line(&self) -> Vec<String> {
        let conf = self.path("controller-manager.conf");
        vec![
            "--allocate-node-cidrs=true".into(),
            format!("--authentication-kubeconfig={conf}"),
            format!("--authorization-kubeconfig={conf}"),
            "--bind-address=127.0.0.1".into(),
            format!("--client-ca-file={}", self.path("pki/ca.crt")),
            "--cluster-cidr=10.244.0.0/16".into(),
            "--cluster-name=kubernetes".into(),
            format!("--cluster-signing-cert-file={}", self.path("pki/ca.crt")),
            format!("--cluster-signing-key-file={}", self.path("pki/ca.key")),
            "--controllers=*,bootstrapsigner,tokencleaner".into(),
            format!("--kubeconfig={conf}"),
            "--leader-elect=true".into(),
            format!(
                "--requestheader-client-ca-file={}",
                self.path("pki/front-proxy-ca.crt")
            ),
            format!("--root-ca-file={}", self.path("pki/ca.crt")),
            format!(
                "--service-account-private-key-file={}",
                self.path("pki/sa.key")
            ),
            "--service-cluster-ip-range=10.96.0.0/12".into(),
            "--use-service-account-credentials=true".into(),
        ]
    }
}

/// Generates the PKI, and seeds `data_dir` with the cluster CA, an API server certificate it
/// signed and the service-account key, for `rkcm up` to use instead of making its own.
fn kubeadm_pki(data_dir: &Path) -> Pki {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("kubernetes");
    std::fs::create_dir_all(root.join("pki")).expect("pki dir");
    std::fs::create_dir_all(data_dir).expect("data dir");
    // kubeadm's cluster CA and service-account keys: RSA 2048 in PKCS#1 PEM
    // (`-----BEGIN RSA PRIVATE KEY-----`), as `kubeadm init` writes them.
    let cluster = ca("kubernetes", Some(include_str!("testdata/kubeadm-ca.key")));
    let front_proxy = ca("front-proxy-ca", None);
    let sa_key = include_str!("testdata/kubeadm-sa.key").to_string();
    let (api_cert, api_key) = leaf(
        &cluster,
        "kube-apiserver",
        &[],
        &["localhost", "127.0.0.1", "kubernetes", "kubernetes.default"],
    );
    for (name, pem) in [
        ("ca.crt", &cluster.cert_pem),
        ("ca.key", &cluster.key_pem),
        ("front-proxy-ca.crt", &front_proxy.cert_pem),
        ("front-proxy-ca.key", &front_proxy.key_pem),
        ("sa.key", &sa_key),
    ] {
        write(&root.join("pki").join(name), pem);
    }
    for (name, pem) in [
        ("ca.crt", &cluster.cert_pem),
        ("ca.key", &cluster.key_pem),
        ("apiserver.crt", &api_cert),
        ("apiserver.key", &api_key),
        ("sa.key", &sa_key),
    ] {
        write(&data_dir.join(name), pem);
    }
    Pki {
        _dir: dir,
        root,
        ca: cluster,
    }
}

/// kubeadm's `controller-manager.conf`: the API server at `server`, the cluster CA, and a client
/// certificate for `system:kube-controller-manager`.
fn write_controller_manager_conf(pki: &Pki, server: &str) {
    let (cert, key) = leaf(&pki.ca, "system:kube-controller-manager", &[], &[]);
    let conf = format!(
        r#"apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: {ca}
    server: {server}
  name: kubernetes
contexts:
- context:
    cluster: kubernetes
    user: system:kube-controller-manager
  name: system:kube-controller-manager@kubernetes
current-context: system:kube-controller-manager@kubernetes
users:
- name: system:kube-controller-manager
  user:
    client-certificate-data: {cert}
    client-key-data: {key}
"#,
        ca = b64(&pki.ca.cert_pem),
        cert = b64(&cert),
        key = b64(&key),
    );
    write(&pki.root.join("controller-manager.conf"), &conf);
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A running `rkcm controller-manager`.
struct Manager {
    child: Option<Child>,
    port: u16,
}

impl Manager {
    fn start(pki: &Pki) -> Self {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_rkcm"))
            .arg("controller-manager")
            .args(pki.kubeadm_command_line())
            .arg(format!("--secure-port={port}"))
            // Shorter than kube's 15s/10s/2s so that the hand-over is quick to observe.
            .args([
                "--leader-elect-lease-duration=3s",
                "--leader-elect-renew-deadline=2s",
                "--leader-elect-retry-period=250ms",
            ])
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("controller manager starts");
        Self {
            child: Some(child),
            port,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        self.kill();
    }
}

/// How a request to the secure port authenticates.
enum Credentials<'a> {
    None,
    Token(&'a str),
    Certificate { cert: &'a Path, key: &'a Path },
}

/// `curl` of `url`: the status code and the body; `None` when nothing answered.
fn curl(url: &str, credentials: Credentials<'_>) -> Option<(u16, String)> {
    let mut cmd = Command::new("curl");
    cmd.args(["-sk", "--max-time", "10", "-w", "\n%{http_code}", url]);
    match credentials {
        Credentials::None => {}
        Credentials::Token(token) => {
            cmd.args(["-H", &format!("Authorization: Bearer {token}")]);
        }
        Credentials::Certificate { cert, key } => {
            cmd.arg("--cert").arg(cert).arg("--key").arg(key);
        }
    }
    let out = cmd.output().expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n')?;
    let code: u16 = code.trim().parse().ok()?;
    (code != 0).then(|| (code, body.to_string()))
}

fn lease_holder(cluster: &Cluster) -> String {
    cluster
        .kubectl_output(&[
            "get",
            "lease",
            "kube-controller-manager",
            "-n",
            "kube-system",
            "-o",
            "jsonpath={.spec.holderIdentity}",
        ])
        .stdout
        .iter()
        .map(|&b| b as char)
        .collect()
}

fn is_leader(manager: &Manager, admin_token: &str) -> bool {
    curl(&manager.url("/metrics"), Credentials::Token(admin_token)).is_some_and(|(code, body)| {
        code == 200
            && body.lines().any(|l| {
                l.starts_with("leader_election_master_status{") && l.trim_end().ends_with(" 1")
            })
    })
}

fn ready_replicas(cluster: &Cluster, deployment: &str) -> String {
    cluster.jsonpath(
        &["get", "deployment", deployment],
        "{.status.readyReplicas}",
    )
}

#[test]
fn kubeadm_command_line_drives_a_cluster_it_does_not_run_in() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let data_dir = tmp.path().join("data");
    let pki = kubeadm_pki(&data_dir);
    let cluster = Cluster::start_on(&data_dir, &["--controllers=", "--nodes=2"]);
    let server = cluster.kubectl(&[
        "config",
        "view",
        "-o",
        "jsonpath={.clusters[0].cluster.server}",
    ]);
    assert!(server.starts_with("https://"), "{server}");
    write_controller_manager_conf(&pki, &server);
    let admin_token = std::fs::read_to_string(data_dir.join("admin-token"))
        .expect("admin token")
        .trim()
        .to_string();

    // The API server trusts the test's CA: the manager's certificate authenticates.
    let whoami = cluster.kubectl(&[
        "--kubeconfig",
        &pki.path("controller-manager.conf"),
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert_eq!(whoami, "system:kube-controller-manager");

    // No extra binding: with kubeadm's --use-service-account-credentials=true the manager needs
    // only kube's system:kube-controller-manager role, and each controller its
    // system:controller:<name> role.

    let mut first = Manager::start(&pki);
    let mut second = Manager::start(&pki);

    // /healthz answers anonymously on both.
    for m in [&first, &second] {
        let (code, body) = eventually("anonymous /healthz", MINUTE, &mut || {
            curl(&m.url("/healthz"), Credentials::None)
        });
        assert_eq!((code, body.as_str()), (200, "ok"));
    }

    // Exactly one leader, named by the Lease.
    let holder = eventually("a lease holder", MINUTE, &mut || {
        Some(lease_holder(&cluster)).filter(|h| !h.is_empty())
    });
    let leaders = eventually("exactly one leader", MINUTE, &mut || {
        let leaders: Vec<bool> = [&first, &second]
            .iter()
            .map(|m| is_leader(m, &admin_token))
            .collect();
        (leaders.iter().filter(|l| **l).count() == 1).then_some(leaders)
    });
    assert_eq!(lease_holder(&cluster), holder, "one holder throughout");

    // /metrics: 403 without credentials, 401 with a token the API server refuses, 200 for the
    // admin token (system:masters), a client certificate from --client-ca-file, and 403 for a
    // certificate user that RBAC does not let read /metrics.
    let (code, body) = curl(&first.url("/metrics"), Credentials::None).expect("answers");
    assert_eq!(code, 403, "{body}");
    let status: serde_json::Value = serde_json::from_str(&body).expect("a Status");
    assert_eq!(
        status["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/metrics\""
    );
    assert_eq!(status["reason"], "Forbidden");
    let (code, body) =
        curl(&first.url("/metrics"), Credentials::Token("not-a-token")).expect("answers");
    assert_eq!(code, 401, "{body}");
    let status: serde_json::Value = serde_json::from_str(&body).expect("a Status");
    assert_eq!(status["reason"], "Unauthorized");
    let (code, body) =
        curl(&first.url("/metrics"), Credentials::Token(&admin_token)).expect("answers");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("rest_client_requests_total"), "{body}");
    let certs = tempfile::tempdir().expect("temp dir");
    let write_pair = |name: &str, (cert, key): (String, String)| {
        let (c, k) = (
            certs.path().join(format!("{name}.crt")),
            certs.path().join(format!("{name}.key")),
        );
        write(&c, &cert);
        write(&k, &key);
        (c, k)
    };
    let (admin_cert, admin_key) = write_pair(
        "admin",
        leaf(&pki.ca, "kubernetes-admin", &["system:masters"], &[]),
    );
    let (code, _) = curl(
        &second.url("/metrics"),
        Credentials::Certificate {
            cert: &admin_cert,
            key: &admin_key,
        },
    )
    .expect("answers");
    assert_eq!(
        code, 200,
        "a client certificate of --client-ca-file authenticates"
    );
    let (bob_cert, bob_key) = write_pair("bob", leaf(&pki.ca, "bob", &[], &[]));
    let (code, body) = curl(
        &second.url("/metrics"),
        Credentials::Certificate {
            cert: &bob_cert,
            key: &bob_key,
        },
    )
    .expect("answers");
    assert_eq!(code, 403, "{body}");
    assert!(
        body.contains("User \\\"bob\\\" cannot get path \\\"/metrics\\\""),
        "{body}"
    );

    // /healthz lists the leader-election watchdog and the leader's controllers.
    let leader = if leaders[0] { &first } else { &second };
    let verbose = eventually("the leader's controller checks", MINUTE, &mut || {
        curl(
            &leader.url("/healthz?verbose"),
            Credentials::Token(&admin_token),
        )
        .filter(|(code, body)| *code == 200 && body.contains("[+]deployment-controller ok"))
    })
    .1;
    assert!(verbose.contains("[+]leaderElection ok"), "{verbose}");
    let (code, _) =
        curl(&leader.url("/healthz/leaderElection"), Credentials::None).expect("answers");
    assert_eq!(
        code, 403,
        "only the exact always-allowed paths skip authorization"
    );
    let (code, slis) = curl(
        &leader.url("/metrics/slis"),
        Credentials::Token(&admin_token),
    )
    .expect("answers");
    assert_eq!(code, 200);
    assert!(
        slis.contains("kubernetes_healthcheck{name=\"leaderElection\",type=\"healthz\"} 1"),
        "{slis}"
    );
    let (code, configz) =
        curl(&leader.url("/configz"), Credentials::Token(&admin_token)).expect("answers");
    assert_eq!(code, 200);
    let configz: serde_json::Value = serde_json::from_str(&configz).expect("JSON");
    assert_eq!(
        configz["componentconfig"]["Generic"]["Controllers"],
        serde_json::json!(["*", "bootstrapsigner", "tokencleaner"])
    );
    let (code, _) = curl(
        &leader.url("/debug/pprof/cmdline"),
        Credentials::Token(&admin_token),
    )
    .expect("answers");
    assert_eq!(code, 200, "--profiling is on by default");

    // A Deployment rolls out.
    cluster.wait_for_default_service_account("default");
    cluster.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=3",
    ]);
    eventually("web rolled out", MINUTE, &mut || {
        (ready_replicas(&cluster, "web") == "3").then_some(())
    });

    // --root-ca-file is what every namespace's kube-root-ca.crt publishes.
    let published = eventually("kube-root-ca.crt published", MINUTE, &mut || {
        let out = cluster.kubectl_output(&[
            "get",
            "configmap",
            "kube-root-ca.crt",
            "-o",
            "jsonpath={.data.ca\\.crt}",
        ]);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    });
    assert_eq!(published, pki.ca.cert_pem);

    // --service-account-private-key-file signs legacy token Secrets the API server accepts.
    let dir = tempfile::tempdir().expect("temp dir");
    let secret = dir.path().join("secret.json");
    write(
        &secret,
        r#"{"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
            "metadata": {"name": "legacy", "annotations": {"kubernetes.io/service-account.name": "default"}}}"#,
    );
    cluster.kubectl(&["create", "-f", secret.to_str().expect("utf-8")]);
    let token = eventually("the legacy token filled in", MINUTE, &mut || {
        let encoded = cluster.jsonpath(&["get", "secret", "legacy"], "{.data.token}");
        use base64::Engine;
        base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()
            .filter(|t| !t.is_empty())
            .map(|t| String::from_utf8_lossy(&t).into_owned())
    });
    let whoami = cluster.kubectl(&[
        "--token",
        &token,
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert_eq!(whoami, "system:serviceaccount:default:default");

    // An orphaning delete leaves the pods, without their owner reference.
    cluster.kubectl(&[
        "create",
        "deployment",
        "orphans",
        "--image=nginx",
        "--replicas=2",
    ]);
    eventually("orphans rolled out", MINUTE, &mut || {
        (ready_replicas(&cluster, "orphans") == "2").then_some(())
    });
    cluster.kubectl(&["delete", "deployment", "orphans", "--cascade=orphan"]);
    cluster.kubectl(&[
        "delete",
        "replicasets",
        "-l",
        "app=orphans",
        "--cascade=orphan",
    ]);
    eventually("the pods orphaned", MINUTE, &mut || {
        let owners = cluster.jsonpath(
            &["get", "pods", "-l", "app=orphans"],
            "{range .items[*]}{.metadata.name}={.metadata.ownerReferences}{\"\\n\"}{end}",
        );
        let lines: Vec<&str> = owners.lines().collect();
        (lines.len() == 2 && lines.iter().all(|l| l.ends_with('='))).then_some(())
    });

    // A cascading delete removes the ReplicaSet and its pods (background), and a foreground
    // delete waits for them.
    cluster.kubectl(&["delete", "deployment", "web"]);
    eventually("web's ReplicaSet and pods collected", MINUTE, &mut || {
        let left = cluster.kubectl(&["get", "replicasets,pods", "-l", "app=web", "-o", "name"]);
        left.trim().is_empty().then_some(())
    });
    cluster.kubectl(&[
        "create",
        "deployment",
        "fg",
        "--image=nginx",
        "--replicas=2",
    ]);
    eventually("fg rolled out", MINUTE, &mut || {
        (ready_replicas(&cluster, "fg") == "2").then_some(())
    });
    cluster.kubectl(&[
        "delete",
        "deployment",
        "fg",
        "--cascade=foreground",
        "--timeout=60s",
    ]);
    let left = cluster.kubectl(&["get", "replicasets", "-l", "app=fg", "-o", "name"]);
    assert!(
        left.trim().is_empty(),
        "foreground delete returns after its dependents: {left}"
    );

    // Killing the leader hands over to the other, which keeps the workloads going.
    cluster.kubectl(&[
        "create",
        "deployment",
        "after",
        "--image=nginx",
        "--replicas=1",
    ]);
    let (mut dead, survivor) = if leaders[0] {
        (first, &mut second)
    } else {
        (second, &mut first)
    };
    dead.kill();
    eventually("the survivor leads", MINUTE, &mut || {
        is_leader(survivor, &admin_token).then_some(())
    });
    assert_ne!(
        lease_holder(&cluster),
        holder,
        "the Lease names the new leader"
    );
    cluster.kubectl(&["scale", "deployment", "after", "--replicas=2"]);
    eventually("after scaled by the new leader", MINUTE, &mut || {
        (ready_replicas(&cluster, "after") == "2").then_some(())
    });

    // Without CA files the manager looks its CAs up in the cluster's
    // extension-apiserver-authentication ConfigMap; this cluster has none, which configures no
    // client certificate authentication (as kube) rather than failing.
    let conf = pki.path("controller-manager.conf");
    let port = free_port();
    let mut lookup = Manager {
        child: Some(
            Command::new(env!("CARGO_BIN_EXE_rkcm"))
                .args([
                    "controller-manager",
                    &format!("--kubeconfig={conf}"),
                    &format!("--authentication-kubeconfig={conf}"),
                    &format!("--authorization-kubeconfig={conf}"),
                    "--bind-address=127.0.0.1",
                    &format!("--secure-port={port}"),
                    "--leader-elect-retry-period=250ms",
                ])
                .env("RUST_LOG", "error")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("controller manager starts"),
        ),
        port,
    };
    eventually("the lookup manager serving", MINUTE, &mut || {
        curl(&lookup.url("/healthz"), Credentials::None).filter(|(code, _)| *code == 200)
    });
    let (code, _) = curl(
        &lookup.url("/metrics"),
        Credentials::Certificate {
            cert: &admin_cert,
            key: &admin_key,
        },
    )
    .expect("answers");
    assert_eq!(code, 403, "no client CA: the certificate names nobody");
    let (code, _) =
        curl(&lookup.url("/metrics"), Credentials::Token(&admin_token)).expect("answers");
    assert_eq!(code, 200, "tokens are still reviewed");
    lookup.kill();
}

/// Flags for features rkcm does not have are logged once each, naming the flag, and only when
/// given; the process then goes on (here to fail on the missing kubeconfig, as kube would).
#[test]
fn ignored_flags_are_logged_once_each_by_name() {
    let out = Command::new(env!("CARGO_BIN_EXE_rkcm"))
        .args([
            "controller-manager",
            "--kubeconfig=/nonexistent/controller-manager.conf",
            "--cluster-name=kubernetes",
            "--use-service-account-credentials=true",
            "--cloud-provider=external",
            "--tls-cipher-suites=TLS_AES_128_GCM_SHA256",
        ])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ignored: Vec<&str> = stderr.lines().filter(|l| l.contains("ignored")).collect();
    for flag in ["--cluster-name", "--cloud-provider", "--tls-cipher-suites"] {
        let lines = ignored
            .iter()
            .filter(|l| l.contains(&format!("flag=\"{flag}\"")))
            .count();
        assert_eq!(lines, 1, "{flag} logged once:\n{stderr}");
    }
    // --use-service-account-credentials is honoured, not ignored.
    assert_eq!(ignored.len(), 3, "only the flags given:\n{stderr}");
    assert!(
        stderr.contains("/nonexistent/controller-manager.conf"),
        "{stderr}"
    );
}
