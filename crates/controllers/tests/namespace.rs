//! The namespace controller and the API server's namespace lifecycle, together: deleting a
//! namespace empties it (graceful pods and foreign finalizers respected), reports progress in its
//! conditions, and removes it once nothing is left; creation in a terminating namespace is refused.
//!
//! No kubelet runs here: the test plays it, deleting terminating bound pods with grace period 0.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec, ReplicaSet};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, Namespace, NamespaceCondition, Pod, PodSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::client::Body;
use kube::Client;
use rkcm_controllers::namespace::{self, NamespaceController};
use rkcm_controllers::registry::{self, ControllerOptions};
use rkcm_runtime::{Shutdown, SystemClock};

mod support;
use serde_json::{json, Value};
use support::{eventually, Cluster};

const HOLD: &str = "example.com/hold";

/// A running API server with the namespace controller.
type Harness = Cluster;

/// Starts a server and a namespace controller wired as the manager wires it, with short waits.
async fn start() -> Harness {
    let h = Cluster::start().await;
    let ctrl = NamespaceController::new(
        &h.factory,
        h.client.clone(),
        namespace::Config {
            resync_period: Duration::from_secs(1),
            deletion_grace_period: Duration::from_millis(100),
            clock: Arc::new(SystemClock),
        },
    );
    h.start_informers();
    h.spawn(ctrl.run(2, h.shutdown.clone()));
    h
}

fn config_map(name: &str, finalizers: &[&str]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            finalizers: (!finalizers.is_empty())
                .then(|| finalizers.iter().map(|f| f.to_string()).collect()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
        ..ConfigMap::default()
    }
}

/// A pod; bound to a node when `bound`, so that deleting it is graceful.
fn pod(name: &str, bound: bool) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some("busybox".into()),
                ..Container::default()
            }],
            node_name: bound.then(|| "node-1".to_string()),
            termination_grace_period_seconds: Some(30),
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

async fn create_namespace(client: &Client, name: &str) -> Result<Namespace> {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .with_context(|| format!("creating namespace {name}"))
}

fn condition<'a>(ns: &'a Namespace, type_: &str) -> Option<&'a NamespaceCondition> {
    ns.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// POSTs `body` to `path` and returns the status code and the decoded response (a `Status` on errors).
async fn raw_create(
    client: &Client,
    path: &str,
    body: &impl serde::Serialize,
) -> Result<(u16, Value)> {
    let req = kube::core::Request::new(path)
        .create(&PostParams::default(), serde_json::to_vec(body)?)
        .context("building the request")?;
    let res = client.send(req.map(Body::from)).await?;
    let code = res.status().as_u16();
    let bytes = res.into_body().collect_bytes().await?;
    Ok((code, serde_json::from_slice(&bytes)?))
}

#[tokio::test]
async fn deleting_a_namespace_empties_it_waits_for_finalizers_then_removes_it() -> Result<()> {
    let h = start().await;
    let client = &h.client;
    create_namespace(client, "doomed").await?;
    create_namespace(client, "bystander").await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "doomed");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    cms.create(&PostParams::default(), &config_map("plain", &[]))
        .await?;
    cms.create(&PostParams::default(), &config_map("held", &[HOLD]))
        .await?;
    pods.create(&PostParams::default(), &pod("pending", false))
        .await?;
    pods.create(&PostParams::default(), &pod("running", true))
        .await?;
    // Outside the namespace: never touched.
    let other_cms: Api<ConfigMap> = Api::namespaced(client.clone(), "bystander");
    other_cms
        .create(&PostParams::default(), &config_map("plain", &[]))
        .await?;
    let other_pods: Api<Pod> = Api::namespaced(client.clone(), "bystander");
    other_pods
        .create(&PostParams::default(), &pod("running", true))
        .await?;

    // As `kubectl delete namespace doomed` sends it.
    namespaces
        .delete("doomed", &DeleteParams::background())
        .await
        .context("deleting the namespace")?;
    let ns = namespaces.get("doomed").await?;
    assert!(ns.metadata.deletion_timestamp.is_some());
    assert_eq!(
        ns.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Terminating")
    );

    // Content goes: at once for what nothing holds, gracefully for the bound pod.
    eventually("unheld content to be deleted", || async {
        Ok(
            (cms.get_opt("plain").await?.is_none() && pods.get_opt("pending").await?.is_none())
                .then_some(()),
        )
    })
    .await?;
    eventually(
        "the bound pod and the held configmap to be terminating",
        || async {
            let running = pods.get_opt("running").await?;
            let held = cms.get_opt("held").await?;
            Ok(
                (running.is_some_and(|p| p.metadata.deletion_timestamp.is_some())
                    && held.is_some_and(|c| c.metadata.deletion_timestamp.is_some()))
                .then_some(()),
            )
        },
    )
    .await?;

    // Progress is reported in the conditions.
    let ns = eventually("conditions that report the remaining content", || async {
        let ns = namespaces.get("doomed").await?;
        let content = condition(&ns, "NamespaceContentRemaining").is_some_and(|c| {
            c.status == "True" && c.message.as_deref().is_some_and(|m| m.contains("pods."))
        });
        let finalizers = condition(&ns, "NamespaceFinalizersRemaining").is_some_and(|c| {
            c.status == "True" && c.message.as_deref().is_some_and(|m| m.contains(HOLD))
        });
        Ok((content && finalizers).then_some(ns))
    })
    .await?;
    let failure =
        condition(&ns, "NamespaceDeletionContentFailure").context("content failure condition")?;
    assert_eq!(failure.status, "False", "{failure:?}");
    assert!(ns
        .spec
        .as_ref()
        .and_then(|s| s.finalizers.as_ref())
        .is_some_and(|f| f.iter().any(|x| x == "kubernetes")));

    // The kubelet finishes the pod; the foreign finalizer still holds the namespace.
    pods.delete(
        "running",
        &DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        },
    )
    .await?;
    eventually("the pods to be reported gone", || async {
        let ns = namespaces.get("doomed").await?;
        let content = condition(&ns, "NamespaceContentRemaining")
            .and_then(|c| c.message.clone())
            .unwrap_or_default();
        Ok((content.contains("configmaps.") && !content.contains("pods.")).then_some(()))
    })
    .await?;
    assert!(namespaces.get_opt("doomed").await?.is_some());

    // Its owner releases the object: the namespace goes.
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .context("removing the foreign finalizer")?;
    eventually("the namespace to be removed", || async {
        Ok(namespaces.get_opt("doomed").await?.is_none().then_some(()))
    })
    .await?;

    // Nothing outside it was touched.
    assert!(other_cms.get_opt("plain").await?.is_some());
    let survivor = other_pods.get("running").await?;
    assert!(survivor.metadata.deletion_timestamp.is_none());
    let bystander = namespaces.get("bystander").await?;
    assert!(bystander.metadata.deletion_timestamp.is_none());
    Ok(())
}

