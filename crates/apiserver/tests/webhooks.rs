//! Admission webhooks through the served API: webhook servers started here on 127.0.0.1 with
//! their own CA, called by the server for the writes their configurations match.

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, DeleteParams, EvictParams, PostParams};
use rkcm_apiserver::testing;
use serde_json::{json, Value};
use tokio::net::TcpListener;

type Handler = Arc<dyn Fn(&Value) -> Value + Send + Sync>;

/// A webhook server: its address, the CA that signed its certificate, and the reviews it got.
struct WebhookServer {
    addr: SocketAddr,
    ca_pem: String,
    reviews: Arc<Mutex<Vec<Value>>>,
}

impl WebhookServer {
    fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    fn reviews(&self) -> Vec<Value> {
        self.reviews.lock().expect("reviews").clone()
    }
}

/// Serves reviews on 127.0.0.1: `handler` gets the request and gives the response, less its
/// uid; each answer is held back `delay`.
async fn serve(handler: Handler, delay: Duration) -> WebhookServer {
    let (acceptor, ca_pem) = support::https::acceptor(&["127.0.0.1", "hooks.default.svc"]);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let reviews = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&reviews);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let handler = Arc::clone(&handler);
            let recorded = Arc::clone(&recorded);
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(tcp).await else {
                    return;
                };
                let service =
                    hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let handler = Arc::clone(&handler);
                        let recorded = Arc::clone(&recorded);
                        async move {
                            let body = req.into_body().collect().await?.to_bytes();
                            let review: Value =
                                serde_json::from_slice(&body).unwrap_or(Value::Null);
                            recorded.lock().expect("reviews").push(review.clone());
                            tokio::time::sleep(delay).await;
                            let mut response = handler(&review["request"]);
                            response["uid"] = review["request"]["uid"].clone();
                            let answer = json!({
                                "apiVersion": "admission.k8s.io/v1",
                                "kind": "AdmissionReview",
                                "response": response,
                            });
                            Ok::<_, hyper::Error>(http::Response::new(Full::new(Bytes::from(
                                answer.to_string(),
                            ))))
                        }
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    WebhookServer {
        addr,
        ca_pem,
        reviews,
    }
}

fn ca_bundle(pem: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(pem)
}

/// One webhook on creates of ConfigMaps.
fn webhook(name: &str, url: &str, ca_pem: &str, failure_policy: &str, timeout: i32) -> Value {
    json!({
        "name": name,
        "clientConfig": {"url": url, "caBundle": ca_bundle(ca_pem)},
        "rules": [{
            "operations": ["CREATE"],
            "apiGroups": [""],
            "apiVersions": ["v1"],
            "resources": ["configmaps"],
        }],
        "failurePolicy": failure_policy,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": timeout,
    })
}

