//! Authentication on the in-process server: anonymous, admin, static-token, client-certificate
//! and service-account callers; TokenRequest, TokenReview, SelfSubjectReview and the issuer
//! discovery documents.

use base64::Engine;
use http_body_util::BodyExt;
use serde_json::{json, Value};

use rkcm_apiserver::testing::{self, TestServer};

/// Credentials a test client presents.
enum Creds<'a> {
    None,
    Token(&'a str),
    Certificate { cert_pem: &'a str, key_pem: &'a str },
}

/// A kube client for `server` presenting `creds`.
async fn client(server: &TestServer, creds: Creds<'_>) -> kube::Client {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let user = match creds {
        Creds::None => json!({}),
        Creds::Token(t) => json!({ "token": t }),
        Creds::Certificate { cert_pem, key_pem } => json!({
            "client-certificate-data": b64(cert_pem),
            "client-key-data": b64(key_pem),
        }),
    };
    server.client_as(user).await
}

/// Sends `method path` with a JSON `body`; the status code and the JSON answer.
async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(body.map(|b| b.to_string().into_bytes()).unwrap_or_default())
        .expect("request");
    let resp = client.send(req.map(Into::into)).await.expect("answered");
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// A client certificate for `cn` in `org`, signed by the server's CA.
fn client_certificate(server: &TestServer, cn: &str, org: &str) -> (String, String) {
    let ca_key = rcgen::KeyPair::from_pem(server.ca_key_pem().expect("TLS")).expect("CA key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "rkcm-ca");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, org);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &issuer).expect("signed");
    (cert.pem(), key.serialize_pem())
}

async fn whoami(client: &kube::Client) -> (u16, Value) {
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    send(
        client,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(body),
    )
    .await
}

async fn request_token(admin: &kube::Client, sa: &str, spec: Value) -> (u16, Value) {
    send(
        admin,
        "POST",
        &format!("/api/v1/namespaces/default/serviceaccounts/{sa}/token"),
        Some(
            json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}),
        ),
    )
    .await
}

/// A server that does not cache token authentications, so a revoked token is refused at once:
/// what kube's `TestServiceAccountTokenCreate` runs with ("Disable token cache so we can check
/// reaction to service account deletion quickly"). With the default 10 s cache it is refused
/// when its cached success expires.
async fn start_without_token_cache() -> TestServer {
    testing::start_with(rkcm_apiserver::Config {
        token_success_cache_ttl: std::time::Duration::ZERO,
        ..testing::config()
    })
    .await
}

#[tokio::test]
async fn anonymous_requests_reach_only_the_public_paths() {
    let server = testing::start().await;
    let anonymous = client(&server, Creds::None).await;
    for path in ["/healthz", "/livez", "/readyz", "/version"] {
        assert_eq!(send(&anonymous, "GET", path, None).await.0, 200, "{path}");
    }
    let (code, status) = send(&anonymous, "GET", "/api/v1/namespaces", None).await;
    assert_eq!(code, 401);
    assert_eq!(status["reason"], "Unauthorized");
    assert_eq!(status["message"], "Unauthorized");
    // The issuer discovery documents are for authenticated callers, as kube's default policy.
    for path in ["/.well-known/openid-configuration", "/openid/v1/jwks"] {
        assert_eq!(send(&anonymous, "GET", path, None).await.0, 401, "{path}");
    }
    let admin = client(&server, Creds::Token(server.admin_token())).await;
    let (code, config) = send(&admin, "GET", "/.well-known/openid-configuration", None).await;
    assert_eq!(code, 200);
    assert_eq!(
        config["issuer"],
        "https://kubernetes.default.svc.cluster.local"
    );
    assert!(config["jwks_uri"]
        .as_str()
        .is_some_and(|u| u.ends_with("/openid/v1/jwks")));
    let (code, jwks) = send(&admin, "GET", "/openid/v1/jwks", None).await;
    assert_eq!(code, 200);
    assert_eq!(jwks["keys"][0]["alg"], "ES256");
    // A bad token is refused everywhere, never taken for anonymous.
    let bad = client(&server, Creds::Token("not-a-token")).await;
    assert_eq!(send(&bad, "GET", "/healthz", None).await.0, 401);
    assert_eq!(send(&bad, "GET", "/api", None).await.0, 401);
}

