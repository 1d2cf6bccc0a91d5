//! The garbage collector's workers: monitors feed the graph; `attempt_to_delete` and
//! `attempt_to_orphan` act on it through the API. Mirrors `garbagecollector.go`.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::{ControllerRevision, Deployment, ReplicaSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ReplicationController, Service};
use kube::api::{
    Api, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions, PropagationPolicy,
};
use kube::discovery::{ApiResource, Discovery, Scope};
use parking_lot::{Mutex, RwLock};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, Shutdown};
use serde_json::json;
use tokio::sync::mpsc;

use super::graph::{
    decide, Change, Classified, Decision, Graph, Identity, ObjectState,
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
}

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
    let meta = obj.meta();
    ObjectState {
        identity: Identity {
            api_version: K::api_version(&()).into_owned(),
            kind: K::kind(&()).into_owned(),
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
    graph: Arc<Mutex<Graph>>,
    changes: mpsc::UnboundedSender<Change>,
    changes_rx: Mutex<Option<mpsc::UnboundedReceiver<Change>>>,
    attempt_to_delete: RateLimitingQueue<String>,
    attempt_to_orphan: RateLimitingQueue<String>,
    synced: Vec<Box<dyn HasSynced + Send + Sync>>,
    mappings: RwLock<HashMap<(String, String), (ApiResource, Scope)>>,
    config: Config,
}

impl GarbageCollector {
    /// Registers the monitors on `factory`.
    pub fn new(factory: &InformerFactory, client: kube::Client, config: Config) -> Arc<Self> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut synced: Vec<Box<dyn HasSynced + Send + Sync>> = Vec::new();
        synced.push(Box::new(monitor::<Pod>(factory, &tx)));
        synced.push(Box::new(monitor::<ReplicaSet>(factory, &tx)));
        synced.push(Box::new(monitor::<Deployment>(factory, &tx)));
        synced.push(Box::new(monitor::<ReplicationController>(factory, &tx)));
        synced.push(Box::new(monitor::<ControllerRevision>(factory, &tx)));
        synced.push(Box::new(monitor::<ConfigMap>(factory, &tx)));
        synced.push(Box::new(monitor::<Service>(factory, &tx)));
        synced.push(Box::new(monitor::<Lease>(factory, &tx)));
        Arc::new(Self {
            client,
            graph: Arc::new(Mutex::new(Graph::default())),
            changes: tx,
            changes_rx: Mutex::new(Some(rx)),
            attempt_to_delete: RateLimitingQueue::new("garbage_collector_attempt_to_delete"),
            attempt_to_orphan: RateLimitingQueue::new("garbage_collector_attempt_to_orphan"),
            synced,
            mappings: RwLock::new(HashMap::new()),
            config,
        })
    }

    /// Whether every monitor has synced.
    pub fn has_synced(&self) -> bool {
        self.synced.iter().all(|s| s.has_synced())
    }

    /// Runs the graph builder and the workers until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        let synced: Vec<&dyn HasSynced> =
            self.synced.iter().map(|s| &**s as &dyn HasSynced).collect();
        if !wait_for_cache_sync("garbage collector", &synced, &shutdown).await {
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
        let deleters = {
            let this = Arc::clone(&self);
            worker::run(
                self.attempt_to_delete.clone(),
                self.config.workers.max(1),
                shutdown.clone(),
                None,
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
                None,
                move |uid: String| {
                    let this = Arc::clone(&this);
                    async move { this.attempt_to_orphan_item(&uid).await }
                },
            )
        };
        tokio::join!(deleters, orphaners);
        builder.abort();
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
        let discovery = Discovery::new(self.client.clone())
            .run()
            .await
            .map_err(|_| Error::NoMapping(format!("{api_version}/{kind}")))?;
        let mut mappings = self.mappings.write();
        for group in discovery.groups() {
            for version in group.versions() {
                for (ar, caps) in group.versioned_resources(version) {
                    mappings.insert((ar.api_version.clone(), ar.kind.clone()), (ar, caps.scope));
                }
            }
        }
        mappings
            .get(&key)
            .cloned()
            .ok_or_else(|| Error::NoMapping(format!("{api_version}/{kind}")))
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

    fn virtual_delete(&self, identity: Identity) {
        let _ = self.changes.send(Change::Delete(identity));
    }

    /// `attemptToDeleteItem`: decide whether the object with `uid` must go, and act.
    async fn attempt_to_delete_item(&self, uid: &str) -> Result<(), Error> {
        let Some(node) = self.graph.lock().get(uid).cloned() else {
            return Ok(());
        };
        if node.being_deleted && !node.deleting_dependents {
            return Ok(());
        }
        let Some(latest) = self.get_live(&node.identity).await? else {
            // Absent (or another object now has the name): process as deleted, which queues
            // its dependents.
            self.virtual_delete(node.identity.clone());
            return Ok(());
        };
        if !node.observed {
            // A virtual owner that exists but is not monitored: nothing to collect.
            return Ok(());
        }
        if node.deleting_dependents {
            return self.process_deleting_dependents(&node.identity).await;
        }
        let owners = latest.metadata.owner_references.clone().unwrap_or_default();
        if owners.is_empty() {
            return Ok(());
        }
        let mut classified = Classified::default();
        for owner in owners {
            let owner_identity = Identity {
                api_version: owner.api_version.clone(),
                kind: owner.kind.clone(),
                namespace: node.identity.namespace.clone(),
                name: owner.name.clone(),
                uid: owner.uid.clone(),
            };
            match self.get_live(&owner_identity).await? {
                None => classified.dangling.push(owner),
                Some(obj) => {
                    let waiting = obj.metadata.deletion_timestamp.is_some()
                        && obj
                            .metadata
                            .finalizers
                            .iter()
                            .flatten()
                            .any(|f| f == FINALIZER_DELETE_DEPENDENTS);
                    if waiting {
                        classified.waiting_for_dependents_deletion.push(owner);
                    } else {
                        classified.solid.push(owner);
                    }
                }
            }
        }
        let finalizers = latest.metadata.finalizers.clone().unwrap_or_default();
        let api = self.api_for(&node.identity).await?;
        match decide(&classified, !node.dependents.is_empty(), &finalizers) {
            Decision::Keep => Ok(()),
            Decision::PatchReferences { remove, unblock } => {
                let refs: Vec<_> = latest
                    .metadata
                    .owner_references
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|o| !remove.contains(&o.uid))
                    .map(|mut o| {
                        if unblock.contains(&o.uid) {
                            o.block_owner_deletion = Some(false);
                        }
                        o
                    })
                    .collect();
                let patch = json!({"metadata": {
                    "ownerReferences": refs,
                    "uid": node.identity.uid,
                    "resourceVersion": latest.metadata.resource_version,
                }});
                tracing::info!(object = %node.identity, ?remove, ?unblock, "removing dangling owner references");
                self.patch(&api, &node.identity, patch).await
            }
            Decision::Delete(policy) => {
                tracing::info!(object = %node.identity, policy, "deleting object whose owners are gone");
                self.delete(&api, &node.identity, policy).await
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
            let refs: Vec<_> = latest
                .metadata
                .owner_references
                .clone()
                .unwrap_or_default()
                .into_iter()
                .filter(|o| o.uid != owner.uid)
                .collect();
            let patch = json!({"metadata": {
                "ownerReferences": if refs.is_empty() { serde_json::Value::Null } else { json!(refs) },
                "uid": dependent.uid,
                "resourceVersion": latest.metadata.resource_version,
            }});
            let api = self.api_for(&dependent).await?;
            self.patch(&api, &dependent, patch).await?;
        }
        self.remove_finalizer(&owner, FINALIZER_ORPHAN).await
    }

    async fn patch(
        &self,
        api: &Api<DynamicObject>,
        identity: &Identity,
        patch: serde_json::Value,
    ) -> Result<(), Error> {
        match api
            .patch(
                &identity.name,
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(source) => Err(Error::Api {
                what: "patching",
                identity: identity.clone(),
                source,
            }),
        }
    }

    async fn delete(
        &self,
        api: &Api<DynamicObject>,
        identity: &Identity,
        policy: &str,
    ) -> Result<(), Error> {
        let dp = DeleteParams {
            propagation_policy: Some(match policy {
                "Orphan" => PropagationPolicy::Orphan,
                "Foreground" => PropagationPolicy::Foreground,
                _ => PropagationPolicy::Background,
            }),
            preconditions: Some(Preconditions {
                uid: Some(identity.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&identity.name, &dp).await {
            Ok(_) => Ok(()),
            // Gone already, or replaced by another object with the same name.
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
            Err(source) => Err(Error::Api {
                what: "deleting",
                identity: identity.clone(),
                source,
            }),
        }
    }

    /// Removes `finalizer` from the live object, with optimistic concurrency.
    async fn remove_finalizer(&self, identity: &Identity, finalizer: &str) -> Result<(), Error> {
        let api = self.api_for(identity).await?;
        for _ in 0..5 {
            let Some(latest) = self.get_live(identity).await? else {
                return Ok(());
            };
            let finalizers: Vec<String> = latest
                .metadata
                .finalizers
                .clone()
                .unwrap_or_default()
                .into_iter()
                .filter(|f| f != finalizer)
                .collect();
            if finalizers.len() == latest.metadata.finalizers.as_ref().map_or(0, |f| f.len()) {
                return Ok(());
            }
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
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(source) => {
                    return Err(Error::Api {
                        what: "removing a finalizer from",
                        identity: identity.clone(),
                        source,
                    })
                }
            }
        }
        Ok(())
    }
}

/// Feeds `K`'s informer notifications into the graph builder.
fn monitor<K: Monitored>(
    factory: &InformerFactory,
    tx: &mpsc::UnboundedSender<Change>,
) -> SharedInformer<K> {
    let informer = factory.informer::<K>();
    let tx = tx.clone();
    informer.add_event_handler(move |note: Notification<K>| {
        let change = match &note {
            Notification::Add(obj) => Change::Upsert(state_of(&**obj)),
            Notification::Update { new, .. } => Change::Upsert(state_of(&**new)),
            Notification::Delete(deleted) => Change::Delete(state_of(&**deleted.object()).identity),
        };
        let _ = tx.send(change);
    });
    informer
}
