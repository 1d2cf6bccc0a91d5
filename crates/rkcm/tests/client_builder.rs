//! The controller client builder against an in-process API server running RBAC: with
//! service-account credentials each controller is its own ServiceAccount (created when missing)
//! with kube's role and nothing more, and its events are written under that identity.

use std::sync::Arc;

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::core::v1::{Event, EventSource, Node, ObjectReference, Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use rkcm::manager::client_builder::ControllerClientBuilder;
use rkcm::manager::event_sink::ControllerEventSink;
use rkcm_apiserver::auth::authorization::Mode;
use rkcm_apiserver::testing;
use rkcm_runtime::events::EventSink;
use rkcm_runtime::SystemClock;

async fn rbac_server() -> testing::TestServer {
    testing::start_with(rkcm_apiserver::Config {
        authorization_modes: vec![Mode::Rbac],
        ..testing::config()
    })
    .await
}

async fn whoami(client: &kube::Client) -> String {
    let review = Api::<SelfSubjectReview>::all(client.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await
        .expect("a SelfSubjectReview");
    review
        .status
        .and_then(|s| s.user_info)
        .and_then(|u| u.username)
        .unwrap_or_default()
}

fn event(component: &str, name: &str) -> Event {
    Event {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some("default".to_string()),
            ..Default::default()
        },
        involved_object: ObjectReference {
            kind: Some("Pod".into()),
            name: Some("p".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        reason: Some("Test".into()),
        message: Some("m".into()),
        source: Some(EventSource {
            component: Some(component.to_string()),
            host: None,
        }),
        reporting_component: Some(component.to_string()),
        ..Default::default()
    }
}

#[tokio::test]
async fn each_controller_is_its_own_service_account_with_kubes_role_alone() {
    let server = rbac_server().await;
    let admin = server.client();
    let builder = ControllerClientBuilder::service_accounts(
        server.kube_config(),
        -1.0,
        0,
        Arc::new(SystemClock),
    )
    .expect("a builder");
    assert!(builder.uses_service_accounts());

    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "kube-system");
    assert!(accounts
        .get_opt("replicaset-controller")
        .await
        .expect("get")
        .is_none());
    let rs = builder
        .controller_client("replicaset-controller")
        .expect("a client");
    assert_eq!(
        whoami(&rs).await,
        "system:serviceaccount:kube-system:replicaset-controller"
    );
    // Made on the first request, as kube's getOrCreateServiceAccount.
    assert!(accounts
        .get_opt("replicaset-controller")
        .await
        .expect("get")
        .is_some());

    // kube's system:controller:replicaset-controller: pods yes, nodes no.
    Api::<Pod>::namespaced(rs.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("the role lists pods");
    let err = Api::<Node>::all(rs.clone())
        .delete("n1", &DeleteParams::default())
        .await
        .expect_err("nodes are not the ReplicaSet controller's");
    let kube::Error::Api(status) = err else {
        panic!("an API error: {err}")
    };
    assert_eq!(status.code, 403);
    assert_eq!(
        status.message,
        "nodes \"n1\" is forbidden: User \"system:serviceaccount:kube-system:replicaset-controller\" cannot delete resource \"nodes\" in API group \"\" at the cluster scope"
    );

    // Controllers sharing an identity share the ServiceAccount; the token controller is root.
    let node = builder
        .controller_client("taint-eviction-controller")
        .expect("a client");
    assert_eq!(
        whoami(&node).await,
        "system:serviceaccount:kube-system:node-controller"
    );
    let root = builder
        .controller_client("serviceaccount-token-controller")
        .expect("a client");
    assert_eq!(whoami(&root).await, whoami(&admin).await);
}

#[tokio::test]
async fn events_are_written_with_the_recording_controllers_identity() {
    let server = rbac_server().await;
    let admin = server.client();
    let builder = Arc::new(
        ControllerClientBuilder::service_accounts(
            server.kube_config(),
            -1.0,
            0,
            Arc::new(SystemClock),
        )
        .expect("a builder"),
    );
    let sink = ControllerEventSink::new(Arc::clone(&builder)).expect("a sink");
    sink.create(&event("deployment-controller", "e1"))
        .await
        .expect("the deployment controller may write events");

    // Without its binding the deployment controller's events are refused, naming its account;
    // a component no controller records under still writes as the manager.
    Api::<ClusterRoleBinding>::all(admin.clone())
        .delete(
            "system:controller:deployment-controller",
            &DeleteParams::default(),
        )
        .await
        .expect("binding deleted");
    let err = sink
        .create(&event("deployment-controller", "e2"))
        .await
        .expect_err("refused");
    assert!(
        err.to_string().contains(
            "User \"system:serviceaccount:kube-system:deployment-controller\" cannot create resource \"events\""
        ),
        "{err}"
    );
    sink.create(&event("some-other-component", "e3"))
        .await
        .expect("written as the manager");
}

#[tokio::test]
async fn without_service_account_credentials_every_controller_is_the_manager() {
    let server = rbac_server().await;
    let builder = ControllerClientBuilder::simple(server.kube_config(), -1.0, 0);
    assert!(!builder.uses_service_accounts());
    let rs = builder
        .controller_client("replicaset-controller")
        .expect("a client");
    assert_eq!(whoami(&rs).await, whoami(&server.client()).await);
    let accounts: Api<ServiceAccount> = Api::namespaced(server.client(), "kube-system");
    assert!(accounts
        .get_opt("replicaset-controller")
        .await
        .expect("get")
        .is_none());
}
