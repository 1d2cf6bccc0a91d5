//! The attach/detach controller (`persistentvolume-attach-detach-controller`,
//! `pkg/controller/volume/attachdetach/`): attaches the CSI volumes that pods scheduled to a
//! managed node use, through VolumeAttachments as kube's CSI attacher writes them, records them in
//! the node's `status.volumesAttached`, and detaches them once no pod there needs them and the
//! node no longer lists them in `status.volumesInUse`.
//!
//! A node is managed once it carries `volumes.kubernetes.io/controller-managed-attach-detach`
//! (kubelets set it). The desired state (pods → volumes per node) follows pod, node, claim and
//! volume notifications; the actual state follows the operations, and at start the existing
//! VolumeAttachments. Every 100 ms the reconciler compares them and starts operations; every
//! `--attach-detach-reconcile-sync-period` the attachments are checked against their
//! VolumeAttachments. Only CSI PersistentVolumes are attachable: kube's in-tree attachable
//! plugins and inline CSI volumes are not simulated.

pub mod actual_state;
pub mod desired_state;
pub mod pending;
pub mod populator;
pub mod reconciler;
pub mod volume;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::{
    CSIDriver, VolumeAttachment, VolumeAttachmentSource, VolumeAttachmentSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use rkcm_runtime::events::{EventRecorder, EventType};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::storage::csi::{
    CONTROLLER_MANAGED_ATTACH_ANNOTATION, KEEP_TERMINATED_POD_VOLUMES_ANNOTATION,
};
use rkcm_runtime::storage::{pod_pvc_index, POD_PVC_INDEX};
use rkcm_runtime::{api_error, Clock, ObjectKey, Shutdown};
use serde_json::json;
use tokio::task::JoinSet;

use actual_state::{ActualStateOfWorld, AttachState};
use desired_state::{DesiredStateOfWorld, PodRef};
use pending::PendingOperations;
use reconciler::{Action, NodeHealth, ReconcilerConfig};
use volume::AttachableVolume;

/// The component of the controller's events.
pub const EVENT_SOURCE: &str = "attachdetach-controller";

/// kube's `reconcilerLoopPeriod`.
pub const RECONCILER_LOOP_PERIOD: Duration = Duration::from_millis(100);

/// `--attach-detach-reconcile-sync-period`'s default.
pub const DEFAULT_RECONCILER_SYNC_LOOP_PERIOD: Duration = Duration::from_secs(60);

/// How long an attach or detach waits for the external attacher (the CSI attacher's
/// `csiTimeout`, 2 minutes).
pub const ATTACH_TIMEOUT: Duration = Duration::from_secs(120);

/// kube's `desiredStateOfWorldPopulatorLoopSleepPeriod`: how often pods whose deletion was
/// missed are looked for.
pub const POPULATOR_LOOP_PERIOD: Duration = Duration::from_secs(60);

/// The taint that lets volumes go from a node without waiting (`v1.TaintNodeOutOfService`).
pub const OUT_OF_SERVICE_TAINT: &str = "node.kubernetes.io/out-of-service";

/// Pod index by node name, for the pods of a node that became managed.
const POD_NODE_INDEX: &str = "attachdetach-pod-node";

/// The controller's settings.
#[derive(Clone)]
pub struct Config {
    /// `--attach-detach-reconcile-sync-period` (at least one second).
    pub reconciler_sync_loop_period: Duration,
    /// `--disable-attach-detach-reconcile-sync`.
    pub disable_reconcile_sync: bool,
    /// `--disable-force-detach-on-timeout`.
    pub disable_force_detach_on_timeout: bool,
    /// Wall clock.
    pub clock: Arc<dyn Clock>,
}

/// The settings kube refuses (`startAttachDetachController`).
#[derive(Debug, thiserror::Error)]
#[error("duration time must be greater than one second as set via command line option reconcile-sync-loop-period")]
pub struct SyncPeriodTooShort;

impl Config {
    /// Checks the settings as kube does before starting.
    pub fn validate(&self) -> Result<(), SyncPeriodTooShort> {
        if self.reconciler_sync_loop_period < Duration::from_secs(1) {
            return Err(SyncPeriodTooShort);
        }
        Ok(())
    }
}

/// Why an attach or detach failed; the operation backs off and the reconciler retries it.
#[derive(Debug, thiserror::Error)]
pub enum OperationError {
    /// The API refused a VolumeAttachment write.
    #[error("{action} VolumeAttachment {name}")]
    Api {
        /// `creating` or `deleting`.
        action: &'static str,
        /// The attachment.
        name: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// The external attacher reported an error.
    #[error("{0}")]
    Attacher(String),
    /// The external attacher did not answer in time.
    #[error(
        "timed out waiting for external-attacher of {driver} CSI driver to {verb} volume {handle}"
    )]
    Timeout {
        /// The driver.
        driver: String,
        /// `attach` or `detach`.
        verb: &'static str,
        /// The volume handle.
        handle: String,
    },
    /// The node still uses the volume (`verifyVolumeIsSafeToDetach`).
    #[error("volume is still in use by node, according to Node status")]
    InUse,
    /// The node's status could not be written before the detach.
    #[error("updating the status of node {node}")]
    NodeStatus {
        /// The node.
        node: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
}

struct State {
    dsw: DesiredStateOfWorld,
    asw: ActualStateOfWorld,
    pending: PendingOperations,
}

/// Attaches and detaches CSI volumes of managed nodes.
pub struct AttachDetachController {
    client: kube::Client,
    recorder: EventRecorder,
    pods: SharedInformer<Pod>,
    nodes: SharedInformer<Node>,
    claims: SharedInformer<PersistentVolumeClaim>,
    volumes: SharedInformer<PersistentVolume>,
    drivers: SharedInformer<CSIDriver>,
    attachments: SharedInformer<VolumeAttachment>,
    state: Mutex<State>,
    config: Config,
}

impl AttachDetachController {
    /// Registers the controller's handlers on the factory's informers.
    pub fn new(
        factory: &InformerFactory,
        client: kube::Client,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let pods = factory.informer::<Pod>();
        pods.add_indexer(POD_PVC_INDEX, pod_pvc_index);
        pods.add_indexer(POD_NODE_INDEX, |p: &Pod| {
            populator::pod_node(p)
                .map(str::to_string)
                .into_iter()
                .collect()
        });
        let this = Arc::new(Self {
            client,
            recorder,
            nodes: factory.informer::<Node>(),
            claims: factory.informer::<PersistentVolumeClaim>(),
            volumes: factory.informer::<PersistentVolume>(),
            drivers: factory.informer::<CSIDriver>(),
            attachments: factory.informer::<VolumeAttachment>(),
            pods,
            state: Mutex::new(State {
                dsw: DesiredStateOfWorld::default(),
                asw: ActualStateOfWorld::default(),
                pending: PendingOperations::default(),
            }),
            config,
        });
        let weak = Arc::downgrade(&this);
        this.pods.add_event_handler(move |note: Notification<Pod>| {
            let Some(c) = weak.upgrade() else { return };
            match note {
                Notification::Add(p) | Notification::Update { new: p, .. } => c.pod_changed(&p),
                Notification::Delete(d) => c.pod_gone(d.object()),
            }
        });
        let weak = Arc::downgrade(&this);
        this.nodes
            .add_event_handler(move |note: Notification<Node>| {
                let Some(c) = weak.upgrade() else { return };
                match note {
                    Notification::Add(n) | Notification::Update { new: n, .. } => {
                        c.node_changed(&n)
                    }
                    Notification::Delete(d) => c.node_gone(d.object()),
                }
            });
        let weak = Arc::downgrade(&this);
        this.claims
            .add_event_handler(move |note: Notification<PersistentVolumeClaim>| {
                let Some(c) = weak.upgrade() else { return };
                if let Notification::Add(claim) | Notification::Update { new: claim, .. } = note {
                    c.claim_changed(&ObjectKey::from_obj(&*claim).to_string());
                }
            });
        let weak = Arc::downgrade(&this);
        this.volumes
            .add_event_handler(move |note: Notification<PersistentVolume>| {
                let Some(c) = weak.upgrade() else { return };
                if let Notification::Add(pv) | Notification::Update { new: pv, .. } = note {
                    if let Some(r) = pv.spec.as_ref().and_then(|s| s.claim_ref.as_ref()) {
                        let key = format!(
                            "{}/{}",
                            r.namespace.as_deref().unwrap_or_default(),
                            r.name.as_deref().unwrap_or_default()
                        );
                        c.claim_changed(&key);
                    }
                }
            });
        this
    }

