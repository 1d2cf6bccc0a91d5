//! In-memory cache of every stored object, with a ring of recent events per resource and fan-out
//! to watchers.
//!
//! Mirrors the apiserver cacher (`staging/src/k8s.io/apiserver/pkg/storage/cacher`): it is fed the
//! storage backend's committed writes in revision order, serves lists and gets without touching
//! the backend, and lets a watch start at any revision still held in the ring (the event window).
//! The window also answers lists at an exact past revision (`resourceVersionMatch=Exact`, continue
//! tokens): the state at a revision is the current state with the window's later changes undone.
//! A revision older than the window gets 410 Expired; one newer than the cache is waited for up
//! to 3 s (`blockTimeout` in `watch_cache.go`), then gets 504 `ResourceVersionTooLarge`.
//!
//! Writers never wait for watchers: events go to a bounded `tokio::sync::broadcast` channel. A
//! watcher that falls a whole channel behind is closed, as the cacher closes an unresponsive
//! `cacheWatcher` (`cache_watcher.go` `add`); its client watches again from its last
//! resourceVersion, out of the ring.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::{KeyValue, StorageEvent};

/// Events kept per resource for watches that resume from a resourceVersion.
pub const DEFAULT_RING_CAPACITY: usize = 10_000;
/// Events buffered per resource for live watchers; a watcher that falls further behind is closed.
const BROADCAST_CAPACITY: usize = 4096;
/// How long a read at a revision the cache has not reached waits for it (`blockTimeout`).
pub const FRESHNESS_TIMEOUT: Duration = Duration::from_secs(3);

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
    /// The kind's selectable fields, kept with each object (`None` for resources whose kind
    /// declares none: their fields are computed on demand).
    fields: Option<Arc<dyn SelectableFields>>,
}

