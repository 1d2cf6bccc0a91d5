//! Aggregated APIs through the served API: an HTTPS API server started here on 127.0.0.1, a
//! Service without selector and an EndpointSlice pointing at it, and an APIService naming the
//! Service. The server checks its availability, lists it in discovery and proxies requests,
//! watches included, as the authenticated user.

mod support;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, PostParams, WatchEvent, WatchParams,
};
use rkcm_apiserver::testing::{self, TestServer};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::broadcast;

const GROUP: &str = "wardle.example.com";
const VERSION: &str = "v1alpha1";
const PREFIX: &str = "/apis/wardle.example.com/v1alpha1";

/// A request the aggregated server received.
#[derive(Clone, Debug)]
struct Received {
    path_and_query: String,
    headers: http::HeaderMap,
}

/// The aggregated server: its address, its CA, what it received, and the watch events it is
/// told to send.
struct Wardle {
    addr: SocketAddr,
    ca_pem: String,
    received: Arc<Mutex<Vec<Received>>>,
    events: broadcast::Sender<Value>,
}

impl Wardle {
    fn received(&self) -> Vec<Received> {
        self.received.lock().expect("received").clone()
    }
}

fn flunder(name: &str, rv: &str) -> Value {
    json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": rv,
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {},
    })
}

fn json_body(code: u16, value: &Value) -> http::Response<BoxBody<Bytes, Infallible>> {
    http::Response::builder()
        .status(code)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(value.to_string())).boxed())
        .expect("response")
}

/// What the aggregated server answers.
fn answer(
    path: &str,
    query: &str,
    events: &broadcast::Sender<Value>,
) -> http::Response<BoxBody<Bytes, Infallible>> {
    let flunders = format!("{PREFIX}/namespaces/default/flunders");
    if path == "/apis/metrics.k8s.io/v1beta1" {
        return json_body(
            200,
            &json!({
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": "metrics.k8s.io/v1beta1",
                "resources": [{"name": "pods", "singularName": "", "namespaced": true,
                               "kind": "PodMetrics", "verbs": ["get", "list"]}],
            }),
        );
    }
    if path == "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods" {
        return json_body(
            200,
            &json!({"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1",
                    "metadata": {"resourceVersion": "from-the-metrics-server"}, "items": []}),
        );
    }
    if path == PREFIX {
        return json_body(
            200,
            &json!({
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": "wardle.example.com/v1alpha1",
                "resources": [
                    {"name": "flunders", "singularName": "flunder", "namespaced": true,
                     "kind": "Flunder", "verbs": ["get", "list", "watch"], "shortNames": ["fl"]},
                    {"name": "flunders/status", "singularName": "", "namespaced": true,
                     "kind": "Flunder", "verbs": ["get"]},
                ],
            }),
        );
    }
    if path == flunders
        && query
            .split('&')
            .any(|p| p == "watch=true" || p == "watch=1")
    {
        // The existing object, then each event the test sends, until the client goes.
        let first = json!({"type": "ADDED", "object": flunder("one", "1")});
        let rx = events.subscribe();
        let stream = futures::stream::unfold((Some(first), rx), |(first, mut rx)| async move {
            let event = match first {
                Some(e) => e,
                None => rx.recv().await.ok()?,
            };
            let line = Bytes::from(format!("{event}\n"));
            Some((Ok::<_, Infallible>(Frame::data(line)), (None, rx)))
        });
        return http::Response::builder()
            .status(200)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(BodyExt::boxed(StreamBody::new(stream)))
            .expect("response");
    }
    if path == flunders || path == format!("{PREFIX}/flunders") {
        return json_body(
            200,
            &json!({
                "apiVersion": "wardle.example.com/v1alpha1",
                "kind": "FlunderList",
                "metadata": {"resourceVersion": "1"},
                "items": [flunder("one", "1")],
            }),
        );
    }
    if path == format!("{PREFIX}/redirect") {
        return http::Response::builder()
            .status(302)
            .header(http::header::LOCATION, "https://example.com/")
            .body(BodyExt::boxed(Full::new(Bytes::new())))
            .expect("response");
    }
    if path == format!("{flunders}/one") {
        return json_body(200, &flunder("one", "1"));
    }
    json_body(
        404,
        &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "reason": "NotFound", "code": 404, "message": format!("{path} not found")}),
    )
}

