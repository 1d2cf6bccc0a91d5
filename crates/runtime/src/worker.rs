//! The worker loop every controller runs: get → sync → forget or retry with backoff → done.
//!
//! client-go controllers write this loop by hand (`processNextWorkItem` plus `handleErr`); here it is written once.

use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tokio::task::JoinSet;

use crate::workqueue::RateLimitingQueue;
use crate::Shutdown;

/// Runs `workers` (at least one) concurrent loops over `queue` until `shutdown` is cancelled or the queue is shut down.
///
/// Each loop takes an item, awaits `sync(item)`, then:
/// - `Ok`: [`forget`](RateLimitingQueue::forget)s the item's failures;
/// - `Err`: logs it and, unless the item has already been retried `max_retries` times, re-adds it with
///   [`add_rate_limited`](RateLimitingQueue::add_rate_limited); otherwise forgets it (it waits for the next event);
/// - a panic in `sync` is caught, logged and handled as an error, so the item is not lost and the worker survives;
///
/// and always marks the item [`done`](RateLimitingQueue::done). The queue guarantees a key is never synced by two
/// workers at once.
///
/// On `shutdown`, loops stop taking new items, the queue is shut down with drain (in-flight syncs finish), and
/// this returns once every loop has exited.
pub async fn run<T, F, Fut, E>(
    queue: RateLimitingQueue<T>,
    workers: usize,
    shutdown: Shutdown,
    max_retries: Option<u32>,
    sync: F,
) where
    T: Clone + Eq + Hash + Debug + Send + Sync + 'static,
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send,
    E: std::error::Error,
{
    let sync = Arc::new(sync);
    let mut set = JoinSet::new();
    for _ in 0..workers.max(1) {
        let queue = queue.clone();
        let shutdown = shutdown.clone();
        let sync = Arc::clone(&sync);
        set.spawn(async move {
            loop {
                let item = tokio::select! {
                    biased;
                    _ = shutdown.cancelled() => break,
                    item = queue.get() => match item {
                        Some(item) => item,
                        None => break,
                    },
                };
                process(&queue, max_retries, &*sync, item).await;
            }
        });
    }

    let workers_exited = async {
        tokio::select! {
            _ = shutdown.cancelled() => false,
            _ = async { while set.join_next().await.is_some() {} } => true,
        }
    };
    if !workers_exited.await {
        // Loops stop at their next `get`; wait for the syncs in flight, then for the loops.
        queue.shutdown_with_drain().await;
    }
    while let Some(res) = set.join_next().await {
        if let Err(e) = res {
            tracing::error!(queue = queue.name(), error = %e, "worker task failed");
        }
    }
}

/// `error: cause: cause…`, so that the API error behind a sync failure reaches the log.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

async fn process<T, F, Fut, E>(
    queue: &RateLimitingQueue<T>,
    max_retries: Option<u32>,
    sync: &F,
    item: T,
) where
    T: Clone + Eq + Hash + Debug + Send + Sync + 'static,
    F: Fn(T) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: std::error::Error,
{
    let outcome = AssertUnwindSafe(sync(item.clone())).catch_unwind().await;
    let error = match outcome {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(error_chain(&e)),
        Err(panic) => Some(format!("sync panicked: {}", panic_message(&panic))),
    };
    match error {
        None => queue.forget(&item),
        Some(error) => {
            let requeues = queue.num_requeues(&item);
            if max_retries.is_none_or(|max| requeues < max) {
                tracing::warn!(queue = queue.name(), key = ?item, requeues, %error, "sync failed, will retry");
                queue.add_rate_limited(item.clone());
            } else {
                tracing::warn!(queue = queue.name(), key = ?item, requeues, %error, "sync failed, dropping key out of the queue");
                queue.forget(&item);
            }
        }
    }
    queue.done(&item);
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("unknown panic payload")
}

