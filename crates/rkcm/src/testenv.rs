//! An in-process Kubernetes for tests: the API server on an ephemeral loopback port with an
//! in-memory store, optionally the controller manager and simulated nodes, and a
//! [`kube::Client`] for it — what envtest gives Go operators, plus the controllers.
//!
//! ```no_run
//! # async fn demo() -> Result<(), rkcm::testenv::Error> {
//! use rkcm::testenv::TestEnv;
//!
//! // The API server alone (as envtest): fastest, nothing acts on the objects you create.
//! let env = TestEnv::start().await?;
//! // Or with every controller (garbage collector, Deployments, …) and two simulated nodes.
//! let env = TestEnv::builder().controllers(true).nodes(2).start().await?;
//! let client = env.client();
//! # let crd = Default::default();
//! env.install_crd(crd).await?; // created, then waited for until Established and served
//! # Ok(()) }
//! ```
//!
//! Admission webhooks served by the test itself (as envtest's `WebhookInstallOptions`): bind a
//! [`WebhookServing`] (a listener on `127.0.0.1:0` and a certificate for it), serve HTTPS on
//! it, then install the configurations, their `clientConfig` filled in, and wait until the
//! webhooks answer:
//!
//! ```no_run
//! # async fn demo(env: rkcm::testenv::TestEnv) -> Result<(), rkcm::testenv::Error> {
//! # use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! # async fn serve(_: tokio::net::TcpListener, _: std::sync::Arc<rustls::ServerConfig>) {}
//! use rkcm::testenv::WebhookServing;
//!
//! let serving = WebhookServing::bind().await?;
//! let tls = serving.server_config()?; // or serving.cert_pem() and serving.key_pem()
//! let (listener, webhooks) = serving.into_parts();
//! tokio::spawn(serve(listener, tls)); // the test's own HTTPS server (axum, hyper, …)
//! # let config = ValidatingWebhookConfiguration::default();
//! # let probe = ConfigMap::default();
//! // Each webhook's `clientConfig.url` is a path ("/validate"), or unset: it becomes
//! // `https://127.0.0.1:<port>/validate`, and `caBundle` the certificate's CA.
//! env.webhooks(&webhooks)
//!     .validating(config)
//!     .install(&probe) // then a dry-run create of `probe` is retried until admitted
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! Everything stops when the [`TestEnv`] is dropped (or awaited with [`TestEnv::stop`]).
//! Several environments may run side by side in one test binary: each has its own store, port
//! and credentials.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::ByteString;
use kube::api::{Api, ListParams, PostParams};
use kube::Resource;
use rkcm_apiserver::testing::{self, TestServer};
use rkcm_controllers::registry::{self, ControllerOptions};
use rkcm_runtime::{Shutdown, SystemClock};
use tokio::task::JoinSet;

use crate::client_identity::{issue, with_certificate, KUBE_CONTROLLER_MANAGER};
use crate::manager::{self, ManagerConfig};
use crate::serving::Health;

/// How long [`TestEnv::install_crd`] waits for a CRD to be Established and served.
pub const CRD_TIMEOUT: Duration = Duration::from_secs(30);

/// How long [`WebhookInstall::install`] waits for the webhooks to answer, unless told otherwise.
pub const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(30);

/// How long [`Builder::start`] waits for the simulated nodes to be Ready.
const NODES_TIMEOUT: Duration = Duration::from_secs(30);

