//! Deletion semantics, namespace lifecycle, binding, tables, bookmarks and request limits.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{
    Api, DeleteParams, ListParams, LogParams, PostParams, PropagationPolicy, WatchEvent,
    WatchParams,
};
use serde_json::json;

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn pod(name: &str, node: Option<&str>) -> Pod {
    let mut spec = json!({"containers": [{"name": "c", "image": "nginx"}]});
    if let Some(n) = node {
        spec["nodeName"] = json!(n);
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("pod")
}

fn configmap(name: &str, finalizers: &[&str]) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "finalizers": finalizers, "labels": {"set": "a"}}}),
    )
    .expect("cm")
}

#[tokio::test]
async fn bound_pods_terminate_gracefully_until_a_grace_0_delete() {
    let server = rkcm_apiserver::testing::start().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    pods.create(&PostParams::default(), &pod("bound", Some("n1")))
        .await
        .expect("create");
    pods.delete("bound", &DeleteParams::default())
        .await
        .expect("delete");
    let p = pods
        .get("bound")
        .await
        .expect("still there while terminating");
    assert!(p.metadata.deletion_timestamp.is_some());
    assert_eq!(p.metadata.deletion_grace_period_seconds, Some(30));
    pods.delete("bound", &DeleteParams::default().grace_period(0))
        .await
        .expect("force");
    assert_eq!(
        api_err(pods.get("bound").await.expect_err("gone")).code,
        404
    );

    // Unbound pods go at once.
    pods.create(&PostParams::default(), &pod("unbound", None))
        .await
        .expect("create");
    pods.delete("unbound", &DeleteParams::default())
        .await
        .expect("delete");
    assert_eq!(
        api_err(pods.get("unbound").await.expect_err("gone")).code,
        404
    );
}

#[tokio::test]
async fn finalizers_hold_objects_and_propagation_adds_gc_finalizers() {
    let server = rkcm_apiserver::testing::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    cms.create(
        &PostParams::default(),
        &configmap("held", &["example.com/hold"]),
    )
    .await
    .expect("create");
    cms.delete("held", &DeleteParams::default())
        .await
        .expect("delete");
    let held = cms.get("held").await.expect("held by finalizer");
    assert!(held.metadata.deletion_timestamp.is_some());
    let mut released = held.clone();
    released.metadata.finalizers = None;
    let _ = cms
        .replace("held", &PostParams::default(), &released)
        .await
        .expect("remove finalizer");
    assert_eq!(api_err(cms.get("held").await.expect_err("gone")).code, 404);

    cms.create(&PostParams::default(), &configmap("orphan", &[]))
        .await
        .expect("create");
    cms.delete(
        "orphan",
        &DeleteParams {
            propagation_policy: Some(PropagationPolicy::Orphan),
            ..Default::default()
        },
    )
    .await
    .expect("delete");
    let o = cms
        .get("orphan")
        .await
        .expect("kept for the garbage collector");
    assert_eq!(o.metadata.finalizers, Some(vec!["orphan".to_string()]));

    cms.create(&PostParams::default(), &configmap("fg", &[]))
        .await
        .expect("create");
    cms.delete("fg", &DeleteParams::foreground())
        .await
        .expect("delete");
    let f = cms.get("fg").await.expect("kept for the garbage collector");
    assert_eq!(
        f.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_string()])
    );

    // deletecollection with a label selector deletes only what matches.
    let mut other = configmap("other", &[]);
    other.metadata.labels = Some([("set".to_string(), "b".to_string())].into());
    cms.create(&PostParams::default(), &other)
        .await
        .expect("create");
    cms.create(&PostParams::default(), &configmap("plain", &[]))
        .await
        .expect("create");
    cms.delete_collection(
        &DeleteParams::default(),
        &ListParams::default().labels("set=a"),
    )
    .await
    .expect("deletecollection");
    assert!(cms.get("plain").await.is_err());
    cms.get("other").await.expect("not selected, kept");
}

