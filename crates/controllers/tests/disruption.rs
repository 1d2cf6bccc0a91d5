//! The disruption controller against the embedded API server: budget status from the pods'
//! controllers (a StatefulSet from the cache, a kind found through `/scale`), evictions recorded
//! in `disruptedPods` and refused once the budget is spent, stale `DisruptionTarget` conditions
//! reset.

use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, EvictParams, PostParams};
use kube::Client;
use rkcm_controllers::disruption::{Config, DisruptionController, EVENT_SOURCE};
use rkcm_controllers::registry::{ControllerOptions, DISRUPTION};
use rkcm_runtime::informer::InformerFactory;
use serde_json::json;

mod support;
use support::{eventually, Cluster, NS};

/// A client that hands 429s back instead of retrying them.
fn no_retry_client(cluster: &Cluster) -> Result<Client> {
    let mut config = cluster.server.kube_config();
    config.default_retry = false;
    Ok(Client::try_from(config)?)
}

/// Creates a ready, running pod `name` labelled `app=<app>` on a node, controlled by `owner`
/// (`(apiVersion, kind, name, uid)`).
async fn ready_pod(
    client: &Client,
    name: &str,
    app: &str,
    owner: (&str, &str, &str, &str),
    extra_conditions: serde_json::Value,
) -> Result<Pod> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": app}, "ownerReferences": [{
            "apiVersion": owner.0, "kind": owner.1, "name": owner.2, "uid": owner.3, "controller": true
        }]},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]}
    }))?;
    let mut created = pods.create(&PostParams::default(), &pod).await?;
    let mut conditions = vec![json!({"type": "Ready", "status": "True"})];
    conditions.extend(extra_conditions.as_array().cloned().unwrap_or_default());
    created.status = Some(serde_json::from_value(
        json!({"phase": "Running", "conditions": conditions}),
    )?);
    Ok(pods
        .replace_status(name, &PostParams::default(), &created)
        .await?)
}

async fn create_pdb(client: &Client, name: &str, app: &str, spec: serde_json::Value) -> Result<()> {
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), NS);
    let mut spec = spec;
    spec["selector"] = json!({"matchLabels": {"app": app}});
    let pdb: PodDisruptionBudget =
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec}))?;
    pdbs.create(&PostParams::default(), &pdb).await?;
    Ok(())
}

/// `(disruptionsAllowed, currentHealthy, desiredHealthy, expectedPods)` once the budget's
/// generation is observed and its counts are `want`.
async fn wait_status(
    client: &Client,
    name: &str,
    want: (i32, i32, i32, i32),
) -> Result<PodDisruptionBudget> {
    let pdbs: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), NS);
    eventually(&format!("pdb {name} at {want:?}"), || {
        let pdbs = pdbs.clone();
        async move {
            let pdb = pdbs.get(name).await?;
            let Some(s) = pdb.status.as_ref() else {
                return Ok(None);
            };
            let got = (
                s.disruptions_allowed,
                s.current_healthy,
                s.desired_healthy,
                s.expected_pods,
            );
            let observed = s.observed_generation == pdb.metadata.generation;
            Ok((observed && got == want).then_some(pdb))
        }
    })
    .await
}

#[tokio::test]
async fn budgets_follow_their_pods_and_evictions() -> Result<()> {
    let cluster = Cluster::start().await;
    cluster
        .start_registered(&[DISRUPTION], ControllerOptions::default())
        .await?;
    let client = no_retry_client(&cluster)?;

    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), NS);
    let ss: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "db"},
        "spec": {"replicas": 3, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                 "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": [{"name": "c", "image": "postgres"}]}}}
    }))?;
    let ss = sets.create(&PostParams::default(), &ss).await?;
    let uid = ss.metadata.uid.clone().context("uid")?;
    for i in 0..3 {
        ready_pod(
            &client,
            &format!("db-{i}"),
            "db",
            ("apps/v1", "StatefulSet", "db", &uid),
            json!([]),
        )
        .await?;
    }
    create_pdb(&client, "db", "db", json!({"maxUnavailable": 1})).await?;
    let pdb = wait_status(&client, "db", (1, 3, 2, 3)).await?;
    let cond = pdb.status.and_then(|s| s.conditions).unwrap_or_default();
    assert_eq!(cond.len(), 1);
    assert_eq!(
        (
            cond[0].type_.as_str(),
            cond[0].status.as_str(),
            cond[0].reason.as_str()
        ),
        ("DisruptionAllowed", "True", "SufficientPods")
    );

    // An eviction takes the one disruption; the controller then sees the pod terminating.
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    pods.evict("db-0", &EvictParams::default()).await?;
    wait_status(&client, "db", (0, 2, 2, 3)).await?;
    let refused = pods
        .evict("db-1", &EvictParams::default())
        .await
        .expect_err("budget spent");
    match refused {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 429);
            assert_eq!(
                s.message,
                "Cannot evict pod as it would violate the pod's disruption budget."
            );
        }
        other => panic!("expected a 429, got {other:?}"),
    }
    cluster.stop().await;
    Ok(())
}

