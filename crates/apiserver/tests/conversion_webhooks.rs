//! CRD conversion webhooks through the served API: a webhook server started here on
//! 127.0.0.1 with its own CA converts widgets between `v1` (stored, `spec.size`) and `v2`
//! (`spec.length`) when they are read, listed, watched or written in `v2`.

mod support;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rkcm_apiserver::testing::TestServer;
use serde_json::{json, Value};
use tokio::net::TcpListener;

/// How the webhook answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Convert,
    Fail,
    DropOne,
}

/// A conversion webhook server: its address, its CA, the reviews it got and how it answers.
struct ConversionServer {
    addr: SocketAddr,
    ca_pem: String,
    reviews: Arc<Mutex<Vec<Value>>>,
    mode: Arc<Mutex<Mode>>,
}

impl ConversionServer {
    fn reviews(&self) -> Vec<Value> {
        self.reviews.lock().expect("reviews").clone()
    }

    fn set_mode(&self, mode: Mode) {
        *self.mode.lock().expect("mode") = mode;
    }
}

/// `spec.size` (v1) ⇄ `spec.length` (v2); the answer also tries to change the resourceVersion,
/// which the server must ignore, and adds a label, which it must keep.
fn convert(obj: &Value, desired: &str) -> Value {
    let mut out = obj.clone();
    out["apiVersion"] = json!(desired);
    let spec = out["spec"].as_object_mut().cloned().unwrap_or_default();
    let mut converted = serde_json::Map::new();
    for (k, v) in spec {
        let k = match (k.as_str(), desired.ends_with("/v2")) {
            ("size", true) => "length".to_string(),
            ("length", false) => "size".to_string(),
            _ => k,
        };
        converted.insert(k, v);
    }
    out["spec"] = Value::Object(converted);
    out["metadata"]["resourceVersion"] = json!("424242");
    out["metadata"]["labels"]["converted"] = json!("true");
    out
}

async fn serve() -> ConversionServer {
    let (acceptor, ca_pem) = support::https::acceptor(&["127.0.0.1"]);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let reviews = Arc::new(Mutex::new(Vec::new()));
    let mode = Arc::new(Mutex::new(Mode::Convert));
    let (recorded, current) = (Arc::clone(&reviews), Arc::clone(&mode));
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let (recorded, current) = (Arc::clone(&recorded), Arc::clone(&current));
            tokio::spawn(async move {
                let Ok(stream) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(
                    move |req: http::Request<hyper::body::Incoming>| {
                        let (recorded, current) = (Arc::clone(&recorded), Arc::clone(&current));
                        async move {
                            let body = req.into_body().collect().await?.to_bytes();
                            let review: Value =
                                serde_json::from_slice(&body).unwrap_or(Value::Null);
                            recorded.lock().expect("reviews").push(review.clone());
                            let request = &review["request"];
                            let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
                            let mut converted: Vec<Value> = request["objects"]
                                .as_array()
                                .into_iter()
                                .flatten()
                                .map(|o| convert(o, desired))
                                .collect();
                            let mode = *current.lock().expect("mode");
                            let result = if mode == Mode::Fail {
                                json!({"status": "Failure", "message": "widgets cannot be converted today"})
                            } else {
                                json!({"status": "Success"})
                            };
                            if mode == Mode::DropOne {
                                converted.pop();
                            }
                            let answer = json!({
                                "apiVersion": review["apiVersion"],
                                "kind": "ConversionReview",
                                "response": {"uid": request["uid"], "result": result,
                                             "convertedObjects": converted},
                            });
                            Ok::<_, hyper::Error>(http::Response::new(Full::new(Bytes::from(
                                answer.to_string(),
                            ))))
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    ConversionServer {
        addr,
        ca_pem,
        reviews,
        mode,
    }
}

struct Answer {
    status: u16,
    body: Value,
}

async fn call(
    server: &TestServer,
    method: &str,
    path: &str,
    ct: &str,
    body: Option<Value>,
) -> Answer {
    call_accepting(server, method, path, ct, "application/json", body).await
}

async fn call_accepting(
    server: &TestServer,
    method: &str,
    path: &str,
    ct: &str,
    accept: &str,
    body: Option<Value>,
) -> Answer {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("Content-Type", ct)
        .header("Accept", accept)
        .body(
            body.map(|b| serde_json::to_vec(&b).expect("json"))
                .unwrap_or_default(),
        )
        .expect("request");
    let resp = server
        .client()
        .send(req.map(kube::client::Body::from))
        .await
        .expect("request sent");
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    Answer {
        status,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

async fn json(server: &TestServer, method: &str, path: &str, body: Option<Value>) -> Answer {
    call(server, method, path, "application/json", body).await
}

/// Polls `check` until it holds, or fails naming `what`.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting until {what}");
}

/// Widgets of `group`, stored in v1, served in v1 and v2, converted by `hook`.
async fn install_widgets(
    server: &TestServer,
    group: &str,
    hook: &ConversionServer,
    review_versions: Value,
) {
    let schema = |field: &str| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {field: {"type": "integer"}}}}}})
    };
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema("size")},
                {"name": "v2", "served": true, "storage": false, "schema": schema("length"),
                 "additionalPrinterColumns": [
                     {"name": "Length", "type": "integer", "jsonPath": ".spec.length"}]},
            ],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": {
                    "url": format!("https://{}/convert", hook.addr),
                    "caBundle": base64::engine::general_purpose::STANDARD.encode(&hook.ca_pem),
                },
                "conversionReviewVersions": review_versions,
            }},
        }
    });
    let created = json(
        server,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        Some(crd),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let list = format!("/apis/{group}/v2/namespaces/default/widgets");
    eventually("v2 widgets are served", || async {
        json(server, "GET", &list, None).await.status == 200
    })
    .await;
}