#[tokio::test]
async fn namespace_lifecycle() {
    let server = rkcm_apiserver::testing::start().await;
    let nss: Api<Namespace> = Api::all(server.client());
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "doomed"}})).expect("ns");
    let created = nss
        .create(&PostParams::default(), &ns)
        .await
        .expect("create");
    assert_eq!(
        created.spec.and_then(|s| s.finalizers),
        Some(vec!["kubernetes".to_string()])
    );
    assert_eq!(
        created.status.and_then(|s| s.phase).as_deref(),
        Some("Active")
    );

    nss.delete("doomed", &DeleteParams::default())
        .await
        .expect("delete");
    let terminating = nss.get("doomed").await.expect("stays while finalized");
    assert_eq!(
        terminating.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Terminating")
    );
    assert!(terminating.metadata.deletion_timestamp.is_some());

    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "doomed");
    let e = api_err(
        cms.create(&PostParams::default(), &configmap("late", &[]))
            .await
            .expect_err("terminating"),
    );
    assert_eq!(e.code, 403);
    assert_eq!(e.reason, "Forbidden");
    assert_eq!(
        e.message,
        "configmaps \"late\" is forbidden: unable to create new content in namespace doomed because it is being terminated"
    );
    let causes = e.details.expect("details").causes;
    assert_eq!(causes[0].reason, "NamespaceTerminating");

    let e = api_err(
        nss.delete("default", &DeleteParams::default())
            .await
            .expect_err("system namespace"),
    );
    assert_eq!(e.code, 403);
    assert!(
        e.message.ends_with("this namespace may not be deleted"),
        "{}",
        e.message
    );

    // The namespace controller's last step: /finalize with no finalizers removes it.
    let mut finalized = terminating.clone();
    finalized.spec = Some(Default::default());
    let _: Namespace = nss
        .replace_subresource("finalize", "doomed", &PostParams::default(), &finalized)
        .await
        .expect("finalize");
    assert_eq!(
        api_err(nss.get("doomed").await.expect_err("gone")).code,
        404
    );
}

#[tokio::test]
async fn binding_sets_the_node_once() {
    let server = rkcm_apiserver::testing::start().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    pods.create(&PostParams::default(), &pod("b", None))
        .await
        .expect("create");
    let binding = |node: &str| {
        json!({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": "b"},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}
        })
    };
    let _: kube::core::Status = pods
        .create_subresource("binding", "b", &PostParams::default(), &binding("n1"))
        .await
        .expect("bind");
    let p = pods.get("b").await.expect("get");
    assert_eq!(p.spec.and_then(|s| s.node_name).as_deref(), Some("n1"));
    let scheduled = p.status.and_then(|s| s.conditions).unwrap_or_default();
    assert!(scheduled
        .iter()
        .any(|c| c.type_ == "PodScheduled" && c.status == "True"));
    let e = pods
        .create_subresource::<_, kube::core::Status>(
            "binding",
            "b",
            &PostParams::default(),
            &binding("n2"),
        )
        .await
        .expect_err("already bound");
    assert_eq!(api_err(e).code, 409);
}

#[tokio::test]
async fn bookmarks_arrive_when_asked_for() {
    let config = rkcm_apiserver::Config {
        bookmark_interval: Duration::from_millis(50),
        ..rkcm_apiserver::testing::config()
    };
    let server = rkcm_apiserver::testing::start_with(config).await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let list = pods.list(&ListParams::default()).await.expect("list");
    let rv = list.metadata.resource_version.expect("list rv");
    let mut stream = pods
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch")
        .boxed();
    let ev = tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .expect("bookmark within 10s")
        .expect("ok")
        .expect("open");
    match ev {
        WatchEvent::Bookmark(b) => assert!(!b.metadata.resource_version.is_empty()),
        other => panic!("expected a bookmark, got {other:?}"),
    }
}

async fn raw(
    server: &rkcm_apiserver::testing::TestServer,
    req: http::Request<Vec<u8>>,
) -> (u16, serde_json::Value) {
    let client = server.client();
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .expect("request");
    let status = resp.status().as_u16();
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    let first_line = body.split(|b| *b == b'\n').next().unwrap_or_default();
    (
        status,
        serde_json::from_slice(first_line).unwrap_or(serde_json::Value::Null),
    )
}

