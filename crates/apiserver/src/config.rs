//! Server configuration.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// How to run the API server.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where objects, certificates and the admin token live; `None` keeps everything in memory
    /// (tests).
    pub data_dir: Option<PathBuf>,
    /// Address the server is meant to listen on (the caller binds the listener; this is used for
    /// the certificate's names and the kubeconfig).
    pub bind: SocketAddr,
    /// Serve HTTPS (default) or plain HTTP.
    pub tls: bool,
    /// Admin bearer token; generated (and stored in the data dir) when `None`.
    pub admin_token: Option<String>,
    /// Extra DNS names or IP addresses for the serving certificate.
    pub extra_sans: Vec<String>,
    /// Interval between watch bookmarks (kube: 1 minute).
    pub bookmark_interval: Duration,
    /// Events kept per resource for resuming watches.
    pub watch_cache_capacity: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: None,
            bind: SocketAddr::from(([127, 0, 0, 1], 6443)),
            tls: true,
            admin_token: None,
            extra_sans: Vec::new(),
            bookmark_interval: Duration::from_secs(60),
            watch_cache_capacity: crate::watch_cache::DEFAULT_RING_CAPACITY,
        }
    }
}