fn validating(name: &str, hook: Value) -> ValidatingWebhookConfiguration {
    serde_json::from_value(json!({"metadata": {"name": name}, "webhooks": [hook]}))
        .expect("configuration")
}

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).expect("cm")
}

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_validating_webhook_refuses_with_its_message() {
    let hook = serve(
        Arc::new(|request: &Value| {
            if request["name"] == "bad" {
                json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": "no ConfigMaps named bad"}})
            } else {
                json!({"allowed": true})
            }
        }),
        Duration::ZERO,
    )
    .await;
    let server = testing::start().await;
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(server.client());
    configs
        .create(
            &PostParams::default(),
            &validating(
                "deny",
                webhook(
                    "deny.example.com",
                    &hook.url("/validate"),
                    &hook.ca_pem,
                    "Fail",
                    10,
                ),
            ),
        )
        .await
        .expect("configuration stored");
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let e = api_err(
        cms.create(&PostParams::default(), &configmap("bad"))
            .await
            .expect_err("refused"),
    );
    assert_eq!(e.code, 403);
    assert_eq!(e.reason, "Forbidden");
    assert_eq!(
        e.message,
        "admission webhook \"deny.example.com\" denied the request: no ConfigMaps named bad"
    );
    assert!(cms.get_opt("bad").await.expect("get").is_none());
    cms.create(&PostParams::default(), &configmap("good"))
        .await
        .expect("allowed");

    let reviews = hook.reviews();
    assert_eq!(reviews.len(), 2);
    let request = &reviews[1]["request"];
    assert_eq!(reviews[1]["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(request["operation"], "CREATE");
    assert_eq!(request["namespace"], "default");
    assert_eq!(
        request["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(
        request["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(request["object"]["data"]["k"], "v");
    assert_eq!(request["options"]["kind"], "CreateOptions");
    assert_eq!(request["dryRun"], false);
    assert!(request["userInfo"]["username"].is_string());

    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    let metrics = server
        .client()
        .request_text(request)
        .await
        .expect("metrics");
    assert!(metrics.contains(
        "apiserver_admission_webhook_rejection_count{error_type=\"no_error\",name=\"deny.example.com\",operation=\"CREATE\",rejection_code=\"403\",type=\"validating\"} 1\n"
    ), "{metrics}");
    assert!(metrics.contains(
        "apiserver_admission_webhook_admission_duration_seconds_count{name=\"deny.example.com\",operation=\"CREATE\",rejected=\"false\",type=\"validating\"} 1\n"
    ));

    // Writes of webhook configurations are never sent to webhooks.
    configs
        .delete("deny", &DeleteParams::default())
        .await
        .expect("deleted");
    cms.create(&PostParams::default(), &configmap("bad"))
        .await
        .expect("no webhook once the configuration is gone");
    assert_eq!(hook.reviews().len(), 2);
}

#[tokio::test]
async fn a_mutating_webhook_patches_the_stored_object() {
    let hook = serve(
        Arc::new(|_: &Value| {
            let patch =
                json!([{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]);
            json!({
                "allowed": true,
                "patchType": "JSONPatch",
                "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string()),
            })
        }),
        Duration::ZERO,
    )
    .await;
    let server = testing::start().await;
    let configs: Api<MutatingWebhookConfiguration> = Api::all(server.client());
    let config: MutatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "label"},
        "webhooks": [webhook("label.example.com", &hook.url("/mutate"), &hook.ca_pem, "Fail", 10)],
    }))
    .expect("configuration");
    configs
        .create(&PostParams::default(), &config)
        .await
        .expect("configuration stored");
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created = cms
        .create(&PostParams::default(), &configmap("a"))
        .await
        .expect("created");
    let label = |cm: &ConfigMap| {
        cm.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("mutated"))
            .cloned()
    };
    assert_eq!(label(&created).as_deref(), Some("yes"));
    let stored = cms.get("a").await.expect("stored");
    assert_eq!(label(&stored).as_deref(), Some("yes"));
}

/// Replaces the only validating configuration with one webhook and creates `name`.
async fn create_with(
    server: &testing::TestServer,
    hook: Value,
    name: &str,
) -> Result<ConfigMap, kube::Error> {
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(server.client());
    let _ = configs.delete("only", &DeleteParams::default()).await;
    configs
        .create(&PostParams::default(), &validating("only", hook))
        .await
        .expect("configuration stored");
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    cms.create(&PostParams::default(), &configmap(name)).await
}

#[tokio::test]
async fn the_failure_policy_decides_for_unreachable_webhooks() {
    let server = testing::start().await;
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        l.local_addr().expect("address").port()
    };
    let url = format!("https://127.0.0.1:{closed}/");
    let e = api_err(
        create_with(&server, webhook("w.example.com", &url, "", "Fail", 10), "a")
            .await
            .expect_err("fails closed"),
    );
    assert_eq!(e.code, 500);
    assert_eq!(e.reason, "InternalError");
    assert_eq!(
        e.message,
        format!(
            "Internal error occurred: failed calling webhook \"w.example.com\": failed to call webhook: Post \"https://127.0.0.1:{closed}/?timeout=10s\": dial tcp 127.0.0.1:{closed}: connect: connection refused"
        )
    );
    create_with(
        &server,
        webhook("w.example.com", &url, "", "Ignore", 10),
        "a",
    )
    .await
    .expect("fails open");
}

#[tokio::test]
async fn addresses_outside_loopback_are_never_dialed() {
    let server = testing::start().await;
    let url = "https://10.0.0.1/hook";
    let started = Instant::now();
    let e = api_err(
        create_with(
            &server,
            webhook("far.example.com", url, "", "Fail", 30),
            "a",
        )
        .await
        .expect_err("fails closed"),
    );
    assert!(started.elapsed() < Duration::from_secs(5), "not dialed");
    assert_eq!(e.code, 500);
    assert_eq!(
        e.message,
        "Internal error occurred: failed calling webhook \"far.example.com\": failed to call webhook: Post \"https://10.0.0.1/hook?timeout=30s\": dial tcp 10.0.0.1:443: connect: no route to host"
    );
    create_with(
        &server,
        webhook("far.example.com", url, "", "Ignore", 30),
        "b",
    )
    .await
    .expect("fails open");
}

