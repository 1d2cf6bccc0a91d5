//! Objects kube-apiserver keeps by itself, reconciled at every start: the API Priority and
//! Fairness bootstrap configuration (honouring `apf.kubernetes.io/autoupdate-spec`).

use std::time::Duration;

use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
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
