//! What every namespace gets from the service-account controller and the root CA publisher:
//! a `default` ServiceAccount and a `kube-root-ca.crt` ConfigMap, put back when deleted or
//! edited. (That terminating namespaces get nothing is decided by pure functions tested next
//! to each controller.)

use std::collections::BTreeMap;

use anyhow::Result;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use rkcm_controllers::registry::{self, ControllerOptions};
use rkcm_controllers::rootcacertpublisher::{DESCRIPTION_ANNOTATION, ROOT_CA_CONFIG_MAP_NAME};
use serde_json::json;

mod support;
use support::{eventually, Cluster};

const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";

async fn start() -> Result<Cluster> {
    let cluster = Cluster::start().await;
    cluster
        .start_registered(
            &[registry::SERVICEACCOUNT, registry::ROOT_CA_PUBLISHER],
            ControllerOptions {
                root_ca: Some(CA.to_string()),
                ..ControllerOptions::default()
            },
        )
        .await?;
    Ok(cluster)
}

async fn create_namespace(cluster: &Cluster, name: &str) -> Result<()> {
    let namespaces: Api<Namespace> = Api::all(cluster.client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    namespaces.create(&PostParams::default(), &ns).await?;
    Ok(())
}

#[tokio::test]
async fn every_namespace_gets_a_default_service_account_back_when_deleted() -> Result<()> {
    let cluster = start().await?;
    // Namespaces that exist before the controller starts get one too.
    let accounts: Api<ServiceAccount> = Api::namespaced(cluster.client.clone(), "default");
    eventually("the default ServiceAccount of default", || async {
        Ok(accounts.get_opt("default").await?)
    })
    .await?;

    create_namespace(&cluster, "team-a").await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(cluster.client.clone(), "team-a");
    let first = eventually("the default ServiceAccount of team-a", || async {
        Ok(accounts.get_opt("default").await?)
    })
    .await?;

    accounts.delete("default", &DeleteParams::default()).await?;
    eventually("a new default ServiceAccount", || async {
        Ok(accounts
            .get_opt("default")
            .await?
            .filter(|sa| sa.metadata.uid != first.metadata.uid))
    })
    .await?;
    cluster.stop().await;
    Ok(())
}

#[tokio::test]
async fn the_root_ca_config_map_is_published_and_restored() -> Result<()> {
    let cluster = start().await?;
    create_namespace(&cluster, "team-b").await?;
    let maps: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), "team-b");
    let published = eventually("kube-root-ca.crt in team-b", || async {
        Ok(maps.get_opt(ROOT_CA_CONFIG_MAP_NAME).await?)
    })
    .await?;
    assert_eq!(
        published.data,
        Some(BTreeMap::from([("ca.crt".to_string(), CA.to_string())]))
    );
    assert!(published
        .metadata
        .annotations
        .is_some_and(|a| a.contains_key(DESCRIPTION_ANNOTATION)));

    // An edit is undone.
    maps.patch(
        ROOT_CA_CONFIG_MAP_NAME,
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"ca.crt": "tampered"}})),
    )
    .await?;
    eventually("the bundle restored", || async {
        let cm = maps.get(ROOT_CA_CONFIG_MAP_NAME).await?;
        Ok(cm
            .data
            .filter(|d| d.get("ca.crt").map(String::as_str) == Some(CA)))
    })
    .await?;

    // A deletion too.
    maps.delete(ROOT_CA_CONFIG_MAP_NAME, &DeleteParams::default())
        .await?;
    eventually("the ConfigMap recreated", || async {
        Ok(maps
            .get_opt(ROOT_CA_CONFIG_MAP_NAME)
            .await?
            .filter(|cm| cm.metadata.uid != published.metadata.uid))
    })
    .await?;
    cluster.stop().await;
    Ok(())
}
