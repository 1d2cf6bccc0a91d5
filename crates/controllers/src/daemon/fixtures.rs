//! Test fixtures shaped like `daemon_controller_test.go`'s `newDaemonSet`, `newNode` and
//! `newPod`, and an offline controller over seeded caches.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{
    DaemonSet, DaemonSetSpec, DaemonSetStatus, DaemonSetUpdateStrategy, RollingUpdateDaemonSet,
};
use k8s_openapi::api::core::v1::{
    Container, Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodCondition, PodSpec, PodStatus,
    PodTemplateSpec, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::ObjectMeta;
use rkcm_runtime::events::EventRecorder;
use rkcm_runtime::informer::InformerFactory;
use rkcm_runtime::testing::{offline_client, FakePodControl};
use rkcm_runtime::{Clock, FakeClock, ObjectKey};

use super::pod_template::{replace_node_name_affinity, CONTROLLER_REVISION_HASH_LABEL};
use super::{Config, DaemonSetsController};

/// The labels of the test daemon sets' pods (`simpleDaemonSetLabel`).
pub(crate) fn simple_labels() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("name".to_string(), "simple-daemon".to_string()),
        ("type".to_string(), "production".to_string()),
    ])
}

/// A timestamp `secs` after a fixed instant.
pub(crate) fn ts(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).expect("valid timestamp")
}

/// A DaemonSet `name` in `default` (`newDaemonSet`): RollingUpdate with maxUnavailable 1,
/// history limit 10, a template with the simple labels.
pub(crate) fn new_daemon_set(name: &str) -> DaemonSet {
    DaemonSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            generation: Some(1),
            resource_version: Some("1".into()),
            ..Default::default()
        },
        spec: Some(DaemonSetSpec {
            selector: LabelSelector {
                match_labels: Some(simple_labels()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(simple_labels()),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "foo".into(),
                        image: Some("foo/bar".into()),
                        ..Default::default()
                    }],
                    restart_policy: Some("Always".into()),
                    ..Default::default()
                }),
            },
            update_strategy: Some(DaemonSetUpdateStrategy {
                type_: Some("RollingUpdate".into()),
                rolling_update: Some(RollingUpdateDaemonSet {
                    max_unavailable: Some(IntOrString::Int(1)),
                    max_surge: Some(IntOrString::Int(0)),
                }),
            }),
            revision_history_limit: Some(10),
            min_ready_seconds: None,
        }),
        status: Some(DaemonSetStatus::default()),
    }
}

/// Sets a RollingUpdate strategy with `max_unavailable` and `max_surge`.
pub(crate) fn with_rolling_update(
    mut ds: DaemonSet,
    max_unavailable: IntOrString,
    max_surge: IntOrString,
) -> DaemonSet {
    ds.spec.as_mut().expect("spec").update_strategy = Some(DaemonSetUpdateStrategy {
        type_: Some("RollingUpdate".into()),
        rolling_update: Some(RollingUpdateDaemonSet {
            max_unavailable: Some(max_unavailable),
            max_surge: Some(max_surge),
        }),
    });
    ds
}

/// A Ready node `name` with `labels` (`newNode`).
pub(crate) fn new_node(name: &str, labels: Option<&[(&str, &str)]>) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: labels.map(|l| {
                l.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            }),
            resource_version: Some("1".into()),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

/// A taint `key=value:effect`.
pub(crate) fn taint(key: &str, value: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: (!value.is_empty()).then(|| value.into()),
        effect: effect.into(),
        time_added: None,
    }
}

/// A toleration.
pub(crate) fn toleration(key: &str, operator: &str, value: &str, effect: &str) -> Toleration {
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Toleration {
        key: opt(key),
        operator: opt(operator),
        value: opt(value),
        effect: opt(effect),
        toleration_seconds: None,
    }
}

