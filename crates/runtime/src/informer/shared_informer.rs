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

use super::factory::HasSynced;
use super::processor::Processor;
use super::reflector::{Change, Reflector, ReflectorSink};
use super::{Deleted, Notification, Store};
use crate::{ObjectKey, Shutdown};

/// Shortest resync period honoured (client-go's `minimumResyncPeriod`).
const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// A cache of one resource type kept current by list/watch, with handlers notified of every change.
///
/// Clones share the same informer. Handlers and indexers may be added before or after
/// [`SharedInformer::start`]; a handler added after objects are cached first receives an `Add` for
/// each of them. Notifications for one handler arrive in the order the cache changed. After a
/// relist, objects that vanished are delivered as [`Deleted::FinalStateUnknown`].
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
    /// Applied to every object before it is cached (client-go `SetTransform`).
    transform: parking_lot::RwLock<Option<Transform<K>>>,
    /// The distribution lock: every store write by the informer and the matching `distribute`
    /// happen under it, so handlers see changes in store order, and a handler added late gets a
    /// snapshot that fits exactly before the next notification.
    processor: Mutex<Processor<K>>,
    resync: Duration,
    started: AtomicBool,
    synced: AtomicBool,
    /// The reflector and resync tasks, awaited by [`SharedInformer::stopped`].
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
    /// An informer over `api` (usually `Api::all`), resyncing every `resync` (`Duration::ZERO`
    /// disables resync; shorter periods are raised to one second).
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
        Self {
            inner: Arc::new(Inner {
                api,
                name,
                metadata_only,
                store: Store::new(),
                transform: parking_lot::RwLock::new(None),
                processor: Mutex::new(Processor::new()),
                resync,
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

    /// Registers `handler`. It runs on its own task; it must return quickly (enqueue work).
    pub fn add_event_handler(&self, handler: impl Fn(Notification<K>) + Send + Sync + 'static) {
        let mut processor = self.inner.processor.lock();
        let initial = self
            .inner
            .store
            .list()
            .into_iter()
            .map(Notification::Add)
            .collect();
        processor.add(Arc::new(handler), initial);
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

    /// Spawns the reflector, the handlers' tasks and the resync timer, which run until
    /// `shutdown`. Calling it again does nothing. Returns whether this call started it.
    pub fn start(&self, shutdown: Shutdown) -> bool {
        if self.inner.started.swap(true, Ordering::AcqRel) {
            return false;
        }
        self.inner.processor.lock().start(shutdown.clone());
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
        if !self.inner.resync.is_zero() {
            let inner = Arc::clone(&self.inner);
            tasks.push(tokio::spawn(
                async move { inner.resync_loop(shutdown).await },
            ));
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

impl<K: Resource + Send + Sync + 'static> Inner<K> {
    /// Every `resync`, delivers `Update { old: obj, new: obj }` for every cached object.
    async fn resync_loop(&self, shutdown: Shutdown) {
        let mut ticker = tokio::time::interval(self.resync);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await; // the first tick is immediate
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = ticker.tick() => {}
            }
            let mut processor = self.processor.lock();
            for obj in self.store.list() {
                processor.distribute(Notification::Update {
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
        super::compact::shrink(&mut obj);
        Arc::new(obj)
    }

    fn replace(&self, objects: Vec<Arc<K>>) {
        let mut processor = self.processor.lock();
        let replaced = self.store.replace(objects);
        for (new, old) in replaced.upserted {
            processor.distribute(match old {
                Some(old) => Notification::Update { old, new },
                None => Notification::Add(new),
            });
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
                let note = match self.store.insert(Arc::clone(&new)) {
                    Some(old) => Notification::Update { old, new },
                    None => Notification::Add(new),
                };
                processor.distribute(note);
            }
            Change::Deleted(obj) => {
                let key = ObjectKey::from_obj(&*obj);
                // The DELETED event carries the final state, which is what handlers get. A delete
                // for an object the cache never held is dropped, as client-go's DeltaFIFO does.
                if self.store.remove(&key).is_some() {
                    processor.distribute(Notification::Delete(Deleted::Known(obj)));
                }
            }
        }
    }
}
