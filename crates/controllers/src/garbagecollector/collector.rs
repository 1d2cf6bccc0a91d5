//! The garbage collector's workers: monitors feed the graph; `attempt_to_delete` and
//! `attempt_to_orphan` act on it through the API. Mirrors `garbagecollector.go`.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{
    ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet,
};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, Node as KubeNode, PersistentVolumeClaim, Pod, ReplicationController,
    Secret, Service, ServiceAccount,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, DeleteParams, DynamicObject, PartialObjectMeta, Patch, PatchParams, Preconditions,
    PropagationPolicy,
};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiResource, Scope};
use parking_lot::{Mutex, RwLock};
use rkcm_runtime::discovery::{self, PreferredResources};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, Shutdown};
use serde_json::json;
use tokio::sync::mpsc;

use super::graph::{
    decide, Change, Classified, Decision, Graph, Identity, Node, ObjectState,
    FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN,
};

/// Errors from one garbage-collection attempt; the item is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API call failed.
    #[error("{what} {identity}")]
    Api {
        /// What was being done.
        what: &'static str,
        /// The object.
        identity: Identity,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// The server does not serve this kind.
    #[error("unable to get REST mapping for {0}")]
    NoMapping(String),
    /// A virtual node (an owner known only from references) exists but no informer reported it
    /// yet; it is looked at again later.
    #[error("{0} exists but has not been observed by an informer yet")]
    NotObserved(Identity),
    /// A cluster-scoped object names a namespaced owner: invalid, and never retried.
    #[error("cluster-scoped {dependent} refers to namespaced owner {owner}")]
    NamespacedOwnerOfClusterScoped {
        /// The cluster-scoped object.
        dependent: Identity,
        /// The owner reference, as `apiVersion/kind name`.
        owner: String,
    },
    /// Every attempt of an optimistic update met a conflict.
    #[error("{what} {identity}: too many conflicts, will retry")]
    Conflicts {
        /// What was being done.
        what: &'static str,
        /// The object.
        identity: Identity,
    },
}

impl Error {
    /// The level kube's `attemptToDeleteWorker` logs this at when it is not an error
    /// (`utilruntime.HandleError`): an owner not observed yet and a kind without a REST mapping are
    /// retried quietly (`V(5)`).
    fn log_level(&self) -> Option<tracing::Level> {
        match self {
            Error::NotObserved(_) | Error::NoMapping(_) => Some(tracing::Level::TRACE),
            _ => None,
        }
    }
}

/// How long workers wait for the graph to hold the monitors' initial lists.
const GRAPH_SYNC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Attempts of a read-modify-write (finalizer removal) before the item is requeued with backoff.
const FINALIZER_ATTEMPTS: usize = 5;

/// Garbage collector settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// `--concurrent-gc-syncs`.
    pub workers: usize,
}

/// Object kinds whose owner references the collector follows.
trait Monitored:
    kube::Resource<DynamicType = ()>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}
impl<K> Monitored for K where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

fn state_of<K: kube::Resource<DynamicType = ()>>(obj: &K) -> ObjectState {
    meta_state(&K::api_version(&()), &K::kind(&()), obj.meta())
}