#[tokio::test]
async fn the_admin_token_is_kubernetes_admin_in_system_masters() {
    let server = testing::start().await;
    let admin = client(&server, Creds::Token(server.admin_token())).await;
    let (code, review) = whoami(&admin).await;
    assert_eq!(code, 201);
    assert_eq!(
        review["status"]["userInfo"],
        json!({"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]})
    );
    let (_, discovery) = send(&admin, "GET", "/apis/authentication.k8s.io/v1", None).await;
    let names: Vec<&str> = discovery["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["selfsubjectreviews", "tokenreviews"]);
}

#[tokio::test]
async fn service_account_tokens_hold_while_the_account_exists() {
    let server = start_without_token_cache().await;
    let admin = client(&server, Creds::Token(server.admin_token())).await;
    let (code, _) = send(
        &admin,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        Some(json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot"}})),
    )
    .await;
    assert_eq!(code, 201);
    let (code, tr) = request_token(&admin, "bot", json!({})).await;
    assert_eq!(code, 201, "{tr}");
    assert_eq!(tr["kind"], "TokenRequest");
    assert_eq!(tr["spec"]["expirationSeconds"], 3600);
    assert_eq!(
        tr["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    let expires: jiff::Timestamp = tr["status"]["expirationTimestamp"]
        .as_str()
        .expect("expiration")
        .parse()
        .expect("RFC 3339");
    let left = expires.as_second() - jiff::Timestamp::now().as_second();
    assert!((3590..=3600).contains(&left), "{left}");
    let token = tr["status"]["token"].as_str().expect("token").to_string();

    let bot = client(&server, Creds::Token(&token)).await;
    let (code, me) = whoami(&bot).await;
    assert_eq!(code, 201);
    let info = &me["status"]["userInfo"];
    assert_eq!(info["username"], "system:serviceaccount:default:bot");
    assert_eq!(
        info["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    assert!(
        info["extra"]["authentication.kubernetes.io/credential-id"][0]
            .as_str()
            .is_some_and(|c| c.starts_with("JTI="))
    );
    assert_eq!(
        send(&bot, "GET", "/api/v1/namespaces/default/pods", None)
            .await
            .0,
        200
    );

    // TokenReview of the token, and of garbage.
    let review = |t: &str| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": t}});
    let (code, r) = send(
        &admin,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        Some(review(&token)),
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(r["status"]["authenticated"], true);
    assert_eq!(
        r["status"]["user"]["username"],
        "system:serviceaccount:default:bot"
    );
    let (_, r) = send(
        &admin,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        Some(review("garbage")),
    )
    .await;
    assert_eq!(r["status"].get("authenticated"), None);
    let (code, r) = send(
        &admin,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        Some(review("")),
    )
    .await;
    assert_eq!(
        (code, r["message"].as_str()),
        (
            400,
            Some("token is required for TokenReview in authentication")
        )
    );

    // Deleting the account ends the token.
    let (code, _) = send(
        &admin,
        "DELETE",
        "/api/v1/namespaces/default/serviceaccounts/bot",
        None,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(whoami(&bot).await.0, 401);
    let (_, r) = send(
        &admin,
        "POST",
        "/apis/authentication.k8s.io/v1/tokenreviews",
        Some(review(&token)),
    )
    .await;
    assert_eq!(r["status"]["error"], "serviceaccount \"bot\" not found");
}

#[tokio::test]
async fn token_requests_are_validated_as_kube_does() {
    let server = start_without_token_cache().await;
    let admin = client(&server, Creds::Token(server.admin_token())).await;
    for (kind, body) in [
        (
            "serviceaccounts",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bot"}}),
        ),
        (
            "configmaps",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}),
        ),
        (
            "pods",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"serviceAccountName": "other", "containers": [{"name": "c", "image": "i"}]}}),
        ),
        (
            "pods",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q"},
            "spec": {"serviceAccountName": "bot", "containers": [{"name": "c", "image": "i"}]}}),
        ),
    ] {
        let (code, out) = send(
            &admin,
            "POST",
            &format!("/api/v1/namespaces/default/{kind}"),
            Some(body),
        )
        .await;
        assert_eq!(code, 201, "{out}");
    }
    let (code, e) = request_token(&admin, "bot", json!({"expirationSeconds": 60})).await;
    assert_eq!(code, 422);
    assert_eq!(
        e["message"],
        "TokenRequest.authentication.k8s.io \"bot\" is invalid: spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes"
    );
    let (code, e) = request_token(&admin, "nobody", json!({})).await;
    assert_eq!(
        (code, e["message"].as_str()),
        (404, Some("serviceaccounts \"nobody\" not found"))
    );
    let (code, e) = request_token(
        &admin,
        "bot",
        json!({"boundObjectRef": {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm"}}),
    )
    .await;
    assert_eq!(
        (code, e["message"].as_str()),
        (
            400,
            Some("cannot bind token to object of type /v1, Kind=ConfigMap")
        )
    );
    let (code, e) = request_token(
        &admin,
        "bot",
        json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "p"}}),
    )
    .await;
    assert_eq!(
        (code, e["message"].as_str()),
        (400, Some("cannot bind token for serviceaccount \"bot\" to pod running with serviceaccount \"other\""))
    );
    let (code, e) = request_token(
        &admin,
        "bot",
        json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "gone"}}),
    )
    .await;
    assert_eq!(
        (code, e["message"].as_str()),
        (404, Some("pods \"gone\" not found"))
    );
    let (code, e) = request_token(
        &admin,
        "bot",
        json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "q", "uid": "stale"}}),
    )
    .await;
    assert_eq!(code, 409, "{e}");
    assert_eq!(e["reason"], "Conflict");

    // A pod-bound token lives as long as its pod.
    let (code, tr) = request_token(&admin, "bot", json!({"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "q"}, "expirationSeconds": 600})).await;
    assert_eq!(code, 201, "{tr}");
    let bot = client(
        &server,
        Creds::Token(tr["status"]["token"].as_str().expect("token")),
    )
    .await;
    let (_, me) = whoami(&bot).await;
    assert_eq!(
        me["status"]["userInfo"]["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["q"])
    );
    let (code, _) = send(
        &admin,
        "DELETE",
        "/api/v1/namespaces/default/pods/q?gracePeriodSeconds=0",
        None,
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(whoami(&bot).await.0, 401);
}

#[tokio::test]
async fn client_certificates_signed_by_the_cluster_ca_authenticate_their_subject() {
    let server = testing::start().await;
    let (cert_pem, key_pem) = client_certificate(&server, "alice", "developers");
    let alice = client(
        &server,
        Creds::Certificate {
            cert_pem: &cert_pem,
            key_pem: &key_pem,
        },
    )
    .await;
    let (code, me) = whoami(&alice).await;
    assert_eq!(code, 201, "{me}");
    assert_eq!(
        me["status"]["userInfo"],
        json!({"username": "alice", "groups": ["developers", "system:authenticated"]})
    );

    // A certificate of another CA is refused with 401 (not a failed handshake).
    let other = testing::start().await;
    let (cert_pem, key_pem) = client_certificate(&other, "mallory", "system:masters");
    let mallory = client(
        &server,
        Creds::Certificate {
            cert_pem: &cert_pem,
            key_pem: &key_pem,
        },
    )
    .await;
    let (code, status) = whoami(&mallory).await;
    assert_eq!(
        (code, status["reason"].as_str()),
        (401, Some("Unauthorized"))
    );
}

#[tokio::test]
async fn users_of_the_token_auth_file_authenticate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("tokens.csv");
    std::fs::write(&file, "s3cret,carol,1001,\"ops,dev\"\n").expect("write");
    let server = testing::start_with(rkcm_apiserver::Config {
        token_auth_file: Some(file),
        ..testing::config()
    })
    .await;
    let carol = client(&server, Creds::Token("s3cret")).await;
    let (code, me) = whoami(&carol).await;
    assert_eq!(code, 201);
    assert_eq!(
        me["status"]["userInfo"],
        json!({"username": "carol", "uid": "1001", "groups": ["ops", "dev", "system:authenticated"]})
    );
}
