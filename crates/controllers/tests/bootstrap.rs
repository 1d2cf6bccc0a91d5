//! The bootstrap signer and token cleaner on the in-process API server, started through the
//! registry as `--controllers=*,bootstrapsigner,tokencleaner` starts them.

use anyhow::Result;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams, PostParams};
use rkcm_controllers::bootstrap::jws::detached_token_is_valid;
use rkcm_controllers::registry::{self, ControllerOptions};
use serde_json::json;

mod support;
use support::{eventually, Cluster};

const KUBECONFIG: &str = "apiVersion: v1\nkind: Config\nclusters:\n- cluster:\n    server: https://127.0.0.1:6443\n  name: \"\"\n";

fn token(id: &str, secret: &str, expiration: Option<&str>) -> Result<Secret> {
    let mut data =
        json!({"token-id": id, "token-secret": secret, "usage-bootstrap-signing": "true"});
    if let Some(e) = expiration {
        data["expiration"] = json!(e);
    }
    Ok(serde_json::from_value(json!({
        "metadata": {"name": format!("bootstrap-token-{id}"), "namespace": "kube-system"},
        "type": "bootstrap.kubernetes.io/token",
        "stringData": data,
    }))?)
}

#[tokio::test]
async fn cluster_info_is_signed_by_valid_tokens_and_expired_tokens_are_deleted() -> Result<()> {
    let cluster = Cluster::start().await;
    let enabled =
        registry::resolve(&["*".into(), "bootstrapsigner".into(), "tokencleaner".into()])?;
    assert!(
        enabled.contains(&registry::BOOTSTRAP_SIGNER) && enabled.contains(&registry::TOKEN_CLEANER)
    );
    cluster
        .start_registered(
            &[registry::BOOTSTRAP_SIGNER, registry::TOKEN_CLEANER],
            ControllerOptions::default(),
        )
        .await?;
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), "kube-public");
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": "cluster-info"},
            "data": {"kubeconfig": KUBECONFIG},
        }))?,
    )
    .await?;
    let secrets: Api<Secret> = Api::namespaced(cluster.client.clone(), "kube-system");
    let expires = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(3600)).to_string();
    secrets
        .create(
            &PostParams::default(),
            &token("abcdef", "0123456789abcdef", Some(&expires))?,
        )
        .await?;
    let sig = eventually("cluster-info to carry the token's signature", || async {
        let cm = cms.get("cluster-info").await?;
        Ok(cm
            .data
            .and_then(|d| d.get("jws-kubeconfig-abcdef").cloned()))
    })
    .await?;
    assert!(detached_token_is_valid(
        &sig,
        KUBECONFIG,
        "abcdef",
        "0123456789abcdef"
    ));

    // An expired token is deleted and never signs.
    secrets
        .create(
            &PostParams::default(),
            &token("zzz999", "0123456789abcdef", Some("2020-01-01T00:00:00Z"))?,
        )
        .await?;
    eventually("the expired token to be deleted", || async {
        Ok(secrets
            .get_opt("bootstrap-token-zzz999")
            .await?
            .is_none()
            .then_some(()))
    })
    .await?;
    let cm = cms.get("cluster-info").await?;
    assert!(!cm
        .data
        .unwrap_or_default()
        .contains_key("jws-kubeconfig-zzz999"));

    // A deleted token's signature goes.
    secrets
        .delete("bootstrap-token-abcdef", &DeleteParams::default())
        .await?;
    eventually("the signature to be removed", || async {
        let cm = cms.get("cluster-info").await?;
        let data = cm.data.unwrap_or_default();
        Ok((!data.contains_key("jws-kubeconfig-abcdef")).then_some(()))
    })
    .await?;
    assert_eq!(
        cms.get("cluster-info")
            .await?
            .data
            .unwrap_or_default()
            .get("kubeconfig")
            .map(String::as_str),
        Some(KUBECONFIG)
    );
    cluster.stop().await;
    Ok(())
}
