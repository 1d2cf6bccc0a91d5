//! The DaemonSet controller against the embedded API server.
//!
//! No scheduler or kubelet runs here: the tests create Node objects, and play the kubelet where
//! needed (marking pods Running and Ready, finishing the deletion of pods the controller deleted).

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::Client;
use rkcm_controllers::daemon::pod_template::{target_node_name, CONTROLLER_REVISION_HASH_LABEL};
use rkcm_controllers::registry::{self, ControllerOptions};
use serde_json::json;

mod support;
use support::{eventually, Cluster, NS};

async fn start() -> Result<Cluster> {
    let cluster = Cluster::start().await;
    cluster
        .start_registered(&[registry::DAEMONSET], ControllerOptions::default())
        .await?;
    Ok(cluster)
}

async fn create_node(client: &Client, name: &str, labels: &[(&str, &str)]) -> Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let node: Node = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }))?;
    nodes.create(&PostParams::default(), &node).await?;
    Ok(())
}

fn daemon_set(name: &str, image: &str, extra_spec: serde_json::Value) -> Result<DaemonSet> {
    let mut ds = json!({
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": image}]},
            },
        },
    });
    if let (Some(spec), Some(extra)) = (ds["spec"].as_object_mut(), extra_spec.as_object()) {
        for (k, v) in extra {
            spec.insert(k.clone(), v.clone());
        }
    }
    Ok(serde_json::from_value(ds)?)
}

/// The DaemonSet's pods not being deleted, as (name, target node, revision hash), sorted by node.
async fn live_pods(client: &Client, app: &str) -> Result<Vec<(String, String, String)>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let mut out: Vec<_> = pods
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await?
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .map(|p| {
            let node = target_node_name(&p).unwrap_or_default();
            let hash = p
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL).cloned())
                .unwrap_or_default();
            (p.metadata.name.unwrap_or_default(), node, hash)
        })
        .collect();
    out.sort_by(|a, b| a.1.cmp(&b.1));
    Ok(out)
}

/// Plays the kubelet once: pods being deleted go away, the others become Running and Ready.
async fn kubelet_step(client: &Client, app: &str) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    for pod in pods
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await?
        .items
    {
        let name = pod.metadata.name.clone().unwrap_or_default();
        if pod.metadata.deletion_timestamp.is_some() {
            let _ = pods
                .delete(&name, &DeleteParams::default().grace_period(0))
                .await;
            continue;
        }
        let status = pod.status.clone().unwrap_or_default();
        if matches!(status.phase.as_deref(), Some("Failed" | "Succeeded")) {
            continue;
        }
        let ready = status
            .conditions
            .as_ref()
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
        if !ready {
            let now = jiff::Timestamp::now().to_string();
            let patch = json!({"status": {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": now}
            ]}});
            match pods
                .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                // Deleted meanwhile (an unbound pod goes at once).
                Err(kube::Error::Api(s)) if s.code == 404 => {}
                other => {
                    other.with_context(|| format!("marking {name} ready"))?;
                }
            }
        }
    }
    Ok(())
}

async fn status_of(
    client: &Client,
    name: &str,
) -> Result<k8s_openapi::api::apps::v1::DaemonSetStatus> {
    let sets: Api<DaemonSet> = Api::namespaced(client.clone(), NS);
    Ok(sets.get(name).await?.status.unwrap_or_default())
}

