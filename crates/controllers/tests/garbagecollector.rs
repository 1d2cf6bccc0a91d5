//! The garbage collector against the embedded API server: background, foreground and orphan
//! propagation, dangling owner references, and owners replaced by another object of the same name.
//!
//! Owners are mostly ConfigMaps and dependents pods, made by hand: pods without `spec.nodeName` are
//! removed at once when deleted, bound pods stay Terminating until the test, playing the kubelet,
//! deletes them with grace period 0. The last tests run the Deployment and ReplicaSet controllers
//! too, started through the registry as the manager starts them, and delete a Deployment as
//! `kubectl delete --cascade=background|orphan|foreground` does.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, ReplicaSet};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, Node, Pod, PodSpec, PodTemplate, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use rkcm_apiserver::testing::{self, TestServer};
use rkcm_controllers::garbagecollector::{Config, GarbageCollector};
use rkcm_controllers::registry::{self, ControllerOptions};

mod support;
use support::{eventually, Cluster, NS};

/// A running API server with the garbage collector, or with controllers from the registry.
type Harness = Cluster;

/// Starts a server and a garbage collector wired as the manager wires it.
async fn start() -> Harness {
    start_on(testing::start().await)
}

/// Starts a garbage collector against `server`.
fn start_on(server: TestServer) -> Harness {
    let h = Cluster::on(server);
    let gc = GarbageCollector::new(&h.factory, h.client.clone(), Config { workers: 4 });
    h.start_informers();
    h.spawn(gc.run(h.shutdown.clone()));
    h
}

/// Starts a server and the named controllers through the registry, as the manager does.
async fn start_controllers(names: &[&str]) -> Result<Harness> {
    let h = Cluster::start().await;
    let options = ControllerOptions {
        concurrent_gc_syncs: 4,
        ..ControllerOptions::default()
    };
    h.start_registered(names, options).await?;
    Ok(h)
}

impl Harness {
    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), NS)
    }

    fn config_maps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), NS)
    }

    /// Creates ConfigMap `name` and returns its owner reference (blocking or not).
    async fn owner(&self, name: &str) -> Result<ConfigMap> {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
            ..ConfigMap::default()
        };
        self.config_maps()
            .create(&PostParams::default(), &cm)
            .await
            .with_context(|| format!("creating configmap {name}"))
    }

    /// Creates pod `name` with `owners`, bound to a node when `bound` (graceful deletion).
    async fn dependent(&self, name: &str, owners: Vec<OwnerReference>, bound: bool) -> Result<Pod> {
        self.pods()
            .create(&PostParams::default(), &pod(name, owners, bound))
            .await
            .with_context(|| format!("creating pod {name}"))
    }

    /// Waits until pod `name` is gone.
    async fn pod_gone(&self, name: &str) -> Result<()> {
        let pods = self.pods();
        eventually(&format!("pod {name} to be deleted"), || async {
            Ok(pods.get_opt(name).await?.is_none().then_some(()))
        })
        .await
    }

    /// Waits until configmap `name` is gone.
    async fn owner_gone(&self, name: &str) -> Result<()> {
        let cms = self.config_maps();
        eventually(&format!("configmap {name} to be deleted"), || async {
            Ok(cms.get_opt(name).await?.is_none().then_some(()))
        })
        .await
    }

    /// Plays the kubelet for pod `name`: waits until it is Terminating, then removes it for good.
    async fn finish_termination(&self, name: &str) -> Result<()> {
        let pods = self.pods();
        eventually(&format!("pod {name} to be terminating"), || async {
            Ok(pods
                .get_opt(name)
                .await?
                .and_then(|p| p.metadata.deletion_timestamp))
        })
        .await?;
        pods.delete(
            name,
            &DeleteParams {
                grace_period_seconds: Some(0),
                ..DeleteParams::default()
            },
        )
        .await
        .with_context(|| format!("force-deleting pod {name}"))?;
        Ok(())
    }
}

/// Pod `name` with `owners`, bound to a node when `bound` (graceful deletion).
fn pod(name: &str, owners: Vec<OwnerReference>, bound: bool) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            owner_references: Some(owners),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some("busybox".into()),
                ..Container::default()
            }],
            node_name: bound.then(|| "node-1".to_string()),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// A reference to `owner`; `block` sets `blockOwnerDeletion`.
