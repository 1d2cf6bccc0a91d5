//! SIGINT/SIGTERM to a shutdown token: the only place the binary installs signal handlers.

use rkcm_runtime::Shutdown;

/// A token cancelled on the first SIGINT or SIGTERM. A second signal exits at once.
pub fn shutdown_on_signal() -> Shutdown {
    let shutdown = Shutdown::new();
    let token = shutdown.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutting down: finishing in-flight work (signal again to exit at once)");
        token.cancel();
        wait_for_signal().await;
        std::process::exit(130);
    });
    shutdown
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
