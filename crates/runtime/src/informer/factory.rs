//! One shared informer per resource type, started together. Mirrors client-go's
//! `SharedInformerFactory` and `WaitForNamedCacheSync`.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt::{self, Debug};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DynamicObject, PartialObjectMeta};
use kube::discovery::ApiResource;
use kube::{Api, Client, Resource};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;

use super::SharedInformer;
use crate::Shutdown;

/// How often [`wait_for_cache_sync`] polls (client-go's `syncedPollPeriod`).
const SYNCED_POLL_PERIOD: Duration = Duration::from_millis(100);

/// Something that can report whether its cache holds the first complete list.
pub trait HasSynced: Send + Sync {
    /// Whether the first list has been cached and delivered.
    fn has_synced(&self) -> bool;
}

/// Type-erased view of a `SharedInformer<K>` held by the factory.
trait FactoryInformer: Send + Sync {
    fn as_any(&self) -> &dyn Any;
    fn start(&self, shutdown: Shutdown);
    fn synced(&self) -> bool;
    fn stopped(&self) -> futures::future::BoxFuture<'static, ()>;
}

impl<K> FactoryInformer for SharedInformer<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn start(&self, shutdown: Shutdown) {
        SharedInformer::start(self, shutdown);
    }

    fn synced(&self) -> bool {
        self.has_synced()
    }

    fn stopped(&self) -> futures::future::BoxFuture<'static, ()> {
        let this = self.clone();
        Box::pin(async move { this.stopped().await })
    }
}

/// Drops `managedFields`, which no controller reads: kube-controller-manager's informer transform
/// (`controllermanager.go`, `trim`). Server-side apply bookkeeping can be most of an object's size.
pub fn trim_managed_fields(meta: &mut ObjectMeta) {
    meta.managed_fields = None;
}

/// Hands out one [`SharedInformer`] per resource type, watching all namespaces, and starts them.
///
/// Clones share the same informers. Controllers ask for the informers they need in their
/// constructors; the caller then calls [`InformerFactory::start`] once (or again after more
/// informers were requested) and waits for the caches to sync.
#[doc(alias = "SharedInformerFactory")]
#[derive(Clone)]
pub struct InformerFactory {
    inner: Arc<FactoryInner>,
}

/// A change made to the metadata of every object an informer of the factory caches.
pub type MetadataTransform = Arc<dyn Fn(&mut ObjectMeta) + Send + Sync>;

struct FactoryInner {
    client: Client,
    default_resync: Duration,
    transform: Option<MetadataTransform>,
    informers: Mutex<HashMap<TypeId, Arc<dyn FactoryInformer>>>,
}

impl Debug for InformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerFactory")
            .field("default_resync", &self.inner.default_resync)
            .field("informers", &self.inner.informers.lock().len())
            .finish()
    }
}

