//! Creating, deleting and patching pods on behalf of a controller, with events. Mirrors
//! `RealPodControl` and `GetPodFromTemplate` in pkg/controller/controller_utils.go.

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{ObjectReference, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{Api, Client};

use rkcm_labels::validation::name_is_dns_subdomain;

use crate::api_error;
use crate::events::{EventRecorder, EventType};

/// Event reason for a created pod.
pub const SUCCESSFUL_CREATE_POD_REASON: &str = "SuccessfulCreate";
/// Event reason for a failed pod creation.
pub const FAILED_CREATE_POD_REASON: &str = "FailedCreate";
/// Event reason for a deleted pod.
pub const SUCCESSFUL_DELETE_POD_REASON: &str = "SuccessfulDelete";
/// Event reason for a failed pod deletion.
pub const FAILED_DELETE_POD_REASON: &str = "FailedDelete";
/// Status cause type the API server reports when a namespace is being deleted.
pub use crate::api_error::NAMESPACE_TERMINATING_CAUSE;

/// Errors from creating, deleting and patching pods.
///
/// An error that came from the API server reads as its `Status` message, as client-go's errors do:
/// that text goes into events (`Error creating: <message>`) and into the `ReplicaFailure`
/// condition.
#[derive(Debug, thiserror::Error)]
pub enum PodControlError {
    /// The pod (or its namespace) does not exist (a fake's error; the API's is [`Self::Api`]).
    #[error("not found")]
    NotFound,
    /// A write lost an optimistic-concurrency race (a fake's error; the API's is [`Self::Api`]).
    #[error("conflict")]
    Conflict,
    /// A pod with that name already exists (a fake's error; the API's is [`Self::Api`]).
    #[error("already exists")]
    AlreadyExists,
    /// The namespace is being deleted; creating anything in it will fail.
    #[error("namespace {0} is terminating")]
    NamespaceTerminating(String),
    /// The request or the object was invalid.
    #[error("{0}")]
    Invalid(String),
    /// The API server refused the request, or it did not reach the server.
    #[error("{}", api_error::message(.0))]
    Api(#[source] kube::Error),
}

impl PodControlError {
    /// Keeps an API error as it came (with its `Status`), except a refusal because the namespace
    /// is terminating, which callers single out (client-go's `HasStatusCause(err,
    /// NamespaceTerminatingCause)`).
    pub fn from_kube(err: kube::Error, namespace: &str) -> Self {
        let terminating_message = matches!(&err, kube::Error::Api(status)
            if status.code == 403 && status.message.contains("because it is being terminated"));
        if api_error::is_namespace_terminating(&err) || terminating_message {
            return PodControlError::NamespaceTerminating(namespace.to_string());
        }
        PodControlError::Api(err)
    }

    /// The API error, if this is one.
    fn api(&self) -> Option<&kube::Error> {
        match self {
            PodControlError::Api(err) => Some(err),
            _ => None,
        }
    }

    /// Whether the pod (or its namespace) does not exist (`apierrors.IsNotFound`).
    pub fn is_not_found(&self) -> bool {
        matches!(self, PodControlError::NotFound) || self.api().is_some_and(api_error::is_not_found)
    }

    /// Whether a pod with that name already exists (`apierrors.IsAlreadyExists`).
    pub fn is_already_exists(&self) -> bool {
        matches!(self, PodControlError::AlreadyExists)
            || self.api().is_some_and(api_error::is_already_exists)
    }

    /// Whether a write lost an optimistic-concurrency race (`apierrors.IsConflict`).
    pub fn is_conflict(&self) -> bool {
        matches!(self, PodControlError::Conflict) || self.api().is_some_and(api_error::is_conflict)
    }

    /// Whether the request or the object was invalid (`apierrors.IsInvalid`).
    pub fn is_invalid(&self) -> bool {
        matches!(self, PodControlError::Invalid(_)) || self.api().is_some_and(api_error::is_invalid)
    }

    /// Whether this is [`PodControlError::NamespaceTerminating`].
    pub fn is_namespace_terminating(&self) -> bool {
        matches!(self, PodControlError::NamespaceTerminating(_))
    }

    /// Whether the server timed out (504 / reason `Timeout`): the pod may or may not exist, and
    /// the informer will tell (the ReplicaSet controller then skips lowering expectations).
    pub fn is_timeout(&self) -> bool {
        self.api().is_some_and(api_error::is_timeout)
    }

    /// What the API said, for event and condition messages: the `Status` message of an API error,
    /// else the error's text. The same as its `Display`.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

/// The error kube's `RealPodControl.DeletePod` returns for a failed deletion other than NotFound,
/// and so the `ReplicaFailure` condition's message: `unable to delete pods: <message>`.
pub fn unable_to_delete(err: &PodControlError) -> String {
    format!("unable to delete pods: {err}")
}

/// Creates, deletes and patches pods for a controller. Implementations are shared by workers and
/// called concurrently.
#[async_trait]
pub trait PodControl: Send + Sync + 'static {
    /// Creates a pod from `template` in `namespace`, controlled by `controller_ref`; events are
    /// recorded on `owner`.
    async fn create_pods(
        &self,
        namespace: &str,
        template: &PodTemplateSpec,
        owner: &ObjectReference,
        controller_ref: &OwnerReference,
    ) -> Result<(), PodControlError>;

    /// Deletes the pod `namespace/name` (background propagation); events are recorded on `owner`.
    async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        owner: &ObjectReference,
    ) -> Result<(), PodControlError>;

    /// Applies a strategic-merge `patch` to the pod `namespace/name`.
    async fn patch_pod(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), PodControlError>;
}

/// Checks that `controller_ref` is a complete controller reference (client-go
/// `validateControllerRef`).
pub fn validate_controller_ref(controller_ref: &OwnerReference) -> Result<(), PodControlError> {
    let missing = |what: &str| {
        Err(PodControlError::Invalid(format!(
            "controllerRef has empty {what}"
        )))
    };
    if controller_ref.api_version.is_empty() {
        return missing("APIVersion");
    }
    if controller_ref.kind.is_empty() {
        return missing("Kind");
    }
    if controller_ref.controller != Some(true) {
        return Err(PodControlError::Invalid(
            "controllerRef.Controller is not set to true".into(),
        ));
    }
    if controller_ref.block_owner_deletion != Some(true) {
        return Err(PodControlError::Invalid(
            "controllerRef.BlockOwnerDeletion is not set".into(),
        ));
    }
    Ok(())
}

/// The generateName prefix for pods of `controller_name`: `<name>-`, or the bare name if that
/// would not be a valid name prefix.
pub fn pods_prefix(controller_name: &str) -> String {
    let prefix = format!("{controller_name}-");
    // kube's getPodsPrefix: validate it as a generateName (ValidatePodName(prefix, true)).
    if name_is_dns_subdomain(&prefix, true).is_empty() {
        prefix
    } else {
        controller_name.to_string()
    }
}

/// The pod a controller creates from its template (client-go `GetPodFromTemplate`): labels,
/// annotations and finalizers from the template, `generateName` `<owner>-` unless the template
/// names its own (client-go `CreatePodsWithGenerateName`, used by the Job controller for
/// `<job>-<index>-`), the controller reference, and the template's spec.
pub fn pod_from_template(
    template: &PodTemplateSpec,
    owner_name: &str,
    controller_ref: Option<&OwnerReference>,
) -> Pod {
    let meta = template.metadata.clone().unwrap_or_default();
    Pod {
        metadata: ObjectMeta {
            labels: meta.labels,
            annotations: meta.annotations,
            finalizers: meta.finalizers,
            generate_name: meta
                .generate_name
                .filter(|g| !g.is_empty())
                .or_else(|| Some(pods_prefix(owner_name))),
            owner_references: controller_ref.map(|r| vec![r.clone()]),
            ..Default::default()
        },
        spec: template.spec.clone(),
        status: None,
    }
}

/// Pod control through the API server, recording events as kube-controller-manager does.
#[derive(Clone)]
pub struct RealPodControl {
    client: Client,
    recorder: EventRecorder,
}

impl std::fmt::Debug for RealPodControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RealPodControl").finish_non_exhaustive()
    }
}

