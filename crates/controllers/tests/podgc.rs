//! PodGC's rules against the embedded API server, one `gc()` pass at a time, with a fake clock
//! for the orphan quarantine.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::{
    Container, Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodSpec, Taint,
};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::Client;
use rkcm_apiserver::testing;
use rkcm_controllers::podgc::{Config, PodGcController};
use rkcm_runtime::informer::InformerFactory;
use rkcm_runtime::{FakeClock, Shutdown};

mod support;
use support::{eventually, Cluster, NS};

const KEEP: &str = "test.rkcm.io/keep";

/// A running API server with a pod garbage collector on a fake clock; tests run its passes.
struct Harness {
    cluster: Cluster,
    gc: Arc<PodGcController>,
    clock: FakeClock,
}

impl std::ops::Deref for Harness {
    type Target = Cluster;

    fn deref(&self) -> &Cluster {
        &self.cluster
    }
}

async fn start(threshold: i64) -> Harness {
    let cluster = Cluster::start().await;
    let clock = FakeClock::default();
    let gc = PodGcController::new(
        &cluster.factory,
        cluster.client.clone(),
        Config {
            terminated_pod_gc_threshold: threshold,
            clock: Arc::new(clock.clone()),
            ..Config::default()
        },
    );
    cluster.start_informers();
    Harness { cluster, gc, clock }
}

