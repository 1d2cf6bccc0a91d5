//! The manager's HTTPS endpoint, as kube-controller-manager's secure port: `/healthz` (with
//! `/healthz/<check>`), `/metrics`, `/metrics/slis`, `/configz` and, with `--profiling`,
//! `/debug/pprof`, behind delegated authentication and authorization; `/livez` and `/readyz` too.

pub mod authn;
pub mod authz;
mod filters;
pub mod healthz;
mod pprof;
mod ttl_cache;

pub use healthz::HealthChecks;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;

use anyhow::Context as _;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rkcm_runtime::Shutdown;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

/// What `/readyz` reports. Shared by the manager and the server; every method is lock-free.
#[derive(Debug, Default)]
pub struct Health {
    synced: AtomicBool,
    leader: AtomicU8,
}

const NOT_ELECTING: u8 = 0;
const STANDING_BY: u8 = 1;
const LEADING: u8 = 2;

impl Health {
    /// Every started controller's caches have synced.
    pub fn set_synced(&self, synced: bool) {
        self.synced.store(synced, Ordering::SeqCst);
    }

    /// Leader election is on and this instance waits for the lease.
    pub fn set_standing_by(&self) {
        self.leader.store(STANDING_BY, Ordering::SeqCst);
    }

    /// Leader election is on and this instance holds the lease.
    pub fn set_leading(&self) {
        self.leader.store(LEADING, Ordering::SeqCst);
    }

    /// Ready: caches synced, or standing by for the lease (a standby is healthy and ready to take over).
    pub fn ready(&self) -> Result<(), &'static str> {
        match self.leader.load(Ordering::SeqCst) {
            STANDING_BY => Ok(()),
            NOT_ELECTING | LEADING if self.synced.load(Ordering::SeqCst) => Ok(()),
            _ => Err("informers not synced"),
        }
    }
}

/// What the secure port serves and who may call it.
pub struct Endpoint {
    /// Readiness, for `/readyz`.
    pub health: Arc<Health>,
    /// The `/healthz` checks.
    pub checks: Arc<HealthChecks>,
    /// Delegated authentication.
    pub authn: authn::Authenticator,
    /// Delegated authorization.
    pub authz: authz::Authorizer,
    /// `--profiling`: serve `/debug/pprof`.
    pub profiling: bool,
    /// `/configz`: kube's `componentconfig` document.
    pub configz: serde_json::Value,
}

/// The client certificate chain of a connection (DER, leaf first), put in each request's
/// extensions by [`serve_tls`].
#[derive(Clone, Debug, Default)]
pub struct PeerCertificates(pub Arc<Vec<Vec<u8>>>);

/// The routes of the secure port, behind authentication and authorization.
pub fn router(endpoint: Arc<Endpoint>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/healthz/{check}", get(healthz_check))
        .route("/livez", get(ok))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/metrics/slis", get(metrics_slis))
        .route("/configz", get(configz))
        .route("/debug/pprof", get(pprof::index))
        .route("/debug/pprof/", get(pprof::index))
        .route("/debug/pprof/{profile}", get(pprof::profile))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&endpoint),
            filters::authenticate_and_authorize,
        ))
        .with_state(endpoint)
}

/// Go's `http.NotFound`.
pub(crate) async fn not_found() -> impl IntoResponse {
    (
        StatusCode::NOT_FOUND,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "404 page not found\n",
    )
}

async fn ok() -> &'static str {
    "ok"
}

async fn readyz(State(endpoint): State<Arc<Endpoint>>) -> impl IntoResponse {
    match endpoint.health.ready() {
        Ok(()) => (StatusCode::OK, "ok".to_string()),
        Err(why) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("[-]{why}\nreadyz check failed"),
        ),
    }
}

async fn healthz(State(endpoint): State<Arc<Endpoint>>, uri: http::Uri) -> impl IntoResponse {
    let mut excluded = Vec::new();
    let mut verbose = false;
    for pair in uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "exclude" => excluded.push(value.to_string()),
            "verbose" => verbose = true,
            _ => {}
        }
    }
    let report = endpoint.checks.run(&excluded, verbose);
    let status = if report.healthy {
        StatusCode::OK
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    };
    (
        status,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        report.body,
    )
}

async fn healthz_check(
    State(endpoint): State<Arc<Endpoint>>,
    axum::extract::Path(check): axum::extract::Path<String>,
) -> axum::response::Response {
    match endpoint.checks.run_one(&check) {
        None => not_found().await.into_response(),
        Some(Ok(())) => "ok".into_response(),
        Some(Err(why)) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            format!("internal server error: {why}\n"),
        )
            .into_response(),
    }
}

async fn metrics() -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        rkcm_runtime::metrics::encode_text(),
    )
}

