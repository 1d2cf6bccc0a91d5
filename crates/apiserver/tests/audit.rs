//! Audit logging on the in-process server: every response's `Audit-Id` is its events' `auditID`,
//! the policy's levels decide the stages and bodies recorded, the authorizer's decision is
//! annotated, and a rule at level `None` keeps a request out of the log.

use std::path::Path;
use std::time::Duration;

use http_body_util::BodyExt;
use serde_json::{json, Value};

use rkcm_apiserver::audit::AuditOptions;
use rkcm_apiserver::auth::authorization::Mode;
use rkcm_apiserver::testing::{self, TestServer};

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [Panic]
rules:
# Secrets are never logged.
- level: None
  resources:
  - group: ""
    resources: ["secrets"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["configmaps"]
  omitManagedFields: true
- level: Metadata
"#;

/// An RBAC server knowing the token-file user `jane`, auditing to a file in the returned dir.
async fn audited_server() -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "jane-token,jane,1001\n").expect("write tokens");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).expect("write policy");
    let server = testing::start_with(rkcm_apiserver::Config {
        token_auth_file: Some(tokens),
        authorization_modes: vec![Mode::Rbac],
        audit: AuditOptions {
            policy_file: Some(policy),
            log_path: Some(dir.path().join("audit.log").display().to_string()),
            ..AuditOptions::default()
        },
        ..testing::config()
    })
    .await;
    (server, dir)
}

/// A kube client for `server` presenting `token`.
async fn client(server: &TestServer, token: &str) -> kube::Client {
    server.client_as(json!({ "token": token })).await
}

/// Sends `method path` with a JSON `body` and `headers`; the status code, the `Audit-Id`
/// header and the JSON answer.
async fn send(
    client: &kube::Client,
    method: &str,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (u16, String, Value) {
    let mut req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req
        .body(body.map(|b| b.to_string().into_bytes()).unwrap_or_default())
        .expect("request");
    let resp = client.send(req.map(Into::into)).await.expect("answered");
    let code = resp.status().as_u16();
    let audit_id = resp
        .headers()
        .get("audit-id")
        .and_then(|v| v.to_str().ok())
        .expect("every response carries Audit-Id")
        .to_string();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (
        code,
        audit_id,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// The events of `audit_id` in the log.
fn events_of(log: &Path, audit_id: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|e| e["auditID"] == audit_id)
        .collect()
}

/// Polls the log until `audit_id` has `stages`, in order.
async fn wait_for_stages(log: &Path, audit_id: &str, stages: &[&str]) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let events = events_of(log, audit_id);
        let got: Vec<&str> = events.iter().filter_map(|e| e["stage"].as_str()).collect();
        if got == stages {
            return events;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the events of {audit_id} have stages {got:?}, want {stages:?}: the audit writer likely stopped"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn requests_are_audited_as_the_policy_says() {
    let (server, dir) = audited_server().await;
    let log = dir.path().join("audit.log");
    let admin = server.client();
    let jane = client(&server, "jane-token").await;
    let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "audited"}, "data": {"k": "v"}});

    // RequestResponse: the request and response objects, managed fields left out.
    let (code, create_id, _) = send(
        &admin,
        "POST",
        "/api/v1/namespaces/default/configmaps?fieldManager=tester",
        Some(configmap),
        &[],
    )
    .await;
    assert_eq!(code, 201);
    let (code, get_id, _) = send(
        &admin,
        "GET",
        "/api/v1/namespaces/default/configmaps/audited",
        None,
        &[("Audit-ID", "client-chosen-id")],
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        get_id, "client-chosen-id",
        "the client's Audit-ID is reused"
    );
    // None: secrets are not logged, though the response still has an Audit-Id.
    let (code, secrets_id, _) = send(
        &admin,
        "GET",
        "/api/v1/namespaces/default/secrets",
        None,
        &[],
    )
    .await;
    assert_eq!(code, 200);
    // Metadata: jane may not list pods.
    let (code, forbidden_id, _) =
        send(&jane, "GET", "/api/v1/namespaces/default/pods", None, &[]).await;
    assert_eq!(code, 403);

    // A failed authentication: one ResponseStarted event without a user.
    let stranger = client(&server, "wrong-token").await;
    let (code, unauthorized_id, _) = send(
        &stranger,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        None,
        &[],
    )
    .await;
    assert_eq!(code, 401);

    let stages = ["RequestReceived", "ResponseComplete"];
    let create = wait_for_stages(&log, &create_id, &stages).await;
    for event in &create {
        assert_eq!(event["kind"], "Event");
        assert_eq!(event["apiVersion"], "audit.k8s.io/v1");
        assert_eq!(event["level"], "RequestResponse");
        assert_eq!(event["verb"], "create");
        assert_eq!(event["objectRef"]["resource"], "configmaps");
        assert_eq!(event["objectRef"]["namespace"], "default");
        assert_eq!(event["objectRef"]["apiVersion"], "v1");
        assert_eq!(event["user"]["username"], "kubernetes-admin");
        assert_eq!(event["sourceIPs"], json!(["127.0.0.1"]));
        assert!(event["requestReceivedTimestamp"]
            .as_str()
            .is_some_and(|t| t.len() == "2026-01-01T00:00:00.000000Z".len()));
    }
    let done = &create[1];
    assert_eq!(done["responseStatus"], json!({"metadata": {}, "code": 201}));
    assert_eq!(
        done["objectRef"]["name"], "audited",
        "a create's name comes from its object"
    );
    assert_eq!(done["requestObject"]["data"], json!({"k": "v"}));
    assert_eq!(done["responseObject"]["metadata"]["name"], "audited");
    assert!(
        done["responseObject"]["metadata"]
            .get("managedFields")
            .is_none(),
        "omitManagedFields strips them: {done}"
    );
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );

    let get = wait_for_stages(&log, &get_id, &stages).await;
    assert_eq!(get[1]["verb"], "get");
    assert_eq!(get[1]["objectRef"]["name"], "audited");
    assert!(
        get[1].get("requestObject").is_none(),
        "a get has no request object"
    );
    assert_eq!(get[1]["responseObject"]["data"], json!({"k": "v"}));

    let forbidden = wait_for_stages(&log, &forbidden_id, &stages).await;
    let done = &forbidden[1];
    assert_eq!(done["level"], "Metadata");
    assert_eq!(done["verb"], "list");
    assert_eq!(done["user"]["username"], "jane");
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    assert_eq!(done["responseStatus"]["code"], 403);
    assert_eq!(done["responseStatus"]["reason"], "Forbidden");
    assert_eq!(done["responseStatus"]["status"], "Failure");
    assert!(
        done.get("responseObject").is_none(),
        "Metadata has no bodies"
    );

    let unauthorized = wait_for_stages(&log, &unauthorized_id, &["ResponseStarted"]).await;
    assert_eq!(unauthorized[0]["user"], json!({}));
    assert_eq!(unauthorized[0]["verb"], "list");
    assert_eq!(
        unauthorized[0]["responseStatus"],
        json!({"metadata": {}, "message": "Authentication failed, attempted: bearer", "code": 401})
    );

    // Events are written in the order they were handed over, and a request's RequestReceived
    // is handed over before it is answered: the later forbidden request's events are in the
    // log, so the secrets request's would be too had it been audited.
    assert!(events_of(&log, &secrets_id).is_empty());
    server.stop().await;
}

