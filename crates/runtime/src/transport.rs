//! How clients reach their API server: over the network, or in process when the server runs in
//! the same process and has registered itself for its URL.
//!
//! `rkcm up` runs the API server, the controller manager, the scheduler and the simulated
//! kubelets in one process. Each component still builds its client from a `kube::Config` with
//! its own credentials, exactly as a separate process would; only the bytes do not travel
//! through TLS and a loopback socket. A request handed to the in-process service is the same
//! HTTP request, authenticated by the same chain: bearer tokens and impersonation headers are
//! sent as headers by the config's layers, and the client certificate is verified against the
//! cluster CA once, when the client is built, where a TLS server verifies it once per connection.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use http::{Request, Response};
use kube::client::{Body, ClientBuilder, ConfigExt, DynBody};
use parking_lot::RwLock;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, ServiceBuilder, ServiceExt};

/// The service stack of a `kube::Client` (kube's `GenericService`, which it does not export).
pub type GenericService = tower::util::BoxService<Request<Body>, Response<Box<DynBody>>, BoxError>;

/// The service a client's requests go to in process: it answers as the server would over the
/// network.
pub type LocalService = BoxCloneSyncService<Request<Body>, Response<Box<DynBody>>, BoxError>;

/// Builds the in-process service for a client of `config`: identifies the client by the
/// certificate `config` carries, as the server's TLS listener would. `None` sends the client
/// over the network.
pub type LocalConnector = Arc<dyn Fn(&kube::Config) -> Option<LocalService> + Send + Sync>;

/// The in-process servers, by the URL their clients are configured with.
static LOCAL: LazyLock<RwLock<HashMap<String, LocalConnector>>> =
    LazyLock::new(|| RwLock::new(HashMap::new()));

/// Serves clients of `url` in process from now on, until the returned guard is dropped.
#[must_use = "the registration ends when the guard is dropped"]
pub fn register_local(url: &http::Uri, connector: LocalConnector) -> LocalRegistration {
    let key = url_key(url);
    LOCAL.write().insert(key.clone(), connector);
    LocalRegistration { key }
}

/// Ends an in-process registration when dropped: clients built afterwards use the network.
#[derive(Debug)]
pub struct LocalRegistration {
    key: String,
}

impl Drop for LocalRegistration {
    fn drop(&mut self) {
        LOCAL.write().remove(&self.key);
    }
}

fn url_key(url: &http::Uri) -> String {
    format!(
        "{}://{}",
        url.scheme_str().unwrap_or("https"),
        url.authority().map(|a| a.as_str()).unwrap_or_default()
    )
}

/// The in-process service for `config`'s server, if one is registered and takes the client.
fn local_service(config: &kube::Config) -> Option<LocalService> {
    let connector = LOCAL.read().get(&url_key(&config.cluster_url)).cloned()?;
    connector(config)
}

/// `kube::client::ClientBuilder::try_from(config)`, in process when the server is.
///
/// In process, the config's own layers stay: the base URI, its credentials (bearer tokens,
/// refreshed as usual) and extra headers (impersonation). Network concerns go: TLS, timeouts of
/// connect, read and write, and kube's retries of 429/503 answers (`config.default_retry`),
/// which the client's callers may still add as layers.
pub fn client_builder(config: kube::Config) -> Result<ClientBuilder<GenericService>, kube::Error> {
    let Some(local) = local_service(&config) else {
        return ClientBuilder::try_from(config);
    };
    let default_namespace = config.default_namespace.clone();
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .service(local)
        .map_err(BoxError::from);
    Ok(ClientBuilder::new(
        tower::util::BoxService::new(service),
        default_namespace,
    ))
}

/// `kube::Client::try_from(config)`, in process when the server is.
pub fn client(config: kube::Config) -> Result<kube::Client, kube::Error> {
    Ok(client_builder(config)?.build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn config(url: &str) -> kube::Config {
        let mut config = kube::Config::new(url.parse().expect("url"));
        config.auth_info.token = Some("secret-token".to_string().into());
        config
    }

    /// A server that answers with what it received: method, path and authorization header.
    fn echo() -> LocalService {
        BoxCloneSyncService::new(tower::service_fn(|req: Request<Body>| async move {
            let auth = req
                .headers()
                .get(http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            let text = format!("{} {} {auth}", req.method(), req.uri().path());
            let body: Box<DynBody> =
                Box::new(Body::from(text.into_bytes()).map_err(BoxError::from));
            Ok::<_, BoxError>(Response::new(body))
        }))
    }

    #[tokio::test]
    async fn clients_of_a_registered_url_are_served_in_process_with_their_credentials() {
        let url: http::Uri = "https://127.0.0.1:1".parse().expect("url");
        let guard = register_local(&url, Arc::new(|_: &kube::Config| Some(echo())));
        let client = client(config("https://127.0.0.1:1")).expect("client");
        let answer = client
            .request_text(
                Request::get("/api/v1/namespaces")
                    .body(Vec::new())
                    .expect("request"),
            )
            .await
            .expect("answered in process");
        assert_eq!(answer, "GET /api/v1/namespaces Bearer secret-token");

        // Another server's clients, and clients built after the registration ended, dial.
        assert!(local_service(&config("https://127.0.0.1:2")).is_none());
        drop(guard);
        assert!(local_service(&config("https://127.0.0.1:1")).is_none());
    }

    #[tokio::test]
    async fn a_connector_may_decline_a_client() {
        let url: http::Uri = "https://127.0.0.1:3".parse().expect("url");
        let _guard = register_local(&url, Arc::new(|_: &kube::Config| None));
        assert!(local_service(&config("https://127.0.0.1:3")).is_none());
    }
}
