//! Test support shared by the integration tests: a scriptable fake API server.

#![allow(dead_code)] // each test binary uses a different part

pub mod fake_leases;
pub mod fake_pods;

use std::time::Duration;

/// Polls `cond` every 10 ms until it holds; panics with `what` after 10 s.
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