impl ResourceCache {
    /// `value` at `revision` as this resource keeps it; `stored`, when given, is its stored form
    /// (serialized from it without a resourceVersion), which then stands for serializing it
    /// ([`CachedObject::with_fields_stored`]).
    fn object(&self, value: Value, revision: i64, stored: Option<&[u8]>) -> CachedObject {
        let fields = self
            .fields
            .as_ref()
            .map_or(&[][..], |s| s.selectable_fields());
        let field_value = |v: &Value, f: &str| self.fields.as_ref()?.field_value(v, f);
        match stored {
            Some(stored) => {
                CachedObject::with_fields_stored(value, stored, revision, fields, &field_value)
            }
            None => CachedObject::with_fields(value, revision, fields, &field_value),
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

/// Why a read at a given revision cannot be answered.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum RevisionError {
    /// The revision is older than the event window: its state is gone.
    #[error("revision {requested} is older than the event window ({oldest})")]
    Expired {
        /// Revision asked for.
        requested: i64,
        /// Oldest revision whose state the window can rebuild.
        oldest: i64,
    },
    /// The cache did not reach the revision within [`FRESHNESS_TIMEOUT`].
    #[error("Too large resource version: {requested}, current: {current}")]
    TooLarge {
        /// Revision asked for.
        requested: i64,
        /// Revision of the cache.
        current: i64,
    },
}

/// One page of a list: the objects, the revision they were read at, and whether more follow.
pub type Page = (Vec<Arc<CachedObject>>, i64, bool);

/// Where a new watcher starts.
pub enum WatchStart {
    /// Synthetic ADDED events for the current objects (in key order), then live events.
    Current(Vec<Arc<CachedObject>>),
    /// Events after the requested revision, replayed from the ring, then live events.
    Replay(Vec<Arc<WatchEvent>>),
}

/// What a [`Feed`] hands its owner.
pub enum FeedChange<'a> {
    /// Start over from these objects: the prefix's state when the feed (re)started.
    Reset(&'a [Arc<CachedObject>]),
    /// An object added or modified.
    Upsert(&'a Arc<CachedObject>),
    /// An object deleted, in its last state.
    Delete(&'a Arc<CachedObject>),
}

/// A follower of one key prefix for the server's in-process caches of decoded objects (RBAC's
/// policy, flow control's configuration): each [`Feed::drain`] hands over what the watch cache
/// published since the last one, without waiting, and starts over from the current objects
/// when the subscription fell behind.
pub struct Feed {
    prefix: String,
    subscription: Option<Subscription>,
    /// Revision of the last event handed over (or of the state the feed started from).
    revision: i64,
}

impl Feed {
    /// A feed of the objects under `prefix`, started by the first [`Feed::drain`].
    pub fn new(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
            subscription: None,
            revision: 0,
        }
    }

    /// Hands `apply` every change published under the prefix since the last call, in revision
    /// order; whether there was any.
    pub fn drain(&mut self, cache: &WatchCache, mut apply: impl FnMut(FeedChange<'_>)) -> bool {
        let mut changed = false;
        // A fresh subscription cannot be behind or closed while the cache lives; the bound only
        // keeps a broken cache from spinning here.
        let mut restarts = 0;
        loop {
            let Some(subscription) = self.subscription.as_mut() else {
                if restarts == 2 {
                    return changed;
                }
                restarts += 1;
                // A watch from the current state cannot be too old.
                let Ok(subscription) = cache.watch(&self.prefix, None) else {
                    return changed;
                };
                match &subscription.start {
                    WatchStart::Current(objects) => apply(FeedChange::Reset(objects)),
                    WatchStart::Replay(_) => apply(FeedChange::Reset(&[])),
                }
                self.revision = subscription.revision;
                self.subscription = Some(subscription);
                changed = true;
                continue;
            };
            match subscription.try_next(self.revision) {
                None => return changed,
                Some(Next::Events(events)) => {
                    for event in &events {
                        self.revision = self.revision.max(event.revision());
                        apply(match event.kind {
                            EventType::Added | EventType::Modified => {
                                FeedChange::Upsert(&event.object)
                            }
                            EventType::Deleted => FeedChange::Delete(&event.object),
                        });
                        changed = true;
                    }
                }
                Some(Next::Expired(_) | Next::TooSlow | Next::Closed) => {
                    tracing::debug!(prefix = %self.prefix, "in-process cache starting over");
                    self.subscription = None;
                }
            }
        }
    }
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
    /// The watcher fell a whole broadcast channel behind; the watch is closed (its client
    /// resumes from its last resourceVersion).
    TooSlow,
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
    /// are none yet. For in-process consumers that drain on demand: one that fell behind the
    /// broadcast catches up from the ring instead of being closed.
    pub fn try_next(&mut self, last_revision: i64) -> Option<Next> {
        match self.rx.try_recv() {
            Ok(ev) => Some(Next::Events(vec![ev])),
            Err(broadcast::error::TryRecvError::Empty) => None,
            Err(broadcast::error::TryRecvError::Closed) => Some(Next::Closed),
            Err(broadcast::error::TryRecvError::Lagged(_)) => Some(self.catch_up(last_revision)),
        }
    }

    /// Waits for the next event. A watcher that fell a whole broadcast channel behind gets
    /// [`Next::TooSlow`]: the cacher closes a watcher that does not keep up rather than
    /// buffering for it.
    pub async fn next(&mut self) -> Next {
        match self.rx.recv().await {
            Ok(ev) => Next::Events(vec![ev]),
            Err(broadcast::error::RecvError::Closed) => Next::Closed,
            Err(broadcast::error::RecvError::Lagged(_)) => Next::TooSlow,
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

/// The objects of `objects` under `prefix`, after `start_after`, in key order.
fn range<'a>(
    objects: &'a BTreeMap<String, Arc<CachedObject>>,
    prefix: &'a str,
    start_after: Option<&str>,
) -> impl Iterator<Item = (&'a str, &'a Arc<CachedObject>)> + 'a {
    use std::ops::Bound;
    let start = match start_after {
        Some(after) => (Bound::Excluded(after), Bound::Unbounded),
        None => (Bound::Included(prefix), Bound::Unbounded),
    };
    objects
        .range::<str, _>(start)
        .map(|(k, o)| (k.as_str(), o))
        .skip_while(move |(k, _)| !k.starts_with(prefix) && *k < prefix)
        .take_while(move |(k, _)| k.starts_with(prefix))
}

/// `current` with the keys of `undone` replaced by their earlier state, in key order.
fn merge<'a>(
    current: impl Iterator<Item = (&'a str, &'a Arc<CachedObject>)>,
    undone: BTreeMap<&'a str, Option<&'a Arc<CachedObject>>>,
) -> impl Iterator<Item = (&'a str, Option<&'a Arc<CachedObject>>)> {
    let mut current = current.peekable();
    let mut undone = undone.into_iter().peekable();
    std::iter::from_fn(move || {
        let next = match (current.peek(), undone.peek()) {
            (None, None) => return None,
            (Some(_), None) => current.next().map(|(k, o)| (k, Some(o))),
            (None, Some(_)) => undone.next(),
            (Some((ck, _)), Some((uk, _))) => match ck.cmp(uk) {
                std::cmp::Ordering::Less => current.next().map(|(k, o)| (k, Some(o))),
                std::cmp::Ordering::Greater => undone.next(),
                std::cmp::Ordering::Equal => {
                    current.next();
                    undone.next()
                }
            },
        };
        next
    })
}

/// The objects of `entries` (skipping absent ones) that `keep` accepts, at most `limit`
/// (0 = all), and whether more accepted ones follow.
fn page<'a>(
    entries: impl Iterator<Item = (&'a str, Option<&'a Arc<CachedObject>>)>,
    keep: &dyn Fn(&CachedObject) -> bool,
    limit: usize,
) -> (Vec<Arc<CachedObject>>, bool) {
    let mut out = Vec::new();
    for obj in entries.filter_map(|(_, o)| o) {
        if !keep(obj) {
            continue;
        }
        if limit > 0 && out.len() == limit {
            return (out, true);
        }
        out.push(Arc::clone(obj));
    }
    (out, false)
}

/// A kind's selectable fields, as kube's cacher takes them from the strategy's `GetAttrs`: the
/// cache keeps their values with each object so that field selectors decode nothing.
pub trait SelectableFields: Send + Sync {
    /// The fields a field selector may name (besides `metadata.name` and
    /// `metadata.namespace`).
    fn selectable_fields(&self) -> &'static [&'static str];

    /// The value of `field` in `obj`, as a field selector compares it.
    fn field_value(&self, obj: &Value, field: &str) -> Option<String>;
}

/// The selectable fields of the resource stored under a prefix (`/apps/deployments`).
pub type FieldsLookup = Arc<dyn Fn(&str) -> Option<Arc<dyn SelectableFields>> + Send + Sync>;

/// The cache of all resources.
pub struct WatchCache {
    fields: Option<FieldsLookup>,
    resources: RwLock<HashMap<String, Arc<ResourceCache>>>,
    revision: AtomicI64,
    /// Publishes `revision` to reads waiting for the cache to reach one.
    fresh: tokio::sync::watch::Sender<i64>,
    start_revision: i64,
    ring_capacity: usize,
}

impl WatchCache {
    /// A cache holding `items`, all read at `revision`.
    pub fn new(items: Vec<KeyValue>, revision: i64, ring_capacity: usize) -> Self {
        Self::with_fields(items, revision, ring_capacity, None)
    }

    /// A cache holding `items`, all read at `revision`, that keeps the selectable fields `fields`
    /// gives for each resource.
    pub fn with_fields(
        items: Vec<KeyValue>,
        revision: i64,
        ring_capacity: usize,
        fields: Option<FieldsLookup>,
    ) -> Self {
        let cache = Self {
            fields,
            resources: RwLock::new(HashMap::new()),
            revision: AtomicI64::new(revision),
            fresh: tokio::sync::watch::Sender::new(revision),
            start_revision: revision,
            ring_capacity: ring_capacity.max(1),
        };
        for kv in items {
            match serde_json::from_slice::<Value>(&kv.value) {
                Ok(value) => {
                    let res = cache.resource(resource_prefix(&kv.key));
                    let obj = Arc::new(res.object(value, kv.mod_revision, None));
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
                fields: self.fields.as_ref().and_then(|lookup| lookup(prefix)),
            })
        }))
    }

