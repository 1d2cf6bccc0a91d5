//! The admission chain on the served API: plugins chosen by the admission flags, both phases
//! run for creates, updates, deletes and dry runs, refusals answered as kube's Status.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use rkcm_apiserver::admission::AdmissionConfig;
use rkcm_apiserver::{testing, Config};
use serde_json::json;

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).expect("cm")
}

fn dry_run() -> PostParams {
    PostParams {
        dry_run: true,
        ..PostParams::default()
    }
}

#[tokio::test]
async fn namespace_lifecycle_refuses_creates_in_missing_namespaces_dry_run_included() {
    let server = testing::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "nowhere");
    for params in [PostParams::default(), dry_run()] {
        let e = api_err(
            cms.create(&params, &configmap("a"))
                .await
                .expect_err("no namespace"),
        );
        assert_eq!(e.code, 404);
        assert_eq!(e.message, "namespaces \"nowhere\" not found");
    }
}

#[tokio::test]
async fn without_namespace_lifecycle_nothing_checks_the_namespace() {
    let server = testing::start_with(Config {
        admission: AdmissionConfig::disabling(&["ServiceAccount", "NamespaceLifecycle"]),
        ..Config::default()
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "nowhere");
    cms.create(&PostParams::default(), &configmap("a"))
        .await
        .expect("kube stores it too when the plugin is off");
    let nss: Api<Namespace> = Api::all(server.client());
    nss.delete("kube-public", &DeleteParams::default())
        .await
        .expect("only the plugin protects the immortal namespaces");
}

#[tokio::test]
async fn always_deny_refuses_every_write_and_stores_nothing() {
    let server = testing::start_with(Config {
        admission: AdmissionConfig {
            enable_plugins: vec!["AlwaysDeny".into()],
            ..testing::config().admission
        },
        ..Config::default()
    })
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let why = "is forbidden: admission control is denying all modifications";
    for params in [PostParams::default(), dry_run()] {
        let e = api_err(
            cms.create(&params, &configmap("a"))
                .await
                .expect_err("denied"),
        );
        assert_eq!(e.code, 403);
        assert_eq!(e.reason, "Forbidden");
        assert_eq!(e.message, format!("configmaps \"a\" {why}"));
    }
    assert!(cms.get_opt("a").await.expect("get").is_none());
    // Updates and deletes of an existing object go through the chain as well.
    let nss: Api<Namespace> = Api::all(server.client());
    let e = api_err(
        nss.patch(
            "kube-public",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .expect_err("denied"),
    );
    assert_eq!(e.code, 403);
    assert_eq!(e.message, format!("namespaces \"kube-public\" {why}"));
    let e = api_err(
        nss.delete("kube-node-lease", &DeleteParams::default())
            .await
            .expect_err("denied"),
    );
    assert_eq!(e.code, 403);
    // A delete carries no object: kube names it `Unknown`.
    assert_eq!(e.message, format!("namespaces \"Unknown\" {why}"));
    nss.get("kube-node-lease").await.expect("still there");
}

#[tokio::test]
async fn unknown_plugins_keep_the_server_from_starting() {
    let err = rkcm_apiserver::ApiServer::new(Config {
        admission: AdmissionConfig {
            enable_plugins: vec!["Nope".into()],
            ..AdmissionConfig::default()
        },
        ..Config::default()
    })
    .await
    .err()
    .expect("refused");
    assert_eq!(
        err.to_string(),
        "admission plugins: enable-admission-plugins plugin \"Nope\" is unknown"
    );
}
