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
//! Everything stops when the [`TestEnv`] is dropped (or awaited with [`TestEnv::stop`]).
//! Several environments may run side by side in one test binary: each has its own store, port
//! and credentials.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, PostParams};
use rkcm_apiserver::testing::{self, TestServer};
use rkcm_controllers::registry::{self, ControllerOptions};
use rkcm_runtime::{Shutdown, SystemClock};
use tokio::task::JoinSet;

use crate::client_identity::{issue, with_certificate, KUBE_CONTROLLER_MANAGER};
use crate::manager::{self, ManagerConfig};
use crate::serving::Health;

/// How long [`TestEnv::install_crd`] waits for a CRD to be Established and served.
pub const CRD_TIMEOUT: Duration = Duration::from_secs(30);

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
