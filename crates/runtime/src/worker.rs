//! The worker loop every controller runs: get → sync → forget or retry with backoff → done.
//!
//! client-go controllers write this loop by hand (`processNextWorkItem` plus `handleErr`); here it is written once,
//! and an [`ErrorPolicy`] carries what differs between controllers: how often a key is retried and how loudly.

use std::fmt::{Debug, Display};
use std::future::Future;
use std::hash::Hash;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use tokio::task::JoinSet;
use tracing::Level;

use crate::api_error::Chain;
use crate::workqueue::RateLimitingQueue;
use crate::Shutdown;

/// What a controller's worker loop does with a key whose sync failed, and how loudly it says so: the `handleErr`
/// (or `processNextWorkItem`) of a kube controller.
///
/// Levels follow klog: `V(2)` is [`Level::DEBUG`], `V(4)` and above [`Level::TRACE`], `utilruntime.HandleError`
/// [`Level::ERROR`]. Each failure is one line with the key and the error, an API error as its `Status` message.
pub struct ErrorPolicy<E> {
    max_retries: Option<u32>,
    requeue_level: Level,
    drop_level: Level,
    level_of: Option<fn(&E) -> Option<Level>>,
}

impl<E> Clone for ErrorPolicy<E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for ErrorPolicy<E> {}

impl<E> Debug for ErrorPolicy<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ErrorPolicy")
            .field("max_retries", &self.max_retries)
            .field("requeue_level", &self.requeue_level)
            .field("drop_level", &self.drop_level)
            .finish_non_exhaustive()
    }
}

impl<E> ErrorPolicy<E> {
    /// Retried with backoff until it succeeds, each failure logged as an error (`utilruntime.HandleError`): the
    /// ReplicaSet, namespace and garbage collector controllers.
    pub fn handle_error() -> Self {
        Self::retry_forever(Level::ERROR)
    }

    /// Retried with backoff until it succeeds, each failure logged at `level`.
    pub fn retry_forever(level: Level) -> Self {
        Self {
            max_retries: None,
            requeue_level: level,
            drop_level: level,
            level_of: None,
        }
    }

    /// Retried at most `max_retries` times, each failure logged at `V(2)` (debug); dropping the key out of the
    /// queue is an error (`utilruntime.HandleError`): the Deployment controller's `handleErr`.
    pub fn max_retries(max_retries: u32) -> Self {
        Self {
            max_retries: Some(max_retries),
            requeue_level: Level::DEBUG,
            drop_level: Level::ERROR,
            level_of: None,
        }
    }

    /// Logs the failures for which `level_of` gives a level at that level instead (kube's garbage collector, say,
    /// logs a not-yet-observed owner at `V(5)`).
    pub fn with_level_of(mut self, level_of: fn(&E) -> Option<Level>) -> Self {
        self.level_of = Some(level_of);
        self
    }

    /// Retries before the key is dropped; `None`: retried until it succeeds.
    pub fn retries(&self) -> Option<u32> {
        self.max_retries
    }

    /// Whether a key that failed `requeues` times already is retried again.
    pub fn retries_after(&self, requeues: u32) -> bool {
        self.max_retries.is_none_or(|max| requeues < max)
    }

    /// The level of the line logged for `error` (`None`: a panic) when the key is requeued (`retried`) or
    /// dropped.
    pub fn level(&self, error: Option<&E>, retried: bool) -> Level {
        let chosen = error.and_then(|e| self.level_of.and_then(|f| f(e)));
        match (chosen, retried) {
            (Some(level), _) => level,
            // A panic is a bug: always loud.
            (None, _) if error.is_none() => Level::ERROR,
            (None, true) => self.requeue_level,
            (None, false) => self.drop_level,
        }
    }
}

/// Runs `workers` (at least one) concurrent loops over `queue` until `shutdown` is cancelled or the queue is shut down.
///
/// Each loop takes an item, awaits `sync(item)`, then:
/// - `Ok`: [`forget`](RateLimitingQueue::forget)s the item's failures;
/// - `Err`: unless the item has already been retried as often as `policy` allows, re-adds it with
///   [`add_rate_limited`](RateLimitingQueue::add_rate_limited); otherwise forgets it (it waits for the next event);
///   either way logs one line at the level `policy` gives;
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
    policy: ErrorPolicy<E>,
    sync: F,
) where
    T: Clone + Eq + Hash + Debug + Display + Send + Sync + 'static,
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), E>> + Send,
    E: std::error::Error + 'static,
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
                process(&queue, policy, &*sync, item).await;
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