/// How long [`Builder::start`] waits for the controllers' caches to sync.
const CONTROLLERS_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a test environment could not start, or a wait of it failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A controller name is not one of kube-controller-manager's.
    #[error("unknown controllers")]
    Controllers(#[source] registry::UnknownControllers),
    /// The controller manager's client certificate could not be made.
    #[error("issuing the controller manager's certificate")]
    Identity(#[source] crate::client_identity::Error),
    /// The simulated nodes' identities could not be set up.
    #[error("setting up the simulated nodes")]
    Nodes(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The controllers did not sync their caches in time.
    #[error("the controllers did not become ready within {0:?}")]
    ControllersNotReady(Duration),
    /// The API server refused a request.
    #[error("{what}")]
    Api {
        /// What was asked.
        what: String,
        /// The API server's answer.
        #[source]
        source: kube::Error,
    },
    /// A webhook's serving certificate could not be made.
    #[error("making the webhook serving certificate")]
    Certificate(#[source] rcgen::Error),
    /// The webhook listener could not be bound.
    #[error("binding the webhook listener")]
    Bind(#[source] std::io::Error),
    /// The webhook server's TLS configuration was refused.
    #[error("configuring the webhook server's TLS")]
    Tls(#[source] rustls::Error),
    /// Something waited for did not happen in time.
    #[error("timed out after {timeout:?} waiting for {what}")]
    Timeout {
        /// What was waited for.
        what: String,
        /// How long.
        timeout: Duration,
    },
}

/// A `Result` with this module's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What a [`TestEnv`] runs besides the API server.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until started"]
pub struct Builder {
    api_server: Option<rkcm_apiserver::Config>,
    controllers: Vec<String>,
    nodes: usize,
    pod_ready_delay: Duration,
    pod_termination_max: Duration,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            api_server: None,
            controllers: Vec::new(),
            nodes: 0,
            pod_ready_delay: Duration::from_millis(100),
            pod_termination_max: Duration::from_millis(500),
        }
    }
}

impl Builder {
    /// Configures the API server (authorization modes, admission plugins, …) instead of
    /// [`rkcm_apiserver::testing::config`]'s defaults; its `bind` is ignored (the server
    /// listens on `127.0.0.1:0`) and, without a `data_dir`, objects are kept in memory.
    pub fn api_server_config(mut self, config: rkcm_apiserver::Config) -> Self {
        self.api_server = Some(config);
        self
    }

    /// Runs every controller of kube-controller-manager that rkcm implements (`true`), or none
    /// (`false`, the default).
    pub fn controllers(mut self, on: bool) -> Self {
        self.controllers = if on { vec!["*".into()] } else { Vec::new() };
        self
    }

    /// Runs these controllers, named as kube-controller-manager's `--controllers` flag
    /// (`"garbage-collector-controller"`, `"*"`, `"-cronjob-controller"`, …).
    pub fn controller_list<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.controllers = names.into_iter().map(Into::into).collect();
        self
    }

    /// Registers `n` simulated nodes, with a scheduler and a kubelet stand-in that runs the
    /// pods bound to them (0, the default, runs no node simulation).
    pub fn nodes(mut self, n: usize) -> Self {
        self.nodes = n;
        self
    }

    /// How long a simulated node takes to make a bound pod Running and Ready (100ms).
    pub fn pod_ready_delay(mut self, delay: Duration) -> Self {
        self.pod_ready_delay = delay;
        self
    }

    /// Starts the API server, then the controllers and nodes asked for; returns once the API
    /// server answers, the controllers' caches have synced and the nodes are Ready.
    ///
    /// Panics if the API server itself cannot start (it binds `127.0.0.1:0` and keeps
    /// everything in memory, so only a broken host makes it fail).
    pub async fn start(self) -> Result<TestEnv> {
        let controllers = registry::resolve(&self.controllers).map_err(Error::Controllers)?;
        let server = match self.api_server.clone() {
            Some(config) => testing::start_with(config).await,
            None => testing::start().await,
        };
        let client = server.client();
        let shutdown = Shutdown::new();
        let mut tasks = JoinSet::new();
        if !controllers.is_empty() {
            start_controllers(&server, controllers, &shutdown, &mut tasks).await?;
        }
        if self.nodes > 0 {
            self.start_nodes(&server, client.clone(), &shutdown, &mut tasks)
                .await?;
        }
        Ok(TestEnv {
            server: Some(server),
            client,
            shutdown,
            tasks,
        })
    }

    async fn start_nodes(
        &self,
        server: &TestServer,
        client: kube::Client,
        shutdown: &Shutdown,
        tasks: &mut JoinSet<()>,
    ) -> Result<()> {
        let config = crate::up::node_sim_config(
            self.nodes,
            self.pod_ready_delay,
            self.pod_termination_max,
            rkcm_controllers::node_options::NodeOptions::default().node_monitor_grace_period,
        );
        // Each kubelet and the scheduler under its own identity, as in `rkcm up`, so that the
        // Node authorizer and RBAC see what they would in a cluster.
        let clients = crate::up::node_sim_clients(
            server.ca_pem().zip(server.ca_key_pem()),
            &server.url(),
            client,
            &config,
        )
        .await
        .map_err(|e| Error::Nodes(e.into()))?;
        let sim = rkcm_nodesim::NodeSim::with_clients(clients, config);
        let sim_shutdown = shutdown.clone();
        tasks.spawn(async move {
            if let Err(err) = sim.run(sim_shutdown).await {
                tracing::error!(error = %err, "simulated nodes stopped");
            }
        });
        let nodes: Api<Node> = Api::all(server.client());
        let what = format!("{} simulated node(s) to be Ready", self.nodes);
        eventually(&what, NODES_TIMEOUT, || async {
            let list = nodes.list(&ListParams::default()).await.ok()?;
            let ready = list.items.iter().filter(|n| node_ready(n)).count();
            (ready >= self.nodes).then_some(())
        })
        .await
    }
}

/// Runs the controller manager as `system:kube-controller-manager` (a certificate of the
/// server's CA), each controller under its own service account as in `rkcm up`, and waits for
/// its caches to sync.
async fn start_controllers(
    server: &TestServer,
    controllers: Vec<&'static str>,
    shutdown: &Shutdown,
    tasks: &mut JoinSet<()>,
) -> Result<()> {
    let admin = server.kube_config();
    let kube_config = match server.ca_pem().zip(server.ca_key_pem()) {
        Some((ca, key)) => {
            let cert = issue(ca, key, KUBE_CONTROLLER_MANAGER, &[]).map_err(Error::Identity)?;
            with_certificate(&admin, KUBE_CONTROLLER_MANAGER, &cert).map_err(Error::Identity)?
        }
        None => admin,
    };
    let config = ManagerConfig {
        kube_config,
        controllers,
        options: ControllerOptions {
            clock: Arc::new(SystemClock),
            ..ControllerOptions::default()
        },
        qps: -1.0,
        burst: 30,
        min_resync_period: Duration::from_secs(12 * 3600),
        use_service_account_credentials: true,
        leader_election: None,
        serving: None,
    };
    let health = Arc::new(Health::default());
    let manager_health = Arc::clone(&health);
    let manager_shutdown = shutdown.clone();
    tasks.spawn(async move {
        if let Err(err) = manager::run(config, manager_health, manager_shutdown).await {
            tracing::error!(error = format!("{err:#}"), "controller manager stopped");
        }
    });
    eventually(
        "the controllers' caches to sync",
        CONTROLLERS_TIMEOUT,
        || {
            let ready = health.ready().is_ok();
            async move { ready.then_some(()) }
        },
    )
    .await
    .map_err(|_| Error::ControllersNotReady(CONTROLLERS_TIMEOUT))
}

/// A running test environment; everything in it stops when it is dropped.
pub struct TestEnv {
    /// `Some` until [`TestEnv::stop`] takes it.
    server: Option<TestServer>,
    client: kube::Client,
    shutdown: Shutdown,
    tasks: JoinSet<()>,
}

impl TestEnv {
    /// What to run: the API server alone unless told otherwise.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// The API server alone, as envtest: no controllers, no nodes.
    pub async fn start() -> Result<TestEnv> {
        Builder::default().start().await
    }

    fn server(&self) -> &TestServer {
        self.server
            .as_ref()
            .expect("the server is only taken by stop, which consumes the environment")
    }

    /// A client authenticated as an administrator (`system:masters`).
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The client configuration, to build clients with other settings.
    pub fn kube_config(&self) -> kube::Config {
        self.server().kube_config()
    }

    /// A kubeconfig file's contents for this environment (for `kubectl`, or a child process).
    pub fn kubeconfig_yaml(&self) -> String {
        self.server().kubeconfig_yaml()
    }

    /// The API server's URL (`https://127.0.0.1:<port>`).
    pub fn url(&self) -> String {
        self.server().url()
    }

    /// Creates `crd` and waits until it is Established and its resources are served (as
    /// envtest's `WaitForCRDs`); returns the CRD as stored then.
    pub async fn install_crd(
        &self,
        crd: CustomResourceDefinition,
    ) -> Result<CustomResourceDefinition> {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let crds: Api<CustomResourceDefinition> = Api::all(self.client());
        crds.create(&PostParams::default(), &crd)
            .await
            .map_err(|source| Error::Api {
                what: format!("creating CustomResourceDefinition {name}"),
                source,
            })?;
        self.wait_for_crd(&name, CRD_TIMEOUT).await
    }

    /// Waits until CRD `name` is Established and every served version of it answers a list,
    /// then returns it.
    pub async fn wait_for_crd(
        &self,
        name: &str,
        timeout: Duration,
    ) -> Result<CustomResourceDefinition> {
        let crds: Api<CustomResourceDefinition> = Api::all(self.client());
        let what = format!("CustomResourceDefinition {name} to be established and served");
        eventually(&what, timeout, || async {
            let crd = crds.get_opt(name).await.ok().flatten()?;
            if !established(&crd) {
                return None;
            }
            for version in crd.spec.versions.iter().filter(|v| v.served) {
                if !self.serves(&crd, &version.name).await {
                    return None;
                }
            }
            Some(crd)
        })
        .await
    }

    /// Whether a list of `crd`'s resources in `version` succeeds.
    async fn serves(&self, crd: &CustomResourceDefinition, version: &str) -> bool {
        let path = format!(
            "/apis/{}/{version}/{}?limit=1",
            crd.spec.group, crd.spec.names.plural
        );
        let Ok(request) = http::Request::get(path).body(Vec::new()) else {
            return false;
        };
        self.client.request_text(request).await.is_ok()
    }

    /// Installs admission webhook configurations served at `endpoint` (from
    /// [`WebhookServing::into_parts`]), as envtest's `WebhookInstallOptions`: add them with
    /// [`WebhookInstall::mutating`] and [`WebhookInstall::validating`], then
    /// [`WebhookInstall::install`] creates them and waits until the webhooks answer.
    pub fn webhooks(&self, endpoint: &WebhookEndpoint) -> WebhookInstall<'_> {
        WebhookInstall {
            env: self,
            endpoint: endpoint.clone(),
            mutating: Vec::new(),
            validating: Vec::new(),
            timeout: WEBHOOK_TIMEOUT,
        }
    }

    /// Stops the nodes and controllers, then the API server, and waits for them to finish.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        while self.tasks.join_next().await.is_some() {}
        if let Some(server) = self.server.take() {
            server.stop().await;
        }
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        // Dropping the JoinSet aborts whatever did not stop; the server stops on its own drop.
        self.shutdown.cancel();
    }
}