/// A new pod of several budgets queues one of them (`getPdbForPod`, "Chose ... arbitrarily");
/// the others catch up when the informer resyncs the controller's budget handler: every 12 to
/// 24 hours in kube-controller-manager (the factory's default period), every second here.
#[tokio::test]
async fn budgets_over_the_same_pods_all_count_a_new_pod() -> Result<()> {
    let mut cluster = Cluster::start().await;
    cluster.factory = InformerFactory::new(cluster.client.clone(), Duration::from_secs(1));
    let ctrl = DisruptionController::new(
        &cluster.factory,
        cluster.client.clone(),
        cluster.events.recorder(EVENT_SOURCE),
        Config::default(),
    );
    cluster.spawn(ctrl.run(cluster.shutdown.clone()));
    cluster.start_informers();
    let client = no_retry_client(&cluster)?;

    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), NS);
    let ss: StatefulSet = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 3, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))?;
    let uid = sets
        .create(&PostParams::default(), &ss)
        .await?
        .metadata
        .uid
        .context("uid")?;
    let owner = ("apps/v1", "StatefulSet", "web", uid.as_str());
    for i in 0..3 {
        ready_pod(&client, &format!("web-{i}"), "web", owner, json!([])).await?;
    }
    for name in ["a", "b"] {
        create_pdb(&client, name, "web", json!({"minAvailable": 1})).await?;
    }
    for name in ["a", "b"] {
        wait_status(&client, name, (2, 3, 1, 3)).await?;
    }
    ready_pod(&client, "web-3", "web", owner, json!([])).await?;
    for name in ["a", "b"] {
        wait_status(&client, name, (3, 4, 1, 4)).await?;
    }
    cluster.stop().await;
    Ok(())
}

#[tokio::test]
async fn other_controllers_are_scaled_through_scale_and_stale_targets_are_reset() -> Result<()> {
    let cluster = Cluster::start().await;
    let ctrl = DisruptionController::new(
        &cluster.factory,
        cluster.client.clone(),
        cluster.events.recorder(EVENT_SOURCE),
        Config {
            stale_pod_disruption_timeout: Duration::from_secs(1),
            ..Config::default()
        },
    );
    cluster.spawn(ctrl.run(cluster.shutdown.clone()));
    cluster.start_informers();
    let client = no_retry_client(&cluster)?;

    // A pod controlled by a Deployment directly: no cache finder knows it, `/scale` does.
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), NS);
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }))?;
    let d = deployments.create(&PostParams::default(), &d).await?;
    let uid = d.metadata.uid.clone().context("uid")?;
    let now = jiff::Timestamp::now();
    let stale_since = jiff::Timestamp::from_second(now.as_second())?;
    ready_pod(
        &client,
        "web-0",
        "web",
        ("apps/v1", "Deployment", "web", &uid),
        json!([{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting", "lastTransitionTime": stale_since.to_string()}]),
    )
    .await?;
    create_pdb(&client, "web", "web", json!({"minAvailable": "50%"})).await?;
    wait_status(&client, "web", (0, 1, 2, 4)).await?;

    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    eventually("the stale DisruptionTarget condition is reset", || {
        let pods = pods.clone();
        async move {
            let pod = pods.get("web-0").await?;
            let cond = pod
                .status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .into_iter()
                .find(|c| c.type_ == "DisruptionTarget");
            Ok(cond.filter(|c| c.status == "False").map(|_| ()))
        }
    })
    .await?;
    cluster.stop().await;
    Ok(())
}