#[tokio::test]
async fn creating_in_a_terminating_namespace_is_forbidden_with_the_namespace_terminating_cause(
) -> Result<()> {
    let h = start().await;
    let client = &h.client;
    create_namespace(client, "closing").await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "closing");
    // Held open by a foreign finalizer so the namespace stays Terminating.
    cms.create(&PostParams::default(), &config_map("held", &[HOLD]))
        .await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete("closing", &DeleteParams::background())
        .await?;

    let (code, status) = raw_create(
        client,
        "/api/v1/namespaces/closing/configmaps",
        &config_map("late", &[]),
    )
    .await?;
    assert_eq!(code, 403, "{status}");
    assert_eq!(status["reason"], "Forbidden", "{status}");
    let causes = status["details"]["causes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        causes.iter().any(|c| c["reason"] == "NamespaceTerminating"),
        "{status}"
    );
    // Through the typed client too.
    match cms
        .create(&PostParams::default(), &config_map("late", &[]))
        .await
    {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 403),
        other => bail!("expected 403, got {other:?}"),
    }

    // Creating in a namespace that does not exist is 404.
    let (code, status) = raw_create(
        client,
        "/api/v1/namespaces/nowhere/configmaps",
        &config_map("x", &[]),
    )
    .await?;
    assert_eq!(code, 404, "{status}");

    // The controller still empties and removes it once the finalizer is gone.
    let held = eventually("the held configmap to be terminating", || async {
        Ok(cms
            .get_opt("held")
            .await?
            .filter(|c| c.metadata.deletion_timestamp.is_some()))
    })
    .await?;
    assert!(held.metadata.finalizers.iter().flatten().any(|f| f == HOLD));
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await?;
    eventually("the namespace to be removed", || async {
        Ok(namespaces.get_opt("closing").await?.is_none().then_some(()))
    })
    .await?;
    let left = cms.list(&ListParams::default()).await;
    // Listing in a removed namespace returns nothing (or 404), never the old content.
    if let Ok(list) = left {
        assert!(list.items.is_empty());
    }
    Ok(())
}

#[tokio::test]
async fn system_namespaces_cannot_be_deleted() -> Result<()> {
    let h = start().await;
    let namespaces: Api<Namespace> = Api::all(h.client.clone());
    // NamespaceLifecycle's immortal namespaces (kube lets kube-node-lease be deleted).
    for name in ["default", "kube-system", "kube-public"] {
        match namespaces.delete(name, &DeleteParams::default()).await {
            Err(kube::Error::Api(s)) => assert_eq!(s.code, 403, "{name}: {s:?}"),
            other => bail!("deleting {name}: expected 403, got {other:?}"),
        }
    }
    Ok(())
}