    /// Adds or removes the pod's volumes in the desired state (`podAdd`/`podUpdate`).
    fn pod_changed(&self, pod: &Pod) {
        let Some(node) = populator::pod_node(pod) else {
            return;
        };
        let pod_ref = populator::pod_ref(pod);
        let mut state = self.state.lock();
        if !state.dsw.node_exists(node) {
            return;
        }
        if !populator::keeps_volumes(pod, state.dsw.keep_terminated_pod_volumes(node)) {
            state.dsw.delete_pod_from_node(&pod_ref.uid, node);
            return;
        }
        let namespace = pod_ref.namespace.clone();
        let drivers = self.drivers.store();
        let drivers = drivers.list();
        let volumes = populator::attachable_volumes(
            pod,
            |name| self.claims.store().get(&ObjectKey::new(&namespace, name)),
            |name| self.volumes.store().get(&ObjectKey::cluster(name)),
            |driver| {
                drivers
                    .iter()
                    .find(|d| d.metadata.name.as_deref() == Some(driver))
                    .map(|d| &**d)
            },
        );
        for v in &volumes {
            if let Err(e) = state.dsw.add_pod(&pod_ref, v, node) {
                tracing::debug!(error = %e, pod = %pod_ref.name, "not adding the pod's volume");
            }
        }
    }