#[tokio::test]
async fn tables_limits_and_malformed_bodies() {
    let server = rkcm_apiserver::testing::start().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    pods.create(&PostParams::default(), &pod("t1", Some("n1")))
        .await
        .expect("create");

    let table_accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    let req = http::Request::get("/api/v1/namespaces/default/pods")
        .header("Accept", table_accept)
        .body(Vec::new())
        .expect("request");
    let (code, table) = raw(&server, req).await;
    assert_eq!(code, 200);
    assert_eq!(table["kind"], "Table");
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        &columns[..5],
        ["Name", "Ready", "Status", "Restarts", "Age"]
    );
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    assert!(table["metadata"]["resourceVersion"].is_string());

    let req = http::Request::get("/api/v1/namespaces/default/pods?watch=true")
        .header("Accept", table_accept)
        .body(Vec::new())
        .expect("request");
    let (code, event) = raw_first_event(&server, req).await;
    assert_eq!(code, 200);
    assert_eq!(event["type"], "ADDED");
    assert_eq!(event["object"]["kind"], "Table");
    assert_eq!(event["object"]["rows"].as_array().map(Vec::len), Some(1));

    let req = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("Content-Type", "application/json")
        .body(b"{\"metadata\": {".to_vec())
        .expect("request");
    let (code, status) = raw(&server, req).await;
    assert_eq!(code, 400);
    assert_eq!(status["reason"], "BadRequest");

    let big = format!(
        "{{\"metadata\":{{\"name\":\"big\"}},\"data\":{{\"x\":\"{}\"}}}}",
        "a".repeat(4 << 20)
    );
    let req = http::Request::post("/api/v1/namespaces/default/configmaps")
        .header("Content-Type", "application/json")
        .body(big.into_bytes())
        .expect("request");
    let (code, status) = raw(&server, req).await;
    assert_eq!(code, 413);
    assert_eq!(status["reason"], "RequestEntityTooLarge");
}

