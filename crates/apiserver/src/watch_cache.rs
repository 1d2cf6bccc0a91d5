//! In-memory cache of every stored object, with a ring of recent events per resource and fan-out
//! to watchers.
//!
//! Mirrors the apiserver cacher (`staging/src/k8s.io/apiserver/pkg/storage/cacher`): it is fed the
//! storage backend's committed writes in revision order, serves lists and gets without touching
//! the backend, and lets a watch start at any revision still held in the ring. Writers never wait
//! for watchers: events go to a `tokio::sync::broadcast` channel, and a watcher that falls behind
//! catches up from the ring or, if the ring has moved past it, gets 410 Expired.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::registry::{self, Strategy};
use crate::storage::{KeyValue, StorageEvent};

/// Events kept per resource for watches that resume from a resourceVersion.
pub const DEFAULT_RING_CAPACITY: usize = 10_000;
/// Events buffered per resource for live watchers before a slow one must catch up from the ring.
const BROADCAST_CAPACITY: usize = 4096;

pub use crate::cached_object::CachedObject;

/// Watch event type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    /// Object created.
    Added,
    /// Object changed.
    Modified,
    /// Object removed; the event carries its last state.
    Deleted,
}

impl EventType {
    /// Wire name (`ADDED`, `MODIFIED`, `DELETED`).
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One change to one object.
#[derive(Clone, Debug)]
pub struct WatchEvent {
    /// What happened.
    pub kind: EventType,
    /// Storage key.
    pub key: String,
    /// New state; for deletes, the last state with the delete's resourceVersion.
    pub object: Arc<CachedObject>,
    /// State before the change, if any (used to filter selector transitions).
    pub prev: Option<Arc<CachedObject>>,
}

impl WatchEvent {
    /// Revision of the change.
    pub fn revision(&self) -> i64 {
        self.object.revision
    }
}

/// The resource prefix of a storage key: `/apps/deployments/` for `/apps/deployments/ns/x`.
pub fn resource_prefix(key: &str) -> &str {
    let mut slashes = 0;
    for (i, c) in key.char_indices() {
        if c == '/' {
            slashes += 1;
            if slashes == 3 {
                return &key[..=i];
            }
        }
    }
    key
}

struct ResourceState {
    objects: BTreeMap<String, Arc<CachedObject>>,
    ring: VecDeque<Arc<WatchEvent>>,
    /// Every event with a revision above this one is in the ring.
    oldest: i64,
    last_revision: i64,
    tx: broadcast::Sender<Arc<WatchEvent>>,
}

struct ResourceCache {
    state: Mutex<ResourceState>,
    /// The kind's strategy, whose selectable fields are kept with each object (`None` for
    /// resources outside the catalog: their fields are computed on demand).
    strategy: Option<&'static dyn Strategy>,
}

impl ResourceCache {
    /// `value` at `revision` as this resource keeps it.
    fn object(&self, value: Value, revision: i64) -> CachedObject {
        match self.strategy {
            Some(s) => {
                CachedObject::with_fields(value, revision, s.selectable_fields(), &|v, f| {
                    s.field_value(v, f)
                })
            }
            None => CachedObject::new(value, revision),
        }
    }
}

/// Why a watch could not start or continue.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The requested revision is older than the ring holds.
    #[error("too old resource version: {requested} ({oldest})")]
    TooOld {
        /// Revision asked for.
        requested: i64,
        /// Oldest revision a watch can start at.
        oldest: i64,
    },
}

/// Where a new watcher starts.
pub enum WatchStart {
    /// Synthetic ADDED events for the current objects (in key order), then live events.
    Current(Vec<Arc<CachedObject>>),
    /// Events after the requested revision, replayed from the ring, then live events.
    Replay(Vec<Arc<WatchEvent>>),
}

/// A subscription to one resource's events.
pub struct Subscription {
    /// What to send before live events.
    pub start: WatchStart,
    /// Revision the subscription is positioned at (the list revision for [`WatchStart::Current`]).
    pub revision: i64,
    resource: Arc<ResourceCache>,
    rx: broadcast::Receiver<Arc<WatchEvent>>,
}

/// Result of waiting for the next live event.
pub enum Next {
    /// Events in revision order (usually one; several after catching up from the ring).
    Events(Vec<Arc<WatchEvent>>),
    /// The watcher fell behind the ring; the watch must end with 410.
    Expired(WatchError),
    /// The cache is gone (server shutting down).
    Closed,
}

