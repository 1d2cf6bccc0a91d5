//! A small scheduler: binds pending pods to the node with the fewest pods among those they fit.
//!
//! One worker takes pending pods from a queue (kube-scheduler also schedules one pod at a time),
//! checks every cached node with the [`predicates`], and binds through `pods/{name}/binding`.
//! What each node's pods request is kept in a [`Cache`] from pod events, so choosing a node costs
//! O(nodes), not O(pods). Pods bound but not yet seen bound in the cache are *assumed* on their
//! node, so the next pod counts them. A pod that fits nowhere gets `PodScheduled=False` (reason
//! `Unschedulable`, with kube-scheduler's message) and is tried again when a node is added or
//! changes, when a bound pod goes away or finishes, and at the latest after five minutes.

pub mod cache;
pub mod pod_affinity;
pub mod predicates;
pub mod resources;
pub mod select;
pub mod volumes;
pub use rkcm_runtime::scheduling::{node_affinity, taints};

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use parking_lot::Mutex;
use rkcm_runtime::events::{EventRecorder, EventType};
use rkcm_runtime::informer::{InformerFactory, Notification, Store};
use rkcm_runtime::storage::{pod_pvc_index, POD_PVC_INDEX};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, Clock, ObjectKey, Shutdown};
use serde_json::json;

pub use cache::Cache;
pub use pod_affinity::InterPodAffinity;
pub use predicates::{fits, is_terminal, NodeUsage, Reason};
pub use select::{num_feasible_nodes_to_find, select_node, select_node_from, FitError, Selection};

/// Message of `PodScheduled=False` with reason `SchedulingGated`.
pub const GATED_MESSAGE: &str = "Scheduling is blocked due to non-empty scheduling gates";

/// True when `spec.schedulingGates` holds the pod back.
pub fn is_gated(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.scheduling_gates.as_ref())
        .is_some_and(|g| !g.is_empty())
}

/// Pod index of bound, unfinished pods with required anti-affinity terms (value `"true"`).
pub const ANTI_AFFINITY_INDEX: &str = "nodesim/requiredAntiAffinity";

/// Index function of [`ANTI_AFFINITY_INDEX`].
fn anti_affinity_index(pod: &Pod) -> Vec<String> {
    let relevant = !node_name_index(pod).is_empty()
        && !is_terminal(pod)
        && !pod_affinity::required_anti_affinity_terms(pod).is_empty();
    if relevant {
        vec!["true".to_string()]
    } else {
        Vec::new()
    }
}

use crate::config::Config;
use crate::error::{api_code, Error, Result};
use crate::kubelet::pod_status::{set_condition, POD_SCHEDULED};
use crate::kubelet::{node_name_index, pod_reference};
use crate::NODE_NAME_INDEX;

/// kube-scheduler's `podMaxInUnschedulablePodsDuration`: unschedulable pods are retried at least this often.
pub const UNSCHEDULABLE_RETRY: Duration = Duration::from_secs(300);

/// Binds pending pods whose `schedulerName` is this scheduler's.
pub struct Scheduler {
    client: Client,
    pods: Store<Pod>,
    nodes: Store<Node>,
    claims: Store<PersistentVolumeClaim>,
    volumes: Store<PersistentVolume>,
    classes: Store<StorageClass>,
    queue: RateLimitingQueue<ObjectKey>,
    /// Keys of pods that fit no node at their last attempt.
    unschedulable: Mutex<HashSet<ObjectKey>>,
    /// Per-node usage from pod events, with the pods this scheduler bound (kube's scheduler cache).
    cache: Mutex<Cache>,
    scheduler_name: String,
    clock: Arc<dyn Clock>,
    recorder: Mutex<Option<EventRecorder>>,
    /// Where the next pod's search for feasible nodes starts (`nextStartNodeIndex`).
    next_start_node: std::sync::atomic::AtomicUsize,
}

