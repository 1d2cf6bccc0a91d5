//! The bootstrap signer: `kube-public/cluster-info` carries a `jws-kubeconfig-<token-id>` detached
//! signature of its kubeconfig for every valid signing bootstrap token, and no other.
//!
//! Mirrors `pkg/controller/bootstrap/bootstrapsigner.go`: any change to `cluster-info` or to a
//! Secret in `kube-system` queues the one key; its sync recomputes the signatures and updates the
//! ConfigMap when they differ from those it carries.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, PostParams};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{api_error, worker, Clock, ObjectKey, Shutdown};

use super::jws::compute_detached_signature;
use super::token::{valid_for_signing, SECRET_TYPE, TOKEN_NAMESPACE};

/// Canonical name of the controller.
pub const NAME: &str = "bootstrap-signer-controller";
/// `ConfigMapClusterInfo`.
pub const CLUSTER_INFO: &str = "cluster-info";
/// Namespace of `cluster-info`.
pub const CLUSTER_INFO_NAMESPACE: &str = "kube-public";
/// `KubeConfigKey`.
pub const KUBECONFIG_KEY: &str = "kubeconfig";
/// `JWSSignatureKeyPrefix`.
pub const SIGNATURE_PREFIX: &str = "jws-kubeconfig-";

/// The data `cluster-info` should have, when it differs from `data` (`signConfigMap`): every
/// signature of `tokens` (token ID → secret) over its kubeconfig, stale ones removed. `None` when
/// nothing changes or the ConfigMap has no kubeconfig.
pub fn signed_data(
    data: &BTreeMap<String, String>,
    tokens: &BTreeMap<String, String>,
) -> Option<BTreeMap<String, String>> {
    let Some(content) = data.get(KUBECONFIG_KEY) else {
        tracing::debug!(
            "No {KUBECONFIG_KEY} key in {CLUSTER_INFO_NAMESPACE}/{CLUSTER_INFO} ConfigMap"
        );
        return None;
    };
    let mut new: BTreeMap<String, String> = data
        .iter()
        .filter(|(k, _)| !k.starts_with(SIGNATURE_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for (id, secret) in tokens {
        new.insert(
            format!("{SIGNATURE_PREFIX}{id}"),
            compute_detached_signature(content, id, secret),
        );
    }
    (new != *data).then_some(new)
}

/// Signs `cluster-info` with the bootstrap tokens.
pub struct BootstrapSigner {
    client: kube::Client,
    queue: RateLimitingQueue<String>,
    config_maps: SharedInformer<ConfigMap>,
    secrets: SharedInformer<Secret>,
    clock: Arc<dyn Clock>,
}

/// Updating `cluster-info` failed.
#[derive(Debug, thiserror::Error)]
#[error("failed to update the {CLUSTER_INFO_NAMESPACE}/{CLUSTER_INFO} ConfigMap")]
pub struct Error(#[source] pub kube::Error);

fn is_cluster_info(cm: &ConfigMap) -> bool {
    cm.metadata.namespace.as_deref() == Some(CLUSTER_INFO_NAMESPACE)
        && cm.metadata.name.as_deref() == Some(CLUSTER_INFO)
}

fn is_token_secret(s: &Secret) -> bool {
    s.metadata.namespace.as_deref() == Some(TOKEN_NAMESPACE)
        && s.type_.as_deref() == Some(SECRET_TYPE)
}

impl BootstrapSigner {
    /// Registers handlers on the ConfigMap and Secret informers.
    pub fn new(
        factory: &InformerFactory,
        client: kube::Client,
        clock: Arc<dyn Clock>,
    ) -> Arc<Self> {
        let queue = RateLimitingQueue::new("bootstrap_signer_queue");
        let config_maps = factory.informer::<ConfigMap>();
        let secrets = factory.informer::<Secret>();
        // `DefaultSignerOptions` has no `ConfigMapResync` nor `SecretResync`: never resynced.
        let q = queue.clone();
        config_maps.add_event_handler_with_resync_period(
            move |note: Notification<ConfigMap>| {
                let relevant = match &note {
                    Notification::Add(cm) | Notification::Update { new: cm, .. } => {
                        is_cluster_info(cm)
                    }
                    Notification::Delete(d) => is_cluster_info(d.object()),
                };
                if relevant {
                    q.add(CLUSTER_INFO.to_string());
                }
            },
            Duration::ZERO,
        );
        let q = queue.clone();
        secrets.add_event_handler_with_resync_period(
            move |note: Notification<Secret>| {
                let relevant = match &note {
                    Notification::Add(s) | Notification::Update { new: s, .. } => {
                        is_token_secret(s)
                    }
                    Notification::Delete(d) => is_token_secret(d.object()),
                };
                if relevant {
                    q.add(CLUSTER_INFO.to_string());
                }
            },
            Duration::ZERO,
        );
        Arc::new(Self {
            client,
            queue,
            config_maps,
            secrets,
            clock,
        })
    }

    /// Runs the single worker until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        tracing::info!(controller = NAME, "Starting workers");
        let synced: [&dyn HasSynced; 2] = [&self.config_maps, &self.secrets];
        if wait_for_cache_sync("bootstrap_signer", &synced, &shutdown).await {
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                1,
                shutdown,
                worker::ErrorPolicy::handle_error(),
                move |_key| {
                    let this = Arc::clone(&this);
                    async move { this.sign_config_map().await }
                },
            )
            .await;
        }
        tracing::info!(controller = NAME, "Shutting down");
    }

    /// The signing tokens in the cache (`getTokens`).
    fn tokens(&self) -> BTreeMap<String, String> {
        let now = self.clock.now();
        self.secrets
            .store()
            .list_by_namespace(TOKEN_NAMESPACE)
            .iter()
            .filter(|s| s.type_.as_deref() == Some(SECRET_TYPE))
            .filter_map(|s| valid_for_signing(s, now))
            .collect()
    }

    /// `signConfigMap`.
    pub async fn sign_config_map(&self) -> Result<(), Error> {
        let Some(cm) = self
            .config_maps
            .store()
            .get(&ObjectKey::new(CLUSTER_INFO_NAMESPACE, CLUSTER_INFO))
        else {
            return Ok(());
        };
        let data = cm.data.clone().unwrap_or_default();
        let Some(new_data) = signed_data(&data, &self.tokens()) else {
            return Ok(());
        };
        let mut updated = (*cm).clone();
        updated.data = Some(new_data);
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), CLUSTER_INFO_NAMESPACE);
        match api
            .replace(CLUSTER_INFO, &PostParams::default(), &updated)
            .await
        {
            Ok(_) => Ok(()),
            // The update event of the newer version queues the key again.
            Err(e) if api_error::is_conflict(&e) => {
                tracing::debug!("Updating the ConfigMap failed due to conflict; will retry");
                Ok(())
            }
            Err(e) => Err(Error(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECONFIG: &str = "Hello, World";

    fn data(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn sig(id: &str, secret: &str) -> String {
        compute_detached_signature(KUBECONFIG, id, secret)
    }

    // bootstrapsigner_test.go: TestSimpleSign, TestNoSignNeeded, TestUpdateSignature,
    // TestRemoveSignature, TestNoConfigMap/no kubeconfig.
    #[test]
    fn a_new_token_adds_its_signature() {
        let tokens = data(&[("abc123", "tokensecret")]);
        let new = signed_data(&data(&[(KUBECONFIG_KEY, KUBECONFIG)]), &tokens).expect("signed");
        assert_eq!(
            new,
            data(&[
                (KUBECONFIG_KEY, KUBECONFIG),
                ("jws-kubeconfig-abc123", &sig("abc123", "tokensecret"))
            ])
        );
    }

    #[test]
    fn signatures_already_right_need_no_update() {
        let tokens = data(&[("abc123", "tokensecret")]);
        let current = data(&[
            (KUBECONFIG_KEY, KUBECONFIG),
            ("jws-kubeconfig-abc123", &sig("abc123", "tokensecret")),
        ]);
        assert_eq!(signed_data(&current, &tokens), None);
    }

    #[test]
    fn a_stale_signature_is_replaced_and_an_orphan_removed() {
        let tokens = data(&[("abc123", "tokensecret")]);
        let current = data(&[
            (KUBECONFIG_KEY, KUBECONFIG),
            ("jws-kubeconfig-abc123", "old signature"),
            ("jws-kubeconfig-zzz999", "gone token"),
            ("other", "kept"),
        ]);
        assert_eq!(
            signed_data(&current, &tokens),
            Some(data(&[
                (KUBECONFIG_KEY, KUBECONFIG),
                ("jws-kubeconfig-abc123", &sig("abc123", "tokensecret")),
                ("other", "kept"),
            ]))
        );
        let current = data(&[(KUBECONFIG_KEY, KUBECONFIG), ("jws-kubeconfig-abc123", "x")]);
        assert_eq!(
            signed_data(&current, &BTreeMap::new()),
            Some(data(&[(KUBECONFIG_KEY, KUBECONFIG)]))
        );
    }

    #[test]
    fn without_a_kubeconfig_nothing_is_signed() {
        let tokens = data(&[("abc123", "tokensecret")]);
        assert_eq!(signed_data(&data(&[("other", "x")]), &tokens), None);
    }
}
