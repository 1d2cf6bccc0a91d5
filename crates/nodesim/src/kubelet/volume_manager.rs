//! The kubelet's volume manager, reduced to what the attach/detach controller sees of it: each
//! served node reports in `status.volumesInUse` the attachable volumes of its pods that have not
//! finished (deleting ones included, until they are gone), and a pod starts only once each of
//! them is listed there and in `status.volumesAttached` (`WaitForAttachAndMount`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use crate::identity::Clients;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::CSIDriver;
use kube::api::{Api, Patch, PatchParams};
use rkcm_runtime::informer::{InformerFactory, Notification, Store};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, ObjectKey, Shutdown};
use serde_json::json;

use super::volumes;
use crate::error::{api_code, Error, Result};
use crate::node_set::NodeSet;
use crate::scheduler::predicates::is_terminal;
use crate::NODE_NAME_INDEX;

/// How soon a node or pod is looked at again while a claim or volume is not cached yet.
const RECHECK: Duration = Duration::from_secs(1);

/// Whether a pod's volumes let it start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttachWait {
    /// Every attachable volume is attached (or there is none).
    Ready,
    /// Waiting for these volumes to be reported in use and attached; a node update brings the
    /// pod back.
    Attaching(Vec<String>),
    /// A claim is unbound or its volume not cached: look again soon.
    Unknown,
}

/// Reports `volumesInUse` of the served nodes and tells the kubelet when a pod's volumes are
/// attached. Safe to share: handlers only enqueue node names.
pub struct VolumeManager {
    clients: Clients,
    pods: Store<Pod>,
    nodes: Store<Node>,
    claims: Store<PersistentVolumeClaim>,
    volumes: Store<PersistentVolume>,
    drivers: Store<CSIDriver>,
    served: NodeSet,
    queue: RateLimitingQueue<ObjectKey>,
}

impl VolumeManager {
    /// A volume manager for the nodes in `served`, on the informers of `informers`.
    pub fn new(informers: &InformerFactory, clients: Clients, served: NodeSet) -> Arc<Self> {
        let pods = informers.informer::<Pod>();
        let queue = RateLimitingQueue::new("nodesim_volume_manager");
        let q = queue.clone();
        let nodes = served.clone();
        pods.add_event_handler(move |note: Notification<Pod>| {
            let pod = match &note {
                Notification::Add(p) | Notification::Update { new: p, .. } => p,
                Notification::Delete(d) => d.object(),
            };
            // A pod without claims changes no node's volumes in use.
            if rkcm_runtime::storage::pod_claim_names(pod).is_empty() {
                return;
            }
            if let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) {
                if nodes.contains(node) {
                    q.add(ObjectKey::cluster(node));
                }
            }
        });
        Arc::new(Self {
            clients,
            pods: pods.store(),
            nodes: informers.informer::<Node>().store(),
            claims: informers.informer::<PersistentVolumeClaim>().store(),
            volumes: informers.informer::<PersistentVolume>().store(),
            drivers: informers.informer::<CSIDriver>().store(),
            served,
            queue,
        })
    }

    /// The attachable volumes of `pod`, `None` while they cannot be told yet.
    pub fn needed(&self, pod: &Pod) -> Option<BTreeSet<String>> {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        volumes::attachable_volumes(
            pod,
            |c| self.claims.get(&ObjectKey::new(namespace, c)),
            |v| self.volumes.get(&ObjectKey::cluster(v)),
            |d| self.drivers.get(&ObjectKey::cluster(d)),
        )
    }

    /// Whether `pod` may start on `node`: its volumes reported in use and attached there.
    pub fn wait_for_attach(&self, pod: &Pod, node: &str) -> AttachWait {
        let Some(needed) = self.needed(pod) else {
            return AttachWait::Unknown;
        };
        if needed.is_empty() {
            return AttachWait::Ready;
        }
        let Some(node) = self.nodes.get(&ObjectKey::cluster(node)) else {
            return AttachWait::Unknown;
        };
        let in_use = volumes::reported_in_use(&node);
        let mut waiting = volumes::unattached(&needed, &node);
        waiting.extend(needed.iter().filter(|v| !in_use.contains(*v)).cloned());
        waiting.sort();
        waiting.dedup();
        if waiting.is_empty() {
            AttachWait::Ready
        } else {
            AttachWait::Attaching(waiting)
        }
    }

    /// Looks at every served node again (after start).
    pub fn resync_all(&self) {
        for node in self.served.list() {
            self.queue.add(ObjectKey::cluster(node.name));
        }
    }

    /// Reports until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        let queue = self.queue.clone();
        worker::run(
            queue,
            1,
            shutdown,
            worker::ErrorPolicy::retry_forever(tracing::Level::DEBUG),
            move |key: ObjectKey| {
                let this = Arc::clone(&self);
                async move { this.sync(&key.name).await }
            },
        )
        .await;
    }

    /// Writes the node's `status.volumesInUse` when it differs from its pods' volumes.
    async fn sync(&self, node: &str) -> Result<()> {
        if !self.served.contains(node) || self.served.is_stopped(node) {
            return Ok(());
        }
        let Some(cached) = self.nodes.get(&ObjectKey::cluster(node)) else {
            return Ok(());
        };
        let mut in_use = BTreeSet::new();
        let mut open = false;
        for pod in self.pods.by_index(NODE_NAME_INDEX, node) {
            if is_terminal(&pod) {
                continue;
            }
            match self.needed(&pod) {
                Some(v) => in_use.extend(v),
                None => open = true,
            }
        }
        if open {
            self.queue.add_after(ObjectKey::cluster(node), RECHECK);
        }
        if in_use == volumes::reported_in_use(&cached) {
            return Ok(());
        }
        // The node's own kubelet reports its volumes in use.
        let api: Api<Node> = Api::all(self.clients.kubelet(node).clone());
        let patch = json!({ "status": { "volumesInUse": in_use } });
        match api
            .patch_status(node, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if api_code(&e) == Some(404) => Ok(()),
            Err(source) => Err(Error::NodeStatus {
                node: node.to_string(),
                source,
            }),
        }
    }
}