fn reference(owner: &ConfigMap, block: bool) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.metadata.name.clone().unwrap_or_default(),
        uid: owner.metadata.uid.clone().unwrap_or_default(),
        controller: None,
        block_owner_deletion: block.then_some(true),
    }
}

/// A reference to a ConfigMap that does not exist (or not with this UID).
fn reference_to(name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: name.into(),
        uid: uid.into(),
        controller: None,
        block_owner_deletion: None,
    }
}

fn owner_uids(pod: &Pod) -> Vec<String> {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .map(|o| o.uid.clone())
        .collect()
}

fn has_finalizer(cm: &ConfigMap, f: &str) -> bool {
    cm.metadata.finalizers.iter().flatten().any(|x| x == f)
}

fn policy(p: &str) -> DeleteParams {
    match p {
        "Orphan" => DeleteParams::orphan(),
        "Foreground" => DeleteParams::foreground(),
        _ => DeleteParams::background(),
    }
}

#[tokio::test]
async fn background_deletion_collects_dependents_of_a_deleted_owner() -> Result<()> {
    let h = start().await;
    let owner = h.owner("owner").await?;
    h.dependent("a", vec![reference(&owner, false)], false)
        .await?;
    h.dependent("b", vec![reference(&owner, true)], false)
        .await?;
    // A graceful dependent: deleted (Terminating) by the collector, removed by the kubelet.
    h.dependent("c", vec![reference(&owner, false)], true)
        .await?;
    // Not a dependent: must stay.
    h.dependent("bystander", vec![], false).await?;

    h.config_maps()
        .delete("owner", &policy("Background"))
        .await
        .context("deleting the owner")?;
    h.owner_gone("owner").await?;
    h.pod_gone("a").await?;
    h.pod_gone("b").await?;
    h.finish_termination("c").await?;
    h.pod_gone("c").await?;
    assert!(
        h.pods().get_opt("bystander").await?.is_some(),
        "a pod without owners is never collected"
    );
    Ok(())
}

#[tokio::test]
async fn a_dependent_with_a_dangling_and_a_live_owner_loses_only_the_dangling_reference(
) -> Result<()> {
    let h = start().await;
    let live = h.owner("live").await?;
    let ghost = reference_to("ghost", "00000000-0000-0000-0000-00000000dead");
    h.dependent("shared", vec![reference(&live, true), ghost.clone()], false)
        .await?;

    let pods = h.pods();
    let live_uid = live.metadata.uid.clone().unwrap_or_default();
    let pod = eventually("the dangling reference to be removed", || async {
        let pod = pods.get("shared").await?;
        Ok((owner_uids(&pod) == [live_uid.clone()]).then_some(pod))
    })
    .await?;
    // The surviving reference is unchanged.
    let remaining = pod.metadata.owner_references.clone().unwrap_or_default();
    assert_eq!(remaining, vec![reference(&live, true)]);
    assert!(pod.metadata.deletion_timestamp.is_none());
    Ok(())
}

#[tokio::test]
async fn a_reference_whose_uid_does_not_match_the_live_object_is_dangling() -> Result<()> {
    let h = start().await;
    let live = h.owner("reused-name").await?;
    // Same name, another UID: the owner it meant is gone; the object of that name is another one.
    h.dependent(
        "stale",
        vec![reference_to(
            "reused-name",
            "00000000-0000-0000-0000-0000000000aa",
        )],
        false,
    )
    .await?;
    // A true dependent of the live object, to show it is left alone.
    h.dependent("kept", vec![reference(&live, false)], false)
        .await?;

    h.pod_gone("stale").await?;
    let kept = h.pods().get("kept").await?;
    assert_eq!(
        owner_uids(&kept),
        [live.metadata.uid.clone().unwrap_or_default()]
    );
    assert!(kept.metadata.deletion_timestamp.is_none());
    assert!(h.config_maps().get_opt("reused-name").await?.is_some());
    Ok(())
}

