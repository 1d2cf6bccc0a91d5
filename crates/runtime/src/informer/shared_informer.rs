//! One cache and one watch per resource type, shared by every handler. Mirrors client-go's
//! `sharedIndexInformer` (shared_informer.go) and the delivery half of `DeltaFIFO`.

use std::fmt::{self, Debug};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kube::{Api, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

use super::encoded::RECENT_AGE;
use super::factory::HasSynced;
use super::processor::{Processor, MINIMUM_RESYNC_PERIOD};
use super::reflector::{Change, Reflector, ReflectorSink};
use super::{Deleted, Notification, Store};
use crate::{ObjectKey, Shutdown};

/// A cache of one resource type kept current by list/watch, with handlers notified of every change.
///
/// Clones share the same informer. Handlers and indexers may be added before or after
/// [`SharedInformer::start`]; a handler added after objects are cached first receives an `Add` for
/// each of them. Notifications for one handler arrive in the order the cache changed. After a
/// relist, objects that vanished are delivered as [`Deleted::FinalStateUnknown`].
///
/// Each handler has a resync period, the informer's own unless it asks for another
/// ([`SharedInformer::add_event_handler_with_resync_period`]): every period, it receives
/// `Update { old: obj, new: obj }` for every cached object. Updates that do not change an object's
/// `resourceVersion` (a relist that finds it unchanged) count as resyncs too, as in client-go: they
/// go only to the handlers due a resync at the last check.
#[doc(alias = "SharedIndexInformer")]
pub struct SharedInformer<K> {
    inner: Arc<Inner<K>>,
}

struct Inner<K> {
    api: Api<K>,
    /// `apps/v1/ReplicaSet`, in logs.
    name: String,
    /// Lists and watches `PartialObjectMetadata` only.
    metadata_only: bool,
    store: Store<K>,
    /// Whether `store` holds objects as bytes (fixed when the store is made).
    encoded: bool,
    /// Applied to every object before it is cached (client-go `SetTransform`).
    transform: parking_lot::RwLock<Option<Transform<K>>>,
    /// The distribution lock: every store write by the informer and the matching `distribute`
    /// happen under it, so handlers see changes in store order, and a handler added late gets a
    /// snapshot that fits exactly before the next notification. It also holds the resync check
    /// period, which handlers added before start may lower.
    processor: Mutex<Processor<K>>,
    /// The period of handlers that ask for none (`defaultEventHandlerResyncPeriod`).
    default_resync: Duration,
    started: AtomicBool,
    synced: AtomicBool,
    /// The reflector, resync and expiry tasks, awaited by [`SharedInformer::stopped`].
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

/// A change made to every object before the informer caches it.
pub type Transform<K> = Arc<dyn Fn(&mut K) + Send + Sync>;

/// The informer was started: its transform can no longer change.
#[derive(Debug, thiserror::Error)]
#[error("informer has already started")]
pub struct AlreadyStarted;

impl<K> Clone for SharedInformer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> Debug for SharedInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformer")
            .field("kind", &self.inner.name)
            .field("started", &self.inner.started.load(Ordering::Relaxed))
            .field("synced", &self.inner.synced.load(Ordering::Relaxed))
            .field("handlers", &self.inner.processor.lock().len())
            .finish()
    }
}

impl<K> SharedInformer<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// An informer over `api` (usually `Api::all`) whose handlers resync every `resync` unless
    /// they ask for another period (`Duration::ZERO` disables resync; shorter periods are raised
    /// to one second).
    pub fn new(api: Api<K>, resync: Duration) -> Self {
        let name = format!("{}/{}", K::api_version(&()), K::kind(&()));
        Self::named(api, resync, name)
    }
}