async fn raw_first_event(
    server: &rkcm_apiserver::testing::TestServer,
    req: http::Request<Vec<u8>>,
) -> (u16, serde_json::Value) {
    let client = server.client();
    let resp = client
        .send(req.map(kube::client::Body::from))
        .await
        .expect("request");
    let status = resp.status().as_u16();
    let mut body = resp.into_body();
    let mut buf = Vec::new();
    let read = async {
        while !buf.contains(&b'\n') {
            match http_body_util::BodyExt::frame(&mut body).await {
                Some(Ok(f)) => {
                    if let Ok(d) = f.into_data() {
                        buf.extend_from_slice(&d);
                    }
                }
                _ => break,
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("first watch line within 10s");
    let line = buf.split(|b| *b == b'\n').next().unwrap_or_default();
    (
        status,
        serde_json::from_slice(line).expect("watch line is JSON"),
    )
}

async fn raw_lines(
    server: &rkcm_apiserver::testing::TestServer,
    path: &str,
    n: usize,
) -> Vec<serde_json::Value> {
    let req = http::Request::get(path).body(Vec::new()).expect("request");
    let resp = server
        .client()
        .send(req.map(kube::client::Body::from))
        .await
        .expect("request");
    assert_eq!(resp.status().as_u16(), 200);
    let mut body = resp.into_body();
    let mut buf = Vec::new();
    let read = async {
        while buf.iter().filter(|b| **b == b'\n').count() < n {
            match http_body_util::BodyExt::frame(&mut body).await {
                Some(Ok(f)) => {
                    if let Ok(d) = f.into_data() {
                        buf.extend_from_slice(&d);
                    }
                }
                _ => break,
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("watch lines within 10s");
    buf.split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .take(n)
        .map(|l| serde_json::from_slice(l).expect("watch line is JSON"))
        .collect()
}

#[tokio::test]
async fn streaming_lists_end_with_an_initial_events_bookmark() {
    let server = rkcm_apiserver::testing::start().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    for name in ["s1", "s2"] {
        pods.create(&PostParams::default(), &pod(name, None))
            .await
            .expect("create");
    }
    let lines = raw_lines(
        &server,
        "/api/v1/namespaces/default/pods?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan",
        3,
    )
    .await;
    assert_eq!(lines[0]["type"], "ADDED");
    assert_eq!(lines[1]["type"], "ADDED");
    assert_eq!(lines[2]["type"], "BOOKMARK");
    assert_eq!(
        lines[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );

    // A label selector transition turns a MODIFIED into a DELETED for the watcher.
    let rv = lines[2]["object"]["metadata"]["resourceVersion"]
        .as_str()
        .expect("bookmark rv")
        .to_string();
    let mut p = pods.get("s1").await.expect("get");
    p.metadata.labels = Some([("moved".to_string(), "yes".to_string())].into());
    pods.replace("s1", &PostParams::default(), &p)
        .await
        .expect("relabel");
    let lines = raw_lines(
        &server,
        &format!(
            "/api/v1/namespaces/default/pods?watch=1&resourceVersion={rv}&labelSelector=!moved"
        ),
        1,
    )
    .await;
    assert_eq!(lines[0]["type"], "DELETED");
    assert_eq!(lines[0]["object"]["metadata"]["name"], "s1");
}

#[tokio::test]
async fn field_validation_modes() {
    let server = rkcm_apiserver::testing::start().await;
    let client = server.client();
    let body = |name: &str| {
        format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","creationTimestamp":null}},"data":{{"a":"b"}},"dataa":{{"x":"y"}}}}"#)
            .into_bytes()
    };
    let post = |query: &str, name: &str| {
        http::Request::post(format!("/api/v1/namespaces/default/configmaps{query}"))
            .header("Content-Type", "application/json")
            .body(body(name))
            .expect("request")
            .map(kube::client::Body::from)
    };

    let resp = client
        .send(post("?fieldValidation=Strict", "strict"))
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 400);
    let status: serde_json::Value = serde_json::from_slice(
        &http_body_util::BodyExt::collect(resp.into_body())
            .await
            .expect("body")
            .to_bytes(),
    )
    .expect("status");
    assert_eq!(
        status["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"dataa\""
    );

    // Warn (the default): created, a Warning header names the field, and the field is dropped.
    let resp = client.send(post("", "warned")).await.expect("send");
    assert_eq!(resp.status().as_u16(), 201);
    let warning = resp
        .headers()
        .get("warning")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert_eq!(warning, r#"299 - "unknown field \"dataa\"""#);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let stored = serde_json::to_value(cms.get("warned").await.expect("get")).expect("json");
    assert!(stored.get("dataa").is_none(), "{stored}");

    let resp = client
        .send(post("?fieldValidation=Ignore", "ignored"))
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 201);
    assert!(resp.headers().get("warning").is_none());
}

#[tokio::test]
async fn put_creates_only_where_kube_allows_it() {
    let server = rkcm_apiserver::testing::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let e = api_err(
        cms.replace("absent", &PostParams::default(), &configmap("absent", &[]))
            .await
            .expect_err("no create on update"),
    );
    assert_eq!(e.code, 404);

    let events: Api<k8s_openapi::api::core::v1::Event> =
        Api::namespaced(server.client(), "default");
    let ev: k8s_openapi::api::core::v1::Event = serde_json::from_value(json!({
        "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "Test", "message": "m", "type": "Normal",
        "source": {"component": "test"}
    }))
    .expect("event");
    events
        .replace("e1", &PostParams::default(), &ev)
        .await
        .expect("events are created on update");
    events.get("e1").await.expect("created");

    // A PUT that creates answers 201 Created, one that updates 200 OK (handlers/update.go).
    let put = |name: &str, body: &serde_json::Value| {
        http::Request::put(format!("/api/v1/namespaces/default/services/{name}"))
            .header("content-type", "application/json")
            .body(body.to_string().into_bytes())
            .expect("request")
    };
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s1"},
        "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}});
    let (code, created) = raw(&server, put("s1", &svc)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["name"], "s1");
    let (code, updated) = raw(&server, put("s1", &created)).await;
    assert_eq!(code, 200, "{updated}");
}

/// A body carrying another object's `metadata.uid` is refused as kube refuses it: a PUT's uid is a
/// precondition (409 Conflict), a patched object's uid an immutable field (422 Invalid).
#[tokio::test]
async fn updates_carrying_another_uid_are_refused() {
    use kube::api::{Patch, PatchParams};
    let server = rkcm_apiserver::testing::start().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let created = pods
        .create(&PostParams::default(), &pod("guarded", None))
        .await
        .expect("create");
    let uid = created.metadata.uid.clone().expect("uid");
    let other = "00000000-0000-0000-0000-000000000000";

    // PUT: 409 with the precondition message of `storage.Preconditions.Check`.
    let mut replaced = created.clone();
    replaced.metadata.uid = Some(other.into());
    let e = api_err(
        pods.replace("guarded", &PostParams::default(), &replaced)
            .await
            .expect_err("put with another uid"),
    );
    assert_eq!((e.code, e.reason.as_str()), (409, "Conflict"), "{e:?}");
    assert_eq!(
        e.message,
        format!("Operation cannot be fulfilled on pods \"guarded\": Precondition failed: UID in precondition: {other}, UID in object meta: {uid}")
    );
    // The same for PUT /status.
    let e = api_err(
        pods.replace_status("guarded", &PostParams::default(), &replaced)
            .await
            .expect_err("put status with another uid"),
    );
    assert_eq!(e.code, 409, "{e:?}");

    // PATCH (strategic merge, as the controller-ref manager sends it): 422 field is immutable.
    let adopt = json!({"metadata": {
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
            "uid": "11111111-1111-1111-1111-111111111111", "controller": true, "blockOwnerDeletion": true}],
        "uid": other,
    }});
    let e = api_err(
        pods.patch(
            "guarded",
            &PatchParams::default(),
            &Patch::Strategic(&adopt),
        )
        .await
        .expect_err("patch with another uid"),
    );
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"), "{e:?}");
    assert_eq!(
        e.message,
        format!("Pod \"guarded\" is invalid: metadata.uid: Invalid value: \"{other}\": field is immutable")
    );
    let e = api_err(
        pods.patch(
            "guarded",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"uid": other}})),
        )
        .await
        .expect_err("merge patch with another uid"),
    );
    assert_eq!(e.code, 422, "{e:?}");
    let json_patch = json!([{"op": "replace", "path": "/metadata/uid", "value": other}]);
    let req = http::Request::patch("/api/v1/namespaces/default/pods/guarded")
        .header("content-type", "application/json-patch+json")
        .body(json_patch.to_string().into_bytes())
        .expect("request");
    let (code, status) = raw(&server, req).await;
    assert_eq!(
        (code, &status["reason"]),
        (422, &json!("Invalid")),
        "{status}"
    );
    let e = api_err(
        pods.patch_status(
            "guarded",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"uid": other}, "status": {"phase": "Failed"}})),
        )
        .await
        .expect_err("status patch with another uid"),
    );
    assert_eq!(e.code, 422, "{e:?}");
    let unchanged = pods.get("guarded").await.expect("get");
    assert_eq!(unchanged.metadata.uid.as_deref(), Some(uid.as_str()));
    assert!(unchanged.metadata.owner_references.is_none());

    // The right uid, or none, goes through.
    let adopt = json!({"metadata": {
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
            "uid": "11111111-1111-1111-1111-111111111111", "controller": true, "blockOwnerDeletion": true}],
        "uid": uid,
    }});
    let adopted = pods
        .patch(
            "guarded",
            &PatchParams::default(),
            &Patch::Strategic(&adopt),
        )
        .await
        .expect("patch with the pod's uid");
    assert_eq!(
        adopted.metadata.owner_references.as_ref().map(Vec::len),
        Some(1)
    );
    let mut blind = adopted.clone();
    blind.metadata.uid = None;
    blind.metadata.resource_version = None;
    let replaced = pods
        .replace("guarded", &PostParams::default(), &blind)
        .await
        .expect("put without a uid");
    assert_eq!(replaced.metadata.uid.as_deref(), Some(uid.as_str()));
}

