//! How to reach etcd (kube-apiserver's `--etcd-*` flags); the backend itself is `storage::etcd`.

use std::path::PathBuf;
use std::time::Duration;

/// kube-apiserver's `--etcd-prefix` default.
pub const DEFAULT_PREFIX: &str = "/registry";
/// kube-apiserver's `--etcd-compaction-interval` default.
pub const DEFAULT_COMPACTION_INTERVAL: Duration = Duration::from_secs(5 * 60);
/// How long one etcd call (and the wait for its watch event) may take before the request fails.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// How to reach etcd (kube-apiserver's `--etcd-*` flags).
#[derive(Clone, Debug)]
pub struct EtcdConfig {
    /// Client URLs (`--etcd-servers`), e.g. `http://127.0.0.1:2379`.
    pub servers: Vec<String>,
    /// CA bundle that signed the servers' certificates (`--etcd-cafile`).
    pub ca_file: Option<PathBuf>,
    /// Client certificate (`--etcd-certfile`).
    pub cert_file: Option<PathBuf>,
    /// Client key (`--etcd-keyfile`).
    pub key_file: Option<PathBuf>,
    /// Prefix of every key (`--etcd-prefix`).
    pub prefix: String,
    /// How often history is compacted (`--etcd-compaction-interval`); zero disables compaction.
    pub compaction_interval: Duration,
    /// Longest wait for one etcd call; requests fail with 503/504 after it.
    pub request_timeout: Duration,
}

impl EtcdConfig {
    /// kube-apiserver's defaults for `servers`.
    pub fn new(servers: Vec<String>) -> Self {
        Self {
            servers,
            ca_file: None,
            cert_file: None,
            key_file: None,
            prefix: DEFAULT_PREFIX.to_string(),
            compaction_interval: DEFAULT_COMPACTION_INTERVAL,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }

    /// The prefix without a trailing `/` (our keys start with one).
    pub fn key_prefix(&self) -> String {
        let p = self.prefix.trim_end_matches('/');
        if p.is_empty() || p.starts_with('/') {
            p.to_string()
        } else {
            format!("/{p}")
        }
    }
}