#[tokio::test]
async fn foreground_deletion_keeps_the_owner_until_blocking_dependents_are_gone() -> Result<()> {
    let h = start().await;
    let owner = h.owner("fg-owner").await?;
    // Blocking and graceful: holds the owner until the kubelet finishes it.
    h.dependent("blocker", vec![reference(&owner, true)], true)
        .await?;
    // Blocking, removed at once.
    h.dependent("quick", vec![reference(&owner, true)], false)
        .await?;
    // Not blocking and graceful: deleted too, but the owner does not wait for it.
    h.dependent("free", vec![reference(&owner, false)], true)
        .await?;

    h.config_maps()
        .delete("fg-owner", &policy("Foreground"))
        .await
        .context("deleting the owner in the foreground")?;

    let cms = h.config_maps();
    let waiting = cms.get("fg-owner").await?;
    assert!(waiting.metadata.deletion_timestamp.is_some());
    assert!(has_finalizer(&waiting, "foregroundDeletion"));

    h.pod_gone("quick").await?;
    let pods = h.pods();
    eventually("both graceful dependents to be terminating", || async {
        let blocker = pods.get("blocker").await?;
        let free = pods.get("free").await?;
        Ok((blocker.metadata.deletion_timestamp.is_some()
            && free.metadata.deletion_timestamp.is_some())
        .then_some(()))
    })
    .await?;
    // The blocking dependent is still there, so the owner is too, still waiting.
    let still = cms.get("fg-owner").await?;
    assert!(has_finalizer(&still, "foregroundDeletion"));

    h.finish_termination("blocker").await?;
    h.owner_gone("fg-owner").await?;
    // The non-blocking dependent did not hold the owner: it is still terminating.
    assert!(pods
        .get_opt("free")
        .await?
        .is_some_and(|p| p.metadata.deletion_timestamp.is_some()));
    h.finish_termination("free").await?;
    h.pod_gone("free").await?;
    Ok(())
}

#[tokio::test]
async fn foreground_deletion_cascades_through_every_level_bottom_up() -> Result<()> {
    let h = start().await;
    let top = h.owner("top").await?;
    // A middle owner: a ConfigMap owned by `top` that owns a pod.
    let cms = h.config_maps();
    let middle = cms
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("middle".into()),
                    owner_references: Some(vec![reference(&top, true)]),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            },
        )
        .await?;
    h.dependent("leaf", vec![reference(&middle, true)], true)
        .await?;

    cms.delete("top", &policy("Foreground")).await?;
    // The middle owner has dependents of its own: it is deleted in the foreground too.
    eventually("the middle owner to wait for its dependents", || async {
        let m = cms.get("middle").await?;
        Ok(
            (m.metadata.deletion_timestamp.is_some() && has_finalizer(&m, "foregroundDeletion"))
                .then_some(()),
        )
    })
    .await?;
    assert!(cms.get_opt("top").await?.is_some(), "top waits for middle");

    h.finish_termination("leaf").await?;
    h.owner_gone("middle").await?;
    h.owner_gone("top").await?;
    Ok(())
}

#[tokio::test]
async fn orphan_deletion_removes_the_owner_and_keeps_its_dependents() -> Result<()> {
    let h = start().await;
    let owner = h.owner("orphaner").await?;
    let other = h.owner("other").await?;
    h.dependent("only-child", vec![reference(&owner, true)], false)
        .await?;
    h.dependent(
        "two-parents",
        vec![reference(&owner, false), reference(&other, false)],
        false,
    )
    .await?;

    h.config_maps()
        .delete("orphaner", &policy("Orphan"))
        .await
        .context("deleting the owner with orphaning")?;
    h.owner_gone("orphaner").await?;

    let pods = h.pods();
    let only = pods.get("only-child").await?;
    assert!(
        only.metadata
            .owner_references
            .iter()
            .flatten()
            .next()
            .is_none(),
        "orphaned pod keeps no reference: {:?}",
        only.metadata.owner_references
    );
    assert!(only.metadata.deletion_timestamp.is_none());
    let two = pods.get("two-parents").await?;
    assert_eq!(
        owner_uids(&two),
        [other.metadata.uid.clone().unwrap_or_default()]
    );
    assert!(two.metadata.deletion_timestamp.is_none());
    Ok(())
}