#[tokio::test]
async fn without_a_policy_responses_still_have_an_audit_id() {
    let server = testing::start().await;
    let resp = server
        .client()
        .send(
            http::Request::get("/api/v1/namespaces")
                .body(Vec::new())
                .expect("request")
                .map(Into::into),
        )
        .await
        .expect("answered");
    assert_eq!(resp.status(), 200);
    let id = resp
        .headers()
        .get("audit-id")
        .expect("an Audit-Id, as kube-apiserver sends");
    assert_eq!(id.len(), 36, "a UUID: {id:?}");
    server.stop().await;
}

#[tokio::test]
async fn a_bad_policy_file_stops_the_server_from_starting() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Loud\n",
    )
    .expect("write policy");
    let err = rkcm_apiserver::ApiServer::new(rkcm_apiserver::Config {
        audit: AuditOptions {
            policy_file: Some(policy),
            log_path: Some("-".into()),
            ..AuditOptions::default()
        },
        ..testing::config()
    })
    .await
    .err()
    .expect("refused");
    let chain = format!("{:?}", anyhow::Error::from(err));
    assert!(chain.contains("rules[0].level"), "{chain}");
}

#[tokio::test]
async fn watches_add_response_started_and_impersonation_is_recorded() {
    let (server, dir) = audited_server().await;
    let log = dir.path().join("audit.log");
    let admin = server.client();

    // A watch ends by itself after its timeout; its body is never recorded.
    let (code, watch_id, _) = send(
        &admin,
        "GET",
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1",
        None,
        &[],
    )
    .await;
    assert_eq!(code, 200);
    let watch = wait_for_stages(
        &log,
        &watch_id,
        &["RequestReceived", "ResponseStarted", "ResponseComplete"],
    )
    .await;
    assert_eq!(watch[1]["verb"], "watch");
    assert_eq!(watch[1]["responseStatus"]["code"], 200);
    assert!(watch[2].get("responseObject").is_none(), "{}", watch[2]);

    // The policy sees the sender; the event names whom it impersonated.
    let (code, impersonated_id, _) = send(
        &admin,
        "GET",
        "/api/v1/namespaces/default/pods",
        None,
        &[("Impersonate-User", "jane")],
    )
    .await;
    assert_eq!(code, 403);
    let events = wait_for_stages(
        &log,
        &impersonated_id,
        &["RequestReceived", "ResponseComplete"],
    )
    .await;
    let done = &events[1];
    assert_eq!(done["user"]["username"], "kubernetes-admin");
    assert_eq!(done["impersonatedUser"]["username"], "jane");
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    server.stop().await;
}
