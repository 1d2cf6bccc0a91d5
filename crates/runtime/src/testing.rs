//! Fakes and fixtures for controller tests: a recording [`FakePodControl`], a recording
//! [`FakeEventSink`], a client that never connects, a client answered by the test itself
//! ([`FakeApi`]), an in-memory [`FakeHistory`] and builders of the pod pieces tests start from.
//! Each fake can be told to fail.
//! (`FakeClock` lives in [`crate::clock`].)

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{
    Container, ContainerState, ContainerStateTerminated, ContainerStatus, Event, ObjectReference,
    PodSpec, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use parking_lot::Mutex;

use crate::controller_ref::{controller_of, OwnerInfo};
use crate::events::EventSink;
use crate::history::{self, History, HistoryError, Result as HistoryResult};
use crate::informer::Store;
use crate::labels::Selector;
use crate::pod_control::{PodControl, PodControlError};
use crate::ObjectKey;

/// A kube client pointing at a closed local port: for building informers and controllers in
/// tests that never reach the API. Requests fail with a connection error. Needs a tokio runtime.
pub fn offline_client() -> kube::Client {
    let config = kube::Config::new(http::Uri::from_static("http://127.0.0.1:9"));
    kube::Client::try_from(config).expect("a plain-http client config is always valid")
}

/// A request received by a [`FakeApi`].
#[derive(Clone, Debug, PartialEq)]
pub struct ApiRequest {
    /// HTTP method (`GET`, `PUT`, …).
    pub method: http::Method,
    /// Path, e.g. `/apis/apps/v1/namespaces/default/replicasets/web/status`.
    pub path: String,
    /// Query string without the `?`, `""` when there is none.
    pub query: String,
    /// The JSON body; `Null` when the body is empty or not JSON.
    pub body: serde_json::Value,
}

impl ApiRequest {
    /// True if this is a `method` request for exactly `path`.
    pub fn is(&self, method: http::Method, path: &str) -> bool {
        self.method == method && self.path == path
    }
}

/// The answer a [`FakeApi`] handler gives to one request.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiResponse {
    /// HTTP status code.
    pub status: http::StatusCode,
    /// JSON body.
    pub body: serde_json::Value,
}

impl ApiResponse {
    /// `200 OK` with `object` as the body.
    pub fn ok(object: &impl serde::Serialize) -> Self {
        Self {
            status: http::StatusCode::OK,
            body: serde_json::to_value(object).unwrap_or(serde_json::Value::Null),
        }
    }

    /// A failure as the API server reports it: a `metav1.Status` with `code`, `reason` (e.g.
    /// `Conflict`, `InternalError`) and `message`.
    pub fn error(code: http::StatusCode, reason: &str, message: &str) -> Self {
        Self {
            status: code,
            body: serde_json::json!({
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": message,
                "reason": reason,
                "code": code.as_u16(),
            }),
        }
    }

    /// `404 NotFound` for `resource` `name`, worded as the API server words it.
    pub fn not_found(resource: &str, name: &str) -> Self {
        Self::error(
            http::StatusCode::NOT_FOUND,
            "NotFound",
            &format!("{resource} \"{name}\" not found"),
        )
    }
}

type Handler = Arc<dyn Fn(&ApiRequest) -> ApiResponse + Send + Sync>;

/// An API server stand-in for unit tests (client-go's fake clientset with reactors): a
/// [`kube::Client`] whose requests are recorded and answered by a handler the test writes, in
/// process and without HTTP. Clones share the record.
///
/// The handler runs once per request, in arrival order, and may keep state (e.g. fail the first
/// update only). Needs a tokio runtime, as every [`kube::Client`] does.
#[derive(Clone)]
pub struct FakeApi {
    requests: Arc<Mutex<Vec<ApiRequest>>>,
    handler: Handler,
}

impl std::fmt::Debug for FakeApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeApi")
            .field("requests", &self.requests.lock().len())
            .finish_non_exhaustive()
    }
}