/// A listener on `127.0.0.1:0` and a serving certificate for it (`127.0.0.1`, `localhost`, and
/// the Service names given to [`WebhookServing::bind_with_names`]), signed by a CA of its own:
/// what a test needs to serve admission webhooks to a [`TestEnv`] or to `rkcm up`.
///
/// The test serves HTTPS on [`WebhookServing::into_parts`]'s listener with
/// [`WebhookServing::server_config`] (or [`WebhookServing::cert_pem`] and
/// [`WebhookServing::key_pem`] for its own TLS setup), and installs its configurations with
/// [`TestEnv::webhooks`].
pub struct WebhookServing {
    listener: tokio::net::TcpListener,
    endpoint: WebhookEndpoint,
    cert_pem: String,
    cert_der: rustls::pki_types::CertificateDer<'static>,
    key_der: Vec<u8>,
    key_pem: String,
}

/// Where a [`WebhookServing`]'s webhooks are and how to trust them: what
/// [`TestEnv::webhooks`] fills in `clientConfig`.
#[derive(Clone, Debug)]
pub struct WebhookEndpoint {
    addr: SocketAddr,
    ca_pem: String,
}

impl WebhookServing {
    /// Binds `127.0.0.1:0` and issues a serving certificate for it.
    pub async fn bind() -> Result<Self> {
        Self::bind_with_names(&[]).await
    }

