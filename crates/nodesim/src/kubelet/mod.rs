//! A kubelet stand-in: moves pods bound to the simulated nodes through their lifecycle.
//!
//! Handlers enqueue the keys of pods bound to served nodes; `sync` reads the cache, asks the pure
//! [`lifecycle::plan`] what to do, and writes the API: pod status through `pods/{name}/status`
//! (merge patch), removal through DELETE with `gracePeriodSeconds: 0` and a UID precondition.
//! Timed changes (ready delay, grace periods, crash back-off) come back through `add_after`, so an
//! idle kubelet does no work at all.
//!
//! Before a pod's containers first start, `sync` reads the Secrets and ConfigMaps its volumes
//! and environment use, with the node's own client (one GET per object; the Node authorizer
//! allows exactly these), and [`pod_objects`] says what is missing. A pod held that way is
//! looked at again after 500ms, doubling to at most 5s, until the objects appear.

pub mod behaviour;
pub mod command;
pub mod containers;
pub mod ip;
pub mod lifecycle;
pub mod logs;
pub mod pod_objects;
pub mod pod_status;
pub mod time;
pub mod volume_manager;
pub mod volumes;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    ConfigMap, ContainerStatus, Node, ObjectReference, Pod, PodStatus, Secret,
};
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::Api;
use parking_lot::Mutex;
use rkcm_runtime::events::{EventRecorder, EventType};
use rkcm_runtime::informer::{InformerFactory, Notification, Store};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, ObjectKey, Shutdown};
use serde_json::json;

pub use lifecycle::{plan, Action, PlanInput};

use crate::config::Config;
use crate::error::{api_code, Error, Result};
use crate::identity::Clients;
use crate::node_set::NodeSet;
use crate::scheduler::predicates::is_terminal;
use crate::NODE_NAME_INDEX;
use ip::{reported_ip_index, PodIps, ReportedIps, REPORTED_IP_INDEX};
use pod_objects::{MountFailure, Objects};
use volume_manager::{AttachWait, VolumeManager};

/// First wait before a pod held by a missing Secret or ConfigMap is looked at again (the
/// volume manager's `initialDurationBeforeRetry`); it doubles per attempt.
const SETUP_RETRY_INITIAL: Duration = Duration::from_millis(500);
/// Longest wait between two looks at a held pod. A kubelet backs off further (to 2m2s for
/// mounts, `maxDurationBeforeRetry`); the simulator keeps it short so that a pod goes on
/// within seconds of its object's creation.
const SETUP_RETRY_MAX: Duration = Duration::from_secs(5);
/// Wait before trying again when the objects could not be read (an API error, or the Node
/// authorizer not yet relating a just-bound pod's objects to its node).
const READ_RETRY: Duration = Duration::from_secs(1);

/// A pod held by what its volumes or environment miss: the looks so far, and when the next
/// is due (and with it the next `FailedMount`/`Failed` events).
#[derive(Clone, Copy, Debug)]
struct SetupRetry {
    attempts: u32,
    next: Timestamp,
}

/// The wait after the `attempts`-th look at a held pod: 500ms doubling, at most 5s.
fn setup_retry_delay(attempts: u32) -> Duration {
    let doublings = attempts.saturating_sub(1).min(16);
    (SETUP_RETRY_INITIAL * 2u32.pow(doublings)).min(SETUP_RETRY_MAX)
}

