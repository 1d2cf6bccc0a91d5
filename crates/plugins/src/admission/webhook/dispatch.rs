//! The two plugins: `MutatingAdmissionWebhook` calls the matching mutating webhooks one after
//! another in the mutating phase and applies their patches; `ValidatingAdmissionWebhook` calls
//! the matching validating webhooks at once in the validating phase (kube's
//! `mutating/dispatcher.go`, `validating/dispatcher.go` and `generic/webhook.go`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use serde_json::Value;

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_registry::conversion::{convert_between, ConversionFailed};
use rkcm_server::admission::attributes::{Attributes, Operation};
use rkcm_server::admission::metrics::{AdmissionMetrics, RejectionKind};
use rkcm_server::admission::plugin::Plugin;
use rkcm_server::auth::authorization::Authorize;
use rkcm_server::error::{ApiError, ApiResult};
use rkcm_storage::store::Store;

use super::hook::Hook;
use super::match_conditions::{self, Verdict};
use super::matching::{is_exempt, should_call, Invocation};
use super::review::{self, Refusal, Response};
use super::source::HookSource;
use crate::admission::cel_authorizer;
use crate::admission::plugins::{MUTATING_ADMISSION_WEBHOOK, VALIDATING_ADMISSION_WEBHOOK};

/// The `Status.reason`s of apimachinery, so that a webhook's own reason is kept.
const REASONS: &[&str] = &[
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "Gone",
    "Invalid",
    "ServerTimeout",
    "StoreReadError",
    "Timeout",
    "TooManyRequests",
    "BadRequest",
    "MethodNotAllowed",
    "NotAcceptable",
    "RequestEntityTooLarge",
    "UnsupportedMediaType",
    "InternalError",
    "Expired",
    "ServiceUnavailable",
];

/// The refusal of webhook `name` as the client gets it (`errors.ToStatusErr`): at least 400,
/// the webhook's message after `admission webhook "<name>" denied the request`.
pub fn denied(name: &str, status: &Refusal) -> ApiError {
    let denied_by = format!("admission webhook {name:?} denied the request");
    let message = if !status.message.is_empty() {
        format!("{denied_by}: {}", status.message)
    } else if !status.reason.is_empty() {
        format!("{denied_by}: {}", status.reason)
    } else {
        format!("{denied_by} without explanation")
    };
    let code = if status.code < 400 { 400 } else { status.code };
    let reason = REASONS
        .iter()
        .find(|r| **r == status.reason)
        .copied()
        .unwrap_or("");
    ApiError::new(code, reason, message)
}

/// A webhook that could not be called or answered nonsense (`ErrCallingWebhook`): refused with
/// 500, unless its `failurePolicy` is `Ignore`.
fn call_failed(hook: &Hook, reason: String) -> Result<Outcome, Failure> {
    let err = format!("failed calling webhook {:?}: {reason}", hook.name);
    if hook.ignore_failures {
        tracing::warn!(webhook = %hook.name, "Failed calling webhook, failing open: {err}");
        return Ok(Outcome::Ignored);
    }
    tracing::warn!(webhook = %hook.name, "Failed calling webhook, failing closed: {err}");
    Err(Failure {
        error: ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {err}"),
        ),
        kind: RejectionKind::CallingWebhookError,
    })
}

/// The labels of namespace `name` as stored, `None` when there is no such namespace.
fn stored_namespace_labels(store: &Store, name: &str) -> Option<BTreeMap<String, String>> {
    let info = rkcm_apimachinery::catalog::by_kind("v1", "Namespace")?;
    let ns = store.get(&rkcm_server::rest::key(info, None, name))?;
    Some(rkcm_storage::object::labels(&ns.value()))
}

/// 500 for a conversion that failed (`apierrors.NewInternalError`).
fn conversion_failed(e: ConversionFailed) -> ApiError {
    ApiError::new(
        500,
        "InternalError",
        format!("Internal error occurred: {e}"),
    )
}

