//! Server configuration.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::admission::AdmissionConfig;
use crate::allocators::{
    Ipv4Cidr, PortRange, DEFAULT_SERVICE_CLUSTER_IP_RANGE, DEFAULT_SERVICE_NODE_PORT_RANGE,
};

/// How to run the API server.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where objects, certificates and the admin token live; `None` keeps everything in memory
    /// (tests).
    pub data_dir: Option<PathBuf>,
    /// Keep objects in etcd (`--etcd-servers` and the other `--etcd-*` flags) instead of the
    /// data dir's embedded store; certificates and the token stay in the data dir.
    pub etcd: Option<crate::storage::EtcdConfig>,
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
    /// Addresses of Services' cluster IPs (`--service-cluster-ip-range`); the first is the
    /// `kubernetes` Service's.
    pub service_cluster_ip_range: Ipv4Cidr,
    /// Ports of NodePort and LoadBalancer Services (`--service-node-port-range`).
    pub service_node_port_range: PortRange,
    /// Static bearer tokens (`--token-auth-file`, CSV `token,user,uid,"group1,group2"`).
    pub token_auth_file: Option<PathBuf>,
    /// Accept bootstrap tokens (`--enable-bootstrap-token-auth`).
    pub enable_bootstrap_token_auth: bool,
    /// Issuer of service-account tokens (`--service-account-issuer`).
    pub service_account_issuer: String,
    /// The API server's audiences (`--api-audiences`); the issuer when empty, as kube.
    pub api_audiences: Vec<String>,
    /// Longest validity of a requested token (`--service-account-max-token-expiration`); no
    /// limit when `None`.
    pub service_account_max_token_expiration: Option<Duration>,
    /// How long a successful token authentication is answered from the cache
    /// (`TokenSuccessCacheTTL`: 10 s, which kube-apiserver has no flag for); zero caches
    /// nothing. A revoked token stops working at most this long after its revocation.
    pub token_success_cache_ttl: Duration,
    /// Read-only requests served at once before 429 (`--max-requests-inflight`; 0: no limit).
    pub max_requests_inflight: usize,
    /// Mutating requests served at once before 429 (`--max-mutating-requests-inflight`; 0: no
    /// limit).
    pub max_mutating_requests_inflight: usize,
    /// Enforce API Priority and Fairness (`--enable-priority-and-fairness`, default true): the
    /// two in-flight limits together are the seats the priority levels share. When false, or
    /// when both limits are 0, each limit caps its kind of request as before.
    pub enable_priority_and_fairness: bool,
    /// Admission plugins and their settings (`--enable-admission-plugins`, ...).
    pub admission: AdmissionConfig,
    /// Authorizers after the `system:masters` check, in order (`--authorization-mode`; kube's
    /// default is AlwaysAllow, kubeadm's and `rkcm up`'s RBAC).
    pub authorization_modes: Vec<crate::auth::authorization::Mode>,
    /// Audit logging (`--audit-policy-file`, `--audit-log-*`); off without a policy file.
    pub audit: rkcm_server::audit::AuditOptions,
    /// Encryption at rest (`--encryption-provider-config`): an `apiserver.config.k8s.io/v1`
    /// `EncryptionConfiguration`; values are stored as they are without one.
    pub encryption_provider_config: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: None,
            etcd: None,
            bind: SocketAddr::from(([127, 0, 0, 1], 6443)),
            tls: true,
            admin_token: None,
            extra_sans: Vec::new(),
            bookmark_interval: Duration::from_secs(60),
            watch_cache_capacity: crate::watch_cache::DEFAULT_RING_CAPACITY,
            service_cluster_ip_range: DEFAULT_SERVICE_CLUSTER_IP_RANGE
                .parse()
                .expect("the default range parses"),
            service_node_port_range: DEFAULT_SERVICE_NODE_PORT_RANGE
                .parse()
                .expect("the default range parses"),
            token_auth_file: None,
            enable_bootstrap_token_auth: false,
            service_account_issuer: crate::auth::serviceaccount::DEFAULT_ISSUER.to_string(),
            api_audiences: Vec::new(),
            service_account_max_token_expiration: None,
            token_success_cache_ttl: crate::auth::token_cache::DEFAULT_SUCCESS_TTL,
            max_requests_inflight: crate::http::inflight::DEFAULT_MAX_REQUESTS_INFLIGHT,
            max_mutating_requests_inflight:
                crate::http::inflight::DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT,
            enable_priority_and_fairness: true,
            admission: AdmissionConfig::default(),
            authorization_modes: vec![crate::auth::authorization::Mode::AlwaysAllow],
            audit: rkcm_server::audit::AuditOptions::default(),
            encryption_provider_config: None,
        }
    }
}

impl Config {
    /// The API server's audiences: `api_audiences`, or the issuer when none are given.
    pub fn audiences(&self) -> Vec<String> {
        if self.api_audiences.is_empty() {
            vec![self.service_account_issuer.clone()]
        } else {
            self.api_audiences.clone()
        }
    }
}
