//! An in-process API server for tests: in-memory store, TLS and token on `127.0.0.1:0`.

use std::path::Path;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::admission::AdmissionConfig;
use crate::config::Config;
use crate::kubeconfig::{kubeconfig, kubeconfig_yaml};
use crate::server::ApiServer;

/// A running test server; stopped when dropped.
pub struct TestServer {
    url: String,
    token: String,
    ca_pem: Option<String>,
    ca_key_pem: Option<String>,
    kube_config: kube::Config,
    shutdown: CancellationToken,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    components: crate::component_status::Components,
}

/// Starts an in-memory server with TLS and a token on an ephemeral loopback port.
///
/// The server runs kube's default admission plugins except `ServiceAccount`, as kube's own
/// integration tests start theirs (`--disable-admission-plugins=ServiceAccount`): tests create
/// pods without running the controller that makes each namespace's `default` ServiceAccount.
///
/// Panics if the server cannot start (tests only).
pub async fn start() -> TestServer {
    start_with(config()).await
}

/// The configuration [`start`] uses: the defaults, with the `ServiceAccount` admission plugin
/// disabled.
pub fn config() -> Config {
    Config {
        admission: AdmissionConfig::disabling(&[crate::admission::plugins::SERVICE_ACCOUNT]),
        ..Config::default()
    }
}

/// Starts a server with `config` (its `bind` is ignored: the server listens on `127.0.0.1:0`).
///
/// Panics if the server cannot start (tests only).
pub async fn start_with(config: Config) -> TestServer {
    start_serving(config, None).await
}

/// Starts a server with `config` that serves `metrics.k8s.io` from `source`.
///
/// Panics if the server cannot start (tests only).
pub async fn start_with_metrics(
    config: Config,
    source: std::sync::Arc<dyn crate::resource_metrics::MetricsSource>,
) -> TestServer {
    start_serving(config, Some(source)).await
}

async fn start_serving(
    config: Config,
    source: Option<std::sync::Arc<dyn crate::resource_metrics::MetricsSource>>,
) -> TestServer {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address");
    let tls = config.tls;
    // The `kubernetes` Service's endpoints name the port actually served.
    let config = Config {
        bind: addr,
        ..config
    };
    let mut server = ApiServer::new(config).await.expect("API server starts");
    if let Some(source) = source {
        server = server.with_metrics_source(source);
    }
    let scheme = if tls { "https" } else { "http" };
    let url = format!("{scheme}://{addr}");
    let token = server.admin_token().to_string();
    let ca_pem = server.ca_pem();
    let ca_key_pem = server.ca_key_pem();
    let kubeconfig = kubeconfig(&url, ca_pem.as_deref(), &token);
    let kube_config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("kubeconfig is usable");
    let shutdown = CancellationToken::new();
    let components = server.components();
    let task = tokio::spawn(server.serve(listener, shutdown.clone()));
    TestServer {
        url,
        token,
        ca_pem,
        ca_key_pem,
        kube_config,
        shutdown,
        task: Some(task),
        components,
    }
}

impl TestServer {
    /// A client authenticated as admin.
    pub fn client(&self) -> kube::Client {
        kube::Client::try_from(self.kube_config.clone()).expect("client from test kubeconfig")
    }

    /// A client presenting `user`, a kubeconfig `user` entry (`{"token": ...}`,
    /// `{"client-certificate-data": ..., "client-key-data": ...}`, or `{}` for anonymous), in
    /// place of the admin's credentials.
    pub async fn client_as(&self, user: serde_json::Value) -> kube::Client {
        use base64::Engine as _;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let text = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {
                "server": self.url,
                "certificate-authority-data": b64(self.ca_pem().expect("TLS")),
            }}],
            "users": [{"name": "u", "user": user}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
        })
        .to_string();
        let kubeconfig = kube::config::Kubeconfig::from_yaml(&text).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
            .await
            .expect("usable kubeconfig");
        kube::Client::try_from(config).expect("client")
    }

    /// The kube client configuration (to build clients with other settings).
    pub fn kube_config(&self) -> kube::Config {
        self.kube_config.clone()
    }

    /// The kubeconfig file for this server.
    pub fn kubeconfig_yaml(&self) -> String {
        kubeconfig_yaml(&self.url, self.ca_pem.as_deref(), &self.token)
    }

    /// Writes the kubeconfig to `path`.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        std::fs::write(path, self.kubeconfig_yaml())
    }

    /// Base URL (`https://127.0.0.1:<port>`).
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The components `componentstatuses` reports on (register probes here).
    pub fn components(&self) -> crate::component_status::Components {
        self.components.clone()
    }

    /// The admin bearer token.
    pub fn admin_token(&self) -> &str {
        &self.token
    }

    /// The CA certificate (PEM), when serving TLS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// The CA's private key (PEM), to sign client certificates with, when serving TLS.
    pub fn ca_key_pem(&self) -> Option<&str> {
        self.ca_key_pem.as_deref()
    }

    /// Stops the server and waits for it to finish.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}
