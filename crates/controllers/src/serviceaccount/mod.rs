//! The service-account controller: a `default` ServiceAccount in every active namespace.
//!
//! Mirrors `pkg/controller/serviceaccount/serviceaccounts_controller.go`: a namespace that is
//! added or updated, or whose `default` ServiceAccount is deleted, is queued by name; its sync
//! creates each ServiceAccount to ensure that the cache does not have. Namespaces that are not
//! `Active` are left alone, and creates refused because the namespace is terminating are not
//! retried.

pub mod legacy_token_cleaner;
pub mod pod_secrets;
pub mod tokens;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, ObjectMeta, PostParams};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{api_error, worker, ObjectKey, Shutdown};

/// The ServiceAccounts ensured in every namespace (`DefaultServiceAccountsControllerOptions`).
pub const SERVICE_ACCOUNTS_TO_ENSURE: &[&str] = &["default"];

/// Creating the ServiceAccounts of a namespace failed.
#[derive(Debug, thiserror::Error)]
#[error("failed to create service account {namespace}/{name}")]
pub struct Error {
    /// Namespace of the ServiceAccount.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The API error.
    #[source]
    pub source: kube::Error,
}

/// Keeps the default ServiceAccounts of every namespace.
pub struct ServiceAccountsController {
    client: kube::Client,
    queue: RateLimitingQueue<String>,
    namespaces: SharedInformer<Namespace>,
    service_accounts: SharedInformer<ServiceAccount>,
}

/// Which of `wanted` are missing from a namespace in phase `phase`, given the names the cache
/// has: none unless the namespace is `Active` (`syncNamespace`).
pub fn missing_service_accounts<'a>(
    phase: Option<&str>,
    wanted: &[&'a str],
    exists: impl Fn(&str) -> bool,
) -> Vec<&'a str> {
    if phase != Some("Active") {
        return Vec::new();
    }
    wanted
        .iter()
        .copied()
        .filter(|name| !exists(name))
        .collect()
}

impl ServiceAccountsController {
    /// Registers the controller's handlers on the factory's Namespace and ServiceAccount
    /// informers.
    pub fn new(factory: &InformerFactory, client: kube::Client) -> Arc<Self> {
        let queue = RateLimitingQueue::new("serviceaccount");
        let namespaces = factory.informer::<Namespace>();
        let service_accounts = factory.informer::<ServiceAccount>();
        // kube registers both handlers with `DefaultServiceAccountsControllerOptions`'
        // `NamespaceResync` and `ServiceAccountResync`, both zero: never resynced.
        let q = queue.clone();
        namespaces.add_event_handler_with_resync_period(
            move |note: Notification<Namespace>| match note {
                Notification::Add(ns) | Notification::Update { new: ns, .. } => {
                    if let Some(name) = &ns.metadata.name {
                        q.add(name.clone());
                    }
                }
                Notification::Delete(_) => {}
            },
            Duration::ZERO,
        );
        let q = queue.clone();
        service_accounts.add_event_handler_with_resync_period(
            move |note: Notification<ServiceAccount>| {
                if let Notification::Delete(deleted) = note {
                    if let Some(ns) = &deleted.object().metadata.namespace {
                        q.add(ns.clone());
                    }
                }
            },
            Duration::ZERO,
        );
        Arc::new(Self {
            client,
            queue,
            namespaces,
            service_accounts,
        })
    }

    /// Whether the controller's caches have synced.
    pub fn has_synced(&self) -> bool {
        self.namespaces.has_synced() && self.service_accounts.has_synced()
    }

    /// Runs `workers` sync loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = "serviceaccount", "starting controller");
        let synced: [&dyn HasSynced; 2] = [&self.namespaces, &self.service_accounts];
        if wait_for_cache_sync("service account", &synced, &shutdown).await {
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                workers,
                shutdown,
                worker::ErrorPolicy::handle_error(),
                move |ns| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&ns).await }
                },
            )
            .await;
        }
        tracing::info!(controller = "serviceaccount", "shutting down controller");
    }

    /// Creates the missing ServiceAccounts of namespace `name`.
    pub async fn sync(&self, name: &str) -> Result<(), Error> {
        let Some(ns) = self.namespaces.store().get(&ObjectKey::cluster(name)) else {
            return Ok(());
        };
        let phase = ns.status.as_ref().and_then(|s| s.phase.as_deref());
        let cache = self.service_accounts.store();
        let missing = missing_service_accounts(phase, SERVICE_ACCOUNTS_TO_ENSURE, |sa| {
            cache.get(&ObjectKey::new(name, sa)).is_some()
        });
        let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), name);
        for sa in missing {
            let object = ServiceAccount {
                metadata: ObjectMeta {
                    name: Some(sa.to_string()),
                    namespace: Some(name.to_string()),
                    ..Default::default()
                },
                ..Default::default()
            };
            match api.create(&PostParams::default(), &object).await {
                Ok(_) => {}
                Err(e)
                    if api_error::is_already_exists(&e)
                        || api_error::is_namespace_terminating(&e) => {}
                Err(source) => {
                    return Err(Error {
                        namespace: name.to_string(),
                        name: sa.to_string(),
                        source,
                    })
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_active_namespaces_get_their_service_accounts() {
        let none = |_: &str| false;
        assert_eq!(
            missing_service_accounts(Some("Active"), &["default"], none),
            ["default"]
        );
        assert!(missing_service_accounts(Some("Terminating"), &["default"], none).is_empty());
        assert!(missing_service_accounts(None, &["default"], none).is_empty());
    }

    #[test]
    fn existing_service_accounts_are_not_created_again() {
        let exists = |name: &str| name == "default";
        assert!(missing_service_accounts(Some("Active"), &["default"], exists).is_empty());
        assert_eq!(
            missing_service_accounts(Some("Active"), &["default", "builder"], exists),
            ["builder"]
        );
    }
}