async fn metrics_slis(State(endpoint): State<Arc<Endpoint>>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        endpoint.checks.encode_slis(),
    )
}

async fn configz(State(endpoint): State<Arc<Endpoint>>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        endpoint.configz.to_string(),
    )
}

/// TLS material for the serving endpoint: the given files, or a self-signed certificate. Client
/// certificates are asked for (hinting the subjects of the CAs in `client_ca_pem`) but not
/// required, and verified by the authenticator, as Go's `tls.RequestClientCert`.
pub fn tls_config(
    cert_file: Option<&Path>,
    key_file: Option<&Path>,
    client_ca_pem: &str,
) -> anyhow::Result<Arc<rustls::ServerConfig>> {
    let (certs, key) = match (cert_file, key_file) {
        (Some(cert), Some(key)) => {
            let cert_pem = std::fs::read(cert)
                .with_context(|| format!("reading --tls-cert-file {}", cert.display()))?;
            let key_pem = std::fs::read(key)
                .with_context(|| format!("reading --tls-private-key-file {}", key.display()))?;
            let certs = certificates_from_pem(&cert_pem)?;
            let key = {
                use rustls::pki_types::pem::PemObject;
                rustls::pki_types::PrivateKeyDer::from_pem_slice(&key_pem)
            }
            .context("parsing --tls-private-key-file")?;
            (certs, key)
        }
        (None, None) => {
            let cert = rcgen::generate_simple_self_signed(vec![
                "localhost".to_string(),
                "127.0.0.1".to_string(),
            ])
            .context("generating a self-signed serving certificate")?;
            let key =
                rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
            (vec![cert.cert.der().clone()], key)
        }
        _ => anyhow::bail!("--tls-cert-file and --tls-private-key-file must be given together"),
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rkcm_apiserver::tls::RequestClientCert::new(client_ca_pem)
        .context("client CA certificates")?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_client_cert_verifier(Arc::new(verifier))
        .with_single_cert(certs, key)
        .context("serving certificate and key do not match")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn certificates_from_pem(
    pem: &[u8],
) -> anyhow::Result<Vec<rustls::pki_types::CertificateDer<'static>>> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .context("parsing --tls-cert-file")
}

/// Serves `router` over HTTPS on `listener` until `shutdown`.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    shutdown: Shutdown,
) {
    let acceptor = TlsAcceptor::from(tls);
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let (stream, peer): (_, SocketAddr) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(err) => {
                    tracing::warn!(%err, "accepting a connection failed");
                    continue;
                }
            },
        };
        let acceptor = acceptor.clone();
        let router = router.clone();
        let shutdown = shutdown.clone();
        connections.spawn(async move {
            let Ok(tls) = acceptor.accept(stream).await else {
                tracing::debug!(%peer, "TLS handshake failed");
                return;
            };
            let peer_certs: Vec<Vec<u8>> = tls
                .get_ref()
                .1
                .peer_certificates()
                .map(|certs| certs.iter().map(|c| c.as_ref().to_vec()).collect())
                .unwrap_or_default();
            let router = router.layer(axum::Extension(PeerCertificates(Arc::new(peer_certs))));
            let service = hyper_util::service::TowerToHyperService::new(router);
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection(TokioIo::new(tls), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = shutdown.cancelled() => conn.as_mut().graceful_shutdown(),
            }
        });
        while connections.try_join_next().is_some() {}
    }
    connections.abort_all();
}

#[cfg(test)]
mod router_tests {
    use super::*;
    use http_body_util::BodyExt;
    use rkcm_apiserver::auth::user::UserInfo;
    use tower::ServiceExt;

    struct Reviewer;

