//! The resourcequota controller against the embedded API server: status.hard copied from spec,
//! usage of pods, services, config maps and a kind no informer holds, replenished when pods are
//! deleted or finish, and hard limits that change.

use anyhow::Result;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ResourceQuota, Service};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::Client;
use rkcm_controllers::registry::{ControllerOptions, RESOURCEQUOTA};
use serde_json::json;

mod support;
use support::{eventually, Cluster, NS};

async fn create<K>(client: &Client, value: serde_json::Value) -> Result<K>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::namespaced(client.clone(), NS);
    Ok(api
        .create(&PostParams::default(), &serde_json::from_value(value)?)
        .await?)
}

fn pod(name: &str, cpu: Option<&str>) -> serde_json::Value {
    let resources = match cpu {
        Some(cpu) => json!({"requests": {"cpu": cpu}}),
        None => json!({}),
    };
    json!({"metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": "nginx", "resources": resources}]}})
}

/// Waits until quota `name` reports exactly `want` as used (and status.hard = spec.hard).
async fn wait_used(client: &Client, name: &str, want: &[(&str, &str)]) -> Result<ResourceQuota> {
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), NS);
    eventually(&format!("quota {name} used {want:?}"), || {
        let quotas = quotas.clone();
        async move {
            let q = quotas.get(name).await?;
            let Some(status) = q.status.as_ref() else {
                return Ok(None);
            };
            let spec_hard = q.spec.as_ref().and_then(|s| s.hard.clone());
            if status.hard != spec_hard {
                return Ok(None);
            }
            let used = status.used.clone().unwrap_or_default();
            let got: Vec<(String, String)> =
                used.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect();
            let mut want: Vec<(String, String)> = want
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            want.sort();
            Ok((got == want).then_some(q))
        }
    })
    .await
}

#[tokio::test]
async fn quota_status_follows_the_objects_of_its_namespace() -> Result<()> {
    let cluster = Cluster::start().await;
    let client = cluster.client.clone();
    cluster
        .start_registered(&[RESOURCEQUOTA], ControllerOptions::default())
        .await?;

    create::<Pod>(&client, pod("small", Some("500m"))).await?;
    create::<Pod>(&client, pod("plain", None)).await?;
    create::<ConfigMap>(&client, json!({"metadata": {"name": "cm"}})).await?;
    create::<Service>(
        &client,
        json!({"metadata": {"name": "np"},
               "spec": {"type": "NodePort", "ports": [{"port": 80}], "selector": {"a": "b"}}}),
    )
    .await?;
    create::<Lease>(&client, json!({"metadata": {"name": "l"}, "spec": {}})).await?;

    create::<ResourceQuota>(
        &client,
        json!({"metadata": {"name": "q"}, "spec": {"hard": {
            "pods": "5", "requests.cpu": "2", "count/configmaps": "3", "services": "4",
            "services.nodeports": "2", "count/leases.coordination.k8s.io": "9"
        }}}),
    )
    .await?;
    wait_used(
        &client,
        "q",
        &[
            ("count/configmaps", "1"),
            ("count/leases.coordination.k8s.io", "1"),
            ("pods", "2"),
            ("requests.cpu", "500m"),
            // The API server's own `kubernetes` Service lives in `default` too.
            ("services", "2"),
            ("services.nodeports", "1"),
        ],
    )
    .await?;

    // A BestEffort-scoped quota counts only the pod without requests.
    create::<ResourceQuota>(
        &client,
        json!({"metadata": {"name": "be"}, "spec": {"hard": {"pods": "3"}, "scopes": ["BestEffort"]}}),
    )
    .await?;
    wait_used(&client, "be", &[("pods", "1")]).await?;

    // Deleting a pod replenishes the quota.
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    pods.delete("small", &DeleteParams::default().grace_period(0))
        .await?;
    wait_used(
        &client,
        "q",
        &[
            ("count/configmaps", "1"),
            ("count/leases.coordination.k8s.io", "1"),
            ("pods", "1"),
            ("requests.cpu", "0"),
            // The API server's own `kubernetes` Service lives in `default` too.
            ("services", "2"),
            ("services.nodeports", "1"),
        ],
    )
    .await?;

    // A pod that finishes is no longer charged.
    pods.patch_status(
        "plain",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Succeeded"}})),
    )
    .await?;
    wait_used(&client, "be", &[("pods", "0")]).await?;

    // New hard limits are copied to status and their usage computed.
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), NS);
    quotas
        .patch(
            "be",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"hard": {"pods": "7"}}})),
        )
        .await?;
    let be = wait_used(&client, "be", &[("pods", "0")]).await?;
    let hard = be.status.and_then(|s| s.hard).unwrap_or_default();
    assert_eq!(hard.get("pods").map(|q| q.0.as_str()), Some("7"));

    cluster.stop().await;
    Ok(())
}

/// With the server's ResourceQuota admission: creates are charged, refused once the quota is
/// spent, and dry runs charge nothing.
#[tokio::test]
async fn admission_charges_and_refuses_with_the_controllers_usage() -> Result<()> {
    let cluster = Cluster::start().await;
    let client = cluster.client.clone();
    create::<ResourceQuota>(
        &client,
        json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "2", "count/configmaps": "1"}}}),
    )
    .await?;
    // Until the controller wrote status.hard, the quota matches nothing (as kube's).
    cluster
        .start_registered(&[RESOURCEQUOTA], ControllerOptions::default())
        .await?;
    wait_used(&client, "q", &[("count/configmaps", "0"), ("pods", "0")]).await?;

    create::<Pod>(&client, pod("a", None)).await?;
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    pods.create(&dry, &serde_json::from_value(pod("dry", None))?)
        .await?;
    create::<Pod>(&client, pod("b", None)).await?;
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), NS);
    let used = quotas
        .get("q")
        .await?
        .status
        .and_then(|s| s.used)
        .unwrap_or_default();
    assert_eq!(used.get("pods").map(|q| q.0.as_str()), Some("2"));

    let err = create::<Pod>(&client, pod("c", None))
        .await
        .expect_err("over quota");
    assert!(
        err.to_string().contains(
            "pods \"c\" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"
        ),
        "{err}"
    );
    create::<ConfigMap>(&client, json!({"metadata": {"name": "one"}})).await?;
    let err = create::<ConfigMap>(&client, json!({"metadata": {"name": "two"}}))
        .await
        .expect_err("over quota");
    assert!(
        err.to_string().contains("exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1"),
        "{err}"
    );

    // Deleting a pod frees its place once the controller recounted.
    pods.delete("a", &DeleteParams::default().grace_period(0))
        .await?;
    wait_used(&client, "q", &[("count/configmaps", "1"), ("pods", "1")]).await?;
    create::<Pod>(&client, pod("c", None)).await?;

    cluster.stop().await;
    Ok(())
}