#[cfg(test)]
mod tests {
    #[test]
    fn logged_errors_carry_their_causes() {
        #[derive(Debug, thiserror::Error)]
        #[error("failed to sync default/web")]
        struct Outer(#[source] std::io::Error);
        let e = Outer(std::io::Error::other("connection refused"));
        assert_eq!(
            error_chain(&e),
            "failed to sync default/web: connection refused"
        );
    }

    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use parking_lot::Mutex;

    use super::*;

    async fn eventually(what: &str, cond: impl Fn() -> bool) {
        tokio::time::timeout(Duration::from_secs(10), async {
            while !cond() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"));
    }

    #[tokio::test(start_paused = true)]
    async fn successful_syncs_forget_the_key() {
        let q: RateLimitingQueue<String> = RateLimitingQueue::new("worker-test");
        let shutdown = Shutdown::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let runner = {
            let seen = Arc::clone(&seen);
            tokio::spawn(run(
                q.clone(),
                2,
                shutdown.clone(),
                None,
                move |key: String| {
                    let seen = Arc::clone(&seen);
                    async move {
                        seen.lock().push(key);
                        Ok::<_, std::io::Error>(())
                    }
                },
            ))
        };
        q.add("a".into());
        q.add("b".into());
        eventually("both keys synced", || seen.lock().len() == 2).await;
        assert_eq!(q.num_requeues(&"a".to_string()), 0);
        shutdown.cancel();
        tokio::time::timeout(Duration::from_secs(10), runner)
            .await
            .expect("run did not return after shutdown")
            .expect("run task");
        assert!(q.is_shutting_down());
    }

    #[tokio::test(start_paused = true)]
    async fn failures_are_retried_with_backoff_up_to_max_retries() {
        let q: RateLimitingQueue<String> = RateLimitingQueue::new("worker-test");
        let shutdown = Shutdown::new();
        let calls = Arc::new(AtomicUsize::new(0));
        let runner = {
            let calls = Arc::clone(&calls);
            tokio::spawn(run(
                q.clone(),
                1,
                shutdown.clone(),
                Some(3),
                move |_key: String| {
                    let calls = Arc::clone(&calls);
                    async move {
                        calls.fetch_add(1, Ordering::SeqCst);
                        Err::<(), _>(std::io::Error::other("boom"))
                    }
                },
            ))
        };
        q.add("a".into());
        eventually("first try and three retries", || {
            calls.load(Ordering::SeqCst) == 4
        })
        .await;
        // After the last retry the key is forgotten and not queued again.
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(calls.load(Ordering::SeqCst), 4);
        assert_eq!(q.num_requeues(&"a".to_string()), 0);
        shutdown.cancel();
        runner.await.expect("run task");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failing_key_succeeds_on_retry_and_is_forgotten() {
        let q: RateLimitingQueue<String> = RateLimitingQueue::new("worker-test");
        let shutdown = Shutdown::new();
        let attempts: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let runner = {
            let attempts = Arc::clone(&attempts);
            tokio::spawn(run(
                q.clone(),
                2,
                shutdown.clone(),
                None,
                move |key: String| {
                    let attempts = Arc::clone(&attempts);
                    async move {
                        let mut attempts = attempts.lock();
                        let n = attempts.entry(key).or_default();
                        *n += 1;
                        if *n < 3 {
                            Err(std::io::Error::other("not yet"))
                        } else {
                            Ok(())
                        }
                    }
                },
            ))
        };
        q.add("a".into());
        eventually("third attempt", || attempts.lock().get("a") == Some(&3)).await;
        eventually("forgotten", || q.num_requeues(&"a".to_string()) == 0).await;
        shutdown.cancel();
        runner.await.expect("run task");
    }

    #[tokio::test(start_paused = true)]
    async fn a_panicking_sync_is_retried_and_the_worker_survives() {
        let q: RateLimitingQueue<String> = RateLimitingQueue::new("worker-test");
        let shutdown = Shutdown::new();
        let calls = Arc::new(AtomicUsize::new(0));
        let runner = {
            let calls = Arc::clone(&calls);
            tokio::spawn(run(
                q.clone(),
                1,
                shutdown.clone(),
                None,
                move |key: String| {
                    let calls = Arc::clone(&calls);
                    async move {
                        if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                            panic!("first sync of {key} panics");
                        }
                        Ok::<_, std::io::Error>(())
                    }
                },
            ))
        };
        q.add("a".into());
        eventually("retry after the panic", || {
            calls.load(Ordering::SeqCst) == 2
        })
        .await;
        shutdown.cancel();
        runner.await.expect("run task");
    }

    #[tokio::test]
    async fn shutdown_waits_for_in_flight_syncs() {
        let q: RateLimitingQueue<String> = RateLimitingQueue::new("worker-test");
        let shutdown = Shutdown::new();
        let (started_tx, started_rx) = tokio::sync::oneshot::channel::<()>();
        let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
        let finished = Arc::new(AtomicUsize::new(0));
        let started_tx = Mutex::new(Some(started_tx));
        let release_rx = Arc::new(tokio::sync::Mutex::new(Some(release_rx)));
        let runner = {
            let finished = Arc::clone(&finished);
            tokio::spawn(run(
                q.clone(),
                1,
                shutdown.clone(),
                None,
                move |_key: String| {
                    let finished = Arc::clone(&finished);
                    let started = started_tx.lock().take();
                    let release_rx = Arc::clone(&release_rx);
                    async move {
                        if let Some(tx) = started {
                            let _ = tx.send(());
                        }
                        if let Some(rx) = release_rx.lock().await.take() {
                            let _ = rx.await;
                        }
                        finished.fetch_add(1, Ordering::SeqCst);
                        Ok::<_, std::io::Error>(())
                    }
                },
            ))
        };
        q.add("slow".into());
        started_rx.await.expect("sync started");
        shutdown.cancel();
        tokio::task::yield_now().await;
        assert!(
            !runner.is_finished(),
            "run returned while a sync was in flight"
        );
        let _ = release_tx.send(());
        tokio::time::timeout(Duration::from_secs(10), runner)
            .await
            .expect("run did not return after the in-flight sync finished")
            .expect("run task");
        assert_eq!(finished.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn run_returns_when_the_queue_is_shut_down_elsewhere() {
        let q: RateLimitingQueue<String> = RateLimitingQueue::new("worker-test");
        let runner = tokio::spawn(run(
            q.clone(),
            3,
            Shutdown::new(),
            None,
            |_key: String| async { Ok::<_, std::io::Error>(()) },
        ));
        q.shutdown();
        tokio::time::timeout(Duration::from_secs(10), runner)
            .await
            .expect("run did not return after the queue shut down")
            .expect("run task");
    }
}