fn pod(name: &str, node: Option<&str>, keep: bool) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            finalizers: keep.then(|| vec![KEEP.to_string()]),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: node.map(str::to_string),
            containers: vec![Container {
                name: "c".into(),
                image: Some("busybox".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    }
}

fn node(name: &str, ready: bool, taints: Vec<Taint>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints: Some(taints),
            ..Default::default()
        }),
        status: Some(NodeStatus {
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

async fn create_pod(client: &Client, p: &Pod) -> Result<()> {
    let api: Api<Pod> = Api::namespaced(client.clone(), NS);
    api.create(&PostParams::default(), p).await?;
    Ok(())
}

async fn set_phase(client: &Client, name: &str, phase: &str) -> Result<()> {
    let api: Api<Pod> = Api::namespaced(client.clone(), NS);
    let patch = serde_json::json!({ "status": { "phase": phase } });
    api.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

async fn create_node(client: &Client, n: &Node) -> Result<()> {
    let api: Api<Node> = Api::all(client.clone());
    let created = api.create(&PostParams::default(), n).await?;
    // Status is a subresource: write it separately in case create dropped it.
    if let Some(status) = &n.status {
        let patch = serde_json::json!({ "status": status });
        api.patch_status(
            created.metadata.name.as_deref().unwrap_or(""),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await?;
    }
    Ok(())
}

/// Waits until the pod cache holds `check`'s view of the world.
async fn cache_until(h: &Harness, what: &str, check: impl Fn(&[Arc<Pod>]) -> bool) -> Result<()> {
    let store = h.factory.informer::<Pod>().store();
    eventually(what, || {
        let ok = check(&store.list());
        async move { Ok(ok.then_some(())) }
    })
    .await
}

async fn names(client: &Client) -> Result<Vec<String>> {
    let api: Api<Pod> = Api::namespaced(client.clone(), NS);
    let mut names: Vec<String> = api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    names.sort();
    Ok(names)
}

fn phase_of(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

#[tokio::test]
async fn terminated_pods_above_the_threshold_are_deleted_oldest_first() -> Result<()> {
    let h = start(2).await;
    for (name, phase) in [
        ("p0", "Succeeded"),
        ("p1", "Failed"),
        ("p2", "Succeeded"),
        ("p3", "Failed"),
    ] {
        create_pod(&h.client, &pod(name, None, false)).await?;
        set_phase(&h.client, name, phase).await?;
    }
    create_pod(&h.client, &pod("running", Some("n"), false)).await?;
    cache_until(&h, "four terminated pods in the cache", |pods| {
        pods.iter()
            .filter(|p| matches!(phase_of(p), "Succeeded" | "Failed"))
            .count()
            == 4
    })
    .await?;
    h.gc.gc().await;
    assert_eq!(names(&h.client).await?, vec!["p2", "p3", "running"]);
    Ok(())
}

#[tokio::test]
async fn orphaned_pods_are_failed_and_deleted_only_after_the_quarantine() -> Result<()> {
    let h = start(12_500).await;
    create_node(&h.client, &node("alive", true, vec![])).await?;
    create_pod(&h.client, &pod("on-alive", Some("alive"), false)).await?;
    create_pod(&h.client, &pod("on-gone", Some("gone"), true)).await?;
    let nodes = h.factory.informer::<Node>().store();
    eventually("the node in the cache", || {
        let ok = nodes.len() == 1;
        async move { Ok(ok.then_some(())) }
    })
    .await?;
    cache_until(&h, "both pods in the cache", |pods| pods.len() == 2).await?;

    h.gc.gc().await;
    let api: Api<Pod> = Api::namespaced(h.client.clone(), NS);
    let untouched = api.get("on-gone").await?;
    assert!(
        untouched.metadata.deletion_timestamp.is_none(),
        "deleted during quarantine"
    );

    h.clock.step(Duration::from_secs(41));
    h.gc.gc().await;
    let orphan = api.get("on-gone").await?;
    assert!(
        orphan.metadata.deletion_timestamp.is_some(),
        "orphan deleted"
    );
    assert_eq!(phase_of(&orphan), "Failed");
    let cond = orphan
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "DisruptionTarget"))
        .context("DisruptionTarget condition")?;
    assert_eq!(cond.reason.as_deref(), Some("DeletionByPodGC"));
    assert!(api
        .get("on-alive")
        .await?
        .metadata
        .deletion_timestamp
        .is_none());

    let metrics = rkcm_runtime::metrics::encode_text();
    assert!(
        metrics.contains(
            "pod_gc_collector_force_delete_pods_total{namespace=\"default\",reason=\"orphaned\"} 1"
        ),
        "{metrics}"
    );
    Ok(())
}

#[tokio::test]
async fn terminating_pods_that_cannot_finish_are_force_deleted() -> Result<()> {
    let h = start(12_500).await;
    let out_of_service = Taint {
        key: "node.kubernetes.io/out-of-service".into(),
        effect: "NoExecute".into(),
        ..Default::default()
    };
    create_node(&h.client, &node("down", false, vec![out_of_service])).await?;
    create_node(&h.client, &node("up", true, vec![])).await?;
    create_pod(&h.client, &pod("unscheduled", None, true)).await?;
    create_pod(&h.client, &pod("on-down", Some("down"), true)).await?;
    create_pod(&h.client, &pod("on-up", Some("up"), true)).await?;
    for name in ["on-down", "on-up"] {
        set_phase(&h.client, name, "Running").await?;
    }
    let api: Api<Pod> = Api::namespaced(h.client.clone(), NS);
    for name in ["unscheduled", "on-down", "on-up"] {
        api.delete(name, &DeleteParams::default()).await?;
    }
    let nodes = h.factory.informer::<Node>().store();
    eventually("both nodes in the cache", || {
        let ok = nodes.len() == 2;
        async move { Ok(ok.then_some(())) }
    })
    .await?;
    cache_until(&h, "three terminating pods in the cache", |pods| {
        pods.iter()
            .filter(|p| p.metadata.deletion_timestamp.is_some())
            .count()
            == 3
    })
    .await?;

    h.gc.gc().await;
    assert_eq!(phase_of(&api.get("unscheduled").await?), "Failed");
    assert_eq!(phase_of(&api.get("on-down").await?), "Failed");
    assert_eq!(
        phase_of(&api.get("on-up").await?),
        "Running",
        "a ready node finishes its own pods"
    );
    Ok(())
}

#[tokio::test]
async fn run_collects_every_period_until_shutdown() -> Result<()> {
    let server = testing::start().await;
    let client = server.client();
    let factory = InformerFactory::new(client.clone(), Duration::ZERO);
    let gc = PodGcController::new(
        &factory,
        client.clone(),
        Config {
            terminated_pod_gc_threshold: 1,
            gc_check_period: Duration::from_millis(100),
            ..Config::default()
        },
    );
    let shutdown = Shutdown::new();
    factory.start(shutdown.clone());
    let handle = tokio::spawn(gc.run(shutdown.clone()));
    for name in ["p1-old", "p2-new"] {
        create_pod(&client, &pod(name, None, false)).await?;
        set_phase(&client, name, "Succeeded").await?;
    }
    eventually("the oldest terminated pod to be collected", || async {
        Ok((names(&client).await? == vec!["p2-new".to_string()]).then_some(()))
    })
    .await?;
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(10), handle)
        .await
        .context("run did not return after shutdown")??;
    Ok(())
}

#[tokio::test]
async fn marking_a_pod_failed_keeps_conditions_added_after_it_was_cached() -> Result<()> {
    let h = start(12_500).await;
    create_pod(&h.client, &pod("orphan", Some("gone"), true)).await?;
    let api: Api<Pod> = Api::namespaced(h.client.clone(), NS);
    let ready = serde_json::json!({"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}
    ]}});
    api.patch_status("orphan", &PatchParams::default(), &Patch::Merge(&ready))
        .await?;
    // The copy PodGC decides on; meanwhile another writer adds a condition.
    let cached = api.get("orphan").await?;
    let added = serde_json::json!({"status": {"conditions": [
        {"type": "example.com/Added", "status": "True"}
    ]}});
    api.patch_status("orphan", &PatchParams::default(), &Patch::Strategic(&added))
        .await?;

    h.gc.mark_failed_and_delete(
        &cached,
        Some(rkcm_controllers::podgc::rules::orphan_condition()),
    )
    .await?;

    let after = api.get("orphan").await?;
    assert_eq!(phase_of(&after), "Failed");
    assert!(after.metadata.deletion_timestamp.is_some(), "deleted");
    let mut types: Vec<String> = after
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .map(|c| c.type_)
        .collect();
    types.sort();
    assert_eq!(types, ["DisruptionTarget", "Ready", "example.com/Added"]);
    Ok(())
}
