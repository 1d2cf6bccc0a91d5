//! Fakes for controller tests: a recording [`FakePodControl`], a client that never connects and a
//! client answered by the test itself ([`FakeApi`]).
//! (`FakeClock` lives in [`crate::clock`].)

use std::sync::Arc;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::{ObjectReference, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use parking_lot::Mutex;

use crate::pod_control::{PodControl, PodControlError};

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

/// Produces the error an injected failure returns (errors are not `Clone`).
type ErrorFactory = Arc<dyn Fn() -> PodControlError + Send + Sync>;

#[derive(Default)]
struct FakeState {
    creates: Vec<CreatedPod>,
    create_calls: usize,
    /// Create calls numbered (1-based) at or above this fail with `create_error`.
    fail_creates_from: Option<usize>,
    create_error: Option<ErrorFactory>,
    /// When non-zero, calls beyond this many fail (Go's `CreateLimit`).
    create_limit: usize,
    deletes: Vec<(String, String)>,
    delete_error: Option<ErrorFactory>,
    patches: Vec<(String, String, serde_json::Value)>,
    patch_error: Option<ErrorFactory>,
}

/// Records pod creations, deletions and patches instead of calling the API (client-go's
/// `FakePodControl`). Clones share the record. Failed calls are counted but not recorded.
#[derive(Clone, Default)]
pub struct FakePodControl {
    state: Arc<Mutex<FakeState>>,
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

    /// Successful creations, in call order.
    pub fn creates(&self) -> Vec<CreatedPod> {
        self.state.lock().creates.clone()
    }

    /// Number of `create_pods` calls, successful or not.
    pub fn create_calls(&self) -> usize {
        self.state.lock().create_calls
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
        let mut s = self.state.lock();
        s.fail_creates_from = Some(n.max(1));
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
        let mut s = self.state.lock();
        s.create_calls += 1;
        let call = s.create_calls;
        if s.create_limit != 0 && call > s.create_limit {
            return Err(PodControlError::Invalid(format!(
                "not creating pod, limit {} already reached (create call {call})",
                s.create_limit
            )));
        }
        if let (Some(from), Some(err)) = (s.fail_creates_from, &s.create_error) {
            if call >= from {
                return Err(err());
            }
        }
        s.creates.push(CreatedPod {
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
        _owner: &ObjectReference,
    ) -> Result<(), PodControlError> {
        let mut s = self.state.lock();
        if let Some(err) = &s.delete_error {
            return Err(err());
        }
        s.deletes.push((namespace.to_string(), name.to_string()));
        Ok(())
    }

    async fn patch_pod(
        &self,
        namespace: &str,
        name: &str,
        patch: &serde_json::Value,
    ) -> Result<(), PodControlError> {
        let mut s = self.state.lock();
        if let Some(err) = &s.patch_error {
            return Err(err());
        }
        s.patches
            .push((namespace.to_string(), name.to_string(), patch.clone()));
        Ok(())
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
}
