//! `NodeSim`: registers the simulated nodes and runs their leases, heartbeats, scheduler and kubelet.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::ListParams;
use kube::{Api, Client};
use rkcm_runtime::events::EventBroadcaster;
use rkcm_runtime::informer::{
    trim_managed_fields, wait_for_cache_sync, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::Shutdown;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::MissedTickBehavior;

use crate::attacher::Attacher;
use crate::config::Config;
use crate::csi;
use crate::error::Result;
use crate::identity::Clients;
use crate::kubelet::Kubelet;
use crate::metrics::{self, UsageSnapshots};
use crate::node_set::{NodeSet, HEARTBEAT_ANNOTATION};
use crate::provisioner::{self, Provisioner};
use crate::scheduler::Scheduler;
use crate::{lease, node};

/// How long shutdown waits for queued events to be written.
const EVENT_FLUSH_TIMEOUT: Duration = Duration::from_secs(5);

/// The simulated nodes of one process: N Nodes with leases and heartbeats, a scheduler and a kubelet stand-in.
///
/// Everything goes through the API with `client`, so it works against any cluster.
pub struct NodeSim {
    clients: Clients,
    config: Config,
    informers: InformerFactory,
    pod_informer: SharedInformer<Pod>,
    node_informer: SharedInformer<Node>,
    nodes: NodeSet,
    kubelet: Arc<Kubelet>,
    scheduler: Option<Arc<Scheduler>>,
    provisioner: Option<Arc<Provisioner>>,
    attacher: Option<Arc<Attacher>>,
    metrics: Option<UsageSnapshots>,
    /// Names of nodes whose heartbeat annotation was just removed.
    resumed: mpsc::Receiver<String>,
}

/// How many resumed nodes may wait for their first heartbeat; beyond that the periodic lease
/// renewal picks them up within `lease_renew_interval`.
const RESUMED_BUFFER: usize = 256;

/// Whether the node carries `rkcm.io/heartbeat: "stopped"`.
pub fn heartbeat_stopped(node: &Node) -> bool {
    node.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(HEARTBEAT_ANNOTATION))
        .is_some_and(|v| v == "stopped")
}

impl NodeSim {
    /// Simulated nodes with their own informers (a pod and a node watch).
    pub fn new(client: Client, config: Config) -> Self {
        Self::with_clients(Clients::shared(client), config)
    }

    /// Simulated nodes whose kubelets and scheduler talk with their own `clients` (see
    /// [`crate::identity`]); the shared watches use the scheduler's. Their caches drop
    /// `managedFields`, as kube-controller-manager's do: nothing here reads them, and each entry
    /// is a decoded JSON tree of its manager's fields kept with every pod.
    pub fn with_clients(clients: Clients, config: Config) -> Self {
        let informers = InformerFactory::with_transform(
            clients.scheduler().clone(),
            Duration::ZERO,
            trim_managed_fields,
        );
        Self::with_informers_and_clients(&informers, clients, config)
    }

    /// Simulated nodes sharing `informers` (and so their pod and node caches) with other components.
    /// [`NodeSim::run`] starts the factory's informers.
    pub fn with_informers(informers: &InformerFactory, client: Client, config: Config) -> Self {
        Self::with_informers_and_clients(informers, Clients::shared(client), config)
    }