/// The request as `invocation` has the webhook see it (`generic.VersionedAttributes`): its
/// objects converted to the version the webhook's rules name. The request itself when that is
/// its own version.
async fn versioned<'a>(
    store: &Store,
    attrs: &'a Attributes,
    invocation: &Invocation,
) -> ApiResult<Cow<'a, Attributes>> {
    if std::ptr::eq(invocation.resource, attrs.resource) {
        return Ok(Cow::Borrowed(attrs));
    }
    let convert = |obj: Option<&Value>| {
        let obj = obj.cloned();
        async move {
            match obj {
                Some(o) => convert_between(store, &o, attrs.resource, invocation.resource)
                    .await
                    .map(Some),
                None => Ok(None),
            }
        }
    };
    let object = convert(attrs.object()).await.map_err(conversion_failed)?;
    let old_object = convert(attrs.old_object())
        .await
        .map_err(conversion_failed)?;
    let mut v = Attributes::new(
        attrs.operation,
        invocation.resource,
        attrs.subresource,
        Some(&attrs.namespace),
        &attrs.name,
        object,
        old_object.map(Arc::new),
        Arc::clone(&attrs.user),
        attrs.dry_run,
    );
    v.kind = invocation.kind;
    Ok(Cow::Owned(v))
}

/// The request as `hook` sees it, if it goes to `hook` (`generic.Webhook.ShouldCallHook`):
/// rules, selectors, then `matchConditions` on the converted request.
async fn applies<'a>(
    store: &Store,
    authorizer: Option<&Arc<dyn Authorize>>,
    hook: &Hook,
    attrs: &'a Attributes,
) -> ApiResult<Option<Cow<'a, Attributes>>> {
    let labels = |name: &str| stored_namespace_labels(store, name);
    let Some(invocation) = should_call(hook, attrs, &labels)? else {
        return Ok(None);
    };
    let versioned = versioned(store, attrs, &invocation).await?;
    if hook.match_conditions.is_empty() {
        return Ok(Some(versioned));
    }
    let mut request = review::request(&versioned, attrs, "", "v1")["request"].take();
    if let Some(r) = request.as_object_mut() {
        r.remove("object");
        r.remove("oldObject");
    }
    match match_conditions::evaluate(
        &hook.match_conditions,
        versioned.object(),
        versioned.old_object(),
        &request,
        cel_authorizer::variables(authorizer, &versioned),
    ) {
        Verdict::Matches => Ok(Some(versioned)),
        Verdict::Excluded(_) => Ok(None),
        Verdict::Errors(_) if hook.ignore_failures => Ok(None),
        Verdict::Errors(errors) => {
            let why = match_conditions::aggregate(&errors);
            tracing::warn!(webhook = %hook.name, "Failed evaluating match conditions, failing closed: {why}");
            Err(ApiError::forbidden(attrs.resource, &attrs.name, &why))
        }
    }
}

enum Outcome {
    /// Called and answered.
    Answered(Response),
    /// Nothing to do: the call failed and the policy ignores that.
    Ignored,
}

/// A refusal of the request, and its kind for the metrics.
struct Failure {
    error: ApiError,
    kind: RejectionKind,
}

impl Failure {
    fn internal(error: ApiError) -> Self {
        Self {
            error,
            kind: RejectionKind::ApiserverInternalError,
        }
    }
}

/// [`call`], observed in `metrics`.
async fn observed_call(
    metrics: &AdmissionMetrics,
    store: &Store,
    hook: &Hook,
    attrs: &Attributes,
    original: &Attributes,
    mutating: bool,
) -> ApiResult<Outcome> {
    let type_ = if mutating { "admit" } else { "validating" };
    let operation = attrs.operation.as_str();
    let started = Instant::now();
    let result = call(store, hook, attrs, original, mutating).await;
    let elapsed = started.elapsed();
    match &result {
        Ok(Outcome::Answered(_)) => {
            metrics.observe_webhook(&hook.name, type_, operation, false, 200, elapsed);
        }
        Ok(Outcome::Ignored) => {
            metrics.observe_webhook(&hook.name, type_, operation, false, 0, elapsed);
            metrics.webhook_fail_open(&hook.name, type_);
        }
        Err(f) => {
            let code = match f.kind {
                RejectionKind::NoError => f.error.code,
                _ => 0,
            };
            metrics.observe_webhook(&hook.name, type_, operation, true, code, elapsed);
            metrics.webhook_rejection(&hook.name, type_, operation, f.kind, code);
        }
    }
    result.map_err(|f| f.error)
}