/// The graph's view of an object of kind `api_version`/`kind` with metadata `meta`.
fn meta_state(
    api_version: &str,
    kind: &str,
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> ObjectState {
    ObjectState {
        identity: Identity {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
            namespace: meta.namespace.clone().filter(|n| !n.is_empty()),
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
        },
        owners: meta.owner_references.clone().unwrap_or_default(),
        being_deleted: meta.deletion_timestamp.is_some(),
        finalizers: meta.finalizers.clone().unwrap_or_default(),
    }
}

/// The garbage collector: deletes objects whose owners are gone, and implements the foreground
/// and orphan propagation policies.
pub struct GarbageCollector {
    client: kube::Client,
    /// Makes the metadata-only monitors: the shared informers' client and transform.
    factory: InformerFactory,
    graph: Arc<Mutex<Graph>>,
    changes: mpsc::UnboundedSender<Change>,
    changes_rx: Mutex<Option<mpsc::UnboundedReceiver<Change>>>,
    attempt_to_delete: RateLimitingQueue<String>,
    attempt_to_orphan: RateLimitingQueue<String>,
    monitors: RwLock<Monitors>,
    mappings: RwLock<HashMap<(String, String), (ApiResource, Scope)>>,
    config: Config,
}

/// A resource as the collector keys its monitors: group and plural.
type MonitorKey = (String, String);

/// What the collector watches: typed informers shared with the other controllers for the kinds
/// they use, and metadata-only informers for every other deletable resource discovery shows
/// (kube's `ObjectOrMetadataInformerFactory`).
#[derive(Default)]
struct Monitors {
    typed: Vec<(MonitorKey, Box<dyn Monitor>)>,
    dynamic: HashMap<MonitorKey, DynamicMonitor>,
}

impl Monitors {
    fn all(&self) -> impl Iterator<Item = &dyn Monitor> {
        self.typed
            .iter()
            .map(|(_, m)| m.as_ref())
            .chain(self.dynamic.values().map(|m| m as &dyn Monitor))
    }

    fn covers(&self, key: &MonitorKey) -> bool {
        self.dynamic.contains_key(key) || self.typed.iter().any(|(k, _)| k == key)
    }
}

/// Resources the collector never watches (kube's `DefaultIgnoredResources`): events own nothing
/// and are many.
const IGNORED: &[(&str, &str)] = &[("", "events"), ("events.k8s.io", "events")];

/// How often discovery is read again for new or removed resources (kube's `Sync` period).
pub const RESYNC_MONITORS_PERIOD: std::time::Duration = std::time::Duration::from_secs(30);

impl GarbageCollector {
    /// Registers the monitors on `factory`.
    pub fn new(factory: &InformerFactory, client: kube::Client, config: Config) -> Arc<Self> {
        let (tx, rx) = mpsc::unbounded_channel();
        // The kinds the other controllers also watch are monitored through their shared typed
        // informers; every other deletable resource is found by discovery when the collector
        // runs, and again every `RESYNC_MONITORS_PERIOD`, and watched metadata-only.
        let typed = vec![
            typed::<Pod>(factory, &tx),
            typed::<ReplicaSet>(factory, &tx),
            typed::<Deployment>(factory, &tx),
            typed::<StatefulSet>(factory, &tx),
            typed::<DaemonSet>(factory, &tx),
            typed::<Job>(factory, &tx),
            typed::<CronJob>(factory, &tx),
            typed::<ReplicationController>(factory, &tx),
            typed::<ControllerRevision>(factory, &tx),
            typed::<ConfigMap>(factory, &tx),
            typed::<Service>(factory, &tx),
            typed::<EndpointSlice>(factory, &tx),
            typed::<PersistentVolumeClaim>(factory, &tx),
            typed::<Secret>(factory, &tx),
            typed::<ServiceAccount>(factory, &tx),
            typed::<Lease>(factory, &tx),
            typed::<KubeNode>(factory, &tx),
            typed::<Namespace>(factory, &tx),
        ];
        let monitors = Monitors {
            typed,
            dynamic: HashMap::new(),
        };
        Arc::new(Self {
            client,
            factory: factory.clone(),
            graph: Arc::new(Mutex::new(Graph::default())),
            changes: tx,
            changes_rx: Mutex::new(Some(rx)),
            attempt_to_delete: RateLimitingQueue::new("garbage_collector_attempt_to_delete"),
            attempt_to_orphan: RateLimitingQueue::new("garbage_collector_attempt_to_orphan"),
            monitors: RwLock::new(monitors),
            mappings: RwLock::new(HashMap::new()),
            config,
        })
    }

    /// Whether every monitor has synced.
    pub fn has_synced(&self) -> bool {
        self.monitors.read().all().all(|m| m.has_synced())
    }

    /// Runs the graph builder and the workers until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        // As kube's collector: the first discovery must succeed (a partial answer will do).
        let mut backoff = std::time::Duration::from_millis(500);
        while let Err(err) = self.resync_monitors(&shutdown).await {
            tracing::warn!(error = %rkcm_runtime::api_error::Chain(&err), "garbage collector: failed to discover deletable resources; retrying");
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(RESYNC_MONITORS_PERIOD);
        }
        if !wait_for_cache_sync("garbage collector", &[&*self], &shutdown).await {
            return;
        }
        let Some(mut rx) = self.changes_rx.lock().take() else {
            tracing::error!("garbage collector started twice");
            return;
        };
        let builder = {
            let this = Arc::clone(&self);
            let stop = shutdown.clone();
            tokio::spawn(async move {
                loop {
                    let change = tokio::select! {
                        _ = stop.cancelled() => return,
                        change = rx.recv() => match change { Some(c) => c, None => return },
                    };
                    this.process_change(change);
                }
            })
        };
        // Workers act on the graph: let it hold the initial lists first, so that an owner found
        // waiting for its dependents is not finalized before they are in the graph.
        if !self.wait_for_graph(&shutdown).await {
            builder.abort();
            return;
        }
        let deleters = {
            let this = Arc::clone(&self);
            worker::run(
                self.attempt_to_delete.clone(),
                self.config.workers.max(1),
                shutdown.clone(),
                worker::ErrorPolicy::handle_error().with_level_of(Error::log_level),
                move |uid: String| {
                    let this = Arc::clone(&this);
                    async move { this.attempt_to_delete_item(&uid).await }
                },
            )
        };
        let orphaners = {
            let this = Arc::clone(&self);
            worker::run(
                self.attempt_to_orphan.clone(),
                1,
                shutdown.clone(),
                worker::ErrorPolicy::handle_error().with_level_of(Error::log_level),
                move |uid: String| {
                    let this = Arc::clone(&this);
                    async move { this.attempt_to_orphan_item(&uid).await }
                },
            )
        };
        let resyncer = {
            let this = Arc::clone(&self);
            let stop = shutdown.clone();
            async move {
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(RESYNC_MONITORS_PERIOD) => {}
                    }
                    if let Err(err) = this.resync_monitors(&stop).await {
                        tracing::warn!(error = %rkcm_runtime::api_error::Chain(&err), "garbage collector: failed to discover deletable resources");
                    }
                }
            }
        };
        tokio::join!(deleters, orphaners, resyncer);
        builder.abort();
    }

    /// kube's `GarbageCollector.Sync` step: reads discovery and starts a metadata-only monitor
    /// for every deletable resource not watched yet, and stops those of resources no longer
    /// served. A group that cannot be discovered keeps its monitors; an error only when even the
    /// list of groups cannot be read.
    async fn resync_monitors(&self, shutdown: &Shutdown) -> Result<(), kube::Error> {
        let discovered = discovery::preferred_resources(&self.client).await?;
        if let Some(message) = discovered.error_message() {
            tracing::info!(error = %message, "garbage collector: partial discovery; keeping the monitors of the failed groups");
        }
        let wanted = deletable(&discovered);
        let mut monitors = self.monitors.write();
        monitors.dynamic.retain(|key, monitor| {
            let keep = keeps_monitor(key, &monitor.resource.api_version, &wanted, &discovered);
            if !keep {
                tracing::info!(resource = %monitor.resource.api_version, kind = %monitor.resource.kind, "garbage collector: resource no longer served; stopping its monitor");
                monitor.stop.cancel();
            }
            keep
        });
        for (key, resource) in wanted {
            if monitors.covers(&key) {
                continue;
            }
            tracing::debug!(resource = %resource.api_version, kind = %resource.kind, "garbage collector: monitoring");
            let monitor = DynamicMonitor::start(&self.factory, resource, &self.changes, shutdown);
            monitors.dynamic.insert(key, monitor);
        }
        Ok(())
    }

    /// Waits until every object the monitors list is a node of the graph (objects deleted meanwhile
    /// aside: the wait ends after [`GRAPH_SYNC_TIMEOUT`] whatever happens). False on shutdown.
    async fn wait_for_graph(&self, shutdown: &Shutdown) -> bool {
        let deadline = tokio::time::Instant::now() + GRAPH_SYNC_TIMEOUT;
        loop {
            let missing = {
                let graph = self.graph.lock();
                let monitors = self.monitors.read();
                monitors
                    .all()
                    .flat_map(|m| m.uids())
                    .filter(|uid| !graph.get(uid).is_some_and(|n| n.observed))
                    .count()
            };
            if missing == 0 {
                return true;
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(
                    missing,
                    "garbage collector graph still misses listed objects; starting workers anyway"
                );
                return true;
            }
            tokio::select! {
                _ = shutdown.cancelled() => return false,
                _ = tokio::time::sleep(std::time::Duration::from_millis(20)) => {}
            }
        }
    }

    fn process_change(&self, change: Change) {
        let actions = self.graph.lock().process(change);
        for uid in actions.attempt_to_delete {
            self.attempt_to_delete.add(uid);
        }
        for uid in actions.attempt_to_orphan {
            self.attempt_to_orphan.add(uid);
        }
    }

    /// The API resource serving `api_version`/`kind`, from discovery (cached; refreshed on a miss).
    async fn mapping(&self, api_version: &str, kind: &str) -> Result<(ApiResource, Scope), Error> {
        let key = (api_version.to_string(), kind.to_string());
        if let Some(found) = self.mappings.read().get(&key) {
            return Ok(found.clone());
        }
        // One group version's discovery, so that an unavailable group fails only its own kinds.
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (ar, caps) = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .map_err(|_| Error::NoMapping(format!("{api_version}/{kind}")))?;
        self.mappings
            .write()
            .insert(key, (ar.clone(), caps.scope.clone()));
        Ok((ar, caps.scope))
    }

    async fn api_for(&self, identity: &Identity) -> Result<Api<DynamicObject>, Error> {
        let (ar, scope) = self.mapping(&identity.api_version, &identity.kind).await?;
        Ok(match (scope, &identity.namespace) {
            (Scope::Namespaced, Some(ns)) => Api::namespaced_with(self.client.clone(), ns, &ar),
            _ => Api::all_with(self.client.clone(), &ar),
        })
    }

    /// Uncached GET of `identity`; `None` when absent or replaced by an object with another UID.
    async fn get_live(&self, identity: &Identity) -> Result<Option<DynamicObject>, Error> {
        let api = self.api_for(identity).await?;
        match api.get_opt(&identity.name).await {
            Ok(Some(obj)) if obj.metadata.uid.as_deref() == Some(identity.uid.as_str()) => {
                Ok(Some(obj))
            }
            Ok(_) => Ok(None),
            Err(source) => Err(Error::Api {
                what: "getting",
                identity: identity.clone(),
                source,
            }),
        }
    }

    /// Uncached GET of the owner `reference` of `dependent` (`isDangling`); `None` when it is absent
    /// or another object (another UID) has its name.
    async fn get_owner(
        &self,
        dependent: &Identity,
        reference: &OwnerReference,
    ) -> Result<Option<DynamicObject>, Error> {
        let (_, scope) = self
            .mapping(&reference.api_version, &reference.kind)
            .await?;
        let namespace = match scope {
            Scope::Cluster => None,
            Scope::Namespaced => match &dependent.namespace {
                Some(ns) => Some(ns.clone()),
                None => {
                    return Err(Error::NamespacedOwnerOfClusterScoped {
                        dependent: dependent.clone(),
                        owner: format!(
                            "{}/{} {}",
                            reference.api_version, reference.kind, reference.name
                        ),
                    })
                }
            },
        };
        self.get_live(&Identity {
            api_version: reference.api_version.clone(),
            kind: reference.kind.clone(),
            namespace,
            name: reference.name.clone(),
            uid: reference.uid.clone(),
        })
        .await
    }

    /// `classifyReferences`: solid, dangling and waiting-for-dependents owners, checked uncached.
    async fn classify(
        &self,
        dependent: &Identity,
        references: &[OwnerReference],
    ) -> Result<Classified, Error> {
        let mut classified = Classified::default();
        for reference in references {
            match self.get_owner(dependent, reference).await? {
                None => classified.dangling.push(reference.clone()),
                Some(owner) => {
                    let waiting = owner.metadata.deletion_timestamp.is_some()
                        && owner
                            .metadata
                            .finalizers
                            .iter()
                            .flatten()
                            .any(|f| f == FINALIZER_DELETE_DEPENDENTS);
                    if waiting {
                        classified
                            .waiting_for_dependents_deletion
                            .push(reference.clone());
                    } else {
                        classified.solid.push(reference.clone());
                    }
                }
            }
        }
        Ok(classified)
    }

    fn virtual_delete(&self, identity: Identity) {
        let _ = self.changes.send(Change::VirtualDelete(identity));
    }

    /// `attemptToDeleteWorker`: one attempt on the object with `uid`; errors requeue it with backoff.
    async fn attempt_to_delete_item(&self, uid: &str) -> Result<(), Error> {
        let Some(node) = self.graph.lock().get(uid).cloned() else {
            return Ok(());
        };
        match self.attempt_to_delete_node(&node).await {
            // A virtual delete is on its way to the graph builder, which queues what it affects.
            Ok(Attempt::VirtualDeleteQueued) => Ok(()),
            Ok(Attempt::Done) => {
                // A virtual node that exists but was not observed yet is checked again later, so
                // that one added and removed while a watch was down does not stay forever
                // (kubernetes#56121); and so that owners of kinds without a monitor are found
                // absent once they go.
                let observed = self.graph.lock().get(uid).is_none_or(|n| n.observed);
                if observed {
                    Ok(())
                } else {
                    Err(Error::NotObserved(node.identity))
                }
            }
            // Does not resolve on retry.
            Err(err @ Error::NamespacedOwnerOfClusterScoped { .. }) => {
                tracing::info!(error = %err, "ignoring an invalid owner reference");
                Ok(())
            }
            Err(err) => Err(err),
        }
    }

    /// `attemptToDeleteItem`: decide whether `node` must go, and act.
    async fn attempt_to_delete_node(&self, node: &Node) -> Result<Attempt, Error> {
        // "Being deleted" is a one-way trip: wait for the final deletion, which queues the dependents.
        if node.being_deleted && !node.deleting_dependents {
            return Ok(Attempt::Done);
        }
        let Some(latest) = self.get_live(&node.identity).await? else {
            // Absent (or another object now has the name): process as deleted, which queues
            // its dependents.
            self.virtual_delete(node.identity.clone());
            return Ok(Attempt::VirtualDeleteQueued);
        };
        if node.deleting_dependents {
            self.process_deleting_dependents(&node.identity).await?;
            return Ok(Attempt::Done);
        }
        let owners = latest.metadata.owner_references.clone().unwrap_or_default();
        if owners.is_empty() {
            return Ok(Attempt::Done);
        }
        let classified = self.classify(&node.identity, &owners).await?;
        let (has_dependents, a_dependent_deletes_dependents) = {
            let graph = self.graph.lock();
            let dependents = graph
                .get(&node.identity.uid)
                .map(|n| n.dependents.clone())
                .unwrap_or_default();
            let deleting = dependents
                .iter()
                .any(|d| graph.get(d).is_some_and(|d| d.deleting_dependents));
            (!dependents.is_empty(), deleting)
        };
        let finalizers = latest.metadata.finalizers.clone().unwrap_or_default();
        match decide(
            &classified,
            has_dependents,
            a_dependent_deletes_dependents,
            &finalizers,
        ) {
            Decision::Keep => Ok(Attempt::Done),
            Decision::RemoveReferences(remove) => {
                tracing::info!(object = %node.identity, ?remove, "removing owner references to dangling owners and owners waiting for their dependents");
                let refs: Vec<OwnerReference> = owners
                    .into_iter()
                    .filter(|o| !remove.contains(&o.uid))
                    .collect();
                self.patch_owner_references(&node.identity, &latest, refs)
                    .await?;
                Ok(Attempt::Done)
            }
            Decision::Delete {
                policy,
                unblock_first,
            } => {
                let (mut resource_version, mut owners) =
                    (latest.metadata.resource_version.clone(), owners);
                if unblock_first {
                    tracing::info!(object = %node.identity, "an owner and a dependent both wait for their dependents: making owner references non-blocking to avoid a cycle");
                    let unblocked: Vec<OwnerReference> = owners
                        .iter()
                        .cloned()
                        .map(|mut o| {
                            if o.block_owner_deletion == Some(true) {
                                o.block_owner_deletion = Some(false);
                            }
                            o
                        })
                        .collect();
                    match self
                        .patch_owner_references(&node.identity, &latest, unblocked)
                        .await?
                    {
                        Some(patched) => {
                            resource_version = patched.metadata.resource_version;
                            owners = patched.metadata.owner_references.unwrap_or_default();
                        }
                        None => {
                            self.virtual_delete(node.identity.clone());
                            return Ok(Attempt::VirtualDeleteQueued);
                        }
                    }
                }
                tracing::info!(object = %node.identity, ?policy, "deleting an object whose owners are gone or wait for their dependents");
                match self
                    .delete_object(&node.identity, resource_version, &owners, policy)
                    .await?
                {
                    Deletion::Requested => Ok(Attempt::Done),
                    Deletion::NotFound => {
                        self.virtual_delete(node.identity.clone());
                        Ok(Attempt::VirtualDeleteQueued)
                    }
                }
            }
        }
    }

    /// Foreground deletion: once no dependent blocks the owner, drop its `foregroundDeletion` finalizer.
    async fn process_deleting_dependents(&self, owner: &Identity) -> Result<(), Error> {
        let blocking: Vec<(String, bool)> = {
            let graph = self.graph.lock();
            graph
                .blocking_dependents(&owner.uid)
                .into_iter()
                .map(|d| (d.identity.uid.clone(), d.deleting_dependents))
                .collect()
        };
        if blocking.is_empty() {
            tracing::info!(object = %owner, "no dependent blocks the owner any more: removing the foregroundDeletion finalizer");
            return self
                .remove_finalizer(owner, FINALIZER_DELETE_DEPENDENTS)
                .await;
        }
        for (uid, deleting_dependents) in blocking {
            if !deleting_dependents {
                self.attempt_to_delete.add(uid);
            }
        }
        Ok(())
    }

    /// `attemptToOrphanWorker`: remove the owner's references from its dependents, then its `orphan` finalizer.
    async fn attempt_to_orphan_item(&self, uid: &str) -> Result<(), Error> {
        let (owner, dependents) = {
            let graph = self.graph.lock();
            let Some(node) = graph.get(uid) else {
                return Ok(());
            };
            let dependents: Vec<Identity> = node
                .dependents
                .iter()
                .filter_map(|d| graph.get(d).map(|n| n.identity.clone()))
                .collect();
            (node.identity.clone(), dependents)
        };
        for dependent in dependents {
            let Some(latest) = self.get_live(&dependent).await? else {
                continue;
            };
            let refs = latest.metadata.owner_references.clone().unwrap_or_default();
            if !refs.iter().any(|o| o.uid == owner.uid) {
                continue;
            }
            let kept: Vec<OwnerReference> =
                refs.into_iter().filter(|o| o.uid != owner.uid).collect();
            self.patch_owner_references(&dependent, &latest, kept)
                .await?;
        }
        tracing::info!(object = %owner, "dependents orphaned: removing the orphan finalizer");
        self.remove_finalizer(&owner, FINALIZER_ORPHAN).await
    }

    /// Replaces the owner references of `latest` by `refs` with a JSON merge patch that carries the
    /// resourceVersion `latest` was read at (a conflict means: look again), and the UID as kube's
    /// strategic merge patch does. `None` when the object is gone.
    async fn patch_owner_references(
        &self,
        identity: &Identity,
        latest: &DynamicObject,
        refs: Vec<OwnerReference>,
    ) -> Result<Option<DynamicObject>, Error> {
        let patch = json!({"metadata": {
            "ownerReferences": if refs.is_empty() { serde_json::Value::Null } else { json!(refs) },
            "uid": identity.uid,
            "resourceVersion": latest.metadata.resource_version,
        }});
        let api = self.api_for(identity).await?;
        match api
            .patch(
                &identity.name,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(obj) => Ok(Some(obj)),
            Err(err) if is_not_found(&err) => Ok(None),
            Err(source) => Err(Error::Api {
                what: "updating the owner references of",
                identity: identity.clone(),
                source,
            }),
        }
    }

    /// `deleteObject`: DELETE with the UID and the resourceVersion the decision was made at as
    /// preconditions. On a resourceVersion conflict the object is deleted anyway if its owner
    /// references did not change (other fields may change freely), and left for another look if they did.
    async fn delete_object(
        &self,
        identity: &Identity,
        resource_version: Option<String>,
        owners_at_resource_version: &[OwnerReference],
        policy: PropagationPolicy,
    ) -> Result<Deletion, Error> {
        let api = self.api_for(identity).await?;
        let params = |resource_version: Option<String>| DeleteParams {
            propagation_policy: Some(policy.clone()),
            preconditions: Some(Preconditions {
                uid: Some(identity.uid.clone()),
                resource_version,
            }),
            ..DeleteParams::default()
        };
        let api_err = |source| Error::Api {
            what: "deleting",
            identity: identity.clone(),
            source,
        };
        let conflict = match api
            .delete(&identity.name, &params(resource_version.clone()))
            .await
        {
            Ok(_) => return Ok(Deletion::Requested),
            Err(err) if is_not_found(&err) => return Ok(Deletion::NotFound),
            Err(err) if is_conflict(&err) && resource_version.is_some() => err,
            Err(err) => return Err(api_err(err)),
        };
        let live = match api.get_opt(&identity.name).await {
            Ok(live) => live,
            Err(err) => return Err(api_err(err)),
        };
        match live {
            // Gone, or replaced: what we meant to delete is gone.
            None => Ok(Deletion::NotFound),
            Some(live) if live.metadata.uid.as_deref() != Some(identity.uid.as_str()) => {
                Ok(Deletion::NotFound)
            }
            Some(live)
                if live.metadata.owner_references.clone().unwrap_or_default()
                    == owners_at_resource_version =>
            {
                match api.delete(&identity.name, &params(None)).await {
                    Ok(_) => Ok(Deletion::Requested),
                    Err(err) if is_not_found(&err) => Ok(Deletion::NotFound),
                    Err(err) => Err(api_err(err)),
                }
            }
            // The owners changed since the decision (adopted, say): decide again.
            Some(_) => Err(api_err(conflict)),
        }
    }

    /// Removes `finalizer` from the live object, with optimistic concurrency.
    async fn remove_finalizer(&self, identity: &Identity, finalizer: &str) -> Result<(), Error> {
        let api = self.api_for(identity).await?;
        for _ in 0..FINALIZER_ATTEMPTS {
            let Some(latest) = self.get_live(identity).await? else {
                return Ok(());
            };
            let current = latest.metadata.finalizers.clone().unwrap_or_default();
            if !current.iter().any(|f| f == finalizer) {
                return Ok(());
            }
            let finalizers: Vec<String> = current.into_iter().filter(|f| f != finalizer).collect();
            let patch = json!({"metadata": {
                "finalizers": finalizers,
                "resourceVersion": latest.metadata.resource_version,
            }});
            match api
                .patch(
                    &identity.name,
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
            {
                Ok(_) => return Ok(()),
                Err(err) if is_not_found(&err) => return Ok(()),
                Err(err) if is_conflict(&err) => continue,
                Err(source) => {
                    return Err(Error::Api {
                        what: "removing a finalizer from",
                        identity: identity.clone(),
                        source,
                    })
                }
            }
        }
        Err(Error::Conflicts {
            what: "removing a finalizer from",
            identity: identity.clone(),
        })
    }
}