    fn with_informers_and_clients(
        informers: &InformerFactory,
        clients: Clients,
        config: Config,
    ) -> Self {
        let nodes = NodeSet::default();
        let pod_informer = informers.informer::<Pod>();
        let node_informer = informers.informer::<Node>();
        let kubelet = Kubelet::new(informers, clients.clone(), nodes.clone(), config.clone());
        let served = nodes.clone();
        let (resumed_tx, resumed) = mpsc::channel(RESUMED_BUFFER);
        node_informer.add_event_handler(move |note| match note {
            Notification::Add(node) | Notification::Update { new: node, .. } => {
                let name = node.metadata.name.clone().unwrap_or_default();
                let cidr = node
                    .spec
                    .as_ref()
                    .and_then(|s| s.pod_cidr.clone())
                    .filter(|c| !c.is_empty());
                served.set_pod_cidr(&name, cidr);
                let stopped = heartbeat_stopped(&node);
                if served.set_stopped(&name, stopped) {
                    if stopped {
                        tracing::info!(node = %name, "heartbeat stopped: no lease renewals, status or pod updates");
                    } else {
                        tracing::info!(node = %name, "heartbeat resumed");
                        let _ = resumed_tx.try_send(name);
                    }
                }
            }
            Notification::Delete(deleted) => {
                let name = deleted.object().metadata.name.clone().unwrap_or_default();
                served.set_stopped(&name, false);
                served.set_pod_cidr(&name, None);
                if served.remove(&name) {
                    tracing::info!(node = %name, "node deleted; no longer simulated, its pods are left for PodGC");
                }
            }
        });
        let scheduler = config
            .scheduler
            .then(|| Scheduler::new(informers, clients.scheduler().clone(), &config));
        let provisioner = config
            .provisioner
            .then(|| Provisioner::new(informers, clients.provisioner().clone()));
        // The external-attacher stand-in belongs to the simulated storage, as the provisioner.
        let attacher = config
            .provisioner
            .then(|| Attacher::new(clients.provisioner().clone()));
        Self {
            provisioner,
            attacher,
            clients,
            config,
            informers: informers.clone(),
            pod_informer,
            node_informer,
            nodes,
            kubelet,
            scheduler,
            resumed,
            metrics: None,
        }
    }

    /// Also snapshots the pods' and nodes' resource usage into `snapshots` every
    /// [`Config::metric_resolution`] (see [`crate::metrics`]).
    pub fn with_metrics(mut self, snapshots: UsageSnapshots) -> Self {
        self.metrics = Some(snapshots);
        self
    }

    /// The nodes being served (shrinks when a Node is deleted).
    pub fn nodes(&self) -> NodeSet {
        self.nodes.clone()
    }

    /// Registers the nodes (retrying until the API server answers), starts the informers, and runs
    /// leases, heartbeats, the scheduler and the kubelet until `shutdown`. Returns `Ok` on shutdown.
    pub async fn run(mut self, shutdown: Shutdown) -> Result<()> {
        for index in 1..=self.config.nodes {
            let mut back_off = Duration::from_millis(100);
            loop {
                let client = self.clients.kubelet(&self.config.node_name(index));
                match node::register(client, &self.config, index).await {
                    Ok(registered) => {
                        tracing::info!(node = %registered.name, "node registered");
                        if self.provisioner.is_some() {
                            if let Err(e) = csi::register_node(client, &registered).await {
                                tracing::warn!(node = %registered.name, error = %rkcm_runtime::api_error::message(&e), "could not register the CSI driver on the node");
                            }
                        }
                        self.nodes.insert(registered);
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, cause = ?std::error::Error::source(&e), "retrying node registration");
                        tokio::select! {
                            _ = shutdown.cancelled() => return Ok(()),
                            _ = tokio::time::sleep(back_off) => {}
                        }
                        back_off = (back_off * 2).min(Duration::from_secs(5));
                    }
                }
            }
        }

        self.mark_surplus_nodes().await;
        if self.provisioner.is_some() {
            if let Err(e) = provisioner::ensure_default_class(self.clients.provisioner()).await {
                tracing::warn!(error = %rkcm_runtime::api_error::message(&e), "could not create the default StorageClass");
            }
            if let Err(e) = csi::ensure_driver(self.clients.provisioner()).await {
                tracing::warn!(error = %rkcm_runtime::api_error::message(&e), "could not create the CSIDriver");
            }
        }