#[tokio::test]
async fn a_dependent_with_a_solid_owner_drops_its_reference_to_an_owner_deleted_in_the_foreground(
) -> Result<()> {
    let h = start().await;
    let leaving = h.owner("leaving").await?;
    let staying = h.owner("staying").await?;
    h.dependent(
        "shared",
        vec![reference(&leaving, true), reference(&staying, true)],
        false,
    )
    .await?;
    h.config_maps()
        .delete("leaving", &policy("Foreground"))
        .await?;
    // The shared dependent is not deleted: it loses the reference, which unblocks the owner.
    h.owner_gone("leaving").await?;
    let shared = h.pods().get("shared").await?;
    assert!(shared.metadata.deletion_timestamp.is_none());
    assert_eq!(
        owner_uids(&shared),
        [staying.metadata.uid.clone().unwrap_or_default()]
    );
    Ok(())
}

#[tokio::test]
async fn a_cluster_scoped_object_naming_a_namespaced_owner_is_left_alone() -> Result<()> {
    let h = start().await;
    let ghost = reference_to("ghost", "00000000-0000-0000-0000-0000000000bb");
    let nodes: Api<Node> = Api::all(h.client.clone());
    nodes
        .create(
            &PostParams::default(),
            &Node {
                metadata: ObjectMeta {
                    name: Some("invalid-owner".into()),
                    owner_references: Some(vec![ghost.clone()]),
                    ..ObjectMeta::default()
                },
                ..Node::default()
            },
        )
        .await?;
    // A pod naming the same absent owner is collected: the owner was checked and found absent.
    h.dependent("collected", vec![ghost], false).await?;
    h.pod_gone("collected").await?;
    // A ConfigMap owner cannot be at cluster scope: the reference is invalid, not dangling, and
    // kube leaves the object alone. Watch it for a while: it must stay.
    let until = tokio::time::Instant::now() + Duration::from_secs(1);
    while tokio::time::Instant::now() < until {
        let node = nodes.get("invalid-owner").await?;
        assert!(
            node.metadata.deletion_timestamp.is_none(),
            "the garbage collector deleted a cluster-scoped object with an invalid owner reference"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

const DEPLOYMENT_CONTROLLERS: [&str; 3] = [
    registry::GARBAGECOLLECTOR,
    registry::REPLICASET,
    registry::DEPLOYMENT,
];

/// Creates Deployment `name` with two replicas and waits for its ReplicaSet and pods.
async fn deployment_with_pods(h: &Harness, name: &str) -> Result<(ReplicaSet, Vec<Pod>)> {
    let labels = BTreeMap::from([("app".to_string(), name.to_string())]);
    let deployment = Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(2),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "c".into(),
                        image: Some("busybox".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    };
    let deployments: Api<Deployment> = Api::namespaced(h.client.clone(), NS);
    let created = deployments
        .create(&PostParams::default(), &deployment)
        .await
        .context("creating the deployment")?;
    let uid = created.metadata.uid.clone().unwrap_or_default();
    let replica_sets: Api<ReplicaSet> = Api::namespaced(h.client.clone(), NS);
    let selector = ListParams::default().labels(&format!("app={name}"));
    let rs = eventually("the deployment's replica set", || async {
        Ok(replica_sets
            .list(&selector)
            .await?
            .items
            .into_iter()
            .find(|rs| {
                rs.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|o| o.uid == uid)
            }))
    })
    .await?;
    let rs_uid = rs.metadata.uid.clone().unwrap_or_default();
    let pods = h.pods();
    let owned = eventually("the replica set's two pods", || async {
        let owned: Vec<Pod> = pods
            .list(&selector)
            .await?
            .items
            .into_iter()
            .filter(|p| owner_uids(p).contains(&rs_uid))
            .collect();
        Ok((owned.len() == 2).then_some(owned))
    })
    .await?;
    Ok((rs, owned))
}

#[tokio::test]
async fn deleting_a_deployment_in_the_background_removes_its_replica_sets_and_pods() -> Result<()> {
    let h = start_controllers(&DEPLOYMENT_CONTROLLERS).await?;
    let (rs, pods) = deployment_with_pods(&h, "web").await?;
    let deployments: Api<Deployment> = Api::namespaced(h.client.clone(), NS);
    deployments.delete("web", &policy("Background")).await?;
    let replica_sets: Api<ReplicaSet> = Api::namespaced(h.client.clone(), NS);
    let rs_name = rs.metadata.name.clone().unwrap_or_default();
    eventually("the replica set to be collected", || async {
        Ok(replica_sets
            .get_opt(&rs_name)
            .await?
            .is_none()
            .then_some(()))
    })
    .await?;
    for pod in &pods {
        h.pod_gone(pod.metadata.name.as_deref().unwrap_or_default())
            .await?;
    }
    Ok(())
}

#[tokio::test]
async fn deleting_a_deployment_with_orphaning_keeps_its_replica_set_without_owner() -> Result<()> {
    let h = start_controllers(&DEPLOYMENT_CONTROLLERS).await?;
    let (rs, pods) = deployment_with_pods(&h, "orphans").await?;
    let deployments: Api<Deployment> = Api::namespaced(h.client.clone(), NS);
    deployments.delete("orphans", &policy("Orphan")).await?;
    eventually("the deployment to go", || async {
        Ok(deployments
            .get_opt("orphans")
            .await?
            .is_none()
            .then_some(()))
    })
    .await?;
    let replica_sets: Api<ReplicaSet> = Api::namespaced(h.client.clone(), NS);
    let left = replica_sets
        .get(rs.metadata.name.as_deref().unwrap_or_default())
        .await?;
    assert!(left.metadata.deletion_timestamp.is_none());
    assert!(
        left.metadata
            .owner_references
            .iter()
            .flatten()
            .next()
            .is_none(),
        "{:?}",
        left.metadata.owner_references
    );
    // The pods still belong to the replica set, which keeps running them.
    for pod in &pods {
        let pod = h
            .pods()
            .get(pod.metadata.name.as_deref().unwrap_or_default())
            .await?;
        assert!(pod.metadata.deletion_timestamp.is_none());
        assert_eq!(
            owner_uids(&pod),
            [rs.metadata.uid.clone().unwrap_or_default()]
        );
    }
    Ok(())
}

#[tokio::test]
async fn deleting_a_deployment_in_the_foreground_removes_it_last() -> Result<()> {
    let h = start_controllers(&DEPLOYMENT_CONTROLLERS).await?;
    let (rs, _) = deployment_with_pods(&h, "fg").await?;
    let deployments: Api<Deployment> = Api::namespaced(h.client.clone(), NS);
    deployments.delete("fg", &policy("Foreground")).await?;
    eventually("the deployment to go", || async {
        Ok(deployments.get_opt("fg").await?.is_none().then_some(()))
    })
    .await?;
    // Foreground: by the time the deployment is gone, everything below it is gone too.
    let replica_sets: Api<ReplicaSet> = Api::namespaced(h.client.clone(), NS);
    assert!(replica_sets
        .get_opt(rs.metadata.name.as_deref().unwrap_or_default())
        .await?
        .is_none());
    let left = h
        .pods()
        .list(&ListParams::default().labels("app=fg"))
        .await?;
    assert!(left.items.is_empty(), "{:?}", left.items);
    Ok(())
}

#[tokio::test]
async fn dependents_of_an_owner_deleted_while_the_collector_was_down_are_collected_at_start(
) -> Result<()> {
    let server = testing::start().await;
    let client = server.client();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let owner = cms
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("gone-before".into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            },
        )
        .await?;
    // No collector yet: the dependent outlives its owner.
    pods.create(
        &PostParams::default(),
        &pod("left-behind", vec![reference(&owner, false)], false),
    )
    .await?;
    cms.delete("gone-before", &policy("Background")).await?;
    assert!(pods.get_opt("left-behind").await?.is_some());
    // The collector finds the owner absent when it starts.
    let h = start_on(server);
    h.pod_gone("left-behind").await?;
    Ok(())
}

#[tokio::test]
async fn an_owner_already_waiting_for_its_dependents_when_the_collector_starts_still_waits(
) -> Result<()> {
    let server = testing::start().await;
    let client = server.client();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let owner = cms
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("waiting".into()),
                    ..ObjectMeta::default()
                },
                ..ConfigMap::default()
            },
        )
        .await?;
    for i in 0..5 {
        pods.create(
            &PostParams::default(),
            &pod(&format!("blocker-{i}"), vec![reference(&owner, true)], true),
        )
        .await?;
    }
    cms.delete("waiting", &policy("Foreground")).await?;

    let h = start_on(server);
    eventually("the blocking dependents to be terminating", || async {
        let list = h.pods().list(&ListParams::default()).await?;
        Ok(list
            .items
            .iter()
            .all(|p| p.metadata.deletion_timestamp.is_some())
            .then_some(()))
    })
    .await?;
    let still = h.config_maps().get("waiting").await?;
    assert!(has_finalizer(&still, "foregroundDeletion"));
    for i in 0..5 {
        h.finish_termination(&format!("blocker-{i}")).await?;
    }
    h.owner_gone("waiting").await?;
    Ok(())
}

