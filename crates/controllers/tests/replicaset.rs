//! The ReplicaSet and ReplicationController controllers against the embedded API server.
//!
//! No node agent runs here: pods stay Pending unless a test marks them ready itself.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{
    Pod, PodTemplateSpec, ReplicationController, ReplicationControllerSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::Client;
use rkcm_apiserver::testing::{self, TestServer};
use rkcm_controllers::replicaset::{Config, ReplicaSetController};
use rkcm_labels::set as labels;
use rkcm_runtime::events::EventBroadcaster;
use rkcm_runtime::informer::InformerFactory;
use rkcm_runtime::pod_control::{PodControl, PodControlError, RealPodControl};
use rkcm_runtime::testing::{pod_template, FakePodControl};
use rkcm_runtime::Shutdown;

mod support;
use support::{eventually, Cluster, NS};

/// A running API server with the ReplicaSet and ReplicationController controllers.
type Harness = Cluster;

/// Starts a server and both controllers.
async fn start() -> Harness {
    start_on(testing::start().await, None)
}

/// Starts both controllers on `server`; `pod_control` overrides the ReplicaSet controller's.
fn start_on(server: TestServer, pod_control: Option<Arc<dyn PodControl>>) -> Harness {
    let h = Cluster::on(server);
    let rs_ctrl = match pod_control {
        Some(pc) => ReplicaSetController::<ReplicaSet>::with_pod_control(
            &h.factory,
            h.client.clone(),
            pc,
            Config::default(),
        ),
        None => ReplicaSetController::new(
            &h.factory,
            h.client.clone(),
            h.events.recorder("replicaset-controller"),
            Config::default(),
        ),
    };
    let rc_ctrl = ReplicaSetController::new_for_rc(
        &h.factory,
        h.client.clone(),
        h.events.recorder("replication-controller"),
        Config::default(),
    );
    h.start_informers();
    h.spawn(rs_ctrl.run(5, h.shutdown.clone()));
    h.spawn(rc_ctrl.run(5, h.shutdown.clone()));
    h
}

fn template(app: &str) -> PodTemplateSpec {
    pod_template(labels(&[("app", app)]), "c", "busybox")
}

fn replica_set(name: &str, app: &str, replicas: i32) -> ReplicaSet {
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels(&[("app", app)])),
                ..Default::default()
            },
            template: Some(template(app)),
            ..Default::default()
        }),
        status: None,
    }
}

fn bare_pod(name: &str, app: &str) -> Pod {
    let t = template(app);
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            labels: t.metadata.and_then(|m| m.labels),
            ..Default::default()
        },
        spec: t.spec,
        status: None,
    }
}

fn is_active(p: &Pod) -> bool {
    let phase = p
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("");
    p.metadata.deletion_timestamp.is_none() && phase != "Succeeded" && phase != "Failed"
}

fn owned_by(p: &Pod, uid: &str) -> bool {
    p.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.uid == uid)
}

async fn pods(client: &Client) -> Result<Vec<Pod>> {
    let api: Api<Pod> = Api::namespaced(client.clone(), NS);
    Ok(api.list(&ListParams::default()).await?.items)
}

/// Waits until `uid` owns exactly `n` active pods and its status reports them.
async fn wait_for_replicas(client: &Client, name: &str, uid: &str, n: usize) -> Result<()> {
    let rs_api: Api<ReplicaSet> = Api::namespaced(client.clone(), NS);
    eventually(&format!("{name} to own {n} pods"), || async {
        let owned = pods(client)
            .await?
            .into_iter()
            .filter(|p| is_active(p) && owned_by(p, uid))
            .count();
        let rs = rs_api.get(name).await?;
        let status = rs.status.unwrap_or_default();
        let converged = owned == n
            && usize::try_from(status.replicas).ok() == Some(n)
            && status.observed_generation == rs.metadata.generation;
        Ok(converged.then_some(()))
    })
    .await
}