/// Serves the wardle API on 127.0.0.1 with a certificate for `wardle.default.svc`.
async fn serve_wardle() -> Wardle {
    let (acceptor, ca_pem) = support::https::acceptor(&["wardle.default.svc"]);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let received = Arc::new(Mutex::new(Vec::new()));
    let (events, _) = broadcast::channel(16);
    let (recorded, sender) = (Arc::clone(&received), events.clone());
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let (recorded, sender) = (Arc::clone(&recorded), sender.clone());
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(tcp).await else {
                    return;
                };
                let service =
                    hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let path = req.uri().path().to_string();
                        let query = req.uri().query().unwrap_or_default().to_string();
                        recorded.lock().expect("received").push(Received {
                            path_and_query: format!("{path}?{query}"),
                            headers: req.headers().clone(),
                        });
                        let response = answer(&path, &query, &sender);
                        async move { Ok::<_, Infallible>(response) }
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Wardle {
        addr,
        ca_pem,
        received,
        events,
    }
}

async fn create_service(server: &TestServer, wardle: &Wardle) {
    let services: Api<Service> = Api::namespaced(server.client(), "default");
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "wardle"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": wardle.addr.port()}]},
    }))
    .expect("service");
    services
        .create(&PostParams::default(), &service)
        .await
        .expect("service stored");
}

