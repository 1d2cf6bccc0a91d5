//! A fake API server holding Lease objects: GET, POST (AlreadyExists) and PUT with
//! resourceVersion checks (Conflict), plus an outage switch that fails every request.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use parking_lot::Mutex;
use serde_json::{json, Value};

#[derive(Default)]
pub struct LeaseState {
    pub leases: BTreeMap<(String, String), Value>,
    pub rv: u64,
    /// While set, every request gets 500.
    pub outage: bool,
}

#[derive(Clone)]
pub struct FakeLeases {
    pub state: Arc<Mutex<LeaseState>>,
    pub url: String,
}

type Shared = Arc<Mutex<LeaseState>>;

fn status(code: StatusCode, reason: &str, message: &str) -> (StatusCode, Json<Value>) {
    (
        code,
        Json(
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code.as_u16()}),
        ),
    )
}

async fn get_lease(
    State(s): State<Shared>,
    Path((ns, name)): Path<(String, String)>,
) -> (StatusCode, Json<Value>) {
    let s = s.lock();
    if s.outage {
        return status(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", "outage");
    }
    match s.leases.get(&(ns, name.clone())) {
        Some(v) => (StatusCode::OK, Json(v.clone())),
        None => status(
            StatusCode::NOT_FOUND,
            "NotFound",
            &format!("leases.coordination.k8s.io \"{name}\" not found"),
        ),
    }
}

async fn create_lease(
    State(s): State<Shared>,
    Path(ns): Path<String>,
    Json(mut lease): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let mut s = s.lock();
    if s.outage {
        return status(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", "outage");
    }
    let name = lease["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if s.leases.contains_key(&(ns.clone(), name.clone())) {
        return status(
            StatusCode::CONFLICT,
            "AlreadyExists",
            &format!("leases.coordination.k8s.io \"{name}\" already exists"),
        );
    }
    s.rv += 1;
    lease["metadata"]["resourceVersion"] = json!(s.rv.to_string());
    lease["metadata"]["namespace"] = json!(ns);
    s.leases.insert((ns, name), lease.clone());
    (StatusCode::CREATED, Json(lease))
}

async fn replace_lease(
    State(s): State<Shared>,
    Path((ns, name)): Path<(String, String)>,
    Json(mut lease): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let mut s = s.lock();
    if s.outage {
        return status(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", "outage");
    }
    let key = (ns, name.clone());
    let Some(current) = s.leases.get(&key) else {
        return status(StatusCode::NOT_FOUND, "NotFound", "not found");
    };
    if current["metadata"]["resourceVersion"] != lease["metadata"]["resourceVersion"] {
        return status(
            StatusCode::CONFLICT,
            "Conflict",
            &format!("Operation cannot be fulfilled on leases.coordination.k8s.io \"{name}\": the object has been modified; please apply your changes to the latest version and try again"),
        );
    }
    s.rv += 1;
    lease["metadata"]["resourceVersion"] = json!(s.rv.to_string());
    s.leases.insert(key, lease.clone());
    (StatusCode::OK, Json(lease))
}

impl FakeLeases {
    pub async fn start() -> Self {
        let state: Shared = Arc::default();
        let app = Router::new()
            .route(
                "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
                post(create_lease),
            )
            .route(
                "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}",
                get(get_lease).put(replace_lease),
            )
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

    /// The lease's spec, if it exists.
    pub fn spec(&self, ns: &str, name: &str) -> Option<Value> {
        self.state
            .lock()
            .leases
            .get(&(ns.to_string(), name.to_string()))
            .map(|l| l["spec"].clone())
    }
}
