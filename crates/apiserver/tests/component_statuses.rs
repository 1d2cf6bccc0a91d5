//! `componentstatuses` (probes registered by the components running with the server, the
//! store for `etcd-0`, kube's deprecation warning, as Endpoints have theirs) and the list of
//! CRDs kubectl's validation asks for.

use std::sync::Arc;

use rkcm_apiserver::testing;
use serde_json::Value;

async fn get(client: &kube::Client, path: &str) -> (u16, Option<String>, Value) {
    let req = http::Request::get(path).body(Vec::new()).expect("request");
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .expect("send");
    let code = resp.status().as_u16();
    let warning = resp
        .headers()
        .get("warning")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    (code, warning, serde_json::from_slice(&body).expect("JSON"))
}

#[tokio::test]
async fn every_request_for_endpoints_carries_kubes_deprecation_warning() {
    let server = testing::start().await;
    let client = server.client();
    let warning = Some(
        "299 - \"v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\"",
    );
    let (code, got, _) = get(&client, "/api/v1/namespaces/default/endpoints").await;
    assert_eq!((code, got.as_deref()), (200, warning));
    // Errors too: the warning is the route's, whatever the handler answers.
    let (code, got, _) = get(&client, "/api/v1/namespaces/default/endpoints/none").await;
    assert_eq!((code, got.as_deref()), (404, warning));
    let (_, got, _) = get(&client, "/apis/discovery.k8s.io/v1/endpointslices").await;
    assert_eq!(got, None);
}

fn condition(status: &Value) -> (String, String, String) {
    let c = &status["conditions"][0];
    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
    (s("status"), s("message"), s("error"))
}

#[tokio::test]
async fn component_statuses_report_what_runs_with_the_server() {
    let server = testing::start().await;
    let client = server.client();
    let (code, warning, list) = get(&client, "/api/v1/componentstatuses").await;
    assert_eq!(code, 200);
    assert_eq!(
        warning.as_deref(),
        Some("299 - \"v1 ComponentStatus is deprecated in v1.19+\"")
    );
    assert_eq!(list["kind"], "ComponentStatusList");
    let items = list["items"].as_array().expect("items");
    let names: Vec<&str> = items
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["scheduler", "controller-manager", "etcd-0"]);
    assert_eq!(
        condition(&items[2]),
        ("True".into(), "ok".into(), String::new())
    );
    let (status, _, error) = condition(&items[0]);
    assert_eq!(status, "Unknown");
    assert!(
        error.contains("does not run with this API server"),
        "{error}"
    );

    server
        .components()
        .register("controller-manager", Arc::new(|| Ok("ok".to_string())));
    server
        .components()
        .register("scheduler", Arc::new(|| Err("stopped".to_string())));
    let (_, _, cm) = get(&client, "/api/v1/componentstatuses/controller-manager").await;
    assert_eq!(condition(&cm), ("True".into(), "ok".into(), String::new()));
    let (_, _, scheduler) = get(&client, "/api/v1/componentstatuses/scheduler").await;
    assert_eq!(
        condition(&scheduler),
        ("False".into(), String::new(), "stopped".into())
    );

    let (code, _, missing) = get(&client, "/api/v1/componentstatuses/nope").await;
    assert_eq!(code, 500);
    assert_eq!(missing["message"], "Component not found: nope");

    let (code, _, selected) = get(
        &client,
        "/api/v1/componentstatuses?fieldSelector=metadata.name%3Detcd-0",
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(selected["items"].as_array().map(Vec::len), Some(1));
    server.stop().await;
}

#[tokio::test]
async fn the_list_of_crds_starts_empty_and_the_crd_api_is_served() {
    let server = testing::start().await;
    let client = server.client();
    let (code, _, list) = get(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(list["kind"], "CustomResourceDefinitionList");
    assert_eq!(list["items"], serde_json::json!([]));
    let (code, _, _) = get(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/foos.example.com",
    )
    .await;
    assert_eq!(code, 404);
    let (code, _, discovery) = get(&client, "/apis/apiextensions.k8s.io/v1").await;
    assert_eq!(code, 200);
    assert_eq!(
        discovery["resources"][0]["name"],
        "customresourcedefinitions"
    );
    assert_eq!(
        discovery["resources"][0]["shortNames"],
        serde_json::json!(["crd"])
    );
    let req = http::Request::post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
        .header("content-type", "application/json")
        .body(b"{}".to_vec())
        .expect("request");
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .expect("send");
    assert_eq!(
        resp.status().as_u16(),
        422,
        "a CRD without a name is invalid"
    );
    server.stop().await;
}