async fn scale(client: &Client, name: &str, replicas: i32) -> Result<()> {
    let api: Api<ReplicaSet> = Api::namespaced(client.clone(), NS);
    let patch = serde_json::json!({ "spec": { "replicas": replicas } });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

async fn create_rs(client: &Client, rs: &ReplicaSet) -> Result<String> {
    let api: Api<ReplicaSet> = Api::namespaced(client.clone(), NS);
    let created = api.create(&PostParams::default(), rs).await?;
    created
        .metadata
        .uid
        .context("created replica set has a uid")
}

#[tokio::test]
async fn scales_from_zero_to_three_to_ten_to_one() -> Result<()> {
    let h = start().await;
    let uid = create_rs(&h.client, &replica_set("web", "web", 0)).await?;
    wait_for_replicas(&h.client, "web", &uid, 0).await?;
    for n in [3, 10, 1] {
        scale(&h.client, "web", n).await?;
        wait_for_replicas(&h.client, "web", &uid, usize::try_from(n)?).await?;
    }
    // The pods carry a controller reference to the ReplicaSet, blocking its deletion.
    let survivors: Vec<Pod> = pods(&h.client)
        .await?
        .into_iter()
        .filter(is_active)
        .collect();
    assert_eq!(survivors.len(), 1);
    let r = &survivors[0]
        .metadata
        .owner_references
        .as_ref()
        .context("owner refs")?[0];
    assert_eq!(
        (r.kind.as_str(), r.api_version.as_str()),
        ("ReplicaSet", "apps/v1")
    );
    assert_eq!(r.block_owner_deletion, Some(true));
    Ok(())
}

#[tokio::test]
async fn a_deleted_pod_is_replaced_exactly_once() -> Result<()> {
    let h = start().await;
    let uid = create_rs(&h.client, &replica_set("web", "web", 3)).await?;
    wait_for_replicas(&h.client, "web", &uid, 3).await?;
    let victim = pods(&h.client).await?[0]
        .metadata
        .name
        .clone()
        .context("pod name")?;
    let api: Api<Pod> = Api::namespaced(h.client.clone(), NS);
    api.delete(&victim, &DeleteParams::default()).await?;
    wait_for_replicas(&h.client, "web", &uid, 3).await?;
    // Watch for a while that no second replacement appears: three active pods, and at most
    // one more (the deleted one, if still terminating).
    for _ in 0..20 {
        let all = pods(&h.client).await?;
        let active = all.iter().filter(|p| is_active(p)).count();
        assert_eq!(active, 3, "active pods: {all:#?}");
        assert!(all.len() <= 4, "a pod was replaced twice");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

#[tokio::test]
async fn a_matching_orphan_is_adopted_instead_of_creating_a_pod() -> Result<()> {
    let h = start().await;
    let api: Api<Pod> = Api::namespaced(h.client.clone(), NS);
    api.create(&PostParams::default(), &bare_pod("orphan", "web"))
        .await?;
    let uid = create_rs(&h.client, &replica_set("web", "web", 1)).await?;
    wait_for_replicas(&h.client, "web", &uid, 1).await?;
    let orphan = api.get("orphan").await?;
    assert!(owned_by(&orphan, &uid), "orphan adopted: {orphan:#?}");
    assert_eq!(pods(&h.client).await?.len(), 1, "no pod created");
    Ok(())
}

#[tokio::test]
async fn a_pod_whose_labels_stop_matching_is_released_and_replaced() -> Result<()> {
    let h = start().await;
    let uid = create_rs(&h.client, &replica_set("web", "web", 2)).await?;
    wait_for_replicas(&h.client, "web", &uid, 2).await?;
    let name = pods(&h.client).await?[0]
        .metadata
        .name
        .clone()
        .context("pod name")?;
    let api: Api<Pod> = Api::namespaced(h.client.clone(), NS);
    let patch = serde_json::json!({ "metadata": { "labels": { "app": "debug" } } });
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    eventually("the relabelled pod to be released", || async {
        let pod = api.get(&name).await?;
        Ok((!owned_by(&pod, &uid)).then_some(()))
    })
    .await?;
    wait_for_replicas(&h.client, "web", &uid, 2).await?;
    assert_eq!(pods(&h.client).await?.len(), 3);
    Ok(())
}

#[tokio::test]
async fn a_pod_owned_by_another_controller_is_never_touched() -> Result<()> {
    let h = start().await;
    let api: Api<Pod> = Api::namespaced(h.client.clone(), NS);
    let mut foreign = bare_pod("foreign", "web");
    foreign.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "apps/v1".into(),
        kind: "ReplicaSet".into(),
        name: "someone-else".into(),
        uid: "8d1f5e3a-0000-4000-8000-000000000001".into(),
        controller: Some(true),
        block_owner_deletion: None,
    }]);
    let before = api.create(&PostParams::default(), &foreign).await?;
    let uid = create_rs(&h.client, &replica_set("web", "web", 2)).await?;
    wait_for_replicas(&h.client, "web", &uid, 2).await?;
    let after = api.get("foreign").await?;
    assert_eq!(
        after.metadata.resource_version,
        before.metadata.resource_version
    );
    assert_eq!(pods(&h.client).await?.len(), 3);
    Ok(())
}

