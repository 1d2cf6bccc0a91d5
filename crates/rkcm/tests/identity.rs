//! End to end: who the API server of `rkcm up` says a caller is — service-account tokens from
//! `kubectl create token`, client certificates signed by the cluster CA, static tokens from
//! `--token-auth-file`, TokenReviews, and anonymous requests — driven by the real kubectl and
//! curl, in one cluster.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use base64::Engine;
use serde_json::Value;

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("file written");
    path.to_str().expect("utf-8 path").to_string()
}

/// `kubectl auth whoami -o json` with `extra` flags: the user info, or kubectl's stderr.
fn whoami(cluster: &Cluster, extra: &[&str]) -> Result<Value, String> {
    let mut args = extra.to_vec();
    args.extend(["auth", "whoami", "-o", "json"]);
    let out = cluster.kubectl_output(&args);
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let review: Value = serde_json::from_slice(&out.stdout).expect("whoami prints JSON");
    Ok(review["status"]["userInfo"].clone())
}

/// kubectl's error once `token` is refused. A revoked token keeps working until its cached
/// success expires, 10 s at most (kube-apiserver's `TokenSuccessCacheTTL`), so this polls a
/// little longer than that, as kube's e2e tests poll.
fn refused_within_the_token_cache_ttl(cluster: &Cluster, token: &str, why: &str) -> String {
    cluster.eventually(why, Duration::from_secs(30), || {
        whoami(cluster, &["--token", token]).err()
    })
}

/// The claims of a JWT, decoded without checking anything.
fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a JWT has three parts");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url claims");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

/// `curl` of `path` on the cluster without credentials: the status code and the body.
fn anonymous_get(cluster: &Cluster, server: &str, path: &str) -> (u16, String) {
    curl_get(cluster, server, path, None)
}