impl Subscription {
    /// Whether every event published so far has been received (so a bookmark may report the
    /// cache revision read just before this call).
    pub fn is_caught_up(&self) -> bool {
        self.rx.is_empty()
    }

    /// The events already published after `last_revision`, without waiting; `None` when there
    /// are none yet.
    pub fn try_next(&mut self, last_revision: i64) -> Option<Next> {
        match self.rx.try_recv() {
            Ok(ev) => Some(Next::Events(vec![ev])),
            Err(broadcast::error::TryRecvError::Empty) => None,
            Err(broadcast::error::TryRecvError::Closed) => Some(Next::Closed),
            Err(broadcast::error::TryRecvError::Lagged(_)) => Some(self.catch_up(last_revision)),
        }
    }

    /// Waits for the next events after `last_revision`.
    pub async fn next(&mut self, last_revision: i64) -> Next {
        match self.rx.recv().await {
            Ok(ev) => Next::Events(vec![ev]),
            Err(broadcast::error::RecvError::Closed) => Next::Closed,
            Err(broadcast::error::RecvError::Lagged(_)) => self.catch_up(last_revision),
        }
    }

    /// After falling behind the broadcast: the ring's events after `last_revision`, or
    /// expiry when the ring no longer holds them.
    fn catch_up(&mut self, last_revision: i64) -> Next {
        // Catch up from the ring and resubscribe atomically under the state lock.
        let state = self.resource.state.lock();
        if last_revision < state.oldest {
            return Next::Expired(WatchError::TooOld {
                requested: last_revision,
                oldest: state.oldest,
            });
        }
        let events = state
            .ring
            .iter()
            .filter(|e| e.revision() > last_revision)
            .cloned()
            .collect();
        self.rx = state.tx.subscribe();
        Next::Events(events)
    }
}

/// The cache of all resources.
pub struct WatchCache {
    resources: RwLock<HashMap<String, Arc<ResourceCache>>>,
    revision: AtomicI64,
    start_revision: i64,
    ring_capacity: usize,
}

impl WatchCache {
    /// A cache holding `items`, all read at `revision`.
    pub fn new(items: Vec<KeyValue>, revision: i64, ring_capacity: usize) -> Self {
        let cache = Self {
            resources: RwLock::new(HashMap::new()),
            revision: AtomicI64::new(revision),
            start_revision: revision,
            ring_capacity: ring_capacity.max(1),
        };
        for kv in items {
            match serde_json::from_slice::<Value>(&kv.value) {
                Ok(value) => {
                    let res = cache.resource(resource_prefix(&kv.key));
                    let obj = Arc::new(res.object(value, kv.mod_revision));
                    res.state.lock().objects.insert(kv.key, obj);
                }
                Err(e) => {
                    tracing::error!(key = %kv.key, error = %e, "skipping undecodable stored object")
                }
            }
        }
        cache
    }

    fn resource(&self, prefix: &str) -> Arc<ResourceCache> {
        if let Some(r) = self.resources.read().get(prefix) {
            return Arc::clone(r);
        }
        let mut map = self.resources.write();
        Arc::clone(map.entry(prefix.to_string()).or_insert_with(|| {
            let (tx, _) = broadcast::channel(BROADCAST_CAPACITY);
            Arc::new(ResourceCache {
                state: Mutex::new(ResourceState {
                    objects: BTreeMap::new(),
                    ring: VecDeque::new(),
                    oldest: self.start_revision,
                    last_revision: self.start_revision,
                    tx,
                }),
                strategy: registry::by_storage_prefix(prefix),
            })
        }))
    }

    /// `value` at `revision` as the cache keeps objects stored under `key`.
    pub fn object(&self, key: &str, value: Value, revision: i64) -> CachedObject {
        self.resource(resource_prefix(key)).object(value, revision)
    }

    /// The revision of the last write applied.
    pub fn revision(&self) -> i64 {
        self.revision.load(Ordering::Acquire)
    }