impl FakeApi {
    /// A fake API answering every request with `handler(request)`.
    pub fn new(handler: impl Fn(&ApiRequest) -> ApiResponse + Send + Sync + 'static) -> Self {
        Self {
            requests: Arc::default(),
            handler: Arc::new(handler),
        }
    }

    /// A client whose requests this fake answers; its default namespace is `default`.
    pub fn client(&self) -> kube::Client {
        let this = self.clone();
        let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let this = this.clone();
            async move { this.answer(req).await }
        });
        kube::Client::new(service, "default")
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<ApiRequest> {
        self.requests.lock().clone()
    }

    async fn answer(
        &self,
        req: http::Request<kube::client::Body>,
    ) -> Result<http::Response<kube::client::Body>, kube::Error> {
        let (parts, body) = req.into_parts();
        let bytes = body.collect_bytes().await?;
        let request = ApiRequest {
            method: parts.method,
            path: parts.uri.path().to_string(),
            query: parts.uri.query().unwrap_or_default().to_string(),
            body: serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null),
        };
        self.requests.lock().push(request.clone());
        // Not under the record's lock: a handler may read the record.
        let answer = (self.handler)(&request);
        let mut response = http::Response::new(kube::client::Body::from(
            answer.body.to_string().into_bytes(),
        ));
        *response.status_mut() = answer.status;
        response.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        Ok(response)
    }
}

/// A pod creation recorded by [`FakePodControl`].
#[derive(Clone, Debug, PartialEq)]
pub struct CreatedPod {
    /// Namespace asked for.
    pub namespace: String,
    /// Template the pod was built from.
    pub template: PodTemplateSpec,
    /// Object the events would be recorded on.
    pub owner: ObjectReference,
    /// Controller reference the pod would carry.
    pub controller_ref: OwnerReference,
}

/// A spec with one container `container` running `image`.
pub fn pod_spec(container: &str, image: &str) -> PodSpec {
    PodSpec {
        containers: vec![Container {
            name: container.into(),
            image: Some(image.into()),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// A pod template labelled `labels` whose spec is [`pod_spec`]`(container, image)`.
pub fn pod_template(
    labels: BTreeMap<String, String>,
    container: &str,
    image: &str,
) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: Some(labels),
            ..Default::default()
        }),
        spec: Some(pod_spec(container, image)),
    }
}

