//! Command line: the subcommands, each with the flags its own module defines.

use clap::{Parser, Subcommand};

use crate::bench::BenchCommand;
use crate::manager::ManagerArgs;
use crate::up::UpArgs;

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
    Up(Box<UpArgs>),
    /// Run the controllers against a cluster, as kube-controller-manager does.
    ControllerManager(Box<ManagerArgs>),
    /// Measure rkcm: the scale suite (`bench all`), startup and single controllers (figures in
    /// docs/benchmarks.md).
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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
        assert_eq!(m.concurrent_statefulset_syncs, 5);
        assert_eq!(
            manager(&["--concurrent-statefulset-syncs=7"]).concurrent_statefulset_syncs,
            7
        );
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
        assert_eq!(manager(&["--kube-api-qps", "-1"]).kube_api_qps, -1.0);
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
    fn bench_all_takes_a_size_and_output_files() {
        let cli = Cli::try_parse_from([
            "rkcm",
            "bench",
            "all",
            "--size=large",
            "--scenarios=density,hold",
            "--json=run.json",
            "--svg=run.svg",
        ])
        .expect("parses");
        let Command::Bench(crate::bench::BenchCommand::All(args)) = cli.command else {
            panic!("expected bench all")
        };
        assert_eq!(args.size, crate::bench::Size::Large);
        assert_eq!(args.scenarios.len(), 2);
        assert_eq!(args.json.as_deref(), Some(std::path::Path::new("run.json")));
        assert_eq!(args.svg.as_deref(), Some(std::path::Path::new("run.svg")));
        assert!(Cli::try_parse_from(["rkcm", "bench", "all", "--size=huge"]).is_err());
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
}