#[tokio::test]
async fn a_dependent_naming_an_owner_of_another_namespace_is_collected() -> Result<()> {
    let h = start().await;
    let owner = h.owner("home").await?;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(h.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &k8s_openapi::api::core::v1::Namespace {
                metadata: ObjectMeta {
                    name: Some("away".into()),
                    ..ObjectMeta::default()
                },
                ..Default::default()
            },
        )
        .await?;
    // Owner references name owners in the dependent's own namespace: from "away", the owner's
    // UID is found nowhere, so the reference dangles.
    let away: Api<Pod> = Api::namespaced(h.client.clone(), "away");
    away.create(
        &PostParams::default(),
        &pod("stray", vec![reference(&owner, false)], false),
    )
    .await?;
    h.dependent("legit", vec![reference(&owner, false)], false)
        .await?;
    eventually("the cross-namespace dependent to be collected", || async {
        Ok(away.get_opt("stray").await?.is_none().then_some(()))
    })
    .await?;
    assert!(h.pods().get_opt("legit").await?.is_some());
    assert!(h.config_maps().get_opt("home").await?.is_some());
    Ok(())
}

/// What the collector relies on from the API server: preconditions on patches and deletes.
#[tokio::test]
async fn the_server_honours_the_preconditions_the_collector_relies_on() -> Result<()> {
    let h = start().await;
    let cm = h.owner("guarded").await?;
    let stale = cm.metadata.resource_version.clone();
    let cms = h.config_maps();
    cms.patch(
        "guarded",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({"metadata": {"labels": {"a": "b"}}})),
    )
    .await?;
    // A merge patch carrying a stale resourceVersion is refused.
    let patched = cms
        .patch(
            "guarded",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"metadata": {
                "ownerReferences": null,
                "resourceVersion": stale,
            }})),
        )
        .await;
    assert!(
        matches!(&patched, Err(kube::Error::Api(s)) if s.code == 409),
        "{patched:?}"
    );
    // Deletes with a wrong UID or a stale resourceVersion are refused.
    for preconditions in [
        kube::api::Preconditions {
            uid: Some("00000000-0000-0000-0000-000000000000".into()),
            resource_version: None,
        },
        kube::api::Preconditions {
            uid: cm.metadata.uid.clone(),
            resource_version: stale.clone(),
        },
    ] {
        let deleted = cms
            .delete(
                "guarded",
                &DeleteParams {
                    preconditions: Some(preconditions),
                    ..DeleteParams::default()
                },
            )
            .await;
        assert!(
            matches!(&deleted, Err(kube::Error::Api(s)) if s.code == 409),
            "{deleted:?}"
        );
    }
    assert!(cms.get_opt("guarded").await?.is_some());
    Ok(())
}