/// What one `attemptToDeleteItem` did.
enum Attempt {
    /// Decided and acted (possibly: nothing to do).
    Done,
    /// The object is absent; a virtual delete was sent to the graph builder.
    VirtualDeleteQueued,
}

/// What a delete achieved.
enum Deletion {
    /// The server accepted the delete (the object may stay a while: finalizers, grace period).
    Requested,
    /// Nothing to delete any more.
    NotFound,
}

fn is_not_found(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 404)
}

fn is_conflict(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(s) if s.code == 409)
}

/// A monitor: one kind's informer, seen by the collector without its type.
trait Monitor: HasSynced + Send + Sync {
    /// UIDs of the objects in the informer's cache.
    fn uids(&self) -> Vec<String>;
}

impl<K: Monitored> Monitor for SharedInformer<K> {
    fn uids(&self) -> Vec<String> {
        self.store()
            .list()
            .iter()
            .filter_map(|o| o.meta().uid.clone())
            .collect()
    }
}

impl HasSynced for GarbageCollector {
    fn has_synced(&self) -> bool {
        GarbageCollector::has_synced(self)
    }
}

/// A metadata-only informer over a resource known from discovery, with its own stop token.
struct DynamicMonitor {
    resource: ApiResource,
    informer: SharedInformer<PartialObjectMeta<DynamicObject>>,
    stop: Shutdown,
}

