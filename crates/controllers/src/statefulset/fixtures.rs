//! Builders of StatefulSets and their pods for unit tests (kube's `newStatefulSet`,
//! `newStatefulSetWithVolumes`, `setPodRunning`, `setPodReady`, …).

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{
    RollingUpdateStatefulSetStrategy, StatefulSet, StatefulSetPersistentVolumeClaimRetentionPolicy,
    StatefulSetSpec, StatefulSetUpdateStrategy,
};
use k8s_openapi::api::core::v1::{
    Container, PersistentVolumeClaim, PersistentVolumeClaimSpec, Pod, PodCondition, PodSpec,
    PodStatus, PodTemplateSpec, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};

use super::identity::new_pod;

/// A set `name` in `default` with `replicas`, selector and template labels `foo: bar`, one
/// `nginx` container mounting the claim template `datadir`, RollingUpdate with partition 0.
pub fn new_stateful_set(name: &str, replicas: i32) -> StatefulSet {
    let labels: BTreeMap<String, String> = [("foo".to_string(), "bar".to_string())].into();
    StatefulSet {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("{name}-uid")),
            generation: Some(1),
            ..Default::default()
        },
        spec: Some(StatefulSetSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            service_name: Some("governingsvc".into()),
            pod_management_policy: Some("OrderedReady".into()),
            update_strategy: Some(StatefulSetUpdateStrategy {
                type_: Some("RollingUpdate".into()),
                rolling_update: Some(RollingUpdateStatefulSetStrategy {
                    partition: Some(0),
                    ..Default::default()
                }),
            }),
            revision_history_limit: Some(2),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".into(),
                        image: Some("nginx".into()),
                        volume_mounts: Some(vec![VolumeMount {
                            name: "datadir".into(),
                            mount_path: "/data".into(),
                            ..Default::default()
                        }]),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            volume_claim_templates: Some(vec![PersistentVolumeClaim {
                metadata: ObjectMeta {
                    name: Some("datadir".into()),
                    ..Default::default()
                },
                spec: Some(PersistentVolumeClaimSpec {
                    access_modes: Some(vec!["ReadWriteOnce".into()]),
                    ..Default::default()
                }),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    }
}

/// Sets the image of the set's container.
pub fn set_image(set: &mut StatefulSet, image: &str) {
    set.spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap()
        .containers[0]
        .image = Some(image.into());
}

/// Sets the claim retention policy.
pub fn set_policy(set: &mut StatefulSet, when_deleted: &str, when_scaled: &str) {
    set.spec
        .as_mut()
        .unwrap()
        .persistent_volume_claim_retention_policy =
        Some(StatefulSetPersistentVolumeClaimRetentionPolicy {
            when_deleted: Some(when_deleted.into()),
            when_scaled: Some(when_scaled.into()),
        });
}

/// The set's pod at `ordinal`, as created (no phase yet) with a UID.
pub fn pod_of(set: &StatefulSet, ordinal: i64) -> Pod {
    let mut pod = new_pod(set, ordinal);
    pod.metadata.uid = Some(format!("{}-uid", pod.metadata.name.as_deref().unwrap()));
    pod
}

/// Phase `Pending`.
pub fn set_pending(pod: &mut Pod) {
    pod.status.get_or_insert_with(PodStatus::default).phase = Some("Pending".into());
}

/// Phase `Running`.
pub fn set_running(pod: &mut Pod) {
    pod.status.get_or_insert_with(PodStatus::default).phase = Some("Running".into());
}

/// Condition `Ready` since `at`.
pub fn set_ready(pod: &mut Pod, at: Timestamp) {
    let status = pod.status.get_or_insert_with(PodStatus::default);
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    conditions.retain(|c| c.type_ != "Ready");
    conditions.push(PodCondition {
        type_: "Ready".into(),
        status: "True".into(),
        last_transition_time: Some(Time(at)),
        ..Default::default()
    });
}

use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::apps::v1::StatefulSetStatus;
use kube::core::Status;
use parking_lot::Mutex;
use rkcm_runtime::informer::Store;
use rkcm_runtime::ObjectKey;

use super::pod_control::ObjectManager;
use super::status::StatusUpdater;

fn key_of(meta: &ObjectMeta) -> ObjectKey {
    ObjectKey::new(
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// An API error as the server words it.
pub fn api_error(code: u16, reason: &str, message: &str) -> kube::Error {
    kube::Error::Api(Status::failure(message, reason).with_code(code).boxed())
}

/// An in-memory [`ObjectManager`] (kube's `fakeObjectManager`): creations land in the stores at
/// once (pods without a phase), deletions remove at once; each write kind can be told to fail.
#[derive(Default)]
pub struct FakeObjectManager {
    /// The pods.
    pub pods: Store<Pod>,
    /// The claims.
    pub claims: Store<PersistentVolumeClaim>,
    /// Pod creations, updates and deletions that will fail, counted down.
    pub fail: Mutex<Failures>,
    /// Names of the pods created, in order.
    pub created: Mutex<Vec<String>>,
    /// Names of the pods deleted, in order.
    pub deleted: Mutex<Vec<String>>,
}

/// How many of each write still fail.
#[derive(Default)]
pub struct Failures {
    /// Pod creations.
    pub create_pod: usize,
    /// Pod updates.
    pub update_pod: usize,
    /// Pod deletions.
    pub delete_pod: usize,
}

fn take(n: &mut usize) -> bool {
    if *n > 0 {
        *n -= 1;
        true
    } else {
        false
    }
}

fn injected() -> kube::Error {
    api_error(500, "InternalError", "injected failure")
}

#[async_trait]
impl ObjectManager for FakeObjectManager {
    async fn create_pod(&self, pod: &Pod) -> Result<(), kube::Error> {
        if take(&mut self.fail.lock().create_pod) {
            return Err(injected());
        }
        let key = key_of(&pod.metadata);
        if self.pods.get(&key).is_some() {
            return Err(api_error(
                409,
                "AlreadyExists",
                &format!("pods \"{}\" already exists", key.name),
            ));
        }
        let mut pod = pod.clone();
        pod.metadata.uid = Some(format!("{}-uid-{}", key.name, self.created.lock().len()));
        self.created.lock().push(key.name.to_string());
        self.pods.insert(Arc::new(pod));
        Ok(())
    }

    fn get_pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.pods.get(&ObjectKey::new(namespace, name))
    }

    async fn update_pod(&self, pod: &Pod) -> Result<(), kube::Error> {
        if take(&mut self.fail.lock().update_pod) {
            return Err(injected());
        }
        self.pods.insert(Arc::new(pod.clone()));
        Ok(())
    }

    async fn delete_pod(&self, pod: &Pod) -> Result<(), kube::Error> {
        if take(&mut self.fail.lock().delete_pod) {
            return Err(injected());
        }
        let key = key_of(&pod.metadata);
        match self.pods.remove(&key) {
            Some(_) => {
                self.deleted.lock().push(key.name.to_string());
                Ok(())
            }
            None => Err(api_error(
                404,
                "NotFound",
                &format!("pods \"{}\" not found", key.name),
            )),
        }
    }

    async fn create_claim(&self, claim: &PersistentVolumeClaim) -> Result<(), kube::Error> {
        let mut claim = claim.clone();
        claim.metadata.uid = Some(format!("{}-uid", key_of(&claim.metadata).name));
        self.claims.insert(Arc::new(claim));
        Ok(())
    }

    fn get_claim(&self, namespace: &str, name: &str) -> Option<Arc<PersistentVolumeClaim>> {
        self.claims.get(&ObjectKey::new(namespace, name))
    }

    async fn update_claim(&self, claim: &PersistentVolumeClaim) -> Result<(), kube::Error> {
        self.claims.insert(Arc::new(claim.clone()));
        Ok(())
    }
}

/// A [`StatusUpdater`] recording each status written; can be told to fail.
#[derive(Default)]
pub struct FakeStatusUpdater {
    /// Statuses written, in order.
    pub written: Mutex<Vec<StatefulSetStatus>>,
    /// Writes that will fail, counted down.
    pub failures: Mutex<usize>,
}

#[async_trait]
impl StatusUpdater for FakeStatusUpdater {
    async fn update_status(
        &self,
        _set: &StatefulSet,
        status: &StatefulSetStatus,
    ) -> Result<(), kube::Error> {
        if take(&mut self.failures.lock()) {
            return Err(injected());
        }
        self.written.lock().push(status.clone());
        Ok(())
    }
}
