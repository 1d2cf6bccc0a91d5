//! RealPodControl against a small fake API server: the pod it posts, error mapping and events.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, post};
use axum::{Json, Router};
use k8s_openapi::api::core::v1::{Event, ObjectReference, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use rkcm_runtime::events::EventRecorder;
use rkcm_runtime::pod_control::{PodControl, RealPodControl};
use serde_json::{json, Value};
use tokio::sync::mpsc;

type Posted = Arc<Mutex<Vec<(String, Value)>>>;

async fn create_pod(
    State(posted): State<Posted>,
    Path(ns): Path<String>,
    Json(mut pod): Json<Value>,
) -> (StatusCode, Json<Value>) {
    if ns == "dying" {
        return (
            StatusCode::FORBIDDEN,
            Json(json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "pods \"web-x\" is forbidden: unable to create new content in namespace dying because it is being terminated",
                "reason": "Forbidden", "code": 403,
                "details": {"causes": [{"reason": "NamespaceTerminating", "message": "namespace dying is being terminated", "field": "metadata.namespace"}]}
            })),
        );
    }
    if ns == "taken" {
        return (
            StatusCode::CONFLICT,
            Json(json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "pods \"web-abcde\" already exists", "reason": "AlreadyExists", "code": 409,
                "details": {"name": "web-abcde", "kind": "pods"}
            })),
        );
    }
    if ns == "full" {
        return (
            StatusCode::FORBIDDEN,
            Json(json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "pods \"web-x\" is forbidden: exceeded quota", "reason": "Forbidden", "code": 403
            })),
        );
    }
    posted.lock().push((ns.clone(), pod.clone()));
    let prefix = pod["metadata"]["generateName"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    pod["metadata"]["name"] = json!(format!("{prefix}abcde"));
    pod["metadata"]["namespace"] = json!(ns);
    (StatusCode::CREATED, Json(pod))
}

async fn delete_pod(Path((_ns, name)): Path<(String, String)>) -> (StatusCode, Json<Value>) {
    if name == "gone" {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "pods \"gone\" not found", "reason": "NotFound", "code": 404
            })),
        );
    }
    if name == "busy" {
        return (
            StatusCode::CONFLICT,
            Json(json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Operation cannot be fulfilled on pods \"busy\": the object has been modified; please apply your changes to the latest version and try again",
                "reason": "Conflict", "code": 409
            })),
        );
    }
    (
        StatusCode::OK,
        Json(
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 200}),
        ),
    )
}

async fn server() -> (kube::Client, Posted) {
    let posted: Posted = Arc::default();
    let app = Router::new()
        .route("/api/v1/namespaces/{ns}/pods", post(create_pod))
        .route("/api/v1/namespaces/{ns}/pods/{name}", delete(delete_pod))
        .with_state(Arc::clone(&posted));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let client =
        kube::Client::try_from(kube::Config::new(url.parse().expect("url"))).expect("client");
    (client, posted)
}

fn owner() -> ObjectReference {
    ObjectReference {
        api_version: Some("apps/v1".into()),
        kind: Some("ReplicaSet".into()),
        namespace: Some("ns".into()),
        name: Some("web".into()),
        uid: Some("uid-web".into()),
        ..Default::default()
    }
}

fn controller_ref() -> OwnerReference {
    OwnerReference {
        api_version: "apps/v1".into(),
        kind: "ReplicaSet".into(),
        name: "web".into(),
        uid: "uid-web".into(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn template() -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some([("app".to_string(), "web".to_string())].into()),
            ..Default::default()
        }),
        spec: None,
    }
}

fn next_event(rx: &mut mpsc::Receiver<Event>) -> (String, String, String) {
    let e = rx.try_recv().expect("an event was recorded");
    (
        e.type_.unwrap_or_default(),
        e.reason.unwrap_or_default(),
        e.message.unwrap_or_default(),
    )
}