/// kube refuses a patch whose `metadata.uid` differs from the object's (422, "field is
/// immutable"): the collector's and the controller-ref manager's patches carry the UID so that
/// they never apply to an object recreated under the same name.
#[tokio::test]
async fn the_server_refuses_a_patch_carrying_another_uid() -> Result<()> {
    let h = start().await;
    h.owner("uid-guarded").await?;
    let patched = h
        .config_maps()
        .patch(
            "uid-guarded",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"metadata": {
                "uid": "00000000-0000-0000-0000-000000000000",
                "labels": {"patched": "yes"},
            }})),
        )
        .await;
    assert!(
        matches!(&patched, Err(kube::Error::Api(s)) if s.code == 422),
        "{patched:?}"
    );
    Ok(())
}

/// `kubectl delete job --cascade=orphan`: the collector watches Jobs, so the orphan finalizer is
/// processed and the Job goes while its pod stays, without its owner reference.
#[tokio::test]
async fn deleting_a_job_with_orphaning_keeps_its_pod_without_owner() -> Result<()> {
    use k8s_openapi::api::batch::v1::Job;
    let h = start().await;
    let jobs: Api<Job> = Api::namespaced(h.client.clone(), NS);
    let job: Job = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "batch"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}},
    }))?;
    let job = jobs.create(&PostParams::default(), &job).await?;
    let owner = OwnerReference {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        name: "batch".into(),
        uid: job.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    h.pods()
        .create(&PostParams::default(), &pod("batch-x", vec![owner], false))
        .await?;
    jobs.delete("batch", &policy("Orphan")).await?;
    eventually("the job to go", || async {
        Ok(jobs.get_opt("batch").await?.is_none().then_some(()))
    })
    .await?;
    let left = h.pods().get("batch-x").await?;
    assert!(left.metadata.deletion_timestamp.is_none());
    assert!(
        owner_uids(&left).is_empty(),
        "{:?}",
        left.metadata.owner_references
    );
    Ok(())
}