/// The status of an unnamed container that terminated with `exit_code`.
pub fn terminated_container_status(exit_code: i32) -> ContainerStatus {
    ContainerStatus {
        state: Some(ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code,
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Produces the error an injected failure returns (errors are not `Clone`).
type ErrorFactory = Arc<dyn Fn() -> PodControlError + Send + Sync>;

/// Decides from its 1-based number whether a `create_pods` call fails.
type CallFilter = Arc<dyn Fn(usize) -> bool + Send + Sync>;

#[derive(Default)]
struct FakeState {
    creates: Vec<CreatedPod>,
    create_calls: usize,
    /// Create calls whose (1-based) number this accepts fail with `create_error`.
    failing_creates: Option<CallFilter>,
    create_error: Option<ErrorFactory>,
    /// When non-zero, calls beyond this many fail (Go's `CreateLimit`).
    create_limit: usize,
    deletes: Vec<(String, String)>,
    delete_calls: usize,
    delete_error: Option<ErrorFactory>,
    patches: Vec<(String, String, serde_json::Value)>,
    patch_calls: usize,
    patch_error: Option<ErrorFactory>,
}

/// Records pod creations, deletions and patches instead of calling the API (client-go's
/// `FakePodControl`). Clones share the record. Failed calls are counted but not recorded.
///
/// Built with [`FakePodControl::forwarding_to`], it also passes every call that it does not fail
/// to another [`PodControl`] (usually a `RealPodControl`), and records the call only when that
/// one succeeds.
#[derive(Clone, Default)]
pub struct FakePodControl {
    state: Arc<Mutex<FakeState>>,
    forward: Option<Arc<dyn PodControl>>,
}

impl std::fmt::Debug for FakePodControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state.lock();
        f.debug_struct("FakePodControl")
            .field("creates", &s.creates.len())
            .field("deletes", &s.deletes)
            .field("patches", &s.patches.len())
            .finish()
    }
}

impl FakePodControl {
    /// A fake that succeeds at everything.
    pub fn new() -> Self {
        Self::default()
    }

    /// A fake that passes the calls it does not fail to `inner`.
    pub fn forwarding_to(inner: Arc<dyn PodControl>) -> Self {
        Self {
            forward: Some(inner),
            ..Self::default()
        }
    }

    /// Successful creations, in call order.
    pub fn creates(&self) -> Vec<CreatedPod> {
        self.state.lock().creates.clone()
    }

    /// Number of `create_pods` calls, successful or not.
    pub fn create_calls(&self) -> usize {
        self.state.lock().create_calls
    }

    /// Number of `create_pods`, `delete_pod` and `patch_pod` calls, successful or not.
    pub fn write_calls(&self) -> usize {
        let s = self.state.lock();
        s.create_calls + s.delete_calls + s.patch_calls
    }

    /// Successful deletions as `(namespace, name)`, in call order.
    pub fn deletes(&self) -> Vec<(String, String)> {
        self.state.lock().deletes.clone()
    }

    /// Names of successfully deleted pods, in call order.
    pub fn deleted_names(&self) -> Vec<String> {
        self.state
            .lock()
            .deletes
            .iter()
            .map(|(_, n)| n.clone())
            .collect()
    }

    /// Successful patches as `(namespace, name, patch)`, in call order.
    pub fn patches(&self) -> Vec<(String, String, serde_json::Value)> {
        self.state.lock().patches.clone()
    }

    /// Makes the `n`-th (1-based) and every later `create_pods` call fail with `err()`.
    pub fn fail_creates_from(
        &self,
        n: usize,
        err: impl Fn() -> PodControlError + Send + Sync + 'static,
    ) {
        let from = n.max(1);
        self.fail_creates_where(move |call| call >= from, err);
    }

    /// Makes every `n`-th `create_pods` call (the `n`-th, the `2n`-th, …) fail with `err()`.
    pub fn fail_every_nth_create(
        &self,
        n: usize,
        err: impl Fn() -> PodControlError + Send + Sync + 'static,
    ) {
        let n = n.max(1);
        self.fail_creates_where(move |call| call % n == 0, err);
    }

    fn fail_creates_where(
        &self,
        fails: impl Fn(usize) -> bool + Send + Sync + 'static,
        err: impl Fn() -> PodControlError + Send + Sync + 'static,
    ) {
        let mut s = self.state.lock();
        s.failing_creates = Some(Arc::new(fails));
        s.create_error = Some(Arc::new(err));
    }

    /// Makes every `create_pods` call fail with `err()`.
    pub fn fail_creates(&self, err: impl Fn() -> PodControlError + Send + Sync + 'static) {
        self.fail_creates_from(1, err);
    }

    /// Fails `create_pods` calls beyond the first `limit` (0 = no limit), as Go's `CreateLimit`.
    pub fn set_create_limit(&self, limit: usize) {
        self.state.lock().create_limit = limit;
    }

    /// Makes every `delete_pod` call fail with `err()`.
    pub fn fail_deletes(&self, err: impl Fn() -> PodControlError + Send + Sync + 'static) {
        self.state.lock().delete_error = Some(Arc::new(err));
    }

    /// Makes every `patch_pod` call fail with `err()`.
    pub fn fail_patches(&self, err: impl Fn() -> PodControlError + Send + Sync + 'static) {
        self.state.lock().patch_error = Some(Arc::new(err));
    }

    /// Forgets every recorded call and injected failure.
    pub fn clear(&self) {
        *self.state.lock() = FakeState::default();
    }
}

#[async_trait]
impl PodControl for FakePodControl {
    async fn create_pods(
        &self,
        namespace: &str,
        template: &PodTemplateSpec,
        owner: &ObjectReference,
        controller_ref: &OwnerReference,
    ) -> Result<(), PodControlError> {
        {
            let mut s = self.state.lock();
            s.create_calls += 1;
            let call = s.create_calls;
            if s.create_limit != 0 && call > s.create_limit {
                return Err(PodControlError::Invalid(format!(
                    "not creating pod, limit {} already reached (create call {call})",
                    s.create_limit
                )));
            }
            if let (Some(fails), Some(err)) = (&s.failing_creates, &s.create_error) {
                if fails(call) {
                    return Err(err());
                }
            }
        }
        if let Some(inner) = &self.forward {
            inner
                .create_pods(namespace, template, owner, controller_ref)
                .await?;
        }
        self.state.lock().creates.push(CreatedPod {
            namespace: namespace.to_string(),
            template: template.clone(),
            owner: owner.clone(),
            controller_ref: controller_ref.clone(),
        });
        Ok(())
    }

    async fn delete_pod(
        &self,
        namespace: &str,
        name: &str,
        owner: &ObjectReference,
    ) -> Result<(), PodControlError> {
        {
            let mut s = self.state.lock();
            s.delete_calls += 1;
            if let Some(err) = &s.delete_error {
                return Err(err());
            }
        }
        if let Some(inner) = &self.forward {
            inner.delete_pod(namespace, name, owner).await?;
        }
        self.state
            .lock()
            .deletes
            .push((namespace.to_string(), name.to_string()));
        Ok(())
    }

    async fn patch_pod(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), PodControlError> {
        {
            let mut s = self.state.lock();
            s.patch_calls += 1;
            if let Some(err) = &s.patch_error {
                return Err(err());
            }
        }
        if let Some(inner) = &self.forward {
            inner.patch_pod(namespace, name, patch).await?;
        }
        self.state
            .lock()
            .patches
            .push((namespace.to_string(), name.to_string(), patch.clone()));
        Ok(())
    }
}

/// Produces the error an injected event-sink failure returns.
type KubeErrorFactory = Arc<dyn Fn() -> kube::Error + Send + Sync>;

/// Calls that fail, and with what.
#[derive(Default)]
struct Failures {
    /// How many of the next calls fail (`u32::MAX`: all of them).
    remaining: u32,
    error: Option<KubeErrorFactory>,
}

impl Failures {
    fn set(&mut self, times: u32, err: impl Fn() -> kube::Error + Send + Sync + 'static) {
        self.remaining = times;
        self.error = Some(Arc::new(err));
    }

    /// The error this call fails with, if it fails.
    fn next(&mut self) -> Option<kube::Error> {
        if self.remaining == 0 {
            return None;
        }
        if self.remaining != u32::MAX {
            self.remaining -= 1;
        }
        self.error.as_ref().map(|f| f())
    }
}

#[derive(Default)]
struct SinkState {
    created: Vec<Event>,
    patched: Vec<(String, serde_json::Value)>,
    create_calls: usize,
    patch_calls: usize,
    resource_version: u64,
    create_failures: Failures,
    patch_failures: Failures,
}

/// An [`EventSink`] that records what would reach the API server (client-go's `testEventSink`).
/// Clones share the record. Writes succeed, giving the event a new `resourceVersion`, unless told
/// to fail.
#[derive(Clone, Default)]
pub struct FakeEventSink {
    state: Arc<Mutex<SinkState>>,
}

impl std::fmt::Debug for FakeEventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.state.lock();
        f.debug_struct("FakeEventSink")
            .field("created", &s.created.len())
            .field("patched", &s.patched.len())
            .finish()
    }
}