#[tokio::test]
async fn a_slow_webhook_times_out() {
    let hook = serve(
        Arc::new(|_: &Value| json!({"allowed": false})),
        Duration::from_secs(3),
    )
    .await;
    let server = testing::start().await;
    let url = hook.url("/slow");
    let started = Instant::now();
    let e = api_err(
        create_with(
            &server,
            webhook("slow.example.com", &url, &hook.ca_pem, "Fail", 1),
            "a",
        )
        .await
        .expect_err("timed out"),
    );
    assert!(started.elapsed() < Duration::from_millis(2900));
    assert_eq!(e.code, 500);
    assert_eq!(
        e.message,
        format!(
            "Internal error occurred: failed calling webhook \"slow.example.com\": failed to call webhook: Post \"{url}?timeout=1s\": context deadline exceeded"
        )
    );
    create_with(
        &server,
        webhook("slow.example.com", &url, &hook.ca_pem, "Ignore", 1),
        "b",
    )
    .await
    .expect("fails open");
}

#[tokio::test]
async fn a_webhook_signed_by_another_ca_is_not_trusted() {
    let hook = serve(
        Arc::new(|_: &Value| json!({"allowed": true})),
        Duration::ZERO,
    )
    .await;
    let other = serve(
        Arc::new(|_: &Value| json!({"allowed": true})),
        Duration::ZERO,
    )
    .await;
    let server = testing::start().await;
    let url = hook.url("/");
    let e = api_err(
        create_with(
            &server,
            webhook("tls.example.com", &url, &other.ca_pem, "Fail", 10),
            "a",
        )
        .await
        .expect_err("untrusted"),
    );
    assert_eq!(
        e.message,
        format!(
            "Internal error occurred: failed calling webhook \"tls.example.com\": failed to call webhook: Post \"{url}?timeout=10s\": tls: failed to verify certificate: x509: certificate signed by unknown authority"
        )
    );
    assert!(hook.reviews().is_empty());
}

#[tokio::test]
async fn match_conditions_exclude_requests() {
    let hook = serve(
        Arc::new(|_: &Value| json!({"allowed": false, "status": {"message": "no"}})),
        Duration::ZERO,
    )
    .await;
    let server = testing::start().await;
    let mut config = webhook("cel.example.com", &hook.url("/"), &hook.ca_pem, "Fail", 10);
    config["matchConditions"] = json!([
        {"name": "not-skipped", "expression": "object.metadata.name != 'skip'"},
        {"name": "creates", "expression": "request.operation == 'CREATE' && oldObject == null"},
    ]);
    create_with(&server, config.clone(), "skip")
        .await
        .expect("excluded by a condition, so not sent");
    let e = api_err(
        create_with(&server, config, "other")
            .await
            .expect_err("sent and refused"),
    );
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        "admission webhook \"cel.example.com\" denied the request: no"
    );
    assert_eq!(hook.reviews().len(), 1);

    // A condition that cannot be evaluated refuses under Fail, skips under Ignore.
    let mut broken = webhook("cel.example.com", &hook.url("/"), &hook.ca_pem, "Fail", 10);
    broken["matchConditions"] = json!([{"name": "broken", "expression": "object.spec.nope == 1"}]);
    let e = api_err(
        create_with(&server, broken.clone(), "a")
            .await
            .expect_err("fails closed"),
    );
    assert_eq!(e.code, 403);
    assert!(
        e.message.starts_with(
            "configmaps \"a\" is forbidden: expression 'object.spec.nope == 1' resulted in error: "
        ),
        "{}",
        e.message
    );
    broken["failurePolicy"] = json!("Ignore");
    create_with(&server, broken, "a").await.expect("skipped");
    assert_eq!(hook.reviews().len(), 1);
}