        self.informers.start(shutdown.clone());
        let synced = wait_for_cache_sync(
            "nodesim",
            &[&self.pod_informer, &self.node_informer, &self.informers],
            &shutdown,
        )
        .await;
        if !synced {
            return Ok(());
        }
        // Pods seen before their node was registered (with a shared, already started factory).
        self.kubelet.resync_all();

        let events = EventBroadcaster::new(self.clients.simulator().clone());
        // The scheduler and the provisioner record their events as themselves.
        let scheduler_events = EventBroadcaster::new(self.clients.scheduler().clone());
        let provisioner_events = EventBroadcaster::new(self.clients.provisioner().clone());
        self.kubelet.set_recorder(events.recorder("kubelet"));
        // Each kubelet with its own client records its events as its node.
        let node_events: Vec<(String, EventBroadcaster)> = self
            .clients
            .own_kubelets()
            .map(|(node, client)| (node.clone(), EventBroadcaster::new(client.clone())))
            .collect();
        self.kubelet.set_node_recorders(
            node_events
                .iter()
                .map(|(node, b)| (node.clone(), b.recorder("kubelet")))
                .collect(),
        );
        if let Some(scheduler) = &self.scheduler {
            scheduler.set_recorder(scheduler_events.recorder("default-scheduler"));
        }
        if let Some(provisioner) = &self.provisioner {
            provisioner.set_recorder(provisioner_events.recorder(&format!(
                "{}_rkcm-simulated-provisioner",
                provisioner::PROVISIONER_NAME
            )));
        }

        let mut tasks = JoinSet::new();
        tasks.spawn(Arc::clone(&self.kubelet).run(self.config.kubelet_workers, shutdown.clone()));
        if let Some(scheduler) = &self.scheduler {
            tasks.spawn(Arc::clone(scheduler).run(shutdown.clone()));
        }
        if let Some(provisioner) = &self.provisioner {
            tasks.spawn(Arc::clone(provisioner).run(shutdown.clone()));
        }
        if let Some(attacher) = &self.attacher {
            tasks.spawn(Arc::clone(attacher).run(shutdown.clone()));
        }
        tasks.spawn(renew_leases(
            self.clients.clone(),
            self.nodes.clone(),
            self.config.clone(),
            shutdown.clone(),
        ));
        tasks.spawn(heartbeats(
            self.clients.clone(),
            self.nodes.clone(),
            self.config.clone(),
            shutdown.clone(),
        ));
        let resumed = std::mem::replace(&mut self.resumed, mpsc::channel(1).1);
        tasks.spawn(resume(
            self.clients.clone(),
            self.nodes.clone(),
            Arc::clone(&self.kubelet),
            self.config.clone(),
            resumed,
            shutdown.clone(),
        ));
        if let Some(snapshots) = self.metrics.clone() {
            tasks.spawn(snapshot_metrics(
                snapshots,
                self.pod_informer.clone(),
                self.node_informer.clone(),
                self.nodes.clone(),
                self.config.clone(),
                shutdown.clone(),
            ));
        }
        while let Some(result) = tasks.join_next().await {
            if let Err(e) = result {
                tracing::error!(error = %e, "node simulator task failed");
            }
        }
        // The broadcaster's task ends once every recorder is gone.
        self.kubelet.stop_recording();
        if let Some(scheduler) = &self.scheduler {
            scheduler.stop_recording();
        }
        if let Some(provisioner) = &self.provisioner {
            provisioner.stop_recording();
        }
        let flushed = async {
            events.shutdown().await;
            scheduler_events.shutdown().await;
            provisioner_events.shutdown().await;
            for (_, b) in node_events {
                b.shutdown().await;
            }
        };
        if tokio::time::timeout(EVENT_FLUSH_TIMEOUT, flushed)
            .await
            .is_err()
        {
            tracing::warn!("gave up writing the last events");
        }
        Ok(())
    }
}