/// `pods/log`, `exec`, `attach` and `portforward` are routed and advertised as kube's; logs are
/// what the container printed, the others are answered with a Status (simulated nodes run no
/// containers).
#[tokio::test]
async fn pod_streams_are_answered_with_a_status() {
    let server = rkcm_apiserver::testing::start().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    pods.create(&PostParams::default(), &pod("placed", Some("n1")))
        .await
        .expect("create");
    pods.create(&PostParams::default(), &pod("pending", None))
        .await
        .expect("create");
    let base = "/api/v1/namespaces/default/pods";
    let get = |uri: String| http::Request::get(uri).body(Vec::new()).expect("request");
    let post = |uri: String| http::Request::post(uri).body(Vec::new()).expect("request");

    // A container that printed nothing has an empty log, as a kubelet answers.
    let resp = server
        .client()
        .send(get(format!("{base}/placed/log")).map(kube::client::Body::from))
        .await
        .expect("request");
    assert_eq!(resp.status().as_u16(), 200);
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    assert!(body.is_empty(), "{body:?}");
    // An upgrade request gets a plain answer, not a hanging connection.
    let upgrade = http::Request::post(format!(
        "{base}/placed/exec?command=ls&stdout=true&stderr=true"
    ))
    .header("connection", "Upgrade")
    .header("upgrade", "SPDY/3.1")
    .header("x-stream-protocol-version", "v4.channel.k8s.io")
    .body(Vec::new())
    .expect("request");
    let (code, status) = tokio::time::timeout(Duration::from_secs(10), raw(&server, upgrade))
        .await
        .expect("answered");
    assert_eq!(code, 400, "{status}");
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.ends_with("so commands cannot be executed in it")),
        "{status}"
    );
    for sub in ["exec", "attach", "portforward"] {
        let (code, _) = raw(&server, get(format!("{base}/placed/{sub}"))).await;
        assert_eq!(code, 400, "{sub}");
        // kube's checks come first: an unscheduled pod has no host, a missing pod is 404.
        let (code, status) = raw(&server, post(format!("{base}/pending/{sub}"))).await;
        assert_eq!(
            (code, &status["message"]),
            (400, &json!("pod pending does not have a host assigned")),
            "{sub}"
        );
        let (code, status) = raw(&server, post(format!("{base}/absent/{sub}"))).await;
        assert_eq!(
            (code, &status["message"]),
            (404, &json!("pods \"absent\" not found")),
            "{sub}"
        );
    }
    let (code, status) = raw(&server, get(format!("{base}/placed/log?container=other"))).await;
    assert_eq!(
        (code, &status["message"]),
        (400, &json!("container other is not valid for pod placed"))
    );
    let (code, status) = raw(&server, get(format!("{base}/placed/log?tailLines=-1"))).await;
    assert_eq!(
        (code, &status["message"]),
        (
            422,
            &json!("PodLogOptions \"placed\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0")
        )
    );
    assert_eq!(status["details"]["kind"], "PodLogOptions");
    let (code, _) = raw(
        &server,
        get(format!(
            "{base}/placed/log?sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z"
        )),
    )
    .await;
    assert_eq!(code, 422);
    let (code, _) = raw(&server, get(format!("{base}/placed/log?limitBytes=x"))).await;
    assert_eq!(code, 400);
    // The logs of a pod without a node are empty, as kube's.
    let (code, _) = raw(&server, get(format!("{base}/pending/log"))).await;
    assert_eq!(code, 200);
    let (code, _) = raw(&server, post(format!("{base}/placed/log"))).await;
    assert_eq!(code, 405);

    let (_, discovery) = raw(&server, get("/api/v1".into())).await;
    let verbs = |name: &str| {
        discovery["resources"]
            .as_array()
            .and_then(|r| r.iter().find(|e| e["name"] == name))
            .map(|e| (e["kind"].clone(), e["verbs"].clone()))
    };
    assert_eq!(verbs("pods/log"), Some((json!("Pod"), json!(["get"]))));
    for (name, kind) in [
        ("pods/exec", "PodExecOptions"),
        ("pods/attach", "PodAttachOptions"),
        ("pods/portforward", "PodPortForwardOptions"),
    ] {
        assert_eq!(
            verbs(name),
            Some((json!(kind), json!(["create", "get"]))),
            "{name}"
        );
    }
}