    impl authn::TokenReviewer for Reviewer {
        fn review(
            &self,
            token: String,
        ) -> futures::future::BoxFuture<'static, Result<Option<UserInfo>, String>> {
            Box::pin(async move {
                Ok(match token.as_str() {
                    "admin" => Some(UserInfo::new("kubernetes-admin", &["system:masters"])),
                    "bob" => Some(UserInfo::new("bob", &[])),
                    _ => None,
                })
            })
        }
    }

    struct NoOne;

    impl authz::AccessReviewer for NoOne {
        fn review(
            &self,
            _: &UserInfo,
            _: &str,
            _: &str,
        ) -> futures::future::BoxFuture<'static, Result<(bool, String), String>> {
            Box::pin(async { Ok((false, String::new())) })
        }
    }

    fn endpoint(profiling: bool) -> Router {
        let clock: Arc<dyn rkcm_runtime::Clock> = Arc::new(rkcm_runtime::SystemClock);
        let endpoint = Endpoint {
            health: Arc::new(Health::default()),
            checks: Arc::new(HealthChecks::default()),
            authn: authn::Authenticator::new(
                vec![],
                None,
                Some(Arc::new(Reviewer)),
                std::time::Duration::from_secs(10),
                Arc::clone(&clock),
            ),
            authz: authz::Authorizer::new(
                vec!["/healthz".into(), "/readyz".into(), "/livez".into()],
                Some(Arc::new(NoOne)),
                std::time::Duration::from_secs(10),
                std::time::Duration::from_secs(10),
                clock,
            ),
            profiling,
            configz: serde_json::json!({"componentconfig": {}}),
        };
        endpoint.checks.add("leaderElection", healthz::ping());
        router(Arc::new(endpoint))
    }

    async fn get(router: &Router, path: &str, token: Option<&str>) -> (StatusCode, String) {
        let mut request = http::Request::get(path);
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let response = router
            .clone()
            .oneshot(request.body(axum::body::Body::empty()).expect("request"))
            .await
            .expect("infallible");
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn anonymous_reaches_only_the_always_allowed_paths() {
        let router = endpoint(true);
        assert_eq!(
            get(&router, "/healthz", None).await,
            (StatusCode::OK, "ok".into())
        );
        let (code, body) = get(&router, "/metrics", None).await;
        assert_eq!(code, StatusCode::FORBIDDEN);
        assert_eq!(
            body,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"forbidden: User \"system:anonymous\" cannot get path \"/metrics\"","reason":"Forbidden","details":{},"code":403}"#
        );
        let (code, _) = get(&router, "/nonexistent", None).await;
        assert_eq!(
            code,
            StatusCode::FORBIDDEN,
            "authorization comes before routing"
        );
    }

    #[tokio::test]
    async fn a_refused_token_is_401_and_an_unauthorized_user_403() {
        let router = endpoint(true);
        let (code, body) = get(&router, "/metrics", Some("forged")).await;
        assert_eq!(code, StatusCode::UNAUTHORIZED);
        assert_eq!(
            body,
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#
        );
        let (code, body) = get(&router, "/configz", Some("bob")).await;
        assert_eq!(code, StatusCode::FORBIDDEN);
        assert!(
            body.contains(r#"User \"bob\" cannot get path \"/configz\""#),
            "{body}"
        );
        let (code, body) = get(&router, "/configz", Some("admin")).await;
        assert_eq!(
            (code, body.as_str()),
            (StatusCode::OK, r#"{"componentconfig":{}}"#)
        );
        let (code, body) = get(&router, "/healthz/leaderElection", Some("admin")).await;
        assert_eq!((code, body.as_str()), (StatusCode::OK, "ok"));
        let (code, _) = get(&router, "/healthz/nope", Some("admin")).await;
        assert_eq!(code, StatusCode::NOT_FOUND);
        // Only the root handler records the SLIs, as kube's.
        assert!(!get(&router, "/metrics/slis", Some("admin"))
            .await
            .1
            .contains("} 1"));
        get(&router, "/healthz", None).await;
        let (code, body) = get(&router, "/metrics/slis", Some("admin")).await;
        assert_eq!(code, StatusCode::OK);
        assert!(
            body.contains("kubernetes_healthcheck{name=\"leaderElection\",type=\"healthz\"} 1"),
            "{body}"
        );
    }

    #[tokio::test]
    async fn profiling_is_served_only_with_the_flag() {
        let on = endpoint(true);
        let (code, body) = get(&on, "/debug/pprof/", Some("admin")).await;
        assert_eq!(code, StatusCode::OK);
        assert!(body.contains("cmdline"), "{body}");
        assert_eq!(
            get(&on, "/debug/pprof/cmdline", Some("admin")).await.0,
            StatusCode::OK
        );
        assert_eq!(
            get(&on, "/debug/pprof/heap", Some("admin")).await.0,
            StatusCode::NOT_FOUND
        );
        let off = endpoint(false);
        assert_eq!(
            get(&off, "/debug/pprof/", Some("admin")).await,
            (StatusCode::NOT_FOUND, "404 page not found\n".into())
        );
        assert_eq!(
            get(&off, "/debug/pprof/cmdline", Some("admin")).await.0,
            StatusCode::NOT_FOUND
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_once_synced_or_standing_by() {
        let health = Health::default();
        assert!(health.ready().is_err());
        health.set_synced(true);
        assert!(health.ready().is_ok());

        let elected = Health::default();
        elected.set_standing_by();
        assert!(elected.ready().is_ok(), "a standby is ready to take over");
        elected.set_leading();
        assert!(
            elected.ready().is_err(),
            "a new leader is ready once synced"
        );
        elected.set_synced(true);
        assert!(elected.ready().is_ok());
    }
}