#[tokio::test]
async fn create_posts_the_templated_pod_and_records_events() {
    let (client, posted) = server().await;
    let (recorder, mut events) = EventRecorder::channel("replicaset-controller", 16);
    let control = RealPodControl::new(client, recorder);

    control
        .create_pods("ns", &template(), &owner(), &controller_ref())
        .await
        .expect("create succeeds");
    let (ns, pod) = posted.lock()[0].clone();
    assert_eq!(ns, "ns");
    assert_eq!(pod["metadata"]["generateName"], "web-");
    assert_eq!(pod["metadata"]["labels"]["app"], "web");
    assert_eq!(pod["metadata"]["ownerReferences"][0]["uid"], "uid-web");
    assert_eq!(pod["metadata"]["ownerReferences"][0]["controller"], true);
    assert_eq!(
        next_event(&mut events),
        (
            "Normal".into(),
            "SuccessfulCreate".into(),
            "Created pod: web-abcde".into()
        )
    );

    // Namespace terminating: error, but no event.
    let err = control
        .create_pods("dying", &template(), &owner(), &controller_ref())
        .await
        .expect_err("forbidden");
    assert!(err.is_namespace_terminating());
    assert!(events.try_recv().is_err());

    let err = control
        .create_pods("full", &template(), &owner(), &controller_ref())
        .await
        .expect_err("forbidden");
    assert!(!err.is_namespace_terminating());
    assert_eq!(
        next_event(&mut events),
        (
            "Warning".into(),
            "FailedCreate".into(),
            "Error creating: pods \"web-x\" is forbidden: exceeded quota".into()
        )
    );

    // A template without labels is refused before any request.
    let err = control
        .create_pods(
            "ns",
            &PodTemplateSpec::default(),
            &owner(),
            &controller_ref(),
        )
        .await
        .expect_err("no labels");
    assert!(err.to_string().contains("no labels"));
    assert_eq!(posted.lock().len(), 1);
}

#[tokio::test]
async fn delete_records_success_and_reports_not_found_without_an_event() {
    let (client, _) = server().await;
    let (recorder, mut events) = EventRecorder::channel("replicaset-controller", 16);
    let control = RealPodControl::new(client, recorder);
    control
        .delete_pod("ns", "web-1", &owner())
        .await
        .expect("delete succeeds");
    assert_eq!(
        next_event(&mut events),
        (
            "Normal".into(),
            "SuccessfulDelete".into(),
            "Deleted pod: web-1".into()
        )
    );
    let err = control
        .delete_pod("ns", "gone", &owner())
        .await
        .expect_err("not found");
    assert!(err.is_not_found());
    assert!(events.try_recv().is_err());
}

#[tokio::test]
async fn failures_read_as_the_api_status_message_in_events_and_errors() {
    let (client, _) = server().await;
    let (recorder, mut events) = EventRecorder::channel("replicaset-controller", 16);
    let control = RealPodControl::new(client, recorder);

    // kube: `Error creating: %v` with the StatusError, whose text is the Status message; the
    // error returned (and put in the ReplicaFailure condition) is that StatusError.
    let err = control
        .create_pods("taken", &template(), &owner(), &controller_ref())
        .await
        .expect_err("already exists");
    assert!(err.is_already_exists());
    assert!(!err.is_conflict());
    assert_eq!(err.to_string(), "pods \"web-abcde\" already exists");
    assert_eq!(err.message(), err.to_string());
    assert_eq!(
        next_event(&mut events),
        (
            "Warning".into(),
            "FailedCreate".into(),
            "Error creating: pods \"web-abcde\" already exists".into()
        )
    );

    // kube: `Error deleting: %v`, and `unable to delete pods: %v` as the returned error.
    let err = control
        .delete_pod("ns", "busy", &owner())
        .await
        .expect_err("conflict");
    assert!(err.is_conflict());
    let status = "Operation cannot be fulfilled on pods \"busy\": the object has been modified; please apply your changes to the latest version and try again";
    assert_eq!(err.to_string(), status);
    assert_eq!(
        rkcm_runtime::pod_control::unable_to_delete(&err),
        format!("unable to delete pods: {status}")
    );
    assert_eq!(
        next_event(&mut events),
        (
            "Warning".into(),
            "FailedDelete".into(),
            format!("Error deleting: {status}")
        )
    );
}
