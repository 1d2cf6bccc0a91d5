//! Warnings for the client of the request being served (kube's `warning.AddWarning(ctx, ...)`
//! and the recorder of `filters/warning.go`): code running for a request — an admission
//! webhook's answer — adds warnings; the HTTP layer sends each once as a `Warning: 299` header.
//!
//! Outside [`scope`] (tests calling plugins directly, server-internal writes) warnings are
//! dropped.

use std::future::Future;
use std::sync::Arc;

use parking_lot::Mutex;

tokio::task_local! {
    static RECORDER: Arc<Mutex<Vec<String>>>;
}

/// Runs `f`, returning what it returned and the warnings it added, each once, in order.
pub async fn scope<F: Future>(f: F) -> (F::Output, Vec<String>) {
    let recorder = Arc::new(Mutex::new(Vec::new()));
    let out = RECORDER.scope(Arc::clone(&recorder), f).await;
    let warnings = std::mem::take(&mut *recorder.lock());
    (out, warnings)
}

/// Adds `warning` for the client of the request being served; empty and repeated warnings
/// are dropped.
pub fn add(warning: impl Into<String>) {
    let warning = warning.into();
    if warning.trim().is_empty() {
        return;
    }
    let _ = RECORDER.try_with(|r| {
        let mut warnings = r.lock();
        if !warnings.contains(&warning) {
            warnings.push(warning);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn warnings_are_kept_once_inside_the_scope_only() {
        add("dropped");
        let ((), warnings) = scope(async {
            add("a");
            add("b");
            add("a");
            add(" ");
        })
        .await;
        assert_eq!(warnings, ["a", "b"]);
    }
}
