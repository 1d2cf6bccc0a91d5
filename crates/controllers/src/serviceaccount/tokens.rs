//! The service-account token controller: fills `kubernetes.io/service-account-token` Secrets with
//! a legacy token, the cluster CA and the namespace, and deletes them when their ServiceAccount
//! is gone.
//!
//! Mirrors `pkg/controller/serviceaccount/tokens_controller.go`: Secret notifications of that type
//! queue the Secret, ServiceAccount deletions queue the account; a Secret whose account is missing
//! (or has another UID) is deleted, a Secret missing `token`, `ca.crt` or `namespace` is completed
//! from a fresh read (left for a later notification when the cache is behind). Signing is
//! injected ([`LegacyTokenGenerator`]): the controller knows no key.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::ByteString;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{api_error, worker, ObjectKey, Shutdown};

/// Type of the Secrets this controller completes (`v1.SecretTypeServiceAccountToken`).
pub const SERVICE_ACCOUNT_TOKEN_TYPE: &str = "kubernetes.io/service-account-token";
/// Annotation naming the ServiceAccount of a token Secret (`v1.ServiceAccountNameKey`).
pub const SERVICE_ACCOUNT_NAME_KEY: &str = "kubernetes.io/service-account.name";
/// Annotation holding the ServiceAccount's UID (`v1.ServiceAccountUIDKey`).
pub const SERVICE_ACCOUNT_UID_KEY: &str = "kubernetes.io/service-account.uid";
/// Data key of the token (`v1.ServiceAccountTokenKey`).
pub const TOKEN_KEY: &str = "token";
/// Data key of the CA bundle (`v1.ServiceAccountRootCAKey`).
pub const ROOT_CA_KEY: &str = "ca.crt";
/// Data key of the namespace (`v1.ServiceAccountNamespaceKey`).
pub const NAMESPACE_KEY: &str = "namespace";

/// Signs legacy service-account tokens (`serviceaccount.LegacyClaims` + the token generator of
/// `--service-account-private-key-file`).
pub trait LegacyTokenGenerator: Send + Sync {
    /// A signed token for the ServiceAccount `sa_name` (UID `sa_uid`) of `namespace`, to be kept
    /// in the Secret `secret_name`.
    fn generate(
        &self,
        namespace: &str,
        sa_name: &str,
        sa_uid: &str,
        secret_name: &str,
    ) -> Result<String, String>;
}

/// Errors of a sync.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An API call about the Secret failed.
    #[error("failed to {action} token secret {namespace}/{name}")]
    Api {
        /// What was attempted (`get`, `update`, `delete`).
        action: &'static str,
        /// Namespace of the Secret.
        namespace: String,
        /// Its name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// Reading the ServiceAccount failed.
    #[error("failed to get service account {namespace}/{name}")]
    ServiceAccount {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// The token could not be signed.
    #[error("failed to generate a token for {namespace}/{name}: {reason}")]
    Generate {
        /// Namespace of the Secret.
        namespace: String,
        /// Its name.
        name: String,
        /// Why.
        reason: String,
    },
}

/// A unit of work.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Item {
    /// A ServiceAccount was deleted: its token Secrets go too.
    ServiceAccount {
        /// The account.
        key: ObjectKey,
        /// Its UID.
        uid: String,
    },
    /// A token Secret to check, with the ServiceAccount it names (to drop the account's
    /// reference to it once it is gone).
    Secret {
        /// The Secret.
        key: ObjectKey,
        /// Name of its ServiceAccount.
        account: String,
    },
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::ServiceAccount { key, .. } => write!(f, "serviceaccount {key}"),
            Item::Secret { key, .. } => write!(f, "secret {key}"),
        }
    }
}

/// What a token Secret lacks (`secretUpdateNeeded`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// `ca.crt` is not the root CA.
    pub ca: bool,
    /// `namespace` is empty.
    pub namespace: bool,
    /// `token` is empty.
    pub token: bool,
}

impl Needs {
    /// Whether anything is missing.
    pub fn any(&self) -> bool {
        self.ca || self.namespace || self.token
    }
}

/// What to do about a token Secret.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretAction {
    /// Its ServiceAccount is gone (or was recreated): delete it.
    Delete,
    /// Complete it.
    Update(Needs),
    /// Nothing.
    None,
}

