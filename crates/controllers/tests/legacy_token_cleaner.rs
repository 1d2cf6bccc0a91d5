//! Legacy service-account tokens on the in-process API server: the server records their use and
//! refuses those marked invalid; the cleaner marks unused ones invalid, then deletes them a
//! period later (with a clock moved years ahead).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference, Pod, Secret, ServiceAccount};
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use rkcm_apiserver::auth::serviceaccount::{legacy_claims, ObjectRef};
use rkcm_apiserver::auth::{jwt, SigningKey};
use rkcm_controllers::serviceaccount::legacy_token_cleaner::{
    Config, LegacyTokenCleaner, INVALID_SINCE_LABEL_KEY, LAST_USED_LABEL_KEY, TRACKING_CONFIG_MAP,
};
use rkcm_runtime::{Clock, FakeClock};
use serde_json::{json, Value};

mod support;
use support::{eventually, Cluster, NS};

const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);

fn token_secret(name: &str, sa: &ServiceAccount, token: Option<&str>) -> Secret {
    let mut data = BTreeMap::new();
    if let Some(t) = token {
        data.insert(
            "token".to_string(),
            k8s_openapi::ByteString(t.as_bytes().to_vec()),
        );
    }
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            annotations: Some(BTreeMap::from([
                (
                    "kubernetes.io/service-account.name".to_string(),
                    sa.metadata.name.clone().unwrap_or_default(),
                ),
                (
                    "kubernetes.io/service-account.uid".to_string(),
                    sa.metadata.uid.clone().unwrap_or_default(),
                ),
            ])),
            ..Default::default()
        },
        type_: Some("kubernetes.io/service-account-token".into()),
        data: Some(data),
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

fn label(secret: &Secret, key: &str) -> Option<String> {
    secret.metadata.labels.as_ref()?.get(key).cloned()
}

#[tokio::test]
async fn legacy_tokens_are_tracked_then_invalidated_then_deleted() -> Result<()> {
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

    // The API server dates its tracking of legacy tokens.
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), "kube-system");
    let tracking = cms.get(TRACKING_CONFIG_MAP).await?;
    let today = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .to_string();
    assert_eq!(
        tracking.data.as_ref().and_then(|d| d.get("since")),
        Some(&today)
    );

    let sas: Api<ServiceAccount> = Api::namespaced(cluster.client.clone(), NS);
    let sa = sas
        .create(
            &PostParams::default(),
            &ServiceAccount {
                metadata: ObjectMeta {
                    name: Some("bot".into()),
                    ..Default::default()
                },
                secrets: Some(vec![
                    ObjectReference {
                        name: Some("bot-token".into()),
                        ..Default::default()
                    },
                    ObjectReference {
                        name: Some("mounted-token".into()),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            },
        )
        .await?;
    let account = ObjectRef {
        name: "bot".into(),
        uid: sa.metadata.uid.clone().unwrap_or_default(),
    };
    let token = jwt::sign(&legacy_claims(NS, &account, "bot-token"), &key);
    let secrets: Api<Secret> = Api::namespaced(cluster.client.clone(), NS);
    secrets
        .create(
            &PostParams::default(),
            &token_secret("bot-token", &sa, Some(&token)),
        )
        .await?;
    secrets
        .create(
            &PostParams::default(),
            &token_secret("mounted-token", &sa, None),
        )
        .await?;
    let pods: Api<Pod> = Api::namespaced(cluster.client.clone(), NS);
    pods.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": "user"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}],
                     "volumes": [{"name": "t", "secret": {"secretName": "mounted-token"}}]}
        }))?,
    )
    .await?;

    // A legacy token that authenticates gets its Secret labelled with today's date.
    let reviewed = review(&cluster, &token).await?;
    assert_eq!(
        reviewed["status"]["authenticated"],
        json!(true),
        "{reviewed}"
    );
    let labelled = eventually("the last-used label", || async {
        let s = secrets.get("bot-token").await?;
        Ok(label(&s, LAST_USED_LABEL_KEY))
    })
    .await?;
    assert_eq!(labelled, today);

    // A year and a bit later, the cleaner marks the unused, unmounted token invalid.
    let now = jiff::Timestamp::now();
    let later = |d: Duration| now + jiff::SignedDuration::try_from(d).expect("a duration");
    let clock = FakeClock::new(later(YEAR + Duration::from_secs(3 * 24 * 3600)));
    let cleaner = LegacyTokenCleaner::new(
        &cluster.factory,
        cluster.client.clone(),
        Config {
            clean_up_period: YEAR,
            sync_interval: Duration::from_millis(100),
            clock: Arc::new(clock.clone()),
        },
    )?;
    cluster.spawn(cleaner.run(cluster.shutdown.clone()));
    cluster.start_informers();
    let invalid_since = eventually("the invalid-since label", || async {
        let s = secrets.get("bot-token").await?;
        Ok(label(&s, INVALID_SINCE_LABEL_KEY))
    })
    .await?;
    let expected = clock
        .now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date()
        .to_string();
    assert_eq!(invalid_since, expected);
    let mounted = secrets.get("mounted-token").await?;
    assert_eq!(label(&mounted, INVALID_SINCE_LABEL_KEY), None);

    // The server now refuses the token with kube's message, and still records the use.
    let reviewed = review(&cluster, &token).await?;
    assert_ne!(
        reviewed["status"]["authenticated"],
        json!(true),
        "{reviewed}"
    );
    let error = reviewed["status"]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("the token in secret default/bot-token for service account default/bot has been marked invalid"),
        "{error}"
    );

    // Removing the label lifts the mark, until the cleaner's next pass.
    let unlabel = json!({"metadata": {"labels": {INVALID_SINCE_LABEL_KEY: null}}});
    secrets
        .patch(
            "bot-token",
            &PatchParams::default(),
            &Patch::Merge(&unlabel),
        )
        .await?;
    // The cleaner marks it again at its next pass: nothing used it within the period.
    eventually("the token to be marked invalid again", || async {
        let s = secrets.get("bot-token").await?;
        Ok(label(&s, INVALID_SINCE_LABEL_KEY))
    })
    .await?;

    // One more period later it is deleted; the mounted token stays.
    clock.set(later(2 * YEAR + Duration::from_secs(10 * 24 * 3600)));
    eventually("the invalid token to be deleted", || async {
        Ok(secrets.get_opt("bot-token").await?.is_none().then_some(()))
    })
    .await?;
    assert!(secrets.get_opt("mounted-token").await?.is_some());
    cluster.stop().await;
    Ok(())
}