impl InformerFactory {
    /// A factory whose informers list/watch through `client` and resync every `default_resync`
    /// (`Duration::ZERO` disables resync).
    pub fn new(client: Client, default_resync: Duration) -> Self {
        Self {
            inner: Arc::new(FactoryInner {
                client,
                default_resync,
                transform: None,
                informers: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// A factory whose informers apply `transform` to the metadata of every object before
    /// caching it (client-go's `WithTransform` option); kube-controller-manager drops
    /// `managedFields` this way ([`trim_managed_fields`]).
    pub fn with_transform(
        client: Client,
        default_resync: Duration,
        transform: impl Fn(&mut ObjectMeta) + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner: Arc::new(FactoryInner {
                client,
                default_resync,
                transform: Some(Arc::new(transform)),
                informers: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The client the informers use.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The informer for `K`, created on first request; the same informer every time.
    pub fn informer<K>(&self) -> SharedInformer<K>
    where
        K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        let mut informers = self.inner.informers.lock();
        let entry = informers.entry(TypeId::of::<K>()).or_insert_with(|| {
            let informer = SharedInformer::<K>::new(
                Api::all(self.inner.client.clone()),
                self.inner.default_resync,
            );
            self.set_transform(&informer);
            Arc::new(informer)
        });
        entry
            .as_any()
            .downcast_ref::<SharedInformer<K>>()
            .expect("informers are keyed by their type id")
            .clone()
    }

    /// A metadata-only informer over `resource` (client-go's `metadatainformer`), listing and
    /// watching with the factory's client and applying the factory's transform, as the typed
    /// informers do. It is neither shared nor started by the factory: the caller starts it and
    /// stops it through the token it gives it (the garbage collector's monitors come and go with
    /// discovery).
    pub fn metadata_informer(
        &self,
        resource: &ApiResource,
        resync: Duration,
    ) -> SharedInformer<PartialObjectMeta<DynamicObject>> {
        let api = Api::all_with(self.inner.client.clone(), resource);
        let name = format!("{}/{}", resource.api_version, resource.kind);
        let informer = SharedInformer::metadata(api, resync, name);
        self.set_transform(&informer);
        informer
    }

    /// Gives a new informer the factory's transform.
    fn set_transform<K>(&self, informer: &SharedInformer<K>)
    where
        K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    {
        if let Some(transform) = self.inner.transform.clone() {
            informer
                .set_transform(move |obj: &mut K| transform(obj.meta_mut()))
                .expect("a new informer has not started");
        }
    }

    /// Starts every informer requested so far that is not running yet. Idempotent.
    pub fn start(&self, shutdown: Shutdown) {
        let informers: Vec<_> = self.inner.informers.lock().values().cloned().collect();
        for informer in informers {
            informer.start(shutdown.clone());
        }
    }

    /// Waits until every informer's tasks have ended, after the token given to
    /// [`InformerFactory::start`] was cancelled (client-go's factory `Shutdown`).
    pub async fn stopped(&self) {
        let informers: Vec<_> = self.inner.informers.lock().values().cloned().collect();
        futures::future::join_all(informers.iter().map(|i| i.stopped())).await;
    }

    /// Whether every informer requested so far has synced.
    pub fn has_synced(&self) -> bool {
        self.inner.informers.lock().values().all(|i| i.synced())
    }

    /// Waits until every informer requested so far has synced; `false` if shut down first.
    pub async fn wait_for_cache_sync(&self, shutdown: &Shutdown) -> bool {
        wait_for_cache_sync("informer factory", &[self], shutdown).await
    }
}

impl HasSynced for InformerFactory {
    fn has_synced(&self) -> bool {
        InformerFactory::has_synced(self)
    }
}

/// Waits until every cache in `synced` has synced, polling every 100 ms. Returns `false` if
/// `shutdown` comes first. `name` (usually the controller's) appears in the logs.
#[doc(alias = "WaitForNamedCacheSync")]
pub async fn wait_for_cache_sync(
    name: &str,
    synced: &[&dyn HasSynced],
    shutdown: &Shutdown,
) -> bool {
    tracing::info!(controller = name, "waiting for caches to sync");
    let mut ticker = tokio::time::interval(SYNCED_POLL_PERIOD);
    loop {
        if synced.iter().all(|s| s.has_synced()) {
            tracing::info!(controller = name, "caches are synced");
            return true;
        }
        tokio::select! {
            _ = shutdown.cancelled() => {
                tracing::info!(controller = name, "unable to sync caches: shutting down");
                return false;
            }
            _ = ticker.tick() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::ReplicaSet;
    use k8s_openapi::api::core::v1::Pod;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn offline_client() -> Client {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("static uri"));
        Client::try_from(config).expect("client from a plain http config")
    }

    #[tokio::test]
    async fn informer_for_a_type_is_shared() {
        let factory = InformerFactory::new(offline_client(), Duration::ZERO);
        let a = factory.informer::<Pod>();
        let b = factory.clone().informer::<Pod>();
        a.add_indexer("x", |_p: &Pod| vec!["v".into()]);
        a.store().insert(Arc::new(Pod::default()));
        assert_eq!(b.store().by_index("x", "v").len(), 1, "same cache");
        let _ = factory.informer::<ReplicaSet>();
        assert_eq!(factory.inner.informers.lock().len(), 2);
    }

    struct Flag(AtomicBool);
    impl HasSynced for Flag {
        fn has_synced(&self) -> bool {
            self.0.load(Ordering::SeqCst)
        }
    }

    #[tokio::test(start_paused = true)]
    async fn wait_for_cache_sync_polls_until_synced_or_shutdown() {
        let shutdown = Shutdown::new();
        let flag = Arc::new(Flag(AtomicBool::new(false)));
        let setter = Arc::clone(&flag);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            setter.0.store(true, Ordering::SeqCst);
        });
        assert!(wait_for_cache_sync("test", &[&*flag], &shutdown).await);

        let never = Flag(AtomicBool::new(false));
        let stopper = shutdown.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            stopper.cancel();
        });
        assert!(!wait_for_cache_sync("test", &[&never], &shutdown).await);
    }
}
