//! `rkcm controller-manager` flags, named and defaulted as kube-controller-manager's.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args};

/// kube-controller-manager flags, for what rkcm implements.
#[derive(Debug, Clone, Args)]
pub struct ManagerArgs {
    // ---- Generic flags
    /// Path to a kubeconfig file; without it, the in-cluster configuration is used.
    #[arg(long, value_name = "PATH", help_heading = "Generic flags")]
    pub kubeconfig: Option<PathBuf>,

    /// The address of the Kubernetes API server (overrides any value in kubeconfig).
    #[arg(long, value_name = "URL", help_heading = "Generic flags")]
    pub master: Option<String>,

    /// Controllers to enable: `*` enables all on-by-default controllers, `foo` enables the controller
    /// named foo, `-foo` disables it.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "*",
        help_heading = "Generic flags"
    )]
    pub controllers: Vec<String>,

    /// Queries per second to use while talking with the API server, per controller (0: client-go's
    /// default of 5; negative: no client-side rate limiting).
    #[arg(
        long,
        default_value_t = 20.0,
        allow_negative_numbers = true,
        help_heading = "Generic flags"
    )]
    pub kube_api_qps: f32,

    /// Burst to use while talking with the API server, per controller.
    #[arg(long, default_value_t = 30, help_heading = "Generic flags")]
    pub kube_api_burst: u32,

    /// The resync period in reflectors will be random between min-resync-period and 2*min-resync-period.
    #[arg(long, default_value = "12h0m0s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Generic flags")]
    pub min_resync_period: Duration,

    // ---- Leader election
    /// Start a leader election client and gain leadership before executing the main loop.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true",
          help_heading = "Generic flags")]
    pub leader_elect: bool,

    /// How long non-leader candidates wait after observing a leadership renewal before acquiring.
    #[arg(long, default_value = "15s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Generic flags")]
    pub leader_elect_lease_duration: Duration,

    /// How long the acting leader retries refreshing leadership before giving up.
    #[arg(long, default_value = "10s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Generic flags")]
    pub leader_elect_renew_deadline: Duration,

    /// How long clients wait between attempts to acquire and renew leadership.
    #[arg(long, default_value = "2s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Generic flags")]
    pub leader_elect_retry_period: Duration,

    /// The name of the Lease object used for locking during leader election.
    #[arg(
        long,
        default_value = "kube-controller-manager",
        help_heading = "Generic flags"
    )]
    pub leader_elect_resource_name: String,

    /// The namespace of the Lease object used for locking during leader election.
    #[arg(long, default_value = "kube-system", help_heading = "Generic flags")]
    pub leader_elect_resource_namespace: String,

    /// The type of resource object used for locking; only `leases` is supported.
    #[arg(long, default_value = "leases", value_parser = ["leases"], help_heading = "Generic flags")]
    pub leader_elect_resource_lock: String,

    // ---- Secure serving
    /// The IP address on which to serve /healthz, /readyz and /metrics.
    #[arg(long, default_value = "0.0.0.0", help_heading = "Secure serving flags")]
    pub bind_address: IpAddr,

    /// The port on which to serve HTTPS (0 turns serving off).
    #[arg(long, default_value_t = 10257, help_heading = "Secure serving flags")]
    pub secure_port: u16,

    /// File containing the x509 serving certificate; a self-signed one is generated when absent.
    #[arg(long, value_name = "PATH", help_heading = "Secure serving flags")]
    pub tls_cert_file: Option<PathBuf>,

    /// File containing the x509 private key matching --tls-cert-file.
    #[arg(long, value_name = "PATH", help_heading = "Secure serving flags")]
    pub tls_private_key_file: Option<PathBuf>,

    // ---- Controller-specific
    /// The number of job objects that are allowed to sync concurrently.
    #[arg(long, default_value_t = 5, help_heading = "Job controller flags")]
    pub concurrent_job_syncs: usize,

    /// The number of ttl-after-finished-controller workers that are allowed to sync
    /// concurrently.
    #[arg(
        long,
        default_value_t = 5,
        help_heading = "TTL-after-finished controller flags"
    )]
    pub concurrent_ttl_after_finished_syncs: usize,

    /// The number of deployment objects that are allowed to sync concurrently.
    #[arg(
        long,
        default_value_t = 5,
        help_heading = "Deployment controller flags"
    )]
    pub concurrent_deployment_syncs: usize,

    /// The number of statefulset objects that are allowed to sync concurrently. Larger number =
    /// more responsive statefulsets, but more CPU (and network) load.
    #[arg(
        long,
        default_value_t = 5,
        help_heading = "Statefulset controller flags"
    )]
    pub concurrent_statefulset_syncs: usize,

    /// The number of replica sets that are allowed to sync concurrently.
    #[arg(
        long,
        default_value_t = 5,
        help_heading = "Replicaset controller flags"
    )]
    pub concurrent_replicaset_syncs: usize,

    /// The number of replication controllers that are allowed to sync concurrently.
    #[arg(
        long,
        default_value_t = 5,
        help_heading = "Replicationcontroller flags"
    )]
    pub concurrent_rc_syncs: usize,

    /// Number of terminated pods that can exist before the terminated pod garbage collector starts
    /// deleting them; 0 or less disables it.
    #[arg(
        long,
        default_value_t = 12500,
        allow_negative_numbers = true,
        help_heading = "Podgc controller flags"
    )]
    pub terminated_pod_gc_threshold: i64,

    /// The number of garbage collector workers that are allowed to sync concurrently.
    #[arg(
        long,
        default_value_t = 20,
        help_heading = "Garbagecollector controller flags"
    )]
    pub concurrent_gc_syncs: usize,

    /// Enables the generic garbage collector.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true",
          help_heading = "Garbagecollector controller flags")]
    pub enable_garbage_collector: bool,

    /// The number of namespace objects that are allowed to sync concurrently.
    #[arg(
        long,
        default_value_t = 10,
        help_heading = "Namespace controller flags"
    )]
    pub concurrent_namespace_syncs: usize,

    /// The period for syncing namespace life-cycle updates.
    #[arg(long, default_value = "5m0s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Namespace controller flags")]
    pub namespace_sync_period: Duration,

    // ---- Serviceaccount controller flags
    /// If set, this root certificate authority will be included in service account's token
    /// secret and published as `kube-root-ca.crt` in every namespace. This must be a valid
    /// PEM-encoded CA bundle.
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Serviceaccount controller flags"
    )]
    pub root_ca_file: Option<PathBuf>,
}