#[tokio::test]
async fn a_service_reference_resolves_to_its_ready_endpoint() {
    let hook = serve(
        Arc::new(|_: &Value| json!({"allowed": false, "status": {"code": 403, "message": "via the service"}})),
        Duration::ZERO,
    )
    .await;
    let server = testing::start().await;
    let services: Api<Service> = Api::namespaced(server.client(), "default");
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "hooks"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": hook.addr.port()}]},
    }))
    .expect("service");
    services
        .create(&PostParams::default(), &service)
        .await
        .expect("service stored");
    let slices: Api<EndpointSlice> = Api::namespaced(server.client(), "default");
    let slice = |ready: bool| -> EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"name": "hooks-1", "labels": {"kubernetes.io/service-name": "hooks"}},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": ready}}],
            "ports": [{"name": "https", "port": hook.addr.port(), "protocol": "TCP"}],
        }))
        .expect("slice")
    };
    let mut config = webhook("svc.example.com", "", &hook.ca_pem, "Fail", 10);
    config["clientConfig"] = json!({
        "service": {"namespace": "default", "name": "hooks", "path": "/validate"},
        "caBundle": ca_bundle(&hook.ca_pem),
    });

    // Without a ready endpoint the call fails.
    slices
        .create(&PostParams::default(), &slice(false))
        .await
        .expect("slice stored");
    let e = api_err(
        create_with(&server, config.clone(), "a")
            .await
            .expect_err("no endpoint"),
    );
    assert_eq!(
        e.message,
        "Internal error occurred: failed calling webhook \"svc.example.com\": failed to call webhook: Post \"https://hooks.default.svc:443/validate?timeout=10s\": no endpoints available for service \"hooks\""
    );

    slices
        .replace("hooks-1", &PostParams::default(), &{
            let mut s = slice(true);
            s.metadata.resource_version = slices
                .get("hooks-1")
                .await
                .expect("slice")
                .metadata
                .resource_version;
            s
        })
        .await
        .expect("slice ready");
    let e = api_err(
        create_with(&server, config, "a")
            .await
            .expect_err("refused by the webhook"),
    );
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "admission webhook \"svc.example.com\" denied the request: via the service"
    );
    let reviews = hook.reviews();
    assert_eq!(reviews.len(), 1);
}

/// A mutating webhook that sets label `key` to `value`.
fn labeller(key: &'static str, value: &'static str) -> Handler {
    Arc::new(move |request: &Value| {
        let patch = if request["object"]["metadata"]["labels"].is_object() {
            json!([{"op": "add", "path": format!("/metadata/labels/{key}"), "value": value}])
        } else {
            json!([{"op": "add", "path": "/metadata/labels", "value": {key: value}}])
        };
        json!({
            "allowed": true,
            "patchType": "JSONPatch",
            "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string()),
        })
    })
}

#[tokio::test]
async fn webhooks_that_ask_for_it_are_called_again_after_later_changes() {
    let first = serve(labeller("first", "1"), Duration::ZERO).await;
    let second = serve(labeller("second", "2"), Duration::ZERO).await;
    let server = testing::start().await;
    let configs: Api<MutatingWebhookConfiguration> = Api::all(server.client());
    let mut a = webhook(
        "first.example.com",
        &first.url("/"),
        &first.ca_pem,
        "Fail",
        10,
    );
    a["reinvocationPolicy"] = json!("IfNeeded");
    let b = webhook(
        "second.example.com",
        &second.url("/"),
        &second.ca_pem,
        "Fail",
        10,
    );
    for (name, hook) in [("a", a), ("b", b)] {
        let config: MutatingWebhookConfiguration =
            serde_json::from_value(json!({"metadata": {"name": name}, "webhooks": [hook]}))
                .expect("configuration");
        configs
            .create(&PostParams::default(), &config)
            .await
            .expect("configuration stored");
    }
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let created = cms
        .create(&PostParams::default(), &configmap("c"))
        .await
        .expect("created");
    let labels = created.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("first").map(String::as_str), Some("1"));
    assert_eq!(labels.get("second").map(String::as_str), Some("2"));
    let calls = first.reviews();
    assert_eq!(
        calls.len(),
        2,
        "called again once the second webhook changed the object"
    );
    assert_eq!(
        calls[1]["request"]["object"]["metadata"]["labels"]["second"],
        "2"
    );
    assert_eq!(second.reviews().len(), 1, "reinvocationPolicy Never");
}

