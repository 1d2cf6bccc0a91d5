//! The API clients of the controllers: each controller gets its own client (its own rate
//! limiter), authenticated either as the manager itself or, with
//! `--use-service-account-credentials`, as its own ServiceAccount in `kube-system`.
//!
//! Mirrors `k8s.io/controller-manager/pkg/clientbuilder` (`SimpleControllerClientBuilder`,
//! `DynamicControllerClientBuilder`) and the choice between them in
//! `cmd/kube-controller-manager/app/controllermanager.go` (`createClientBuilders`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, PostParams};
use parking_lot::Mutex;
use rkcm_controllers::client_names;
use rkcm_runtime::token_source::{BoxError, CachedTokenSource, Token, TokenSource};
use rkcm_runtime::{api_error, rest_client, Clock};

/// Lifetime asked for each controller token (`defaultExpirationSeconds`).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// Share of a token's lifetime left when it is replaced (`defaultLeewayPercent`).
pub const DEFAULT_LEEWAY_PERCENT: i64 = 20;
/// Shortest lifetime assumed for a token, against clock skew (`tokenSourceImpl.Token`).
pub const MIN_TOKEN_LIFETIME: Duration = Duration::from_secs(10 * 60);

/// When a token the server says expires at `expiration` (fetched at `now`) must be replaced:
/// after its lifetime less `leeway_percent` of it, a lifetime under ten minutes (a skewed clock)
/// counting as ten minutes (`tokenSourceImpl.Token`).
pub fn refresh_at(now: Timestamp, expiration: Timestamp, leeway_percent: i64) -> Timestamp {
    let min = SignedDuration::try_from(MIN_TOKEN_LIFETIME).unwrap_or(SignedDuration::ZERO);
    let lifetime = expiration.duration_since(now).max(min);
    let leeway = SignedDuration::from_nanos(
        i64::try_from(lifetime.as_nanos() * i128::from(leeway_percent) / 100).unwrap_or(0),
    );
    now.checked_add(lifetime - leeway).unwrap_or(Timestamp::MAX)
}

/// Gives each controller its API client.
pub enum ControllerClientBuilder {
    /// Every controller uses the manager's own credentials (`SimpleControllerClientBuilder`).
    Simple {
        /// The manager's `--kubeconfig`.
        config: Box<kube::Config>,
        /// `--kube-api-qps`.
        qps: f32,
        /// `--kube-api-burst`.
        burst: u32,
    },
    /// Each controller uses its ServiceAccount's tokens (`DynamicControllerClientBuilder`).
    ServiceAccounts(Arc<Dynamic>),
}

/// The state of [`ControllerClientBuilder::ServiceAccounts`].
pub struct Dynamic {
    /// The manager's configuration without its credentials (`AnonymousClientConfig`).
    anonymous: kube::Config,
    qps: f32,
    burst: u32,
    /// The manager's own client: ensures the ServiceAccounts and requests their tokens.
    root: kube::Client,
    root_config: kube::Config,
    clock: Arc<dyn Clock>,
    expiration_seconds: i64,
    leeway_percent: i64,
    /// One token cache per ServiceAccount, shared by every client of that name.
    sources: Mutex<HashMap<String, Arc<CachedTokenSource>>>,
}

impl ControllerClientBuilder {
    /// Every controller on the credentials of `config`.
    pub fn simple(config: kube::Config, qps: f32, burst: u32) -> Self {
        Self::Simple {
            config: Box::new(config),
            qps,
            burst,
        }
    }