impl Scheduler {
    /// A scheduler fed by the pod and node informers of `informers`.
    pub fn new(informers: &InformerFactory, client: Client, config: &Config) -> Arc<Self> {
        let pod_informer = informers.informer::<Pod>();
        pod_informer.add_indexer(NODE_NAME_INDEX, node_name_index);
        pod_informer.add_indexer(ANTI_AFFINITY_INDEX, anti_affinity_index);
        pod_informer.add_indexer(POD_PVC_INDEX, pod_pvc_index);
        let node_informer = informers.informer::<Node>();
        let claim_informer = informers.informer::<PersistentVolumeClaim>();
        let volume_informer = informers.informer::<PersistentVolume>();
        let class_informer = informers.informer::<StorageClass>();
        let this = Arc::new(Self {
            client,
            pods: pod_informer.store(),
            nodes: node_informer.store(),
            claims: claim_informer.store(),
            volumes: volume_informer.store(),
            classes: class_informer.store(),
            queue: RateLimitingQueue::new("nodesim_scheduler"),
            unschedulable: Mutex::new(HashSet::new()),
            cache: Mutex::new(Cache::new()),
            scheduler_name: config.scheduler_name.clone(),
            clock: Arc::clone(&config.clock),
            recorder: Mutex::new(None),
            next_start_node: std::sync::atomic::AtomicUsize::new(0),
        });
        let weak = Arc::downgrade(&this);
        pod_informer.add_event_handler(move |note| {
            if let Some(scheduler) = weak.upgrade() {
                scheduler.handle_pod(note);
            }
        });
        let weak = Arc::downgrade(&this);
        node_informer.add_event_handler(move |note| {
            if let Some(scheduler) = weak.upgrade() {
                scheduler.handle_node(note);
            }
        });
        // VolumeBinding's queueing hints: a claim change wakes the pods using it, a volume or
        // class change every unschedulable pod.
        let weak = Arc::downgrade(&this);
        claim_informer.add_event_handler(move |note: Notification<PersistentVolumeClaim>| {
            let Some(scheduler) = weak.upgrade() else {
                return;
            };
            if let Notification::Add(c) | Notification::Update { new: c, .. } = note {
                let key = ObjectKey::from_obj(&*c).to_string();
                for pod in scheduler.pods.by_index(POD_PVC_INDEX, &key) {
                    if scheduler.responsible_for(&pod) {
                        scheduler.queue.add(ObjectKey::from_obj(&*pod));
                    }
                }
            }
        });
        let weak = Arc::downgrade(&this);
        volume_informer.add_event_handler(move |note: Notification<PersistentVolume>| {
            if let (Some(scheduler), Notification::Add(_) | Notification::Update { .. }) =
                (weak.upgrade(), &note)
            {
                scheduler.retry_unschedulable();
            }
        });
        let weak = Arc::downgrade(&this);
        class_informer.add_event_handler(move |note: Notification<StorageClass>| {
            if let (Some(scheduler), Notification::Add(_)) = (weak.upgrade(), &note) {
                scheduler.retry_unschedulable();
            }
        });
        this
    }

    /// Records `Scheduled` and `FailedScheduling` events with `recorder` from now on.
    pub fn set_recorder(&self, recorder: EventRecorder) {
        *self.recorder.lock() = Some(recorder);
    }

    /// Stops recording events and drops the recorder, so that its broadcaster can shut down.
    pub fn stop_recording(&self) {
        self.recorder.lock().take();
    }

    fn event(&self, pod: &Pod, type_: EventType, reason: &str, message: String) {
        if let Some(recorder) = self.recorder.lock().clone() {
            recorder.event(&pod_reference(pod), type_, reason, message);
        }
    }

