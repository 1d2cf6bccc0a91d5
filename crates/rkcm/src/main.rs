//! `rkcm`: the Kubernetes controller manager in Rust, and a one-command local cluster.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = rkcm::cli::Cli::parse();
    rkcm::logging::init(cli.verbosity());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(rkcm::run(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
