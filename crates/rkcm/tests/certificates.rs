//! End to end: CertificateSigningRequests on `rkcm up` with the real kubectl — approved with
//! `kubectl certificate approve`, signed by the cluster CA, and the issued client certificate
//! authenticating its holder; denied requests, refused usages and requested durations.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use base64::Engine;
use serde_json::{json, Value};

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A private key and a PEM request for `cn` in `orgs`.
fn key_and_request(cn: &str, orgs: &[&str]) -> (String, String) {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    for o in orgs {
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, *o);
    }
    let csr = params
        .serialize_request(&key)
        .expect("request")
        .pem()
        .expect("pem");
    (key.serialize_pem(), csr)
}

/// `kubectl create -f` of a CSR named `name`.
fn create_csr(cluster: &Cluster, dir: &Path, name: &str, request: &str, spec: Value) {
    let mut spec = spec;
    spec["request"] = json!(b64(request.as_bytes()));
    let manifest = json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": spec,
    });
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, manifest.to_string()).expect("manifest written");
    cluster.kubectl(&["create", "-f", path.to_str().expect("utf-8")]);
}

fn csr(cluster: &Cluster, name: &str) -> Value {
    serde_json::from_str(&cluster.kubectl(&["get", "csr", name, "-o", "json"])).expect("JSON")
}

