//! `rkcm controller-manager` flags, named and defaulted as kube-controller-manager's.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args};

/// kube-controller-manager flags, for what rkcm implements.
#[derive(Debug, Clone, Args)]
pub struct ManagerArgs {
    /// Orders the `--help` sections as kube-controller-manager prints them.
    #[command(flatten)]
    pub help_order: super::help_order::HelpOrder,

    // ---- Generic flags
    /// Path to kubeconfig file with authorization and master location information; without
    /// it, the in-cluster configuration is used.
    #[arg(long, value_name = "PATH", help_heading = "Misc flags")]
    pub kubeconfig: Option<PathBuf>,

    /// The address of the Kubernetes API server (overrides any value in kubeconfig).
    #[arg(long, value_name = "URL", help_heading = "Misc flags")]
    pub master: Option<String>,

    /// Controllers to enable: `*` enables all on-by-default controllers, `foo` enables the controller
    /// named foo, `-foo` disables it. The help names every controller, as kube's does.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "*",
        help = rkcm_controllers::registry::controllers_flag_usage(),
        help_heading = "Generic flags"
    )]
    pub controllers: Vec<String>,

    /// A set of key=value pairs that describe feature gates for alpha/experimental features
    /// (kube 1.33's gates; `AllAlpha` and `AllBeta` set every gate of that maturity).
    #[arg(long, value_name = "mapStringBool", action = ArgAction::Append, help_heading = "Generic flags")]
    pub feature_gates: Vec<String>,

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

    /// If true, use individual service account credentials for each controller.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true",
          help_heading = "Generic flags")]
    pub use_service_account_credentials: bool,

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
    /// The number of daemonset objects that are allowed to sync concurrently. Larger number =
    /// more responsive daemonset, but more CPU (and network) load.
    #[arg(long, default_value_t = 2, help_heading = "Daemonset controller flags")]
    pub concurrent_daemonset_syncs: usize,

    /// The number of job objects that are allowed to sync concurrently.
    #[arg(long, default_value_t = 5, help_heading = "Job controller flags")]
    pub concurrent_job_syncs: usize,

    /// The number of cron job objects that are allowed to sync concurrently. Larger number =
    /// more responsive jobs, but more CPU (and network) load
    #[arg(long, default_value_t = 5, help_heading = "Cronjob controller flags")]
    pub concurrent_cron_job_syncs: usize,

    /// The number of ttl-after-finished-controller workers that are allowed to sync
    /// concurrently.
    #[arg(
        long,
        default_value_t = 5,
        help_heading = "Ttl-after-finished controller flags"
    )]
    pub concurrent_ttl_after_finished_syncs: usize,

    /// The number of ValidatingAdmissionPolicyStatusController workers that are allowed to sync
    /// concurrently.
    #[arg(
        long,
        default_value_t = 5,
        help_heading = "Validatingadmissionpolicystatus controller flags"
    )]
    pub concurrent_validating_admission_policy_status_syncs: usize,

    #[command(flatten)]
    pub hpa: super::hpa_flags::HpaFlags,

    #[command(flatten)]
    pub attachdetach: super::attachdetach_flags::AttachDetachFlags,

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

    /// The period for syncing persistent volumes and persistent volume claims.
    #[arg(long, default_value = "15s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Persistentvolume-binder controller flags")]
    pub pvclaimbinder_sync_period: Duration,

    /// Enable dynamic provisioning for environments that support it.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true",
          help_heading = "Persistentvolume-binder controller flags")]
    pub enable_dynamic_provisioning: bool,

    /// The number of ephemeral volume syncing operations that will be done concurrently. Larger
    /// number = faster ephemeral volume updating, but more CPU (and network) load
    #[arg(
        long,
        default_value_t = 5,
        help_heading = "Ephemeralvolume controller flags"
    )]
    pub concurrent_ephemeralvolume_syncs: usize,

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

    /// The number of endpoint syncing operations that will be done concurrently. Larger number =
    /// faster endpoint updating, but more CPU (and network) load.
    #[arg(long, default_value_t = 5, help_heading = "Endpoint controller flags")]
    pub concurrent_endpoint_syncs: usize,

    /// The length of endpoint updates batching period. Processing of pod changes will be delayed
    /// by this duration to join them with potential upcoming updates and reduce the overall number
    /// of endpoints updates.
    #[arg(long, default_value = "0s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Endpoint controller flags")]
    pub endpoint_updates_batch_period: Duration,

    /// The number of service endpoint syncing operations that will be done concurrently. Larger
    /// number = faster endpoint slice updating, but more CPU (and network) load.
    #[arg(long, default_value_t = 5, value_parser = endpoint_syncs("concurrent-service-endpoint-syncs"), help_heading = "Endpointslice controller flags")]
    pub concurrent_service_endpoint_syncs: usize,

    /// The maximum number of endpoints that will be added to an EndpointSlice. More endpoints per
    /// slice will result in less endpoint slices, but larger resources.
    #[arg(long, default_value_t = 100, value_parser = endpoints_per_slice("max-endpoints-per-slice"), help_heading = "Endpointslice controller flags")]
    pub max_endpoints_per_slice: usize,

    /// The length of endpoint slice updates batching period. Processing of pod changes will be
    /// delayed by this duration to join them with potential upcoming updates and reduce the
    /// overall number of endpoints updates.
    #[arg(long, default_value = "0s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Endpointslice controller flags")]
    pub endpointslice_updates_batch_period: Duration,

    /// The number of service endpoint syncing operations that will be done concurrently by the
    /// endpointslice-mirroring-controller.
    #[arg(long, default_value_t = 5, value_parser = endpoint_syncs("mirroring-concurrent-service-endpoint-syncs"), help_heading = "Endpointslicemirroring controller flags")]
    pub mirroring_concurrent_service_endpoint_syncs: usize,

    /// The maximum number of endpoints that will be added to an EndpointSlice by the
    /// endpointslice-mirroring-controller.
    #[arg(long, default_value_t = 1000, value_parser = endpoints_per_slice("mirroring-max-endpoints-per-subset"), help_heading = "Endpointslicemirroring controller flags")]
    pub mirroring_max_endpoints_per_subset: usize,

    /// The length of EndpointSlice updates batching period for the
    /// endpointslice-mirroring-controller. Processing of EndpointSlice changes will be delayed by
    /// this duration to join them with potential upcoming updates.
    #[arg(long, default_value = "0s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Endpointslicemirroring controller flags")]
    pub mirroring_endpointslice_updates_batch_period: Duration,

    /// The number of resource quotas that are allowed to sync concurrently. Larger number = more
    /// responsive quota management, but more CPU (and network) load
    #[arg(
        long = "concurrent-resource-quota-syncs",
        default_value_t = 5,
        help_heading = "Resourcequota controller flags"
    )]
    pub concurrent_resourcequota_syncs: usize,

    /// The period for syncing quota usage status in the system
    #[arg(long, default_value = "5m0s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Resourcequota controller flags")]
    pub resource_quota_sync_period: Duration,

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

    /// Filename containing a PEM-encoded private RSA or ECDSA key used to sign service account
    /// tokens (rkcm: an ECDSA P-256 key in PKCS#8, as `rkcm up` keeps in `sa.key`).
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Serviceaccount controller flags"
    )]
    pub service_account_private_key_file: Option<PathBuf>,

    /// The period of time since the last usage of an legacy service account token before it can
    /// be deleted.
    #[arg(long, default_value = "8760h0m0s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Legacy service account token cleaner flags")]
    pub legacy_service_account_token_clean_up_period: Duration,

    /// The number of service account token objects that are allowed to sync concurrently.
    #[arg(
        long,
        default_value_t = 5,
        help_heading = "Serviceaccount controller flags"
    )]
    pub concurrent_serviceaccount_token_syncs: usize,

    /// CIDR Range for Services in cluster; node CIDRs are allocated outside it.
    #[arg(long, value_name = "CIDR", help_heading = "Generic flags")]
    pub service_cluster_ip_range: Option<String>,

    // ---- Node lifecycle and node IPAM controller flags
    #[command(flatten)]
    pub nodes: super::node_flags::NodeArgs,
    /// The signing controller's `--cluster-signing-*` flags.
    #[command(flatten)]
    pub csr_signing: super::csr_flags::CsrSigningArgs,

    /// The secure port's delegated authentication and authorization, and `--profiling`.
    #[command(flatten)]
    pub delegation: super::delegation_flags::DelegationArgs,

    /// kube-controller-manager flags rkcm accepts and ignores.
    #[command(flatten)]
    pub ignored: super::ignored_flags::IgnoredFlags,
}