/// Runs the pods bound to the served nodes.
///
/// Safe to share: handlers only enqueue, and the work queue never hands one pod to two workers at once.
pub struct Kubelet {
    clients: Clients,
    pods: Store<Pod>,
    nodes: NodeSet,
    queue: RateLimitingQueue<ObjectKey>,
    ips: PodIps,
    /// The pod as returned by this kubelet's last write, used while the cache has not caught up,
    /// so a quick second sync never acts on the state before that write.
    written: Mutex<HashMap<ObjectKey, Arc<Pod>>>,
    /// Pod UID → when this process created its sandbox (finer than `startTime`'s whole seconds).
    sandboxes: Mutex<HashMap<String, Timestamp>>,
    /// UIDs of deleted pods whose containers this process has announced stopping.
    stopping: Mutex<HashSet<String>>,
    config: Config,
    recorder: Mutex<Option<EventRecorder>>,
    /// Recorders writing as each node's own kubelet; nodes without one use `recorder`.
    node_recorders: Mutex<HashMap<String, EventRecorder>>,
    /// Reports the nodes' volumes in use and holds pods until their volumes are attached.
    volumes: Arc<VolumeManager>,
    /// Pod UID → retry state of pods held by a missing Secret or ConfigMap.
    setup_retries: Mutex<HashMap<String, SetupRetry>>,
    /// Pod UID → the Secrets and ConfigMaps a sync of the starting pod read, and when; see
    /// [`SETUP_OBJECTS_TTL`].
    setup_objects: Mutex<HashMap<String, (Timestamp, Arc<Objects>)>>,
}

/// How long the Secrets and ConfigMaps read for a starting pod serve its next syncs (its
/// ContainerCreating and Running writes follow within the ready delay), as kube's cache-based
/// secret and configmap managers reuse a read within the node's TTL. A sync that finds one
/// missing, or missing a key, drops them, so the pod's retries always read again.
const SETUP_OBJECTS_TTL: Duration = Duration::from_secs(2);

impl Kubelet {
    /// A kubelet for the nodes in `nodes`, fed by the pod informer of `informers`.
    pub fn new(
        informers: &InformerFactory,
        clients: Clients,
        nodes: NodeSet,
        config: Config,
    ) -> Arc<Self> {
        let informer = informers.informer::<Pod>();
        informer.add_indexer(NODE_NAME_INDEX, node_name_index);
        informer.add_indexer(REPORTED_IP_INDEX, reported_ip_index);
        let volumes = VolumeManager::new(informers, clients.clone(), nodes.clone());
        let this = Arc::new(Self {
            volumes,
            clients,
            pods: informer.store(),
            nodes,
            queue: RateLimitingQueue::new("nodesim_kubelet"),
            ips: PodIps::default(),
            written: Mutex::new(HashMap::new()),
            sandboxes: Mutex::new(HashMap::new()),
            stopping: Mutex::new(HashSet::new()),
            config,
            recorder: Mutex::new(None),
            node_recorders: Mutex::new(HashMap::new()),
            setup_retries: Mutex::new(HashMap::new()),
            setup_objects: Mutex::new(HashMap::new()),
        });
        let weak = Arc::downgrade(&this);
        informer.add_event_handler(move |note| {
            if let Some(kubelet) = weak.upgrade() {
                kubelet.handle(note);
            }
        });
        // A pod waiting for its volumes starts once its node lists them in use and attached.
        let weak = Arc::downgrade(&this);
        informers
            .informer::<Node>()
            .add_event_handler(move |note: Notification<Node>| {
                let Notification::Update { old, new } = note else {
                    return;
                };
                let changed = volumes::attached_on(&old) != volumes::attached_on(&new)
                    || volumes::reported_in_use(&old) != volumes::reported_in_use(&new);
                if let (true, Some(kubelet)) = (changed, weak.upgrade()) {
                    if let Some(name) = new.metadata.name.as_deref() {
                        if kubelet.nodes.contains(name) {
                            kubelet.resync_node(name);
                        }
                    }
                }
            });
        this
    }

    /// Records `Started`, `BackOff` and `Killing` events with `recorder` from now on.
    pub fn set_recorder(&self, recorder: EventRecorder) {
        *self.recorder.lock() = Some(recorder);
    }

    /// Records the events of the pods of each node of `recorders` with its recorder (written
    /// as that node) rather than the one of [`Self::set_recorder`].
    pub fn set_node_recorders(&self, recorders: HashMap<String, EventRecorder>) {
        *self.node_recorders.lock() = recorders;
    }

    /// Stops recording events and drops the recorders, so that their broadcasters can shut down.
    pub fn stop_recording(&self) {
        self.recorder.lock().take();
        self.node_recorders.lock().clear();
    }

