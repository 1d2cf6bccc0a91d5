//! core/v1 kinds with behaviour of their own, through the API: secrets, claims and quotas.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, ResourceQuota, Secret};
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

fn api_err(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

fn from<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> T {
    serde_json::from_value(v).expect("fixture decodes")
}

#[tokio::test]
async fn secrets_fold_string_data_refuse_bad_types_and_select_by_type() {
    let server = rkcm_apiserver::testing::start().await;
    let secrets: Api<Secret> = Api::namespaced(server.client(), "default");
    let created = secrets
        .create(
            &PostParams::default(),
            &from(json!({"metadata": {"name": "creds"}, "stringData": {"user": "admin"}})),
        )
        .await
        .expect("create");
    assert_eq!(created.type_.as_deref(), Some("Opaque"));
    assert!(created.string_data.is_none());
    assert_eq!(
        created
            .data
            .as_ref()
            .and_then(|d| d.get("user"))
            .map(|b| b.0.clone()),
        Some(b"admin".to_vec())
    );

    let e = api_err(
        secrets
            .create(
                &PostParams::default(),
                &from(
                    json!({"metadata": {"name": "cert"}, "type": "kubernetes.io/tls",
                    "stringData": {"tls.crt": "c"}}),
                ),
            )
            .await
            .expect_err("tls secret without key"),
    );
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"), "{e:?}");
    assert_eq!(
        e.message,
        "Secret \"cert\" is invalid: data[tls.key]: Required value"
    );
    assert!(secrets.get_opt("cert").await.expect("get").is_none());

    let mut frozen = created.clone();
    frozen.immutable = Some(true);
    let frozen = secrets
        .replace("creds", &PostParams::default(), &frozen)
        .await
        .expect("make immutable");
    let mut changed = frozen.clone();
    changed.string_data = Some([("user".to_string(), "root".to_string())].into());
    let e = api_err(
        secrets
            .replace("creds", &PostParams::default(), &changed)
            .await
            .expect_err("change immutable data"),
    );
    assert_eq!(
        e.message,
        "Secret \"creds\" is invalid: data: Forbidden: field is immutable when `immutable` is set"
    );

    let opaque = secrets
        .list(&ListParams::default().fields("type=Opaque"))
        .await
        .expect("list by type");
    assert_eq!(opaque.items.len(), 1);
    let tls = secrets
        .list(&ListParams::default().fields("type=kubernetes.io/tls"))
        .await
        .expect("list by type");
    assert!(tls.items.is_empty());
}

#[tokio::test]
async fn claims_start_pending_and_keep_their_spec() {
    let server = rkcm_apiserver::testing::start().await;
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(server.client(), "default");
    let created = claims
        .create(
            &PostParams::default(),
            &from(
                json!({"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}}}),
            ),
        )
        .await
        .expect("create");
    let status = created.status.clone().expect("status");
    assert_eq!(status.phase.as_deref(), Some("Pending"));
    let spec = created.spec.clone().expect("spec");
    assert_eq!(spec.volume_mode.as_deref(), Some("Filesystem"));

    let mut resized: serde_json::Value = serde_json::to_value(&created).expect("json");
    resized["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
    let e = api_err(
        claims
            .replace("data", &PostParams::default(), &from(resized))
            .await
            .expect_err("resize an unbound claim"),
    );
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"), "{e:?}");
    assert_eq!(
        e.message,
        "PersistentVolumeClaim \"data\" is invalid: spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
    );

    let e = api_err(
        claims
            .create(
                &PostParams::default(),
                &from(json!({"metadata": {"name": "empty"}, "spec": {}})),
            )
            .await
            .expect_err("claim without modes or size"),
    );
    assert_eq!(
        e.message,
        "PersistentVolumeClaim \"empty\" is invalid: [spec.accessModes: Required value: at least 1 access mode is required, spec.resources[storage]: Required value]"
    );
}

#[tokio::test]
async fn quota_status_and_spec_are_written_apart() {
    let server = rkcm_apiserver::testing::start().await;
    let quotas: Api<ResourceQuota> = Api::namespaced(server.client(), "default");
    let created = quotas
        .create(
            &PostParams::default(),
            &from(
                json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "10"}},
                "status": {"used": {"pods": "99"}}}),
            ),
        )
        .await
        .expect("create");
    assert!(created.status.as_ref().is_none_or(|s| s.used.is_none()));
    // Quotas track no generation: a spec update leaves it where creation put it.
    let mut raised = created.clone();
    raised.spec.as_mut().expect("spec").hard = Some(
        [(
            "pods".to_string(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("20".into()),
        )]
        .into(),
    );
    let raised = quotas
        .replace("q", &PostParams::default(), &raised)
        .await
        .expect("spec update");
    assert_eq!(raised.metadata.generation, created.metadata.generation);
    let created = raised;

    let mut status: serde_json::Value = serde_json::to_value(&created).expect("json");
    status["spec"]["hard"]["pods"] = json!("1");
    status["status"] = json!({"hard": {"pods": "10"}, "used": {"pods": "2"}});
    let updated = quotas
        .replace_status("q", &PostParams::default(), &from(status))
        .await
        .expect("status update");
    let hard = updated.spec.and_then(|s| s.hard).expect("hard");
    assert_eq!(hard["pods"].0, "20");
    assert_eq!(
        updated.status.and_then(|s| s.used).expect("used")["pods"].0,
        "2"
    );

    let e = api_err(
        quotas
            .create(
                &PostParams::default(),
                &from(
                    json!({"metadata": {"name": "bad"}, "spec": {"hard": {"pods": "1"},
                    "scopes": ["BestEffort", "NotBestEffort"]}}),
                ),
            )
            .await
            .expect_err("conflicting scopes"),
    );
    assert_eq!(
        e.message,
        "ResourceQuota \"bad\" is invalid: spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\"}: conflicting scopes"
    );
}