impl RealPodControl {
    /// Pod control writing through `client`, recording events with `recorder`.
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
        validate_controller_ref(controller_ref)?;
        let owner_name = owner.name.as_deref().unwrap_or_default();
        let pod = pod_from_template(template, owner_name, Some(controller_ref));
        if pod.metadata.labels.as_ref().is_none_or(|l| l.is_empty()) {
            return Err(PodControlError::Invalid(
                "unable to create pods, no labels".into(),
            ));
        }
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        match api.create(&PostParams::default(), &pod).await {
            Ok(created) => {
                let name = created.metadata.name.unwrap_or_default();
                tracing::debug!(controller = owner_name, pod = %format!("{namespace}/{name}"), "controller created pod");
                self.recorder.event(
                    owner,
                    EventType::Normal,
                    SUCCESSFUL_CREATE_POD_REASON,
                    format!("Created pod: {name}"),
                );
                Ok(())
            }
            Err(err) => {
                let err = PodControlError::from_kube(err, namespace);
                // Only record an event if the namespace is not terminating.
                if !err.is_namespace_terminating() {
                    self.recorder.event(
                        owner,
                        EventType::Warning,
                        FAILED_CREATE_POD_REASON,
                        format!("Error creating: {}", err.message()),
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
        let owner_name = owner.name.as_deref().unwrap_or_default();
        tracing::debug!(controller = owner_name, pod = %format!("{namespace}/{name}"), "deleting pod");
        let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace);
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {
                self.recorder.event(
                    owner,
                    EventType::Normal,
                    SUCCESSFUL_DELETE_POD_REASON,
                    format!("Deleted pod: {name}"),
                );
                Ok(())
            }
            Err(err) => {
                let err = PodControlError::from_kube(err, namespace);
                if err.is_not_found() {
                    tracing::debug!(pod = %format!("{namespace}/{name}"), "pod has already been deleted");
                    return Err(err);
                }
                self.recorder.event(
                    owner,
                    EventType::Warning,
                    FAILED_DELETE_POD_REASON,
                    format!("Error deleting: {}", err.message()),
                );
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
            .map_err(|err| PodControlError::from_kube(err, namespace))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::response::{StatusCause, StatusDetails};
    use kube::core::Status;

    fn controller_ref() -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "web".into(),
            uid: "uid-1".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    fn template() -> PodTemplateSpec {
        let mut t = crate::testing::pod_template(rkcm_labels::set(&[("app", "web")]), "c", "nginx");
        let meta = t.metadata.get_or_insert_with(Default::default);
        meta.annotations = Some(rkcm_labels::set(&[("a", "b")]));
        meta.finalizers = Some(vec!["example.com/f".into()]);
        meta.name = Some("ignored".into());
        t
    }

    #[test]
    fn pod_from_template_copies_labels_annotations_finalizers_and_spec() {
        let pod = pod_from_template(&template(), "web", Some(&controller_ref()));
        let t = template();
        let tm = t.metadata.clone().unwrap_or_default();
        assert_eq!(pod.metadata.labels, tm.labels);
        assert_eq!(pod.metadata.annotations, tm.annotations);
        assert_eq!(pod.metadata.finalizers, tm.finalizers);
        assert_eq!(pod.metadata.generate_name.as_deref(), Some("web-"));
        assert_eq!(pod.metadata.name, None);
        assert_eq!(pod.metadata.owner_references, Some(vec![controller_ref()]));
        assert_eq!(pod.spec, t.spec);
    }

    #[test]
    fn prefix_falls_back_to_the_name_when_name_dash_is_not_a_valid_prefix() {
        assert_eq!(pods_prefix("web"), "web-");
        let long = "a".repeat(254);
        assert_eq!(pods_prefix(&long), long);
        // kube masks the dash and the character before it, so 253 characters still get one.
        let limit = "a".repeat(253);
        assert_eq!(pods_prefix(&limit), format!("{limit}-"));
        assert_eq!(pods_prefix("Web"), "Web");
    }

    #[test]
    fn controller_ref_must_be_complete() {
        assert!(validate_controller_ref(&controller_ref()).is_ok());
        let mut r = controller_ref();
        r.controller = None;
        assert!(validate_controller_ref(&r).is_err());
        let mut r = controller_ref();
        r.block_owner_deletion = Some(false);
        assert!(validate_controller_ref(&r).is_err());
        let mut r = controller_ref();
        r.kind.clear();
        assert!(validate_controller_ref(&r).is_err());
    }

    fn api_err(code: u16, reason: &str, message: &str, cause: Option<&str>) -> kube::Error {
        let mut status = Status::failure(message, reason).with_code(code);
        if let Some(cause) = cause {
            status = status.with_details(StatusDetails {
                causes: vec![StatusCause {
                    reason: cause.into(),
                    message: String::new(),
                    field: String::new(),
                }],
                name: String::new(),
                group: String::new(),
                kind: String::new(),
                uid: String::new(),
                retry_after_seconds: 0,
            });
        }
        kube::Error::Api(status.boxed())
    }

    #[test]
    fn api_errors_map_to_kinds_and_keep_their_status_message() {
        let map = |e| PodControlError::from_kube(e, "ns");
        let not_found = map(api_err(404, "NotFound", "pods \"x\" not found", None));
        assert!(not_found.is_not_found());
        assert_eq!(not_found.message(), "pods \"x\" not found");
        let exists = map(api_err(
            409,
            "AlreadyExists",
            "pods \"x\" already exists",
            None,
        ));
        assert!(exists.is_already_exists() && !exists.is_conflict());
        assert_eq!(exists.to_string(), "pods \"x\" already exists");
        let conflict = map(api_err(
            409,
            "Conflict",
            "the object has been modified",
            None,
        ));
        assert!(conflict.is_conflict() && !conflict.is_already_exists());
        assert_eq!(conflict.to_string(), "the object has been modified");
        let invalid = map(api_err(422, "Invalid", "Pod \"x\" is invalid: spec", None));
        assert!(invalid.is_invalid());
        assert_eq!(invalid.to_string(), "Pod \"x\" is invalid: spec");
        assert!(map(api_err(
            403,
            "Forbidden",
            "x",
            Some(NAMESPACE_TERMINATING_CAUSE)
        ))
        .is_namespace_terminating());
        assert!(map(api_err(
            403,
            "Forbidden",
            "unable to create new content in namespace ns because it is being terminated",
            None
        ))
        .is_namespace_terminating());
        let forbidden = map(api_err(403, "Forbidden", "quota exceeded", None));
        assert!(matches!(forbidden, PodControlError::Api(_)));
        assert_eq!(forbidden.message(), "quota exceeded");
        assert!(!forbidden.to_string().contains("Status {"));
        assert!(map(api_err(504, "Timeout", "timeout", None)).is_timeout());
    }

    #[test]
    fn local_refusals_read_as_kube_words_them() {
        let mut r = controller_ref();
        r.api_version.clear();
        let err = validate_controller_ref(&r).expect_err("incomplete");
        assert_eq!(err.to_string(), "controllerRef has empty APIVersion");
        assert_eq!(
            unable_to_delete(&PodControlError::Api(api_err(
                500,
                "InternalError",
                "etcd down",
                None
            ))),
            "unable to delete pods: etcd down"
        );
    }
}