    /// `value` at `revision` as the cache keeps objects stored under `key`.
    pub fn object(&self, key: &str, value: Value, revision: i64) -> CachedObject {
        self.resource(resource_prefix(key))
            .object(value, revision, None)
    }

    /// The revision of the last write applied.
    pub fn revision(&self) -> i64 {
        self.revision.load(Ordering::Acquire)
    }

    fn advance(&self, revision: i64) {
        self.revision.store(revision, Ordering::Release);
        self.fresh.send_replace(revision);
    }

    /// Waits until the cache has applied `revision`, at most [`FRESHNESS_TIMEOUT`]
    /// (`waitUntilFreshAndBlock`); [`RevisionError::TooLarge`] after that.
    pub async fn wait_until_fresh(&self, revision: i64) -> Result<(), RevisionError> {
        let mut rx = self.fresh.subscribe();
        let wait = tokio::time::timeout(FRESHNESS_TIMEOUT, rx.wait_for(|r| *r >= revision));
        // Not reached: timed out, or the cache is gone (shutting down).
        let reached = matches!(wait.await, Ok(Ok(_)));
        if reached {
            Ok(())
        } else {
            Err(RevisionError::TooLarge {
                requested: revision,
                current: self.revision(),
            })
        }
    }

    /// Applies one committed write (called by the storage sink, in revision order).
    pub fn apply(&self, ev: StorageEvent) {
        let res = self.resource(resource_prefix(&ev.key));
        // Encode outside the lock: readers of this resource do not wait for it. A write of this
        // process comes with its value, of which the stored bytes are the serialized form.
        let obj = match (ev.decoded, &ev.value) {
            (Some(v), Some(bytes)) => Some(res.object(v, ev.revision, Some(bytes))),
            (_, Some(bytes)) => match serde_json::from_slice::<Value>(bytes) {
                Ok(v) => Some(res.object(v, ev.revision, None)),
                Err(e) => {
                    tracing::error!(key = %ev.key, error = %e, "stored object is not JSON");
                    self.advance(ev.revision);
                    return;
                }
            },
            (_, None) => None,
        };
        let obj = obj.map(Arc::new);
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
                        self.advance(ev.revision);
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
        self.advance(ev.revision);
    }