#[tokio::test]
async fn webhook_warnings_reach_the_client() {
    let hook = serve(
        Arc::new(
            |_: &Value| json!({"allowed": true, "warnings": ["mind the gap", "mind the gap"]}),
        ),
        Duration::ZERO,
    )
    .await;
    let server = testing::start().await;
    create_with(
        &server,
        webhook("warn.example.com", &hook.url("/"), &hook.ca_pem, "Fail", 10),
        "a",
    )
    .await
    .expect("created");
    let body = serde_json::to_vec(&configmap("b")).expect("body");
    let request = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("content-type", "application/json")
        .body(kube::client::Body::from(body))
        .expect("request");
    let response = server.client().send(request).await.expect("sent");
    assert_eq!(response.status(), 201);
    let warnings: Vec<&str> = response
        .headers()
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert_eq!(warnings, ["299 - \"mind the gap\""]);
}

#[tokio::test]
async fn evictions_are_sent_to_webhooks_as_evictions() {
    let hook = serve(
        Arc::new(|_: &Value| json!({"allowed": false, "status": {"code": 403, "reason": "Forbidden", "message": "not now"}})),
        Duration::ZERO,
    )
    .await;
    let server = testing::start().await;
    let mut config = webhook(
        "evict.example.com",
        &hook.url("/"),
        &hook.ca_pem,
        "Fail",
        10,
    );
    config["rules"] = json!([{
        "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods/eviction"],
    }]);
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(server.client());
    configs
        .create(&PostParams::default(), &validating("evict", config))
        .await
        .expect("configuration stored");
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("pods are not matched");
    let e = api_err(
        pods.evict("p", &EvictParams::default())
            .await
            .expect_err("refused"),
    );
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "admission webhook \"evict.example.com\" denied the request: not now"
    );
    let reviews = hook.reviews();
    assert_eq!(reviews.len(), 1);
    let request = &reviews[0]["request"];
    assert_eq!(
        request["kind"],
        json!({"group": "policy", "version": "v1", "kind": "Eviction"})
    );
    assert_eq!(request["subResource"], "eviction");
    assert_eq!(request["name"], "p");
    pods.get("p").await.expect("not evicted");
}

/// A webhook that allows everything with the JSON patch `patch`.
fn patcher(patch: Value) -> Handler {
    Arc::new(move |_: &Value| {
        json!({
            "allowed": true,
            "patchType": "JSONPatch",
            "patch": base64::engine::general_purpose::STANDARD.encode(patch.to_string()),
        })
    })
}

/// `hook` with `rules` in place of its own and `matchPolicy`.
fn with_rules(mut hook: Value, rules: Value, match_policy: &str) -> Value {
    hook["rules"] = rules;
    hook["matchPolicy"] = json!(match_policy);
    hook
}

/// Stores the mutating configuration `name` with the one webhook `hook`.
async fn install_mutating(server: &testing::TestServer, name: &str, hook: Value) {
    let config: MutatingWebhookConfiguration =
        serde_json::from_value(json!({"metadata": {"name": name}, "webhooks": [hook]}))
            .expect("configuration");
    Api::<MutatingWebhookConfiguration>::all(server.client())
        .create(&PostParams::default(), &config)
        .await
        .expect("configuration stored");
}

fn hpa_v2(name: &str) -> k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 3,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}],
        },
    }))
    .expect("hpa")
}

