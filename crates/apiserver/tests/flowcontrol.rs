//! API Priority and Fairness enforced from the stored configuration: the response headers naming
//! the matched schema and level, the configuration following creates and deletes, the metrics
//! and debug dumps, and `--enable-priority-and-fairness=false`. (Queuing and 429s of a
//! saturated level are tested on the filter, in `rkcm_server::flowcontrol::filter`.)

use std::time::{Duration, Instant};

use http::Request;
use serde_json::{json, Value};

use rkcm_apiserver::testing::{self, TestServer};

const JANE: &str = "jane-token";

async fn server(apf: bool) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("tokens.csv");
    std::fs::write(&file, format!("{JANE},jane,1001,devs\n")).expect("write");
    let server = testing::start_with(rkcm_apiserver::Config {
        token_auth_file: Some(file),
        enable_priority_and_fairness: apf,
        ..testing::config()
    })
    .await;
    (server, dir)
}

/// Status, headers and body of a GET of `path` by `client`.
async fn get(client: &kube::Client, path: &str) -> (u16, http::HeaderMap, String) {
    let req = Request::get(path).body(Vec::new()).expect("request");
    let resp = client.send(req.map(Into::into)).await.expect("answered");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

fn header<'a>(headers: &'a http::HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

async fn uid(client: &kube::Client, plural: &str, name: &str) -> String {
    let path = format!("/apis/flowcontrol.apiserver.k8s.io/v1/{plural}/{name}");
    let (status, _, body) = get(client, &path).await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("json");
    v["metadata"]["uid"].as_str().expect("uid").to_string()
}

async fn create(client: &kube::Client, plural: &str, object: Value) {
    let req = Request::post(format!("/apis/flowcontrol.apiserver.k8s.io/v1/{plural}"))
        .header("content-type", "application/json")
        .body(object.to_string().into_bytes())
        .expect("request");
    let resp = client.send(req.map(Into::into)).await.expect("answered");
    assert_eq!(resp.status().as_u16(), 201, "create {plural}");
}

/// Polls `f` until it holds, failing after a deadline.
async fn eventually<F, Fut>(what: &str, mut f: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f().await {
        assert!(Instant::now() < deadline, "{what}: not within 10s");
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn requests_carry_the_uids_of_their_schema_and_level() {
    let (server, _dir) = server(true).await;
    let admin = server.client();
    let (status, headers, _) = get(&admin, "/api/v1/namespaces/default/configmaps").await;
    assert_eq!(status, 200);
    let exempt_fs = uid(&admin, "flowschemas", "exempt").await;
    let exempt_pl = uid(&admin, "prioritylevelconfigurations", "exempt").await;
    assert_eq!(
        header(&headers, "X-Kubernetes-PF-FlowSchema-UID"),
        Some(exempt_fs.as_str())
    );
    assert_eq!(
        header(&headers, "X-Kubernetes-PF-PriorityLevel-UID"),
        Some(exempt_pl.as_str())
    );

    let jane = server.client_as(json!({"token": JANE})).await;
    let (status, headers, _) = get(&jane, "/api/v1/namespaces/default/configmaps").await;
    assert_eq!(status, 200);
    let global = uid(&admin, "flowschemas", "global-default").await;
    assert_eq!(
        header(&headers, "X-Kubernetes-PF-FlowSchema-UID"),
        Some(global.as_str())
    );
}

#[tokio::test]
async fn the_configuration_follows_the_stored_schemas_and_levels() {
    let (server, _dir) = server(true).await;
    let admin = server.client();
    let jane = server.client_as(json!({"token": JANE})).await;
    // No shares: no seats; `Reject`: no queue.
    create(
        &admin,
        "prioritylevelconfigurations",
        json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "PriorityLevelConfiguration",
            "metadata": {"name": "closed"},
            "spec": {"type": "Limited", "limited": {
                "nominalConcurrencyShares": 0,
                "limitResponse": {"type": "Reject"},
            }},
        }),
    )
    .await;
    create(
        &admin,
        "flowschemas",
        json!({
            "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
            "kind": "FlowSchema",
            "metadata": {"name": "jane"},
            "spec": {
                "matchingPrecedence": 100,
                "priorityLevelConfiguration": {"name": "closed"},
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [{
                    "subjects": [{"kind": "User", "user": {"name": "jane"}}],
                    "resourceRules": [{
                        "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                        "namespaces": ["*"], "clusterScope": true,
                    }],
                }],
            },
        }),
    )
    .await;
    let path = "/api/v1/namespaces/default/configmaps";
    let fs = uid(&admin, "flowschemas", "jane").await;
    let pl = uid(&admin, "prioritylevelconfigurations", "closed").await;
    // The configuration follows the store: poll until the schema is in force.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, headers, _) = get(&jane, path).await;
        if header(&headers, "X-Kubernetes-PF-FlowSchema-UID") == Some(fs.as_str()) {
            assert_eq!(
                header(&headers, "X-Kubernetes-PF-PriorityLevel-UID"),
                Some(pl.as_str())
            );
            // No seats, but nothing else executes at the level: a request runs alone, as kube's
            // queue set lets a request wider than the limit run when the level is idle. The
            // refusals of a busy level are tested on the filter itself.
            assert_eq!(status, 200);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "jane's schema not in force after 10s"
        );
        tokio::task::yield_now().await;
    }
    // Non-resource requests do not match the schema's rules.
    assert_eq!(get(&jane, "/version").await.0, 200);

    let (_, _, metrics) = get(&admin, "/metrics").await;
    assert!(
        metrics.lines().any(|l| l.starts_with(
            "apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"jane\",priority_level=\"closed\"}"
        )),
        "{metrics}"
    );
    assert!(
        metrics.contains("apiserver_flowcontrol_nominal_limit_seats{priority_level=\"closed\"} 0")
    );
    assert!(metrics.contains("apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"exempt\",priority_level=\"exempt\"}"));

    let (status, _, levels) = get(
        &admin,
        "/debug/api_priority_and_fairness/dump_priority_levels",
    )
    .await;
    assert_eq!(status, 200);
    assert!(levels.starts_with("PriorityLevelName, "), "{levels}");
    assert!(
        levels.lines().any(|l| l.starts_with("closed, ")),
        "{levels}"
    );
    let (status, _, queues) = get(&admin, "/debug/api_priority_and_fairness/dump_queues").await;
    assert_eq!(status, 200);
    assert!(
        queues.lines().any(|l| l.starts_with("workload-low, ")),
        "{queues}"
    );
    let (status, _, requests) = get(
        &admin,
        "/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1",
    )
    .await;
    assert_eq!(status, 200);
    assert!(requests.starts_with("PriorityLevelName, "), "{requests}");
    assert!(requests.contains("UserName"), "{requests}");

    // Deleting the schema gives jane back to global-default.
    let global = uid(&admin, "flowschemas", "global-default").await;
    let req = Request::delete("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/jane")
        .body(Vec::new())
        .expect("request");
    let resp = admin.send(req.map(Into::into)).await.expect("answered");
    assert_eq!(resp.status().as_u16(), 200);
    eventually("jane back in global-default", || {
        let jane = jane.clone();
        let global = global.clone();
        async move {
            let (_, headers, _) = get(&jane, path).await;
            header(&headers, "X-Kubernetes-PF-FlowSchema-UID") == Some(global.as_str())
        }
    })
    .await;
}