/// What `secret` lacks, given the CA bundle to publish.
pub fn secret_update_needed(secret: &Secret, root_ca: &[u8]) -> Needs {
    let data = |k: &str| {
        secret
            .data
            .as_ref()
            .and_then(|d| d.get(k))
            .map(|b| b.0.as_slice())
            .unwrap_or_default()
    };
    Needs {
        ca: !root_ca.is_empty() && data(ROOT_CA_KEY) != root_ca,
        namespace: data(NAMESPACE_KEY).is_empty(),
        token: data(TOKEN_KEY).is_empty(),
    }
}

/// The ServiceAccount name and UID a token Secret refers to (empty when unset).
pub fn referenced_account(secret: &Secret) -> (&str, &str) {
    let a = |k: &str| {
        secret
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(k))
            .map(String::as_str)
            .unwrap_or("")
    };
    (a(SERVICE_ACCOUNT_NAME_KEY), a(SERVICE_ACCOUNT_UID_KEY))
}

/// Whether `secret` is a token of `sa` (`serviceaccount.IsServiceAccountToken`).
pub fn is_token_of(secret: &Secret, sa_name: &str, sa_uid: &str) -> bool {
    if secret.type_.as_deref() != Some(SERVICE_ACCOUNT_TOKEN_TYPE) {
        return false;
    }
    let (name, uid) = referenced_account(secret);
    name == sa_name && (uid.is_empty() || uid == sa_uid)
}

/// What to do about the token Secret `secret` whose account is `account` (`None` when missing).
pub fn decide(secret: &Secret, account: Option<&ServiceAccount>, root_ca: &[u8]) -> SecretAction {
    let (_, want_uid) = referenced_account(secret);
    let Some(sa) = account else {
        return SecretAction::Delete;
    };
    let uid = sa.metadata.uid.as_deref().unwrap_or("");
    if !want_uid.is_empty() && want_uid != uid {
        return SecretAction::Delete;
    }
    let needs = secret_update_needed(secret, root_ca);
    if needs.any() {
        SecretAction::Update(needs)
    } else {
        SecretAction::None
    }
}

/// `sa` without the reference to the Secret `secret` in its `secrets`; `None` when it has none.
pub fn without_secret_reference(sa: &ServiceAccount, secret: &str) -> Option<ServiceAccount> {
    let refs = sa.secrets.as_ref()?;
    if !refs.iter().any(|r| r.name.as_deref() == Some(secret)) {
        return None;
    }
    let mut sa = sa.clone();
    sa.secrets = Some(
        refs.iter()
            .filter(|r| r.name.as_deref() != Some(secret))
            .cloned()
            .collect(),
    );
    Some(sa)
}

/// Completes and cleans up service-account token Secrets.
pub struct TokensController {
    client: kube::Client,
    generator: Arc<dyn LegacyTokenGenerator>,
    root_ca: Vec<u8>,
    queue: RateLimitingQueue<Item>,
    service_accounts: SharedInformer<ServiceAccount>,
    secrets: SharedInformer<Secret>,
}

impl TokensController {
    /// Registers the handlers; `root_ca` is the CA bundle written as `ca.crt` (none when empty).
    pub fn new(
        factory: &InformerFactory,
        client: kube::Client,
        generator: Arc<dyn LegacyTokenGenerator>,
        root_ca: Vec<u8>,
    ) -> Arc<Self> {
        let queue = RateLimitingQueue::new("serviceaccount_tokens_secret");
        let service_accounts = factory.informer::<ServiceAccount>();
        let secrets = factory.informer::<Secret>();
        // kube-controller-manager gives the tokens controller no `ServiceAccountResync` nor
        // `SecretResync` (`startServiceAccountTokenController`): its handlers are never resynced.
        let q = queue.clone();
        service_accounts.add_event_handler_with_resync_period(
            move |note: Notification<ServiceAccount>| {
                if let Notification::Delete(deleted) = note {
                    let sa = deleted.object();
                    q.add(Item::ServiceAccount {
                        key: ObjectKey::from_obj(sa.as_ref()),
                        uid: sa.metadata.uid.clone().unwrap_or_default(),
                    });
                }
            },
            Duration::ZERO,
        );
        let q = queue.clone();
        secrets.add_event_handler_with_resync_period(
            move |note: Notification<Secret>| {
                let secret = match &note {
                    Notification::Add(s) => s.as_ref(),
                    Notification::Update { new, .. } => new.as_ref(),
                    Notification::Delete(deleted) => deleted.object(),
                };
                if secret.type_.as_deref() == Some(SERVICE_ACCOUNT_TOKEN_TYPE) {
                    q.add(Item::Secret {
                        key: ObjectKey::from_obj(secret),
                        account: referenced_account(secret).0.to_string(),
                    });
                }
            },
            Duration::ZERO,
        );
        Arc::new(Self {
            client,
            generator,
            root_ca,
            queue,
            service_accounts,
            secrets,
        })
    }