    /// Removes a deleted pod's volumes from the desired state (`podDelete`).
    fn pod_gone(&self, pod: &Pod) {
        if let Some(node) = populator::pod_node(pod) {
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            self.state.lock().dsw.delete_pod_from_node(&uid, node);
        }
    }

    /// Reprocesses the pods that use the claim `namespace/name` (`syncPVCByKey`).
    fn claim_changed(&self, key: &str) {
        for pod in self.pods.store().by_index(POD_PVC_INDEX, key) {
            self.pod_changed(&pod);
        }
    }

    /// Manages an annotated node, and records what it mounts (`nodeUpdate`).
    fn node_changed(&self, node: &Node) {
        let name = node.metadata.name.clone().unwrap_or_default();
        let annotations = node.metadata.annotations.as_ref();
        let managed =
            annotations.is_some_and(|a| a.contains_key(CONTROLLER_MANAGED_ATTACH_ANNOTATION));
        let newly = {
            let mut state = self.state.lock();
            let newly = managed && !state.dsw.node_exists(&name);
            if managed {
                let keep = annotations
                    .and_then(|a| a.get(KEEP_TERMINATED_POD_VOLUMES_ANNOTATION))
                    .is_some_and(|v| v == "true");
                state.dsw.add_node(&name, keep);
            }
            let in_use: BTreeSet<String> = node
                .status
                .as_ref()
                .and_then(|s| s.volumes_in_use.clone())
                .unwrap_or_default()
                .into_iter()
                .collect();
            state.asw.set_volumes_mounted_by_node(&name, &in_use);
            newly
        };
        if newly {
            for pod in self.pods.store().by_index(POD_NODE_INDEX, &name) {
                self.pod_changed(&pod);
            }
        }
    }

    /// Stops managing a deleted node (`nodeDelete`).
    fn node_gone(&self, node: &Node) {
        let name = node.metadata.name.clone().unwrap_or_default();
        let mut state = self.state.lock();
        if let Err(e) = state.dsw.delete_node(&name) {
            tracing::info!(error = %e, node = %name, "error removing node from desired state");
        }
        state
            .asw
            .set_volumes_mounted_by_node(&name, &BTreeSet::new());
    }

