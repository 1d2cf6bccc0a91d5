//! A small map whose entries expire, as the token and access-review caches of kube's delegating
//! authenticator and authorizer (`k8s.io/apiserver/pkg/authentication/token/cache`,
//! the webhook authorizer's `responseCache`): each entry lives for the TTL chosen when stored.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use parking_lot::Mutex;
use rkcm_runtime::Clock;

/// Entries beyond this many are evicted (the expired first, then all) to bound memory.
const MAX_ENTRIES: usize = 4096;

/// A map from `K` to `V` whose entries expire after the TTL given at insertion, by `clock`.
pub struct TtlCache<K, V> {
    clock: Arc<dyn Clock>,
    entries: Mutex<HashMap<K, (V, Timestamp)>>,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    /// An empty cache reading time from `clock`.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The value stored for `key`, unless it has expired.
    pub fn get(&self, key: &K) -> Option<V> {
        let now = self.clock.now();
        let entries = self.entries.lock();
        entries
            .get(key)
            .filter(|(_, expires)| *expires > now)
            .map(|(v, _)| v.clone())
    }

    /// Stores `value` for `key` for `ttl`; a zero TTL stores nothing (caching off).
    pub fn insert(&self, key: K, value: V, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        let now = self.clock.now();
        let Ok(span) = jiff::SignedDuration::try_from(ttl) else {
            return;
        };
        let Ok(expires) = now.checked_add(span) else {
            return;
        };
        let mut entries = self.entries.lock();
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, (_, e)| *e > now);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(key, (value, expires));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_runtime::FakeClock;

    #[test]
    fn entries_expire_after_their_own_ttl() {
        let clock = FakeClock::default();
        let cache = TtlCache::new(Arc::new(clock.clone()));
        cache.insert("allowed", true, Duration::from_secs(10));
        cache.insert("denied", false, Duration::from_secs(5));
        cache.insert("uncached", false, Duration::ZERO);
        assert_eq!(cache.get(&"allowed"), Some(true));
        assert_eq!(cache.get(&"denied"), Some(false));
        assert_eq!(cache.get(&"uncached"), None);
        clock.step(Duration::from_secs(5));
        assert_eq!(cache.get(&"denied"), None, "expires at its TTL");
        assert_eq!(cache.get(&"allowed"), Some(true));
        clock.step(Duration::from_secs(5));
        assert_eq!(cache.get(&"allowed"), None);
    }
}
