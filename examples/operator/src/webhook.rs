//! The Greeting admission webhooks, written with kube's admission types and served over HTTPS
//! with axum and rustls.
//!
//! - [`MUTATING_WEBHOOK`] (`POST /mutate`) defaults an empty `spec.message` to
//!   [`DEFAULT_MESSAGE`] by a JSONPatch.
//! - [`VALIDATING_WEBHOOK`] (`POST /validate`) denies a Greeting with an entry named `message`:
//!   the ConfigMap's `message` key is the Greeting's message.
//!
//! [`mutating_webhook_configuration`] and [`validating_webhook_configuration`] register them for
//! creates and updates of Greetings, by the Service `greeting-operator-webhook` in namespace
//! `greeting-operator`, without a `caBundle`: a deployment sets it to the CA of the serving
//! certificate (and `rkcm::testenv` points them at a server in the test, with its own CA).

use std::sync::Arc;

use axum::body::Bytes;
use axum::routing::post;
use axum::{Json, Router};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
    ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
use kube::core::DynamicObject;
use serde_json::json;

use crate::Greeting;

/// The name of the mutating webhook (and of its configuration).
pub const MUTATING_WEBHOOK: &str = "default.greetings.example.rkcm.dev";

/// The name of the validating webhook (and of its configuration).
pub const VALIDATING_WEBHOOK: &str = "validate.greetings.example.rkcm.dev";

/// What an empty `spec.message` becomes.
pub const DEFAULT_MESSAGE: &str = "Hello!";

/// The entry name a Greeting may not use: its ConfigMap's key for `spec.message`.
pub const RESERVED_ENTRY: &str = "message";

/// The webhooks' routes: `POST /mutate` and `POST /validate`.
pub fn router() -> Router {
    Router::new()
        .route("/mutate", post(|body: Bytes| review(body, mutate)))
        .route("/validate", post(|body: Bytes| review(body, validate)))
}

/// Serves [`router`] over TLS on `listener` until it fails to accept.
pub async fn serve(
    listener: tokio::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
) -> std::io::Result<()> {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let service = hyper_util::service::TowerToHyperService::new(router());
    loop {
        let (tcp, _) = listener.accept().await?;
        let acceptor = acceptor.clone();
        let service = service.clone();
        tokio::spawn(async move {
            let stream = match acceptor.accept(tcp).await {
                Ok(stream) => stream,
                Err(err) => {
                    tracing::debug!(error = %err, "TLS handshake failed");
                    return;
                }
            };
            let served =
                hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new())
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            if let Err(err) = served {
                tracing::debug!(error = %err, "webhook connection failed");
            }
        });
    }
}

/// Decodes an AdmissionReview of a Greeting and answers it with `decide`; a review that does
/// not decode is answered as invalid.
async fn review(
    body: Bytes,
    decide: fn(&AdmissionRequest<Greeting>) -> AdmissionResponse,
) -> Json<AdmissionReview<DynamicObject>> {
    let request = serde_json::from_slice::<AdmissionReview<Greeting>>(&body)
        .map_err(|e| e.to_string())
        .and_then(|review| {
            let request: Result<AdmissionRequest<Greeting>, _> = review.try_into();
            request.map_err(|e| e.to_string())
        });
    let response = match request {
        Ok(request) => decide(&request),
        Err(err) => AdmissionResponse::invalid(err),
    };
    Json(response.into_review())
}

/// Defaults an empty `spec.message` to [`DEFAULT_MESSAGE`].
pub fn mutate(request: &AdmissionRequest<Greeting>) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    let Some(greeting) = &request.object else {
        return response;
    };
    if !greeting.spec.message.is_empty() {
        return response;
    }
    let patch = json!([{"op": "add", "path": "/spec/message", "value": DEFAULT_MESSAGE}]);
    let patched = serde_json::from_value(patch)
        .map_err(|e| e.to_string())
        .and_then(|patch| response.with_patch(patch).map_err(|e| e.to_string()));
    patched.unwrap_or_else(AdmissionResponse::invalid)
}

/// Denies a Greeting with an entry named [`RESERVED_ENTRY`].
pub fn validate(request: &AdmissionRequest<Greeting>) -> AdmissionResponse {
    let response = AdmissionResponse::from(request);
    let Some(greeting) = &request.object else {
        return response;
    };
    match greeting
        .spec
        .entries
        .iter()
        .position(|e| e.name == RESERVED_ENTRY)
    {
        Some(i) => response.deny(format!(
            "spec.entries[{i}].name: \"{RESERVED_ENTRY}\" is reserved for spec.message"
        )),
        None => response,
    }
}

/// Creates and updates of Greetings.
fn rules() -> Option<Vec<RuleWithOperations>> {
    Some(vec![RuleWithOperations {
        operations: Some(vec!["CREATE".into(), "UPDATE".into()]),
        api_groups: Some(vec!["example.rkcm.dev".into()]),
        api_versions: Some(vec!["v1".into()]),
        resources: Some(vec!["greetings".into()]),
        scope: None,
    }])
}

/// The operator's Service, at `path`.
fn client_config(path: &str) -> WebhookClientConfig {
    WebhookClientConfig {
        service: Some(ServiceReference {
            namespace: "greeting-operator".into(),
            name: "greeting-operator-webhook".into(),
            path: Some(path.into()),
            port: None,
        }),
        ..WebhookClientConfig::default()
    }
}

/// The MutatingWebhookConfiguration of [`MUTATING_WEBHOOK`], failing closed.
pub fn mutating_webhook_configuration() -> MutatingWebhookConfiguration {
    MutatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(MUTATING_WEBHOOK.into()),
            ..ObjectMeta::default()
        },
        webhooks: Some(vec![MutatingWebhook {
            name: MUTATING_WEBHOOK.into(),
            client_config: client_config("/mutate"),
            rules: rules(),
            failure_policy: Some("Fail".into()),
            side_effects: "None".into(),
            admission_review_versions: vec!["v1".into()],
            timeout_seconds: Some(10),
            ..MutatingWebhook::default()
        }]),
    }
}

/// The ValidatingWebhookConfiguration of [`VALIDATING_WEBHOOK`], failing closed.
pub fn validating_webhook_configuration() -> ValidatingWebhookConfiguration {
    ValidatingWebhookConfiguration {
        metadata: ObjectMeta {
            name: Some(VALIDATING_WEBHOOK.into()),
            ..ObjectMeta::default()
        },
        webhooks: Some(vec![ValidatingWebhook {
            name: VALIDATING_WEBHOOK.into(),
            client_config: client_config("/validate"),
            rules: rules(),
            failure_policy: Some("Fail".into()),
            side_effects: "None".into(),
            admission_review_versions: vec!["v1".into()],
            timeout_seconds: Some(10),
            ..ValidatingWebhook::default()
        }]),
    }
}