    /// Binds `127.0.0.1:0` and issues a serving certificate for it that also names `dns_names`:
    /// a Service's `<name>.<namespace>.svc`, the name the API server verifies when it calls a
    /// webhook through `clientConfig.service` (routed to the listener by an EndpointSlice at
    /// `127.0.0.1`).
    pub async fn bind_with_names(dns_names: &[&str]) -> Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(Error::Bind)?;
        let addr = listener.local_addr().map_err(Error::Bind)?;
        let ca_key = rcgen::KeyPair::generate().map_err(Error::Certificate)?;
        let mut ca_params =
            rcgen::CertificateParams::new(Vec::<String>::new()).map_err(Error::Certificate)?;
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "rkcm test webhook CA");
        let ca =
            rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).map_err(Error::Certificate)?;
        let key = rcgen::KeyPair::generate().map_err(Error::Certificate)?;
        let mut names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
        names.extend(dns_names.iter().map(|n| n.to_string()));
        let mut params = rcgen::CertificateParams::new(names).map_err(Error::Certificate)?;
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "127.0.0.1");
        let cert = params.signed_by(&key, &ca).map_err(Error::Certificate)?;
        Ok(WebhookServing {
            listener,
            endpoint: WebhookEndpoint {
                addr,
                ca_pem: ca.pem(),
            },
            cert_pem: cert.pem(),
            cert_der: cert.der().clone(),
            key_der: key.serialize_der(),
            key_pem: key.serialize_pem(),
        })
    }

    /// The address listened on (`127.0.0.1:<port>`).
    pub fn addr(&self) -> SocketAddr {
        self.endpoint.addr
    }

    /// The serving certificate, PEM.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The serving certificate's private key, PEM (PKCS#8).
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// The CA that signed the serving certificate, PEM: the webhooks' `caBundle`.
    pub fn ca_pem(&self) -> &str {
        &self.endpoint.ca_pem
    }

    /// A TLS server configuration presenting the serving certificate (rustls with ring,
    /// HTTP/1.1 and HTTP/2 offered by ALPN).
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(Error::Tls)?
            .with_no_client_auth()
            .with_single_cert(
                vec![self.cert_der.clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(self.key_der.clone().into()),
            )
            .map_err(Error::Tls)?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }

    /// The listener to serve on, and the endpoint to give [`TestEnv::webhooks`].
    pub fn into_parts(self) -> (tokio::net::TcpListener, WebhookEndpoint) {
        (self.listener, self.endpoint)
    }
}

