//! Calling out to webhooks, as kube's `staging/src/k8s.io/apiserver/pkg/util/webhook` does for
//! admission webhooks, CRD conversion webhooks and aggregated APIs: a `clientConfig` (a URL or
//! a Service, and a `caBundle`), the Service resolved to a ready endpoint of its
//! EndpointSlices, and an HTTPS POST within a timeout.
//!
//! Only loopback addresses are dialed ([`dial`]); [`dial::send`] streams a request and its
//! response for the aggregator's proxy.

pub mod client;
pub mod dial;
pub mod service;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;

use rkcm_storage::store::Store;

/// Where a webhook is called (`WebhookClientConfig`, `apiextensions`'
/// `WebhookClientConfig`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientConfig {
    /// `url`.
    pub url: Option<String>,
    /// `service`.
    pub service: Option<ServiceRef>,
    /// `caBundle`, PEM.
    pub ca_bundle: Vec<u8>,
}

/// `service` of a client config.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceRef {
    /// `namespace`.
    pub namespace: String,
    /// `name`.
    pub name: String,
    /// `path`, empty for `/`.
    pub path: String,
    /// `port`, 443 by default.
    pub port: u16,
}

impl ServiceRef {
    /// The Service's DNS name, `<name>.<namespace>.svc`: the TLS server name its certificate
    /// must hold.
    pub fn host(&self) -> String {
        format!("{}.{}.svc", self.name, self.namespace)
    }
}

impl ClientConfig {
    /// A stored `clientConfig` object (`url`, `service`, base64 `caBundle`); what it lacks is
    /// kube's default (`service.port` 443).
    pub fn decode(cc: &Value) -> Self {
        let str_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        let ca_bundle = cc
            .get("caBundle")
            .and_then(Value::as_str)
            .and_then(|b| {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD.decode(b).ok()
            })
            .unwrap_or_default();
        let service = cc
            .get("service")
            .filter(|s| s.is_object())
            .map(|s| ServiceRef {
                namespace: str_of(s, "namespace").unwrap_or_default(),
                name: str_of(s, "name").unwrap_or_default(),
                path: str_of(s, "path").unwrap_or_default(),
                port: s
                    .get("port")
                    .and_then(Value::as_u64)
                    .and_then(|p| u16::try_from(p).ok())
                    .unwrap_or(443),
            });
        Self {
            url: str_of(cc, "url"),
            service,
            ca_bundle,
        }
    }
}

/// A client for one webhook: its config and timeout, with the TLS settings built on the first
/// call and kept.
#[derive(Debug)]
pub struct Client {
    /// Where calls go.
    pub config: ClientConfig,
    /// How long a call may take (`timeoutSeconds`).
    pub timeout: Duration,
    tls: OnceLock<Result<Arc<rustls::ClientConfig>, String>>,
}

impl Client {
    /// A client calling `config` within `timeout`.
    pub fn new(config: ClientConfig, timeout: Duration) -> Self {
        Self {
            config,
            timeout,
            tls: OnceLock::new(),
        }
    }

    /// POSTs `body` (JSON) and returns the body of a 2xx answer; the error is the cause kube
    /// reports after `failed to call webhook: ` (Go's `net/http` client's words).
    pub async fn post(&self, store: &Store, body: Vec<u8>) -> Result<Bytes, String> {
        client::call(self, store, body).await
    }
}
