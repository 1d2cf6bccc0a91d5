//! Log setup: `tracing` to stderr, with klog-style `-v` verbosity mapped onto levels.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. `RUST_LOG` wins over `-v` when set.
pub fn init(verbosity: u8) {
    let default = match verbosity {
        0 => "warn,rkcm=info",
        1 | 2 => "info",
        3 | 4 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