fn widget(group: &str, version: &str, name: &str, field: &str, n: i64) -> Value {
    json!({"apiVersion": format!("{group}/{version}"), "kind": "Widget",
           "metadata": {"name": name}, "spec": {field: n}})
}

/// Reads the watch at `path` until an event satisfies `want`.
async fn watch_until(server: &TestServer, path: &str, want: impl Fn(&Value) -> bool) -> Value {
    let req = http::Request::builder()
        .uri(path)
        .header("Accept", "application/json")
        .body(Vec::new())
        .expect("request");
    let resp = server
        .client()
        .send(req.map(kube::client::Body::from))
        .await
        .expect("watch started");
    assert_eq!(resp.status(), 200);
    let mut body = resp.into_body();
    let mut pending: Vec<u8> = Vec::new();
    let read = async {
        loop {
            let frame = body
                .frame()
                .await
                .expect("watch ended")
                .expect("watch body");
            let Ok(data) = frame.into_data() else {
                continue;
            };
            pending.extend_from_slice(&data);
            while let Some(pos) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=pos).collect();
                let event: Value = serde_json::from_slice(&line).expect("event");
                if want(&event) {
                    return event;
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .expect("no matching watch event: the conversion of watch events is likely stuck")
}

#[tokio::test]
async fn widgets_are_converted_by_the_webhook_in_every_verb() {
    let server = rkcm_apiserver::testing::start().await;
    let hook = serve().await;
    let group = "conv.example.com";
    install_widgets(&server, group, &hook, json!(["v1", "v1beta1"])).await;
    let v1 = format!("/apis/{group}/v1/namespaces/default/widgets");
    let v2 = format!("/apis/{group}/v2/namespaces/default/widgets");

    // Create in v2: converted to v1 to be stored, answered in v2.
    let created = json(
        &server,
        "POST",
        &v2,
        Some(widget(group, "v2", "a", "length", 3)),
    )
    .await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["apiVersion"], format!("{group}/v2"));
    assert_eq!(created.body["spec"], json!({"length": 3}));
    // The webhook's labels are kept; the rest of its metadata is not.
    assert_eq!(created.body["metadata"]["labels"]["converted"], "true");
    assert_ne!(created.body["metadata"]["resourceVersion"], "424242");
    let reviews = hook.reviews();
    assert_eq!(reviews[0]["apiVersion"], "apiextensions.k8s.io/v1");
    assert_eq!(reviews[0]["kind"], "ConversionReview");
    assert_eq!(
        reviews[0]["request"]["desiredAPIVersion"],
        format!("{group}/v1")
    );

    // Stored in v1; read in v1 without the webhook, in v2 through it.
    let calls = hook.reviews().len();
    let stored = json(&server, "GET", &format!("{v1}/a"), None).await;
    assert_eq!(stored.body["spec"], json!({"size": 3}));
    assert_eq!(
        hook.reviews().len(),
        calls,
        "a read in the storage version converts nothing"
    );
    let read = json(&server, "GET", &format!("{v2}/a"), None).await;
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(read.body["apiVersion"], format!("{group}/v2"));
    assert_eq!(read.body["spec"], json!({"length": 3}));
    assert_eq!(
        read.body["metadata"]["resourceVersion"],
        stored.body["metadata"]["resourceVersion"]
    );

    // A list converts all its items in one review.
    let b = json(
        &server,
        "POST",
        &v1,
        Some(widget(group, "v1", "b", "size", 7)),
    )
    .await;
    assert_eq!(b.status, 201, "{}", b.body);
    let calls = hook.reviews().len();
    let list = json(&server, "GET", &v2, None).await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(list.body["apiVersion"], format!("{group}/v2"));
    let lengths: Vec<&Value> = list.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| &i["spec"]["length"])
        .collect();
    assert_eq!(lengths, [&json!(3), &json!(7)]);
    let reviews = hook.reviews();
    assert_eq!(reviews.len(), calls + 1, "one review for the whole list");
    assert_eq!(
        reviews[calls]["request"]["objects"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );

    // Tables are printed from the converted objects, with the served version's columns.
    let table = call_accepting(
        &server,
        "GET",
        &v2,
        "application/json",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        None,
    )
    .await;
    assert_eq!(table.status, 200, "{}", table.body);
    assert_eq!(table.body["kind"], "Table");
    let columns: Vec<&Value> = table.body["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| &c["name"])
        .collect();
    assert_eq!(columns, [&json!("Name"), &json!("Length")]);
    assert_eq!(table.body["rows"][1]["cells"][1], 7);
    let one = call_accepting(
        &server,
        "GET",
        &format!("{v2}/a"),
        "application/json",
        "application/json;as=Table;v=v1;g=meta.k8s.io",
        None,
    )
    .await;
    assert_eq!(one.body["rows"][0]["cells"][1], 3, "{}", one.body);

    // Update and patch in v2 are stored in v1.
    let mut update = read.body.clone();
    update["spec"]["length"] = json!(4);
    let updated = json(&server, "PUT", &format!("{v2}/a"), Some(update)).await;
    assert_eq!(updated.status, 200, "{}", updated.body);
    assert_eq!(updated.body["spec"], json!({"length": 4}));
    let stored = json(&server, "GET", &format!("{v1}/a"), None).await;
    assert_eq!(stored.body["spec"], json!({"size": 4}));
    let patched = call(
        &server,
        "PATCH",
        &format!("{v2}/a"),
        "application/merge-patch+json",
        Some(json!({"spec": {"length": 5}})),
    )
    .await;
    assert_eq!(patched.status, 200, "{}", patched.body);
    assert_eq!(patched.body["spec"], json!({"length": 5}));
    let stored = json(&server, "GET", &format!("{v1}/a"), None).await;
    assert_eq!(stored.body["spec"], json!({"size": 5}));

    // A watch in v2 converts each event.
    let rv = stored.body["metadata"]["resourceVersion"]
        .as_str()
        .expect("resourceVersion")
        .to_string();
    let changed = json(
        &server,
        "PUT",
        &format!("{v1}/a"),
        Some({
            let mut s = stored.body.clone();
            s["spec"]["size"] = json!(6);
            s
        }),
    )
    .await;
    assert_eq!(changed.status, 200, "{}", changed.body);
    let event = watch_until(
        &server,
        &format!("{v2}?watch=true&resourceVersion={rv}"),
        |e| e["type"] == "MODIFIED",
    )
    .await;
    assert_eq!(event["object"]["apiVersion"], format!("{group}/v2"));
    assert_eq!(event["object"]["spec"], json!({"length": 6}));

    // After the storage version moves to v2, what is still stored in v1 is converted when read
    // in v2, and only that is sent.
    let crd_path =
        format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{group}");
    let mut crd = json(&server, "GET", &crd_path, None).await.body;
    crd["spec"]["versions"][0]["storage"] = json!(false);
    crd["spec"]["versions"][1]["storage"] = json!(true);
    let moved = json(&server, "PUT", &crd_path, Some(crd)).await;
    assert_eq!(moved.status, 200, "{}", moved.body);
    let mut n = 0;
    eventually("v2 is the storage version", || {
        n += 1;
        let name = format!("probe{n}");
        let (server, hook, v2) = (&server, &hook, &v2);
        async move {
            let calls = hook.reviews().len();
            let created = json(
                server,
                "POST",
                v2,
                Some(widget(group, "v2", &name, "length", 1)),
            )
            .await;
            assert_eq!(created.status, 201, "{}", created.body);
            hook.reviews().len() == calls
        }
    })
    .await;
    let read = json(&server, "GET", &format!("{v2}/a"), None).await;
    assert_eq!(read.status, 200, "{}", read.body);
    assert_eq!(read.body["apiVersion"], format!("{group}/v2"));
    assert_eq!(read.body["spec"], json!({"length": 6}));
    let calls = hook.reviews().len();
    let list = json(&server, "GET", &v2, None).await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert!(list.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .all(|i| i["apiVersion"] == format!("{group}/v2") && i["spec"].get("size").is_none()));
    let reviews = hook.reviews();
    assert_eq!(reviews.len(), calls + 1, "one review for the whole list");
    let sent: Vec<&Value> = reviews[calls]["request"]["objects"]
        .as_array()
        .expect("objects")
        .iter()
        .map(|o| &o["metadata"]["name"])
        .collect();
    assert_eq!(
        sent,
        [&json!("a"), &json!("b")],
        "only the objects stored in v1 are sent"
    );

    // The webhook's durations are reported.
    let metrics = json_text(&server, "/metrics").await;
    assert!(
        metrics.contains(&format!(
            "apiserver_crd_conversion_webhook_duration_seconds_count{{crd_name=\"widgets.{group}\",from_version=\"v1\",succeeded=\"true\",to_version=\"v2\"}}"
        )),
        "{metrics}"
    );
    server.stop().await;
}

async fn json_text(server: &TestServer, path: &str) -> String {
    let req = http::Request::builder()
        .uri(path)
        .body(Vec::new())
        .expect("request");
    let resp = server
        .client()
        .send(req.map(kube::client::Body::from))
        .await
        .expect("request sent");
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[tokio::test]
async fn failed_and_short_conversions_fail_the_request_as_kube_does() {
    let server = rkcm_apiserver::testing::start().await;
    let hook = serve().await;
    let group = "convfail.example.com";
    // The first review version the server speaks is used.
    install_widgets(&server, group, &hook, json!(["v9", "v1beta1", "v1"])).await;
    let v1 = format!("/apis/{group}/v1/namespaces/default/widgets");
    let v2 = format!("/apis/{group}/v2/namespaces/default/widgets");
    let a = json(
        &server,
        "POST",
        &v1,
        Some(widget(group, "v1", "a", "size", 1)),
    )
    .await;
    assert_eq!(a.status, 201, "{}", a.body);

    hook.set_mode(Mode::Fail);
    let read = json(&server, "GET", &format!("{v2}/a"), None).await;
    assert_eq!(read.status, 500, "{}", read.body);
    assert_eq!(read.body["kind"], "Status");
    assert_eq!(
        read.body["message"],
        format!("conversion for {group}/v1, Kind=Widget failed: conversion webhook for /, Kind= failed: widgets cannot be converted today")
    );
    assert!(read.body.get("reason").is_none(), "{}", read.body);
    assert_eq!(
        hook.reviews().last().expect("a review")["apiVersion"],
        "apiextensions.k8s.io/v1beta1"
    );
    let list = json(&server, "GET", &v2, None).await;
    assert_eq!(list.status, 500, "{}", list.body);
    assert_eq!(
        list.body["message"],
        format!("conversion for {group}/v1, Kind=WidgetList failed: conversion webhook for {group}/v1, Kind=WidgetList failed: widgets cannot be converted today")
    );
    // A create that cannot be converted stores nothing.
    let created = json(
        &server,
        "POST",
        &v2,
        Some(widget(group, "v2", "b", "length", 2)),
    )
    .await;
    assert_eq!(created.status, 500, "{}", created.body);
    assert_eq!(
        created.body["message"],
        format!("conversion for {group}/v2, Kind=Widget failed: conversion webhook for /, Kind= failed: widgets cannot be converted today")
    );
    assert_eq!(
        json(&server, "GET", &format!("{v1}/b"), None).await.status,
        404
    );

    hook.set_mode(Mode::DropOne);
    let read = json(&server, "GET", &format!("{v2}/a"), None).await;
    assert_eq!(read.status, 500, "{}", read.body);
    assert_eq!(
        read.body["message"],
        format!("conversion for {group}/v1, Kind=Widget returned 0 objects, expected 1")
    );

    // A watch whose event cannot be converted ends with an ERROR event.
    hook.set_mode(Mode::Fail);
    let event = watch_until(
        &server,
        &format!("{v2}?watch=true&resourceVersion=0"),
        |e| e["type"] == "ERROR",
    )
    .await;
    assert_eq!(event["object"]["code"], 500);
    assert_eq!(event["object"]["reason"], "InternalError");

    // Reads in the storage version never call the webhook.
    let stored = json(&server, "GET", &format!("{v1}/a"), None).await;
    assert_eq!(stored.status, 200, "{}", stored.body);
    server.stop().await;
}