    /// The object under `key`.
    pub fn get(&self, key: &str) -> Option<Arc<CachedObject>> {
        let res = self.resource(resource_prefix(key));
        let st = res.state.lock();
        st.objects.get(key).cloned()
    }

    /// How many objects the resource of `prefix` holds (none for a resource the cache has not
    /// met; counting does not make it known).
    pub fn count(&self, prefix: &str) -> usize {
        let Some(res) = self.resources.read().get(resource_prefix(prefix)).cloned() else {
            return 0;
        };
        let n = res.state.lock().objects.len();
        n
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
    ) -> Page {
        let res = self.resource(resource_prefix(prefix));
        let st = res.state.lock();
        let revision = self.revision().max(st.last_revision);
        let current = range(&st.objects, prefix, start_after).map(|(k, o)| (k, Some(o)));
        let (items, more) = page(current, keep, limit);
        (items, revision, more)
    }

    /// Like [`WatchCache::list`], as the objects were at exactly `revision`: the current state
    /// with the changes after `revision` undone from the event window
    /// ([`RevisionError::Expired`] when the window no longer holds them all). A revision the
    /// cache has not reached is the current state; callers wait for it first
    /// ([`WatchCache::wait_until_fresh`]).
    pub fn list_at(
        &self,
        revision: i64,
        prefix: &str,
        start_after: Option<&str>,
        limit: usize,
        keep: &dyn Fn(&CachedObject) -> bool,
    ) -> Result<Page, RevisionError> {
        let res = self.resource(resource_prefix(prefix));
        let st = res.state.lock();
        if revision >= self.revision().max(st.last_revision) {
            drop(st);
            let (items, _, more) = self.list(prefix, start_after, limit, keep);
            return Ok((items, revision, more));
        }
        if revision < st.oldest {
            return Err(RevisionError::Expired {
                requested: revision,
                oldest: st.oldest,
            });
        }
        // The state of each key changed after `revision` is the state before its first later
        // change (`None`: it did not exist).
        let mut undone: BTreeMap<&str, Option<&Arc<CachedObject>>> = BTreeMap::new();
        for ev in st.ring.iter().rev().take_while(|e| e.revision() > revision) {
            let after_start = start_after.is_none_or(|s| ev.key.as_str() > s);
            if ev.key.starts_with(prefix) && after_start {
                undone.insert(ev.key.as_str(), ev.prev.as_ref());
            }
        }
        let current = range(&st.objects, prefix, start_after);
        let (items, more) = page(merge(current, undone), keep, limit);
        Ok((items, revision, more))
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
        match sub.next().await {
            Next::Events(evs) => {
                assert_eq!(evs[0].kind, EventType::Deleted);
                assert_eq!(evs[0].object.value()["metadata"]["resourceVersion"], "4");
            }
            _ => panic!("expected an event"),
        }
    }

