//! Objects kube-apiserver keeps by itself, reconciled at every start: the API Priority and
//! Fairness bootstrap configuration (honouring `apf.kubernetes.io/autoupdate-spec`) and the
//! `Local` APIServices of the served group-versions.

use std::time::Duration;

use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use rkcm_apiserver::testing::{self, TestServer};
use rkcm_apiserver::Config;
use serde_json::json;

fn config(dir: &std::path::Path) -> Config {
    Config {
        data_dir: Some(dir.to_path_buf()),
        ..testing::config()
    }
}

/// Starts the server on `dir` again, retrying while the previous one still holds the store.
async fn open_again(dir: &std::path::Path) -> TestServer {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let attempt = tokio::spawn({
            let dir = dir.to_path_buf();
            async move { testing::start_with(config(&dir)).await }
        })
        .await;
        match attempt {
            Ok(server) => return server,
            Err(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => panic!("server did not restart: {e}"),
        }
    }
}

async fn names<K>(api: &Api<K>) -> Vec<String>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let mut names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .iter()
        .map(|o| o.meta().name.clone().unwrap_or_default())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn flowcontrol_bootstrap_is_created_and_reconciled_at_every_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = testing::start_with(config(dir.path())).await;
    let levels: Api<PriorityLevelConfiguration> = Api::all(server.client());
    let schemas: Api<FlowSchema> = Api::all(server.client());
    assert_eq!(
        names(&levels).await,
        [
            "catch-all",
            "exempt",
            "global-default",
            "leader-election",
            "node-high",
            "system",
            "workload-high",
            "workload-low"
        ]
    );
    assert_eq!(names(&schemas).await.len(), 13);
    let catch_all = schemas.get("catch-all").await.expect("catch-all");
    let spec = catch_all.spec.clone().expect("spec");
    assert_eq!(spec.matching_precedence, Some(10000));
    assert_eq!(
        catch_all
            .metadata
            .annotations
            .as_ref()
            .expect("annotations")["apf.kubernetes.io/autoupdate-spec"],
        "true"
    );

    // The operator opts workload-low out and changes it, changes the mandatory catch-all level,
    // deletes global-default, and adds two objects of their own, one claiming to be managed.
    let patch = |shares: i64, auto: &str| {
        json!({"metadata": {"annotations": {"apf.kubernetes.io/autoupdate-spec": auto}},
               "spec": {"limited": {"nominalConcurrencyShares": shares}}})
    };
    let merge = kube::api::PatchParams::default();
    levels
        .patch(
            "workload-low",
            &merge,
            &kube::api::Patch::Merge(patch(7, "false")),
        )
        .await
        .expect("opt out");
    levels
        .patch(
            "catch-all",
            &merge,
            &kube::api::Patch::Merge(patch(9, "false")),
        )
        .await
        .expect("edit mandatory");
    levels
        .delete("global-default", &DeleteParams::default())
        .await
        .expect("delete suggested");
    for (name, annotations) in [
        (
            "retired",
            json!({"apf.kubernetes.io/autoupdate-spec": "true"}),
        ),
        ("mine", json!({})),
    ] {
        let obj: PriorityLevelConfiguration = serde_json::from_value(json!({
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 3,
                "limitResponse": {"type": "Reject"}}},
        }))
        .expect("level");
        levels
            .create(&PostParams::default(), &obj)
            .await
            .expect("create own level");
    }
    server.stop().await;

    let server = open_again(dir.path()).await;
    let levels: Api<PriorityLevelConfiguration> = Api::all(server.client());
    let shares = |pl: &PriorityLevelConfiguration| {
        pl.spec
            .as_ref()
            .and_then(|s| s.limited.as_ref())
            .and_then(|l| l.nominal_concurrency_shares)
    };
    let workload_low = levels.get("workload-low").await.expect("kept");
    assert_eq!(
        shares(&workload_low),
        Some(7),
        "an opted-out object is left alone"
    );
    let catch_all = levels.get("catch-all").await.expect("kept");
    assert_eq!(
        shares(&catch_all),
        Some(5),
        "a mandatory object is put back"
    );
    assert_eq!(
        catch_all
            .metadata
            .annotations
            .as_ref()
            .expect("annotations")["apf.kubernetes.io/autoupdate-spec"],
        "true"
    );
    let global_default = levels.get("global-default").await.expect("recreated");
    assert_eq!(shares(&global_default), Some(20));
    let names = names(&levels).await;
    assert!(names.contains(&"mine".to_string()), "{names:?}");
    assert!(!names.contains(&"retired".to_string()), "{names:?}");
    server.stop().await;
}

#[tokio::test]
async fn apiservices_list_the_served_group_versions_and_are_reconciled_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = testing::start_with(config(dir.path())).await;
    let apiservices: Api<APIService> = Api::all(server.client());
    let listed = names(&apiservices).await;
    for want in [
        "v1.",
        "v1.apps",
        "v2.autoscaling",
        "v1.batch",
        "v1.flowcontrol.apiserver.k8s.io",
        "v1.rbac.authorization.k8s.io",
    ] {
        assert!(
            listed.contains(&want.to_string()),
            "{want} missing: {listed:?}"
        );
    }
    assert!(!listed.iter().any(|n| n.ends_with("apiregistration.k8s.io")));
    let apps = apiservices.get("v1.apps").await.expect("v1.apps");
    let spec = apps.spec.clone().expect("spec");
    assert_eq!(
        (
            spec.group.as_deref(),
            spec.version.as_deref(),
            spec.group_priority_minimum,
            spec.version_priority,
            spec.service.is_none()
        ),
        (Some("apps"), Some("v1"), 17800, 15, true)
    );
    let available = apps
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Available")
        .expect("Available condition");
    assert_eq!(
        (available.status.as_str(), available.reason.as_deref()),
        ("True", Some("Local"))
    );

    // A managed APIService whose spec was changed, one of an API no longer served, and one of
    // the user's own.
    apiservices
        .patch(
            "v1.apps",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"versionPriority": 1}})),
        )
        .await
        .expect("patch");
    for (name, labels) in [
        (
            "v1beta1.batch",
            json!({"kube-aggregator.kubernetes.io/automanaged": "onstart"}),
        ),
        ("v1beta1.example.com", json!({})),
    ] {
        let (version, group) = name.split_once('.').expect("version.group");
        let obj: APIService = serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"group": group, "version": version, "groupPriorityMinimum": 100, "versionPriority": 10,
                     "service": {"namespace": "default", "name": "api"}},
        }))
        .expect("apiservice");
        apiservices
            .create(&PostParams::default(), &obj)
            .await
            .expect("create");
    }
    server.stop().await;

    let server = open_again(dir.path()).await;
    let apiservices: Api<APIService> = Api::all(server.client());
    let apps = apiservices.get("v1.apps").await.expect("v1.apps");
    assert_eq!(apps.spec.expect("spec").version_priority, 15);
    let listed = names(&apiservices).await;
    assert!(!listed.contains(&"v1beta1.batch".to_string()), "{listed:?}");
    assert!(
        listed.contains(&"v1beta1.example.com".to_string()),
        "{listed:?}"
    );
    server.stop().await;
}