/// Calls `hook` about the request `original`, which it sees as `attrs`: the dry-run check, the
/// review, the call, the answer's checks. A refusal is an error.
async fn call(
    store: &Store,
    hook: &Hook,
    attrs: &Attributes,
    original: &Attributes,
    mutating: bool,
) -> Result<Outcome, Failure> {
    if attrs.dry_run {
        if hook.side_effects.is_empty() {
            return call_failed(hook, "Webhook SideEffects is nil".to_string());
        }
        if hook.side_effects != "None" && hook.side_effects != "NoneOnDryRun" {
            return Err(Failure::internal(ApiError::bad_request(format!(
                "admission webhook {:?} does not support dry run",
                hook.name
            ))));
        }
    }
    let version = match review::version(hook) {
        Ok(v) => v,
        Err(e) => {
            return call_failed(hook, format!("could not create admission objects: {e}"));
        }
    };
    let uid = uuid::Uuid::new_v4().to_string();
    let body = match serde_json::to_vec(&review::request(attrs, original, &uid, version)) {
        Ok(b) => b,
        Err(e) => {
            return Err(Failure::internal(ApiError::internal(
                "encoding AdmissionReview",
                e,
            )))
        }
    };
    let answer = match hook.client.post(store, body).await {
        Ok(a) => a,
        Err(cause) => {
            return call_failed(hook, format!("failed to call webhook: {cause}"));
        }
    };
    let response = match review::response(&answer, &uid, version, mutating) {
        Ok(r) => r,
        Err(e) => {
            return call_failed(hook, format!("received invalid webhook response: {e}"));
        }
    };
    for warning in &response.warnings {
        rkcm_server::warning::add(warning.as_str());
    }
    if !response.allowed {
        return Err(Failure {
            error: denied(&hook.name, &response.status),
            kind: RejectionKind::NoError,
        });
    }
    Ok(Outcome::Answered(response))
}

/// What the mutating webhooks keep between the rounds of the mutating phase
/// (`webhookReinvokeContext`).
#[derive(Default)]
struct Reinvoke {
    inner: parking_lot::Mutex<ReinvokeState>,
}

#[derive(Default)]
struct ReinvokeState {
    /// The object as the plugin left it last.
    last_output: Option<serde_json::Value>,
    /// Webhooks with `reinvocationPolicy: IfNeeded` called so far.
    previously_invoked: std::collections::BTreeSet<String>,
    /// Webhooks to call again in the second round.
    reinvoke: std::collections::BTreeSet<String>,
}

impl ReinvokeState {
    fn require_reinvoking_previously_invoked(&mut self) {
        let invoked = std::mem::take(&mut self.previously_invoked);
        self.reinvoke.extend(invoked);
    }
}

/// A webhook's identity across rounds.
fn hook_id(hook: &Hook) -> String {
    format!("{}/{}", hook.configuration, hook.name)
}

/// `MutatingAdmissionWebhook`.
pub struct MutatingWebhook {
    store: Store,
    source: Arc<HookSource>,
    metrics: AdmissionMetrics,
    authorizer: Option<Arc<dyn Authorize>>,
}

impl MutatingWebhook {
    /// The plugin, reading `MutatingWebhookConfiguration`s from `store`'s watch cache and
    /// observing its calls in `metrics`.
    pub fn new(store: Store, metrics: AdmissionMetrics) -> Self {
        let source = HookSource::new(store.clone(), "MutatingWebhookConfiguration");
        Self {
            store,
            source,
            metrics,
            authorizer: None,
        }
    }

    /// The plugin with `authorizer` answering the `authorizer` variable of `matchConditions`.
    pub fn with_authorizer(self, authorizer: Option<Arc<dyn Authorize>>) -> Self {
        Self { authorizer, ..self }
    }
}

/// The JSON patch a webhook returned applied to `obj`, the object as the webhook saw it, then
/// defaulted as kube's codec defaults what it decodes (`mutating/dispatcher.go`:
/// `GetObjectDefaulter().Default`) for `resource`.
fn patched(hook: &Hook, obj: &Value, resource: &ResourceInfo, patch: &[u8]) -> ApiResult<Value> {
    let internal = |e: String| {
        ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {e}"),
        )
    };
    let patch: json_patch::Patch =
        serde_json::from_slice(patch).map_err(|e| internal(e.to_string()))?;
    let mut patched = obj.clone();
    json_patch::patch(&mut patched, &patch).map_err(|e| {
        tracing::warn!(webhook = %hook.name, "applying the webhook's patch: {e}");
        internal(e.to_string())
    })?;
    // A subresource's own kind (a Scale) has no defaults of the resource's.
    if patched.get("kind").and_then(Value::as_str) == Some(resource.kind) {
        rkcm_registry::by_kind::strategy(resource).default(&mut patched);
    }
    Ok(patched)
}