    /// Marks the VolumeAttachments found at start attached or uncertain
    /// (`populateActualStateOfWorld`, `processVolumeAttachments`).
    fn populate_actual_state(&self) {
        let drivers = self.drivers.store().list();
        let mut state = self.state.lock();
        for va in self.attachments.store().list() {
            let Some(pv_name) = va.spec.source.persistent_volume_name.as_deref() else {
                continue;
            };
            let Some(pv) = self.volumes.store().get(&ObjectKey::cluster(pv_name)) else {
                continue;
            };
            let Some(v) = AttachableVolume::from_pv(&pv, |d| {
                drivers
                    .iter()
                    .find(|x| x.metadata.name.as_deref() == Some(d))
                    .map(|x| &**x)
            }) else {
                continue;
            };
            let node = va.spec.node_name.as_str();
            if state.asw.attach_state(&v.name, node) != AttachState::Detached {
                continue;
            }
            let reported = self
                .nodes
                .store()
                .get(&ObjectKey::cluster(node))
                .and_then(|n| n.status.clone())
                .and_then(|s| s.volumes_attached)
                .is_some_and(|list| list.iter().any(|a| a.name == v.name));
            if reported && va.status.as_ref().is_some_and(|s| s.attached) {
                state.asw.mark_attached(&v, node);
            } else {
                state.asw.mark_uncertain(&v, node);
            }
        }
        // What each node mounts now, whatever its notifications said before the attachments
        // were known (`processVolumesInUse` in `populateActualStateOfWorld`).
        for node in self.nodes.store().list() {
            let in_use: BTreeSet<String> = node
                .status
                .as_ref()
                .and_then(|s| s.volumes_in_use.clone())
                .unwrap_or_default()
                .into_iter()
                .collect();
            let name = node.metadata.name.as_deref().unwrap_or_default();
            state.asw.set_volumes_mounted_by_node(name, &in_use);
        }
    }