async fn create_slice(server: &TestServer, wardle: &Wardle) {
    let slices: Api<EndpointSlice> = Api::namespaced(server.client(), "default");
    let slice: EndpointSlice = serde_json::from_value(json!({
        "metadata": {"name": "wardle-1", "labels": {"kubernetes.io/service-name": "wardle"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": wardle.addr.port(), "protocol": "TCP"}],
    }))
    .expect("slice");
    slices
        .create(&PostParams::default(), &slice)
        .await
        .expect("slice stored");
}

async fn create_apiservice(server: &TestServer, wardle: &Wardle) {
    create_apiservice_for(server, &wardle.ca_pem, GROUP, VERSION).await;
}

async fn create_apiservice_for(server: &TestServer, ca_pem: &str, group: &str, version: &str) {
    let apiservices: Api<APIService> = Api::all(server.client());
    let apiservice: APIService = serde_json::from_value(json!({
        "metadata": {"name": format!("{version}.{group}")},
        "spec": {
            "group": group,
            "version": version,
            "service": {"namespace": "default", "name": "wardle"},
            "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
            "groupPriorityMinimum": 1000,
            "versionPriority": 15,
        },
    }))
    .expect("apiservice");
    apiservices
        .create(&PostParams::default(), &apiservice)
        .await
        .expect("apiservice stored");
}

/// The `Available` condition of the wardle APIService once it has `reason` (polled with a
/// deadline).
async fn wait_for_reason(server: &TestServer, reason: &str) -> Value {
    wait_for_reason_of(server, "v1alpha1.wardle.example.com", reason).await
}

/// The `Available` condition of APIService `name` once it has `reason`.
async fn wait_for_reason_of(server: &TestServer, name: &str, reason: &str) -> Value {
    let apiservices: Api<APIService> = Api::all(server.client());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = apiservices.get(name).await.expect("apiservice");
        let got = serde_json::to_value(&got).expect("json");
        let condition = got["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Available"))
            .cloned();
        if let Some(c) = condition.filter(|c| c["reason"] == reason) {
            return c;
        }
        assert!(
            Instant::now() < deadline,
            "the APIService never got reason {reason} (the availability controller likely stopped): {}",
            got["status"]
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// GETs `path` and returns its status code and body.
async fn raw_get(server: &TestServer, path: &str, accept: &str) -> (u16, String) {
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(Vec::new())
        .expect("request");
    // kube-rs retries 503 answers by default; the answer itself is what is checked here.
    let mut config = server.kube_config();
    config.default_retry = false;
    let client = kube::Client::try_from(config).expect("client");
    match client.request_text(request).await {
        Ok(text) => (200, text),
        Err(kube::Error::Api(status)) => (status.code, status.message),
        Err(e) => panic!("GET {path}: {e}"),
    }
}

const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Polls aggregated discovery until it lists the wardle group.
async fn wait_for_discovery(server: &TestServer) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, body) = raw_get(server, "/apis", AGGREGATED).await;
        assert_eq!(code, 200, "{body}");
        let list: Value = serde_json::from_str(&body).expect("discovery");
        let group = list["items"]
            .as_array()
            .and_then(|items| items.iter().find(|g| g["metadata"]["name"] == GROUP))
            .cloned();
        if let Some(group) = group {
            return group;
        }
        assert!(
            Instant::now() < deadline,
            "aggregated discovery never listed {GROUP}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn flunders(server: &TestServer) -> Api<DynamicObject> {
    let resource = ApiResource {
        group: GROUP.into(),
        version: VERSION.into(),
        api_version: format!("{GROUP}/{VERSION}"),
        kind: "Flunder".into(),
        plural: "flunders".into(),
    };
    Api::namespaced_with(server.client(), "default", &resource)
}

#[tokio::test]
async fn an_aggregated_api_is_checked_listed_and_proxied() {
    let wardle = serve_wardle().await;
    let server = testing::start().await;
    create_service(&server, &wardle).await;
    create_apiservice(&server, &wardle).await;

    // No EndpointSlice yet: unavailable, and requests get kube's 503.
    let c = wait_for_reason(&server, "EndpointsNotFound").await;
    assert_eq!(c["status"], "False");
    assert_eq!(
        c["message"],
        "cannot find endpointslices for service/wardle in \"default\""
    );
    let (code, body) = raw_get(
        &server,
        &format!("{PREFIX}/namespaces/default/flunders"),
        "application/json",
    )
    .await;
    assert_eq!((code, body.trim()), (503, "service unavailable"));

    create_slice(&server, &wardle).await;
    let c = wait_for_reason(&server, "Passed").await;
    assert_eq!(c["status"], "True");
    assert_eq!(c["message"], "all checks passed");
    // The check called the discovery document as the aggregator.
    let check = wardle
        .received()
        .into_iter()
        .find(|r| r.path_and_query == format!("{PREFIX}?"))
        .expect("discovery checked");
    assert_eq!(check.headers["x-remote-user"], "system:kube-aggregator");
    assert_eq!(check.headers["x-remote-group"], "system:masters");

    // Discovery: the legacy group list and aggregated discovery.
    let (_, groups) = raw_get(&server, "/apis", "application/json").await;
    let groups: Value = serde_json::from_str(&groups).expect("group list");
    let wardle_group = groups["groups"]
        .as_array()
        .and_then(|gs| gs.iter().find(|g| g["name"] == GROUP))
        .expect("wardle listed in /apis");
    assert_eq!(
        wardle_group["preferredVersion"]["groupVersion"],
        "wardle.example.com/v1alpha1"
    );
    let (code, group) = raw_get(&server, "/apis/wardle.example.com", "application/json").await;
    assert_eq!(code, 200, "{group}");
    let group = wait_for_discovery(&server).await;
    let resource = &group["versions"][0]["resources"][0];
    assert_eq!(resource["resource"], "flunders");
    assert_eq!(resource["scope"], "Namespaced");
    assert_eq!(resource["shortNames"], json!(["fl"]));
    assert_eq!(resource["subresources"][0]["subresource"], "status");
    // The group-version's own document comes from the aggregated server.
    let (code, list) = raw_get(&server, PREFIX, "application/json").await;
    assert_eq!(code, 200, "{list}");
    assert!(list.contains("\"flunders\""), "{list}");

    // GET and LIST, proxied with the user in X-Remote-* headers and no credentials.
    let api = flunders(&server);
    let one = api.get("one").await.expect("get through the proxy");
    assert_eq!(one.metadata.name.as_deref(), Some("one"));
    let listed = api.list(&ListParams::default()).await.expect("list");
    assert_eq!(listed.items.len(), 1);
    let get = wardle
        .received()
        .into_iter()
        .find(|r| {
            r.path_and_query
                .starts_with(&format!("{PREFIX}/namespaces/default/flunders/one"))
        })
        .expect("GET proxied");
    assert_eq!(get.headers["x-remote-user"], "kubernetes-admin");
    let groups: Vec<&str> = get
        .headers
        .get_all("x-remote-group")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert!(groups.contains(&"system:masters"), "{groups:?}");
    assert!(groups.contains(&"system:authenticated"), "{groups:?}");
    assert!(get.headers.get(http::header::AUTHORIZATION).is_none());

    // WATCH: the first event arrives while the aggregated server keeps the stream open, then
    // the next one when it is sent.
    let mut watch = api
        .watch(&WatchParams::default().timeout(60), "0")
        .await
        .expect("watch")
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), watch.try_next())
        .await
        .expect("the first event was held back (the proxy likely buffers)")
        .expect("event")
        .expect("stream open");
    assert!(
        matches!(&first, WatchEvent::Added(o) if o.metadata.name.as_deref() == Some("one")),
        "{first:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while wardle.events.receiver_count() == 0 {
        assert!(
            Instant::now() < deadline,
            "the watch never reached the aggregated server"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    wardle
        .events
        .send(json!({"type": "MODIFIED", "object": flunder("one", "2")}))
        .expect("watcher subscribed");
    let second = tokio::time::timeout(Duration::from_secs(10), watch.try_next())
        .await
        .expect("the second event never arrived")
        .expect("event")
        .expect("stream open");
    assert!(
        matches!(&second, WatchEvent::Modified(o) if o.metadata.resource_version.as_deref() == Some("2")),
        "{second:?}"
    );
    drop(watch);

    // A redirect is not passed on.
    let (code, body) = raw_get(&server, &format!("{PREFIX}/redirect"), "application/json").await;
    assert_eq!(
        (code, body.as_str()),
        (
            502,
            "the backend attempted to redirect this request, which is not permitted"
        )
    );

    // The endpoint goes: 503 at once, and the condition says why.
    let slices: Api<EndpointSlice> = Api::namespaced(server.client(), "default");
    slices
        .delete("wardle-1", &DeleteParams::default())
        .await
        .expect("slice deleted");
    let c = wait_for_reason(&server, "EndpointsNotFound").await;
    assert_eq!(c["status"], "False");
    let (code, body) = raw_get(
        &server,
        &format!("{PREFIX}/namespaces/default/flunders/one"),
        "application/json",
    )
    .await;
    assert_eq!((code, body.trim()), (503, "service unavailable"));

    server.stop().await;
}

/// A user the admin impersonates, with groups and an extra, reaches the aggregated server as
/// that user; one without the right is refused by rkcm and never reaches it.
#[tokio::test]
async fn the_user_rkcm_authorized_is_the_one_named() {
    let wardle = serve_wardle().await;
    let server = testing::start_with(rkcm_apiserver::Config {
        authorization_modes: vec![rkcm_apiserver::auth::authorization::Mode::Rbac],
        ..testing::config()
    })
    .await;
    create_service(&server, &wardle).await;
    create_slice(&server, &wardle).await;
    create_apiservice(&server, &wardle).await;
    wait_for_reason(&server, "Passed").await;

    let path = format!("{PREFIX}/namespaces/default/flunders/one");
    let as_user = |groups: &[&str]| {
        let mut request = http::Request::get(path.as_str())
            .header("Impersonate-User", "bob")
            .header("Impersonate-Extra-Scopes", "view");
        for g in groups {
            request = request.header("Impersonate-Group", *g);
        }
        request.body(Vec::new()).expect("request")
    };
    let refused = server
        .client()
        .request_text(as_user(&["dev"]))
        .await
        .expect_err("bob may not read flunders");
    assert!(
        matches!(&refused, kube::Error::Api(s) if s.code == 403),
        "{refused}"
    );
    assert!(
        !wardle
            .received()
            .iter()
            .any(|r| r.path_and_query.starts_with(&path)),
        "a refused request reached the aggregated server"
    );

    let got = server
        .client()
        .request_text(as_user(&["dev", "system:masters"]))
        .await
        .expect("allowed through system:masters");
    assert!(got.contains("\"Flunder\""), "{got}");
    let received = wardle
        .received()
        .into_iter()
        .find(|r| r.path_and_query.starts_with(&path))
        .expect("proxied");
    let all = |name: &str| -> Vec<String> {
        received
            .headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_string))
            .collect()
    };
    assert_eq!(all("x-remote-user"), ["bob"]);
    assert_eq!(
        all("x-remote-group"),
        ["dev", "system:masters", "system:authenticated"]
    );
    assert_eq!(all("x-remote-extra-scopes"), ["view"]);
    assert!(all("impersonate-user").is_empty());
    assert!(all("authorization").is_empty());
    server.stop().await;
}