impl FakeEventSink {
    /// A sink that accepts everything.
    pub fn new() -> Self {
        Self::default()
    }

    /// Events successfully created, as they were sent, in call order.
    pub fn created(&self) -> Vec<Event> {
        self.state.lock().created.clone()
    }

    /// Successful patches as `(event name, patch)`, in call order.
    pub fn patched(&self) -> Vec<(String, serde_json::Value)> {
        self.state.lock().patched.clone()
    }

    /// Number of `create` calls, successful or not.
    pub fn create_calls(&self) -> usize {
        self.state.lock().create_calls
    }

    /// Number of `patch` calls, successful or not.
    pub fn patch_calls(&self) -> usize {
        self.state.lock().patch_calls
    }

    /// Makes the next `times` `create` calls (`u32::MAX`: every one) fail with `err()`.
    pub fn fail_creates(&self, times: u32, err: impl Fn() -> kube::Error + Send + Sync + 'static) {
        self.state.lock().create_failures.set(times, err);
    }

    /// Makes the next `times` `patch` calls (`u32::MAX`: every one) fail with `err()`.
    pub fn fail_patches(&self, times: u32, err: impl Fn() -> kube::Error + Send + Sync + 'static) {
        self.state.lock().patch_failures.set(times, err);
    }
}

#[async_trait]
impl EventSink for FakeEventSink {
    async fn create(&self, event: &Event) -> Result<Event, kube::Error> {
        let mut s = self.state.lock();
        s.create_calls += 1;
        if let Some(err) = s.create_failures.next() {
            return Err(err);
        }
        s.created.push(event.clone());
        s.resource_version += 1;
        let mut written = event.clone();
        written.metadata.resource_version = Some(s.resource_version.to_string());
        Ok(written)
    }