/// Plays the kubelet in `namespace`: removes terminating pods for good, until `shutdown`.
fn kubelet(client: Client, namespace: &str, shutdown: Shutdown) {
    let pods: Api<Pod> = Api::namespaced(client, namespace);
    tokio::spawn(async move {
        let force = DeleteParams {
            grace_period_seconds: Some(0),
            ..DeleteParams::default()
        };
        while !shutdown.is_cancelled() {
            if let Ok(list) = pods.list(&ListParams::default()).await {
                for pod in list
                    .items
                    .iter()
                    .filter(|p| p.metadata.deletion_timestamp.is_some())
                {
                    let _ = pods
                        .delete(pod.metadata.name.as_deref().unwrap_or_default(), &force)
                        .await;
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}

#[tokio::test]
async fn deleting_a_namespace_with_a_running_deployment_under_the_manager_removes_everything(
) -> Result<()> {
    // Every controller involved, started through the registry as the manager starts them.
    let h = Cluster::start().await;
    h.start_registered(
        &[
            registry::NAMESPACE,
            registry::GARBAGECOLLECTOR,
            registry::REPLICASET,
            registry::DEPLOYMENT,
        ],
        ControllerOptions::default(),
    )
    .await?;
    let (client, shutdown) = (h.client.clone(), h.shutdown.clone());

    create_namespace(&client, "app").await?;
    let labels = BTreeMap::from([("app".to_string(), "web".to_string())]);
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "app");
    deployments
        .create(
            &PostParams::default(),
            &Deployment {
                metadata: ObjectMeta {
                    name: Some("web".into()),
                    ..ObjectMeta::default()
                },
                spec: Some(DeploymentSpec {
                    replicas: Some(3),
                    selector: LabelSelector {
                        match_labels: Some(labels.clone()),
                        ..LabelSelector::default()
                    },
                    template: k8s_openapi::api::core::v1::PodTemplateSpec {
                        metadata: Some(ObjectMeta {
                            labels: Some(labels),
                            ..ObjectMeta::default()
                        }),
                        spec: pod("template", false).spec,
                    },
                    ..DeploymentSpec::default()
                }),
                ..Deployment::default()
            },
        )
        .await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "app");
    eventually("the deployment's pods", || async {
        let n = pods
            .list(&ListParams::default().labels("app=web"))
            .await?
            .items
            .len();
        Ok((n == 3).then_some(()))
    })
    .await?;
    pods.create(&PostParams::default(), &pod("graceful", true))
        .await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "app");
    cms.create(&PostParams::default(), &config_map("settings", &[]))
        .await?;
    kubelet(client.clone(), "app", shutdown.clone());

    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .delete("app", &DeleteParams::background())
        .await?;
    // The ReplicaSet controller keeps trying to replace pods; the API server refuses (403) and
    // the namespace still empties.
    eventually("the namespace to be removed", || async {
        Ok(namespaces.get_opt("app").await?.is_none().then_some(()))
    })
    .await?;
    let replica_sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "app");
    for (what, n) in [
        (
            "deployments",
            deployments
                .list(&ListParams::default())
                .await
                .map(|l| l.items.len()),
        ),
        (
            "replicasets",
            replica_sets
                .list(&ListParams::default())
                .await
                .map(|l| l.items.len()),
        ),
        (
            "pods",
            pods.list(&ListParams::default())
                .await
                .map(|l| l.items.len()),
        ),
    ] {
        // An empty list or 404 for the removed namespace; nothing may be left behind.
        if let Ok(n) = n {
            assert_eq!(n, 0, "{what} left behind");
        }
    }
    drop(h);
    Ok(())
}

#[tokio::test]
async fn the_controller_removes_only_its_own_token_from_spec_finalizers() -> Result<()> {
    let h = start().await;
    let namespaces: Api<Namespace> = Api::all(h.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &Namespace {
                metadata: ObjectMeta {
                    name: Some("shared".into()),
                    ..ObjectMeta::default()
                },
                spec: Some(k8s_openapi::api::core::v1::NamespaceSpec {
                    finalizers: Some(vec!["example.com/ns-hold".into()]),
                }),
                ..Namespace::default()
            },
        )
        .await?;
    let cms: Api<ConfigMap> = Api::namespaced(h.client.clone(), "shared");
    cms.create(&PostParams::default(), &config_map("c", &[]))
        .await?;
    namespaces
        .delete("shared", &DeleteParams::background())
        .await?;
    // Emptied and finalized by us; the other token still holds the namespace.
    let ns = eventually("the kubernetes token to be removed", || async {
        let ns = namespaces.get("shared").await?;
        let tokens = ns
            .spec
            .as_ref()
            .and_then(|s| s.finalizers.clone())
            .unwrap_or_default();
        Ok((tokens == ["example.com/ns-hold"]).then_some(ns))
    })
    .await?;
    assert!(cms.get_opt("c").await?.is_none());
    // The other finalizer's owner finishes: the namespace goes.
    let mut done = ns.clone();
    if let Some(spec) = done.spec.as_mut() {
        spec.finalizers = Some(Vec::new());
    }
    namespaces
        .replace_subresource("finalize", "shared", &PostParams::default(), &done)
        .await?;
    eventually("the namespace to be removed", || async {
        Ok(namespaces.get_opt("shared").await?.is_none().then_some(()))
    })
    .await?;
    Ok(())
}