impl<K> SharedInformer<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// An informer over `api` of a type known only at run time (`Api::all_with` of a
    /// [`kube::discovery::ApiResource`]), named `name` in logs; see [`SharedInformer::new`].
    pub fn named(api: Api<K>, resync: Duration, name: String) -> Self {
        Self::build(api, resync, name, false)
    }

    /// A metadata-only informer (client-go's `metadatainformer`): the server is asked for
    /// `PartialObjectMetadata`, so `K` is a metadata type such as
    /// `PartialObjectMeta<DynamicObject>`.
    pub fn metadata(api: Api<K>, resync: Duration, name: String) -> Self {
        Self::build(api, resync, name, true)
    }

    fn build(api: Api<K>, resync: Duration, name: String, metadata_only: bool) -> Self {
        let resync = if resync.is_zero() {
            resync
        } else {
            resync.max(MINIMUM_RESYNC_PERIOD)
        };
        let store = Store::new();
        Self {
            inner: Arc::new(Inner {
                api,
                name,
                metadata_only,
                encoded: store.is_encoded(),
                store,
                transform: parking_lot::RwLock::new(None),
                processor: Mutex::new(Processor::new(resync)),
                default_resync: resync,
                started: AtomicBool::new(false),
                synced: AtomicBool::new(false),
                tasks: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Sets the change made to every object before it is cached and handed to handlers, e.g.
    /// dropping fields no controller reads (client-go `SetTransform`). Only before
    /// [`SharedInformer::start`]; the transform must be idempotent.
    pub fn set_transform(
        &self,
        transform: impl Fn(&mut K) + Send + Sync + 'static,
    ) -> Result<(), AlreadyStarted> {
        if self.is_started() {
            return Err(AlreadyStarted);
        }
        *self.inner.transform.write() = Some(Arc::new(transform));
        Ok(())
    }

    /// The informer's cache.
    pub fn store(&self) -> Store<K> {
        self.inner.store.clone()
    }

    /// Registers `handler`, resynced at the informer's period. It runs on its own task; it must
    /// return quickly (enqueue work).
    pub fn add_event_handler(&self, handler: impl Fn(Notification<K>) + Send + Sync + 'static) {
        self.add_event_handler_with_resync_period(handler, self.inner.default_resync);
    }

    /// Registers `handler`, resynced every `resync` (`Duration::ZERO`: never), as client-go's
    /// `AddEventHandlerWithResyncPeriod`. Periods under a second are raised to one. Before
    /// [`SharedInformer::start`], a period shorter than the informer's makes the informer check
    /// that often; after, it is raised to the informer's check period. An informer created with
    /// resync disabled resyncs no handler.
    pub fn add_event_handler_with_resync_period(
        &self,
        handler: impl Fn(Notification<K>) + Send + Sync + 'static,
        resync: Duration,
    ) {
        let mut processor = self.inner.processor.lock();
        let initial = self
            .inner
            .store
            .list()
            .into_iter()
            .map(Notification::Add)
            .collect();
        processor.add(
            Arc::new(handler),
            initial,
            resync,
            tokio::time::Instant::now(),
        );
    }

    /// Adds the index `name`, computed by `f`, to the cache.
    pub fn add_indexer(&self, name: &str, f: impl Fn(&K) -> Vec<String> + Send + Sync + 'static) {
        self.inner.store.add_indexer(name, f);
    }

    /// Whether the first list is in the cache and has been handed to every handler.
    pub fn has_synced(&self) -> bool {
        self.inner.synced.load(Ordering::Acquire)
    }

    /// Whether [`SharedInformer::start`] was called.
    pub fn is_started(&self) -> bool {
        self.inner.started.load(Ordering::Acquire)
    }

    /// Spawns the reflector, the handlers' tasks, the resync timer and, for an encoded store, the
    /// timer that expires its recent decoded objects, which run until
    /// `shutdown`. Calling it again does nothing. Returns whether this call started it.
    pub fn start(&self, shutdown: Shutdown) -> bool {
        // Under the distribution lock, so that no handler lowers the check period after it is read.
        let check_period = {
            let mut processor = self.inner.processor.lock();
            if self.inner.started.swap(true, Ordering::AcqRel) {
                return false;
            }
            processor.start(shutdown.clone());
            processor.resync_check_period()
        };
        let reflector = Reflector::new(
            self.inner.api.clone(),
            self.inner.name.clone(),
            self.inner.metadata_only,
        );
        let sink = Arc::clone(&self.inner);
        let reflector_shutdown = shutdown.clone();
        let mut tasks = self.inner.tasks.lock();
        tasks.push(tokio::spawn(async move {
            reflector.run(&*sink, reflector_shutdown).await
        }));
        if self.inner.encoded {
            let store = self.inner.store.clone();
            let shutdown = shutdown.clone();
            tasks.push(tokio::spawn(async move {
                expire_recent_loop(store, shutdown).await
            }));
        }
        if !check_period.is_zero() {
            let inner = Arc::clone(&self.inner);
            tasks.push(tokio::spawn(async move {
                inner.resync_loop(check_period, shutdown).await
            }));
        }
        true
    }

    /// Waits until the informer's tasks (reflector, resync, handlers) have ended; they end once
    /// the token given to [`SharedInformer::start`] is cancelled. Handlers added after this call
    /// are not waited for.
    pub async fn stopped(&self) {
        let mut tasks = std::mem::take(&mut *self.inner.tasks.lock());
        tasks.extend(self.inner.processor.lock().take_tasks());
        for task in tasks {
            if let Err(err) = task.await {
                if err.is_panic() {
                    tracing::error!(error = %err, "informer task panicked");
                }
            }
        }
    }
}

impl<K> HasSynced for SharedInformer<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    fn has_synced(&self) -> bool {
        SharedInformer::has_synced(self)
    }
}

/// Every [`RECENT_AGE`], drops the decoded objects an encoded store still keeps of inserts older
/// than that, so that a store nobody writes or reads holds bytes only.
async fn expire_recent_loop<K: Resource + Send + Sync + 'static>(
    store: Store<K>,
    shutdown: Shutdown,
) {
    let mut ticker = tokio::time::interval(RECENT_AGE);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticker.tick() => {}
        }
        store.expire_recent_at(std::time::Instant::now());
    }
}

