//! The service-account token controller on the in-process API server: token Secrets are
//! completed with a token the server accepts, the CA and the namespace, and deleted with their
//! ServiceAccount.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::Result;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use rkcm_apiserver::auth::serviceaccount::{legacy_claims, ObjectRef};
use rkcm_apiserver::auth::{jwt, SigningKey};
use rkcm_controllers::registry::{self, ControllerOptions};
use rkcm_controllers::serviceaccount::tokens::{
    LegacyTokenGenerator, SERVICE_ACCOUNT_NAME_KEY, SERVICE_ACCOUNT_TOKEN_TYPE,
    SERVICE_ACCOUNT_UID_KEY,
};
use serde_json::{json, Value};

mod support;
use support::{eventually, Cluster, NS};

const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n";

/// Signs with the key the server keeps in its data dir.
struct Signer(SigningKey);

impl LegacyTokenGenerator for Signer {
    fn generate(&self, ns: &str, name: &str, uid: &str, secret: &str) -> Result<String, String> {
        let sa = ObjectRef {
            name: name.into(),
            uid: uid.into(),
        };
        Ok(jwt::sign(&legacy_claims(ns, &sa, secret), &self.0))
    }
}

fn token_secret(name: &str, account: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            annotations: Some(BTreeMap::from([(
                SERVICE_ACCOUNT_NAME_KEY.to_string(),
                account.to_string(),
            )])),
            ..Default::default()
        },
        type_: Some(SERVICE_ACCOUNT_TOKEN_TYPE.into()),
        ..Default::default()
    }
}

async fn review(cluster: &Cluster, token: &str) -> Result<Value> {
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}});
    let req = http::Request::post("/apis/authentication.k8s.io/v1/tokenreviews")
        .header("content-type", "application/json")
        .body(body.to_string().into_bytes())?;
    Ok(cluster.client.request::<Value>(req).await?)
}

#[tokio::test]
async fn token_secrets_get_a_token_the_server_accepts_and_go_with_their_account() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let server = rkcm_apiserver::testing::start_with(rkcm_apiserver::Config {
        data_dir: Some(dir.path().to_path_buf()),
        // Revoked tokens are refused at once, not when their cached success expires, as kube's
        // integration tests of revocation run their servers.
        token_success_cache_ttl: std::time::Duration::ZERO,
        ..rkcm_apiserver::testing::config()
    })
    .await;
    let key = SigningKey::load_or_generate(Some(dir.path()))?;
    let cluster = Cluster::on(server);
    cluster
        .start_registered(
            &[registry::SERVICEACCOUNT_TOKEN],
            ControllerOptions {
                root_ca: Some(CA.to_string()),
                service_account_token_generator: Some(Arc::new(Signer(key))),
                ..ControllerOptions::default()
            },
        )
        .await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(cluster.client.clone(), NS);
    let secrets: Api<Secret> = Api::namespaced(cluster.client.clone(), NS);
    let sa = accounts
        .create(
            &PostParams::default(),
            &ServiceAccount {
                metadata: ObjectMeta {
                    name: Some("bot".into()),
                    ..Default::default()
                },
                secrets: Some(vec![k8s_openapi::api::core::v1::ObjectReference {
                    name: Some("old-token".into()),
                    ..Default::default()
                }]),
                ..Default::default()
            },
        )
        .await?;
    secrets
        .create(&PostParams::default(), &token_secret("bot-token", "bot"))
        .await?;
    let filled = eventually("the token Secret to be filled", || async {
        let s = secrets.get("bot-token").await?;
        Ok(s.data
            .as_ref()
            .is_some_and(|d| d.contains_key("token"))
            .then_some(s))
    })
    .await?;
    let data = filled.data.clone().unwrap_or_default();
    assert_eq!(data["ca.crt"].0, CA.as_bytes());
    assert_eq!(data["namespace"].0, NS.as_bytes());
    assert_eq!(
        filled
            .metadata
            .annotations
            .as_ref()
            .map(|a| &a[SERVICE_ACCOUNT_UID_KEY]),
        sa.metadata.uid.as_ref()
    );
    let token = String::from_utf8(data["token"].0.clone())?;
    let r = review(&cluster, &token).await?;
    assert_eq!(r["status"]["authenticated"], true, "{r}");
    assert_eq!(
        r["status"]["user"]["username"],
        "system:serviceaccount:default:bot"
    );

    // A deleted token Secret is no longer referenced by its account.
    secrets
        .create(&PostParams::default(), &token_secret("old-token", "bot"))
        .await?;
    eventually("the old token Secret to be filled", || async {
        let s = secrets.get("old-token").await?;
        Ok(s.data
            .as_ref()
            .is_some_and(|d| d.contains_key("token"))
            .then_some(()))
    })
    .await?;
    secrets
        .delete("old-token", &DeleteParams::default())
        .await?;
    eventually("the account to forget the deleted Secret", || async {
        let sa = accounts.get("bot").await?;
        Ok(sa.secrets.unwrap_or_default().is_empty().then_some(()))
    })
    .await?;

    // A token Secret of an account that does not exist is deleted.
    secrets
        .create(
            &PostParams::default(),
            &token_secret("orphan-token", "nobody"),
        )
        .await?;
    eventually("the orphan token Secret to be deleted", || async {
        Ok(secrets
            .get_opt("orphan-token")
            .await?
            .is_none()
            .then_some(()))
    })
    .await?;

    // Deleting the account deletes its token Secret, and the token stops working.
    accounts.delete("bot", &DeleteParams::default()).await?;
    eventually("the token Secret to go with its account", || async {
        Ok(secrets.get_opt("bot-token").await?.is_none().then_some(()))
    })
    .await?;
    let r = review(&cluster, &token).await?;
    assert_eq!(r["status"].get("authenticated"), None, "{r}");
    assert_eq!(r["status"]["error"], "Token has been invalidated");
    cluster.stop().await;
    Ok(())
}

#[tokio::test]
async fn without_a_signing_key_the_controller_is_not_started() -> Result<()> {
    let cluster = Cluster::start().await;
    let err = cluster
        .start_registered(
            &[registry::SERVICEACCOUNT_TOKEN],
            ControllerOptions::default(),
        )
        .await
        .expect_err("skipped");
    assert!(
        err.to_string().contains(
            "\"serviceaccount-token-controller\" is disabled because there is no private key"
        ),
        "{err}"
    );
    Ok(())
}
