//! The stored ValidatingAdmissionPolicies and ValidatingAdmissionPolicyBindings, kept current
//! from the server's watch cache as the webhook configurations are ([`crate::admission::webhook::source`]):
//! a request that finds nothing new pays one atomic load and a clone of an `Arc`; each object
//! is decoded once per change.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use rkcm_apimachinery::catalog;
use rkcm_storage::store::Store;
use rkcm_storage::watch_cache::{CachedObject, EventType, Next, Subscription, WatchStart};

struct Feed {
    prefix: String,
    subscription: Option<Subscription>,
    revision: i64,
}

struct Decoded<T> {
    by_name: BTreeMap<String, Arc<T>>,
    /// Every object, in name order; rebuilt on change.
    all: Arc<Vec<Arc<T>>>,
}

impl<T> Decoded<T> {
    fn rebuild(&mut self) {
        self.all = Arc::new(self.by_name.values().cloned().collect());
    }
}

/// The decoded objects of one cluster-scoped kind of `admissionregistration.k8s.io/v1`.
pub struct Source<T> {
    store: Store,
    kind: &'static str,
    decode: fn(&serde_json::Value) -> T,
    applied: AtomicI64,
    feed: Mutex<Feed>,
    decoded: RwLock<Decoded<T>>,
}

impl<T: Send + Sync> Source<T> {
    /// The objects of `kind` in `store`, decoded by `decode`, kept current.
    pub fn new(store: Store, kind: &'static str, decode: fn(&serde_json::Value) -> T) -> Arc<Self> {
        let prefix = catalog::by_kind("admissionregistration.k8s.io/v1", kind)
            .map(|info| rkcm_server::rest::prefix(info, None))
            .unwrap_or_default();
        let source = Arc::new(Self {
            store,
            kind,
            decode,
            applied: AtomicI64::new(i64::MIN),
            feed: Mutex::new(Feed {
                prefix,
                subscription: None,
                revision: 0,
            }),
            decoded: RwLock::new(Decoded {
                by_name: BTreeMap::new(),
                all: Arc::new(Vec::new()),
            }),
        });
        source.refresh();
        source
    }

    /// Every object, in name order.
    pub fn all(&self) -> Arc<Vec<Arc<T>>> {
        self.refresh();
        Arc::clone(&self.decoded.read().all)
    }

    fn decode_object(&self, obj: &CachedObject) -> Option<Arc<T>> {
        match serde_json::from_slice::<serde_json::Value>(obj.json()) {
            Ok(v) => Some(Arc::new((self.decode)(&v))),
            Err(e) => {
                tracing::warn!(kind = self.kind, name = obj.name(), error = %e, "stored object does not decode");
                None
            }
        }
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
                    let changes: Vec<(String, Option<Arc<T>>)> = events
                        .iter()
                        .map(|event| {
                            feed.revision = feed.revision.max(event.revision());
                            let name = event.object.name().to_string();
                            match event.kind {
                                EventType::Added | EventType::Modified => {
                                    (name, self.decode_object(&event.object))
                                }
                                EventType::Deleted => (name, None),
                            }
                        })
                        .collect();
                    let mut decoded = self.decoded.write();
                    for (name, object) in changes {
                        match object {
                            Some(object) => decoded.by_name.insert(name, object),
                            None => decoded.by_name.remove(&name),
                        };
                    }
                    decoded.rebuild();
                }
                Some(Next::Expired(_) | Next::TooSlow | Next::Closed) => {
                    tracing::debug!(kind = self.kind, "admission policy cache relisting");
                    feed.subscription = None;
                }
            }
        }
    }

    fn resubscribe(&self, feed: &mut Feed) {
        let Ok(subscription) = self.store.cache().watch(&feed.prefix, None) else {
            return;
        };
        let by_name: BTreeMap<String, Arc<T>> = match &subscription.start {
            WatchStart::Current(objects) => objects
                .iter()
                .filter_map(|o| Some((o.name().to_string(), self.decode_object(o)?)))
                .collect(),
            WatchStart::Replay(_) => BTreeMap::new(),
        };
        feed.revision = subscription.revision;
        feed.subscription = Some(subscription);
        let mut decoded = self.decoded.write();
        decoded.by_name = by_name;
        decoded.rebuild();
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
            "ValidatingAdmissionPolicyBinding",
        )
        .expect("in the catalog");
        rkcm_server::rest::key(info, None, name)
    }

    fn name_of(v: &serde_json::Value) -> String {
        rkcm_storage::object::name(v).to_string()
    }

    fn names(source: &Source<String>) -> Vec<String> {
        source.all().iter().map(|n| n.to_string()).collect()
    }

    #[tokio::test]
    async fn objects_follow_the_store_in_name_order() {
        let store = Store::new(Arc::new(MemoryBackend::new()), 100)
            .await
            .expect("memory store");
        let source = Source::new(store.clone(), "ValidatingAdmissionPolicyBinding", name_of);
        assert!(source.all().is_empty());
        for name in ["b", "a"] {
            store
                .create(&key(name), json!({"metadata": {"name": name}}))
                .await
                .expect("create");
        }
        assert_eq!(names(&source), ["a", "b"]);
        store.delete(&key("a"), None).await.expect("delete");
        assert_eq!(names(&source), ["b"]);
        let unchanged = source.all();
        assert!(
            Arc::ptr_eq(&unchanged, &source.all()),
            "nothing new, nothing rebuilt"
        );
    }
}