#[tokio::test]
async fn one_pod_per_node_pinned_by_node_affinity_and_misscheduled_pods_go() -> Result<()> {
    let cluster = start().await?;
    let client = cluster.client.clone();
    for n in ["node-a", "node-b", "node-c"] {
        create_node(&client, n, &[]).await?;
    }
    let sets: Api<DaemonSet> = Api::namespaced(client.clone(), NS);
    sets.create(
        &PostParams::default(),
        &daemon_set("spread", "img:1", json!({}))?,
    )
    .await?;

    let pods = eventually("a pod for each node", || async {
        let pods = live_pods(&client, "spread").await?;
        Ok((pods.len() == 3).then_some(pods))
    })
    .await?;
    let nodes: Vec<_> = pods.iter().map(|p| p.1.as_str()).collect();
    assert_eq!(nodes, ["node-a", "node-b", "node-c"]);
    let one: Pod = Api::namespaced(client.clone(), NS).get(&pods[0].0).await?;
    let spec = one.spec.expect("spec");
    assert!(spec.node_name.is_none(), "the scheduler binds daemon pods");
    assert!(spec
        .tolerations
        .unwrap_or_default()
        .iter()
        .any(
            |t| t.key.as_deref() == Some("node.kubernetes.io/unreachable")
                && t.effect.as_deref() == Some("NoExecute")
        ));
    let labels = one.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels.get("pod-template-generation").map(String::as_str),
        Some("1")
    );

    let revisions: Api<ControllerRevision> = Api::namespaced(client.clone(), NS);
    let list = revisions.list(&ListParams::default()).await?.items;
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].revision, 1);
    assert_eq!(
        list[0]
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL)),
        Some(&pods[0].2)
    );

    kubelet_step(&client, "spread").await?;
    eventually("status: 3 desired, ready and available", || async {
        let s = status_of(&client, "spread").await?;
        Ok((s.desired_number_scheduled == 3
            && s.current_number_scheduled == 3
            && s.number_ready == 3
            && s.number_available == Some(3)
            && s.updated_number_scheduled == Some(3)
            && s.observed_generation == Some(1))
        .then_some(()))
    })
    .await?;

    // A NoExecute taint evicts the daemon pod; desired drops to 2.
    let nodes_api: Api<Node> = Api::all(client.clone());
    nodes_api
        .patch(
            "node-b",
            &PatchParams::default(),
            &Patch::Merge(&json!({"spec": {"taints": [{"key": "evict", "effect": "NoExecute"}]}})),
        )
        .await?;
    eventually("the pod on the tainted node deleted", || async {
        let pods = live_pods(&client, "spread").await?;
        Ok(pods.iter().all(|p| p.1 != "node-b").then_some(()))
    })
    .await?;
    eventually("status: 2 desired", || async {
        let s = status_of(&client, "spread").await?;
        Ok((s.desired_number_scheduled == 2).then_some(()))
    })
    .await?;
    cluster.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_node_selector_follows_node_labels() -> Result<()> {
    let cluster = start().await?;
    let client = cluster.client.clone();
    create_node(&client, "node-a", &[("disk", "ssd")]).await?;
    create_node(&client, "node-b", &[]).await?;
    let sets: Api<DaemonSet> = Api::namespaced(client.clone(), NS);
    sets.create(
        &PostParams::default(),
        &daemon_set(
            "ssd",
            "img:1",
            json!({"template": {
                "metadata": {"labels": {"app": "ssd"}},
                "spec": {"nodeSelector": {"disk": "ssd"}, "containers": [{"name": "c", "image": "img:1"}]},
            }}),
        )?,
    )
    .await?;
    eventually("one pod, on the labelled node", || async {
        let pods = live_pods(&client, "ssd").await?;
        Ok((pods.len() == 1 && pods[0].1 == "node-a").then_some(()))
    })
    .await?;

    // The other node gains the label: a second pod; the first loses it: its pod goes.
    let nodes_api: Api<Node> = Api::all(client.clone());
    nodes_api
        .patch(
            "node-b",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": {"disk": "ssd"}}})),
        )
        .await?;
    nodes_api
        .patch(
            "node-a",
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"labels": {"disk": null}}})),
        )
        .await?;
    eventually("the pod moved to node-b", || async {
        let pods = live_pods(&client, "ssd").await?;
        Ok((pods.len() == 1 && pods[0].1 == "node-b").then_some(()))
    })
    .await?;
    cluster.stop().await;
    Ok(())
}

