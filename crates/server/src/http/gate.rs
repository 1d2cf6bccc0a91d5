//! A handler for filter tests whose requests wait inside it until the test lets them through.

use std::sync::Arc;

use axum::Router;
use tokio::sync::Semaphore;

/// Counts the requests that entered its handler and holds each until [`Gate::open`] lets one
/// through; a request let through answers `served`.
#[derive(Clone)]
pub(crate) struct Gate {
    entered: Arc<Semaphore>,
    pass: Arc<Semaphore>,
}

impl Default for Gate {
    fn default() -> Self {
        Self {
            entered: Arc::new(Semaphore::new(0)),
            pass: Arc::new(Semaphore::new(0)),
        }
    }
}

impl Gate {
    /// A router that sends every request to the gate's handler, for the filter under test to
    /// be layered on.
    pub(crate) fn router(&self) -> Router {
        let gate = self.clone();
        Router::new().fallback(move || {
            let gate = gate.clone();
            async move {
                gate.entered.add_permits(1);
                if let Ok(pass) = gate.pass.acquire().await {
                    pass.forget();
                }
                "served"
            }
        })
    }

    /// Waits until one more request has entered the handler.
    pub(crate) async fn entered(&self) {
        if let Ok(entered) = self.entered.acquire().await {
            entered.forget();
        }
    }

    /// Lets `n` requests through.
    pub(crate) fn open(&self, n: usize) {
        self.pass.add_permits(n);
    }
}