/// `/openapi/v2` answers JSON or gnostic protobuf by `Accept`, and 406 otherwise.
#[tokio::test]
async fn openapi_v2_is_served_as_json_or_protobuf() {
    let server = rkcm_apiserver::testing::start().await;
    let fetch = |accept: &'static str| {
        let client = server.client();
        async move {
            let req = http::Request::get("/openapi/v2")
                .header("accept", accept)
                .body(kube::client::Body::empty())
                .expect("request");
            let resp = client.send(req).await.expect("request");
            let status = resp.status().as_u16();
            let ct = resp
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            let body = http_body_util::BodyExt::collect(resp.into_body())
                .await
                .expect("body")
                .to_bytes();
            (status, ct, body)
        }
    };
    let (code, ct, body) =
        fetch("application/com.github.proto-openapi.spec.v2@v1.0+protobuf").await;
    assert_eq!(code, 200);
    assert_eq!(
        ct,
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    assert!(body.starts_with(b"\x0a\x032.0"), "Document.swagger first");
    let (code, ct, body) = fetch("application/json").await;
    assert_eq!((code, ct.as_str()), (200, "application/json"));
    assert!(body.starts_with(b"{"));
    let (code, _, _) = fetch("application/xml").await;
    assert_eq!(code, 406);
}

