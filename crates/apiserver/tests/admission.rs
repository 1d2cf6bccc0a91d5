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
    // A delete carries no object: kube names it by the request (`extractResourceName`).
    assert_eq!(e.message, format!("namespaces \"kube-node-lease\" {why}"));
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

fn pod(name: &str, service_account: Option<&str>) -> k8s_openapi::api::core::v1::Pod {
    let mut spec = json!({"containers": [{"name": "c", "image": "nginx"}]});
    if let Some(sa) = service_account {
        spec["serviceAccountName"] = json!(sa);
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("pod")
}

#[tokio::test]
async fn service_account_admission_runs_by_default() {
    use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
    let server = testing::start_with(Config::default()).await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    // Nothing made the namespace's default ServiceAccount: kube looks for it for a while, then
    // refuses.
    let e = api_err(
        pods.create(&PostParams::default(), &pod("early", None))
            .await
            .expect_err("no default account"),
    );
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "pods \"early\" is forbidden: error looking up service account default/default: serviceaccount \"default\" not found"
    );
    let sas: Api<ServiceAccount> = Api::namespaced(server.client(), "default");
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "default"}})).expect("sa");
    sas.create(&PostParams::default(), &sa).await.expect("sa");
    let created = pods
        .create(&PostParams::default(), &pod("p", None))
        .await
        .expect("admitted");
    let spec = created.spec.expect("spec");
    assert_eq!(spec.service_account_name.as_deref(), Some("default"));
    let volume = &spec.volumes.expect("volumes")[0];
    assert!(
        volume.name.starts_with("kube-api-access-"),
        "{}",
        volume.name
    );
    let sources = volume
        .projected
        .as_ref()
        .and_then(|p| p.sources.clone())
        .expect("projected sources");
    assert_eq!(
        sources[0]
            .service_account_token
            .as_ref()
            .and_then(|t| t.expiration_seconds),
        Some(3607)
    );
    let mounts = spec.containers[0].volume_mounts.clone().expect("mounts");
    assert_eq!(
        mounts[0].mount_path,
        "/var/run/secrets/kubernetes.io/serviceaccount"
    );
    assert_eq!(mounts[0].read_only, Some(true));
    // Dry runs are admitted alike and store nothing.
    let e = api_err(
        pods.create(&dry_run(), &pod("ghost", Some("missing")))
            .await
            .expect_err("missing account"),
    );
    assert_eq!(
        e.message,
        "pods \"ghost\" is forbidden: error looking up service account default/missing: serviceaccount \"missing\" not found"
    );
    let dry = pods
        .create(&dry_run(), &pod("dry", None))
        .await
        .expect("dry run admitted");
    assert!(dry.spec.and_then(|s| s.volumes).is_some());
    assert!(pods.get_opt("dry").await.expect("get").is_none());
}

#[tokio::test]
async fn pods_get_priority_and_default_tolerations_unless_the_plugins_are_off() {
    use k8s_openapi::api::core::v1::Pod;
    let server = testing::start().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "kube-system");
    let mut critical = pod("critical", None);
    critical.spec.as_mut().expect("spec").priority_class_name =
        Some("system-cluster-critical".into());
    let created = pods
        .create(&PostParams::default(), &critical)
        .await
        .expect("admitted");
    let spec = created.spec.expect("spec");
    assert_eq!(spec.priority, Some(2_000_000_000));
    assert_eq!(
        spec.preemption_policy.as_deref(),
        Some("PreemptLowerPriority")
    );
    let keys: Vec<_> = spec
        .tolerations
        .unwrap_or_default()
        .into_iter()
        .map(|t| (t.key.unwrap_or_default(), t.toleration_seconds))
        .collect();
    assert_eq!(
        keys,
        [
            ("node.kubernetes.io/not-ready".to_string(), Some(300)),
            ("node.kubernetes.io/unreachable".to_string(), Some(300)),
        ]
    );
    let mut unknown = pod("unknown", None);
    unknown.spec.as_mut().expect("spec").priority_class_name = Some("gold".into());
    let e = api_err(
        pods.create(&PostParams::default(), &unknown)
            .await
            .expect_err("no such class"),
    );
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        "pods \"unknown\" is forbidden: no PriorityClass with name gold was found"
    );

    let bare = testing::start_with(Config {
        admission: AdmissionConfig::disabling(&[
            "ServiceAccount",
            "Priority",
            "DefaultTolerationSeconds",
        ]),
        ..Config::default()
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(bare.client(), "default");
    let created = pods
        .create(&PostParams::default(), &pod("plain", None))
        .await
        .expect("admitted");
    let spec = created.spec.expect("spec");
    assert_eq!(spec.priority, None);
    assert_eq!(spec.tolerations, None);
}