    /// Whether the controller's caches have synced.
    pub fn has_synced(&self) -> bool {
        self.service_accounts.has_synced() && self.secrets.has_synced()
    }

    /// Runs `workers` sync loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = "serviceaccount-token", "starting controller");
        let synced: [&dyn HasSynced; 2] = [&self.service_accounts, &self.secrets];
        if wait_for_cache_sync("tokens", &synced, &shutdown).await {
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                workers,
                shutdown,
                worker::ErrorPolicy::handle_error(),
                move |item| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&item).await }
                },
            )
            .await;
        }
        tracing::info!(
            controller = "serviceaccount-token",
            "shutting down controller"
        );
    }

    /// Handles one item.
    pub async fn sync(&self, item: &Item) -> Result<(), Error> {
        match item {
            Item::ServiceAccount { key, uid } => self.sync_service_account(key, uid).await,
            Item::Secret { key, account } => self.sync_secret(key, account).await,
        }
    }

    /// A deleted ServiceAccount: delete its token Secrets unless it is back with the same UID.
    async fn sync_service_account(&self, key: &ObjectKey, uid: &str) -> Result<(), Error> {
        let cached = self.service_accounts.store().get(key);
        if cached.is_some_and(|sa| sa.metadata.uid.as_deref() == Some(uid)) {
            return Ok(());
        }
        let ns = key.namespace.as_deref().unwrap_or("");
        let tokens: Vec<Arc<Secret>> = self
            .secrets
            .store()
            .list_by_namespace(ns)
            .into_iter()
            .filter(|s| is_token_of(s, &key.name, uid))
            .collect();
        for secret in tokens {
            self.delete_token(&secret).await?;
        }
        Ok(())
    }

    async fn sync_secret(&self, key: &ObjectKey, account: &str) -> Result<(), Error> {
        let Some(cached) = self.secrets.store().get(key) else {
            return self.remove_secret_reference(key, account).await;
        };
        let ns = key.namespace.clone().unwrap_or_default();
        let (sa_name, _) = referenced_account(&cached);
        let account = self.service_account(&ns, sa_name).await?;
        match decide(&cached, account.as_deref(), &self.root_ca) {
            SecretAction::None => Ok(()),
            SecretAction::Delete => {
                tracing::debug!(secret = %key, "service account does not exist, deleting token");
                self.delete_token(&cached).await
            }
            SecretAction::Update(_) => {
                let sa = account.expect("an update is only decided for an existing account");
                self.complete(&cached, &sa).await
            }
        }
    }

    /// A deleted token Secret: the ServiceAccount `account` no longer lists it in `secrets`
    /// (`removeSecretReference`).
    async fn remove_secret_reference(&self, key: &ObjectKey, account: &str) -> Result<(), Error> {
        let ns = key.namespace.clone().unwrap_or_default();
        let Some(sa) = self
            .service_accounts
            .store()
            .get(&ObjectKey::new(ns.clone(), account))
        else {
            return Ok(());
        };
        let Some(updated) = without_secret_reference(&sa, &key.name) else {
            return Ok(());
        };
        let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), &ns);
        match api.replace(account, &PostParams::default(), &updated).await {
            Ok(_) => Ok(()),
            // A newer account will be seen again; a deleted one needs nothing.
            Err(e) if api_error::is_conflict(&e) || api_error::is_not_found(&e) => Ok(()),
            Err(source) => Err(Error::ServiceAccount {
                namespace: ns,
                name: account.to_string(),
                source,
            }),
        }
    }

    /// The ServiceAccount from the cache, else from the API (it may be newer than the cache).
    async fn service_account(
        &self,
        ns: &str,
        name: &str,
    ) -> Result<Option<Arc<ServiceAccount>>, Error> {
        if name.is_empty() {
            return Ok(None);
        }
        if let Some(sa) = self.service_accounts.store().get(&ObjectKey::new(ns, name)) {
            return Ok(Some(sa));
        }
        let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), ns);
        match api.get(name).await {
            Ok(sa) => Ok(Some(Arc::new(sa))),
            Err(e) if api_error::is_not_found(&e) => Ok(None),
            Err(source) => Err(Error::ServiceAccount {
                namespace: ns.to_string(),
                name: name.to_string(),
                source,
            }),
        }
    }

    /// `generateTokenIfNeeded`: completes the live Secret unless the cache is behind it.
    async fn complete(&self, cached: &Secret, sa: &ServiceAccount) -> Result<(), Error> {
        let ns = cached.metadata.namespace.clone().unwrap_or_default();
        let name = cached.metadata.name.clone().unwrap_or_default();
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &ns);
        let api_err = |action, source| Error::Api {
            action,
            namespace: ns.clone(),
            name: name.clone(),
            source,
        };
        let mut live = match api.get(&name).await {
            Ok(s) => s,
            Err(e) if api_error::is_not_found(&e) => return Ok(()),
            Err(e) => return Err(api_err("get", e)),
        };
        // Our view of the Secret is stale: its update notification will bring it back.
        if live.metadata.resource_version != cached.metadata.resource_version {
            return Ok(());
        }
        let needs = secret_update_needed(&live, &self.root_ca);
        if !needs.any() {
            return Ok(());
        }
        let sa_name = sa.metadata.name.clone().unwrap_or_default();
        let sa_uid = sa.metadata.uid.clone().unwrap_or_default();
        let data = live.data.get_or_insert_with(BTreeMap::new);
        if needs.ca {
            data.insert(ROOT_CA_KEY.into(), ByteString(self.root_ca.clone()));
        }
        if needs.namespace {
            data.insert(NAMESPACE_KEY.into(), ByteString(ns.clone().into_bytes()));
        }
        if needs.token {
            let token = self
                .generator
                .generate(&ns, &sa_name, &sa_uid, &name)
                .map_err(|reason| Error::Generate {
                    namespace: ns.clone(),
                    name: name.clone(),
                    reason,
                })?;
            data.insert(TOKEN_KEY.into(), ByteString(token.into_bytes()));
        }
        let annotations = live.metadata.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert(SERVICE_ACCOUNT_NAME_KEY.into(), sa_name);
        annotations.insert(SERVICE_ACCOUNT_UID_KEY.into(), sa_uid);
        match api.replace(&name, &PostParams::default(), &live).await {
            Ok(_) => Ok(()),
            // A newer version or a deletion will be notified and synced again.
            Err(e) if api_error::is_conflict(&e) || api_error::is_not_found(&e) => Ok(()),
            Err(e) => Err(api_err("update", e)),
        }
    }

    /// Deletes a token Secret, only the very object seen (UID precondition).
    async fn delete_token(&self, secret: &Secret) -> Result<(), Error> {
        let ns = secret.metadata.namespace.clone().unwrap_or_default();
        let name = secret.metadata.name.clone().unwrap_or_default();
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &ns);
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: secret.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&name, &params).await {
            Ok(_) => Ok(()),
            Err(e) if api_error::is_not_found(&e) || api_error::is_conflict(&e) => Ok(()),
            Err(source) => Err(Error::Api {
                action: "delete",
                namespace: ns,
                name,
                source,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ObjectMeta;

    const CA: &[u8] = b"CA DATA";

    fn account(uid: &str) -> ServiceAccount {
        ServiceAccount {
            metadata: ObjectMeta {
                name: Some("default".into()),
                namespace: Some("ns".into()),
                uid: Some(uid.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn token_secret(uid: &str, data: &[(&str, &[u8])]) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some("token-secret-1".into()),
                namespace: Some("ns".into()),
                annotations: Some(BTreeMap::from([
                    (SERVICE_ACCOUNT_NAME_KEY.to_string(), "default".to_string()),
                    (SERVICE_ACCOUNT_UID_KEY.to_string(), uid.to_string()),
                ])),
                ..Default::default()
            },
            type_: Some(SERVICE_ACCOUNT_TOKEN_TYPE.into()),
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), ByteString(v.to_vec())))
                    .collect(),
            ),
            ..Default::default()
        }
    }

    fn complete() -> Vec<(&'static str, &'static [u8])> {
        vec![
            (TOKEN_KEY, b"ABC"),
            (ROOT_CA_KEY, CA),
            (NAMESPACE_KEY, b"ns"),
        ]
    }

    // tokens_controller_test.go TestTokenCreation, the cases that survive the removal of
    // auto-generated tokens (1.24).
    #[test]
    fn token_secrets_are_completed_or_deleted_as_kube_does() {
        let sa = account("12345");
        // "added token secret with complete data": nothing.
        assert_eq!(
            decide(&token_secret("12345", &complete()), Some(&sa), CA),
            SecretAction::None
        );
        // "added token secret without token data".
        let mut d = complete();
        d.retain(|(k, _)| *k != TOKEN_KEY);
        assert_eq!(
            decide(&token_secret("12345", &d), Some(&sa), CA),
            SecretAction::Update(Needs {
                token: true,
                ..Needs::default()
            })
        );
        // "added token secret without ca data" and "with mismatched ca data".
        let mut d = complete();
        d.retain(|(k, _)| *k != ROOT_CA_KEY);
        assert_eq!(
            decide(&token_secret("12345", &d), Some(&sa), CA),
            SecretAction::Update(Needs {
                ca: true,
                ..Needs::default()
            })
        );
        let mut d = complete();
        d[1] = (ROOT_CA_KEY, b"mismatched");
        assert_eq!(
            decide(&token_secret("12345", &d), Some(&sa), CA),
            SecretAction::Update(Needs {
                ca: true,
                ..Needs::default()
            })
        );
        // No CA configured: ca.crt is not required.
        let mut d = complete();
        d.retain(|(k, _)| *k != ROOT_CA_KEY);
        assert_eq!(
            decide(&token_secret("12345", &d), Some(&sa), b""),
            SecretAction::None
        );
        // "added token secret without namespace data".
        let mut d = complete();
        d.retain(|(k, _)| *k != NAMESPACE_KEY);
        assert_eq!(
            decide(&token_secret("12345", &d), Some(&sa), CA),
            SecretAction::Update(Needs {
                namespace: true,
                ..Needs::default()
            })
        );
        // "added token secret for missing serviceaccount" and "with wrong uid serviceaccount".
        assert_eq!(
            decide(&token_secret("12345", &complete()), None, CA),
            SecretAction::Delete
        );
        assert_eq!(
            decide(&token_secret("67890", &complete()), Some(&sa), CA),
            SecretAction::Delete
        );
        // A Secret naming no UID belongs to whichever account has the name.
        assert_eq!(
            decide(&token_secret("", &complete()), Some(&sa), CA),
            SecretAction::None
        );
    }

    // tokens_controller_test.go "deleted token secret with serviceaccount": the reference goes.
    #[test]
    fn a_deleted_token_secret_is_no_longer_referenced_by_its_account() {
        use k8s_openapi::api::core::v1::ObjectReference;
        let reference = |n: &str| ObjectReference {
            name: Some(n.into()),
            ..Default::default()
        };
        let mut sa = account("12345");
        sa.secrets = Some(vec![reference("token-secret-1"), reference("other")]);
        let updated = without_secret_reference(&sa, "token-secret-1").expect("changed");
        assert_eq!(updated.secrets, Some(vec![reference("other")]));
        assert_eq!(without_secret_reference(&updated, "token-secret-1"), None);
        assert_eq!(without_secret_reference(&account("1"), "x"), None);
    }

    #[test]
    fn tokens_of_an_account_are_recognised_by_name_and_uid() {
        let s = token_secret("12345", &complete());
        assert!(is_token_of(&s, "default", "12345"));
        assert!(!is_token_of(&s, "default", "67890"));
        assert!(!is_token_of(&s, "other", "12345"));
        assert!(is_token_of(&token_secret("", &[]), "default", "any"));
        let mut opaque = s.clone();
        opaque.type_ = Some("Opaque".into());
        assert!(!is_token_of(&opaque, "default", "12345"));
    }
}
