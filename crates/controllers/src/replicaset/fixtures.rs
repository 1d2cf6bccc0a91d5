//! Test fixtures: an offline controller over seeded caches, and ReplicaSet and pod builders
//! shaped like `replica_set_test.go`'s `newReplicaSet` and `newPod`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{
    Container, Pod, PodCondition, PodSpec, PodStatus, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use rkcm_runtime::informer::InformerFactory;
use rkcm_runtime::{Clock, FakeClock, ObjectKey};

use super::{Config, ReplicaSetController, ReplicaSetKind};
use rkcm_runtime::testing::{offline_client, FakePodControl};

/// A controller over caches the test seeds, with a fake pod control and a fake clock.
pub(crate) struct Fixture<K: ReplicaSetKind> {
    pub(crate) ctrl: Arc<ReplicaSetController<K>>,
    pub(crate) pod_control: Arc<FakePodControl>,
}

impl<K: ReplicaSetKind> Fixture<K> {
    /// A controller whose API calls fail to connect, on a fake clock.
    pub(crate) fn new(burst_replicas: usize) -> Self {
        Self::with(
            burst_replicas,
            offline_client(),
            Arc::new(FakeClock::default()),
        )
    }

    /// A controller whose API calls go to `client` (e.g. a [`FakeApi`]'s), reading `clock`.
    ///
    /// [`FakeApi`]: rkcm_runtime::testing::FakeApi
    pub(crate) fn with(burst_replicas: usize, client: kube::Client, clock: Arc<dyn Clock>) -> Self {
        let factory = InformerFactory::new(offline_client(), Duration::ZERO);
        let pod_control = Arc::new(FakePodControl::default());
        let ctrl = ReplicaSetController::<K>::with_pod_control(
            &factory,
            client,
            pod_control.clone(),
            Config {
                burst_replicas,
                clock,
                ..Config::default()
            },
        );
        Self { ctrl, pod_control }
    }

    pub(crate) fn add_rs(&self, rs: K) -> ObjectKey {
        let key = ObjectKey::from_obj(&rs);
        self.ctrl.store().insert(Arc::new(rs));
        key
    }

    pub(crate) fn add_pod(&self, pod: Pod) -> Arc<Pod> {
        let pod = Arc::new(pod);
        self.ctrl.pod_store().insert(Arc::clone(&pod));
        pod
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

pub(crate) fn label_map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// A ReplicaSet `foobar` in `default` selecting `selector`, whose status already reports
/// `replicas` observed pods (so a sync that changes nothing writes nothing).
pub(crate) fn new_replica_set(replicas: i32, selector: &BTreeMap<String, String>) -> ReplicaSet {
    ReplicaSet {
        metadata: ObjectMeta {
            name: Some("foobar".into()),
            namespace: Some("default".into()),
            uid: Some("rs-uid-foobar".into()),
            resource_version: Some("18".into()),
            generation: Some(1),
            ..Default::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(selector.clone()),
                ..Default::default()
            },
            template: Some(PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(selector.clone()),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "c".into(),
                        image: Some("foo/bar".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }),
        status: Some(ReplicaSetStatus {
            observed_generation: Some(1),
            ..Default::default()
        }),
    }
}

/// Sets the status counts a sync over `pods` owned, all-labelled and `ready` pods computes.
pub(crate) fn with_status(mut rs: ReplicaSet, replicas: i32, ready: i32) -> ReplicaSet {
    let status = rs.status.get_or_insert_with(Default::default);
    status.replicas = replicas;
    status.fully_labeled_replicas = Some(replicas);
    status.ready_replicas = Some(ready);
    status.available_replicas = Some(ready);
    rs
}

/// The controller reference `rs` puts on its pods.
pub(crate) fn controller_ref(rs: &ReplicaSet) -> OwnerReference {
    OwnerReference {
        api_version: "apps/v1".into(),
        kind: "ReplicaSet".into(),
        name: rs.metadata.name.clone().unwrap_or_default(),
        uid: rs.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// A pod named `name` with the RS's selector labels, in `phase`; Running pods are Ready. With
/// `owned`, it carries the RS's controller reference.
pub(crate) fn new_pod(name: &str, rs: &ReplicaSet, phase: &str, owned: bool) -> Pod {
    let ready = (phase == "Running").then(|| {
        vec![PodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            ..Default::default()
        }]
    });
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: rs.metadata.namespace.clone(),
            uid: Some(format!("pod-uid-{name}")),
            resource_version: Some("1".into()),
            labels: rs
                .spec
                .as_ref()
                .and_then(|s| s.selector.match_labels.clone()),
            owner_references: owned.then(|| vec![controller_ref(rs)]),
            ..Default::default()
        },
        spec: Some(PodSpec::default()),
        status: Some(PodStatus {
            phase: Some(phase.into()),
            conditions: ready,
            ..Default::default()
        }),
    }
}

/// A hook a [`HookClock`] runs once.
type Hook = Box<dyn FnOnce() + Send>;

/// A [`FakeClock`] that runs a hook the next time it is read: lets a test act at the exact moment
/// the controller consults the clock, as kube's tests do with `FakeRSExpectations`.
#[derive(Clone, Default)]
pub(crate) struct HookClock {
    pub(crate) clock: FakeClock,
    hook: Arc<Mutex<Option<Hook>>>,
}

impl HookClock {
    /// Runs `hook` on the next read of the clock, before that read returns.
    pub(crate) fn on_next_read(&self, hook: impl FnOnce() + Send + 'static) {
        *self.hook.lock() = Some(Box::new(hook));
    }
}

impl Clock for HookClock {
    fn now(&self) -> Timestamp {
        // Taken out first: the hook may read the clock itself.
        let hook = self.hook.lock().take();
        if let Some(hook) = hook {
            hook();
        }
        self.clock.now()
    }
}