    /// Applies one committed write (called by the storage sink, in revision order).
    pub fn apply(&self, ev: StorageEvent) {
        let res = self.resource(resource_prefix(&ev.key));
        let decoded = match (ev.decoded, &ev.value) {
            (Some(v), Some(_)) => Some(v),
            (_, Some(bytes)) => match serde_json::from_slice::<Value>(bytes) {
                Ok(v) => Some(v),
                Err(e) => {
                    tracing::error!(key = %ev.key, error = %e, "stored object is not JSON");
                    self.revision.store(ev.revision, Ordering::Release);
                    return;
                }
            },
            (_, None) => None,
        };
        // Encode outside the lock: readers of this resource do not wait for it.
        let obj = decoded.map(|value| Arc::new(res.object(value, ev.revision)));
        {
            let mut st = res.state.lock();
            let prev = st.objects.get(&ev.key).cloned();
            let event = match obj {
                Some(obj) => {
                    st.objects.insert(ev.key.clone(), Arc::clone(&obj));
                    WatchEvent {
                        kind: if prev.is_some() {
                            EventType::Modified
                        } else {
                            EventType::Added
                        },
                        key: ev.key.clone(),
                        object: obj,
                        prev,
                    }
                }
                None => {
                    st.objects.remove(&ev.key);
                    let Some(prev) = prev else {
                        self.revision.store(ev.revision, Ordering::Release);
                        return;
                    };
                    WatchEvent {
                        kind: EventType::Deleted,
                        key: ev.key.clone(),
                        object: Arc::new(prev.at_revision(ev.revision)),
                        prev: Some(prev),
                    }
                }
            };
            let event = Arc::new(event);
            st.ring.push_back(Arc::clone(&event));
            while st.ring.len() > self.ring_capacity {
                if let Some(old) = st.ring.pop_front() {
                    st.oldest = old.revision();
                }
            }
            st.last_revision = ev.revision;
            // No receivers is fine: nobody watches this resource right now.
            let _ = st.tx.send(event);
        }
        self.revision.store(ev.revision, Ordering::Release);
    }

    /// The object under `key`.
    pub fn get(&self, key: &str) -> Option<Arc<CachedObject>> {
        let res = self.resource(resource_prefix(key));
        let st = res.state.lock();
        st.objects.get(key).cloned()
    }

    /// How many objects the resource of `prefix` holds.
    pub fn count(&self, prefix: &str) -> usize {
        self.resource(resource_prefix(prefix))
            .state
            .lock()
            .objects
            .len()
    }