impl WebhookEndpoint {
    /// The address of the webhook server (`127.0.0.1:<port>`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// The CA of the serving certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// `config` pointed at this endpoint: a `url` that is a path (`"/validate"`) is prefixed
    /// with `https://127.0.0.1:<port>`; without a `url`, the `service`'s path (or `/`) is used
    /// instead of the service; a full `url` is kept. A missing `caBundle` becomes the CA.
    pub fn client_config(&self, config: &mut WebhookClientConfig) {
        match config.url.as_deref() {
            Some(url) if url.starts_with('/') => config.url = Some(self.url(url)),
            Some(_) => {}
            None => {
                let path = config
                    .service
                    .take()
                    .and_then(|s| s.path)
                    .unwrap_or_else(|| "/".to_string());
                config.url = Some(self.url(&path));
            }
        }
        if config.ca_bundle.is_none() {
            config.ca_bundle = Some(ByteString(self.ca_pem.clone().into_bytes()));
        }
    }
}

/// Mutating and validating webhook configurations to install for a [`WebhookEndpoint`]; see
/// [`TestEnv::webhooks`].
#[must_use = "nothing is installed until `install` is awaited"]
pub struct WebhookInstall<'a> {
    env: &'a TestEnv,
    endpoint: WebhookEndpoint,
    mutating: Vec<MutatingWebhookConfiguration>,
    validating: Vec<ValidatingWebhookConfiguration>,
    timeout: Duration,
}

