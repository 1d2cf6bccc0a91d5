//! The webhooks of the stored Mutating- or ValidatingWebhookConfigurations, kept current from
//! the server's watch cache (kube's `configuration.NewMutatingWebhookConfigurationManager`
//! and its validating twin, which read an informer).
//!
//! As the RBAC policy cache does, the source subscribes when it is built and applies what the
//! watch cache published when a request reads it: a request that finds nothing new pays one
//! atomic load and a clone of an `Arc`. Each configuration is decoded once per change. The
//! webhooks are ordered as kube orders them: configurations by name, then each
//! configuration's webhooks in order.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use rkcm_apimachinery::catalog;
use rkcm_storage::store::Store;
use rkcm_storage::watch_cache::{CachedObject, EventType, Next, Subscription, WatchStart};

use super::hook::Hook;

struct Feed {
    prefix: String,
    subscription: Option<Subscription>,
    revision: i64,
}

struct Configurations {
    by_name: BTreeMap<String, Vec<Arc<Hook>>>,
    /// Every webhook, in order; rebuilt on change.
    hooks: Arc<Vec<Arc<Hook>>>,
}

impl Configurations {
    fn rebuild(&mut self) {
        self.hooks = Arc::new(self.by_name.values().flatten().cloned().collect());
    }
}

/// The webhooks of one kind of configuration.
pub struct HookSource {
    store: Store,
    kind: &'static str,
    applied: AtomicI64,
    feed: Mutex<Feed>,
    configurations: RwLock<Configurations>,
}

fn decode(obj: &CachedObject) -> Vec<Arc<Hook>> {
    match serde_json::from_slice::<serde_json::Value>(obj.json()) {
        Ok(v) => Hook::decode_all(&v).into_iter().map(Arc::new).collect(),
        Err(e) => {
            tracing::warn!(name = obj.name(), error = %e, "stored webhook configuration does not decode");
            Vec::new()
        }
    }
}

impl HookSource {
    /// The webhooks of the configurations of `kind` (`MutatingWebhookConfiguration` or
    /// `ValidatingWebhookConfiguration`) in `store`, kept current.
    pub fn new(store: Store, kind: &'static str) -> Arc<Self> {
        let prefix = catalog::by_kind("admissionregistration.k8s.io/v1", kind)
            .map(|info| rkcm_server::rest::prefix(info, None))
            .unwrap_or_default();
        let source = Arc::new(Self {
            store,
            kind,
            applied: AtomicI64::new(i64::MIN),
            feed: Mutex::new(Feed {
                prefix,
                subscription: None,
                revision: 0,
            }),
            configurations: RwLock::new(Configurations {
                by_name: BTreeMap::new(),
                hooks: Arc::new(Vec::new()),
            }),
        });
        source.refresh();
        source
    }

    /// Every webhook, in kube's order.
    pub fn hooks(&self) -> Arc<Vec<Arc<Hook>>> {
        self.refresh();
        Arc::clone(&self.configurations.read().hooks)
    }

    fn refresh(&self) {
        let target = self.store.cache().revision();
        if self.applied.load(Ordering::Acquire) >= target {
            return;
        }
        let mut feed = self.feed.lock();
        if self.applied.load(Ordering::Acquire) >= target {
            return;
        }
        self.drain(&mut feed);
        self.applied.fetch_max(target, Ordering::AcqRel);
    }

    fn drain(&self, feed: &mut Feed) {
        let mut restarts = 0;
        loop {
            let Some(subscription) = feed.subscription.as_mut() else {
                if restarts == 2 {
                    return;
                }
                restarts += 1;
                self.resubscribe(feed);
                continue;
            };
            match subscription.try_next(feed.revision) {
                None => return,
                Some(Next::Events(events)) => {
                    let changes: Vec<(String, Option<Vec<Arc<Hook>>>)> = events
                        .iter()
                        .map(|event| {
                            feed.revision = feed.revision.max(event.revision());
                            let name = event.object.name().to_string();
                            match event.kind {
                                EventType::Added | EventType::Modified => {
                                    (name, Some(decode(&event.object)))
                                }
                                EventType::Deleted => (name, None),
                            }
                        })
                        .collect();
                    let mut configs = self.configurations.write();
                    for (name, hooks) in changes {
                        match hooks {
                            Some(hooks) => configs.by_name.insert(name, hooks),
                            None => configs.by_name.remove(&name),
                        };
                    }
                    configs.rebuild();
                }
                Some(Next::Expired(_) | Next::TooSlow | Next::Closed) => {
                    tracing::debug!(kind = self.kind, "webhook configuration cache relisting");
                    feed.subscription = None;
                }
            }
        }
    }

    fn resubscribe(&self, feed: &mut Feed) {
        let Ok(subscription) = self.store.cache().watch(&feed.prefix, None) else {
            return;
        };
        let by_name: BTreeMap<String, Vec<Arc<Hook>>> = match &subscription.start {
            WatchStart::Current(objects) => objects
                .iter()
                .map(|o| (o.name().to_string(), decode(o)))
                .collect(),
            WatchStart::Replay(_) => BTreeMap::new(),
        };
        feed.revision = subscription.revision;
        feed.subscription = Some(subscription);
        let mut configs = self.configurations.write();
        configs.by_name = by_name;
        configs.rebuild();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_storage::memory::MemoryBackend;
    use serde_json::json;

    fn key(name: &str) -> String {
        let info = catalog::by_kind(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
        )
        .expect("in the catalog");
        rkcm_server::rest::key(info, None, name)
    }

    fn config(name: &str, hooks: &[&str]) -> serde_json::Value {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": hooks.iter().map(|h| json!({"name": h})).collect::<Vec<_>>(),
        })
    }

    fn names(source: &HookSource) -> Vec<String> {
        source.hooks().iter().map(|h| h.name.clone()).collect()
    }

    #[tokio::test]
    async fn webhooks_follow_the_store_in_configuration_name_order() {
        let store = Store::new(Arc::new(MemoryBackend::new()), 100)
            .await
            .expect("memory store");
        store
            .create(&key("b"), config("b", &["b1", "b2"]))
            .await
            .expect("create");
        let source = HookSource::new(store.clone(), "ValidatingWebhookConfiguration");
        assert_eq!(names(&source), ["b1", "b2"]);
        store
            .create(&key("a"), config("a", &["a1"]))
            .await
            .expect("create");
        assert_eq!(names(&source), ["a1", "b1", "b2"]);
        store.delete(&key("b"), None).await.expect("delete");
        assert_eq!(names(&source), ["a1"]);
        let unchanged = source.hooks();
        assert!(
            Arc::ptr_eq(&unchanged, &source.hooks()),
            "nothing new, nothing rebuilt"
        );
    }
}