    #[test]
    fn a_drained_subscription_that_falls_behind_catches_up_from_the_ring() {
        let cache = WatchCache::new(Vec::new(), 0, 10_000);
        let mut sub = cache.watch("/core/pods/", Some(0)).expect("watch");
        let total = BROADCAST_CAPACITY as i64 + 100;
        for rev in 1..=total {
            put(&cache, &format!("/core/pods/a/p{rev}"), rev, "p");
        }
        let mut last = 0;
        while let Some(next) = sub.try_next(last) {
            match next {
                Next::Events(evs) => {
                    for e in evs {
                        assert_eq!(e.revision(), last + 1, "no gap, no duplicate");
                        last = e.revision();
                    }
                }
                _ => panic!("expected events"),
            }
        }
        assert_eq!(last, total);
    }

    #[test]
    fn a_drained_subscription_behind_the_ring_expires() {
        let cache = WatchCache::new(Vec::new(), 0, 10);
        let mut sub = cache.watch("/core/pods/", Some(0)).expect("watch");
        for rev in 1..=(BROADCAST_CAPACITY as i64 + 100) {
            put(&cache, &format!("/core/pods/a/p{rev}"), rev, "p");
        }
        assert!(matches!(sub.try_next(0), Some(Next::Expired(_))));
    }

    #[tokio::test]
    async fn a_watcher_that_falls_a_whole_channel_behind_is_closed() {
        let cache = WatchCache::new(Vec::new(), 0, 10_000);
        let mut sub = cache.watch("/core/pods/", Some(0)).expect("watch");
        put(&cache, "/core/pods/a/p0", 1, "p");
        assert!(matches!(sub.next().await, Next::Events(_)), "keeping up");
        for rev in 2..=(BROADCAST_CAPACITY as i64 + 2) {
            put(&cache, &format!("/core/pods/a/p{rev}"), rev, "p");
        }
        assert!(matches!(sub.next().await, Next::TooSlow));
    }

    fn names(page: &[Arc<CachedObject>]) -> Vec<(String, i64)> {
        page.iter()
            .map(|o| (o.name().to_string(), o.revision))
            .collect()
    }

    fn delete(cache: &WatchCache, key: &str, rev: i64) {
        cache.apply(StorageEvent {
            key: key.into(),
            revision: rev,
            value: None,
            decoded: None,
        });
    }

