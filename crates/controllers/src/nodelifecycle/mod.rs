//! The node lifecycle controller (`pkg/controller/nodelifecycle`): watches kubelets' heartbeats
//! and acts on nodes that stopped reporting.
//!
//! Every `--node-monitor-period` it checks each node's Ready condition heartbeat and its Lease in
//! `kube-node-lease` ([`health`]): after `--node-monitor-grace-period` without either, the node's
//! Ready, MemoryPressure, DiskPressure and PIDPressure conditions become `Unknown`
//! (`NodeStatusUnknown`, "Kubelet stopped posting node status."), a `NodeNotReady` event is
//! recorded and the node's pods are marked not ready ([`pods`]). Not-ready nodes are queued per
//! zone for the `node.kubernetes.io/not-ready` or `…/unreachable` NoExecute taint, at
//! `--node-eviction-rate` (slower or not at all when a zone is disrupted, [`zone`],
//! [`timed_queue`]); the taint-eviction controller then evicts their pods. A node that is Ready
//! again loses both taints at once. Independently, every node change brings the NoSchedule taints
//! mirroring its conditions and `spec.unschedulable` up to date ([`taints`]).

pub mod health;
pub mod metrics;
pub mod pods;
pub mod taints;
pub mod timed_queue;
pub mod zone;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::Client;
use parking_lot::Mutex;
use rkcm_runtime::events::{EventRecorder, EventType};
use rkcm_runtime::informer::{wait_for_cache_sync, InformerFactory, Notification, SharedInformer};
use rkcm_runtime::worker::{self, ErrorPolicy};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{api_error, Clock, ObjectKey, Shutdown, SystemClock};
use serde_json::json;

use self::health::{HealthCheck, NodeHealth};
use self::taints::{
    no_schedule_diff, node_taints, not_ready_no_execute, swap_taints, taint_exists,
    unreachable_no_execute,
};
use self::timed_queue::RateLimitedTimedQueue;
use self::zone::{compute_zone_state, zone_key, Rates, ZoneState};

/// Name of the pod index by `spec.nodeName` (`nodeNameKeyIndex`).
pub const POD_NODE_NAME_INDEX: &str = "spec.nodeName";
/// Namespace of the node leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
/// Label keeping a node out of the zone disruption accounting.
pub const LABEL_NODE_DISRUPTION_EXCLUSION: &str = "node.kubernetes.io/exclude-disruption";
/// How often the NoExecute tainting queues are served (`scheduler.NodeEvictionPeriod`).
pub const NODE_EVICTION_PERIOD: Duration = Duration::from_millis(100);
/// Workers of the node update (NoSchedule tainting) queue (`nodeUpdateWorkerSize`).
pub const NODE_UPDATE_WORKERS: usize = 8;
/// Workers of the pod update queue (`podUpdateWorkerSize`).
pub const POD_UPDATE_WORKERS: usize = 4;
/// Attempts at writing a node's taints before giving up until the next pass
/// (`UpdateTaintBackoff.Steps`).
const TAINT_UPDATE_RETRIES: usize = 5;
/// Base pause between two attempts at writing a node's taints (`UpdateTaintBackoff.Duration`,
/// jittered by up to as much again).
const TAINT_UPDATE_BACKOFF: Duration = Duration::from_millis(100);
/// Attempts at writing a node's health before skipping it for this pass
/// (`scheduler.NodeHealthUpdateRetry`).
pub const NODE_HEALTH_UPDATE_RETRY: usize = 5;
/// Pause before re-reading a node whose health write failed (`retrySleepTime`).
const RETRY_SLEEP_TIME: Duration = Duration::from_millis(20);

/// The `spec.nodeName` index function.
pub fn pod_node_name(pod: &Pod) -> Vec<String> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty())
        .into_iter()
        .collect()
}

/// Settings of the [`NodeLifecycleController`], from kube-controller-manager's flags.
#[derive(Clone)]
pub struct Config {
    /// `--node-monitor-period` (5s).
    pub node_monitor_period: Duration,
    /// `--node-monitor-grace-period` (50s).
    pub node_monitor_grace_period: Duration,
    /// `--node-startup-grace-period` (1m).
    pub node_startup_grace_period: Duration,
    /// `--node-eviction-rate`, `--secondary-node-eviction-rate`, `--large-cluster-size-threshold`.
    pub rates: Rates,
    /// `--unhealthy-zone-threshold` (0.55).
    pub unhealthy_zone_threshold: f32,
    /// Wall clock.
    pub clock: Arc<dyn Clock>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            node_monitor_period: Duration::from_secs(5),
            node_monitor_grace_period: Duration::from_secs(50),
            node_startup_grace_period: Duration::from_secs(60),
            rates: Rates {
                eviction: 0.1,
                secondary: 0.01,
                large_cluster_threshold: 50,
            },
            unhealthy_zone_threshold: 0.55,
            clock: Arc::new(SystemClock),
        }
    }
}