    async fn patch(&self, event: &Event, patch: &serde_json::Value) -> Result<Event, kube::Error> {
        let mut s = self.state.lock();
        s.patch_calls += 1;
        if let Some(err) = s.patch_failures.next() {
            return Err(err);
        }
        s.patched.push((
            event.metadata.name.clone().unwrap_or_default(),
            patch.clone(),
        ));
        s.resource_version += 1;
        let mut written = event.clone();
        written.metadata.resource_version = Some(s.resource_version.to_string());
        Ok(written)
    }
}

/// A [`History`] over a plain [`Store`] (kube's `NewFakeHistory` over an informer's indexer):
/// revisions are created, renumbered, adopted, released and deleted in the store, which a
/// controller under test may share as its ControllerRevision cache. Creating under a taken name
/// always bumps the collision count, as kube's fake does (the real history first compares data).
#[derive(Clone, Debug)]
pub struct FakeHistory {
    store: Store<ControllerRevision>,
}

impl FakeHistory {
    /// A history keeping its revisions in `store`.
    pub fn new(store: Store<ControllerRevision>) -> Self {
        Self { store }
    }

    /// The store the revisions live in.
    pub fn store(&self) -> &Store<ControllerRevision> {
        &self.store
    }

    fn key(revision: &ControllerRevision) -> ObjectKey {
        ObjectKey::new(
            revision.metadata.namespace.clone().unwrap_or_default(),
            revision.metadata.name.clone().unwrap_or_default(),
        )
    }

    fn not_found(revision: &ControllerRevision) -> HistoryError {
        let name = revision.metadata.name.as_deref().unwrap_or_default();
        let status = kube::core::Status::failure(
            &format!("controllerrevisions.apps \"{name}\" not found"),
            "NotFound",
        )
        .with_code(404);
        HistoryError::Api(kube::Error::Api(status.boxed()))
    }

    fn present(&self, revision: &ControllerRevision) -> bool {
        self.store.get(&Self::key(revision)).is_some()
    }
}

#[async_trait]
impl History for FakeHistory {
    async fn list_revisions(
        &self,
        parent: &OwnerInfo,
        selector: &Selector,
    ) -> HistoryResult<Vec<Arc<ControllerRevision>>> {
        Ok(history::list_from_store(&self.store, parent, selector))
    }