    /// Runs until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        tracing::info!(controller = "attachdetach", "starting controller");
        let synced: [&dyn HasSynced; 6] = [
            &self.pods,
            &self.nodes,
            &self.claims,
            &self.volumes,
            &self.drivers,
            &self.attachments,
        ];
        if !wait_for_cache_sync("attach detach", &synced, &shutdown).await {
            return;
        }
        self.populate_actual_state();
        // Pods seen before their node was managed, or their claims cached.
        for pod in self.pods.store().list() {
            self.pod_changed(&pod);
        }
        let mut tick = tokio::time::interval(RECONCILER_LOOP_PERIOD);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut last_sync = tokio::time::Instant::now();
        let mut last_populate = tokio::time::Instant::now();
        let mut tasks = JoinSet::new();
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tick.tick() => {}
            }
            while tasks.try_join_next().is_some() {}
            self.reconcile(&mut tasks);
            self.update_node_statuses().await;
            if !self.config.disable_reconcile_sync
                && last_sync.elapsed() > self.config.reconciler_sync_loop_period
            {
                self.sync_states();
                last_sync = tokio::time::Instant::now();
            }
            if last_populate.elapsed() > POPULATOR_LOOP_PERIOD {
                self.remove_deleted_pods();
                last_populate = tokio::time::Instant::now();
            }
        }
        tasks.shutdown().await;
        tracing::info!(controller = "attachdetach", "shutting down controller");
    }

    /// Forgets the pods of the desired state that are gone from the cache
    /// (`findAndRemoveDeletedPods`).
    fn remove_deleted_pods(&self) {
        let mut state = self.state.lock();
        let recorded = state.dsw.pods_to_volumes();
        let pods = self.pods.store();
        let stale = populator::deleted_pods(
            recorded.iter().map(|(pod, _, node)| (pod, node.as_str())),
            |pod| {
                pods.get(&ObjectKey::new(&pod.namespace, &pod.name))
                    .and_then(|p| p.metadata.uid.clone())
            },
        );
        for (pod, node) in stale {
            tracing::info!(pod = %pod.name, namespace = %pod.namespace, node = %node, "removing a deleted pod from the desired state of the world");
            state.dsw.delete_pod_from_node(&pod.uid, &node);
        }
    }

    fn node_health(&self, node: &str) -> NodeHealth {
        let Some(n) = self.nodes.store().get(&ObjectKey::cluster(node)) else {
            return NodeHealth {
                ready: false,
                out_of_service: false,
            };
        };
        let ready = n
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .is_some_and(|c| c.status == "True");
        let out_of_service = n
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_ref())
            .is_some_and(|t| t.iter().any(|t| t.key == OUT_OF_SERVICE_TAINT));
        NodeHealth {
            ready,
            out_of_service,
        }
    }

    /// One reconciler pass: decides under the lock, then starts the operations.
    fn reconcile(self: &Arc<Self>, tasks: &mut JoinSet<()>) {
        let now = self.config.clock.now();
        let config = ReconcilerConfig {
            disable_force_detach_on_timeout: self.config.disable_force_detach_on_timeout,
            ..ReconcilerConfig::default()
        };
        let actions = {
            let mut guard = self.state.lock();
            let state = &mut *guard;
            reconciler::reconcile(
                &mut state.dsw,
                &mut state.asw,
                &mut state.pending,
                |n| self.node_health(n),
                now,
                config,
            )
        };
        for action in actions {
            match action {
                Action::MultiAttachError { events, volume } => {
                    tracing::info!(volume = %volume.name, "Multi-Attach error: volume is already exclusively attached and can't be attached to another node");
                    for (pod, message) in events {
                        self.recorder.event(
                            &pod_reference(&pod),
                            EventType::Warning,
                            "FailedAttachVolume",
                            message,
                        );
                    }
                }
                Action::Attach { volume, node, pods } => {
                    let this = Arc::clone(self);
                    tasks.spawn(async move { this.attach(volume, node, pods).await });
                }
                Action::Detach {
                    volume,
                    node,
                    force,
                } => {
                    if let Some(reason) = force {
                        tracing::info!(volume = %volume.name, node = %node, ?reason, "attacherDetacher.DetachVolume started: force detaching");
                    }
                    let this = Arc::clone(self);
                    tasks.spawn(async move { this.detach(volume, node, force.is_none()).await });
                }
            }
        }
    }

    /// Attaches `volume` to `node` through its VolumeAttachment and waits for the external
    /// attacher (`csiAttacher.Attach`).
    async fn attach(&self, volume: AttachableVolume, node: String, pods: Vec<PodRef>) {
        let result = self.attach_volume(&volume, &node).await;
        let now = self.config.clock.now();
        let message_for = |prefix: &str, suffix: String| {
            format!("{prefix} for volume {:?} {suffix}", volume.pv_name)
        };
        let mut state = self.state.lock();
        match result {
            Ok(()) => {
                state.asw.mark_attached(&volume, &node);
                state.pending.finish(&volume.name, &node, true, now);
                drop(state);
                tracing::info!(volume = %volume.name, node = %node, "AttachVolume.Attach succeeded");
                let message = message_for("AttachVolume.Attach succeeded", String::new());
                for pod in &pods {
                    self.recorder.event(
                        &pod_reference(pod),
                        EventType::Normal,
                        "SuccessfulAttachVolume",
                        message.clone(),
                    );
                }
            }
            Err(e) => {
                // The attachment may exist: a detach cleans it up if nobody wants it any more.
                state.asw.mark_uncertain(&volume, &node);
                state.pending.finish(&volume.name, &node, false, now);
                drop(state);
                let cause = api_error::chain(&e);
                tracing::warn!(volume = %volume.name, node = %node, error = %cause, "AttachVolume.Attach failed");
                let message = message_for("AttachVolume.Attach failed", format!(": {cause}"));
                for pod in &pods {
                    self.recorder.event(
                        &pod_reference(pod),
                        EventType::Warning,
                        "FailedAttachVolume",
                        message.clone(),
                    );
                }
            }
        }
    }

    async fn attach_volume(
        &self,
        volume: &AttachableVolume,
        node: &str,
    ) -> Result<(), OperationError> {
        let name = volume.attachment_name(node);
        let key = ObjectKey::cluster(&name);
        if self.attachments.store().get(&key).is_none() {
            let api: Api<VolumeAttachment> = Api::all(self.client.clone());
            let va = VolumeAttachment {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    ..Default::default()
                },
                spec: VolumeAttachmentSpec {
                    attacher: volume.driver.clone(),
                    node_name: node.to_string(),
                    source: VolumeAttachmentSource {
                        persistent_volume_name: Some(volume.pv_name.clone()),
                        ..Default::default()
                    },
                },
                status: None,
            };
            match api.create(&PostParams::default(), &va).await {
                Ok(_) => {}
                Err(e) if api_error::is_already_exists(&e) => {}
                Err(source) => {
                    return Err(OperationError::Api {
                        action: "creating",
                        name,
                        source,
                    })
                }
            }
        }
        let deadline = tokio::time::Instant::now() + ATTACH_TIMEOUT;
        loop {
            if let Some(va) = self.attachments.store().get(&key) {
                let status = va.status.clone().unwrap_or_default();
                if va.metadata.deletion_timestamp.is_some() {
                    return Err(OperationError::Attacher(
                        "volume attachment is being deleted".into(),
                    ));
                }
                if status.attached {
                    return Ok(());
                }
                if let Some(err) = status.attach_error.and_then(|e| e.message) {
                    return Err(OperationError::Attacher(err));
                }
            }
            if tokio::time::Instant::now() > deadline {
                return Err(OperationError::Timeout {
                    driver: volume.driver.clone(),
                    verb: "attach",
                    handle: volume.handle.clone(),
                });
            }
            tokio::time::sleep(RECONCILER_LOOP_PERIOD).await;
        }
    }

    /// Writes the node's status without the volume, then deletes its VolumeAttachment and waits
    /// for it to go (`GenerateDetachVolumeFunc`, `csiAttacher.Detach`).
    async fn detach(&self, volume: AttachableVolume, node: String, verify_safe: bool) {
        let result = self.detach_volume(&volume, &node, verify_safe).await;
        let now = self.config.clock.now();
        let mut state = self.state.lock();
        match result {
            Ok(()) => {
                state.asw.mark_detached(&volume.name, &node);
                state.pending.finish(&volume.name, &node, true, now);
                tracing::info!(volume = %volume.name, node = %node, "DetachVolume.Detach succeeded");
            }
            Err(e) => {
                state
                    .asw
                    .add_volume_to_report_as_attached(&volume.name, &node);
                state.pending.finish(&volume.name, &node, false, now);
                tracing::warn!(volume = %volume.name, node = %node, error = %api_error::chain(&e), "DetachVolume.Detach failed");
            }
        }
    }

    async fn detach_volume(
        &self,
        volume: &AttachableVolume,
        node: &str,
        verify_safe: bool,
    ) -> Result<(), OperationError> {
        let report = self.state.lock().asw.take_report_for(node);
        match self.write_volumes_attached(node, &report).await {
            Ok(()) => {}
            // A node that is gone has no status to update (`processNodeVolumes`).
            Err(e) if api_error::is_not_found(&e) => {}
            Err(source) => {
                self.state.lock().asw.set_node_status_update_needed(node);
                return Err(OperationError::NodeStatus {
                    node: node.to_string(),
                    source,
                });
            }
        }
        if verify_safe {
            let in_use = self
                .nodes
                .store()
                .get(&ObjectKey::cluster(node))
                .and_then(|n| n.status.clone())
                .and_then(|s| s.volumes_in_use)
                .is_some_and(|v| v.contains(&volume.name));
            if in_use {
                return Err(OperationError::InUse);
            }
        }
        let name = volume.attachment_name(node);
        let api: Api<VolumeAttachment> = Api::all(self.client.clone());
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(e) if api_error::is_not_found(&e) => return Ok(()),
            Err(source) => {
                return Err(OperationError::Api {
                    action: "deleting",
                    name,
                    source,
                })
            }
        }
        let key = ObjectKey::cluster(&name);
        let deadline = tokio::time::Instant::now() + ATTACH_TIMEOUT;
        loop {
            match self.attachments.store().get(&key) {
                None => return Ok(()),
                Some(va) => {
                    if let Some(err) = va
                        .status
                        .as_ref()
                        .and_then(|s| s.detach_error.as_ref())
                        .and_then(|e| e.message.clone())
                    {
                        return Err(OperationError::Attacher(err));
                    }
                }
            }
            if tokio::time::Instant::now() > deadline {
                return Err(OperationError::Timeout {
                    driver: volume.driver.clone(),
                    verb: "detach",
                    handle: volume.handle.clone(),
                });
            }
            tokio::time::sleep(RECONCILER_LOOP_PERIOD).await;
        }
    }

    /// Writes `status.volumesAttached` of every node whose list changed (`UpdateNodeStatuses`).
    async fn update_node_statuses(&self) {
        let report = self.state.lock().asw.take_volumes_to_report_attached();
        for (node, volumes) in report {
            if let Err(e) = self.write_volumes_attached(&node, &volumes).await {
                if api_error::is_not_found(&e) {
                    self.state.lock().asw.remove_node_from_attach_updates(&node);
                    continue;
                }
                tracing::info!(node = %node, error = %api_error::message(&e), "could not update node status; will retry");
                self.state.lock().asw.set_node_status_update_needed(&node);
            }
        }
    }

    async fn write_volumes_attached(
        &self,
        node: &str,
        volumes: &[String],
    ) -> Result<(), kube::Error> {
        let api: Api<Node> = Api::all(self.client.clone());
        let patch = json!({ "status": { "volumesAttached": volumes_attached(volumes) } });
        api.patch_status(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .map(|_| ())
    }

    /// Checks that each attached volume's VolumeAttachment still says attached, and forgets the
    /// ones that do not, so they are attached again (`VerifyVolumesAreAttached`).
    fn sync_states(&self) {
        let per_node = self.state.lock().asw.attached_volumes_per_node();
        for (node, volumes) in per_node {
            for v in volumes {
                let attached = self
                    .attachments
                    .store()
                    .get(&ObjectKey::cluster(v.attachment_name(&node)))
                    .is_some_and(|va| va.status.as_ref().is_some_and(|s| s.attached));
                if !attached {
                    tracing::info!(volume = %v.name, node = %node, "volume is no longer attached according to its VolumeAttachment; marking it detached");
                    self.state.lock().asw.mark_detached(&v.name, &node);
                }
            }
        }
    }
}