fn conditions(csr: &Value) -> Vec<(String, String)> {
    csr["status"]["conditions"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    (
                        c["type"].as_str().unwrap_or("").to_string(),
                        c["reason"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The issued certificate (PEM) of `name`, once there.
fn wait_for_certificate(cluster: &Cluster, name: &str) -> String {
    cluster.eventually(&format!("a certificate in {name}'s status"), MINUTE, || {
        let cert = csr(cluster, name)["status"]["certificate"]
            .as_str()
            .map(str::to_string)?;
        let pem = base64::engine::general_purpose::STANDARD
            .decode(cert)
            .expect("base64 certificate");
        Some(String::from_utf8(pem).expect("PEM text"))
    })
}

fn openssl(args: &[&str]) -> String {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Seconds since the epoch of an `openssl x509 -dates` line (`notAfter=...`).
fn date_of(dates: &str, field: &str) -> i64 {
    let line = dates
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}=")))
        .expect("date line");
    let out = Command::new("date")
        .args(["-u", "-d", line, "+%s"])
        .output()
        .expect("date runs");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("epoch seconds")
}

#[test]
fn requests_are_approved_signed_denied_and_refused() {
    let cluster = Cluster::start(&["--nodes", "0"]);
    let files = tempfile::tempdir().expect("temp dir");
    let dir = files.path();
    let ca = cluster.data_dir.join("ca.crt");
    let ca = ca.to_str().expect("utf-8");

    // A kubelet client certificate request, for the approving controller: auto-approved when
    // the API server answers SubjectAccessReviews, left pending when it does not.
    let (_, node_request) = key_and_request("system:node:n1", &["system:nodes"]);
    create_csr(
        &cluster,
        dir,
        "node-n1",
        &node_request,
        json!({"signerName": "kubernetes.io/kube-apiserver-client-kubelet",
            "usages": ["digital signature", "client auth"]}),
    );

    // jane asks for a client certificate; bob too, and bob is denied.
    let (jane_key, jane_request) = key_and_request("jane", &["devs"]);
    create_csr(
        &cluster,
        dir,
        "jane",
        &jane_request,
        json!({"signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}),
    );
    let (_, bob_request) = key_and_request("bob", &["devs"]);
    create_csr(
        &cluster,
        dir,
        "bob",
        &bob_request,
        json!({"signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"],
            "expirationSeconds": 600}),
    );
    let table = cluster.kubectl(&["get", "csr"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .expect("header")
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "AGE",
            "SIGNERNAME",
            "REQUESTOR",
            "REQUESTEDDURATION",
            "CONDITION"
        ]
    );
    let row = |table: &str, name: &str| -> Vec<String> {
        table
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} listed in {table}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let jane_row = row(&table, "jane");
    assert_eq!(
        jane_row[2..],
        [
            "kubernetes.io/kube-apiserver-client",
            "kubernetes-admin",
            "<none>",
            "Pending"
        ]
    );
    assert_eq!(row(&table, "bob")[4], "10m");

    assert_eq!(
        cluster.kubectl(&["certificate", "deny", "bob"]).trim(),
        "certificatesigningrequest.certificates.k8s.io/bob denied"
    );
    assert_eq!(
        cluster.kubectl(&["certificate", "approve", "jane"]).trim(),
        "certificatesigningrequest.certificates.k8s.io/jane approved"
    );
    let cert = wait_for_certificate(&cluster, "jane");
    assert_eq!(
        conditions(&csr(&cluster, "jane")),
        [("Approved".to_string(), "KubectlApprove".to_string())]
    );

    // Signed by the cluster CA, for jane in devs, a client certificate valid for a year
    // (backdated five minutes).
    let crt = dir.join("jane.crt");
    std::fs::write(&crt, &cert).expect("certificate written");
    let crt = crt.to_str().expect("utf-8");
    assert!(openssl(&["verify", "-CAfile", ca, crt]).contains(": OK"));
    let subject = openssl(&[
        "x509", "-noout", "-subject", "-nameopt", "RFC2253", "-in", crt,
    ]);
    // The request says CN=jane, O=devs; Go writes the organizations first (`ToRDNSequence`),
    // and RFC 2253 prints the last RDN first.
    assert_eq!(subject.trim(), "subject=CN=jane,O=devs");
    let text = openssl(&["x509", "-noout", "-text", "-in", crt]);
    assert!(text.contains("TLS Web Client Authentication"), "{text}");
    assert!(text.contains("CA:FALSE"), "{text}");
    assert!(!text.contains("TLS Web Server Authentication"), "{text}");
    let dates = openssl(&["x509", "-noout", "-dates", "-in", crt]);
    let lifetime = date_of(&dates, "notAfter") - date_of(&dates, "notBefore");
    assert_eq!(lifetime, 365 * 24 * 3600, "{dates}");

    // A kubeconfig with that certificate and key authenticates jane.
    let server = cluster.kubectl(&[
        "config",
        "view",
        "-o",
        "jsonpath={.clusters[0].cluster.server}",
    ]);
    let key = dir.join("jane.key");
    std::fs::write(&key, &jane_key).expect("key written");
    let kubeconfig = dir.join("jane.kubeconfig");
    std::fs::write(
        &kubeconfig,
        json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": server, "certificate-authority": ca}}],
            "users": [{"name": "jane", "user": {"client-certificate": crt, "client-key": key}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "jane"}}],
            "current-context": "c",
        })
        .to_string(),
    )
    .expect("kubeconfig written");
    let whoami: Value = serde_json::from_str(&cluster.kubectl(&[
        "--kubeconfig",
        kubeconfig.to_str().expect("utf-8"),
        "auth",
        "whoami",
        "-o",
        "json",
    ]))
    .expect("JSON");
    assert_eq!(whoami["status"]["userInfo"]["username"], "jane");
    assert_eq!(
        whoami["status"]["userInfo"]["groups"],
        json!(["devs", "system:authenticated"])
    );
    let plain = cluster.kubectl(&[
        "--kubeconfig",
        kubeconfig.to_str().expect("utf-8"),
        "auth",
        "whoami",
    ]);
    assert!(plain.contains("jane") && plain.contains("devs"), "{plain}");
    // As docs/controllers.md shows it: the flags on top of the admin's kubeconfig.
    let flags = cluster.kubectl(&[
        &format!("--client-certificate={crt}"),
        &format!("--client-key={}", key.to_str().expect("utf-8")),
        "auth",
        "whoami",
    ]);
    assert!(flags.contains("jane") && flags.contains("devs"), "{flags}");

    // bob stays denied, without a certificate; a denial cannot be turned into an approval.
    let bob = csr(&cluster, "bob");
    assert_eq!(
        conditions(&bob),
        [("Denied".to_string(), "KubectlDeny".to_string())]
    );
    assert!(bob["status"].get("certificate").is_none(), "{bob}");
    let out = cluster.kubectl_output(&["certificate", "approve", "bob"]);
    assert!(
        !out.status.success(),
        "approving a denied request succeeded"
    );
    let table = cluster.kubectl(&["get", "csr"]);
    assert_eq!(row(&table, "jane")[5], "Approved,Issued");
    assert_eq!(row(&table, "bob")[5], "Denied");

    // By now the approver has seen the kubelet's request. Nothing is approved without an
    // allowing SubjectAccessReview: the admin (system:masters) is allowed where reviews are
    // served.
    let reviews_served = cluster
        .kubectl_output(&["get", "--raw", "/apis/authorization.k8s.io/v1"])
        .status
        .success()
        && cluster
            .kubectl(&["get", "--raw", "/apis/authorization.k8s.io/v1"])
            .contains("\"subjectaccessreviews\"");
    if reviews_served {
        let node_cert = wait_for_certificate(&cluster, "node-n1");
        assert!(node_cert.starts_with("-----BEGIN CERTIFICATE-----"));
        let node = csr(&cluster, "node-n1");
        assert_eq!(
            conditions(&node),
            [("Approved".to_string(), "AutoApproved".to_string())]
        );
        assert_eq!(
            node["status"]["conditions"][0]["message"],
            "Auto approving kubelet client certificate after SubjectAccessReview."
        );
    } else {
        let node = csr(&cluster, "node-n1");
        assert!(conditions(&node).is_empty(), "{node}");
        assert_eq!(
            row(&cluster.kubectl(&["get", "csr"]), "node-n1")[5],
            "Pending"
        );
    }

    // A server usage is refused by the client signer: Failed, with kube's reason and message.
    let (_, mallory_request) = key_and_request("mallory", &["devs"]);
    create_csr(
        &cluster,
        dir,
        "mallory",
        &mallory_request,
        json!({"signerName": "kubernetes.io/kube-apiserver-client",
            "usages": ["client auth", "server auth"]}),
    );
    cluster.kubectl(&["certificate", "approve", "mallory"]);
    let failed = cluster.eventually("mallory's request to fail", MINUTE, || {
        let c = csr(&cluster, "mallory");
        c["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "Failed")
            .cloned()
    });
    assert_eq!(failed["reason"], "SignerValidationFailure");
    assert_eq!(
        failed["message"],
        "invalid usage for client certificate: server auth"
    );
    assert!(csr(&cluster, "mallory")["status"]
        .get("certificate")
        .is_none());
    assert_eq!(
        row(&cluster.kubectl(&["get", "csr"]), "mallory")[5],
        "Approved,Failed"
    );

    // A requested duration is honoured: ten minutes, backdated five at the start only.
    let (_, short_request) = key_and_request("short", &[]);
    create_csr(
        &cluster,
        dir,
        "short",
        &short_request,
        json!({"signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"],
            "expirationSeconds": 600}),
    );
    cluster.kubectl(&["certificate", "approve", "short"]);
    let cert = wait_for_certificate(&cluster, "short");
    let short = dir.join("short.crt");
    std::fs::write(&short, cert).expect("written");
    let dates = openssl(&[
        "x509",
        "-noout",
        "-dates",
        "-in",
        short.to_str().expect("utf-8"),
    ]);
    assert_eq!(
        date_of(&dates, "notAfter") - date_of(&dates, "notBefore"),
        900,
        "{dates}"
    );
}
