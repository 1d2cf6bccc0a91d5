//! The `rkcm` binary's library: command line, controller manager process, `rkcm up`, and
//! [`testenv`], the same control plane in-process for Rust tests.

pub mod admission_args;
pub mod audit_args;
pub mod bench;
pub mod cli;
pub mod client_identity;
pub mod etcd_args;
pub mod identities;
pub mod logging;
pub mod manager;
pub mod serving;
pub mod signals;
pub mod testenv;
pub mod up;

use cli::{Cli, Command};

/// Runs the subcommand the command line asked for, until it finishes or a signal stops it.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let shutdown = signals::shutdown_on_signal();
    match cli.command {
        Command::Up(args) => up::run(*args, shutdown).await,
        Command::ControllerManager(args) => manager::run_from_flags(*args, shutdown).await,
        // A benchmark stops at the first signal: dropping it kills the `rkcm up` children it
        // started, where finishing the run would take minutes.
        Command::Bench(scenario) => tokio::select! {
            result = bench::run(scenario) => result,
            () = shutdown.cancelled() => Err(anyhow::anyhow!("benchmark interrupted by a signal")),
        },
    }
}
