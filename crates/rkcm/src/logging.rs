//! Log setup: `tracing` to stderr, with klog-style `-v` verbosity mapped onto levels.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. `RUST_LOG` wins over `-v` when set.
///
/// At `-v=0` only warnings and errors are logged (`rkcm up` prints its own progress lines);
/// `-v=2` adds what each component starts and syncs, `-v=4` debug details.
pub fn init(verbosity: u8) {
    let default = match verbosity {
        0 | 1 => "warn",
        2 | 3 => "info",
        4 | 5 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init();
}