/// The controller reference `ds` puts on its pods.
pub(crate) fn controller_ref(ds: &DaemonSet) -> OwnerReference {
    OwnerReference {
        api_version: "apps/v1".into(),
        kind: "DaemonSet".into(),
        name: ds.metadata.name.clone().unwrap_or_default(),
        uid: ds.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// A Running, Ready pod of `ds` (`newPod`): bound to `node` when given, with the node-name
/// affinity of that node (or of `""`), the template labels and the controller reference.
pub(crate) fn new_pod(name: &str, node: Option<&str>, ds: &DaemonSet) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: ds.metadata.namespace.clone(),
            uid: Some(format!("pod-uid-{name}")),
            resource_version: Some("1".into()),
            labels: Some(simple_labels()),
            owner_references: Some(vec![controller_ref(ds)]),
            creation_timestamp: Some(Time(ts(0))),
            ..Default::default()
        },
        spec: Some(PodSpec {
            node_name: node.map(Into::into),
            affinity: Some(replace_node_name_affinity(None, node.unwrap_or(""))),
            ..Default::default()
        }),
        status: Some(PodStatus {
            phase: Some("Running".into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                last_transition_time: Some(Time(ts(0))),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    }
}

/// `pod` carrying the revision `hash`.
pub(crate) fn with_hash(mut pod: Pod, hash: &str) -> Pod {
    pod.metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(CONTROLLER_REVISION_HASH_LABEL.into(), hash.into());
    pod
}

/// `pod` not Ready.
pub(crate) fn not_ready(mut pod: Pod) -> Pod {
    if let Some(c) = pod
        .status
        .as_mut()
        .and_then(|s| s.conditions.as_mut())
        .and_then(|c| c.first_mut())
    {
        c.status = "False".into();
    }
    pod
}

/// A controller over caches the test seeds, with a fake pod control and a fake clock.
pub(crate) struct Fixture {
    pub(crate) ctrl: Arc<DaemonSetsController>,
    pub(crate) pod_control: Arc<FakePodControl>,
    pub(crate) clock: FakeClock,
    pub(crate) events: tokio::sync::mpsc::Receiver<k8s_openapi::api::core::v1::Event>,
}

impl Fixture {
    /// A controller whose API calls fail to connect.
    pub(crate) fn new() -> Self {
        Self::with_client(offline_client())
    }

    /// A controller whose API calls go to `client`.
    pub(crate) fn with_client(client: kube::Client) -> Self {
        Self::with_client_and_burst(client, super::BURST_REPLICAS)
    }

    /// A controller whose API calls go to `client`, creating at most `burst` pods per sync.
    pub(crate) fn with_client_and_burst(client: kube::Client, burst: usize) -> Self {
        let factory = InformerFactory::new(offline_client(), Duration::ZERO);
        let pod_control = Arc::new(FakePodControl::default());
        let clock = FakeClock::new(ts(0));
        let shared: Arc<dyn Clock> = Arc::new(clock.clone());
        let (recorder, events) = EventRecorder::channel(super::EVENT_SOURCE, 100);
        let ctrl = DaemonSetsController::with_pod_control(
            &factory,
            client,
            pod_control.clone(),
            recorder,
            Config {
                clock: shared,
                burst_replicas: burst,
                ..Config::default()
            },
        );
        Self {
            ctrl,
            pod_control,
            clock,
            events,
        }
    }

    pub(crate) fn add_ds(&self, ds: DaemonSet) -> ObjectKey {
        let key = ObjectKey::from_obj(&ds);
        self.ctrl.ds_store().insert(Arc::new(ds));
        key
    }

    pub(crate) fn add_node(&self, node: Node) {
        self.ctrl.node_store().insert(Arc::new(node));
    }

    pub(crate) fn add_pod(&self, pod: Pod) {
        self.ctrl.pod_store().insert(Arc::new(pod));
    }

    /// Takes the next key from the queue, or `None` if nothing is queued right now.
    pub(crate) async fn next_key(&self) -> Option<ObjectKey> {
        if self.ctrl.queue().is_empty() {
            return None;
        }
        let key = tokio::time::timeout(Duration::from_secs(5), self.ctrl.queue().get())
            .await
            .expect("queue get likely deadlocked")?;
        self.ctrl.queue().done(&key);
        Some(key)
    }
}

impl Fixture {
    /// The reasons of the events recorded so far.
    pub(crate) fn event_reasons(&mut self) -> Vec<String> {
        let mut reasons = Vec::new();
        while let Ok(e) = self.events.try_recv() {
            reasons.extend(e.reason);
        }
        reasons
    }
}
