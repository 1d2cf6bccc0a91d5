//! Command line: `rkcm up`, `rkcm controller-manager` (flags named as kube-controller-manager's).

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, Subcommand};
use rkcm_apiserver::allocators::{Ipv4Cidr, PortRange};

/// The Kubernetes controller manager in Rust, and a one-command local cluster.
#[derive(Debug, Parser)]
#[command(name = "rkcm", version, about, propagate_version = true)]
pub struct Cli {
    /// What to run.
    #[command(subcommand)]
    pub command: Command,

    /// Log verbosity, as klog's `-v` (0: warnings and rkcm's own info; 2: info; 4: debug).
    #[arg(
        short = 'v',
        long = "v",
        global = true,
        default_value_t = 0,
        value_name = "LEVEL"
    )]
    pub v: u8,
}

impl Cli {
    /// The requested log verbosity.
    pub fn verbosity(&self) -> u8 {
        self.v
    }
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a local cluster: API server, controller manager and simulated nodes, in one process.
    Up(UpArgs),
    /// Run the controllers against a cluster, as kube-controller-manager does.
    ControllerManager(Box<ManagerArgs>),
    /// Measure startup, the ReplicaSet and the Deployment controllers (figures in the README).
    #[command(subcommand)]
    Bench(crate::bench::BenchCommand),
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    rkcm_apimachinery::duration::parse_non_negative(s).map_err(|e| e.to_string())
}

/// `rkcm up` flags.
#[derive(Debug, Clone, Args)]
pub struct UpArgs {
    /// Number of simulated nodes to register; 0 runs no scheduler or kubelet stand-in either.
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,

    /// Where the cluster keeps its data, certificates, token and kubeconfig
    /// (default: $XDG_STATE_HOME/rkcm or ~/.local/state/rkcm).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Port the API server listens on (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    pub port: u16,

    /// Address the API server listens on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind_address: IpAddr,

    /// How long a simulated node takes to make a bound pod Running and Ready.
    #[arg(long, default_value = "1s", value_parser = parse_duration, value_name = "DURATION")]
    pub pod_ready_delay: Duration,

    /// Upper bound on how long a simulated node waits before removing a pod in graceful deletion
    /// (the pod's grace period when shorter).
    #[arg(long, default_value = "2s", value_parser = parse_duration, value_name = "DURATION")]
    pub pod_termination_max: Duration,

    /// Controllers to run: `*` for all, `foo` to enable, `-foo` to disable.
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,

    /// A CIDR notation IPv4 range from which to assign service cluster IPs; its first address
    /// is the `kubernetes` Service's.
    #[arg(long, default_value = rkcm_apiserver::allocators::DEFAULT_SERVICE_CLUSTER_IP_RANGE, value_name = "CIDR")]
    pub service_cluster_ip_range: Ipv4Cidr,