impl DynamicMonitor {
    /// Starts watching `resource`, feeding the graph builder through `tx`, until `shutdown` or
    /// its own stop.
    fn start(
        factory: &InformerFactory,
        resource: ApiResource,
        tx: &mpsc::UnboundedSender<Change>,
        shutdown: &Shutdown,
    ) -> Self {
        let informer = factory.metadata_informer(&resource, std::time::Duration::ZERO);
        let (api_version, kind) = (resource.api_version.clone(), resource.kind.clone());
        let tx = tx.clone();
        informer.add_event_handler(
            move |note: Notification<PartialObjectMeta<DynamicObject>>| {
                let _ = tx.send(change_of(&note, |o: &PartialObjectMeta<DynamicObject>| {
                    meta_state(&api_version, &kind, &o.metadata)
                }));
            },
        );
        let stop = shutdown.child_token();
        informer.start(stop.clone());
        Self {
            resource,
            informer,
            stop,
        }
    }
}

impl HasSynced for DynamicMonitor {
    fn has_synced(&self) -> bool {
        self.informer.has_synced()
    }
}

impl Monitor for DynamicMonitor {
    fn uids(&self) -> Vec<String> {
        self.informer
            .store()
            .list()
            .iter()
            .filter_map(|o| o.metadata.uid.clone())
            .collect()
    }
}