#[tokio::test]
async fn equivalent_versions_are_sent_converted_and_their_patches_converted_back() {
    use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
    let hook = serve(
        patcher(
            json!([{"op": "replace", "path": "/spec/targetCPUUtilizationPercentage", "value": 70}]),
        ),
        Duration::ZERO,
    )
    .await;
    let server = testing::start().await;
    let v1_rule = json!([{"operations": ["CREATE"], "apiGroups": ["autoscaling"],
        "apiVersions": ["v1"], "resources": ["horizontalpodautoscalers"]}]);
    let base = webhook("hpa.example.com", &hook.url("/"), &hook.ca_pem, "Fail", 10);
    install_mutating(
        &server,
        "exact",
        with_rules(base.clone(), v1_rule.clone(), "Exact"),
    )
    .await;
    let hpas: Api<HorizontalPodAutoscaler> = Api::namespaced(server.client(), "default");
    hpas.create(&PostParams::default(), &hpa_v2("exact"))
        .await
        .expect("created");
    assert!(
        hook.reviews().is_empty(),
        "Exact does not match other versions"
    );

    Api::<MutatingWebhookConfiguration>::all(server.client())
        .delete("exact", &DeleteParams::default())
        .await
        .expect("deleted");
    install_mutating(
        &server,
        "equivalent",
        with_rules(base, v1_rule, "Equivalent"),
    )
    .await;
    let created = hpas
        .create(&PostParams::default(), &hpa_v2("equivalent"))
        .await
        .expect("created");
    let reviews = hook.reviews();
    assert_eq!(reviews.len(), 1);
    let request = &reviews[0]["request"];
    assert_eq!(
        request["kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "HorizontalPodAutoscaler"})
    );
    assert_eq!(
        request["resource"],
        json!({"group": "autoscaling", "version": "v1", "resource": "horizontalpodautoscalers"})
    );
    assert_eq!(
        request["requestKind"],
        json!({"group": "autoscaling", "version": "v2", "kind": "HorizontalPodAutoscaler"})
    );
    assert_eq!(request["requestResource"]["version"], "v2");
    assert_eq!(request["object"]["apiVersion"], "autoscaling/v1");
    assert_eq!(
        request["object"]["spec"]["targetCPUUtilizationPercentage"],
        50
    );
    // The patch of the v1 object, converted back to v2.
    let metrics = created.spec.expect("spec").metrics.expect("metrics");
    let target = &metrics[0]
        .resource
        .as_ref()
        .expect("resource metric")
        .target;
    assert_eq!(target.average_utilization, Some(70));
}

#[tokio::test]
async fn objects_patched_by_webhooks_get_their_kinds_defaults() {
    let hook = serve(
        patcher(json!([{"op": "add", "path": "/spec/containers/-",
            "value": {"name": "sidecar", "image": "busybox:1.36"}}])),
        Duration::ZERO,
    )
    .await;
    let server = testing::start().await;
    let pod_rule = json!([{"operations": ["CREATE"], "apiGroups": [""],
        "apiVersions": ["v1"], "resources": ["pods"]}]);
    let base = webhook(
        "sidecar.example.com",
        &hook.url("/"),
        &hook.ca_pem,
        "Fail",
        10,
    );
    install_mutating(&server, "sidecar", with_rules(base, pod_rule, "Equivalent")).await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
        .await
        .expect("created");
    let stored = serde_json::to_value(pods.get("p").await.expect("stored")).expect("json");
    let sidecar = &stored["spec"]["containers"][1];
    assert_eq!(sidecar["name"], "sidecar");
    assert_eq!(sidecar["imagePullPolicy"], "IfNotPresent");
    assert_eq!(sidecar["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(sidecar["terminationMessagePolicy"], "File");
}

/// Lets service account `default/nobody` create ConfigMaps in `default`.
async fn grant_nobody_configmaps(server: &testing::TestServer) {
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    let role: Role = serde_json::from_value(json!({
        "metadata": {"name": "cm-writer"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}],
    }))
    .expect("role");
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "cm-writer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-writer"},
        "subjects": [{"kind": "ServiceAccount", "name": "nobody", "namespace": "default"}],
    }))
    .expect("binding");
    Api::<Role>::namespaced(server.client(), "default")
        .create(&PostParams::default(), &role)
        .await
        .expect("role stored");
    Api::<RoleBinding>::namespaced(server.client(), "default")
        .create(&PostParams::default(), &binding)
        .await
        .expect("binding stored");
}

#[tokio::test]
async fn match_conditions_ask_the_authorizer() {
    let hook = serve(
        Arc::new(|_: &Value| json!({"allowed": true})),
        Duration::ZERO,
    )
    .await;
    let server = testing::start_with(rkcm_apiserver::Config {
        authorization_modes: vec![rkcm_apiserver::auth::authorization::Mode::Rbac],
        ..testing::config()
    })
    .await;
    let mut config = webhook(
        "authz.example.com",
        &hook.url("/"),
        &hook.ca_pem,
        "Fail",
        10,
    );
    config["matchConditions"] = json!([
        {"name": "requester-may", "expression": "authorizer.requestResource.check('create').allowed()"},
        {"name": "nobody-may-not", "expression":
            "!authorizer.serviceAccount('default', 'nobody').group('').resource('configmaps').namespace('default').check('create').allowed()"},
    ]);
    create_with(&server, config.clone(), "first")
        .await
        .expect("created");
    assert_eq!(hook.reviews().len(), 1, "sent while nobody may not create");
    grant_nobody_configmaps(&server).await;
    create_with(&server, config, "second")
        .await
        .expect("created");
    assert_eq!(hook.reviews().len(), 1, "excluded once nobody may create");
}