#[tokio::test]
async fn a_rolling_update_replaces_one_pod_at_a_time_and_a_rollback_reuses_the_old_revision(
) -> Result<()> {
    let cluster = start().await?;
    let client = cluster.client.clone();
    for n in ["node-a", "node-b", "node-c"] {
        create_node(&client, n, &[]).await?;
    }
    let sets: Api<DaemonSet> = Api::namespaced(client.clone(), NS);
    sets.create(
        &PostParams::default(),
        &daemon_set("roll", "img:1", json!({}))?,
    )
    .await?;
    let first = eventually("three pods", || async {
        let pods = live_pods(&client, "roll").await?;
        Ok((pods.len() == 3).then_some(pods))
    })
    .await?;
    let old_hash = first[0].2.clone();
    kubelet_step(&client, "roll").await?;
    eventually("all available", || async {
        let s = status_of(&client, "roll").await?;
        Ok((s.number_available == Some(3)).then_some(()))
    })
    .await?;

    let set_image = |image: &'static str| {
        let sets = sets.clone();
        async move {
            let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}});
            sets.patch("roll", &PatchParams::default(), &Patch::Strategic(&patch))
                .await
        }
    };
    set_image("img:2").await?;

    // maxUnavailable 1: never more than one node without a live pod while the update goes.
    let new_hash = eventually("every pod on the new revision", || async {
        let pods = live_pods(&client, "roll").await?;
        if pods.len() < 2 {
            anyhow::bail!("more than one pod down at once: {pods:?}");
        }
        kubelet_step(&client, "roll").await?;
        let s = status_of(&client, "roll").await?;
        let all_new = pods.len() == 3 && pods.iter().all(|p| p.2 != old_hash);
        Ok((all_new && s.updated_number_scheduled == Some(3)).then(|| pods[0].2.clone()))
    })
    .await?;
    assert_ne!(new_hash, old_hash);
    // The API server bumped the template generation with the template; new pods carry it.
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), NS);
    for pod in pods_api
        .list(&ListParams::default().labels("app=roll"))
        .await?
        .items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
    {
        let labels = pod.metadata.labels.unwrap_or_default();
        assert_eq!(
            labels.get("pod-template-generation").map(String::as_str),
            Some("2")
        );
    }
    let generation = sets.get("roll").await?.metadata.generation;
    assert_eq!(generation, Some(2));

    let revisions: Api<ControllerRevision> = Api::namespaced(client.clone(), NS);
    let mut list = revisions.list(&ListParams::default()).await?.items;
    list.sort_by_key(|r| r.revision);
    assert_eq!(list.iter().map(|r| r.revision).collect::<Vec<_>>(), [1, 2]);

    // Back to the first template: its revision is reused and renumbered 3, as kube does.
    set_image("img:1").await?;
    eventually("the old revision renumbered 3", || async {
        let list = revisions.list(&ListParams::default()).await?.items;
        let old = list.iter().find(|r| {
            r.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(CONTROLLER_REVISION_HASH_LABEL))
                == Some(&old_hash)
        });
        Ok((list.len() == 2 && old.is_some_and(|r| r.revision == 3)).then_some(()))
    })
    .await?;
    eventually("every pod back on the old revision", || async {
        kubelet_step(&client, "roll").await?;
        let pods = live_pods(&client, "roll").await?;
        Ok((pods.len() == 3 && pods.iter().all(|p| p.2 == old_hash)).then_some(()))
    })
    .await?;
    cluster.stop().await;
    Ok(())
}

#[tokio::test]
async fn failed_daemon_pods_are_replaced_with_a_warning() -> Result<()> {
    let cluster = start().await?;
    let client = cluster.client.clone();
    create_node(&client, "node-a", &[]).await?;
    let sets: Api<DaemonSet> = Api::namespaced(client.clone(), NS);
    sets.create(
        &PostParams::default(),
        &daemon_set("crashy", "img:1", json!({}))?,
    )
    .await?;
    let pods = eventually("one pod", || async {
        let pods = live_pods(&client, "crashy").await?;
        Ok((pods.len() == 1).then_some(pods))
    })
    .await?;
    let failed = pods[0].0.clone();
    let pods_api: Api<Pod> = Api::namespaced(client.clone(), NS);
    pods_api
        .patch_status(
            &failed,
            &PatchParams::default(),
            &Patch::Merge(&json!({"status": {"phase": "Failed"}})),
        )
        .await?;
    eventually("a replacement pod", || async {
        kubelet_step(&client, "crashy").await?;
        let pods = live_pods(&client, "crashy").await?;
        Ok((pods.len() == 1 && pods[0].0 != failed).then_some(()))
    })
    .await?;
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    eventually("a FailedDaemonPod event", || async {
        let list = events.list(&ListParams::default()).await?.items;
        Ok(list
            .iter()
            .find(|e| e.reason.as_deref() == Some("FailedDaemonPod"))
            .map(|e| e.message.clone().unwrap_or_default()))
    })
    .await
    .map(|message| {
        assert_eq!(
            message,
            format!("Found failed daemon pod {NS}/{failed} on node node-a, will try to kill it")
        );
    })?;
    cluster.stop().await;
    Ok(())
}