/// No metrics yet: the served `metrics.k8s.io` lists nothing.
struct NoMetrics;

impl rkcm_apiserver::resource_metrics::MetricsSource for NoMetrics {
    fn snapshot(&self) -> Option<Arc<rkcm_apiserver::resource_metrics::UsageSnapshot>> {
        None
    }
}

#[tokio::test]
async fn an_apiservice_with_a_service_takes_over_a_locally_served_group() {
    let wardle = serve_wardle().await;
    let server = testing::start_with_metrics(testing::config(), Arc::new(NoMetrics)).await;
    let pods = "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods";
    let (code, local) = raw_get(&server, pods, "application/json").await;
    assert_eq!(code, 200, "{local}");
    assert!(!local.contains("from-the-metrics-server"), "{local}");

    create_service(&server, &wardle).await;
    create_slice(&server, &wardle).await;
    create_apiservice_for(&server, &wardle.ca_pem, "metrics.k8s.io", "v1beta1").await;
    wait_for_reason_of(&server, "v1beta1.metrics.k8s.io", "Passed").await;
    let (code, remote) = raw_get(&server, pods, "application/json").await;
    assert_eq!(code, 200, "{remote}");
    assert!(remote.contains("from-the-metrics-server"), "{remote}");

    // Listed once, with the resources the metrics server serves.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (_, body) = raw_get(&server, "/apis", AGGREGATED).await;
        let list: Value = serde_json::from_str(&body).expect("discovery");
        let metrics: Vec<&Value> = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|g| g["metadata"]["name"] == "metrics.k8s.io")
            .collect();
        if metrics.len() == 1
            && metrics[0]["versions"][0]["resources"]
                .as_array()
                .is_some_and(|r| r.len() == 1 && r[0]["resource"] == "pods")
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "metrics.k8s.io is not listed once from the metrics server: {metrics:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.stop().await;
}