    async fn create_revision(
        &self,
        parent: &OwnerInfo,
        revision: &ControllerRevision,
        collision_count: &mut i32,
    ) -> HistoryResult<ControllerRevision> {
        let mut clone = revision.clone();
        clone.metadata.namespace = Some(parent.namespace.clone());
        loop {
            let hash = history::hash_revision(revision, Some(*collision_count));
            clone.metadata.name = Some(history::revision_name(&parent.name, &hash));
            if self.present(&clone) {
                *collision_count += 1;
                continue;
            }
            self.store.insert(Arc::new(clone.clone()));
            return Ok(clone);
        }
    }

    async fn update_revision(
        &self,
        revision: &ControllerRevision,
        new_revision: i64,
    ) -> HistoryResult<ControllerRevision> {
        let mut clone = revision.clone();
        clone.revision = new_revision;
        self.store.insert(Arc::new(clone.clone()));
        Ok(clone)
    }

    async fn delete_revision(&self, revision: &ControllerRevision) -> HistoryResult<()> {
        match self.store.remove(&Self::key(revision)) {
            Some(_) => Ok(()),
            None => Err(Self::not_found(revision)),
        }
    }

    async fn adopt_revision(
        &self,
        parent: &OwnerInfo,
        revision: &ControllerRevision,
    ) -> HistoryResult<ControllerRevision> {
        if let Some(owner) = controller_of(&revision.metadata) {
            return Err(HistoryError::AlreadyOwned {
                revision: Self::key(revision),
                owner: format!("{}/{} ({})", owner.kind, owner.name, owner.uid),
            });
        }
        if !self.present(revision) {
            return Err(Self::not_found(revision));
        }
        let mut clone = revision.clone();
        clone
            .metadata
            .owner_references
            .get_or_insert_with(Vec::new)
            .push(parent.controller_ref());
        self.store.insert(Arc::new(clone.clone()));
        Ok(clone)
    }