/// The `status.volumesAttached` entries of `volumes`: CSI volumes have no device path.
pub fn volumes_attached(volumes: &[String]) -> serde_json::Value {
    json!(volumes
        .iter()
        .map(|v| json!({ "name": v, "devicePath": "" }))
        .collect::<Vec<_>>())
}

fn pod_reference(pod: &PodRef) -> k8s_openapi::api::core::v1::ObjectReference {
    k8s_openapi::api::core::v1::ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(pod.namespace.clone()),
        name: Some(pod.name.clone()),
        uid: Some(pod.uid.clone()),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_status_lists_csi_volumes_without_device_paths() {
        assert_eq!(
            volumes_attached(&["kubernetes.io/csi/d^h".into()]),
            json!([{ "name": "kubernetes.io/csi/d^h", "devicePath": "" }])
        );
        assert_eq!(volumes_attached(&[]), json!([]));
    }

    #[test]
    fn a_sync_period_under_a_second_is_refused_with_kubes_message() {
        let mut config = Config {
            reconciler_sync_loop_period: Duration::from_millis(500),
            disable_reconcile_sync: false,
            disable_force_detach_on_timeout: false,
            clock: Arc::new(rkcm_runtime::SystemClock),
        };
        assert!(config.validate().is_err());
        config.reconciler_sync_loop_period = DEFAULT_RECONCILER_SYNC_LOOP_PERIOD;
        assert!(config.validate().is_ok());
    }
}