/// The discovery check does not verify the server's certificate; the proxy verifies it against
/// `caBundle`, or not at all with `insecureSkipTLSVerify`.
#[tokio::test]
async fn proxied_requests_verify_the_ca_bundle_unless_told_not_to() {
    let wardle = serve_wardle().await;
    let server = testing::start().await;
    create_service(&server, &wardle).await;
    create_slice(&server, &wardle).await;
    let (_, other_ca) = support::https::acceptor(&["elsewhere"]);
    create_apiservice_for(&server, &other_ca, GROUP, VERSION).await;
    wait_for_reason(&server, "Passed").await;
    let path = format!("{PREFIX}/namespaces/default/flunders/one");
    let (code, body) = raw_get(&server, &path, "application/json").await;
    assert_eq!(
        (code, body.trim()),
        (
            503,
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
        )
    );

    let apiservices: Api<APIService> = Api::all(server.client());
    apiservices
        .patch(
            "v1alpha1.wardle.example.com",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                json!({"spec": {"caBundle": null, "insecureSkipTLSVerify": true}}),
            ),
        )
        .await
        .expect("patched");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (code, body) = raw_get(&server, &path, "application/json").await;
        if code == 200 {
            assert!(body.contains("\"Flunder\""), "{body}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "insecureSkipTLSVerify never took effect: {code} {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    server.stop().await;
}

#[tokio::test]
async fn a_server_that_stops_answering_fails_the_discovery_check() {
    let wardle = serve_wardle().await;
    let server = testing::start().await;
    create_service(&server, &wardle).await;
    create_apiservice(&server, &wardle).await;
    // An endpoint on a port nothing listens on.
    let closed = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = closed.local_addr().expect("address").port();
    drop(closed);
    let slices: Api<EndpointSlice> = Api::namespaced(server.client(), "default");
    let slice: EndpointSlice = serde_json::from_value(json!({
        "metadata": {"name": "wardle-1", "labels": {"kubernetes.io/service-name": "wardle"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.1"]}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    }))
    .expect("slice");
    slices
        .create(&PostParams::default(), &slice)
        .await
        .expect("slice stored");
    let c = wait_for_reason(&server, "FailedDiscoveryCheck").await;
    let url = format!("https://127.0.0.1:{port}/apis/wardle.example.com/v1alpha1");
    assert_eq!(
        c["message"],
        format!("failing or missing response from {url}: Get \"{url}\": dial tcp 127.0.0.1:{port}: connect: connection refused")
    );
    server.stop().await;
}

#[tokio::test]
async fn kubectl_lists_and_gets_aggregated_resources() {
    let bin = std::path::Path::new("/usr/bin/kubectl");
    if !bin.exists() {
        eprintln!("skipping: kubectl not installed");
        return;
    }
    let wardle = serve_wardle().await;
    let server = testing::start().await;
    create_service(&server, &wardle).await;
    create_slice(&server, &wardle).await;
    create_apiservice(&server, &wardle).await;
    wait_for_reason(&server, "Passed").await;
    wait_for_discovery(&server).await;

    let dir = tempfile::tempdir().expect("tempdir");
    server
        .write_kubeconfig(dir.path().join("kubeconfig"))
        .expect("kubeconfig");
    let kubectl = |args: &'static [&'static str]| {
        let dir = dir.path().to_path_buf();
        async move {
            let out = tokio::process::Command::new(bin)
                .args(args)
                .arg("--cache-dir")
                .arg(dir.join("cache"))
                .env("KUBECONFIG", dir.join("kubeconfig"))
                .env("HOME", &dir)
                .kill_on_drop(true)
                .output();
            let out = tokio::time::timeout(Duration::from_secs(60), out)
                .await
                .expect("kubectl finished within 60s (server likely hung)")
                .expect("kubectl runs");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            assert!(
                out.status.success(),
                "kubectl {args:?} failed:\n{stdout}\n{stderr}"
            );
            stdout
        }
    };
    let resources = kubectl(&["api-resources", "--api-group", GROUP]).await;
    assert!(
        resources.contains("flunders") && resources.contains("wardle.example.com/v1alpha1"),
        "{resources}"
    );
    let listed = kubectl(&["get", "apiservice", "v1alpha1.wardle.example.com"]).await;
    assert!(
        listed.contains("default/wardle") && listed.contains("True"),
        "{listed}"
    );
    let got = kubectl(&["get", "flunders"]).await;
    assert!(got.contains("one"), "{got}");
    let got = kubectl(&["get", "fl", "one", "-o", "json"]).await;
    let got: Value = serde_json::from_str(&got).expect("json");
    assert_eq!(got["kind"], "Flunder");
    server.stop().await;
}
