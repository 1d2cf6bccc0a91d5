//! The API server: storage, certificates, token and the accept loop.

use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::admission::{self, PluginContext};
use crate::allocators::ServiceAllocators;
use crate::auth::{
    self, Authenticator, Authorizer, ClientCertificate, ServiceAccountTokens, SigningKey,
};
use crate::config::Config;
use crate::http::{self, AppState};
pub use crate::kubeconfig::kubeconfig_yaml;
use crate::resource_metrics::MetricsSource;
use crate::rest;
use crate::storage::{self, memory::MemoryBackend, redb::RedbBackend, Backend};
use crate::store::Store;
use crate::tls::{self, TlsMaterial};
use rkcm_server::http::handlers::WriteCheck;

/// Errors starting or running the server.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store could not be opened or loaded.
    #[error("opening the store")]
    Storage(#[from] storage::Error),
    /// Certificates or the token could not be prepared.
    #[error("preparing TLS material")]
    Tls(#[from] tls::Error),
    /// The data dir could not be created.
    #[error("creating the data dir {path}")]
    DataDir {
        /// Directory.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// Seeding the system namespaces failed.
    #[error("creating the system namespaces: {0}")]
    Seed(crate::error::ApiError),
    /// Seeding the `kubernetes` Service, its Endpoints or EndpointSlice failed.
    #[error("creating the kubernetes service: {0}")]
    KubernetesService(crate::error::ApiError),
    /// Reconciling kube's default RBAC policy failed.
    #[error("reconciling the bootstrap RBAC policy: {0}")]
    BootstrapPolicy(crate::error::ApiError),
    /// Reconciling kube's API Priority and Fairness bootstrap objects failed.
    #[error("reconciling the flowcontrol bootstrap configuration: {0}")]
    FlowControlBootstrap(crate::error::ApiError),
    /// The `--token-auth-file` could not be read.
    #[error("reading the token auth file")]
    TokenFile(#[from] auth::token_file::Error),
    /// The service-account signing key could not be loaded or created.
    #[error("preparing the service account signing key")]
    SigningKey(#[from] auth::signing_key::Error),
    /// The admission flags name unknown plugins or both enable and disable one.
    #[error("admission plugins: {0}")]
    Admission(#[from] admission::Error),
    /// The audit policy file is unusable or the audit log writer did not start.
    #[error("setting up audit logging")]
    Audit(#[from] rkcm_server::audit::AuditError),
    /// The `--encryption-provider-config` file is unusable.
    #[error("loading the encryption provider configuration")]
    Encryption(#[from] rkcm_server::encryptionconfig::Error),
}

/// A Kubernetes-compatible API server, ready to serve.
pub struct ApiServer {
    config: Config,
    store: Store,
    services: Arc<ServiceAllocators>,
    resources: Arc<rest::KubeResources>,
    token: String,
    tls: Option<TlsMaterial>,
    auth: Arc<Authenticator>,
    admission: Arc<admission::Chain>,
    admission_metrics: admission::metrics::AdmissionMetrics,
    authorizer: Arc<Authorizer>,
    metrics_source: Option<Arc<dyn MetricsSource>>,
    components: crate::component_status::Components,
    aggregator: Arc<crate::aggregator::Aggregator>,
    /// Audit logging, when `--audit-policy-file` and `--audit-log-path` are set.
    auditor: Option<Arc<rkcm_server::audit::Auditor>>,
    /// Transformations of stored values, when `--encryption-provider-config` is set.
    transformations: Option<storage::value::TransformationMetrics>,
}

impl ApiServer {
    /// Opens the store (etcd when configured, else redb in `data_dir`, or memory), rebuilds the allocated cluster IPs and
    /// node ports from the stored Services, prepares certificates and the admin token, and
    /// creates the system namespaces and the `kubernetes` Service.
    pub async fn new(config: Config) -> Result<Self, Error> {
        // A bad policy file is a flag error: refused before anything is opened.
        let auditor = config.audit.auditor()?.map(Arc::new);
        let encryption = match &config.encryption_provider_config {
            Some(path) => {
                let metrics = storage::value::TransformationMetrics::default();
                let transformers = rkcm_server::encryptionconfig::load(path, &metrics)?;
                Some((transformers, metrics))
            }
            None => None,
        };
        let dir = config.data_dir.as_deref();
        if let Some(d) = dir {
            std::fs::create_dir_all(d).map_err(|e| Error::DataDir {
                path: d.display().to_string(),
                source: e,
            })?;
        }
        let backend: Arc<dyn Backend> = match (&config.etcd, dir) {
            (Some(etcd), _) => Arc::new(storage::etcd::EtcdBackend::connect(etcd.clone()).await?),
            (None, Some(d)) => Arc::new(RedbBackend::open(&d.join("rkcm.redb"))?),
            (None, None) => Arc::new(MemoryBackend::new()),
        };
        // Encrypted at rest: on etcd the authenticated data is the etcd key, as kube's.
        let (backend, transformations): (Arc<dyn Backend>, _) = match encryption {
            Some((transformers, metrics)) => {
                let context_prefix = config
                    .etcd
                    .as_ref()
                    .map(|etcd| etcd.key_prefix())
                    .unwrap_or_default();
                let wrapped =
                    storage::value::TransformingBackend::new(backend, transformers, context_prefix);
                (Arc::new(wrapped), Some(metrics))
            }
            None => (backend, None),
        };
        let store = Store::with_fields(
            backend,
            config.watch_cache_capacity,
            Some(crate::registry::by_kind::selectable_fields()),
        )
        .await?;
        let admission_metrics = admission::metrics::AdmissionMetrics::default();
        let services = Arc::new(ServiceAllocators::new(
            config.service_cluster_ip_range,
            config.service_node_port_range,
        ));
        let services_info = rkcm_apimachinery::catalog::by_kind("v1", "Service")
            .expect("services are in the catalog");
        // The allocations are rebuilt from the stored Services before anything is served.
        let services_prefix = rest::prefix(services_info, None);
        let (stored, _, _) = store.cache().list(&services_prefix, None, 0, &|_| true);
        let listed = |kind: &str| {
            let info = rkcm_apimachinery::catalog::by_kind("networking.k8s.io/v1", kind)
                .expect("networking kinds are in the catalog");
            store
                .cache()
                .list(&rest::prefix(info, None), None, 0, &|_| true)
                .0
        };
        let (ip_addresses, service_cidrs) = (listed("IPAddress"), listed("ServiceCIDR"));
        let decoded = |objs: &[std::sync::Arc<crate::watch_cache::CachedObject>]| {
            objs.iter().map(|o| o.value()).collect::<Vec<_>>()
        };
        let (stored, ip_addresses, service_cidrs) = (
            decoded(&stored),
            decoded(&ip_addresses),
            decoded(&service_cidrs),
        );
        services.repair_with(stored.iter(), ip_addresses.iter(), service_cidrs.iter());
        let resources = Arc::new(rest::KubeResources::new(Arc::clone(&services)));
        rest::ensure_system_namespaces(&store, resources.as_ref())
            .await
            .map_err(Error::Seed)?;
        auth::bootstrap_policy::ensure(&store, resources.as_ref())
            .await
            .map_err(Error::BootstrapPolicy)?;
        crate::flowcontrol_bootstrap::ensure(&store, resources.as_ref())
            .await
            .map_err(Error::FlowControlBootstrap)?;
        crate::apiservices::ensure(&store, resources.as_ref(), jiff::Timestamp::now())
            .await
            .map_err(Error::Seed)?;
        rest::ensure_system_priority_classes(&store, resources.as_ref())
            .await
            .map_err(Error::Seed)?;
        auth::legacy_token_tracking::ensure_config_map(
            &store,
            resources.as_ref(),
            &jiff::Timestamp::now()
                .to_zoned(jiff::tz::TimeZone::UTC)
                .date()
                .to_string(),
        )
        .await
        .map_err(Error::Seed)?;
        crate::default_service_cidr::ensure(
            &store,
            resources.as_ref(),
            &config.service_cluster_ip_range.to_string(),
            jiff::Timestamp::now(),
        )
        .await
        .map_err(Error::Seed)?;
        rest::ensure_kubernetes_service(&store, resources.as_ref(), advertised(&config))
            .await
            .map_err(Error::KubernetesService)?;
        // Services stored without their IPAddresses (and leaked ones) are repaired before
        // anything is served, then every few minutes (`serve`).
        rest::ip_addresses::repair(&store, &services, jiff::Timestamp::now()).await;
        // The node ports are recorded in the store's snapshot, shared by the API servers of one
        // etcd, and this server holds what the others allocated.
        rest::node_ports::repair(&store, &services).await;
        let token = match &config.admin_token {
            Some(t) => t.clone(),
            None => tls::load_or_generate_token(dir)?,
        };
        let token_file = match &config.token_auth_file {
            Some(path) => auth::TokenFile::read(path)?,
            None => auth::TokenFile::default(),
        };
        let key = Arc::new(SigningKey::load_or_generate(dir)?);
        let service_accounts = ServiceAccountTokens::new(
            key,
            config.service_account_issuer.clone(),
            config.audiences(),
            Arc::new(store.clone()),
        );
        let mut authenticator = Authenticator::new(token.clone(), token_file, service_accounts)
            .with_token_success_cache_ttl(config.token_success_cache_ttl);
        if config.enable_bootstrap_token_auth {
            authenticator = authenticator.with_bootstrap_tokens(Arc::new(store.clone()));
        }
        let auth = Arc::new(authenticator);
        let mut authorizer = Authorizer::new(
            config.authorization_modes.clone(),
            auth::authorization::PolicyCache::new(store.clone()),
        );
        if authorizer.node_enabled() {
            authorizer =
                authorizer.with_node_authorizer(auth::authorization::node::NodeAuthorizer::new(
                    auth::authorization::node::GraphPopulator::new(store.clone()),
                ));
        }
        let authorizer = Arc::new(authorizer);
        let admission = Arc::new(admission::new_chain(&PluginContext {
            store: store.clone(),
            config: config.admission.clone(),
            metrics: admission_metrics.clone(),
            authorizer: Some(
                Arc::clone(&authorizer) as Arc<dyn rkcm_server::auth::authorization::Authorize>
            ),
        })?);
        let mut sans = config.extra_sans.clone();
        let ip = config.bind.ip();
        if !ip.is_unspecified() {
            sans.push(ip.to_string());
        }
        let tls = if config.tls {
            Some(tls::load_or_generate(dir, &sans)?)
        } else {
            None
        };
        Ok(Self {
            config,
            store,
            services,
            resources,
            token,
            tls,
            auth,
            admission,
            admission_metrics,
            authorizer,
            metrics_source: None,
            components: crate::component_status::Components::default(),
            aggregator: crate::aggregator::Aggregator::new(),
            auditor,
            transformations,
        })
    }

    /// The admission plugins that run, in order.
    pub fn admission_plugins(&self) -> Vec<&'static str> {
        self.admission.names()
    }

    /// Enabled admission plugins kube has and rkcm does not implement (they do not run).
    pub fn admission_plugins_not_implemented(&self) -> &[&'static str] {
        self.admission.not_implemented()
    }

    /// Serves `metrics.k8s.io/v1beta1` from `source`, in place of an aggregated metrics-server.
    pub fn with_metrics_source(mut self, source: Arc<dyn MetricsSource>) -> Self {
        self.metrics_source = Some(source);
        self
    }

    /// The components `componentstatuses` reports on: register the probes of the scheduler and
    /// the controller manager running with this server (also after it started serving).
    pub fn components(&self) -> crate::component_status::Components {
        self.components.clone()
    }

    /// The admin bearer token.
    pub fn admin_token(&self) -> &str {
        &self.token
    }

    /// The CA certificate (PEM) clients must trust; `None` when serving plain HTTP.
    pub fn ca_pem(&self) -> Option<String> {
        self.tls.as_ref().map(|t| t.ca_pem.clone())
    }

    /// The CA's private key (PEM), to sign client certificates with; `None` when serving plain
    /// HTTP.
    pub fn ca_key_pem(&self) -> Option<String> {
        self.tls.as_ref().map(|t| t.ca_key_pem.clone())
    }

    /// The authenticator chain (to issue or review tokens in-process).
    pub fn authenticator(&self) -> Arc<Authenticator> {
        Arc::clone(&self.auth)
    }

    /// A kubeconfig file for `server_url` with the CA embedded, the admin token and context
    /// `rkcm` (see [`crate::kubeconfig`]).
    pub fn kubeconfig(&self, server_url: &str) -> String {
        kubeconfig_yaml(server_url, self.ca_pem().as_deref(), &self.token)
    }

    /// The configuration the server was built with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The HTTP router, for in-process requests (`tower::ServiceExt::oneshot`).
    pub fn router(&self, shutdown: CancellationToken) -> Router {
        let seats = self.config.max_requests_inflight + self.config.max_mutating_requests_inflight;
        let flowcontrol = (self.config.enable_priority_and_fairness && seats > 0).then(|| {
            Arc::new(
                rkcm_server::flowcontrol::FlowControl::new(
                    seats,
                    Box::new(crate::flowcontrol_config::StoredConfig::new(
                        self.store.clone(),
                    )),
                )
                .with_object_counts(object_counts(self.store.clone())),
            )
        });
        let mut metrics =
            crate::metrics::RequestMetrics::with_storage_counts(storage_counts(self.store.clone()))
                .with_storage_requests(self.store.request_metrics().clone())
                .with_admission(self.admission_metrics.clone());
        if let Some(transformations) = &self.transformations {
            metrics = metrics.with_transformations(transformations.clone());
        }
        if let Some(fc) = &flowcontrol {
            metrics = metrics.with_flowcontrol(Arc::clone(fc));
        }
        let scope = Arc::new(http::handlers::Scope {
            store: self.store.clone(),
            resources: Arc::clone(&self.resources) as Arc<dyn crate::rest::Resources>,
            admission: Arc::clone(&self.admission),
            write_check: Some(Arc::clone(&self.authorizer) as Arc<dyn WriteCheck>),
            metrics,
            bookmark_interval: self.config.bookmark_interval,
            shutdown,
        });
        http::router(Arc::new(AppState {
            scope,
            services: Arc::clone(&self.services),
            resources: Arc::clone(&self.resources),
            auth: Arc::clone(&self.auth),
            authorizer: Arc::clone(&self.authorizer),
            token_expiration: http::TokenExpiration {
                max_seconds: self
                    .config
                    .service_account_max_token_expiration
                    .map(|d| d.as_secs() as i64),
                extend: true,
            },
            openid_configuration: auth::oidc::configuration(
                &self.config.service_account_issuer,
                &external_address(&self.config),
                self.auth.service_accounts().key(),
            ),
            inflight: Arc::new(http::inflight::InFlightLimits::new(
                self.config.max_requests_inflight,
                self.config.max_mutating_requests_inflight,
            )),
            flowcontrol,
            metrics_source: self.metrics_source.clone(),
            components: self.components.clone(),
            aggregator: Arc::clone(&self.aggregator),
            auditor: self.auditor.clone(),
        }))
    }

    /// Serves on `listener` until `shutdown` is cancelled; open connections are then closed.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: CancellationToken,
    ) -> std::io::Result<()> {
        let router = self.router(shutdown.clone());
        self.serve_router(router, listener, shutdown).await
    }

    /// Serves `router` (this server's [`ApiServer::router`], which may also serve clients in
    /// the process through [`crate::local::connector`]: one router, so one set of request
    /// metrics and inflight limits for both) on `listener` until `shutdown` is cancelled.
    pub async fn serve_router(
        self,
        router: Router,
        listener: TcpListener,
        shutdown: CancellationToken,
    ) -> std::io::Result<()> {
        let acceptor = match &self.tls {
            Some(m) => Some(tokio_rustls::TlsAcceptor::from(Arc::new(
                tls::server_config(m).map_err(std::io::Error::other)?,
            ))),
            None => None,
        };
        // The CA client certificates must be signed by.
        let ca_der: Option<Arc<Vec<u8>>> = self.tls.as_ref().and_then(|m| {
            use rustls::pki_types::pem::PemObject;
            rustls::pki_types::CertificateDer::pem_slice_iter(m.ca_pem.as_bytes())
                .next()
                .and_then(Result::ok)
                .map(|c| Arc::new(c.to_vec()))
        });
        // The client's address is for audit events' sourceIPs only: unaudited servers skip it.
        let record_peer = self.auditor.is_some();
        let mut conns = JoinSet::new();
        // The CRDs' status and the custom resources served, for as long as the server runs.
        let crds = tokio::spawn(crate::crd::controller::run(
            self.store.clone(),
            rkcm_apimachinery::custom_resources::new_owner(),
            shutdown.clone(),
        ));
        // The APIServices' availability and the remote ones proxied to.
        let aggregation = tokio::spawn(crate::aggregator::controller::run(
            self.store.clone(),
            Arc::clone(&self.aggregator),
            shutdown.clone(),
        ));
        let repair = tokio::spawn(rest::ip_addresses::repair_loop(
            self.store.clone(),
            Arc::clone(&self.services),
            shutdown.clone(),
        ));
        loop {
            let (stream, peer) = tokio::select! {
                _ = shutdown.cancelled() => break,
                accepted = listener.accept() => match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        continue;
                    }
                },
                Some(_) = conns.join_next(), if !conns.is_empty() => continue,
            };
            let _ = stream.set_nodelay(true);
            let router = router.clone();
            let acceptor = acceptor.clone();
            let ca_der = ca_der.clone();
            conns.spawn(async move {
                let builder = auto::Builder::new(TokioExecutor::new());
                let result = match acceptor {
                    Some(acceptor) => match acceptor.accept(stream).await {
                        Ok(tls) => {
                            // The handshake proved the client holds the key; the certificate
                            // itself is checked against the CA here, once per connection.
                            let now = jiff::Timestamp::now().as_second();
                            let certificate = tls
                                .get_ref()
                                .1
                                .peer_certificates()
                                .and_then(|chain| chain.first())
                                .and_then(|leaf| match ca_der.as_deref() {
                                    None => None,
                                    Some(ca) => match auth::x509::verify(leaf, ca, now) {
                                        Ok(user) => user.map(ClientCertificate::User),
                                        Err(why) => Some(ClientCertificate::Invalid(why)),
                                    },
                                });
                            let service = TowerToHyperService::new(tower::ServiceExt::map_request(
                                router,
                                move |mut req: ::http::Request<hyper::body::Incoming>| {
                                    if let Some(certificate) = &certificate {
                                        req.extensions_mut().insert(certificate.clone());
                                    }
                                    if record_peer {
                                        req.extensions_mut().insert(ConnectInfo(peer));
                                    }
                                    req
                                },
                            ));
                            builder
                                .serve_connection_with_upgrades(TokioIo::new(tls), service)
                                .await
                        }
                        Err(e) => {
                            tracing::debug!(%peer, error = %e, "TLS handshake failed");
                            return;
                        }
                    },
                    None => {
                        builder
                            .serve_connection_with_upgrades(
                                TokioIo::new(stream),
                                TowerToHyperService::new(tower::ServiceExt::map_request(
                                    router,
                                    move |mut req: ::http::Request<hyper::body::Incoming>| {
                                        if record_peer {
                                            req.extensions_mut().insert(ConnectInfo(peer));
                                        }
                                        req
                                    },
                                )),
                            )
                            .await
                    }
                };
                if let Err(e) = result {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
            });
        }
        conns.shutdown().await;
        let _ = repair.await;
        let _ = crds.await;
        let _ = aggregation.await;
        Ok(())
    }
}

/// `host:port` clients reach the server at, for the `jwks_uri` of the issuer discovery document.
fn external_address(config: &Config) -> String {
    let a = advertised(config);
    format!("{}:{}", a.address, a.port)
}

/// Where the `kubernetes` Service's endpoints point: the bind address, or 127.0.0.1 when the
/// server binds every address (or an IPv6 one, which the IPv4-only Endpoints cannot hold).
fn advertised(config: &Config) -> rest::Advertised {
    let address = match config.bind.ip() {
        std::net::IpAddr::V4(ip) if !ip.is_unspecified() => ip,
        _ => std::net::Ipv4Addr::LOCALHOST,
    };
    rest::Advertised {
        address,
        port: config.bind.port(),
    }
}

/// `apiserver_storage_objects`: the objects of each stored resource, counted in the watch cache
/// (a resource served in several versions is stored, and counted, once).
/// The stored objects of a resource, for flow control's LIST estimates: the watch cache's
/// count, for any resource it holds (built-in or custom); 0 for one it does not.
fn object_counts(store: crate::store::Store) -> Box<dyn rkcm_server::flowcontrol::ObjectCounts> {
    Box::new(move |group: &str, resource: &str| {
        let group = if group.is_empty() { "core" } else { group };
        store.cache().count(&format!("/{group}/{resource}/"))
    })
}

fn storage_counts(store: crate::store::Store) -> crate::metrics::StorageCounts {
    Arc::new(move || {
        let mut seen = std::collections::BTreeSet::new();
        rkcm_apimachinery::catalog::all()
            .iter()
            .filter(|info| seen.insert(crate::rest::prefix(info, None)))
            .map(|info| {
                let prefix = crate::rest::prefix(info, None);
                (info.qualified_plural(), store.cache().count(&prefix))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubernetes_endpoints_name_the_bind_address_or_loopback() {
        let at = |bind: &str| {
            advertised(&Config {
                bind: bind.parse().expect("socket address"),
                ..Config::default()
            })
        };
        assert_eq!(at("10.0.0.5:6443").address.to_string(), "10.0.0.5");
        assert_eq!(at("0.0.0.0:6443").address, std::net::Ipv4Addr::LOCALHOST);
        assert_eq!(at("[::]:7443").address, std::net::Ipv4Addr::LOCALHOST);
        assert_eq!(at("[::]:7443").port, 7443);
    }
}

#[cfg(test)]
mod served_metrics {
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::{Api, PostParams};

    #[tokio::test]
    async fn metrics_count_requests_and_need_the_token() {
        let server = crate::testing::start().await;
        let client = server.client();
        let namespaces: Api<Namespace> = Api::all(client.clone());
        let ns: Namespace =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "counted"}}))
                .expect("namespace");
        namespaces
            .create(&PostParams::default(), &ns)
            .await
            .expect("created");
        let text = client
            .request_text(
                http::Request::get("/metrics")
                    .body(Vec::new())
                    .expect("request"),
            )
            .await
            .expect("metrics");
        assert!(
            text.contains("apiserver_request_total{code=\"201\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"namespaces\",scope=\"resource\",subresource=\"\",verb=\"POST\",version=\"v1\"} 1\n"),
            "{text}"
        );

        // Every stored resource is reported, the namespaces with the system ones.
        let stored = namespaces
            .list(&Default::default())
            .await
            .expect("list")
            .items
            .len();
        assert!(
            text.contains(&format!(
                "apiserver_storage_objects{{resource=\"namespaces\"}} {stored}\n"
            )),
            "{text}"
        );
        assert!(
            text.contains("apiserver_storage_objects{resource=\"deployments.apps\"} 0\n"),
            "{text}"
        );
        // The store's request to its backend for the namespace created.
        assert!(
            text.contains("etcd_request_duration_seconds_count{group=\"\",operation=\"create\",resource=\"namespaces\"}"),
            "{text}"
        );

        let mut anonymous = server.kube_config();
        anonymous.auth_info = Default::default();
        let anonymous = kube::Client::try_from(anonymous).expect("client");
        let refused = anonymous
            .request_text(
                http::Request::get("/metrics")
                    .body(Vec::new())
                    .expect("request"),
            )
            .await
            .expect_err("no token");
        assert!(
            matches!(&refused, kube::Error::Api(s) if s.code == 401),
            "{refused}"
        );
    }
}
