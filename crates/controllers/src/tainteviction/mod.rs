//! The taint-eviction controller (`pkg/controller/tainteviction`): deletes pods from nodes with
//! NoExecute taints they do not tolerate.
//!
//! A pod that does not tolerate one of its node's NoExecute taints is deleted at once; one that
//! tolerates them all for a while (`tolerationSeconds`) is deleted when the shortest toleration
//! runs out, counted from when the controller first saw it ([`decision`]); the deletion is
//! cancelled when the taints go or the pod goes. Before deleting, the pod gets the
//! `DisruptionTarget` condition (reason `DeletionByTaintManager`). Both the marking and the
//! cancelling are recorded as `TaintManagerEviction` events.

pub mod decision;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod, PodCondition, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::Client;
use parking_lot::Mutex;
use rkcm_runtime::events::{EventRecorder, EventType};
use rkcm_runtime::informer::{wait_for_cache_sync, InformerFactory, Notification, SharedInformer};
use rkcm_runtime::worker::{self, ErrorPolicy};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{api_error, Clock, ObjectKey, Shutdown};
use serde_json::json;
use tokio::task::AbortHandle;

use self::decision::{decide, Decision, Scheduled};
use crate::nodelifecycle::{pod_node_name, POD_NODE_NAME_INDEX};

/// The controller's event source and name.
pub const CONTROLLER_NAME: &str = "taint-eviction-controller";
/// Workers of the node and pod update queues (`UpdateWorkerSize`).
pub const UPDATE_WORKERS: usize = 8;
/// Attempts at deleting a pod (`retries`).
const DELETE_RETRIES: usize = 5;

/// The `DisruptionTarget` condition a pod gets before the controller deletes it.
pub fn disruption_condition(now: Timestamp) -> PodCondition {
    PodCondition {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        reason: Some("DeletionByTaintManager".into()),
        message: Some("Taint manager: deleting due to NoExecute taint".into()),
        last_transition_time: Some(Time(now)),
        ..PodCondition::default()
    }
}

/// The `DisruptionTarget` condition to write on `pod` before deleting it, or `None` when the pod
/// has it already, same status, reason, message and times (`apipod.UpdatePodCondition`: the
/// transition time moves only with the status).
pub fn disruption_condition_update(pod: &Pod, now: Timestamp) -> Option<PodCondition> {
    let mut wanted = disruption_condition(now);
    let old = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default()
        .iter()
        .find(|c| c.type_ == wanted.type_);
    let Some(old) = old else {
        return Some(wanted);
    };
    if old.status == wanted.status {
        wanted.last_transition_time = old.last_transition_time.clone();
    }
    let equal = old.status == wanted.status
        && old.reason == wanted.reason
        && old.message == wanted.message
        && old.last_probe_time == wanted.last_probe_time
        && old.last_transition_time == wanted.last_transition_time;
    (!equal).then_some(wanted)
}

/// The node's NoExecute taints (`getNoExecuteTaints`).
pub fn no_execute_taints(node: &Node) -> Vec<Taint> {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default()
        .iter()
        .filter(|t| t.effect == "NoExecute")
        .cloned()
        .collect()
}