#[async_trait]
impl Plugin for MutatingWebhook {
    fn name(&self) -> &'static str {
        MUTATING_ADMISSION_WEBHOOK
    }

    fn handles(&self, _operation: Operation) -> bool {
        true
    }

    async fn admit(&self, attrs: &mut Attributes) -> ApiResult<()> {
        let hooks = self.source.hooks();
        if hooks.is_empty() || is_exempt(attrs) {
            return Ok(());
        }
        let Some(reinvoke) = attrs
            .reinvocation
            .value::<Reinvoke>(MUTATING_ADMISSION_WEBHOOK)
        else {
            return Err(ApiError::internal(
                "admission webhooks",
                "unexpected reinvocation state",
            ));
        };
        let is_reinvoke = attrs.reinvocation.is_reinvoke();
        if is_reinvoke {
            let mut state = reinvoke.inner.lock();
            // Plugins of the second round changed what the webhooks left: every webhook
            // that asked for it is called again.
            if state.last_output.as_ref() != attrs.object() {
                state.require_reinvoking_previously_invoked();
            }
        }
        let result = self.dispatch(&hooks, attrs, &reinvoke, is_reinvoke).await;
        reinvoke.inner.lock().last_output = attrs.object().cloned();
        result
    }
}

impl MutatingWebhook {
    async fn dispatch(
        &self,
        hooks: &[Arc<Hook>],
        attrs: &mut Attributes,
        reinvoke: &Reinvoke,
        is_reinvoke: bool,
    ) -> ApiResult<()> {
        for hook in hooks {
            // Each webhook is matched against the object as the ones before it left it.
            let Some(versioned) =
                applies(&self.store, self.authorizer.as_ref(), hook, attrs).await?
            else {
                continue;
            };
            let id = hook_id(hook);
            // The second round calls only webhooks called in the first that asked for it.
            if is_reinvoke && !reinvoke.inner.lock().reinvoke.contains(&id) {
                continue;
            }
            let outcome =
                observed_call(&self.metrics, &self.store, hook, &versioned, attrs, true).await?;
            let mutated = match (outcome, versioned.object()) {
                (Outcome::Answered(response), Some(seen)) => match &response.patch {
                    Some(patch) => {
                        let obj = patched(hook, seen, versioned.resource, patch)?;
                        // Back to the request's version (`ConvertToGVK`).
                        let obj =
                            convert_between(&self.store, &obj, versioned.resource, attrs.resource)
                                .await
                                .map_err(conversion_failed)?;
                        Some(obj)
                    }
                    None => None,
                },
                _ => None,
            };
            drop(versioned);
            if let (Some(obj), Some(current)) = (mutated, attrs.object_mut()) {
                if *current != obj {
                    *current = obj;
                    reinvoke
                        .inner
                        .lock()
                        .require_reinvoking_previously_invoked();
                    attrs.reinvocation.set_should_reinvoke();
                }
            }
            if hook.reinvoke_if_needed {
                reinvoke.inner.lock().previously_invoked.insert(id);
            }
        }
        Ok(())
    }
}

/// `ValidatingAdmissionWebhook`.
pub struct ValidatingWebhook {
    store: Store,
    source: Arc<HookSource>,
    metrics: AdmissionMetrics,
    authorizer: Option<Arc<dyn Authorize>>,
}

impl ValidatingWebhook {
    /// The plugin, reading `ValidatingWebhookConfiguration`s from `store`'s watch cache and
    /// observing its calls in `metrics`.
    pub fn new(store: Store, metrics: AdmissionMetrics) -> Self {
        let source = HookSource::new(store.clone(), "ValidatingWebhookConfiguration");
        Self {
            store,
            source,
            metrics,
            authorizer: None,
        }
    }