    /// Every controller as its own ServiceAccount in `kube-system`, the accounts created and
    /// their tokens requested with the credentials of `config`.
    pub fn service_accounts(
        config: kube::Config,
        qps: f32,
        burst: u32,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, kube::Error> {
        let root = rest_client::client(config.clone(), qps, burst)?;
        let mut anonymous = config.clone();
        anonymous.auth_info = Default::default();
        Ok(Self::ServiceAccounts(Arc::new(Dynamic {
            anonymous,
            qps,
            burst,
            root,
            root_config: config,
            clock,
            expiration_seconds: DEFAULT_EXPIRATION_SECONDS,
            leeway_percent: DEFAULT_LEEWAY_PERCENT,
            sources: Mutex::new(HashMap::new()),
        })))
    }

    /// A client on the manager's own credentials (the shared informers, leader election, the
    /// service-account token controller).
    pub fn root(&self) -> Result<kube::Client, kube::Error> {
        match self {
            Self::Simple { config, qps, burst } => {
                rest_client::client((**config).clone(), *qps, *burst)
            }
            Self::ServiceAccounts(d) => rest_client::client(d.root_config.clone(), d.qps, d.burst),
        }
    }

    /// The client named `name` (kube's `ClientOrDie(name)`): with service-account credentials,
    /// authenticated as `system:serviceaccount:kube-system:<name>`.
    pub fn client(&self, name: &str) -> Result<kube::Client, kube::Error> {
        match self {
            Self::Simple { .. } => self.root(),
            Self::ServiceAccounts(d) => {
                let source =
                    Arc::clone(d.sources.lock().entry(name.to_string()).or_insert_with(|| {
                        Arc::new(CachedTokenSource::new(
                            Arc::new(ServiceAccountTokenSource {
                                client: d.root.clone(),
                                name: name.to_string(),
                                expiration_seconds: d.expiration_seconds,
                                leeway_percent: d.leeway_percent,
                                clock: Arc::clone(&d.clock),
                            }),
                            Arc::clone(&d.clock),
                        ))
                    }));
                rest_client::client_with_tokens(d.anonymous.clone(), d.qps, d.burst, source)
            }
        }
    }

    /// The client of the controller with canonical name `controller` (see
    /// [`client_names::client_name`]).
    pub fn controller_client(&self, controller: &str) -> Result<kube::Client, kube::Error> {
        match client_names::client_name(controller) {
            Some(name) => self.client(name),
            None => self.root(),
        }
    }

    /// Whether controllers run under their own ServiceAccounts.
    pub fn uses_service_accounts(&self) -> bool {
        matches!(self, Self::ServiceAccounts(_))
    }
}

/// Tokens of one controller's ServiceAccount, by TokenRequest (`tokenSourceImpl`).
struct ServiceAccountTokenSource {
    client: kube::Client,
    name: String,
    expiration_seconds: i64,
    leeway_percent: i64,
    clock: Arc<dyn Clock>,
}

/// Errors getting a controller's token.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// Every attempt failed (kube's message).
    #[error("failed to get token for {namespace}/{name}: timed out waiting for the condition")]
    TimedOut {
        /// `kube-system`.
        namespace: &'static str,
        /// The ServiceAccount.
        name: String,
    },
    /// The server's TokenRequest has no expiration.
    #[error("nil pointer of expiration in token request")]
    NoExpiration,
}

impl ServiceAccountTokenSource {
    async fn attempt(&self) -> Result<TokenRequest, kube::Error> {
        get_or_create_service_account(&self.client, client_names::NAMESPACE, &self.name).await?;
        let accounts: Api<ServiceAccount> =
            Api::namespaced(self.client.clone(), client_names::NAMESPACE);
        accounts
            .create_token_request(
                &self.name,
                &PostParams::default(),
                &TokenRequest {
                    spec: TokenRequestSpec {
                        expiration_seconds: Some(self.expiration_seconds),
                        ..Default::default()
                    },
                    ..Default::default()
                },
            )
            .await
    }
}

#[async_trait]
impl TokenSource for ServiceAccountTokenSource {
    async fn token(&self) -> Result<Token, BoxError> {
        // wait.Backoff{Duration: 500ms, Factor: 2, Steps: 4}.
        let mut delay = Duration::from_millis(500);
        let mut request = None;
        for step in 0..4 {
            if step > 0 {
                tokio::time::sleep(delay).await;
                delay *= 2;
            }
            match self.attempt().await {
                Ok(tr) => {
                    request = Some(tr);
                    break;
                }
                Err(err) => tracing::info!(
                    namespace = client_names::NAMESPACE,
                    service_account = %self.name,
                    error = %api_error::message(&err),
                    "get token failed"
                ),
            }
        }
        let Some(tr) = request else {
            return Err(Box::new(TokenError::TimedOut {
                namespace: client_names::NAMESPACE,
                name: self.name.clone(),
            }));
        };
        let status = tr.status.ok_or(TokenError::NoExpiration)?;
        let now = self.clock.now();
        let expiration = status.expiration_timestamp.0;
        Ok(Token {
            access_token: status.token,
            expiry: Some(refresh_at(now, expiration, self.leeway_percent)),
        })
    }
}