    async fn release_revision(
        &self,
        parent: &OwnerInfo,
        revision: &ControllerRevision,
    ) -> HistoryResult<Option<ControllerRevision>> {
        if !self.present(revision) {
            return Ok(None);
        }
        let mut clone = revision.clone();
        if let Some(refs) = clone.metadata.owner_references.as_mut() {
            refs.retain(|r| r.uid != parent.uid);
        }
        self.store.insert(Arc::new(clone.clone()));
        Ok(Some(clone))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fake_pod_control_records_calls_and_fails_from_the_nth_create() {
        let fake = FakePodControl::new();
        let shared = fake.clone();
        fake.fail_creates_from(3, || PodControlError::Conflict);
        let owner = ObjectReference::default();
        let cref = OwnerReference::default();
        let t = PodTemplateSpec::default();
        for _ in 0..2 {
            assert!(fake.create_pods("ns", &t, &owner, &cref).await.is_ok());
        }
        assert!(fake
            .create_pods("ns", &t, &owner, &cref)
            .await
            .is_err_and(|e| e.is_conflict()));
        assert_eq!(shared.creates().len(), 2);
        assert_eq!(shared.create_calls(), 3);

        fake.delete_pod("ns", "p1", &owner)
            .await
            .expect("delete ok");
        fake.patch_pod("ns", "p2", &serde_json::json!({"a": 1}))
            .await
            .expect("patch ok");
        assert_eq!(shared.deleted_names(), ["p1"]);
        assert_eq!(shared.patches()[0].1, "p2");

        fake.clear();
        fake.set_create_limit(1);
        assert!(fake.create_pods("ns", &t, &owner, &cref).await.is_ok());
        assert!(fake.create_pods("ns", &t, &owner, &cref).await.is_err());
        fake.fail_deletes(|| PodControlError::NotFound);
        assert!(fake
            .delete_pod("ns", "p", &owner)
            .await
            .is_err_and(|e| e.is_not_found()));
    }

    #[tokio::test]
    async fn a_forwarding_fake_passes_on_the_calls_it_does_not_fail() {
        let inner = FakePodControl::new();
        let fake = FakePodControl::forwarding_to(Arc::new(inner.clone()));
        fake.fail_every_nth_create(3, || PodControlError::Conflict);
        let owner = ObjectReference::default();
        let cref = OwnerReference::default();
        let t = PodTemplateSpec::default();
        let mut failed = Vec::new();
        for call in 1..=6 {
            if fake.create_pods("ns", &t, &owner, &cref).await.is_err() {
                failed.push(call);
            }
        }
        assert_eq!(failed, [3, 6]);
        assert_eq!(inner.creates().len(), 4);
        assert_eq!(fake.creates().len(), 4);

        inner.fail_deletes(|| PodControlError::NotFound);
        assert!(fake.delete_pod("ns", "p", &owner).await.is_err());
        assert!(
            fake.deletes().is_empty(),
            "a call the inner one failed is not recorded"
        );
        fake.patch_pod("ns", "p", &serde_json::json!({}))
            .await
            .expect("patch ok");
        assert_eq!(inner.patches().len(), 1);
        assert_eq!(fake.write_calls(), 8);
    }

    #[test]
    fn fixtures_build_a_labelled_template_and_a_terminated_status() {
        let t = pod_template(rkcm_labels::set(&[("app", "web")]), "c", "busybox");
        let labels = t.metadata.and_then(|m| m.labels).unwrap_or_default();
        assert_eq!(labels.get("app").map(String::as_str), Some("web"));
        let spec = t.spec.unwrap_or_default();
        assert_eq!(spec.containers[0].name, "c");
        assert_eq!(spec.containers[0].image.as_deref(), Some("busybox"));
        let status = terminated_container_status(2);
        assert_eq!(
            status.state.and_then(|s| s.terminated).map(|t| t.exit_code),
            Some(2)
        );
    }

    #[tokio::test]
    async fn fake_api_records_requests_and_answers_with_the_handler() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use kube::api::{Api, PostParams};

        let api = FakeApi::new(|req| {
            if req.method == http::Method::GET {
                let mut cm = ConfigMap::default();
                cm.metadata.name = Some("cm".into());
                cm.metadata.resource_version = Some("7".into());
                ApiResponse::ok(&cm)
            } else {
                ApiResponse::error(http::StatusCode::CONFLICT, "Conflict", "stale")
            }
        });
        let cms: Api<ConfigMap> = Api::namespaced(api.client(), "ns");
        let got = cms.get("cm").await.expect("get is answered");
        assert_eq!(got.metadata.resource_version.as_deref(), Some("7"));
        let err = cms
            .replace("cm", &PostParams::default(), &got)
            .await
            .expect_err("replace is refused");
        match err {
            kube::Error::Api(status) => {
                assert_eq!((status.code, status.message.as_str()), (409, "stale"))
            }
            other => panic!("unexpected error: {other}"),
        }
        let requests = api.requests();
        assert_eq!(requests.len(), 2);
        assert!(requests[0].is(http::Method::GET, "/api/v1/namespaces/ns/configmaps/cm"));
        assert!(requests[1].is(http::Method::PUT, "/api/v1/namespaces/ns/configmaps/cm"));
        assert_eq!(requests[1].body["metadata"]["resourceVersion"], "7");
    }

    #[tokio::test]
    async fn fake_event_sink_fails_as_often_as_told() {
        let sink = FakeEventSink::new();
        let shared = sink.clone();
        sink.fail_creates(2, || kube::Error::LinesCodecMaxLineLengthExceeded);
        let event = Event::default();
        assert!(sink.create(&event).await.is_err());
        assert!(sink.create(&event).await.is_err());
        let written = sink.create(&event).await.expect("third create succeeds");
        assert_eq!(written.metadata.resource_version.as_deref(), Some("1"));
        assert_eq!((shared.create_calls(), shared.created().len()), (3, 1));

        sink.fail_patches(u32::MAX, || kube::Error::LinesCodecMaxLineLengthExceeded);
        let patch = serde_json::json!({"count": 2});
        for _ in 0..3 {
            assert!(sink.patch(&event, &patch).await.is_err());
        }
        assert_eq!((shared.patch_calls(), shared.patched().len()), (3, 0));
    }
}