impl WebhookInstall<'_> {
    /// Adds a MutatingWebhookConfiguration; its webhooks' `clientConfig` is filled in as
    /// [`WebhookEndpoint::client_config`] says.
    pub fn mutating(mut self, config: MutatingWebhookConfiguration) -> Self {
        self.mutating.push(config);
        self
    }

    /// Adds a ValidatingWebhookConfiguration; its webhooks' `clientConfig` is filled in as
    /// [`WebhookEndpoint::client_config`] says.
    pub fn validating(mut self, config: ValidatingWebhookConfiguration) -> Self {
        self.validating.push(config);
        self
    }

    /// How long [`WebhookInstall::install`] waits for the webhooks to answer
    /// ([`WEBHOOK_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Creates the configurations, then retries a dry-run create of `probe` (an object every
    /// webhook matches and admits, its namespace set if it is namespaced) until it succeeds:
    /// with `failurePolicy: Fail`, the webhooks were called and answered. Returns the
    /// configurations as stored.
    ///
    /// A timeout's error names the last refusal of the probe.
    pub async fn install<K>(
        self,
        probe: &K,
    ) -> Result<(
        Vec<MutatingWebhookConfiguration>,
        Vec<ValidatingWebhookConfiguration>,
    )>
    where
        K: Resource + serde::Serialize,
        K::DynamicType: Default,
    {
        let client = self.env.client();
        let mut mutating = Vec::with_capacity(self.mutating.len());
        let api: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
        for mut config in self.mutating {
            for hook in config.webhooks.iter_mut().flatten() {
                self.endpoint.client_config(&mut hook.client_config);
            }
            mutating.push(create(&api, &config).await?);
        }
        let mut validating = Vec::with_capacity(self.validating.len());
        let api: Api<ValidatingWebhookConfiguration> = Api::all(client.clone());
        for mut config in self.validating {
            for hook in config.webhooks.iter_mut().flatten() {
                self.endpoint.client_config(&mut hook.client_config);
            }
            validating.push(create(&api, &config).await?);
        }

        let path = K::url_path(
            &K::DynamicType::default(),
            probe.meta().namespace.as_deref(),
        );
        let body = serde_json::to_vec(probe).map_err(|e| Error::Api {
            what: "encoding the webhook probe".into(),
            source: kube::Error::SerdeError(e),
        })?;
        let params = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        let last = std::sync::Mutex::new(None::<String>);
        let answered = eventually("the admission webhooks to answer", self.timeout, || async {
            let request = kube::core::Request::new(path.as_str())
                .create(&params, body.clone())
                .ok()?;
            match client.request::<serde_json::Value>(request).await {
                Ok(_) => Some(()),
                Err(err) => {
                    if let Ok(mut last) = last.lock() {
                        *last = Some(err.to_string());
                    }
                    None
                }
            }
        })
        .await;
        match answered {
            Ok(()) => Ok((mutating, validating)),
            Err(Error::Timeout { what, timeout }) => {
                let last = last.into_inner().ok().flatten();
                Err(Error::Timeout {
                    what: match last {
                        Some(last) => format!("{what} (last refusal of the probe: {last})"),
                        None => what,
                    },
                    timeout,
                })
            }
            Err(other) => Err(other),
        }
    }
}