    /// The recorder for events about `pod`: its node's own, else the shared one.
    fn recorder_for(&self, pod: &Pod) -> Option<EventRecorder> {
        let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
        if let Some(r) = node.and_then(|n| self.node_recorders.lock().get(n).cloned()) {
            return Some(r);
        }
        self.recorder.lock().clone()
    }

    /// Records what changed for the containers between `old` and `new`, as a kubelet's events.
    fn container_events(&self, pod: &Pod, old: Option<&PodStatus>, new: &PodStatus) {
        let Some(recorder) = self.recorder_for(pod) else {
            return;
        };
        let reference = pod_reference(pod);
        let before = |name: &str| -> Option<&ContainerStatus> {
            old?.container_statuses
                .as_ref()?
                .iter()
                .find(|c| c.name == name)
        };
        for status in new.container_statuses.iter().flatten() {
            let previous = before(&status.name);
            let changed = previous
                .is_none_or(|p| p.state != status.state || p.restart_count != status.restart_count);
            if !changed {
                continue;
            }
            let state = status.state.clone().unwrap_or_default();
            if state.running.is_some() {
                recorder.event(
                    &reference,
                    EventType::Normal,
                    "Started",
                    format!("Started container {}", status.name),
                );
            } else if state
                .waiting
                .as_ref()
                .is_some_and(|w| w.reason.as_deref() == Some(containers::CRASH_LOOP_BACK_OFF))
            {
                recorder.event(
                    &reference,
                    EventType::Warning,
                    "BackOff",
                    format!(
                        "Back-off restarting failed container {} in pod {}",
                        status.name,
                        ObjectKey::from_obj(pod)
                    ),
                );
            }
        }
    }