/// A PodTemplate: a kind no other controller watches, so the collector finds it by discovery and
/// watches it metadata-only.
async fn pod_template(h: &Harness, name: &str, owners: Vec<OwnerReference>) -> Result<PodTemplate> {
    let pt = PodTemplate {
        metadata: ObjectMeta {
            name: Some(name.into()),
            owner_references: (!owners.is_empty()).then_some(owners),
            ..ObjectMeta::default()
        },
        template: Some(PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    image: Some("busybox".into()),
                    ..Container::default()
                }],
                ..PodSpec::default()
            }),
        }),
    };
    Api::<PodTemplate>::namespaced(h.client.clone(), NS)
        .create(&PostParams::default(), &pt)
        .await
        .with_context(|| format!("creating pod template {name}"))
}

fn template_reference(owner: &PodTemplate, block: bool) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "PodTemplate".into(),
        name: owner.metadata.name.clone().unwrap_or_default(),
        uid: owner.metadata.uid.clone().unwrap_or_default(),
        controller: None,
        block_owner_deletion: block.then_some(true),
    }
}

#[tokio::test]
async fn kinds_found_by_discovery_are_collected_and_honour_every_propagation_policy() -> Result<()>
{
    let h = start().await;
    let templates: Api<PodTemplate> = Api::namespaced(h.client.clone(), NS);

    // A dependent of a discovered kind goes with its (typed) owner.
    let owner = h.owner("cm-owner").await?;
    pod_template(&h, "pt-dependent", vec![reference(&owner, false)]).await?;
    h.config_maps()
        .delete("cm-owner", &policy("Background"))
        .await?;
    eventually("the pod template dependent collected", || async {
        Ok(templates
            .get_opt("pt-dependent")
            .await?
            .is_none()
            .then_some(()))
    })
    .await?;

    // Foreground deletion of an owner of a discovered kind: it waits for its blocking
    // dependent, then goes.
    let fg = pod_template(&h, "pt-foreground", vec![]).await?;
    h.dependent("fg-child", vec![template_reference(&fg, true)], false)
        .await?;
    templates
        .delete("pt-foreground", &policy("Foreground"))
        .await?;
    eventually("the foreground owner and its dependent gone", || async {
        let owner_gone = templates.get_opt("pt-foreground").await?.is_none();
        let child_gone = h.pods().get_opt("fg-child").await?.is_none();
        Ok((owner_gone && child_gone).then_some(()))
    })
    .await?;

    // Orphan deletion of an owner of a discovered kind: the orphan finalizer is processed.
    let orphaner = pod_template(&h, "pt-orphan", vec![]).await?;
    h.dependent(
        "orphan-child",
        vec![template_reference(&orphaner, false)],
        false,
    )
    .await?;
    templates.delete("pt-orphan", &policy("Orphan")).await?;
    eventually("the orphaning owner gone", || async {
        Ok(templates
            .get_opt("pt-orphan")
            .await?
            .is_none()
            .then_some(()))
    })
    .await?;
    let child = h.pods().get("orphan-child").await?;
    assert!(
        owner_uids(&child).is_empty(),
        "{:?}",
        child.metadata.owner_references
    );
    assert!(child.metadata.deletion_timestamp.is_none());
    Ok(())
}
