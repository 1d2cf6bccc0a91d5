//! Creating, deleting and patching pods on behalf of a controller, with kube's events
//! (`PodControlInterface`, `RealPodControl` and `FakePodControl` of `pkg/controller/controller_utils.go`).
//!
//! TODO: the runtime is to provide this (`rkcm_runtime::pod_control`, `rkcm_runtime::testing`)
//! with the same names and signatures; switch the `use`s over and delete this file once it lands.

use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{ObjectReference, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::Client;
use parking_lot::Mutex;
use rkcm_runtime::events::{EventRecorder, EventType};

/// Status cause the API server adds when a namespace is being deleted (`v1.NamespaceTerminatingCause`).
pub const NAMESPACE_TERMINATING_CAUSE: &str = "NamespaceTerminating";

/// Why a pod operation failed.
#[derive(Debug, thiserror::Error)]
pub enum PodControlError {
    /// The pod does not exist (or no longer).
    #[error("pod not found")]
    NotFound,
    /// The write lost an optimistic-concurrency race.
    #[error("conflict")]
    Conflict,
    /// A pod with that name exists.
    #[error("pod already exists")]
    AlreadyExists,
    /// The namespace is being deleted; nothing can be created in it.
    #[error("namespace {0} is terminating")]
    NamespaceTerminating(String),
    /// The request was refused as invalid (or the template cannot make a pod).
    #[error("invalid: {0}")]
    Invalid(String),
    /// Any other API error.
    #[error(transparent)]
    Api(kube::Error),
}

impl PodControlError {
    /// True for [`PodControlError::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, PodControlError::NotFound)
    }

    fn from_api(err: kube::Error, namespace: &str) -> Self {
        match &err {
            kube::Error::Api(status) => {
                let terminating = status.details.as_ref().is_some_and(|d| {
                    d.causes
                        .iter()
                        .any(|c| c.reason == NAMESPACE_TERMINATING_CAUSE)
                });
                if terminating {
                    PodControlError::NamespaceTerminating(namespace.to_string())
                } else if status.is_not_found() {
                    PodControlError::NotFound
                } else if status.is_already_exists() {
                    PodControlError::AlreadyExists
                } else if status.is_conflict() {
                    PodControlError::Conflict
                } else if status.code == 422 {
                    PodControlError::Invalid(status.message.clone())
                } else {
                    PodControlError::Api(err)
                }
            }
            _ => PodControlError::Api(err),
        }
    }
}

/// Creates, deletes and patches pods for a controller. Implementations are shared by all
/// workers and must be safe to call concurrently.
#[async_trait]
pub trait PodControl: Send + Sync + 'static {
    /// Creates one pod from `template` in `namespace`, owned through `controller_ref`; `owner`
    /// is the object events are recorded on.
    async fn create_pods(
        &self,
        namespace: &str,
        template: &PodTemplateSpec,
        owner: &ObjectReference,
        controller_ref: &OwnerReference,
    ) -> Result<(), PodControlError>;

    /// Deletes the pod `name`.
    async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        owner: &ObjectReference,
    ) -> Result<(), PodControlError>;

    /// Applies a strategic-merge `patch` to the pod `name`.
    async fn patch_pod(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), PodControlError>;
}

/// The pod a controller creates from its template (`GetPodFromTemplate`): the template's
/// labels, annotations, finalizers and spec, `generateName` `<owner>-`, and the controller ref.
pub fn pod_from_template(
    template: &PodTemplateSpec,
    owner_name: &str,
    controller_ref: &OwnerReference,
) -> Result<Pod, PodControlError> {
    let meta = template.metadata.clone().unwrap_or_default();
    if meta.labels.as_ref().is_none_or(|l| l.is_empty()) {
        return Err(PodControlError::Invalid(
            "unable to create pods, no labels".into(),
        ));
    }
    Ok(Pod {
        metadata: ObjectMeta {
            generate_name: Some(generate_name_prefix(owner_name)),
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            owner_references: Some(vec![controller_ref.clone()]),
            ..Default::default()
        },
        spec: template.spec.clone(),
        status: None,
    })
}

/// `<name>-`, or `<name>` when the dash would make an invalid name (`getPodsPrefix`).
fn generate_name_prefix(owner_name: &str) -> String {
    // Generated names are at most 63 characters with 5 random ones appended by the server.
    let prefix = format!("{owner_name}-");
    if prefix.len() > 58 {
        owner_name.to_string()
    } else {
        prefix
    }
}

/// Pod control through the API, recording `SuccessfulCreate` / `FailedCreate` /
/// `SuccessfulDelete` / `FailedDelete` events on the owner.
#[derive(Clone)]
pub struct RealPodControl {
    client: Client,
    recorder: EventRecorder,
}

impl RealPodControl {
    /// Pod control writing through `client` and recording with `recorder`.
    pub fn new(client: Client, recorder: EventRecorder) -> Self {
        Self { client, recorder }
    }
}

