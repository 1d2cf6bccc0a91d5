//! The cluster-role aggregation controller against the in-process API server: an aggregating
//! ClusterRole follows the rules of the roles its selectors pick, through the controller's forced
//! server-side apply.

mod support;

use anyhow::Result;
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, DeleteParams, PostParams};
use rkcm_controllers::registry::{ControllerOptions, CLUSTERROLE_AGGREGATION};
use serde_json::json;
use support::{eventually, Cluster};

fn role(value: serde_json::Value) -> ClusterRole {
    serde_json::from_value(value).expect("a ClusterRole")
}

async fn rules_of(api: &Api<ClusterRole>, name: &str) -> Result<Vec<String>> {
    let role = api.get(name).await?;
    Ok(role
        .rules
        .unwrap_or_default()
        .iter()
        .map(|r| {
            format!(
                "{} {}",
                r.verbs.join(","),
                r.resources.clone().unwrap_or_default().join(",")
            )
        })
        .collect())
}

#[tokio::test]
async fn an_aggregating_role_follows_the_roles_it_selects() -> Result<()> {
    let cluster = Cluster::start().await;
    cluster
        .start_registered(&[CLUSTERROLE_AGGREGATION], ControllerOptions::default())
        .await?;
    let api: Api<ClusterRole> = Api::all(cluster.client.clone());
    let pp = PostParams::default();
    api.create(
        &pp,
        &role(json!({
            "metadata": {"name": "monitoring"},
            "aggregationRule": {"clusterRoleSelectors": [
                {"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}
            ]},
        })),
    )
    .await?;
    api.create(
        &pp,
        &role(json!({
            "metadata": {"name": "pods-reader", "labels": {"rbac.example.com/aggregate-to-monitoring": "true"}},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
        })),
    )
    .await?;
    api.create(
        &pp,
        &role(json!({
            "metadata": {"name": "nodes-reader", "labels": {"rbac.example.com/aggregate-to-monitoring": "true"}},
            "rules": [
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
            ],
        })),
    )
    .await?;
    api.create(
        &pp,
        &role(json!({
            "metadata": {"name": "unrelated"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
        })),
    )
    .await?;
    // Sorted by role name, each rule once, the unlabelled role left out.
    eventually("aggregated rules", || async {
        let rules = rules_of(&api, "monitoring").await?;
        Ok((rules == ["list nodes", "get pods"]).then_some(()))
    })
    .await?;

    // A selected role that goes takes its rules with it.
    api.delete("nodes-reader", &DeleteParams::default()).await?;
    eventually("rules of the deleted role removed", || async {
        let rules = rules_of(&api, "monitoring").await?;
        Ok((rules == ["get pods"]).then_some(()))
    })
    .await?;
    Ok(())
}