    /// Runs the scheduling loop until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        let queue = self.queue.clone();
        worker::run(
            queue,
            1,
            shutdown,
            worker::ErrorPolicy::retry_forever(tracing::Level::DEBUG),
            move |key: ObjectKey| {
                let this = Arc::clone(&self);
                async move { this.sync(&key).await }
            },
        )
        .await;
    }

    /// True when `pod` waits for this scheduler: unbound, alive, and asking for us (possibly gated).
    pub fn responsible_for(&self, pod: &Pod) -> bool {
        let Some(spec) = &pod.spec else {
            return false;
        };
        let unbound = spec.node_name.as_deref().unwrap_or_default().is_empty();
        let ours = match spec.scheduler_name.as_deref() {
            None | Some("") => true,
            Some(name) => name == self.scheduler_name,
        };
        unbound && ours && pod.metadata.deletion_timestamp.is_none() && !is_terminal(pod)
    }

    fn handle_pod(&self, note: Notification<Pod>) {
        match note {
            Notification::Add(pod) => {
                self.cache.lock().observe(&ObjectKey::from_obj(&*pod), &pod);
                self.observe_pod(&pod);
            }
            Notification::Update { old, new } => {
                self.cache.lock().observe(&ObjectKey::from_obj(&*new), &new);
                self.observe_pod(&new);
                let bound = |p: &Pod| !node_name_index(p).is_empty();
                let freed = bound(&new) && !is_terminal(&old) && is_terminal(&new);
                if freed {
                    self.retry_unschedulable();
                }
            }
            Notification::Delete(deleted) => {
                let pod = deleted.object();
                let key = ObjectKey::from_obj(&**pod);
                self.unschedulable.lock().remove(&key);
                self.cache.lock().remove(&key);
                if !node_name_index(pod).is_empty() && !is_terminal(pod) {
                    self.retry_unschedulable();
                }
            }
        }
    }

    fn observe_pod(&self, pod: &Arc<Pod>) {
        let key = ObjectKey::from_obj(&**pod);
        if self.responsible_for(pod) {
            self.queue.add(key);
            return;
        }
        self.unschedulable.lock().remove(&key);
    }

    fn handle_node(&self, note: Notification<Node>) {
        let relevant = match &note {
            Notification::Add(_) => true,
            Notification::Update { old, new } => {
                old.metadata.labels != new.metadata.labels
                    || old.spec != new.spec
                    || old.status.as_ref().map(|s| &s.allocatable)
                        != new.status.as_ref().map(|s| &s.allocatable)
            }
            Notification::Delete(_) => false,
        };
        if relevant {
            self.retry_unschedulable();
        }
    }

    fn retry_unschedulable(&self) {
        for key in self.unschedulable.lock().iter() {
            self.queue.add(key.clone());
        }
    }

    /// The inter-pod (anti-)affinity state for placing `pod`, counting assumed pods where they were bound.
    /// Lists every pod only when `pod` has affinity terms of its own.
    fn inter_pod_affinity(&self, pod: &Pod, nodes: &[Arc<Node>]) -> InterPodAffinity {
        let by_name: HashMap<&str, &Node> = nodes
            .iter()
            .map(|n| (n.metadata.name.as_deref().unwrap_or_default(), &**n))
            .collect();
        let has_terms = !pod_affinity::required_affinity_terms(pod).is_empty()
            || !pod_affinity::required_anti_affinity_terms(pod).is_empty();
        let assumed = self.cache.lock().assumed();
        let place = |p: Arc<Pod>, node: String| by_name.get(node.as_str()).map(|n| (p, *n));
        let bound: Vec<(Arc<Pod>, &Node)> = if has_terms {
            self.pods
                .list()
                .into_iter()
                .filter(|p| !is_terminal(p))
                .filter_map(|p| {
                    let node = node_name_index(&p).pop()?;
                    place(p, node)
                })
                .chain(
                    assumed
                        .iter()
                        .filter_map(|(p, n)| place(Arc::clone(p), n.clone())),
                )
                .collect()
        } else {
            Vec::new()
        };
        let with_anti: Vec<(Arc<Pod>, &Node)> = self
            .pods
            .by_index(ANTI_AFFINITY_INDEX, "true")
            .into_iter()
            .filter_map(|p| {
                let node = node_name_index(&p).pop()?;
                place(p, node)
            })
            .chain(
                assumed
                    .iter()
                    .filter(|(p, _)| !pod_affinity::required_anti_affinity_terms(p).is_empty())
                    .filter_map(|(p, n)| place(Arc::clone(p), n.clone())),
            )
            .collect();
        InterPodAffinity::new(
            pod,
            bound.iter().map(|(p, n)| (&**p, *n)),
            with_anti.iter().map(|(p, n)| (&**p, *n)),
        )
    }

    #[tracing::instrument(skip(self), fields(component = "nodesim-scheduler", pod = %key))]
    async fn sync(&self, key: &ObjectKey) -> Result<()> {
        let Some(pod) = self.pods.get(key) else {
            self.unschedulable.lock().remove(key);
            return Ok(());
        };
        if !self.responsible_for(&pod) {
            self.unschedulable.lock().remove(key);
            return Ok(());
        }
        if self.cache.lock().is_assumed(key) {
            // Bound already; waiting for the cache to show it.
            return Ok(());
        }
        if is_gated(&pod) {
            // The scheduler's PreEnqueue: the pod waits until its gates are removed (an update).
            self.unschedulable.lock().remove(key);
            self.set_not_scheduled(key, &pod, "SchedulingGated", GATED_MESSAGE)
                .await?;
            return Ok(());
        }
        let nodes = self.nodes.list();
        let namespace = key.namespace_str();
        let class = |n: &str| self.classes.get(&ObjectKey::cluster(n));
        let pod_volumes = match volumes::pod_volumes(
            &pod,
            |n| self.claims.get(&ObjectKey::new(namespace, n)),
            |n| self.volumes.get(&ObjectKey::cluster(n)),
            class,
        ) {
            Ok(v) => v,
            Err(message) => {
                // VolumeBinding's PreFilter: no node is even tried.
                let message = if nodes.is_empty() {
                    "no nodes available to schedule pods".to_string()
                } else {
                    format!("0/{} nodes are available: {message}.", nodes.len())
                };
                return self.mark_unschedulable(key, &pod, message).await;
            }
        };
        let all_volumes = self.volumes.list();
        let mut volume_reasons: BTreeMap<Reason, usize> = BTreeMap::new();
        let mut plans: HashMap<String, Vec<volumes::Provision>> = HashMap::new();
        let feasible: Vec<Arc<Node>> = nodes
            .iter()
            .filter(
                |n| match volumes::node_fits(&pod_volumes, n, &all_volumes, class) {
                    Ok(plan) => {
                        if !plan.is_empty() {
                            plans.insert(n.metadata.name.clone().unwrap_or_default(), plan);
                        }
                        true
                    }
                    Err(reason) => {
                        *volume_reasons.entry(reason).or_insert(0) += 1;
                        false
                    }
                },
            )
            .cloned()
            .collect();
        let candidates: Vec<(&Node, NodeUsage)> = {
            let cache = self.cache.lock();
            feasible
                .iter()
                .map(|n| {
                    let usage = cache.usage(n.metadata.name.as_deref().unwrap_or_default());
                    (&**n, usage)
                })
                .collect()
        };
        let affinity = self.inter_pod_affinity(&pod, &nodes);
        use std::sync::atomic::Ordering;
        let start = self.next_start_node.load(Ordering::Relaxed);
        let selection = select_node_from(&pod, &candidates, &affinity, start);
        if !candidates.is_empty() {
            let next = (start + selection.processed) % candidates.len();
            self.next_start_node.store(next, Ordering::Relaxed);
        }
        match selection.node {
            Ok(node) => {
                let node = node.metadata.name.clone().unwrap_or_default();
                if !pod_volumes.delayed.is_empty() {
                    // Reserve + PreBind: the claims get their volumes on this node first; the
                    // pod is bound once they are all Bound (a claim update requeues it).
                    let plan = plans.remove(&node).unwrap_or_default();
                    return self
                        .prepare_volumes(key, &pod_volumes.delayed, &plan, &node)
                        .await;
                }
                self.bind(key, &pod, &node).await
            }
            Err(mut fit) => {
                fit.num_nodes = nodes.len();
                for (reason, count) in volume_reasons {
                    *fit.reasons.entry(reason).or_insert(0) += count;
                }
                self.mark_unschedulable(key, &pod, fit.to_string()).await
            }
        }
    }

    /// Gives the pod's delayed claims their volumes on `node`: binds a chosen Available volume
    /// to its claim, or selects the node on a claim to be provisioned (`BindPodVolumes`).
    async fn prepare_volumes(
        &self,
        key: &ObjectKey,
        claims: &[Arc<PersistentVolumeClaim>],
        plan: &[volumes::Provision],
        node: &str,
    ) -> Result<()> {
        let volume_api: Api<PersistentVolume> = Api::all(self.client.clone());
        let claim_api: Api<PersistentVolumeClaim> =
            Api::namespaced(self.client.clone(), key.namespace_str());
        for (claim, provision) in claims.iter().zip(plan) {
            let claim_name = claim.metadata.name.clone().unwrap_or_default();
            let result = match provision {
                volumes::Provision::Volume(volume) => match volumes::volume_bound_to(volume, claim)
                {
                    Some(bound) => {
                        let name = volume.metadata.name.clone().unwrap_or_default();
                        volume_api
                            .replace(&name, &PostParams::default(), &bound)
                            .await
                            .map(|_| ())
                    }
                    None => Ok(()),
                },
                volumes::Provision::Dynamic => {
                    let selected = claim
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(rkcm_runtime::storage::ANN_SELECTED_NODE));
                    if selected.map(String::as_str) == Some(node) {
                        Ok(())
                    } else {
                        let patch = json!({"metadata": {
                            "resourceVersion": claim.metadata.resource_version,
                            "annotations": {rkcm_runtime::storage::ANN_SELECTED_NODE: node},
                        }});
                        claim_api
                            .patch(&claim_name, &PatchParams::default(), &Patch::Merge(&patch))
                            .await
                            .map(|_| ())
                    }
                }
            };
            match result {
                Ok(()) => {}
                // A stale claim or volume: the informer brings the new one and a retry.
                Err(e) if matches!(api_code(&e), Some(404 | 409)) => {}
                Err(source) => {
                    return Err(Error::PodStatus {
                        pod: key.to_string(),
                        source,
                    })
                }
            }
        }
        tracing::debug!(pod = %key, node, "waiting for the pod's claims to be bound");
        Ok(())
    }

    async fn bind(&self, key: &ObjectKey, pod: &Arc<Pod>, node: &str) -> Result<()> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), key.namespace_str());
        let binding = json!({
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": { "name": key.name, "namespace": key.namespace_str(), "uid": pod.metadata.uid },
            "target": { "apiVersion": "v1", "kind": "Node", "name": node },
        });
        self.cache.lock().assume(key.clone(), Arc::clone(pod), node);
        let result: Result<serde_json::Value, kube::Error> = api
            .create_subresource("binding", &key.name, &PostParams::default(), &binding)
            .await;
        match result {
            Ok(_) => {
                self.unschedulable.lock().remove(key);
                tracing::debug!(pod = %key, node, "bound");
                self.event(
                    pod,
                    EventType::Normal,
                    "Scheduled",
                    format!("Successfully assigned {key} to {node}"),
                );
                Ok(())
            }
            // Deleted meanwhile, or bound by someone else: the informer brings the outcome.
            Err(e) if matches!(api_code(&e), Some(404 | 409)) => {
                self.cache.lock().forget(key);
                Ok(())
            }
            Err(source) => {
                self.cache.lock().forget(key);
                Err(Error::Bind {
                    pod: key.to_string(),
                    node: node.to_string(),
                    source,
                })
            }
        }
    }

    async fn mark_unschedulable(&self, key: &ObjectKey, pod: &Pod, message: String) -> Result<()> {
        self.unschedulable.lock().insert(key.clone());
        self.queue.add_after(key.clone(), UNSCHEDULABLE_RETRY);
        if self
            .set_not_scheduled(key, pod, "Unschedulable", &message)
            .await?
        {
            tracing::debug!(pod = %key, %message, "unschedulable");
            self.event(pod, EventType::Warning, "FailedScheduling", message);
        }
        Ok(())
    }

    /// Sets `PodScheduled=False` with `reason` and `message` unless the pod already says so.
    /// Returns whether it wrote.
    async fn set_not_scheduled(
        &self,
        key: &ObjectKey,
        pod: &Pod,
        reason: &str,
        message: &str,
    ) -> Result<bool> {
        let mut conditions = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.clone())
            .unwrap_or_default();
        let current = conditions.iter().find(|c| c.type_ == POD_SCHEDULED);
        let unchanged = current.is_some_and(|c| {
            c.status == "False"
                && c.reason.as_deref() == Some(reason)
                && c.message.as_deref() == Some(message)
        });
        if unchanged {
            return Ok(false);
        }
        set_condition(
            &mut conditions,
            POD_SCHEDULED,
            false,
            Some(reason),
            Some(message.to_string()),
            self.clock.now(),
        );
        let patch = json!({
            "metadata": { "uid": pod.metadata.uid },
            "status": { "conditions": conditions },
        });
        let api: Api<Pod> = Api::namespaced(self.client.clone(), key.namespace_str());
        match api
            .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if api_code(&e) == Some(404) => Ok(false),
            Err(source) => Err(Error::PodStatus {
                pod: key.to_string(),
                source,
            }),
        }
    }
}