/// A PUT of `/scale` whose Scale carries another uid is refused (409, the precondition); a
/// patched Scale's uid is not looked at, as kube's `scaleUpdatedObjectInfo` builds the object
/// from the stored one.
#[tokio::test]
async fn scale_puts_carrying_another_uid_are_refused() {
    let server = rkcm_apiserver::testing::start().await;
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let req = |method: &str, uri: String, ct: &str, body: serde_json::Value| {
        http::Request::builder()
            .method(method)
            .uri(uri)
            .header("content-type", ct)
            .body(body.to_string().into_bytes())
            .expect("request")
    };
    let (code, created) = raw(
        &server,
        req("POST", path.into(), "application/json", deploy),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let other = "00000000-0000-0000-0000-000000000000";
    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": {"name": "web", "namespace": "default", "uid": other}, "spec": {"replicas": 3}});
    let (code, status) = raw(
        &server,
        req(
            "PUT",
            format!("{path}/web/scale"),
            "application/json",
            scale,
        ),
    )
    .await;
    assert_eq!(
        (code, &status["reason"]),
        (409, &json!("Conflict")),
        "{status}"
    );
    let patch = json!({"metadata": {"uid": other}, "spec": {"replicas": 2}});
    let (code, scaled) = raw(
        &server,
        req(
            "PATCH",
            format!("{path}/web/scale"),
            "application/merge-patch+json",
            patch,
        ),
    )
    .await;
    assert_eq!(code, 200, "{scaled}");
    assert_eq!(scaled["spec"]["replicas"], 2);
    assert_eq!(scaled["metadata"]["uid"], created["metadata"]["uid"]);
}

#[tokio::test]
async fn templates_and_pods_come_back_with_the_value_structs_go_writes() {
    // kube-apiserver encodes Go structs: a container without resources reads back with
    // `resources: {}`, a pod template's metadata with `creationTimestamp: null`.
    use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
    let server = rkcm_apiserver::testing::start().await;
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"));
    let deployments: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &ar);
    let d: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
    }))
    .expect("deployment");
    deployments
        .create(&PostParams::default(), &d)
        .await
        .expect("create");
    let stored = deployments.get("web").await.expect("get");
    let template = &stored.data["spec"]["template"];
    assert_eq!(
        template["metadata"],
        json!({"labels": {"app": "web"}, "creationTimestamp": null})
    );
    assert_eq!(template["spec"]["containers"][0]["resources"], json!({}));
    assert_eq!(template["spec"]["securityContext"], json!({}));

    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    pods.create(&PostParams::default(), &pod("p", None))
        .await
        .expect("create");
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Pod"));
    let raw: Api<DynamicObject> = Api::namespaced_with(server.client(), "default", &ar);
    let stored = raw.get("p").await.expect("get");
    assert_eq!(stored.data["spec"]["containers"][0]["resources"], json!({}));
    assert!(stored.data["status"].is_object());
}

/// `pods/log` serves the output the simulated kubelet recorded in `rkcm.io/container-logs`.
#[tokio::test]
async fn pod_logs_serve_recorded_output() {
    let server = rkcm_apiserver::testing::start().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    let mut logged = pod("logged", Some("n1"));
    let runs = json!({"c": [{"restartCount": 0, "log": "2026-01-01T00:00:00Z hello\n2026-01-01T00:00:01Z bye\n"}]});
    logged.metadata.annotations =
        Some([("rkcm.io/container-logs".to_string(), runs.to_string())].into());
    pods.create(&PostParams::default(), &logged)
        .await
        .expect("create");
    let container = logged.spec.as_ref().expect("spec").containers[0]
        .name
        .clone();
    assert_eq!(container, "c", "the fixture's container");
    let all = pods
        .logs("logged", &LogParams::default())
        .await
        .expect("logs");
    assert_eq!(all, "hello\nbye\n");
    let tail = LogParams {
        tail_lines: Some(1),
        timestamps: true,
        follow: true,
        ..LogParams::default()
    };
    assert_eq!(
        pods.logs("logged", &tail).await.expect("logs"),
        "2026-01-01T00:00:01Z bye\n"
    );
    let previous = LogParams {
        previous: true,
        ..LogParams::default()
    };
    let err = pods
        .logs("logged", &previous)
        .await
        .expect_err("no previous run");
    assert_eq!(
        api_err(err).message,
        "previous terminated container \"c\" in pod \"logged\" not found"
    );
}