    /// The plugin with `authorizer` answering the `authorizer` variable of `matchConditions`.
    pub fn with_authorizer(self, authorizer: Option<Arc<dyn Authorize>>) -> Self {
        Self { authorizer, ..self }
    }
}

#[async_trait]
impl Plugin for ValidatingWebhook {
    fn name(&self) -> &'static str {
        VALIDATING_ADMISSION_WEBHOOK
    }

    fn handles(&self, _operation: Operation) -> bool {
        true
    }

    async fn validate(&self, attrs: &Attributes) -> ApiResult<()> {
        let hooks = self.source.hooks();
        if hooks.is_empty() || is_exempt(attrs) {
            return Ok(());
        }
        let mut relevant = Vec::new();
        for hook in hooks.iter() {
            if let Some(versioned) =
                applies(&self.store, self.authorizer.as_ref(), hook, attrs).await?
            {
                relevant.push((hook, versioned));
            }
        }
        let calls = relevant.iter().map(|(hook, versioned)| {
            observed_call(&self.metrics, &self.store, hook, versioned, attrs, false)
        });
        for outcome in futures::future::join_all(calls).await {
            outcome?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rkcm_server::auth::UserInfo;
    use rkcm_storage::memory::MemoryBackend;
    use serde_json::json;

    fn dry_run_create() -> Attributes {
        Attributes::new(
            Operation::Create,
            rkcm_apimachinery::catalog::by_kind("v1", "ConfigMap").expect("configmaps"),
            "",
            Some("ns"),
            "c",
            Some(json!({"metadata": {"name": "c"}})),
            None,
            Arc::new(UserInfo::default()),
            true,
        )
    }

    // validating/dispatcher.go callHook: dry runs reach only webhooks without side effects.
    #[tokio::test]
    async fn dry_runs_are_refused_by_webhooks_with_side_effects() {
        let store = Store::new(Arc::new(MemoryBackend::new()), 100)
            .await
            .expect("memory store");
        for side_effects in ["Some", "Unknown"] {
            let hook = Hook::decode(
                "c",
                &json!({"name": "w", "sideEffects": side_effects, "failurePolicy": "Ignore",
                    "clientConfig": {"url": "https://10.0.0.1/"}}),
            );
            let e = call(&store, &hook, &dry_run_create(), &dry_run_create(), false)
                .await
                .err()
                .expect("refused whatever the failure policy")
                .error;
            assert_eq!(e.code, 400);
            assert_eq!(
                e.message,
                "admission webhook \"w\" does not support dry run"
            );
        }
        let unset = Hook::decode(
            "c",
            &json!({"name": "w", "clientConfig": {"url": "https://10.0.0.1/"}}),
        );
        let e = call(&store, &unset, &dry_run_create(), &dry_run_create(), false)
            .await
            .err()
            .expect("a call error")
            .error;
        assert_eq!(
            e.message,
            "Internal error occurred: failed calling webhook \"w\": Webhook SideEffects is nil"
        );
        let none = Hook::decode(
            "c",
            &json!({"name": "w", "sideEffects": "NoneOnDryRun", "clientConfig": {"url": "https://10.0.0.1/"}}),
        );
        let e = call(&store, &none, &dry_run_create(), &dry_run_create(), false)
            .await
            .err()
            .expect("called, so not reached")
            .error;
        assert!(
            e.message.ends_with("connect: no route to host"),
            "{}",
            e.message
        );
    }

    #[test]
    fn refusals_read_as_kubes() {
        let e = denied(
            "deny.example.com",
            &Refusal {
                code: 403,
                reason: "Forbidden".into(),
                message: "no pods here".into(),
            },
        );
        assert_eq!(e.code, 403);
        assert_eq!(e.reason, "Forbidden");
        assert_eq!(
            e.message,
            "admission webhook \"deny.example.com\" denied the request: no pods here"
        );
        let e = denied("w", &Refusal::default());
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "admission webhook \"w\" denied the request without explanation"
        );
        let e = denied(
            "w",
            &Refusal {
                code: 200,
                reason: "Custom".into(),
                message: String::new(),
            },
        );
        assert_eq!(e.code, 400);
        assert_eq!(e.reason, "");
        assert_eq!(
            e.message,
            "admission webhook \"w\" denied the request: Custom"
        );
    }
}