#[tokio::test]
async fn without_priority_and_fairness_the_inflight_limits_apply() {
    let (server, _dir) = server(false).await;
    let admin = server.client();
    let (status, headers, _) = get(&admin, "/api/v1/namespaces/default/configmaps").await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "X-Kubernetes-PF-FlowSchema-UID"), None);
    assert_eq!(header(&headers, "X-Kubernetes-PF-PriorityLevel-UID"), None);
    let (status, _, _) = get(&admin, "/debug/api_priority_and_fairness/dump_queues").await;
    assert_eq!(status, 404);
    let (_, _, metrics) = get(&admin, "/metrics").await;
    assert!(!metrics.contains("apiserver_flowcontrol_"));
}

#[tokio::test]
async fn a_list_is_estimated_from_the_stored_objects() {
    let (server, _dir) = server(true).await;
    let admin = server.client();
    // 250 ConfigMaps: a LIST of them takes three seats.
    futures::future::join_all((0..250).map(|i| {
        let admin = admin.clone();
        async move {
            let req = Request::post("/api/v1/namespaces/default/configmaps")
                .header("content-type", "application/json")
                .body(
                    json!({"metadata": {"name": format!("cm-{i}")}})
                        .to_string()
                        .into_bytes(),
                )
                .expect("request");
            let resp = admin.send(req.map(Into::into)).await.expect("answered");
            assert_eq!(resp.status().as_u16(), 201);
        }
    }))
    .await;
    let bucket = |metrics: &str, le: &str| -> u64 {
        let series = format!(
            "apiserver_flowcontrol_work_estimated_seats_bucket{{flow_schema=\"exempt\",priority_level=\"exempt\",le=\"{le}\"}} "
        );
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(series.as_str()))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let (_, _, before) = get(&admin, "/metrics").await;
    let (status, _, _) = get(&admin, "/api/v1/configmaps").await;
    assert_eq!(status, 200);
    let (_, _, after) = get(&admin, "/metrics").await;
    let wide = |m: &str| bucket(m, "4") - bucket(m, "2");
    assert_eq!(wide(&after) - wide(&before), 1, "{after}");
}