/// How one failed sync is reported.
struct Failure<'a> {
    queue: &'a str,
    key: &'a dyn Display,
    requeues: u32,
    error: String,
    retried: bool,
}

/// Logs `failure` at `level`: one line with the key and the error.
fn log_failure(level: Level, failure: &Failure<'_>) {
    let Failure {
        queue,
        key,
        requeues,
        error,
        retried,
    } = failure;
    let message = if *retried {
        "error syncing, will retry"
    } else {
        "error syncing, dropping the key out of the queue"
    };
    macro_rules! at {
        ($lvl:expr) => {
            tracing::event!($lvl, queue, key = %key, requeues, error = %error, "{message}")
        };
    }
    match level {
        Level::ERROR => at!(Level::ERROR),
        Level::WARN => at!(Level::WARN),
        Level::INFO => at!(Level::INFO),
        Level::DEBUG => at!(Level::DEBUG),
        _ => at!(Level::TRACE),
    }
}

async fn process<T, F, Fut, E>(
    queue: &RateLimitingQueue<T>,
    policy: ErrorPolicy<E>,
    sync: &F,
    item: T,
) where
    T: Clone + Eq + Hash + Debug + Display + Send + Sync + 'static,
    F: Fn(T) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: std::error::Error + 'static,
{
    let outcome = AssertUnwindSafe(sync(item.clone())).catch_unwind().await;
    let (error, text) = match outcome {
        Ok(Ok(())) => {
            queue.forget(&item);
            queue.done(&item);
            return;
        }
        Ok(Err(e)) => {
            let text = Chain(&e).to_string();
            (Some(e), text)
        }
        Err(panic) => (None, format!("sync panicked: {}", panic_message(&panic))),
    };
    let requeues = queue.num_requeues(&item);
    let retried = policy.retries_after(requeues);
    log_failure(
        policy.level(error.as_ref(), retried),
        &Failure {
            queue: queue.name(),
            key: &item,
            requeues,
            error: text,
            retried,
        },
    );
    if retried {
        queue.add_rate_limited(item.clone());
    } else {
        queue.forget(&item);
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
    fn handle_error_retries_forever_and_logs_every_failure_as_an_error() {
        let policy = ErrorPolicy::<std::io::Error>::handle_error();
        let err = std::io::Error::other("conflict");
        assert!(policy.retries_after(u32::MAX - 1));
        assert_eq!(policy.retries(), None);
        assert_eq!(policy.level(Some(&err), true), Level::ERROR);
    }

    #[test]
    fn max_retries_logs_requeues_at_debug_and_the_drop_as_an_error() {
        // The Deployment controller's handleErr: V(2) below maxRetries, HandleError when dropping.
        let policy = ErrorPolicy::<std::io::Error>::max_retries(15);
        let err = std::io::Error::other("conflict");
        assert!(policy.retries_after(14));
        assert!(!policy.retries_after(15));
        assert_eq!(policy.level(Some(&err), true), Level::DEBUG);
        assert_eq!(policy.level(Some(&err), false), Level::ERROR);
    }

    #[test]
    fn a_level_chosen_for_an_error_wins_and_a_panic_is_always_an_error() {
        let policy = ErrorPolicy::<std::io::Error>::handle_error()
            .with_level_of(|e| (e.kind() == std::io::ErrorKind::NotFound).then_some(Level::TRACE));
        let quiet = std::io::Error::from(std::io::ErrorKind::NotFound);
        let loud = std::io::Error::other("boom");
        assert_eq!(policy.level(Some(&quiet), true), Level::TRACE);
        assert_eq!(policy.level(Some(&loud), true), Level::ERROR);
        let debug = ErrorPolicy::<std::io::Error>::retry_forever(Level::DEBUG);
        assert_eq!(debug.level(None, true), Level::ERROR);
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
                ErrorPolicy::handle_error(),
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
                ErrorPolicy::max_retries(3),
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
                ErrorPolicy::handle_error(),
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
                ErrorPolicy::handle_error(),
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
                ErrorPolicy::handle_error(),
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
            ErrorPolicy::handle_error(),
            |_key: String| async { Ok::<_, std::io::Error>(()) },
        ));
        q.shutdown();
        tokio::time::timeout(Duration::from_secs(10), runner)
            .await
            .expect("run did not return after the queue shut down")
            .expect("run task");
    }
}
