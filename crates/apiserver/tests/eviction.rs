//! The eviction subresource against PodDisruptionBudgets, through kube-rs' `Api::<Pod>::evict`:
//! budgets decremented with `disruptedPods` recorded, refusals with kube's 429 and causes, the
//! `DisruptionTarget` condition, unready, pending and terminating pods, dry runs.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, EvictParams, PostParams};
use serde_json::json;

/// A client that hands 429s back instead of retrying them, as client-go's callers see them.
fn client(server: &rkcm_apiserver::testing::TestServer) -> kube::Client {
    let mut config = server.kube_config();
    config.default_retry = false;
    kube::Client::try_from(config).expect("client")
}

/// POSTs an `Eviction` body as kubectl sends it (kube-rs names `deleteOptions` `delete_options`,
/// which kube-apiserver ignores).
async fn evict_raw(
    client: &kube::Client,
    pod: &str,
    delete_options: serde_json::Value,
) -> Result<kube::core::Status, kube::Error> {
    let body = json!({
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod, "namespace": "default"},
        "deleteOptions": delete_options,
    });
    let req = http::Request::post(format!("/api/v1/namespaces/default/pods/{pod}/eviction"))
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(serde_json::to_vec(&body).expect("encode"))
        .expect("request");
    client.request::<kube::core::Status>(req).await
}

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Creates pod `name` labelled `app=<app>` and gives it `phase` and a `Ready` condition.
async fn pod(pods: &Api<Pod>, name: &str, app: &str, phase: &str, ready: bool) -> Pod {
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]}
    }))
    .expect("pod");
    let mut created = pods
        .create(&PostParams::default(), &p)
        .await
        .expect("create pod");
    created.status = Some(
        serde_json::from_value(json!({
            "phase": phase,
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]
        }))
        .expect("status"),
    );
    pods.replace_status(name, &PostParams::default(), &created)
        .await
        .expect("pod status")
}

/// Creates budget `name` for `app=<app>` and writes the status the controller would:
/// `(disruptionsAllowed, currentHealthy, desiredHealthy)`, generation observed.
async fn budget(
    pdbs: &Api<PodDisruptionBudget>,
    name: &str,
    app: &str,
    status: (i32, i32, i32),
) -> PodDisruptionBudget {
    let p: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"minAvailable": status.2, "selector": {"matchLabels": {"app": app}}}
    }))
    .expect("pdb");
    let mut created = pdbs
        .create(&PostParams::default(), &p)
        .await
        .expect("create pdb");
    created.status = Some(
        serde_json::from_value(json!({
            "disruptionsAllowed": status.0,
            "currentHealthy": status.1,
            "desiredHealthy": status.2,
            "expectedPods": status.1,
            "observedGeneration": created.metadata.generation,
        }))
        .expect("status"),
    );
    pdbs.replace_status(name, &PostParams::default(), &created)
        .await
        .expect("pdb status")
}

fn condition<'a>(
    pod: &'a Pod,
    type_: &str,
) -> Option<&'a k8s_openapi::api::core::v1::PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

#[tokio::test]
async fn an_eviction_takes_a_disruption_and_the_next_is_refused_with_kubes_429() {
    let server = rkcm_apiserver::testing::start().await;
    let pods: Api<Pod> = Api::namespaced(client(&server), "default");
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client(&server), "default");
    pod(&pods, "web-1", "web", "Running", true).await;
    pod(&pods, "web-2", "web", "Running", true).await;
    budget(&pdbs, "web", "web", (1, 2, 1)).await;

    pods.evict("web-1", &EvictParams::default())
        .await
        .expect("evicted");
    let evicted = pods.get("web-1").await.expect("terminating pod");
    assert!(evicted.metadata.deletion_timestamp.is_some());
    let target = condition(&evicted, "DisruptionTarget").expect("DisruptionTarget");
    assert_eq!(target.status, "True");
    assert_eq!(target.reason.as_deref(), Some("EvictionByEvictionAPI"));
    assert_eq!(target.message.as_deref(), Some("Eviction API: evicting"));
    let status = pdbs.get("web").await.expect("pdb").status.expect("status");
    assert_eq!(status.disruptions_allowed, 0);
    assert!(status
        .disrupted_pods
        .expect("disruptedPods")
        .contains_key("web-1"));
    let allowed = status
        .conditions
        .expect("conditions")
        .into_iter()
        .find(|c| c.type_ == "DisruptionAllowed")
        .expect("DisruptionAllowed");
    assert_eq!(
        (allowed.status.as_str(), allowed.reason.as_str()),
        ("False", "InsufficientPods")
    );

    let refused = api_err(
        pods.evict("web-2", &EvictParams::default())
            .await
            .expect_err("refused"),
    );
    assert_eq!(refused.code, 429);
    assert_eq!(refused.reason, "TooManyRequests");
    assert_eq!(
        refused.message,
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    let cause = &refused.details.expect("details").causes[0];
    assert_eq!(cause.reason, "DisruptionBudget");
    assert_eq!(
        cause.message,
        "The disruption budget web needs 1 healthy pods and has 2 currently"
    );
    let untouched = pods.get("web-2").await.expect("pod stays");
    assert!(untouched.metadata.deletion_timestamp.is_none());
    assert!(condition(&untouched, "DisruptionTarget").is_none());

    // A terminating pod is evicted again without asking its budget.
    pods.evict("web-1", &EvictParams::default())
        .await
        .expect("terminating pod evicted");
    server.stop().await;
}