/// The resources to monitor: every discovered resource with `delete`, `list` and `watch`,
/// events excepted (kube's `GetDeletableResources` less `ignoredResources`).
fn deletable(discovered: &PreferredResources) -> Vec<(MonitorKey, ApiResource)> {
    discovered
        .supporting(discovery::DELETABLE)
        .filter(|(ar, _)| !IGNORED.contains(&(ar.group.as_str(), ar.plural.as_str())))
        .map(|(ar, _)| ((ar.group.clone(), ar.plural.clone()), ar.clone()))
        .collect()
}

/// A typed monitor keyed by its resource.
fn typed<K: Monitored>(
    factory: &InformerFactory,
    tx: &mpsc::UnboundedSender<Change>,
) -> (MonitorKey, Box<dyn Monitor>) {
    let key = (K::group(&()).into_owned(), K::plural(&()).into_owned());
    (key, Box::new(monitor::<K>(factory, tx)))
}

/// Feeds `K`'s informer notifications into the graph builder.
fn monitor<K: Monitored>(
    factory: &InformerFactory,
    tx: &mpsc::UnboundedSender<Change>,
) -> SharedInformer<K> {
    let informer = factory.informer::<K>();
    let tx = tx.clone();
    informer.add_event_handler(move |note: Notification<K>| {
        let _ = tx.send(change_of(&note, |o: &K| state_of(o)));
    });
    informer
}