/// `curl` of `path` with `token` as bearer token when given: the status code and the body.
fn curl_get(cluster: &Cluster, server: &str, path: &str, token: Option<&str>) -> (u16, String) {
    let mut cmd = Command::new("curl");
    if let Some(t) = token {
        cmd.args(["-H", &format!("Authorization: Bearer {t}")]);
    }
    let out = cmd
        .args(["-sS", "--cacert"])
        .arg(cluster.data_dir.join("ca.crt"))
        .args(["-w", "\n%{http_code}"])
        .arg(format!("{server}{path}"))
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').expect("status code line");
    (code.trim().parse().expect("status code"), body.to_string())
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("command runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn tokens_certificates_and_anonymous_callers() {
    let files = tempfile::tempdir().expect("temp dir");
    let token_file = write(
        files.path(),
        "tokens.csv",
        "file-token-1234,carol,1001,\"ops,dev\"\n",
    );
    let mut cluster = Cluster::start(&[
        "--nodes",
        "1",
        "--pod-ready-delay",
        "100ms",
        "--pod-termination-max",
        "500ms",
        "--token-auth-file",
        &token_file,
    ]);
    let server = cluster.kubectl(&[
        "config",
        "view",
        "--minify",
        "-o",
        "jsonpath={.clusters[0].cluster.server}",
    ]);

    // The kubeconfig `rkcm up` writes is the admin's.
    let admin = whoami(&cluster, &[]).expect("admin");
    assert_eq!(admin["username"], "kubernetes-admin");
    assert_eq!(
        admin["groups"],
        serde_json::json!(["system:masters", "system:authenticated"])
    );

    // A service account's token, from kubectl create token.
    cluster.kubectl(&["create", "serviceaccount", "bot"]);
    let token = cluster
        .kubectl(&["create", "token", "bot"])
        .trim()
        .to_string();
    let plain = cluster.kubectl(&["--token", &token, "auth", "whoami"]);
    assert!(
        plain.contains("system:serviceaccount:default:bot"),
        "{plain}"
    );
    let bot = whoami(&cluster, &["--token", &token]).expect("bot");
    assert_eq!(
        bot["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    let c = claims(&token);
    assert_eq!(c["iss"], "https://kubernetes.default.svc.cluster.local");
    assert_eq!(c["sub"], "system:serviceaccount:default:bot");
    assert_eq!(
        c["exp"].as_i64().zip(c["iat"].as_i64()).map(|(e, i)| e - i),
        Some(3600)
    );
    let uid = cluster.jsonpath(&["get", "serviceaccount", "bot"], "{.metadata.uid}");
    assert_eq!(c["kubernetes.io"]["serviceaccount"]["uid"], uid);

    // --duration, and a duration under ten minutes refused with kube's message.
    let long = cluster.kubectl(&["create", "token", "bot", "--duration", "2h"]);
    let c = claims(long.trim());
    assert_eq!(
        c["exp"].as_i64().zip(c["iat"].as_i64()).map(|(e, i)| e - i),
        Some(7200)
    );
    let short = cluster.kubectl_output(&["create", "token", "bot", "--duration", "5m"]);
    assert!(!short.status.success());
    assert!(
        String::from_utf8_lossy(&short.stderr)
            .contains("may not specify a duration less than 10 minutes"),
        "{}",
        String::from_utf8_lossy(&short.stderr)
    );

    // A token bound to a pod names the pod, and ends with it.
    let manifests = files.path();
    let pod = write(
        manifests,
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  serviceAccountName: bot\n  containers:\n  - name: c\n    image: busybox\n",
    );
    cluster.kubectl(&["apply", "-f", &pod]);
    let bound = cluster
        .kubectl(&[
            "create",
            "token",
            "bot",
            "--bound-object-kind",
            "Pod",
            "--bound-object-name",
            "p",
        ])
        .trim()
        .to_string();
    let pod_uid = cluster.jsonpath(&["get", "pod", "p"], "{.metadata.uid}");
    assert_eq!(claims(&bound)["kubernetes.io"]["pod"]["uid"], pod_uid);
    let bound_user = whoami(&cluster, &["--token", &bound]).expect("pod-bound token");
    assert_eq!(
        bound_user["extra"]["authentication.kubernetes.io/pod-name"],
        serde_json::json!(["p"])
    );
    cluster.kubectl(&["delete", "pod", "p", "--wait=true", "--timeout=60s"]);
    let err = refused_within_the_token_cache_ttl(&cluster, &bound, "the pod is gone");
    assert!(err.contains("Unauthorized"), "{err}");

    // A TokenReview of the token, created from a manifest. kubectl's client-side validation of
    // a kind without PATCH asks whether it is a CRD, and the CRD API is not served yet.
    let review = write(
        manifests,
        "review.json",
        &serde_json::json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        })
        .to_string(),
    );
    let out: Value = serde_json::from_str(&cluster.kubectl(&[
        "create",
        "-f",
        &review,
        "--validate=false",
        "-o",
        "json",
    ]))
    .expect("TokenReview JSON");
    assert_eq!(out["status"]["authenticated"], true);
    assert_eq!(
        out["status"]["user"]["username"],
        "system:serviceaccount:default:bot"
    );
    assert_eq!(out["status"]["user"]["uid"], uid);

    // Deleting the service account ends its tokens.
    cluster.kubectl(&["delete", "serviceaccount", "bot"]);
    let err = refused_within_the_token_cache_ttl(&cluster, &token, "the account is gone");
    assert!(err.contains("Unauthorized"), "{err}");

    // A legacy token Secret is filled by the token controller, and its token works while the
    // Secret exists.
    cluster.kubectl(&["create", "serviceaccount", "legacy"]);
    let secret = write(
        manifests,
        "secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: legacy-token\n  annotations:\n    kubernetes.io/service-account.name: legacy\ntype: kubernetes.io/service-account-token\n",
    );
    cluster.kubectl(&["apply", "-f", &secret]);
    let encoded = cluster.eventually("the token controller to fill the Secret", MINUTE, || {
        Some(cluster.jsonpath(&["get", "secret", "legacy-token"], "{.data.token}"))
            .filter(|t| !t.is_empty())
    });
    let legacy = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .expect("base64 data"),
    )
    .expect("UTF-8 token");
    assert_eq!(claims(&legacy)["iss"], "kubernetes/serviceaccount");
    let ca_data = cluster.jsonpath(&["get", "secret", "legacy-token"], "{.data.ca\\.crt}");
    assert!(!ca_data.is_empty(), "ca.crt is filled in");
    let user = whoami(&cluster, &["--token", &legacy]).expect("legacy token");
    assert_eq!(user["username"], "system:serviceaccount:default:legacy");
    cluster.kubectl(&["delete", "secret", "legacy-token"]);
    let err = refused_within_the_token_cache_ttl(&cluster, &legacy, "the Secret is gone");
    assert!(err.contains("Unauthorized"), "{err}");

    // A client certificate signed by the cluster CA as kube's documentation makes one (RSA key,
    // `openssl x509 -req`, hence X.509 v1): CN is the user, O the group.
    let key = files.path().join("alice.key");
    let csr = files.path().join("alice.csr");
    let crt = files.path().join("alice.crt");
    run(Command::new("openssl")
        .args(["req", "-new", "-newkey", "rsa:2048", "-nodes"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&csr)
        .args(["-subj", "/O=developers/CN=alice"]));
    run(Command::new("openssl")
        .args(["x509", "-req", "-days", "1", "-in"])
        .arg(&csr)
        .arg("-CA")
        .arg(cluster.data_dir.join("ca.crt"))
        .arg("-CAkey")
        .arg(cluster.data_dir.join("ca.key"))
        .args(["-CAcreateserial", "-out"])
        .arg(&crt));
    let ca = cluster.data_dir.join("ca.crt");
    let cert_kubeconfig = write(
        files.path(),
        "alice.kubeconfig",
        &serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority": ca}}],
            "users": [{"name": "alice", "user": {"client-certificate": crt, "client-key": key}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "alice"}}],
            "current-context": "c",
        })
        .to_string(),
    );
    let alice = whoami(&cluster, &["--kubeconfig", &cert_kubeconfig]).expect("alice");
    assert_eq!(alice["username"], "alice");
    assert_eq!(
        alice["groups"],
        serde_json::json!(["developers", "system:authenticated"])
    );

    // A user of the token file.
    let carol = whoami(&cluster, &["--token", "file-token-1234"]).expect("carol");
    assert_eq!(carol["username"], "carol");
    assert_eq!(carol["uid"], "1001");
    assert_eq!(
        carol["groups"],
        serde_json::json!(["ops", "dev", "system:authenticated"])
    );
    let err = whoami(&cluster, &["--token", "file-token-wrong"]).expect_err("unknown token");
    assert!(err.contains("Unauthorized"), "{err}");

    // Anonymous: health and version answer; nothing else does, not even issuer discovery (kube
    // grants it to service accounts only).
    cluster.eventually("anonymous /healthz", MINUTE, || {
        (anonymous_get(&cluster, &server, "/healthz") == (200, "ok".to_string())).then_some(())
    });
    assert_eq!(anonymous_get(&cluster, &server, "/version").0, 200);
    let (code, body) = anonymous_get(&cluster, &server, "/api/v1/namespaces/default/pods");
    assert_eq!(code, 401);
    let status: Value = serde_json::from_str(&body).expect("Status JSON");
    assert_eq!(
        (
            status["kind"].as_str(),
            status["reason"].as_str(),
            status["code"].as_i64()
        ),
        (Some("Status"), Some("Unauthorized"), Some(401))
    );
    for path in ["/.well-known/openid-configuration", "/openid/v1/jwks"] {
        assert_eq!(anonymous_get(&cluster, &server, path).0, 401, "{path}");
    }
    let sa_token = cluster
        .kubectl(&["create", "token", "legacy"])
        .trim()
        .to_string();
    let (code, body) = curl_get(
        &cluster,
        &server,
        "/.well-known/openid-configuration",
        Some(&sa_token),
    );
    assert_eq!(code, 200);
    let config: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(
        config["issuer"],
        "https://kubernetes.default.svc.cluster.local"
    );
    let (code, body) = curl_get(&cluster, &server, "/openid/v1/jwks", Some(&sa_token));
    assert_eq!(code, 200);
    let jwks: Value = serde_json::from_str(&body).expect("JSON");
    let kid = jwks["keys"][0]["kid"].as_str().expect("kid").to_string();
    let header = token.split('.').next().expect("header");
    let header: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header)
            .expect("base64url"),
    )
    .expect("JSON header");
    assert_eq!(header["kid"], kid.as_str());

    // The signing key and the CA are kept in the data dir: tokens and certificates outlive a
    // restart.
    cluster.restart();
    let user = cluster.eventually("the restarted API server", MINUTE, || {
        whoami(&cluster, &["--token", &sa_token]).ok()
    });
    assert_eq!(user["username"], "system:serviceaccount:default:legacy");
    let alice = whoami(&cluster, &["--kubeconfig", &cert_kubeconfig]).expect("alice again");
    assert_eq!(alice["username"], "alice");
}