impl<K: Resource + Send + Sync + 'static> Inner<K> {
    /// Every `check_period`, delivers `Update { old: obj, new: obj }` for every cached object to
    /// the handlers due a resync (client-go's reflector `resyncChan` with `ShouldResync`, and
    /// `DeltaFIFO.Resync`). An encoded store decodes every object for it: with pods, about
    /// 15 µs each in a release build, under the distribution lock.
    async fn resync_loop(&self, check_period: Duration, shutdown: Shutdown) {
        let mut ticker = tokio::time::interval(check_period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await; // the first tick is immediate
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = ticker.tick() => {}
            }
            let mut processor = self.processor.lock();
            if !processor.should_resync(tokio::time::Instant::now()) {
                continue;
            }
            for obj in self.store.list() {
                processor.distribute_sync(Notification::Update {
                    old: Arc::clone(&obj),
                    new: obj,
                });
            }
        }
    }
}

impl<K: Resource + Send + Sync + 'static> ReflectorSink<K> for Inner<K> {
    fn prepare(&self, mut obj: K) -> Arc<K> {
        if let Some(transform) = &*self.transform.read() {
            transform(&mut obj);
        }
        // An encoded store keeps the object's bytes, not the object: its capacity is not kept.
        if !self.encoded {
            super::compact::shrink(&mut obj);
        }
        Arc::new(obj)
    }

    fn replace(&self, objects: Vec<Arc<K>>) {
        let mut processor = self.processor.lock();
        let replaced = self.store.replace(objects);
        for (new, old) in replaced.upserted {
            match old {
                Some(old) => distribute_update(&mut processor, old, new),
                None => processor.distribute(Notification::Add(new)),
            }
        }
        for (key, last) in replaced.removed {
            processor.distribute(Notification::Delete(Deleted::FinalStateUnknown {
                key,
                last,
            }));
        }
        self.synced.store(true, Ordering::Release);
    }

    fn apply(&self, change: Change<K>) {
        let mut processor = self.processor.lock();
        match change {
            Change::Added(new) | Change::Modified(new) => {
                match self.store.insert(Arc::clone(&new)) {
                    Some(old) => distribute_update(&mut processor, old, new),
                    None => processor.distribute(Notification::Add(new)),
                }
            }
            Change::Deleted(obj) => {
                let key = ObjectKey::from_obj(&*obj);
                // The DELETED event carries the final state, which is what handlers get. A delete
                // for an object the cache never held is dropped, as client-go's DeltaFIFO does.
                if self.store.delete(&key) {
                    processor.distribute(Notification::Delete(Deleted::Known(obj)));
                }
            }
        }
    }
}