/// Errors evicting a pod.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The pod could not be deleted.
    #[error("failed to delete pod {pod}")]
    Delete {
        /// The pod.
        pod: ObjectKey,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// A pod's eviction: waiting for its time, or done (kept so that it is not repeated until
/// cancelled, as kube's `TimedWorkerQueue` keeps a finished worker's key).
enum Work {
    Scheduled { at: Scheduled, handle: AbortHandle },
    Done,
}

/// The taint-eviction controller.
pub struct TaintEvictionController {
    client: Client,
    nodes: SharedInformer<Node>,
    pods: SharedInformer<Pod>,
    recorder: EventRecorder,
    clock: Arc<dyn Clock>,
    /// NoExecute taints by node name, as last processed.
    tainted: Mutex<HashMap<String, Vec<Taint>>>,
    work: Mutex<HashMap<ObjectKey, Work>>,
    node_queue: RateLimitingQueue<String>,
    pod_queue: RateLimitingQueue<ObjectKey>,
}

impl TaintEvictionController {
    /// The controller over the factory's Node and Pod informers.
    pub fn new(
        factory: &InformerFactory,
        client: Client,
        recorder: EventRecorder,
        clock: Arc<dyn Clock>,
    ) -> Arc<Self> {
        let nodes = factory.informer::<Node>();
        let pods = factory.informer::<Pod>();
        pods.add_indexer(POD_NODE_NAME_INDEX, pod_node_name);
        let this = Arc::new(Self {
            client,
            nodes,
            pods,
            recorder,
            clock,
            tainted: Mutex::new(HashMap::new()),
            work: Mutex::new(HashMap::new()),
            node_queue: RateLimitingQueue::new("noexec_taint_node"),
            pod_queue: RateLimitingQueue::new("noexec_taint_pod"),
        });
        let weak = Arc::downgrade(&this);
        this.nodes.add_event_handler(move |note| {
            let Some(this) = weak.upgrade() else { return };
            let name = match &note {
                Notification::Add(n) => n.metadata.name.clone(),
                Notification::Update { old, new } => {
                    (no_execute_taints(old) != no_execute_taints(new) || this.tainted_differs(new))
                        .then(|| new.metadata.name.clone())
                        .flatten()
                }
                Notification::Delete(d) => d.object().metadata.name.clone(),
            };
            if let Some(name) = name {
                this.node_queue.add(name);
            }
        });
        let weak = Arc::downgrade(&this);
        this.pods.add_event_handler(move |note| {
            let Some(this) = weak.upgrade() else { return };
            let pod = match &note {
                Notification::Add(p) | Notification::Update { new: p, .. } => p,
                Notification::Delete(d) => d.object(),
            };
            this.pod_queue.add(ObjectKey::from_obj(&**pod));
        });
        this
    }

    fn tainted_differs(&self, node: &Node) -> bool {
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let taints = no_execute_taints(node);
        self.tainted
            .lock()
            .get(name)
            .map_or(!taints.is_empty(), |t| *t != taints)
    }

    /// Waits for the caches and runs the node and pod workers until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        tracing::info!(controller = CONTROLLER_NAME, "starting controller");
        if wait_for_cache_sync(CONTROLLER_NAME, &[&self.pods, &self.nodes], &shutdown).await {
            let this = Arc::clone(&self);
            let nodes = worker::run(
                self.node_queue.clone(),
                UPDATE_WORKERS,
                shutdown.clone(),
                ErrorPolicy::<std::convert::Infallible>::handle_error(),
                move |name: String| {
                    let this = Arc::clone(&this);
                    async move {
                        this.handle_node(&name);
                        Ok(())
                    }
                },
            );
            let this = Arc::clone(&self);
            let pods = worker::run(
                self.pod_queue.clone(),
                UPDATE_WORKERS,
                shutdown.clone(),
                ErrorPolicy::<std::convert::Infallible>::handle_error(),
                move |key: ObjectKey| {
                    let this = Arc::clone(&this);
                    async move {
                        this.handle_pod(&key);
                        Ok(())
                    }
                },
            );
            tokio::join!(nodes, pods);
        }
        let mut work = self.work.lock();
        for (_, w) in work.drain() {
            if let Work::Scheduled { handle, .. } = w {
                handle.abort();
            }
        }
        tracing::info!(controller = CONTROLLER_NAME, "shutting down controller");
    }

    /// Re-reads a node's NoExecute taints and re-decides for each of its pods (`handleNodeUpdate`).
    pub fn handle_node(self: &Arc<Self>, name: &str) {
        let node = self.nodes.store().get(&ObjectKey::cluster(name));
        let taints = node.as_deref().map(no_execute_taints).unwrap_or_default();
        {
            let mut tainted = self.tainted.lock();
            if taints.is_empty() {
                tainted.remove(name);
            } else {
                tainted.insert(name.to_string(), taints.clone());
            }
        }
        if node.is_none() {
            return;
        }
        for pod in self.pods.store().by_index(POD_NODE_NAME_INDEX, name) {
            self.process_pod_on_node(&pod, &taints);
        }
    }

    /// Re-decides for one pod (`handlePodUpdate`); a pod gone cancels its eviction.
    pub fn handle_pod(self: &Arc<Self>, key: &ObjectKey) {
        let Some(pod) = self.pods.store().get(key) else {
            self.cancel_work(key, None);
            return;
        };
        let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) else {
            return;
        };
        let taints = self.tainted.lock().get(node).cloned().unwrap_or_default();
        self.process_pod_on_node(&pod, &taints);
    }

    fn process_pod_on_node(self: &Arc<Self>, pod: &Arc<Pod>, taints: &[Taint]) {
        let key = ObjectKey::from_obj(&**pod);
        let tolerations = pod
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.as_deref())
            .unwrap_or_default();
        let now = self.clock.now();
        let existing = match self.work.lock().get(&key) {
            Some(Work::Scheduled { at, .. }) => Some(*at),
            _ => None,
        };
        match decide(taints, tolerations, existing, now) {
            Decision::Cancel => self.cancel_work(&key, Some(pod)),
            Decision::Keep => {}
            Decision::EvictNow => {
                tracing::debug!(pod = %key, "not all taints are tolerated after update for pod on node");
                self.cancel_work(&key, Some(pod));
                self.add_work(
                    key,
                    Scheduled {
                        created_at: now,
                        fire_at: now,
                    },
                );
            }
            Decision::Schedule(at) => {
                if existing.is_some() {
                    self.cancel_work(&key, Some(pod));
                }
                self.add_work(key, at);
            }
        }
    }

    /// Cancels the pod's eviction; records `Cancelling deletion` when one was waiting.
    fn cancel_work(&self, key: &ObjectKey, pod: Option<&Arc<Pod>>) {
        let removed = self.work.lock().remove(key);
        if let Some(Work::Scheduled { handle, .. }) = removed {
            handle.abort();
            tracing::info!(pod = %key, "cancelling TaintEvictionController pod eviction");
            if let Some(pod) = pod {
                self.recorder.event_for(
                    &**pod,
                    EventType::Normal,
                    "TaintManagerEviction",
                    format!("Cancelling deletion of Pod {key}"),
                );
            }
        }
    }

    /// Schedules the eviction unless one exists for the key (`TimedWorkerQueue.AddWork`).
    fn add_work(self: &Arc<Self>, key: ObjectKey, at: Scheduled) {
        let mut work = self.work.lock();
        if work.contains_key(&key) {
            return;
        }
        let delay = at.fire_at.duration_since(self.clock.now());
        let delay = Duration::try_from(delay).unwrap_or(Duration::ZERO);
        let this = Arc::clone(self);
        let task_key = key.clone();
        let handle = tokio::spawn(async move {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            let result = this.evict(&task_key).await;
            let mut work = this.work.lock();
            match result {
                Ok(()) => {
                    work.insert(task_key, Work::Done);
                }
                Err(e) => {
                    tracing::error!(error = %api_error::Chain(&e), "taint eviction failed");
                    work.remove(&task_key);
                }
            }
        })
        .abort_handle();
        work.insert(key, Work::Scheduled { at, handle });
    }

    /// Marks the pod for deletion: the event, the `DisruptionTarget` condition, the delete
    /// (`deletePodHandler`, `addConditionAndDeletePod`).
    async fn evict(&self, key: &ObjectKey) -> Result<(), Error> {
        tracing::info!(pod = %key, "deleting pod");
        if let Some(pod) = self.pods.store().get(key) {
            self.recorder.event_for(
                &*pod,
                EventType::Normal,
                "TaintManagerEviction",
                format!("Marking for deletion Pod {key}"),
            );
        }
        let api: Api<Pod> = Api::namespaced(self.client.clone(), key.namespace_str());
        let mut last = None;
        for _ in 0..DELETE_RETRIES {
            match self.add_condition_and_delete(&api, key).await {
                Ok(()) => {
                    metrics().pod_deletions.inc();
                    return Ok(());
                }
                Err(e) if api_error::is_not_found(&e) => return Ok(()),
                Err(e) => last = Some(e),
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        match last {
            Some(source) => Err(Error::Delete {
                pod: key.clone(),
                source,
            }),
            None => Ok(()),
        }
    }

    async fn add_condition_and_delete(
        &self,
        api: &Api<Pod>,
        key: &ObjectKey,
    ) -> Result<(), kube::Error> {
        let pod = api.get(&key.name).await?;
        if let Some(condition) = disruption_condition_update(&pod, self.clock.now()) {
            // PatchPodStatus: a strategic merge of the condition, by type, on this very pod.
            let patch = json!({
                "metadata": { "uid": pod.metadata.uid },
                "status": { "conditions": [condition] },
            });
            api.patch_status(
                &key.name,
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            )
            .await?;
        }
        api.delete(&key.name, &DeleteParams::default()).await?;
        Ok(())
    }
}

/// The controller's counter (`taint_eviction_controller_pod_deletions_total`).
pub struct Metrics {
    /// Pods deleted since start.
    pub pod_deletions: prometheus_client::metrics::counter::Counter,
}

/// The metrics, registered on first use.
pub fn metrics() -> &'static Metrics {
    static METRICS: std::sync::OnceLock<Metrics> = std::sync::OnceLock::new();
    METRICS.get_or_init(|| Metrics {
        pod_deletions: rkcm_runtime::metrics::register(
            "taint_eviction_controller_pod_deletions",
            "Total number of Pods deleted by TaintEvictionController since its start.",
            prometheus_client::metrics::counter::Counter::default(),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;
    use k8s_openapi::api::core::v1::PodStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use rkcm_runtime::informer::InformerFactory;
    use rkcm_runtime::testing::{ApiResponse, FakeApi};
    use rkcm_runtime::FakeClock;

    fn now() -> Timestamp {
        "2025-01-01T00:00:00Z".parse().unwrap()
    }

    fn pod(conditions: Vec<PodCondition>) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                namespace: Some("default".into()),
                uid: Some("p-uid".into()),
                resource_version: Some("4".into()),
                ..ObjectMeta::default()
            },
            status: Some(PodStatus {
                conditions: Some(conditions),
                ..PodStatus::default()
            }),
            ..Pod::default()
        }
    }

    #[test]
    fn the_disruption_condition_is_written_only_when_it_changes() {
        let earlier: Timestamp = "2024-12-31T00:00:00Z".parse().unwrap();
        // Absent: added, transition now.
        let added = disruption_condition_update(&pod(vec![]), now()).unwrap();
        assert_eq!(added, disruption_condition(now()));
        // Present and the same: nothing to write.
        assert_eq!(
            disruption_condition_update(&pod(vec![disruption_condition(earlier)]), now()),
            None
        );
        // Same status, another reason: rewritten, keeping its transition time.
        let mut other = disruption_condition(earlier);
        other.reason = Some("PreemptionByScheduler".into());
        let rewritten = disruption_condition_update(&pod(vec![other]), now()).unwrap();
        assert_eq!(rewritten.reason.as_deref(), Some("DeletionByTaintManager"));
        assert_eq!(rewritten.last_transition_time, Some(Time(earlier)));
        // Another status: rewritten, transition now.
        let mut reset = disruption_condition(earlier);
        reset.status = "False".into();
        let flipped = disruption_condition_update(&pod(vec![reset]), now()).unwrap();
        assert_eq!(flipped.status, "True");
        assert_eq!(flipped.last_transition_time, Some(Time(now())));
    }

    async fn evict_requests(current: Pod) -> Vec<(Method, String, serde_json::Value)> {
        let api = FakeApi::new(move |req| match req.method {
            Method::GET | Method::DELETE => ApiResponse::ok(&current),
            Method::PATCH => ApiResponse::ok(&current),
            _ => ApiResponse::not_found("pods", "p"),
        });
        let factory = InformerFactory::new(api.client(), Duration::ZERO);
        let (recorder, _events) = EventRecorder::channel(CONTROLLER_NAME, 10);
        let ctrl = TaintEvictionController::new(
            &factory,
            api.client(),
            recorder,
            Arc::new(FakeClock::new(now())),
        );
        ctrl.evict(&ObjectKey::new("default", "p")).await.unwrap();
        api.requests()
            .into_iter()
            .map(|r| (r.method, r.path, r.body))
            .collect()
    }

    // addConditionAndDeletePod: read the pod, patch DisruptionTarget on its status (with its
    // uid as precondition), then delete it.
    #[tokio::test]
    async fn eviction_patches_the_disruption_condition_then_deletes() {
        let requests = evict_requests(pod(vec![])).await;
        let path = "/api/v1/namespaces/default/pods/p";
        let methods: Vec<(&Method, &str)> =
            requests.iter().map(|(m, p, _)| (m, p.as_str())).collect();
        assert_eq!(
            methods,
            vec![
                (&Method::GET, path),
                (&Method::PATCH, "/api/v1/namespaces/default/pods/p/status"),
                (&Method::DELETE, path),
            ]
        );
        let patch = &requests[1].2;
        assert_eq!(patch["metadata"]["uid"], "p-uid");
        let condition = &patch["status"]["conditions"][0];
        assert_eq!(condition["type"], "DisruptionTarget");
        assert_eq!(condition["status"], "True");
        assert_eq!(condition["reason"], "DeletionByTaintManager");
        assert_eq!(
            condition["message"],
            "Taint manager: deleting due to NoExecute taint"
        );
    }

    #[tokio::test]
    async fn a_pod_already_marked_is_only_deleted() {
        let requests = evict_requests(pod(vec![disruption_condition(now())])).await;
        let methods: Vec<&Method> = requests.iter().map(|(m, _, _)| m).collect();
        assert_eq!(methods, vec![&Method::GET, &Method::DELETE]);
    }
}