    /// Records a `Killing` event per running container, once per deleted pod.
    fn announce_stopping(&self, pod: &Pod, uid: &str) {
        if !self.stopping.lock().insert(uid.to_string()) {
            return;
        }
        let Some(recorder) = self.recorder_for(pod) else {
            return;
        };
        let reference = pod_reference(pod);
        let running = pod
            .status
            .iter()
            .flat_map(|s| s.container_statuses.iter().flatten())
            .filter(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()));
        for container in running {
            recorder.event(
                &reference,
                EventType::Normal,
                "Killing",
                format!("Stopping container {}", container.name),
            );
        }
    }

    fn handle(&self, note: Notification<Pod>) {
        match note {
            Notification::Add(pod) | Notification::Update { new: pod, .. } => {
                if self.serves(&pod) {
                    self.queue.add(ObjectKey::from_obj(&*pod));
                }
            }
            Notification::Delete(deleted) => {
                let pod = deleted.object();
                self.forget(&ObjectKey::from_obj(&**pod), pod.metadata.uid.as_deref());
            }
        }
    }

    fn serves(&self, pod: &Pod) -> bool {
        pod.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .is_some_and(|node| self.nodes.contains(node))
    }

    fn forget(&self, key: &ObjectKey, uid: Option<&str>) {
        self.written.lock().remove(key);
        if let Some(uid) = uid {
            self.ips.release(uid);
            self.sandboxes.lock().remove(uid);
            self.stopping.lock().remove(uid);
            self.setup_retries.lock().remove(uid);
            self.setup_objects.lock().remove(uid);
        }
    }

    /// Enqueues every cached pod bound to node `name` (its kubelet resumed).
    pub fn resync_node(&self, name: &str) {
        for key in self.pods.index_keys(NODE_NAME_INDEX, name) {
            self.queue.add(key);
        }
    }

    /// Enqueues every cached pod bound to a served node (after start, to pick up where a previous run stopped).
    pub fn resync_all(&self) {
        self.volumes.resync_all();
        for node in self.nodes.list() {
            for key in self.pods.index_keys(NODE_NAME_INDEX, &node.name) {
                self.queue.add(key);
            }
        }
    }

    /// Runs `workers` loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        let queue = self.queue.clone();
        let volumes = Arc::clone(&self.volumes).run(shutdown.clone());
        let pods = worker::run(
            queue,
            workers,
            shutdown,
            worker::ErrorPolicy::retry_forever(tracing::Level::DEBUG),
            move |key: ObjectKey| {
                let this = Arc::clone(&self);
                async move { this.sync(&key).await }
            },
        );
        tokio::join!(pods, volumes);
    }

    /// The cached pod, or the one from our last write when the cache is older.
    fn freshest(&self, key: &ObjectKey, cached: Arc<Pod>) -> Arc<Pod> {
        let mut written = self.written.lock();
        match written.get(key) {
            Some(ours) if ours.metadata.uid == cached.metadata.uid && newer(ours, &cached) => {
                Arc::clone(ours)
            }
            Some(_) => {
                written.remove(key);
                cached
            }
            None => cached,
        }
    }

    /// [`Kubelet::pod_objects`] of the starting pod `uid`, reused from its last sync within
    /// [`SETUP_OBJECTS_TTL`] of `now`.
    async fn setup_objects(
        &self,
        pod: &Pod,
        uid: &str,
        node: &str,
        now: Timestamp,
    ) -> Option<Arc<Objects>> {
        let cached = self.setup_objects.lock().get(uid).cloned();
        if let Some((read_at, objects)) = cached {
            if !time::at_or_after(now, time::add(read_at, SETUP_OBJECTS_TTL)) {
                return Some(objects);
            }
        }
        let objects = Arc::new(self.pod_objects(pod, node).await?);
        self.setup_objects
            .lock()
            .insert(uid.to_string(), (now, Arc::clone(&objects)));
        Some(objects)
    }

    /// The Secrets and ConfigMaps `pod` refers to, read as the kubelet of `node`; `None` when
    /// one could not be read (not found is an answer, other errors are not).
    async fn pod_objects(&self, pod: &Pod, node: &str) -> Option<Objects> {
        let refs = pod
            .spec
            .as_ref()
            .map(pod_objects::references)
            .unwrap_or_default();
        let mut objects = Objects::default();
        if refs.is_empty() {
            return Some(objects);
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        let client = self.clients.kubelet(node).clone();
        let secrets: Api<Secret> = Api::namespaced(client.clone(), namespace);
        for name in refs.secrets {
            match secrets.get_opt(&name).await {
                Ok(found) => {
                    objects.secrets.insert(name, found);
                }
                Err(e) => {
                    tracing::debug!(secret = %name, namespace, error = %rkcm_runtime::api_error::message(&e), "cannot read a secret the pod uses");
                    return None;
                }
            }
        }
        let config_maps: Api<ConfigMap> = Api::namespaced(client, namespace);
        for name in refs.config_maps {
            match config_maps.get_opt(&name).await {
                Ok(found) => {
                    objects.config_maps.insert(name, found);
                }
                Err(e) => {
                    tracing::debug!(configmap = %name, namespace, error = %rkcm_runtime::api_error::message(&e), "cannot read a configmap the pod uses");
                    return None;
                }
            }
        }
        Some(objects)
    }

    /// Looks at `pod` again on the back-off while what its volumes or environment need is
    /// missing (its status `after` this sync has no sandbox while `mount_failures` remain, or a
    /// container waiting in `CreateContainerConfigError`), recording the kubelet's `FailedMount`
    /// and `Failed` events at each look; forgets the back-off once nothing holds it.
    fn hold_or_release(
        &self,
        key: &ObjectKey,
        pod: &Pod,
        uid: &str,
        after: Option<&PodStatus>,
        mount_failures: &[MountFailure],
    ) {
        let mounts_hold =
            !mount_failures.is_empty() && after.and_then(lifecycle::sandbox_created).is_none();
        let config_errors: Vec<(&str, &str)> = after
            .into_iter()
            .flat_map(|s| {
                s.init_container_statuses
                    .iter()
                    .flatten()
                    .chain(s.container_statuses.iter().flatten())
            })
            .filter_map(|c| {
                let waiting = c.state.as_ref()?.waiting.as_ref()?;
                (waiting.reason.as_deref() == Some(containers::CREATE_CONTAINER_CONFIG_ERROR)).then(
                    || {
                        (
                            c.name.as_str(),
                            waiting.message.as_deref().unwrap_or_default(),
                        )
                    },
                )
            })
            .collect();
        if !mounts_hold && config_errors.is_empty() {
            self.setup_retries.lock().remove(uid);
            return;
        }
        let now = self.config.clock.now();
        let (look, wait) = {
            let mut retries = self.setup_retries.lock();
            let retry = retries.entry(uid.to_string()).or_insert(SetupRetry {
                attempts: 0,
                next: now,
            });
            if time::at_or_after(now, retry.next) {
                retry.attempts = retry.attempts.saturating_add(1);
                let wait = setup_retry_delay(retry.attempts);
                retry.next = time::add(now, wait);
                (true, wait)
            } else {
                (false, time::until(now, retry.next))
            }
        };
        self.queue.add_after(key.clone(), wait);
        if !look {
            return;
        }
        let Some(recorder) = self.recorder_for(pod) else {
            return;
        };
        let reference = pod_reference(pod);
        if mounts_hold {
            for failure in mount_failures {
                recorder.event(
                    &reference,
                    EventType::Warning,
                    "FailedMount",
                    failure.message(),
                );
            }
        }
        for (_, message) in config_errors {
            recorder.event(
                &reference,
                EventType::Warning,
                "Failed",
                format!("Error: {message}"),
            );
        }
    }

    #[tracing::instrument(skip(self), fields(component = "nodesim-kubelet", pod = %key))]
    async fn sync(&self, key: &ObjectKey) -> Result<()> {
        let Some(cached) = self.pods.get(key) else {
            self.forget(key, None);
            return Ok(());
        };
        let pod = self.freshest(key, cached);
        let Some(node) = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .and_then(|name| self.nodes.get(name))
        else {
            // Not ours, or its node was deleted: the pod is left for PodGC.
            return Ok(());
        };
        if self.nodes.is_stopped(&node.name) {
            // The node's kubelet is stopped: its pods keep their last status until it resumes.
            return Ok(());
        }
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let status = pod.status.as_ref();
        let phase = status.and_then(|s| s.phase.as_deref());
        if is_terminal(&pod) {
            self.ips.release(&uid);
        }
        if phase != Some("Pending") {
            self.sandboxes.lock().remove(&uid);
        }
        let needs_ip = status.and_then(|s| s.pod_ip.as_ref()).is_none()
            && pod.metadata.deletion_timestamp.is_none()
            && !is_terminal(&pod);
        let host_network = pod
            .spec
            .as_ref()
            .and_then(|s| s.host_network)
            .unwrap_or(false);
        let pod_ip = if host_network {
            node.internal_ip()
        } else if needs_ip {
            let cidr = self.nodes.pod_cidr(&node.name);
            let reported = ReportedIps::new(&self.pods, &node.name);
            self.ips.ip_for(&node, cidr.as_deref(), &uid, reported)
        } else {
            String::new()
        };
        let host_ip = node.internal_ip();
        let now = self.config.clock.now();
        if pod.metadata.deletion_timestamp.is_some() && !is_terminal(&pod) {
            self.announce_stopping(&pod, &uid);
        }
        let has_sandbox = status.and_then(lifecycle::sandbox_created).is_some();
        let starting =
            !has_sandbox && pod.metadata.deletion_timestamp.is_none() && !is_terminal(&pod);
        if starting {
            match self.volumes.wait_for_attach(&pod, &node.name) {
                AttachWait::Ready => {}
                // The node update that lists them brings the pod back.
                AttachWait::Attaching(waiting) => {
                    tracing::debug!(pod = %key, volumes = ?waiting, "waiting for volumes to attach");
                    return Ok(());
                }
                AttachWait::Unknown => {
                    self.queue.add_after(key.clone(), Duration::from_secs(1));
                    return Ok(());
                }
            }
        }
        // What the volumes and the environment of containers yet to start need.
        let awaits_setup = lifecycle::awaits_setup(&pod);
        let (mount_failures, config_errors) = if awaits_setup {
            let Some(objects) = self.setup_objects(&pod, &uid, &node.name, now).await else {
                self.queue.add_after(key.clone(), READ_RETRY);
                return Ok(());
            };
            let mounts = if has_sandbox {
                Vec::new()
            } else {
                pod_objects::mount_failures(&pod, &objects)
            };
            let errors = pod_objects::config_errors(&pod, &objects);
            if !mounts.is_empty() || !errors.is_empty() {
                self.setup_objects.lock().remove(&uid);
            }
            (mounts, errors)
        } else {
            self.setup_objects.lock().remove(&uid);
            (Vec::new(), BTreeMap::new())
        };
        let input = PlanInput {
            now,
            host_ip: &host_ip,
            pod_ip: &pod_ip,
            ready_delay: self.config.pod_ready_delay,
            termination_grace_cap: self.config.termination_grace_cap,
            sandbox_created_at: self.sandboxes.lock().get(&uid).copied(),
            mount_failures: &mount_failures,
            config_errors: &config_errors,
        };
        // Each node's kubelet writes its pods as the node.
        let api: Api<Pod> = Api::namespaced(
            self.clients.kubelet(&node.name).clone(),
            key.namespace_str(),
        );
        let action = plan(&pod, &input);
        // Held by a missing Secret or ConfigMap: the status the decision leaves says how.
        let after = match &action {
            Action::UpdateStatus(new_status) => Some(&**new_status),
            _ => status,
        };
        if awaits_setup {
            self.hold_or_release(key, &pod, &uid, after, &mount_failures);
        } else {
            self.setup_retries.lock().remove(&uid);
        }
        match action {
            Action::Idle => Ok(()),
            Action::Wait(delay) => {
                self.queue.add_after(key.clone(), delay);
                Ok(())
            }
            Action::UpdateStatus(new_status) => {
                let creating_sandbox =
                    !has_sandbox && lifecycle::sandbox_created(&new_status).is_some();
                let mut metadata = json!({ "uid": uid });
                if let Some(output) = logs::record(&pod, &new_status) {
                    metadata["annotations"] = json!({ logs::CONTAINER_LOGS_ANNOTATION: output });
                }
                let patch = json!({ "metadata": metadata, "status": new_status });
                match api
                    .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(updated) => {
                        self.container_events(&pod, status, &new_status);
                        if creating_sandbox {
                            self.sandboxes.lock().insert(uid, now);
                        }
                        self.written.lock().insert(key.clone(), Arc::new(updated));
                        // Decide the next step from what was written, even if no watch event follows.
                        self.queue.add(key.clone());
                        Ok(())
                    }
                    Err(e) if api_code(&e) == Some(404) => Ok(()),
                    Err(source) => Err(Error::PodStatus {
                        pod: key.to_string(),
                        source,
                    }),
                }
            }
            Action::Delete => {
                let params = DeleteParams {
                    grace_period_seconds: Some(0),
                    preconditions: Some(Preconditions {
                        uid: Some(uid.clone()),
                        resource_version: None,
                    }),
                    ..Default::default()
                };
                match api.delete(&key.name, &params).await {
                    Ok(_) => {
                        tracing::debug!(pod = %key, "terminated pod removed");
                        Ok(())
                    }
                    // Gone already, or a different pod now has the name.
                    Err(e) if matches!(api_code(&e), Some(404 | 409)) => Ok(()),
                    Err(source) => Err(Error::DeletePod {
                        pod: key.to_string(),
                        source,
                    }),
                }
            }
        }
    }
}

/// A reference to `pod` for events.
pub fn pod_reference(pod: &Pod) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        name: pod.metadata.name.clone(),
        namespace: pod.metadata.namespace.clone(),
        uid: pod.metadata.uid.clone(),
        resource_version: pod.metadata.resource_version.clone(),
        ..Default::default()
    }
}

/// Index function of [`NODE_NAME_INDEX`]: the node a pod is bound to.
pub fn node_name_index(pod: &Pod) -> Vec<String> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty())
        .into_iter()
        .collect()
}

/// True when `a` is a later version of the object than `b` (resource versions compared as integers,
/// which the rkcm API server and etcd use; anything else counts as not newer).
fn newer(a: &Pod, b: &Pod) -> bool {
    let version = |p: &Pod| {
        p.metadata
            .resource_version
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok())
    };
    matches!((version(a), version(b)), (Some(a), Some(b)) if a > b)
}