    /// What a feed handed over, as text: `reset a,b`, `+c`, `-a`.
    fn drained(feed: &mut Feed, cache: &WatchCache) -> (bool, Vec<String>) {
        let mut seen = Vec::new();
        let changed = feed.drain(cache, |change| {
            seen.push(match change {
                FeedChange::Reset(objects) => format!(
                    "reset {}",
                    objects
                        .iter()
                        .map(|o| o.name())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                FeedChange::Upsert(o) => format!("+{}", o.name()),
                FeedChange::Delete(o) => format!("-{}", o.name()),
            })
        });
        (changed, seen)
    }

    #[test]
    fn a_feed_starts_from_the_current_objects_then_hands_over_each_change_once() {
        let cache = WatchCache::new(Vec::new(), 0, 100);
        put(&cache, "/core/configmaps/ns/a", 1, "a");
        put(&cache, "/core/secrets/ns/s", 2, "s");
        let mut feed = Feed::new("/core/configmaps/");
        assert_eq!(drained(&mut feed, &cache), (true, vec!["reset a".into()]));
        assert_eq!(drained(&mut feed, &cache), (false, vec![]));
        put(&cache, "/core/configmaps/ns/b", 3, "b");
        put(&cache, "/core/secrets/ns/t", 4, "t");
        delete(&cache, "/core/configmaps/ns/a", 5);
        assert_eq!(
            drained(&mut feed, &cache),
            (true, vec!["+b".into(), "-a".into()])
        );
        assert_eq!(drained(&mut feed, &cache), (false, vec![]));
    }

    #[test]
    fn a_feed_that_fell_behind_the_ring_starts_over_from_the_current_objects() {
        let cache = WatchCache::new(Vec::new(), 0, 2);
        let mut feed = Feed::new("/core/configmaps/");
        assert_eq!(drained(&mut feed, &cache), (true, vec!["reset ".into()]));
        // More writes than the live buffer and the ring hold: the missed ones are gone.
        let mut rev = 0;
        for i in 0..BROADCAST_CAPACITY {
            let key = format!("/core/configmaps/ns/c{i}");
            rev += 1;
            put(&cache, &key, rev, &format!("c{i}"));
            rev += 1;
            delete(&cache, &key, rev);
        }
        put(&cache, "/core/configmaps/ns/last", rev + 1, "last");
        let (changed, seen) = drained(&mut feed, &cache);
        assert!(changed);
        assert_eq!(
            seen.last().map(String::as_str),
            Some("reset last"),
            "{seen:?}"
        );
    }

    #[test]
    fn a_list_at_a_revision_in_the_window_undoes_the_later_changes() {
        let cache = WatchCache::new(Vec::new(), 0, 100);
        put(&cache, "/core/pods/a/p1", 1, "p1");
        put(&cache, "/core/pods/a/p2", 2, "p2");
        put(&cache, "/core/nodes/n1", 3, "n1");
        // After revision 3: p1 modified, p2 deleted, p3 added.
        put(&cache, "/core/pods/a/p1", 4, "p1");
        delete(&cache, "/core/pods/a/p2", 5);
        put(&cache, "/core/pods/a/p3", 6, "p3");
        let all = |_: &CachedObject| true;
        let (items, rev, more) = cache
            .list_at(3, "/core/pods/", None, 0, &all)
            .expect("in window");
        assert_eq!(names(&items), [("p1".into(), 1), ("p2".into(), 2)]);
        assert_eq!((rev, more), (3, false));
        let (items, _, _) = cache
            .list_at(5, "/core/pods/", None, 0, &all)
            .expect("in window");
        assert_eq!(names(&items), [("p1".into(), 4)]);
        // Pages of the same revision.
        let (items, _, more) = cache
            .list_at(3, "/core/pods/", None, 1, &all)
            .expect("page 1");
        assert_eq!((names(&items), more), (vec![("p1".into(), 1)], true));
        let (items, _, more) = cache
            .list_at(3, "/core/pods/", Some("/core/pods/a/p1"), 1, &all)
            .expect("page 2");
        assert_eq!((names(&items), more), (vec![("p2".into(), 2)], false));
        // The current revision, or a later one, is the current state.
        let (items, rev, _) = cache
            .list_at(9, "/core/pods/", None, 0, &all)
            .expect("current");
        assert_eq!((names(&items).len(), rev), (2, 9));
    }

    #[test]
    fn a_list_at_a_revision_older_than_the_window_expires() {
        let cache = WatchCache::new(Vec::new(), 0, 2);
        for rev in 1..=4 {
            put(&cache, &format!("/core/pods/a/p{rev}"), rev, "p");
        }
        let all = |_: &CachedObject| true;
        assert_eq!(
            cache.list_at(1, "/core/pods/", None, 0, &all).err(),
            Some(RevisionError::Expired {
                requested: 1,
                oldest: 2
            })
        );
        assert!(cache.list_at(2, "/core/pods/", None, 0, &all).is_ok());
    }

    #[test]
    fn the_window_starts_at_the_revision_the_cache_was_loaded_at() {
        let loaded = KeyValue {
            key: "/core/pods/a/p1".into(),
            value: Bytes::from_static(br#"{"metadata":{"name":"p1"}}"#),
            mod_revision: 3,
        };
        let cache = WatchCache::new(vec![loaded], 7, 10);
        let all = |_: &CachedObject| true;
        assert!(matches!(
            cache.list_at(6, "/core/pods/", None, 0, &all),
            Err(RevisionError::Expired { oldest: 7, .. })
        ));
        let (items, _, _) = cache
            .list_at(7, "/core/pods/", None, 0, &all)
            .expect("load revision");
        assert_eq!(names(&items), [("p1".into(), 3)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_revision_the_cache_does_not_reach_in_3s_is_too_large() {
        let cache = WatchCache::new(Vec::new(), 5, 10);
        let started = tokio::time::Instant::now();
        assert_eq!(
            cache.wait_until_fresh(8).await,
            Err(RevisionError::TooLarge {
                requested: 8,
                current: 5
            })
        );
        assert_eq!(started.elapsed(), FRESHNESS_TIMEOUT);
        assert_eq!(cache.wait_until_fresh(5).await, Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_at_a_future_revision_waits_for_it() {
        let cache = Arc::new(WatchCache::new(Vec::new(), 5, 10));
        let waiting = {
            let cache = Arc::clone(&cache);
            tokio::spawn(async move { cache.wait_until_fresh(6).await })
        };
        tokio::task::yield_now().await;
        put(&cache, "/core/pods/a/p1", 6, "p1");
        let waited = tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("the write should wake the reader")
            .expect("task");
        assert_eq!(waited, Ok(()));
    }
}
