//! A scriptable fake API server for `/api/v1/pods`: paginated list and chunked watch, with
//! dropped watches, bookmarks and 410 Gone on demand.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use k8s_openapi::api::core::v1::Pod;
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::mpsc;

/// What the fake server holds and has seen.
#[derive(Default)]
pub struct FakeState {
    pub pods: BTreeMap<String, Pod>,
    pub rv: u64,
    watchers: Vec<mpsc::UnboundedSender<String>>,
    /// The next watch gets an ERROR 410 event and ends.
    pub expire_next_watch: bool,
    /// Every watch ends as soon as it is opened, without an event.
    pub close_watches_at_once: bool,
    /// Lists at a resource version (not "0", not empty) below this answer 410 Expired.
    pub oldest_listable_rv: u64,
    /// Query parameters of every list request.
    pub lists: Vec<HashMap<String, String>>,
    /// Query parameters of every watch request.
    pub watches: Vec<HashMap<String, String>>,
}

/// A running fake server; dropping it does not stop it (the test runtime ends it).
#[derive(Clone)]
pub struct FakePods {
    pub state: Arc<Mutex<FakeState>>,
    pub url: String,
}

pub fn pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

impl FakePods {
    pub async fn start() -> Self {
        let state = Arc::new(Mutex::new(FakeState::default()));
        let app = Router::new()
            .route("/api/v1/pods", get(list_or_watch))
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let url = format!("http://{}", listener.local_addr().expect("local addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { state, url }
    }

    pub fn client(&self) -> kube::Client {
        let config = kube::Config::new(self.url.parse().expect("server url"));
        kube::Client::try_from(config).expect("client for the fake server")
    }

    fn broadcast(state: &mut FakeState, line: String) {
        state.watchers.retain(|w| w.send(line.clone()).is_ok());
    }

    fn upsert(&self, mut p: Pod, kind: &str) {
        let mut s = self.state.lock();
        s.rv += 1;
        p.metadata.resource_version = Some(s.rv.to_string());
        let name = p.metadata.name.clone().unwrap_or_default();
        s.pods.insert(name, p.clone());
        let line = json!({"type": kind, "object": p}).to_string() + "\n";
        Self::broadcast(&mut s, line);
    }

    /// Creates a pod (ADDED to watchers).
    pub fn add(&self, name: &str) {
        self.upsert(pod(name), "ADDED");
    }

    /// Creates `p` as given (ADDED to watchers).
    pub fn add_pod(&self, p: Pod) {
        self.upsert(p, "ADDED");
    }

    /// Changes a pod's labels (MODIFIED to watchers).
    pub fn modify(&self, name: &str) {
        let mut p = self
            .state
            .lock()
            .pods
            .get(name)
            .cloned()
            .expect("pod exists");
        p.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("touched".into(), "yes".into());
        self.upsert(p, "MODIFIED");
    }

    /// Deletes a pod (DELETED to watchers).
    pub fn delete(&self, name: &str) {
        let mut s = self.state.lock();
        let mut p = s.pods.remove(name).expect("pod exists");
        s.rv += 1;
        p.metadata.resource_version = Some(s.rv.to_string());
        let line = json!({"type": "DELETED", "object": p}).to_string() + "\n";
        Self::broadcast(&mut s, line);
    }

    /// Deletes a pod without telling any watcher (as if it happened while the watch was down).
    pub fn delete_silently(&self, name: &str) {
        let mut s = self.state.lock();
        s.pods.remove(name);
        s.rv += 1;
    }

    /// Sends a BOOKMARK at a new resource version; returns it.
    pub fn bookmark(&self) -> u64 {
        let mut s = self.state.lock();
        s.rv += 10;
        let rv = s.rv;
        let line = json!({"type": "BOOKMARK", "object": {
            "kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": rv.to_string()}
        }})
        .to_string()
            + "\n";
        Self::broadcast(&mut s, line);
        rv
    }

    /// Sends a line that is not a watch event to every watcher.
    pub fn send_garbage(&self) {
        let mut s = self.state.lock();
        Self::broadcast(
            &mut s,
            "{\"type\":\"ADDED\",\"object\":{\"metadata\":42}}\n".to_string(),
        );
    }

    /// Ends every open watch stream.
    pub fn drop_watches(&self) {
        self.state.lock().watchers.clear();
    }

    pub fn open_watches(&self) -> usize {
        let mut s = self.state.lock();
        s.watchers.retain(|w| !w.is_closed());
        s.watchers.len()
    }

    pub fn watch_count(&self) -> usize {
        self.state.lock().watches.len()
    }

    pub fn list_count(&self) -> usize {
        self.state.lock().lists.len()
    }
}

async fn list_or_watch(
    State(state): State<Arc<Mutex<FakeState>>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    if q.get("watch").map(String::as_str) == Some("true") {
        let (tx, rx) = mpsc::unbounded_channel::<String>();
        {
            let mut s = state.lock();
            s.watches.push(q);
            if s.close_watches_at_once {
                drop(tx);
            } else if std::mem::take(&mut s.expire_next_watch) {
                let status = json!({"type": "ERROR", "object": {
                    "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": format!("too old resource version: 1 ({})", s.rv),
                    "reason": "Expired", "code": 410
                }});
                let _ = tx.send(status.to_string() + "\n");
                drop(tx);
            } else {
                s.watchers.push(tx);
            }
        }
        let stream = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|line| (Ok::<_, Infallible>(line), rx))
        });
        return Response::builder()
            .header("content-type", "application/json")
            .body(Body::from_stream(stream))
            .expect("static response parts");
    }
    let mut s = state.lock();
    s.lists.push(q.clone());
    let asked: Option<u64> = q.get("resourceVersion").and_then(|rv| rv.parse().ok());
    if asked.is_some_and(|rv| rv != 0 && rv < s.oldest_listable_rv) {
        let status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "too old resource version", "reason": "Expired", "code": 410
        });
        return (
            http::StatusCode::GONE,
            [("content-type", "application/json")],
            status.to_string(),
        )
            .into_response();
    }
    let limit: usize = q
        .get("limit")
        .and_then(|l| l.parse().ok())
        .unwrap_or(usize::MAX);
    let start: usize = q.get("continue").and_then(|c| c.parse().ok()).unwrap_or(0);
    let items: Vec<&Pod> = s.pods.values().skip(start).take(limit).collect();
    let next = start + items.len();
    let cont = if next < s.pods.len() {
        next.to_string()
    } else {
        String::new()
    };
    json_response(json!({
        "kind": "PodList", "apiVersion": "v1",
        "metadata": {"resourceVersion": s.rv.to_string(), "continue": cont},
        "items": items,
    }))
}

fn json_response(v: serde_json::Value) -> Response {
    ([("content-type", "application/json")], v.to_string()).into_response()
}