#[tokio::test]
async fn two_replica_sets_with_overlapping_selectors_do_not_fight() -> Result<()> {
    let h = start().await;
    let a = create_rs(&h.client, &replica_set("a", "web", 2)).await?;
    let b = create_rs(&h.client, &replica_set("b", "web", 3)).await?;
    wait_for_replicas(&h.client, "a", &a, 2).await?;
    wait_for_replicas(&h.client, "b", &b, 3).await?;
    for _ in 0..20 {
        let all = pods(&h.client).await?;
        assert_eq!(all.len(), 5, "pods: {all:#?}");
        assert_eq!(all.iter().filter(|p| owned_by(p, &a)).count(), 2);
        assert_eq!(all.iter().filter(|p| owned_by(p, &b)).count(), 3);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

#[tokio::test]
async fn a_replication_controller_is_served_by_the_same_controller() -> Result<()> {
    let h = start().await;
    let api: Api<ReplicationController> = Api::namespaced(h.client.clone(), NS);
    let rc = ReplicationController {
        metadata: ObjectMeta {
            name: Some("legacy".into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        spec: Some(ReplicationControllerSpec {
            replicas: Some(3),
            selector: Some(labels(&[("app", "legacy")])),
            template: Some(template("legacy")),
            min_ready_seconds: None,
        }),
        status: None,
    };
    let uid = api
        .create(&PostParams::default(), &rc)
        .await?
        .metadata
        .uid
        .context("uid")?;
    eventually("the RC to own 3 pods and report them", || async {
        let owned: Vec<Pod> = pods(&h.client)
            .await?
            .into_iter()
            .filter(|p| owned_by(p, &uid))
            .collect();
        let status = api.get("legacy").await?.status.unwrap_or_default();
        Ok((owned.len() == 3 && status.replicas == 3).then_some(owned))
    })
    .await
    .map(|owned| {
        let r = &owned[0].metadata.owner_references.as_ref().expect("refs")[0];
        assert_eq!(
            (r.kind.as_str(), r.api_version.as_str()),
            ("ReplicationController", "v1")
        );
    })?;
    Ok(())
}

#[tokio::test]
async fn min_ready_seconds_delays_available_replicas() -> Result<()> {
    let h = start().await;
    let mut rs = replica_set("web", "web", 2);
    rs.spec.as_mut().context("spec")?.min_ready_seconds = Some(2);
    let uid = create_rs(&h.client, &rs).await?;
    wait_for_replicas(&h.client, "web", &uid, 2).await?;
    let api: Api<Pod> = Api::namespaced(h.client.clone(), NS);
    let now = jiff::Timestamp::now();
    for pod in pods(&h.client).await? {
        let name = pod.metadata.name.context("name")?;
        let patch = serde_json::json!({ "status": {
            "phase": "Running",
            "conditions": [{ "type": "Ready", "status": "True", "lastTransitionTime": now.to_string() }]
        }});
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    let rs_api: Api<ReplicaSet> = Api::namespaced(h.client.clone(), NS);
    let s = eventually(
        "ready replicas reported before they are available",
        || async {
            let s = rs_api.get("web").await?.status.unwrap_or_default();
            Ok((s.ready_replicas == Some(2)).then_some(s))
        },
    )
    .await?;
    if jiff::Timestamp::now().as_second() - now.as_second() < 2 {
        assert_eq!(
            s.available_replicas.unwrap_or(0),
            0,
            "available before minReadySeconds"
        );
    }
    eventually("available replicas after minReadySeconds", || async {
        let s = rs_api.get("web").await?.status.unwrap_or_default();
        Ok((s.available_replicas == Some(2)).then_some(()))
    })
    .await
}

#[tokio::test]
async fn failed_creates_end_with_exactly_replicas_and_a_condition_that_clears() -> Result<()> {
    let server = testing::start().await;
    let client = server.client();
    let broadcaster = EventBroadcaster::new(client.clone());
    // Pod control that fails every third creation with a quota error.
    let flaky = FakePodControl::forwarding_to(Arc::new(RealPodControl::new(
        client,
        broadcaster.recorder("replicaset-controller"),
    )));
    flaky.fail_every_nth_create(3, || {
        PodControlError::Invalid("exceeded quota: pods".into())
    });
    let h = start_on(server, Some(Arc::new(flaky.clone())));

    let uid = create_rs(&h.client, &replica_set("web", "web", 10)).await?;
    let rs_api: Api<ReplicaSet> = Api::namespaced(h.client.clone(), NS);
    eventually("a ReplicaFailure condition", || async {
        let s = rs_api.get("web").await?.status.unwrap_or_default();
        let failed =
            s.conditions.iter().flatten().any(|c| {
                c.type_ == "ReplicaFailure" && c.reason.as_deref() == Some("FailedCreate")
            });
        Ok(failed.then_some(()))
    })
    .await?;
    flaky.clear();
    wait_for_replicas(&h.client, "web", &uid, 10).await?;
    eventually("the ReplicaFailure condition to clear", || async {
        let s = rs_api.get("web").await?.status.unwrap_or_default();
        let failed = s
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "ReplicaFailure");
        Ok((!failed).then_some(()))
    })
    .await?;
    assert_eq!(pods(&h.client).await?.len(), 10);
    Ok(())
}

#[tokio::test]
async fn run_returns_promptly_after_shutdown() -> Result<()> {
    let server = testing::start().await;
    let client = server.client();
    let shutdown = Shutdown::new();
    let factory = InformerFactory::new(client.clone(), Duration::ZERO);
    let broadcaster = EventBroadcaster::new(client.clone());
    let ctrl = ReplicaSetController::new(
        &factory,
        client.clone(),
        broadcaster.recorder("replicaset-controller"),
        Config::default(),
    );
    factory.start(shutdown.clone());
    let handle = tokio::spawn(ctrl.run(5, shutdown.clone()));
    let uid = create_rs(&client, &replica_set("web", "web", 3)).await?;
    wait_for_replicas(&client, "web", &uid, 3).await?;
    // Leave work in flight and queued: scale up, then stop at once.
    scale(&client, "web", 20).await?;
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .context("run did not return after shutdown (queue drain likely stuck)")??;
    Ok(())
}