    /// A port range to reserve for services with NodePort visibility (inclusive at both ends).
    #[arg(long, default_value = rkcm_apiserver::allocators::DEFAULT_SERVICE_NODE_PORT_RANGE, value_name = "RANGE")]
    pub service_node_port_range: PortRange,
}

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

    /// Queries per second to use while talking with the API server, per controller.
    #[arg(long, default_value_t = 20.0, help_heading = "Generic flags")]
    pub kube_api_qps: f32,

    /// Burst to use while talking with the API server, per controller.
    #[arg(long, default_value_t = 30, help_heading = "Generic flags")]
    pub kube_api_burst: u32,

    /// The resync period in reflectors will be random between min-resync-period and 2*min-resync-period.
    #[arg(long, default_value = "12h0m0s", value_parser = parse_duration, value_name = "DURATION", help_heading = "Generic flags")]
    pub min_resync_period: Duration,

    // ---- Leader election
    /// Start a leader election client and gain leadership before executing the main loop.
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1, default_missing_value = "true",
          help_heading = "Generic flags")]
    pub leader_elect: bool,

    /// How long non-leader candidates wait after observing a leadership renewal before acquiring.
    #[arg(long, default_value = "15s", value_parser = parse_duration, value_name = "DURATION", help_heading = "Generic flags")]
    pub leader_elect_lease_duration: Duration,

    /// How long the acting leader retries refreshing leadership before giving up.
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION", help_heading = "Generic flags")]
    pub leader_elect_renew_deadline: Duration,

    /// How long clients wait between attempts to acquire and renew leadership.
    #[arg(long, default_value = "2s", value_parser = parse_duration, value_name = "DURATION", help_heading = "Generic flags")]
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
    /// The number of deployment objects that are allowed to sync concurrently.
    #[arg(
        long,
        default_value_t = 5,
        help_heading = "Deployment controller flags"
    )]
    pub concurrent_deployment_syncs: usize,

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
    #[arg(long, default_value = "5m0s", value_parser = parse_duration, value_name = "DURATION", help_heading = "Namespace controller flags")]
    pub namespace_sync_period: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manager(args: &[&str]) -> ManagerArgs {
        let mut argv = vec!["rkcm", "controller-manager"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).expect("flags parse").command {
            Command::ControllerManager(m) => *m,
            other => panic!("unexpected command {other:?}"),
        }
    }

    #[test]
    fn defaults_are_kube_controller_managers() {
        let m = manager(&[]);
        assert_eq!(m.controllers, ["*"]);
        assert_eq!(m.concurrent_replicaset_syncs, 5);
        assert_eq!(m.concurrent_rc_syncs, 5);
        assert_eq!(m.concurrent_deployment_syncs, 5);
        assert_eq!(m.concurrent_gc_syncs, 20);
        assert_eq!(m.concurrent_namespace_syncs, 10);
        assert_eq!(m.terminated_pod_gc_threshold, 12500);
        assert_eq!(m.kube_api_qps, 20.0);
        assert_eq!(m.kube_api_burst, 30);
        assert_eq!(m.min_resync_period, Duration::from_secs(12 * 3600));
        assert!(m.leader_elect);
        assert_eq!(m.leader_elect_lease_duration, Duration::from_secs(15));
        assert_eq!(m.leader_elect_renew_deadline, Duration::from_secs(10));
        assert_eq!(m.leader_elect_retry_period, Duration::from_secs(2));
        assert_eq!(m.leader_elect_resource_name, "kube-controller-manager");
        assert_eq!(m.leader_elect_resource_namespace, "kube-system");
        assert_eq!(m.secure_port, 10257);
    }

    #[test]
    fn go_style_flag_values_are_accepted() {
        let m = manager(&[
            "--leader-elect=false",
            "--controllers=*,-podgc",
            "--kube-api-qps=100",
            "--leader-elect-lease-duration=30s",
            "--terminated-pod-gc-threshold=-1",
        ]);
        assert!(!m.leader_elect);
        assert_eq!(m.controllers, ["*", "-podgc"]);
        assert_eq!(m.kube_api_qps, 100.0);
        assert_eq!(m.leader_elect_lease_duration, Duration::from_secs(30));
        assert_eq!(m.terminated_pod_gc_threshold, -1);
    }

    #[test]
    fn verbosity_takes_klog_form() {
        let cli = Cli::try_parse_from(["rkcm", "controller-manager", "-v=4"]).expect("parses");
        assert_eq!(cli.verbosity(), 4);
        let cli = Cli::try_parse_from(["rkcm", "-v", "2", "up"]).expect("parses");
        assert_eq!(cli.verbosity(), 2);
    }

    #[test]
    fn up_has_sensible_defaults() {
        let cli = Cli::try_parse_from(["rkcm", "up"]).expect("parses");
        let Command::Up(up) = cli.command else {
            panic!("expected up")
        };
        assert_eq!(up.nodes, 3);
        assert_eq!(up.port, 6443);
        assert_eq!(up.bind_address.to_string(), "127.0.0.1");
        assert_eq!(up.service_cluster_ip_range.to_string(), "10.96.0.0/12");
        assert_eq!(up.service_node_port_range.to_string(), "30000-32767");
    }

    #[test]
    fn service_ranges_are_parsed_and_bad_ones_refused() {
        let cli = Cli::try_parse_from([
            "rkcm",
            "up",
            "--service-cluster-ip-range=10.0.0.0/16",
            "--service-node-port-range=20000-20999",
        ])
        .expect("parses");
        let Command::Up(up) = cli.command else {
            panic!("expected up")
        };
        assert_eq!(up.service_cluster_ip_range.to_string(), "10.0.0.0/16");
        assert_eq!(up.service_node_port_range.to_string(), "20000-20999");
        let err = Cli::try_parse_from(["rkcm", "up", "--service-cluster-ip-range=fd00::/108"])
            .expect_err("IPv6 is not supported");
        assert!(
            err.to_string().contains("--service-cluster-ip-range"),
            "{err}"
        );
    }

    #[test]
    fn bad_durations_are_refused_with_the_flag_named() {
        let err = Cli::try_parse_from([
            "rkcm",
            "controller-manager",
            "--leader-elect-retry-period=2",
        ])
        .expect_err("missing unit");
        assert!(
            err.to_string().contains("--leader-elect-retry-period"),
            "{err}"
        );
    }

    #[test]
    fn negative_durations_are_refused_with_the_flag_named() {
        let err = Cli::try_parse_from(["rkcm", "up", "--pod-ready-delay=-1s"])
            .expect_err("negative delay");
        let message = err.to_string();
        assert!(message.contains("--pod-ready-delay"), "{message}");
        assert!(
            message.contains("duration \"-1s\" must not be negative"),
            "{message}"
        );
        let m = manager(&["--min-resync-period=1.5h", "--namespace-sync-period=90s"]);
        assert_eq!(m.min_resync_period, Duration::from_secs(5400));
        assert_eq!(m.namespace_sync_period, Duration::from_secs(90));
    }
}