/// Creates a webhook configuration, an error naming it if refused.
async fn create<K>(api: &Api<K>, config: &K) -> Result<K>
where
    K: Resource + Clone + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
    K::DynamicType: Default,
{
    api.create(&PostParams::default(), config)
        .await
        .map_err(|source| Error::Api {
            what: format!(
                "creating {} {}",
                K::kind(&K::DynamicType::default()),
                config.meta().name.as_deref().unwrap_or_default()
            ),
            source,
        })
}

fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn established(crd: &CustomResourceDefinition) -> bool {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        })
}

/// Polls `check` until it returns `Some`, with a growing pause (10ms to 200ms) between tries;
/// [`Error::Timeout`] naming `what` after `timeout`.
///
/// For tests that wait for a controller to act: `eventually("the child ConfigMap", timeout, ||
/// async { configmaps.get_opt("x").await.ok().flatten() })`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(10);
    loop {
        if let Some(v) = check().await {
            return Ok(v);
        }
        if Instant::now() >= deadline {
            return Err(Error::Timeout {
                what: what.to_string(),
                timeout,
            });
        }
        tokio::time::sleep(pause.min(deadline.saturating_duration_since(Instant::now()))).await;
        pause = (pause * 2).min(Duration::from_millis(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn eventually_returns_the_first_value_and_times_out_naming_what_it_waited_for() {
        let mut tries = 0;
        let got = eventually("three tries", Duration::from_secs(5), || {
            tries += 1;
            let t = tries;
            async move { (t == 3).then_some(t) }
        })
        .await
        .expect("a value on the third try");
        assert_eq!(got, 3);
        let err = eventually("nothing", Duration::from_millis(30), || async {
            None::<()>
        })
        .await
        .expect_err("times out");
        assert_eq!(err.to_string(), "timed out after 30ms waiting for nothing");
    }

    #[test]
    fn client_config_gets_the_url_and_ca_of_the_endpoint() {
        let endpoint = WebhookEndpoint {
            addr: "127.0.0.1:8443".parse().expect("address"),
            ca_pem: "CA".into(),
        };
        let filled = |config: serde_json::Value| {
            let mut config: WebhookClientConfig = serde_json::from_value(config).expect("config");
            endpoint.client_config(&mut config);
            serde_json::to_value(config).expect("encodes")
        };
        // "CA" is base64 "Q0E=".
        assert_eq!(
            filled(serde_json::json!({"url": "/validate"})),
            serde_json::json!({"caBundle": "Q0E=", "url": "https://127.0.0.1:8443/validate"})
        );
        assert_eq!(
            filled(serde_json::json!({"service": {"name": "s", "namespace": "n", "path": "/m"}})),
            serde_json::json!({"caBundle": "Q0E=", "url": "https://127.0.0.1:8443/m"})
        );
        assert_eq!(
            filled(serde_json::json!({})),
            serde_json::json!({"caBundle": "Q0E=", "url": "https://127.0.0.1:8443/"})
        );
        assert_eq!(
            filled(serde_json::json!({"url": "https://localhost:1/x", "caBundle": "eA=="})),
            serde_json::json!({"caBundle": "eA==", "url": "https://localhost:1/x"})
        );
    }

    /// Serves `answer(request)` as the response of every review, over `serving`'s TLS.
    async fn serve_reviews(
        serving: WebhookServing,
        answer: fn(&serde_json::Value) -> serde_json::Value,
    ) -> WebhookEndpoint {
        use http_body_util::BodyExt;
        let acceptor = tokio_rustls::TlsAcceptor::from(serving.server_config().expect("TLS"));
        let (listener, endpoint) = serving.into_parts();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(
                        move |req: http::Request<hyper::body::Incoming>| async move {
                            let body = req.into_body().collect().await?.to_bytes();
                            let review: serde_json::Value =
                                serde_json::from_slice(&body).unwrap_or_default();
                            let mut response = answer(&review["request"]);
                            response["uid"] = review["request"]["uid"].clone();
                            let review = serde_json::json!({"apiVersion": "admission.k8s.io/v1",
                                "kind": "AdmissionReview", "response": response});
                            Ok::<_, hyper::Error>(http::Response::new(http_body_util::Full::new(
                                bytes::Bytes::from(review.to_string()),
                            )))
                        },
                    );
                    let _ = hyper_util::server::conn::auto::Builder::new(
                        hyper_util::rt::TokioExecutor::new(),
                    )
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
                });
            }
        });
        endpoint
    }

    #[tokio::test]
    async fn webhooks_served_by_the_test_are_installed_and_waited_for() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let env = TestEnv::start().await.expect("starts");
        let serving = WebhookServing::bind().await.expect("serving certificate");
        assert_eq!(serving.addr().ip().to_string(), "127.0.0.1");
        let endpoint = serve_reviews(serving, |request| {
            if request["name"] == "bad" {
                serde_json::json!({"allowed": false, "status": {"message": "not that name"}})
            } else {
                serde_json::json!({"allowed": true})
            }
        })
        .await;
        let config: ValidatingWebhookConfiguration = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "names"},
            "webhooks": [{
                "name": "names.example.com",
                "clientConfig": {"url": "/validate"},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                    "resources": ["configmaps"]}],
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }],
        }))
        .expect("configuration");
        let probe: ConfigMap = serde_json::from_value(
            serde_json::json!({"metadata": {"name": "probe", "namespace": "default"}}),
        )
        .expect("probe");
        let (_, validating) = env
            .webhooks(&endpoint)
            .validating(config)
            .install(&probe)
            .await
            .expect("webhook answers");
        let hook = &validating[0].webhooks.as_ref().expect("webhooks")[0];
        assert_eq!(
            hook.client_config.url.as_deref(),
            Some(endpoint.url("/validate").as_str())
        );
        let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
        assert!(
            cms.get_opt("probe").await.expect("get").is_none(),
            "dry run"
        );
        let bad: ConfigMap =
            serde_json::from_value(serde_json::json!({"metadata": {"name": "bad"}})).expect("cm");
        let err = cms
            .create(&PostParams::default(), &bad)
            .await
            .expect_err("denied");
        let kube::Error::Api(status) = err else {
            panic!("expected an API error, got {err:?}");
        };
        assert_eq!(
            status.message,
            "admission webhook \"names.example.com\" denied the request: not that name"
        );
    }

    #[tokio::test]
    async fn a_webhook_that_never_answers_times_out_naming_the_last_refusal() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let env = TestEnv::start().await.expect("starts");
        // Bound but never accepting: every call fails.
        let serving = WebhookServing::bind().await.expect("serving certificate");
        let (_listener, endpoint) = serving.into_parts();
        let config: ValidatingWebhookConfiguration = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "silent"},
            "webhooks": [{
                "name": "silent.example.com",
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                    "resources": ["configmaps"]}],
                "failurePolicy": "Fail",
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": 1,
            }],
        }))
        .expect("configuration");
        let probe: ConfigMap = serde_json::from_value(
            serde_json::json!({"metadata": {"name": "probe", "namespace": "default"}}),
        )
        .expect("probe");
        let err = env
            .webhooks(&endpoint)
            .validating(config)
            .timeout(Duration::from_secs(2))
            .install(&probe)
            .await
            .expect_err("times out");
        let message = err.to_string();
        assert!(
            message.starts_with("timed out after 2s waiting for the admission webhooks to answer (last refusal of the probe: "),
            "{message}"
        );
        assert!(message.contains("silent.example.com"), "{message}");
    }

    #[tokio::test]
    async fn unknown_controllers_are_refused_before_anything_starts() {
        let err = TestEnv::builder()
            .controller_list(["no-such-controller"])
            .start()
            .await
            .err()
            .expect("refused");
        assert!(matches!(err, Error::Controllers(_)), "{err:?}");
    }
}