#[async_trait]
impl PodControl for RealPodControl {
    async fn create_pods(
        &self,
        namespace: &str,
        template: &PodTemplateSpec,
        owner: &ObjectReference,
        controller_ref: &OwnerReference,
    ) -> Result<(), PodControlError> {
        let pod = pod_from_template(
            template,
            owner.name.as_deref().unwrap_or(""),
            controller_ref,
        )?;
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        match api.create(&PostParams::default(), &pod).await {
            Ok(created) => {
                let name = created.metadata.name.unwrap_or_default();
                self.recorder.event(
                    owner,
                    EventType::Normal,
                    "SuccessfulCreate",
                    format!("Created pod: {name}"),
                );
                Ok(())
            }
            Err(e) => {
                let message = e.to_string();
                let err = PodControlError::from_api(e, namespace);
                // No event when the namespace is going away: every create would fail.
                if !matches!(err, PodControlError::NamespaceTerminating(_)) {
                    self.recorder.event(
                        owner,
                        EventType::Warning,
                        "FailedCreate",
                        format!("Error creating: {message}"),
                    );
                }
                Err(err)
            }
        }
    }

    async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        owner: &ObjectReference,
    ) -> Result<(), PodControlError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                self.recorder.event(
                    owner,
                    EventType::Normal,
                    "SuccessfulDelete",
                    format!("Deleted pod: {name}"),
                );
                Ok(())
            }
            Err(e) => {
                let message = e.to_string();
                let err = PodControlError::from_api(e, namespace);
                if !err.is_not_found() {
                    self.recorder.event(
                        owner,
                        EventType::Warning,
                        "FailedDelete",
                        format!("Error deleting: {message}"),
                    );
                }
                Err(err)
            }
        }
    }

    async fn patch_pod(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), PodControlError> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        api.patch(name, &PatchParams::default(), &Patch::Strategic(patch))
            .await
            .map(|_| ())
            .map_err(|e| PodControlError::from_api(e, namespace))
    }
}

/// A recorded pod creation.
#[derive(Clone, Debug)]
pub struct FakeCreate {
    /// Namespace of the create.
    pub namespace: String,
    /// The template used.
    pub template: PodTemplateSpec,
    /// The controller reference given.
    pub controller_ref: OwnerReference,
}

/// Pod control for tests: records calls, creates nothing, fails on demand (`FakePodControl`).
#[derive(Default)]
pub struct FakePodControl {
    state: Mutex<FakeState>,
    create_calls: AtomicUsize,
}

#[derive(Default)]
struct FakeState {
    creates: Vec<FakeCreate>,
    deletes: Vec<String>,
    patches: Vec<(String, serde_json::Value)>,
    create_limit: Option<usize>,
    error: Option<fn() -> PodControlError>,
}

impl FakePodControl {
    /// Creations recorded so far (failed ones excluded).
    pub fn creates(&self) -> Vec<FakeCreate> {
        self.state.lock().creates.clone()
    }

    /// Names of the pods deleted so far (`namespace/name`).
    pub fn deletes(&self) -> Vec<String> {
        self.state.lock().deletes.clone()
    }

    /// Patches recorded so far (`namespace/name`, patch).
    pub fn patches(&self) -> Vec<(String, serde_json::Value)> {
        self.state.lock().patches.clone()
    }

    /// Create calls made, including failed ones.
    pub fn create_calls(&self) -> usize {
        self.create_calls.load(Ordering::SeqCst)
    }

    /// Fails every creation after `limit` successful ones (like a quota).
    pub fn set_create_limit(&self, limit: usize) {
        self.state.lock().create_limit = Some(limit);
    }

    /// Makes every call fail with the error `make` returns (recording nothing), or succeed again
    /// with `None`.
    pub fn set_error(&self, make: Option<fn() -> PodControlError>) {
        self.state.lock().error = make;
    }

    /// Forgets every recorded call.
    pub fn clear(&self) {
        let mut state = self.state.lock();
        state.creates.clear();
        state.deletes.clear();
        state.patches.clear();
        self.create_calls.store(0, Ordering::SeqCst);
    }
}

#[async_trait]
impl PodControl for FakePodControl {
    async fn create_pods(
        &self,
        namespace: &str,
        template: &PodTemplateSpec,
        _owner: &ObjectReference,
        controller_ref: &OwnerReference,
    ) -> Result<(), PodControlError> {
        self.create_calls.fetch_add(1, Ordering::SeqCst);
        let mut state = self.state.lock();
        if let Some(make) = state.error {
            return Err(make());
        }
        if state
            .create_limit
            .is_some_and(|limit| state.creates.len() >= limit)
        {
            return Err(PodControlError::Invalid("exceeded quota: pods".into()));
        }
        state.creates.push(FakeCreate {
            namespace: namespace.to_string(),
            template: template.clone(),
            controller_ref: controller_ref.clone(),
        });
        Ok(())
    }

    async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        _owner: &ObjectReference,
    ) -> Result<(), PodControlError> {
        let mut state = self.state.lock();
        if let Some(make) = state.error {
            return Err(make());
        }
        state.deletes.push(format!("{namespace}/{name}"));
        Ok(())
    }

    async fn patch_pod(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), PodControlError> {
        let mut state = self.state.lock();
        if let Some(make) = state.error {
            return Err(make());
        }
        state
            .patches
            .push((format!("{namespace}/{name}"), patch.clone()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn pods_from_a_template_carry_its_labels_and_the_controller_ref() {
        let template = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(BTreeMap::from([("app".to_string(), "web".to_string())])),
                ..Default::default()
            }),
            spec: None,
        };
        let owner_ref = OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "web".into(),
            uid: "u".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        };
        let pod = pod_from_template(&template, "web", &owner_ref).expect("pod");
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-"));
        assert_eq!(pod.metadata.owner_references, Some(vec![owner_ref.clone()]));
        assert!(pod_from_template(&PodTemplateSpec::default(), "web", &owner_ref).is_err());
    }
}