/// The ServiceAccount `namespace/name`, created (with its namespace, if that can be) when missing
/// (`getOrCreateServiceAccount`).
pub async fn get_or_create_service_account(
    client: &kube::Client,
    namespace: &str,
    name: &str,
) -> Result<ServiceAccount, kube::Error> {
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), namespace);
    match accounts.get(name).await {
        Ok(sa) => return Ok(sa),
        Err(err) if api_error::is_not_found(&err) => {}
        Err(err) => return Err(err),
    }
    // Create the namespace if it cannot be seen; tolerate errors, the manager may not be allowed.
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if let Err(err) = namespaces.get(namespace).await {
        if api_error::is_not_found(&err) {
            let ns = Namespace {
                metadata: kube::api::ObjectMeta {
                    name: Some(namespace.to_string()),
                    ..Default::default()
                },
                ..Default::default()
            };
            if let Err(err) = namespaces.create(&PostParams::default(), &ns).await {
                if !api_error::is_already_exists(&err) {
                    tracing::info!(namespace, error = %api_error::message(&err), "create non-exist namespace");
                }
            }
        }
    }
    let sa = ServiceAccount {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    match accounts.create(&PostParams::default(), &sa).await {
        // Someone else created it meanwhile: read theirs.
        Err(err) if api_error::is_already_exists(&err) => accounts.get(name).await,
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).expect("in range")
    }

    // An hour-long token is replaced when a fifth of its life is left: after 48 minutes.
    #[test]
    fn a_token_is_replaced_when_twenty_percent_of_its_lifetime_is_left() {
        assert_eq!(refresh_at(at(0), at(3600), 20), at(2880));
        assert_eq!(refresh_at(at(0), at(3600), 0), at(3600));
    }

    // A server clock behind ours (or a short-lived token) counts as ten minutes of life.
    #[test]
    fn a_short_or_already_expired_lifetime_is_pinned_to_ten_minutes() {
        assert_eq!(refresh_at(at(0), at(60), 20), at(480));
        assert_eq!(refresh_at(at(0), at(-3600), 20), at(480));
        assert_eq!(refresh_at(at(0), at(600), 20), at(480));
        assert_eq!(
            refresh_at(at(0), at(601), 20),
            at(480) + SignedDuration::from_millis(800)
        );
    }

    // With an injected clock: the cached token of a controller is reused for 48 minutes.
    #[tokio::test]
    async fn the_cached_controller_token_is_reused_until_its_refresh_time() {
        struct Fixed(rkcm_runtime::FakeClock, parking_lot::Mutex<u32>);
        #[async_trait]
        impl TokenSource for Fixed {
            async fn token(&self) -> Result<Token, BoxError> {
                let mut n = self.1.lock();
                *n += 1;
                let now = self.0.now();
                Ok(Token {
                    access_token: format!("t{n}"),
                    expiry: Some(refresh_at(now, now + Duration::from_secs(3600), 20)),
                })
            }
        }
        let clock = rkcm_runtime::FakeClock::new(at(0));
        let cached = CachedTokenSource::new(
            Arc::new(Fixed(clock.clone(), parking_lot::Mutex::new(0))),
            Arc::new(clock.clone()),
        );
        assert_eq!(cached.token().await.unwrap().access_token, "t1");
        clock.step(Duration::from_secs(2879));
        assert_eq!(cached.token().await.unwrap().access_token, "t1");
        clock.step(Duration::from_secs(1));
        assert_eq!(cached.token().await.unwrap().access_token, "t2");
    }

    #[test]
    fn the_timeout_message_is_kubes() {
        let err = TokenError::TimedOut {
            namespace: "kube-system",
            name: "replicaset-controller".into(),
        };
        assert_eq!(
            err.to_string(),
            "failed to get token for kube-system/replicaset-controller: timed out waiting for the condition"
        );
    }
}