/// Errors writing nodes and pods.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A node's taints could not be written.
    #[error("failed to swap taints of node {node}")]
    Taints {
        /// The node.
        node: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// A node's status could not be written.
    #[error("error updating node {node}")]
    NodeStatus {
        /// The node.
        node: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
    /// A pod's Ready condition could not be written.
    #[error("unable to mark pod {pod} NotReady")]
    PodStatus {
        /// The pod.
        pod: ObjectKey,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

#[derive(Default)]
struct State {
    known: HashMap<String, Arc<Node>>,
    health: HashMap<String, NodeHealth>,
    zone_states: HashMap<String, ZoneState>,
    tainters: HashMap<String, RateLimitedTimedQueue>,
    nodes_to_retry: HashSet<String>,
}

/// The node lifecycle controller. One per cluster (it runs under the manager's leader election).
pub struct NodeLifecycleController {
    client: Client,
    nodes: SharedInformer<Node>,
    pods: SharedInformer<Pod>,
    leases: SharedInformer<Lease>,
    recorder: EventRecorder,
    config: Config,
    state: Mutex<State>,
    node_queue: RateLimitingQueue<String>,
    pod_queue: RateLimitingQueue<ObjectKey>,
}

impl NodeLifecycleController {
    /// The controller over the factory's Node, Pod and Lease informers.
    pub fn new(
        factory: &InformerFactory,
        client: Client,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let _ = metrics::metrics();
        let nodes = factory.informer::<Node>();
        let pods = factory.informer::<Pod>();
        let leases = factory.informer::<Lease>();
        pods.add_indexer(POD_NODE_NAME_INDEX, pod_node_name);
        let this = Arc::new(Self {
            client,
            nodes,
            pods,
            leases,
            recorder,
            config,
            state: Mutex::new(State::default()),
            node_queue: RateLimitingQueue::new("node_lifecycle_controller"),
            pod_queue: RateLimitingQueue::new("node_lifecycle_controller_pods"),
        });
        let weak = Arc::downgrade(&this);
        this.nodes.add_event_handler(move |note| {
            let Some(this) = weak.upgrade() else { return };
            match note {
                Notification::Add(n) | Notification::Update { new: n, .. } => {
                    if let Some(name) = n.metadata.name.clone() {
                        this.node_queue.add(name);
                    }
                }
                Notification::Delete(d) => {
                    if let Some(name) = d.object().metadata.name.as_deref() {
                        this.state.lock().nodes_to_retry.remove(name);
                    }
                }
            }
        });
        let weak = Arc::downgrade(&this);
        this.pods.add_event_handler(move |note| {
            let Some(this) = weak.upgrade() else { return };
            let (old, new) = match note {
                Notification::Add(p) => (None, p),
                Notification::Update { old, new } => (Some(old), new),
                Notification::Delete(_) => return,
            };
            let node = new.spec.as_ref().and_then(|s| s.node_name.as_deref());
            let old_node = old
                .as_ref()
                .and_then(|o| o.spec.as_ref())
                .and_then(|s| s.node_name.as_deref());
            if node.is_some_and(|n| !n.is_empty()) && (old.is_none() || node != old_node) {
                this.pod_queue.add(ObjectKey::from_obj(&*new));
            }
        });
        this
    }

    /// Waits for the caches, then runs the health monitor, the NoExecute tainting pass and the
    /// node and pod workers until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        tracing::info!(
            controller = "node-lifecycle-controller",
            "starting controller"
        );
        if wait_for_cache_sync("taint", &[&self.leases, &self.nodes, &self.pods], &shutdown).await {
            let mut tasks = tokio::task::JoinSet::new();
            let this = Arc::clone(&self);
            tasks.spawn(worker::run(
                self.node_queue.clone(),
                NODE_UPDATE_WORKERS,
                shutdown.clone(),
                ErrorPolicy::handle_error(),
                move |name: String| {
                    let this = Arc::clone(&this);
                    async move { this.no_schedule_tainting_pass(&name).await }
                },
            ));
            let this = Arc::clone(&self);
            tasks.spawn(worker::run(
                self.pod_queue.clone(),
                POD_UPDATE_WORKERS,
                shutdown.clone(),
                ErrorPolicy::handle_error(),
                move |key: ObjectKey| {
                    let this = Arc::clone(&this);
                    async move { this.process_pod(&key).await }
                },
            ));
            let this = Arc::clone(&self);
            let stop = shutdown.clone();
            tasks.spawn(async move {
                let mut tick = tokio::time::interval(NODE_EVICTION_PERIOD);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tick.tick() => this.no_execute_tainting_pass().await,
                    }
                }
            });
            let this = Arc::clone(&self);
            let stop = shutdown.clone();
            tasks.spawn(async move {
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = this.monitor_node_health() => {}
                    }
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(this.config.node_monitor_period) => {}
                    }
                }
            });
            while tasks.join_next().await.is_some() {}
        }
        tracing::info!(
            controller = "node-lifecycle-controller",
            "shutting down controller"
        );
    }

    /// Brings the NoSchedule taints of node `name` in line with its conditions
    /// (`doNoScheduleTaintingPass`).
    pub async fn no_schedule_tainting_pass(&self, name: &str) -> Result<(), Error> {
        let Some(node) = self.nodes.store().get(&ObjectKey::cluster(name)) else {
            return Ok(());
        };
        let (add, del) = no_schedule_diff(&node);
        if add.is_empty() && del.is_empty() {
            return Ok(());
        }
        self.swap_node_taints(&node, &add, &del).await.map(|_| ())
    }

    /// Adds `add` and removes `remove` from the node's taints, retrying conflicts on a fresh copy
    /// (`SwapNodeControllerTaint`). Returns whether the taints changed.
    pub async fn swap_node_taints(
        &self,
        node: &Node,
        add: &[Taint],
        remove: &[Taint],
    ) -> Result<bool, Error> {
        let name = node.metadata.name.clone().unwrap_or_default();
        let api: Api<Node> = Api::all(self.client.clone());
        let mut current = node.clone();
        for attempt in 0..TAINT_UPDATE_RETRIES {
            if attempt > 0 {
                let jitter = rand::random_range(0..=TAINT_UPDATE_BACKOFF.as_millis() as u64);
                tokio::time::sleep(TAINT_UPDATE_BACKOFF + Duration::from_millis(jitter)).await;
                current = api.get(&name).await.map_err(|source| Error::Taints {
                    node: name.clone(),
                    source,
                })?;
            }
            let Some(new) =
                swap_taints(node_taints(&current), add, remove, self.config.clock.now())
            else {
                return Ok(false);
            };
            let taints = if new.is_empty() {
                json!(null)
            } else {
                json!(new)
            };
            let patch = json!({
                "metadata": { "resourceVersion": current.metadata.resource_version },
                "spec": { "taints": taints },
            });
            match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return Ok(true),
                Err(e) if api_error::is_conflict(&e) && attempt + 1 < TAINT_UPDATE_RETRIES => {}
                Err(source) => {
                    return Err(Error::Taints {
                        node: name.clone(),
                        source,
                    })
                }
            }
        }
        Ok(false)
    }

    /// Marks a pod newly bound to a not-ready node not ready (`processPod`).
    async fn process_pod(&self, key: &ObjectKey) -> Result<(), Error> {
        let Some(pod) = self.pods.store().get(key) else {
            return Ok(());
        };
        let Some(node_name) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) else {
            return Ok(());
        };
        let ready = {
            let state = self.state.lock();
            match state.health.get(&node_name) {
                Some(h) => h.ready.clone(),
                None => return Ok(()),
            }
        };
        if self
            .nodes
            .store()
            .get(&ObjectKey::cluster(&node_name))
            .is_none()
        {
            return Ok(());
        }
        match ready {
            Some(r) if r.status != "True" => self.mark_pods_not_ready(&[pod], &node_name).await,
            _ => Ok(()),
        }
    }

    /// Sets the Ready condition of `pods` on `node_name` to False (`MarkPodsNotReady`); records
    /// `NodeNotReady` on each pod changed.
    pub async fn mark_pods_not_ready(
        &self,
        pods: &[Arc<Pod>],
        node_name: &str,
    ) -> Result<(), Error> {
        let mut first_error = None;
        for pod in pods {
            let Some(status) = pods::not_ready_status(pod, node_name, self.config.clock.now())
            else {
                continue;
            };
            let key = ObjectKey::from_obj(&**pod);
            tracing::debug!(pod = %key, "updating ready status of pod to false");
            let api: Api<Pod> = Api::namespaced(self.client.clone(), key.namespace_str());
            // UpdateStatus of the cached pod: its resourceVersion makes a racing write a conflict.
            let mut updated = (**pod).clone();
            updated.status = Some(status);
            let written = api
                .replace_status(&key.name, &PostParams::default(), &updated)
                .await
                .map(|_| ());
            match written {
                Err(e) if api_error::is_not_found(&e) => continue,
                Err(source) => {
                    tracing::info!(pod = %key, error = %source, "failed to update status for pod");
                    first_error.get_or_insert(Error::PodStatus {
                        pod: key.clone(),
                        source,
                    });
                }
                Ok(()) => {}
            }
            // As kube, recorded once the update was tried on a pod that still exists.
            self.recorder.event_for(
                &**pod,
                EventType::Warning,
                "NodeNotReady",
                "Node is not ready",
            );
        }
        first_error.map_or(Ok(()), Err)
    }

    /// One pass over every node (`monitorNodeHealth`).
    pub async fn monitor_node_health(&self) {
        let nodes = self.nodes.store().list();
        let (added, deleted) = {
            let mut state = self.state.lock();
            let names: HashSet<&str> = nodes
                .iter()
                .filter_map(|n| n.metadata.name.as_deref())
                .collect();
            let added: Vec<Arc<Node>> = nodes
                .iter()
                .filter(|n| {
                    n.metadata
                        .name
                        .as_deref()
                        .is_some_and(|name| !state.known.contains_key(name))
                })
                .cloned()
                .collect();
            let deleted: Vec<Arc<Node>> = state
                .known
                .iter()
                .filter(|(name, _)| !names.contains(name.as_str()))
                .map(|(_, n)| Arc::clone(n))
                .collect();
            for node in &nodes {
                self.add_tainter_for_zone(&mut state, node);
            }
            for node in &added {
                if let Some(name) = node.metadata.name.clone() {
                    state.known.insert(name, Arc::clone(node));
                }
            }
            for node in &deleted {
                if let Some(name) = node.metadata.name.as_deref() {
                    state.known.remove(name);
                    state.health.remove(name);
                }
            }
            (added, deleted)
        };
        for node in &added {
            let name = node.metadata.name.as_deref().unwrap_or_default();
            tracing::info!(node = name, "controller observed a new Node");
            self.recorder.event_for(
                &**node,
                EventType::Normal,
                "RegisteredNode",
                format!("Registered Node {name} in Controller"),
            );
            if let Err(e) = self.mark_node_as_reachable(node).await {
                tracing::error!(error = %api_error::Chain(&e), "failed to remove taints from node");
            }
        }
        for node in &deleted {
            let name = node.metadata.name.as_deref().unwrap_or_default();
            tracing::info!(node = name, "controller observed a Node deletion");
            self.recorder.event_for(
                &**node,
                EventType::Normal,
                "RemovingNode",
                format!("Removing Node {name} from Controller"),
            );
        }

        let mut zone_conditions: HashMap<
            String,
            Vec<Option<k8s_openapi::api::core::v1::NodeCondition>>,
        > = HashMap::new();
        for node in &nodes {
            let Some((node, check)) = self.update_node_health(Arc::clone(node)).await else {
                continue;
            };
            let node = &node;
            let excluded = node
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(LABEL_NODE_DISRUPTION_EXCLUSION));
            if !excluded {
                zone_conditions
                    .entry(zone_key(node))
                    .or_default()
                    .push(check.current_ready.clone());
            }
            let Some(current) = &check.current_ready else {
                continue;
            };
            let name = node.metadata.name.clone().unwrap_or_default();
            self.process_taint_based_eviction(node, &check.observed_ready.status)
                .await;
            let needs_retry = self.state.lock().nodes_to_retry.contains(&name);
            let became_not_ready =
                current.status != "True" && check.observed_ready.status == "True";
            if became_not_ready {
                self.recorder.event_for(
                    &**node,
                    EventType::Normal,
                    "NodeNotReady",
                    format!("Node {name} status is now: NodeNotReady"),
                );
            }
            if became_not_ready || (needs_retry && check.observed_ready.status != "True") {
                let pods = self.pods.store().by_index(POD_NODE_NAME_INDEX, &name);
                if let Err(e) = self.mark_pods_not_ready(&pods, &name).await {
                    tracing::error!(node = %name, error = %api_error::Chain(&e), "unable to mark all pods NotReady on node; queuing for retry");
                    self.state.lock().nodes_to_retry.insert(name);
                    continue;
                }
            }
            self.state.lock().nodes_to_retry.remove(&name);
        }
        self.handle_disruption(&zone_conditions, &nodes).await;
    }

    /// Checks one node and writes its conditions when they went Unknown; a failed write is
    /// retried on a fresh copy of the node (`wait.PollImmediate(retrySleepTime, …)` around
    /// `tryUpdateNodeHealth`). Returns the node as last read and what the check found, or `None`
    /// when the node is skipped for this pass.
    async fn update_node_health(&self, node: Arc<Node>) -> Option<(Arc<Node>, HealthCheck)> {
        let name = node.metadata.name.clone().unwrap_or_default();
        let api: Api<Node> = Api::all(self.client.clone());
        let mut node = node;
        let mut attempt = 1;
        loop {
            let error = match self.try_update_node_health(&api, &node).await {
                Ok(check) => return Some((node, check)),
                Err(e) => e,
            };
            if attempt >= NODE_HEALTH_UPDATE_RETRY {
                tracing::error!(node = %name, error = %api_error::Chain(&error), "update health of Node from Controller error, Skipping - no pods will be evicted");
                return None;
            }
            attempt += 1;
            tokio::time::sleep(RETRY_SLEEP_TIME).await;
            match api.get(&name).await {
                Ok(fresh) => node = Arc::new(fresh),
                Err(e) => {
                    tracing::error!(node = %name, error = %e, "failed while getting a Node to retry updating node health. Probably Node was deleted");
                    return None;
                }
            }
        }
    }

    /// One health check of `node`; when its conditions went Unknown, `UpdateStatus` of the node
    /// with its resourceVersion, so that a kubelet's racing write makes it a conflict
    /// (`tryUpdateNodeHealth`).
    async fn try_update_node_health(
        &self,
        api: &Api<Node>,
        node: &Node,
    ) -> Result<HealthCheck, Error> {
        let name = node.metadata.name.clone().unwrap_or_default();
        let now = self.config.clock.now();
        let lease_renew = self
            .leases
            .store()
            .get(&ObjectKey::new(NODE_LEASE_NAMESPACE, &name))
            .and_then(|l| {
                l.spec
                    .as_ref()
                    .and_then(|s| s.renew_time.as_ref())
                    .map(|t| t.0)
            });
        let saved = self.state.lock().health.get(&name).cloned();
        let check = health::check_node_health(
            node,
            saved.as_ref(),
            lease_renew,
            now,
            self.config.node_monitor_grace_period,
            self.config.node_startup_grace_period,
        );
        let Some(conditions) = &check.new_conditions else {
            self.state.lock().health.insert(name, check.health.clone());
            return Ok(check);
        };
        let mut updated = node.clone();
        updated.status.get_or_insert_default().conditions = Some(conditions.clone());
        let written = api
            .replace_status(&name, &PostParams::default(), &updated)
            .await
            .map(|_| ());
        match written {
            Ok(()) => {
                self.state.lock().health.insert(name, check.written(now));
                Ok(check)
            }
            Err(source) => {
                tracing::error!(node = %name, error = %source, "error updating node");
                self.state.lock().health.insert(name.clone(), check.health);
                Err(Error::NodeStatus { node: name, source })
            }
        }
    }

    fn add_tainter_for_zone(&self, state: &mut State, node: &Node) {
        let zone = zone_key(node);
        if !state.zone_states.contains_key(&zone) {
            tracing::info!(zone = %zone.replace('\0', ""), "initializing eviction metric for zone");
            state.zone_states.insert(zone.clone(), ZoneState::Initial);
            state.tainters.insert(
                zone.clone(),
                RateLimitedTimedQueue::new(self.config.rates.eviction),
            );
            let _ = metrics::metrics()
                .evictions
                .get_or_create(&metrics::zone(&zone));
        }
    }

    /// Queues a not-ready node for its NoExecute taint, swaps an existing one at once, or removes
    /// both when the node is ready (`processTaintBaseEviction`).
    async fn process_taint_based_eviction(&self, node: &Node, observed: &str) {
        let name = node.metadata.name.clone().unwrap_or_default();
        let uid = node.metadata.uid.clone().unwrap_or_default();
        let taints = node_taints(node);
        let (wanted, opposite) = match observed {
            "False" => (not_ready_no_execute(), unreachable_no_execute()),
            "Unknown" => (unreachable_no_execute(), not_ready_no_execute()),
            _ => {
                match self.mark_node_as_reachable(node).await {
                    Ok(true) => {
                        tracing::debug!(node = %name, "node is healthy again, removed all taints")
                    }
                    Ok(false) => {}
                    Err(e) => {
                        tracing::error!(error = %api_error::Chain(&e), "failed to remove taints from node; will retry in next iteration")
                    }
                }
                return;
            }
        };
        if taint_exists(taints, &opposite) {
            if let Err(e) = self.swap_node_taints(node, &[wanted], &[opposite]).await {
                tracing::error!(error = %api_error::Chain(&e), "failed to instantly swap NoExecute taints; will try again in the next cycle");
            }
            return;
        }
        let now = self.config.clock.now();
        let mut state = self.state.lock();
        let zone = zone_key(node);
        if let Some(queue) = state.tainters.get_mut(&zone) {
            if !taint_exists(taints, &wanted) {
                queue.remove(&name);
            }
            if queue.add(&name, &uid, now) {
                tracing::debug!(node = %name, "node is not ready; adding it to the taint queue");
            }
        }
    }

    /// Removes both NoExecute taints and the node from its tainting queue (`markNodeAsReachable`).
    async fn mark_node_as_reachable(&self, node: &Node) -> Result<bool, Error> {
        self.swap_node_taints(
            node,
            &[],
            &[unreachable_no_execute(), not_ready_no_execute()],
        )
        .await?;
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let mut state = self.state.lock();
        Ok(state
            .tainters
            .get_mut(&zone_key(node))
            .is_some_and(|q| q.remove(name)))
    }

    /// Taints the nodes their zone's limiter lets through (`doNoExecuteTaintingPass`).
    pub async fn no_execute_tainting_pass(&self) {
        let now = self.config.clock.now();
        let due: Vec<(String, Vec<timed_queue::TimedValue>)> = {
            let mut state = self.state.lock();
            state
                .tainters
                .iter_mut()
                .map(|(zone, q)| (zone.clone(), q.take_due(now)))
                .filter(|(_, v)| !v.is_empty())
                .collect()
        };
        for (zone, values) in due {
            for value in values {
                let retry = self.taint_queued_node(&value.value).await;
                if let Some(wait) = retry {
                    let mut state = self.state.lock();
                    if let Some(q) = state.tainters.get_mut(&zone) {
                        q.requeue(value, now, wait);
                    }
                }
            }
        }
    }

    /// Applies the NoExecute taint matching a queued node's Ready condition; `Some(wait)` to retry.
    async fn taint_queued_node(&self, name: &str) -> Option<Duration> {
        let Some(node) = self.nodes.store().get(&ObjectKey::cluster(name)) else {
            tracing::info!(node = name, "node no longer present in nodeLister");
            return None;
        };
        let Some(ready) = health::condition(&node, "Ready") else {
            tracing::info!(
                node = name,
                "failed to get NodeCondition from the node status"
            );
            return Some(Duration::from_millis(50));
        };
        let (add, opposite) = match ready.status.as_str() {
            "False" => (not_ready_no_execute(), unreachable_no_execute()),
            "Unknown" => (unreachable_no_execute(), not_ready_no_execute()),
            _ => return None,
        };
        match self.swap_node_taints(&node, &[add], &[opposite]).await {
            Ok(_) => {
                metrics::metrics()
                    .evictions
                    .get_or_create(&metrics::zone(&zone_key(&node)))
                    .inc();
                None
            }
            Err(e) => {
                tracing::error!(error = %api_error::Chain(&e), "failed to taint node");
                Some(Duration::ZERO)
            }
        }
    }

    /// Updates zone states and their tainting rates from this pass's Ready conditions
    /// (`handleDisruption`).
    async fn handle_disruption(
        &self,
        zone_conditions: &HashMap<String, Vec<Option<k8s_openapi::api::core::v1::NodeCondition>>>,
        nodes: &[Arc<Node>],
    ) {
        let m = metrics::metrics();
        let mut new_states = HashMap::new();
        let mut all_are_fully_disrupted = true;
        for (zone, conditions) in zone_conditions {
            let refs: Vec<_> = conditions.iter().map(Option::as_ref).collect();
            let (unhealthy, state) =
                compute_zone_state(&refs, self.config.unhealthy_zone_threshold);
            let label = metrics::zone(zone);
            let size = conditions.len();
            m.zone_size.get_or_create(&label).set(size as i64);
            m.zone_health
                .get_or_create(&label)
                .set(100.0 * (size - unhealthy) as f64 / size.max(1) as f64);
            m.unhealthy_nodes
                .get_or_create(&label)
                .set(unhealthy as i64);
            if state != ZoneState::FullDisruption {
                all_are_fully_disrupted = false;
            }
            new_states.insert(zone.clone(), state);
        }
        let mark_all_reachable = {
            let mut st = self.state.lock();
            for zone in zone_conditions.keys() {
                st.zone_states
                    .entry(zone.clone())
                    .or_insert(ZoneState::Initial);
            }
            let gone: Vec<String> = st
                .zone_states
                .keys()
                .filter(|z| !zone_conditions.contains_key(*z))
                .cloned()
                .collect();
            for zone in gone {
                let label = metrics::zone(&zone);
                m.zone_size.get_or_create(&label).set(0);
                m.zone_health.get_or_create(&label).set(100.0);
                m.unhealthy_nodes.get_or_create(&label).set(0);
                st.zone_states.remove(&zone);
            }
            let all_were_fully_disrupted = st
                .zone_states
                .values()
                .all(|s| *s == ZoneState::FullDisruption);
            if all_are_fully_disrupted && all_were_fully_disrupted {
                return;
            }
            if all_are_fully_disrupted {
                tracing::info!("controller detected that all Nodes are not-Ready; entering master disruption mode");
                let zones: Vec<String> = st.zone_states.keys().cloned().collect();
                for zone in zones {
                    if let Some(q) = st.tainters.get_mut(&zone) {
                        q.swap_limiter(0.0);
                    }
                    st.zone_states.insert(zone, ZoneState::FullDisruption);
                }
                true
            } else {
                if all_were_fully_disrupted {
                    tracing::info!("controller detected that some Nodes are Ready; exiting master disruption mode");
                    let now = self.config.clock.now();
                    for h in st.health.values_mut() {
                        h.probe_timestamp = now;
                        h.ready_transition_timestamp = now;
                    }
                }
                let zones: Vec<String> = st.zone_states.keys().cloned().collect();
                for zone in zones {
                    let new = new_states.get(&zone).copied().unwrap_or(ZoneState::Normal);
                    if st.zone_states.get(&zone) == Some(&new) && !all_were_fully_disrupted {
                        continue;
                    }
                    tracing::info!(zone = %zone.replace('\0', ""), state = new.as_str(), "controller detected that zone is now in new state");
                    let size = zone_conditions.get(&zone).map_or(0, Vec::len);
                    let qps = self.config.rates.qps(new, size);
                    if let Some(q) = st.tainters.get_mut(&zone) {
                        q.swap_limiter(qps);
                    }
                    st.zone_states.insert(zone, new);
                }
                false
            }
        };
        if mark_all_reachable {
            for node in nodes {
                if let Err(e) = self.mark_node_as_reachable(node).await {
                    tracing::error!(error = %api_error::Chain(&e), "failed to remove taints from node");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;
    use jiff::Timestamp;
    use k8s_openapi::api::core::v1::{NodeCondition, NodeStatus, PodCondition, PodSpec, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    use rkcm_runtime::testing::{ApiRequest, ApiResponse, FakeApi};
    use rkcm_runtime::FakeClock;

    const NODE_STATUS: &str = "/api/v1/nodes/node0/status";

    fn start() -> Timestamp {
        "2025-01-01T00:00:00Z".parse().unwrap()
    }

    fn node(resource_version: &str, heartbeat: Timestamp) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some("node0".into()),
                uid: Some("node0-uid".into()),
                resource_version: Some(resource_version.into()),
                creation_timestamp: Some(Time(start())),
                ..ObjectMeta::default()
            },
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    reason: Some("KubeletReady".into()),
                    last_heartbeat_time: Some(Time(heartbeat)),
                    last_transition_time: Some(Time(heartbeat)),
                    ..NodeCondition::default()
                }]),
                ..NodeStatus::default()
            }),
            ..Node::default()
        }
    }

    fn controller(api: &FakeApi, clock: &FakeClock) -> Arc<NodeLifecycleController> {
        let factory = InformerFactory::new(api.client(), Duration::ZERO);
        let (recorder, _events) = EventRecorder::channel("node-controller", 100);
        NodeLifecycleController::new(
            &factory,
            api.client(),
            recorder,
            Config {
                clock: Arc::new(clock.clone()),
                ..Config::default()
            },
        )
    }

    fn conflict() -> ApiResponse {
        ApiResponse::error(
            http::StatusCode::CONFLICT,
            "Conflict",
            "Operation cannot be fulfilled on nodes \"node0\": the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    fn writes(api: &FakeApi) -> Vec<ApiRequest> {
        api.requests()
            .into_iter()
            .filter(|r| r.path.starts_with("/api/v1/nodes/node0") || r.path.contains("/pods/"))
            .collect()
    }

    // TestMonitorNodeHealthUpdateStatus: a node silent for the grace period gets Unknown
    // conditions by UpdateStatus; the write carries the node's resourceVersion, so a kubelet's
    // racing write makes it a conflict, and the controller retries on a fresh copy.
    #[tokio::test]
    async fn a_conflicting_status_write_is_retried_on_a_fresh_copy_of_the_node() {
        let puts = Arc::new(Mutex::new(0));
        let counter = Arc::clone(&puts);
        let api = FakeApi::new(move |req| {
            if req.is(Method::PUT, NODE_STATUS) {
                let mut n = counter.lock();
                *n += 1;
                if *n == 1 {
                    return conflict();
                }
                return ApiResponse::ok(&req.body);
            }
            if req.is(Method::GET, "/api/v1/nodes/node0") {
                return ApiResponse::ok(&node("2", start()));
            }
            ApiResponse::not_found("things", &req.path)
        });
        let clock = FakeClock::new(start());
        let ctrl = controller(&api, &clock);
        ctrl.nodes.store().insert(Arc::new(node("1", start())));

        ctrl.monitor_node_health().await;
        assert!(writes(&api).is_empty(), "a fresh node is left alone");

        clock.step(Duration::from_secs(51));
        ctrl.monitor_node_health().await;
        let requests = writes(&api);
        let summary: Vec<(Method, &str, Option<&str>)> = requests
            .iter()
            .map(|r| {
                (
                    r.method.clone(),
                    r.path.as_str(),
                    r.body
                        .pointer("/metadata/resourceVersion")
                        .and_then(|v| v.as_str()),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (Method::PUT, NODE_STATUS, Some("1")),
                (Method::GET, "/api/v1/nodes/node0", None),
                (Method::PUT, NODE_STATUS, Some("2")),
            ]
        );
        let ready = &requests[2].body["status"]["conditions"][0];
        assert_eq!(ready["type"], "Ready");
        assert_eq!(ready["status"], "Unknown");
        assert_eq!(ready["reason"], "NodeStatusUnknown");
        assert_eq!(ready["message"], "Kubelet stopped posting node status.");
        let health = ctrl.state.lock().health.get("node0").cloned().unwrap();
        assert_eq!(health.ready.unwrap().status, "Unknown");
    }

    // The write is given up after scheduler.NodeHealthUpdateRetry attempts; nothing else is
    // done to the node in this pass.
    #[tokio::test]
    async fn a_status_write_that_keeps_failing_is_given_up_after_five_attempts() {
        let api = FakeApi::new(move |req| {
            if req.is(Method::PUT, NODE_STATUS) {
                return conflict();
            }
            if req.is(Method::GET, "/api/v1/nodes/node0") {
                return ApiResponse::ok(&node("2", start()));
            }
            ApiResponse::not_found("things", &req.path)
        });
        let clock = FakeClock::new(start());
        let ctrl = controller(&api, &clock);
        ctrl.nodes.store().insert(Arc::new(node("1", start())));
        ctrl.monitor_node_health().await;
        clock.step(Duration::from_secs(51));
        ctrl.monitor_node_health().await;
        let puts = writes(&api)
            .iter()
            .filter(|r| r.method == Method::PUT)
            .count();
        assert_eq!(puts, NODE_HEALTH_UPDATE_RETRY);
    }

    // SwapNodeControllerTaint → AddOrUpdateTaintOnNode: the patch pins the resourceVersion the
    // taints were computed from; on conflict the node is read again and the taints recomputed.
    #[tokio::test]
    async fn a_conflicting_taint_write_is_retried_on_a_fresh_copy_of_the_node() {
        let patches = Arc::new(Mutex::new(0));
        let counter = Arc::clone(&patches);
        let api = FakeApi::new(move |req| {
            if req.is(Method::PATCH, "/api/v1/nodes/node0") {
                let mut n = counter.lock();
                *n += 1;
                if *n == 1 {
                    return conflict();
                }
                return ApiResponse::ok(&node("3", start()));
            }
            if req.is(Method::GET, "/api/v1/nodes/node0") {
                let mut fresh = node("2", start());
                fresh.spec.get_or_insert_default().taints =
                    Some(vec![taints::taint("example.com/other", "NoSchedule")]);
                return ApiResponse::ok(&fresh);
            }
            ApiResponse::not_found("things", &req.path)
        });
        let clock = FakeClock::new(start());
        let ctrl = controller(&api, &clock);
        let changed = ctrl
            .swap_node_taints(
                &node("1", start()),
                &[unreachable_no_execute()],
                &[not_ready_no_execute()],
            )
            .await
            .unwrap();
        assert!(changed);
        let requests = writes(&api);
        assert_eq!(requests.len(), 3);
        assert_eq!(requests[0].body["metadata"]["resourceVersion"], "1");
        assert_eq!(requests[1].method, Method::GET);
        let last = &requests[2].body;
        assert_eq!(last["metadata"]["resourceVersion"], "2");
        let keys: Vec<&str> = last["spec"]["taints"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["key"].as_str())
            .collect();
        assert_eq!(
            keys,
            vec!["example.com/other", taints::TAINT_NODE_UNREACHABLE]
        );
        assert_eq!(
            last["spec"]["taints"][1]["timeAdded"],
            serde_json::to_value(Time(start())).unwrap()
        );
    }

    // MarkPodsNotReady: UpdateStatus of each pod with its resourceVersion, Ready False.
    #[tokio::test]
    async fn pods_are_marked_not_ready_by_an_update_carrying_their_resource_version() {
        let api = FakeApi::new(move |req| {
            if req.method == Method::PUT {
                return ApiResponse::ok(&req.body);
            }
            ApiResponse::not_found("things", &req.path)
        });
        let clock = FakeClock::new(start());
        let ctrl = controller(&api, &clock);
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("default".into()),
                resource_version: Some("7".into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                node_name: Some("node0".into()),
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    ..PodCondition::default()
                }]),
                ..PodStatus::default()
            }),
        };
        ctrl.mark_pods_not_ready(&[Arc::new(pod)], "node0")
            .await
            .unwrap();
        let requests = writes(&api);
        assert_eq!(requests.len(), 1);
        assert!(requests[0].is(Method::PUT, "/api/v1/namespaces/default/pods/p/status"));
        assert_eq!(requests[0].body["metadata"]["resourceVersion"], "7");
        assert_eq!(
            requests[0].body["status"]["conditions"][0]["status"],
            "False"
        );
    }
}
