//! End to end: bootstrap tokens and legacy service-account tokens against `rkcm up` started with
//! kubeadm's `--controllers=*,bootstrapsigner,tokencleaner`, driven by the real kubectl, in one
//! cluster.

mod common;

use std::path::Path;
use std::time::Duration;

use base64::Engine;

use common::Cluster;

const MINUTE: Duration = Duration::from_secs(60);

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("file written");
    path.to_str().expect("utf-8 path").to_string()
}

fn bootstrap_token(id: &str, expiration: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: bootstrap-token-{id}\n  namespace: kube-system\n\
         type: bootstrap.kubernetes.io/token\nstringData:\n  token-id: {id}\n  token-secret: 0123456789abcdef\n\
         \x20 usage-bootstrap-signing: \"true\"\n  usage-bootstrap-authentication: \"true\"\n  expiration: \"{expiration}\"\n"
    )
}

fn today() -> String {
    jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .to_string()
}

#[test]
fn tokens_end_to_end() {
    let cluster = Cluster::start(&[
        "--controllers=*,bootstrapsigner,tokencleaner",
        "--enable-bootstrap-token-auth",
    ]);
    let dir = tempfile::tempdir().expect("temp dir");

    // kubeadm's cluster-info, then a bootstrap token: the signer adds the token's detached JWS.
    let kubeconfig = "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://10.0.0.1:6443\n  name: \"\"\n";
    let kubeconfig_file = write(dir.path(), "cluster-kubeconfig", kubeconfig);
    cluster.kubectl(&[
        "create",
        "configmap",
        "cluster-info",
        "-n",
        "kube-public",
        &format!("--from-file=kubeconfig={kubeconfig_file}"),
    ]);
    let in_an_hour = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(3600)).to_string();
    let token = write(
        dir.path(),
        "token.yaml",
        &bootstrap_token("abcdef", &in_an_hour),
    );
    cluster.kubectl(&["apply", "-f", &token]);
    let sig = cluster.eventually(
        "cluster-info to carry jws-kubeconfig-abcdef",
        MINUTE,
        || {
            let s = cluster.jsonpath(
                &["get", "configmap", "cluster-info", "-n", "kube-public"],
                "{.data.jws-kubeconfig-abcdef}",
            );
            (!s.is_empty()).then_some(s)
        },
    );
    assert!(rkcm_controllers::bootstrap::jws::detached_token_is_valid(
        &sig,
        kubeconfig,
        "abcdef",
        "0123456789abcdef"
    ));
    assert!(
        sig.starts_with("eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9.."),
        "{sig}"
    );

    // With --enable-bootstrap-token-auth the token authenticates as its bootstrap user.
    let who = cluster.kubectl(&[
        "--token",
        "abcdef.0123456789abcdef",
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username} {.status.userInfo.groups}",
    ]);
    assert_eq!(
        who,
        "system:bootstrap:abcdef [\"system:bootstrappers\",\"system:authenticated\"]"
    );
    let out = cluster.kubectl_output(&["--token", "abcdef.wrongsecret00000", "auth", "whoami"]);
    assert!(!out.status.success());

    // An expired token is deleted by the cleaner.
    let expired = write(
        dir.path(),
        "expired.yaml",
        &bootstrap_token("zzz999", "2020-01-01T00:00:00Z"),
    );
    cluster.kubectl(&["apply", "-f", &expired]);
    cluster.eventually("the expired token to be deleted", MINUTE, || {
        let out = cluster.kubectl_output(&[
            "get",
            "secret",
            "-n",
            "kube-system",
            "bootstrap-token-zzz999",
        ]);
        (!out.status.success()).then_some(())
    });
    // Deleting the valid token removes its signature.
    cluster.kubectl(&[
        "delete",
        "secret",
        "-n",
        "kube-system",
        "bootstrap-token-abcdef",
    ]);
    cluster.eventually("the signature to be removed", MINUTE, || {
        cluster
            .jsonpath(
                &["get", "configmap", "cluster-info", "-n", "kube-public"],
                "{.data.jws-kubeconfig-abcdef}",
            )
            .is_empty()
            .then_some(())
    });

    // A legacy token Secret authenticates, and its Secret gets the last-used label.
    cluster.kubectl(&["create", "serviceaccount", "legacy"]);
    let secret = write(
        dir.path(),
        "legacy.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: legacy-token\n  annotations:\n    kubernetes.io/service-account.name: legacy\ntype: kubernetes.io/service-account-token\n",
    );
    cluster.kubectl(&["apply", "-f", &secret]);
    let data = cluster.eventually("the token controller to fill the Secret", MINUTE, || {
        let t = cluster.jsonpath(&["get", "secret", "legacy-token"], "{.data.token}");
        (!t.is_empty()).then_some(t)
    });
    let legacy = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .expect("base64"),
    )
    .expect("utf-8");
    let who = cluster.kubectl(&[
        "--token",
        &legacy,
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert_eq!(who, "system:serviceaccount:default:legacy");
    let last_used = cluster.eventually("the last-used label", MINUTE, || {
        let l = cluster.jsonpath(
            &["get", "secret", "legacy-token"],
            "{.metadata.labels.kubernetes\\.io/legacy-token-last-used}",
        );
        (!l.is_empty()).then_some(l)
    });
    assert_eq!(last_used, today());

    // Marked invalid (as the cleaner does after a year unused), it is refused with kube's message;
    // without the label it works again.
    cluster.kubectl(&[
        "label",
        "secret",
        "legacy-token",
        &format!("kubernetes.io/legacy-token-invalid-since={}", today()),
    ]);
    // The token's last success is answered from kube-apiserver's token cache for up to 10 s.
    cluster.eventually(
        "the marked token to be refused",
        Duration::from_secs(30),
        || {
            let out = cluster.kubectl_output(&["--token", &legacy, "auth", "whoami"]);
            (!out.status.success()).then_some(())
        },
    );
    cluster.kubectl(&[
        "label",
        "secret",
        "legacy-token",
        "kubernetes.io/legacy-token-invalid-since-",
    ]);
    let who = cluster.kubectl(&[
        "--token",
        &legacy,
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ]);
    assert_eq!(who, "system:serviceaccount:default:legacy");

    // The API server created the default ServiceCIDR from --service-cluster-ip-range, Ready.
    let cidr = cluster.jsonpath(&["get", "servicecidr", "kubernetes"], "{.spec.cidrs[0]}");
    assert_eq!(cidr, "10.96.0.0/12");
    let ready = cluster.jsonpath(
        &["get", "servicecidr", "kubernetes"],
        "{.status.conditions[?(@.type==\"Ready\")].status}",
    );
    assert_eq!(ready, "True");

    // The API server dated its tracking of legacy tokens.
    let since = cluster.jsonpath(
        &[
            "get",
            "configmap",
            "-n",
            "kube-system",
            "kube-apiserver-legacy-service-account-token-tracking",
        ],
        "{.data.since}",
    );
    assert_eq!(since, today());
}