/// The graph change an informer notification makes, `state` reading an object's graph view.
fn change_of<K>(note: &Notification<K>, state: impl Fn(&K) -> ObjectState) -> Change {
    match note {
        Notification::Add(obj) => Change::Upsert(state(obj)),
        Notification::Update { new, .. } => Change::Upsert(state(new)),
        Notification::Delete(deleted) => Change::Delete(state(deleted.object()).identity),
    }
}

/// Whether a metadata-only monitor of `key` (served at `api_version`) stays after a discovery:
/// it is still wanted, or its group version failed to be discovered (kube's `Sync` keeps the
/// informers of failed groups rather than dropping them on a partial answer).
fn keeps_monitor(
    key: &MonitorKey,
    api_version: &str,
    wanted: &[(MonitorKey, ApiResource)],
    discovered: &PreferredResources,
) -> bool {
    wanted.iter().any(|(k, _)| k == key) || discovered.failed.contains_key(api_version)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::GroupVersionKind;

    fn resource(
        group: &str,
        kind: &str,
        plural: &str,
        verbs: &[&str],
    ) -> (ApiResource, kube::discovery::ApiCapabilities) {
        (
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural),
            kube::discovery::ApiCapabilities {
                scope: Scope::Namespaced,
                subresources: Vec::new(),
                operations: verbs.iter().map(|v| v.to_string()).collect(),
            },
        )
    }

    #[test]
    fn a_partial_discovery_keeps_the_monitors_of_the_failed_groups_only() {
        let all = ["delete", "list", "watch"];
        let mut discovered = PreferredResources {
            resources: vec![resource("", "PodTemplate", "podtemplates", &all)],
            failed: Default::default(),
        };
        discovered.failed.insert(
            "metrics.example.com/v1".to_string(),
            "the server is currently unable to handle the request".to_string(),
        );
        let wanted = deletable(&discovered);
        let key = |g: &str, p: &str| (g.to_string(), p.to_string());
        // Still served: kept.
        assert!(keeps_monitor(
            &key("", "podtemplates"),
            "v1",
            &wanted,
            &discovered
        ));
        // Its group failed to answer: kept, not dropped on a partial answer.
        assert!(keeps_monitor(
            &key("metrics.example.com", "samples"),
            "metrics.example.com/v1",
            &wanted,
            &discovered
        ));
        // Its group answered without it (a removed CRD): stopped.
        assert!(!keeps_monitor(
            &key("example.com", "widgets"),
            "example.com/v1",
            &wanted,
            &discovered
        ));
    }

    #[test]
    fn deletable_resources_need_delete_list_and_watch_and_exclude_events() {
        let all = [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ];
        let discovered = PreferredResources {
            resources: vec![
                resource("", "PodTemplate", "podtemplates", &all),
                resource("", "Event", "events", &all),
                resource("events.k8s.io", "Event", "events", &all),
                resource(
                    "authorization.k8s.io",
                    "SubjectAccessReview",
                    "subjectaccessreviews",
                    &["create"],
                ),
                resource(
                    "example.com",
                    "Widget",
                    "widgets",
                    &["get", "list", "watch"],
                ),
                resource(
                    "example.com",
                    "Gadget",
                    "gadgets",
                    &["delete", "list", "watch"],
                ),
            ],
            failed: Default::default(),
        };
        let keys: Vec<MonitorKey> = deletable(&discovered).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys,
            [
                (String::new(), "podtemplates".to_string()),
                ("example.com".to_string(), "gadgets".to_string())
            ]
        );
    }
}