#[tokio::test]
async fn unobserved_budgets_two_budgets_and_unknown_pods_are_refused() {
    let server = rkcm_apiserver::testing::start().await;
    let pods: Api<Pod> = Api::namespaced(client(&server), "default");
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client(&server), "default");
    pod(&pods, "fresh", "fresh", "Running", true).await;
    let p: PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "fresh"},
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "fresh"}}}
    }))
    .expect("pdb");
    pdbs.create(&PostParams::default(), &p)
        .await
        .expect("create pdb");
    let err = api_err(
        pods.evict("fresh", &EvictParams::default())
            .await
            .expect_err("unobserved"),
    );
    assert_eq!(err.code, 429);
    assert_eq!(
        err.details.expect("details").causes[0].message,
        "The disruption budget fresh is still being processed by the server."
    );

    pod(&pods, "twice", "twice", "Running", true).await;
    budget(&pdbs, "one", "twice", (1, 1, 0)).await;
    budget(&pdbs, "two", "twice", (1, 1, 0)).await;
    let err = api_err(
        pods.evict("twice", &EvictParams::default())
            .await
            .expect_err("two budgets"),
    );
    assert_eq!(err.code, 500);
    assert_eq!(
        err.message,
        "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
    );

    let err = api_err(
        pods.evict("nope", &EvictParams::default())
            .await
            .expect_err("no pod"),
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, "pods \"nope\" not found")
    );
    server.stop().await;
}

#[tokio::test]
async fn unready_pending_and_dry_run_evictions_follow_kube() {
    let server = rkcm_apiserver::testing::start().await;
    let pods: Api<Pod> = Api::namespaced(client(&server), "default");
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client(&server), "default");

    // A budget with no disruption left: an unready pod goes only while the budget is healthy.
    pod(&pods, "healthy-unready", "healthy", "Running", false).await;
    budget(&pdbs, "healthy", "healthy", (0, 2, 2)).await;
    pods.evict("healthy-unready", &EvictParams::default())
        .await
        .expect("unready pod of a healthy budget evicted");
    let status = pdbs
        .get("healthy")
        .await
        .expect("pdb")
        .status
        .expect("status");
    assert_eq!(status.disruptions_allowed, 0);
    assert!(status.disrupted_pods.is_none());

    pod(&pods, "sick-unready", "sick", "Running", false).await;
    let mut sick = budget(&pdbs, "sick", "sick", (0, 1, 2)).await;
    let err = api_err(
        pods.evict("sick-unready", &EvictParams::default())
            .await
            .expect_err("refused"),
    );
    assert_eq!(err.code, 429);
    sick.spec
        .as_mut()
        .expect("spec")
        .unhealthy_pod_eviction_policy = Some("AlwaysAllow".into());
    pdbs.replace("sick", &PostParams::default(), &sick)
        .await
        .expect("policy");
    let observed = pdbs.get("sick").await.expect("pdb");
    let mut observed_status = observed.clone();
    observed_status
        .status
        .as_mut()
        .expect("status")
        .observed_generation = observed.metadata.generation;
    pdbs.replace_status("sick", &PostParams::default(), &observed_status)
        .await
        .expect("observed");
    pods.evict("sick-unready", &EvictParams::default())
        .await
        .expect("AlwaysAllow evicts unready pods");

    // A pending pod goes whatever its budget says.
    pod(&pods, "pending", "blocked", "Pending", false).await;
    budget(&pdbs, "blocked", "blocked", (0, 0, 1)).await;
    pods.evict("pending", &EvictParams::default())
        .await
        .expect("pending evicted");
    // So does a terminal one: its disruption already happened.
    pod(&pods, "failed", "blocked", "Failed", false).await;
    pods.evict("failed", &EvictParams::default())
        .await
        .expect("failed pod evicted");
    let status = pdbs
        .get("blocked")
        .await
        .expect("pdb")
        .status
        .expect("status");
    assert_eq!(status.disruptions_allowed, 0);
    assert!(status.disrupted_pods.is_none());

    // A dry run decides but writes nothing, asked in the query or in the body.
    pod(&pods, "dry", "dry", "Running", true).await;
    budget(&pdbs, "dry", "dry", (1, 1, 0)).await;
    let dry = EvictParams {
        delete_options: None,
        post_options: PostParams {
            dry_run: true,
            ..PostParams::default()
        },
    };
    pods.evict("dry", &dry).await.expect("dry run");
    evict_raw(&client(&server), "dry", json!({"dryRun": ["All"]}))
        .await
        .expect("dry run in the body");
    let still = pods.get("dry").await.expect("pod");
    assert!(still.metadata.deletion_timestamp.is_none());
    assert!(condition(&still, "DisruptionTarget").is_none());
    assert_eq!(
        pdbs.get("dry")
            .await
            .expect("pdb")
            .status
            .expect("status")
            .disruptions_allowed,
        1
    );

    // Preconditions of the delete options: a stale resourceVersion is a conflict, not retried;
    // the current one evicts.
    let rv_pod = pod(&pods, "rv", "rv", "Running", true).await;
    let err = api_err(
        evict_raw(
            &client(&server),
            "rv",
            json!({"preconditions": {"resourceVersion": "1"}}),
        )
        .await
        .expect_err("stale rv"),
    );
    assert_eq!(err.code, 409);
    assert!(pods
        .get("rv")
        .await
        .expect("pod")
        .metadata
        .deletion_timestamp
        .is_none());
    let err = api_err(
        evict_raw(
            &client(&server),
            "rv",
            json!({"preconditions": {"uid": "other"}}),
        )
        .await
        .expect_err("other uid"),
    );
    assert_eq!(err.code, 409);
    evict_raw(
        &client(&server),
        "rv",
        json!({"preconditions": {"resourceVersion": rv_pod.metadata.resource_version, "uid": rv_pod.metadata.uid}}),
    )
    .await
    .expect("evicted with current preconditions");
    assert!(pods
        .get("rv")
        .await
        .expect("pod")
        .metadata
        .deletion_timestamp
        .is_some());
    server.stop().await;
}