    /// Objects whose key starts with `prefix` (a resource prefix, optionally with `<ns>/`), after
    /// `start_after` in key order, that `keep` accepts, at most `limit` (0 = all); plus the list
    /// revision and whether more matching objects follow.
    pub fn list(
        &self,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        keep: &dyn Fn(&CachedObject) -> bool,
    ) -> (Vec<Arc<CachedObject>>, i64, bool) {
        let res = self.resource(resource_prefix(prefix));
        let st = res.state.lock();
        let revision = self.revision().max(st.last_revision);
        let range = match start_after {
            Some(after) => st
                .objects
                .range::<str, _>((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded)),
            None => st.objects.range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            )),
        };
        let mut out = Vec::new();
        let mut more = false;
        for (k, obj) in range {
            if !k.starts_with(prefix) {
                if k.as_str() > prefix {
                    break;
                }
                continue;
            }
            if !keep(obj) {
                continue;
            }
            if limit > 0 && out.len() == limit {
                more = true;
                break;
            }
            out.push(Arc::clone(obj));
        }
        (out, revision, more)
    }

    /// Starts a watch on the resource of `prefix` at `from` (`None`: current state first).
    pub fn watch(&self, prefix: &str, from: Option<i64>) -> Result<Subscription, WatchError> {
        let res = self.resource(resource_prefix(prefix));
        let st = res.state.lock();
        let revision = self.revision().max(st.last_revision);
        let start = match from {
            None => WatchStart::Current(
                st.objects
                    .range::<str, _>((
                        std::ops::Bound::Included(prefix),
                        std::ops::Bound::Unbounded,
                    ))
                    .take_while(|(k, _)| k.starts_with(prefix))
                    .map(|(_, o)| Arc::clone(o))
                    .collect(),
            ),
            Some(rv) => {
                if rv < st.oldest {
                    return Err(WatchError::TooOld {
                        requested: rv,
                        oldest: st.oldest,
                    });
                }
                WatchStart::Replay(
                    st.ring
                        .iter()
                        .filter(|e| e.revision() > rv && e.key.starts_with(prefix))
                        .cloned()
                        .collect(),
                )
            }
        };
        let rx = st.tx.subscribe();
        drop(st);
        Ok(Subscription {
            start,
            revision: from.unwrap_or(revision),
            resource: res,
            rx,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use serde_json::json;

    fn put(cache: &WatchCache, key: &str, rev: i64, name: &str) {
        let v = json!({"metadata": {"name": name}});
        cache.apply(StorageEvent {
            key: key.into(),
            revision: rev,
            value: Some(Bytes::from(serde_json::to_vec(&v).expect("json"))),
            decoded: None,
        });
    }

    #[test]
    fn resource_prefix_is_the_first_two_segments() {
        assert_eq!(resource_prefix("/core/pods/ns/a"), "/core/pods/");
        assert_eq!(resource_prefix("/core/nodes/n1"), "/core/nodes/");
    }

    #[test]
    fn list_filters_by_prefix_and_pages() {
        let cache = WatchCache::new(Vec::new(), 0, 10);
        put(&cache, "/core/pods/a/p1", 1, "p1");
        put(&cache, "/core/pods/b/p2", 2, "p2");
        put(&cache, "/core/pods/a/p3", 3, "p3");
        let (items, rev, more) = cache.list("/core/pods/a/", None, 1, &|_| true);
        assert_eq!(items.len(), 1);
        assert!(more);
        assert_eq!(rev, 3);
        let (items, _, more) = cache.list("/core/pods/a/", Some("/core/pods/a/p1"), 1, &|_| true);
        assert_eq!(items[0].name(), "p3");
        assert!(!more);
        assert_eq!(items[0].value()["metadata"]["resourceVersion"], "3");
    }

    #[tokio::test]
    async fn watch_replays_from_ring_and_expires_when_too_old() {
        let cache = WatchCache::new(Vec::new(), 0, 2);
        put(&cache, "/core/pods/a/p1", 1, "p1");
        put(&cache, "/core/pods/a/p2", 2, "p2");
        put(&cache, "/core/pods/a/p3", 3, "p3");
        assert!(matches!(
            cache.watch("/core/pods/", Some(0)),
            Err(WatchError::TooOld {
                requested: 0,
                oldest: 1
            })
        ));
        let mut sub = cache.watch("/core/pods/", Some(1)).expect("watch");
        match &sub.start {
            WatchStart::Replay(evs) => assert_eq!(evs.len(), 2),
            WatchStart::Current(_) => panic!("expected replay"),
        }
        cache.apply(StorageEvent {
            key: "/core/pods/a/p1".into(),
            revision: 4,
            value: None,
            decoded: None,
        });
        match sub.next(3).await {
            Next::Events(evs) => {
                assert_eq!(evs[0].kind, EventType::Deleted);
                assert_eq!(evs[0].object.value()["metadata"]["resourceVersion"], "4");
            }
            _ => panic!("expected an event"),
        }
    }

    #[tokio::test]
    async fn a_watcher_that_falls_behind_catches_up_from_the_ring() {
        let cache = WatchCache::new(Vec::new(), 0, 10_000);
        let mut sub = cache.watch("/core/pods/", Some(0)).expect("watch");
        let total = BROADCAST_CAPACITY as i64 + 100;
        for rev in 1..=total {
            put(&cache, &format!("/core/pods/a/p{rev}"), rev, "p");
        }
        let mut last = 0;
        while last < total {
            match sub.next(last).await {
                Next::Events(evs) => {
                    for e in evs {
                        assert_eq!(e.revision(), last + 1, "no gap, no duplicate");
                        last = e.revision();
                    }
                }
                _ => panic!("expected events"),
            }
        }
    }

    #[tokio::test]
    async fn a_watcher_behind_the_ring_expires() {
        let cache = WatchCache::new(Vec::new(), 0, 10);
        let mut sub = cache.watch("/core/pods/", Some(0)).expect("watch");
        for rev in 1..=(BROADCAST_CAPACITY as i64 + 100) {
            put(&cache, &format!("/core/pods/a/p{rev}"), rev, "p");
        }
        assert!(matches!(sub.next(0).await, Next::Expired(_)));
    }
}