/// Hands the update `old` → `new` to the handlers: one that did not change the
/// `resourceVersion` is a resync, for the handlers due one (client-go's `OnUpdate`).
fn distribute_update<K: Resource + Send + Sync + 'static>(
    processor: &mut Processor<K>,
    old: Arc<K>,
    new: Arc<K>,
) {
    let unchanged = old.meta().resource_version == new.meta().resource_version;
    let note = Notification::Update { old, new };
    if unchanged {
        processor.distribute_sync(note);
    } else {
        processor.distribute(note);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use tokio::time::Instant;

    /// An API nothing listens behind: the reflector keeps failing and backing off, and the cache
    /// holds what the test puts in it.
    fn offline_api() -> Api<ConfigMap> {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("static uri"));
        Api::all(kube::Client::try_from(config).expect("client from a plain http config"))
    }

    /// Records when `Update { old, new }` with `old` and `new` the same object arrive.
    fn resyncs(
        seen: &Arc<Mutex<Vec<Instant>>>,
    ) -> impl Fn(Notification<ConfigMap>) + Send + Sync + 'static {
        let seen = Arc::clone(seen);
        move |note| {
            if let Notification::Update { old, new } = note {
                assert!(
                    Arc::ptr_eq(&old, &new),
                    "a resync hands the cached object twice"
                );
                seen.lock().push(Instant::now());
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_handler_is_resynced_at_its_own_period_and_the_others_at_theirs() {
        let informer = SharedInformer::new(offline_api(), Duration::from_secs(12 * 3600));
        informer.store().insert(Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some("a".into()),
                namespace: Some("default".into()),
                resource_version: Some("1".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }));
        let every_30s = Arc::new(Mutex::new(Vec::new()));
        let default = Arc::new(Mutex::new(Vec::new()));
        let never = Arc::new(Mutex::new(Vec::new()));
        informer.add_event_handler_with_resync_period(resyncs(&every_30s), Duration::from_secs(30));
        informer.add_event_handler(resyncs(&default));
        informer.add_event_handler_with_resync_period(resyncs(&never), Duration::ZERO);
        let started = Instant::now();
        let shutdown = Shutdown::new();
        informer.start(shutdown.clone());

        let deadline = started + Duration::from_secs(600);
        while every_30s.lock().len() < 3 {
            assert!(
                Instant::now() < deadline,
                "no resync every 30s: {:?}",
                every_30s.lock()
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let at: Vec<u64> = every_30s
            .lock()
            .iter()
            .map(|t| (*t - started).as_secs())
            .collect();
        assert_eq!(at[..3], [30, 60, 90]);
        assert!(default.lock().is_empty(), "the 12h handler was resynced");
        assert!(
            never.lock().is_empty(),
            "a handler without resync was resynced"
        );
        shutdown.cancel();
        informer.stopped().await;
    }

    fn config_map(name: &str, resource_version: &str) -> Arc<ConfigMap> {
        Arc::new(ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                resource_version: Some(resource_version.into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        })
    }

    /// client-go's `OnUpdate`: an update that keeps the `resourceVersion` is a resync, for the
    /// handlers due one only.
    #[tokio::test]
    async fn a_relist_that_finds_an_object_unchanged_is_no_update_for_a_handler_not_due() {
        let informer = SharedInformer::new(offline_api(), Duration::ZERO);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        informer.add_event_handler(move |note: Notification<ConfigMap>| {
            let (kind, obj) = match &note {
                Notification::Add(obj) => ("add", obj),
                Notification::Update { new, .. } => ("update", new),
                Notification::Delete(d) => ("delete", d.object()),
            };
            let name = obj.metadata.name.clone().unwrap_or_default();
            record.lock().push(format!("{kind} {name}"));
        });
        let shutdown = Shutdown::new();
        informer.start(shutdown.clone());
        let sink = &*informer.inner;
        sink.replace(vec![config_map("a", "1"), config_map("b", "1")]);
        sink.replace(vec![config_map("a", "1"), config_map("b", "2")]);
        sink.apply(Change::Added(config_map("end", "3")));
        let deadline = Instant::now() + Duration::from_secs(10);
        while !seen.lock().iter().any(|s| s == "add end") {
            assert!(Instant::now() < deadline, "handler got {:?}", seen.lock());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let mut seen = seen.lock().clone();
        seen[..2].sort();
        assert_eq!(seen, ["add a", "add b", "update b", "add end"]);
        shutdown.cancel();
    }
}
