//! `rkcm`: the Kubernetes controller manager in Rust, and a one-command local cluster.

use clap::Parser;

/// mimalloc instead of the system allocator: the control plane allocates and frees small objects
/// (JSON values, typed objects, buffers) from every worker thread, where glibc's per-thread
/// arenas spend more time and hold more memory. Built without the `mimalloc` feature, the binary
/// uses the system allocator, which heap profilers (heaptrack) can follow.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // kube-controller-manager reads `_` in flag names as `-`.
    let cli = rkcm::cli::Cli::parse_from(rkcm::manager::word_sep::normalize_flag_names(
        std::env::args_os(),
    ));
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