impl NodeSim {
    /// Marks simulated nodes left over from a run with more nodes as unreachable (one list at start).
    async fn mark_surplus_nodes(&self) {
        let api: Api<Node> = Api::all(self.clients.simulator().clone());
        let nodes = match api.list(&ListParams::default()).await {
            Ok(list) => list.items,
            Err(e) => {
                tracing::warn!(error = %e, "could not list nodes to find left-over simulated nodes");
                return;
            }
        };
        for node in nodes.iter().filter(|n| node::is_surplus(n, &self.config)) {
            let name = node.metadata.name.as_deref().unwrap_or_default();
            tracing::info!(node = %name, "simulated node beyond --nodes: marked unreachable; delete it to let PodGC remove its pods");
            if let Err(e) =
                node::mark_unreachable(self.clients.simulator(), node, self.config.clock.now())
                    .await
            {
                tracing::warn!(error = %e, "could not mark a left-over node unreachable");
            }
        }
    }
}

/// Renews every served node's lease each `lease_renew_interval`.
async fn renew_leases(clients: Clients, nodes: NodeSet, config: Config, shutdown: Shutdown) {
    let mut tick = tokio::time::interval(config.lease_renew_interval);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        for node in nodes.beating() {
            let client = clients.kubelet(&node.name);
            if let Err(e) =
                lease::renew(client, &node, config.lease_duration, config.clock.now()).await
            {
                tracing::warn!(error = %e, cause = ?std::error::Error::source(&e), "lease renewal failed");
            }
        }
    }
}

/// Refreshes every served node's condition heartbeats each `node_status_interval`.
async fn heartbeats(clients: Clients, nodes: NodeSet, config: Config, shutdown: Shutdown) {
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::now() + config.node_status_interval,
        config.node_status_interval,
    );
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        for node in nodes.beating() {
            match node::heartbeat(clients.kubelet(&node.name), &node, config.clock.now()).await {
                Ok(true) => {}
                Ok(false) => {
                    if nodes.remove(&node.name) {
                        tracing::info!(node = %node.name, "node deleted; no longer simulated");
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, cause = ?std::error::Error::source(&e), "node heartbeat failed")
                }
            }
        }
    }
}

/// Brings a node whose heartbeat resumed back at once: Ready since now, its lease renewed, its
/// status posted, and its pods synced again.
async fn resume(
    clients: Clients,
    nodes: NodeSet,
    kubelet: Arc<Kubelet>,
    config: Config,
    mut resumed: mpsc::Receiver<String>,
    shutdown: Shutdown,
) {
    loop {
        let name = tokio::select! {
            _ = shutdown.cancelled() => return,
            name = resumed.recv() => match name {
                Some(name) => name,
                None => return,
            },
        };
        let Some(mut node) = nodes.get(&name) else {
            continue;
        };
        if nodes.is_stopped(&name) {
            continue;
        }
        let now = config.clock.now();
        node.registered_at = now;
        nodes.insert(node.clone());
        let client = clients.kubelet(&name);
        if let Err(e) = lease::renew(client, &node, config.lease_duration, now).await {
            tracing::warn!(error = %e, cause = ?std::error::Error::source(&e), "lease renewal failed");
        }
        if let Err(e) = node::heartbeat(client, &node, now).await {
            tracing::warn!(error = %e, cause = ?std::error::Error::source(&e), "node heartbeat failed");
        }
        kubelet.resync_node(&name);
    }
}

/// Takes a resource-usage snapshot at once, then every `metric_resolution`.
async fn snapshot_metrics(
    snapshots: UsageSnapshots,
    pods: SharedInformer<Pod>,
    node_informer: SharedInformer<Node>,
    nodes: NodeSet,
    config: Config,
    shutdown: Shutdown,
) {
    let mut tick = tokio::time::interval(config.metric_resolution.max(Duration::from_millis(100)));
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        let store = pods.store();
        snapshots.publish(metrics::take_snapshot(
            |node| store.by_index(crate::NODE_NAME_INDEX, node),
            &node_informer.store().list(),
            &nodes,
            config.clock.now(),
            config.metric_resolution,
        ));
    }
}