/// A parser of an integer flag that kube bounds to `min..=max`, refusing others with kube's
/// message (`EndpointSliceControllerOptions.Validate`, `EndpointSliceMirroringControllerOptions`).
fn bounded(
    flag: &'static str,
    min: usize,
    max: usize,
) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    move |raw: &str| {
        let value: i64 = raw.trim().parse().map_err(|e| format!("{e}"))?;
        if value < min as i64 {
            return Err(format!(
                "{flag} must not be less than {min}, but got {value}"
            ));
        }
        if value > max as i64 {
            return Err(format!(
                "{flag} must not be more than {max}, but got {value}"
            ));
        }
        Ok(value as usize)
    }
}

/// Worker counts of the EndpointSlice controllers: 1 to 50.
fn endpoint_syncs(
    flag: &'static str,
) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    bounded(flag, 1, 50)
}

/// Endpoints per slice (or per mirrored subset): 1 to 1000.
fn endpoints_per_slice(
    flag: &'static str,
) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
    bounded(flag, 1, 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bounds and messages of `EndpointSliceControllerOptions.Validate` and
    /// `EndpointSliceMirroringControllerOptions.Validate`.
    #[test]
    fn endpoint_slice_flags_are_bounded_with_kubes_messages() {
        let syncs = endpoint_syncs("concurrent-service-endpoint-syncs");
        assert_eq!(syncs("5"), Ok(5));
        assert_eq!(
            syncs("0"),
            Err("concurrent-service-endpoint-syncs must not be less than 1, but got 0".into())
        );
        assert_eq!(
            syncs("51"),
            Err("concurrent-service-endpoint-syncs must not be more than 50, but got 51".into())
        );
        let per_slice = endpoints_per_slice("max-endpoints-per-slice");
        assert_eq!(per_slice("1000"), Ok(1000));
        assert_eq!(
            per_slice("1001"),
            Err("max-endpoints-per-slice must not be more than 1000, but got 1001".into())
        );
        assert!(per_slice("x").is_err());
    }
}
