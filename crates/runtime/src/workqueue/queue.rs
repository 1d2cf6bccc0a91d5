//! The de-duplicating queue core: dirty and processing sets, `add`, `get`, `done`, `len` and shutdown
//! (client-go `util/workqueue/queue.go`).

use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::sync::{Arc, Weak};
use std::time::Instant as StdInstant;

use parking_lot::Mutex;
use tokio::sync::Notify;

use super::delaying::Waiting;
use super::rate_limiter::{default_controller_rate_limiter, RateLimiter};
use crate::metrics::{self, QueueMetricHandles};

/// A rate-limited, delaying, de-duplicating work queue of keys, as client-go's `RateLimitingInterface`.
///
/// Contract, shared by every clone (clones are handles to one queue):
/// - an item added several times before a worker takes it is processed once (`add` de-duplicates);
/// - an item is never handed to two workers at once: between [`get`](Self::get) and [`done`](Self::done)
///   it is *processing*, and an `add` of it in that time is remembered and served again after `done`;
/// - after [`shutdown`](Self::shutdown), adds are ignored, `get` still hands out what is queued and then
///   returns `None`; items waiting for a delay are dropped.
///
/// Every item returned by `get` must be passed to `done`, or it is never processed again and
/// [`shutdown_with_drain`](Self::shutdown_with_drain) waits forever.
pub struct RateLimitingQueue<T: Clone + Eq + Hash + Send + Sync + 'static> {
    pub(super) shared: Arc<Shared<T>>,
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue")
            .field("name", &self.shared.name)
            .field("len", &self.len())
            .finish()
    }
}

pub(super) struct Shared<T> {
    pub(super) name: String,
    pub(super) state: Mutex<State<T>>,
    /// Wakes a `get` waiting for an item (or for an earlier delay deadline); `notify_waiters` on shutdown.
    pub(super) item_ready: Notify,
    /// Wakes `shutdown_with_drain` when the processing set may have become empty.
    drained: Notify,
    pub(super) rate_limiter: Box<dyn RateLimiter<T>>,
}

pub(super) struct State<T> {
    /// Order of work. Invariant: every element is in `dirty` and not in `processing`.
    queue: VecDeque<T>,
    /// Items that need processing (queued, or re-added while processing).
    dirty: HashSet<T>,
    /// Items handed out by `get` and not yet `done`.
    processing: HashSet<T>,
    pub(super) shutting_down: bool,
    drain: bool,
    /// Items added with a delay, earliest first; entries whose `seq` no longer matches `waiting_index` are stale.
    pub(super) waiting: BinaryHeap<Waiting<T>>,
    /// The live waiting entry of each item: its ready time and sequence number.
    pub(super) waiting_index: HashMap<T, (tokio::time::Instant, u64)>,
    pub(super) waiting_seq: u64,
    pub(super) metrics: QueueMetrics<T>,
}

/// client-go `queueMetrics`: when each item was added and when its processing started.
pub(super) struct QueueMetrics<T> {
    pub(super) handles: QueueMetricHandles,
    add_times: HashMap<T, StdInstant>,
    processing_start_times: HashMap<T, StdInstant>,
}

impl<T: Clone + Eq + Hash> QueueMetrics<T> {
    fn add(&mut self, item: &T) {
        self.handles.adds.inc();
        self.handles.depth.inc();
        self.add_times
            .entry(item.clone())
            .or_insert_with(StdInstant::now);
    }

    fn get(&mut self, item: &T) {
        self.handles.depth.dec();
        let now = StdInstant::now();
        if let Some(added) = self.add_times.remove(item) {
            self.handles
                .latency
                .observe(now.duration_since(added).as_secs_f64());
        }
        self.processing_start_times.insert(item.clone(), now);
    }

    fn done(&mut self, item: &T) {
        if let Some(started) = self.processing_start_times.remove(item) {
            self.handles
                .work_duration
                .observe(started.elapsed().as_secs_f64());
        }
    }

    fn update_unfinished_work(&self) {
        let now = StdInstant::now();
        let mut total = 0.0;
        let mut longest = 0.0f64;
        for started in self.processing_start_times.values() {
            let secs = now.duration_since(*started).as_secs_f64();
            total += secs;
            longest = longest.max(secs);
        }
        self.handles.unfinished.set(total);
        self.handles.longest_running.set(longest);
    }
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> RateLimitingQueue<T> {
    /// A queue named `name` (the `name` label of its metrics) using `rate_limiter` for `add_rate_limited`.
    pub fn with_rate_limiter(name: &str, rate_limiter: Box<dyn RateLimiter<T>>) -> Self {
        let shared = Arc::new(Shared {
            name: name.to_string(),
            state: Mutex::new(State {
                queue: VecDeque::new(),
                dirty: HashSet::new(),
                processing: HashSet::new(),
                shutting_down: false,
                drain: false,
                waiting: BinaryHeap::new(),
                waiting_index: HashMap::new(),
                waiting_seq: 0,
                metrics: QueueMetrics {
                    handles: QueueMetricHandles::for_queue(name),
                    add_times: HashMap::new(),
                    processing_start_times: HashMap::new(),
                },
            }),
            item_ready: Notify::new(),
            drained: Notify::new(),
            rate_limiter,
        });
        let weak: Weak<Shared<T>> = Arc::downgrade(&shared);
        metrics::on_scrape(move || match weak.upgrade() {
            Some(shared) => {
                let state = shared.state.lock();
                if !state.shutting_down {
                    state.metrics.update_unfinished_work();
                }
                true
            }
            None => false,
        });
        Self { shared }
    }

    /// A queue named `name` with client-go's default controller rate limiter.
    pub fn new(name: &str) -> Self {
        Self::with_rate_limiter(name, default_controller_rate_limiter())
    }

    /// The queue's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// Marks `item` as needing processing. Ignored after shutdown; a no-op if it is already queued.
    pub fn add(&self, item: T) {
        let queued = add_locked(&mut self.shared.state.lock(), item);
        if queued {
            self.shared.item_ready.notify_one();
        }
    }

    /// Waits for an item to process and marks it processing; `None` once the queue is shut down and empty.
    ///
    /// Cancel-safe: dropping the future before it completes takes nothing from the queue.
    pub async fn get(&self) -> Option<T> {
        loop {
            let notified = self.shared.item_ready.notified();
            tokio::pin!(notified);
            // Register before looking at the state, so that an add or shutdown in between is not missed.
            notified.as_mut().enable();
            let next_deadline = {
                let mut state = self.shared.state.lock();
                super::delaying::promote_ready(&mut state, tokio::time::Instant::now());
                if let Some(item) = state.queue.pop_front() {
                    state.metrics.get(&item);
                    state.processing.insert(item.clone());
                    state.dirty.remove(&item);
                    let more = !state.queue.is_empty();
                    drop(state);
                    if more {
                        // Pass the baton: another idle worker may take the next item.
                        self.shared.item_ready.notify_one();
                    }
                    return Some(item);
                }
                if state.shutting_down {
                    return None;
                }
                super::delaying::next_deadline(&state)
            };
            match next_deadline {
                Some(deadline) => {
                    tokio::select! {
                        _ = &mut notified => {}
                        _ = tokio::time::sleep_until(deadline) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Marks `item` as done processing; if it was added again meanwhile, it is queued again.
    pub fn done(&self, item: &T) {
        let mut state = self.shared.state.lock();
        state.metrics.done(item);
        let was_processing = state.processing.remove(item);
        // An item that was not processing is either queued already or unknown: never queue it twice.
        let requeued = was_processing && state.dirty.contains(item);
        if requeued {
            state.queue.push_back(item.clone());
        }
        let idle = state.processing.is_empty();
        drop(state);
        if requeued {
            self.shared.item_ready.notify_one();
        }
        // A drain waits for processing to end, whether or not the item went back to the queue.
        if idle {
            self.shared.drained.notify_waiters();
        }
    }

    /// The number of items waiting to be handed out (not counting items being processed or waiting for a delay).
    pub fn len(&self) -> usize {
        let mut state = self.shared.state.lock();
        super::delaying::promote_ready(&mut state, tokio::time::Instant::now());
        state.queue.len()
    }

    /// Whether [`len`](Self::len) is zero.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops accepting items and tells idle workers to exit; does not wait for in-flight work. Calling it
    /// during [`shutdown_with_drain`](Self::shutdown_with_drain) makes that return at once.
    pub fn shutdown(&self) {
        {
            let mut state = self.shared.state.lock();
            state.drain = false;
            state.shutting_down = true;
        }
        self.shared.item_ready.notify_waiters();
        self.shared.drained.notify_waiters();
    }

    /// Like [`shutdown`](Self::shutdown), then waits until every item being processed is `done`
    /// (or until `shutdown` is called).
    pub async fn shutdown_with_drain(&self) {
        {
            let mut state = self.shared.state.lock();
            state.drain = true;
            state.shutting_down = true;
        }
        self.shared.item_ready.notify_waiters();
        loop {
            let drained = self.shared.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            {
                let state = self.shared.state.lock();
                if state.processing.is_empty() || !state.drain {
                    return;
                }
            }
            drained.await;
        }
    }

    /// Whether a shutdown has begun.
    pub fn is_shutting_down(&self) -> bool {
        self.shared.state.lock().shutting_down
    }
}

/// Adds `item` unless shutting down or already dirty; returns whether it was pushed onto the queue.
pub(super) fn add_locked<T: Clone + Eq + Hash>(state: &mut State<T>, item: T) -> bool {
    if state.shutting_down || state.dirty.contains(&item) {
        return false;
    }
    state.metrics.add(&item);
    state.dirty.insert(item.clone());
    if state.processing.contains(&item) {
        return false;
    }
    state.queue.push_back(item);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn queue() -> RateLimitingQueue<String> {
        RateLimitingQueue::new("test")
    }

    async fn within<F: std::future::Future>(what: &str, f: F) -> F::Output {
        tokio::time::timeout(Duration::from_secs(10), f)
            .await
            .unwrap_or_else(|_| panic!("{what} did not finish: the queue likely deadlocked"))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn basic_many_producers_and_consumers_process_everything() {
        let q: RateLimitingQueue<usize> = RateLimitingQueue::new("test");
        let producers = 50;
        let mut tasks = tokio::task::JoinSet::new();
        for i in 0..producers {
            let q = q.clone();
            tasks.spawn(async move {
                for j in 0..50 {
                    q.add(i);
                    if j % 10 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            });
        }
        let processed = Arc::new(AtomicUsize::new(0));
        let mut consumers = tokio::task::JoinSet::new();
        for _ in 0..10 {
            let q = q.clone();
            let processed = Arc::clone(&processed);
            consumers.spawn(async move {
                while let Some(item) = q.get().await {
                    processed.fetch_add(1, Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    q.done(&item);
                }
            });
        }
        within("producers", async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        within("drain", q.shutdown_with_drain()).await;
        within("consumers", async {
            while consumers.join_next().await.is_some() {}
        })
        .await;
        assert!(processed.load(Ordering::SeqCst) >= producers);
        assert_eq!(q.len(), 0);
    }

    #[tokio::test]
    async fn drain_ends_when_the_last_processing_item_is_requeued_by_done() {
        let q = queue();
        q.add("a".to_string());
        let item = q.get().await.expect("an item");
        // Re-added while processing: `done` puts it back on the queue.
        q.add("a".to_string());
        let drain = {
            let q = q.clone();
            tokio::spawn(async move { q.shutdown_with_drain().await })
        };
        tokio::task::yield_now().await;
        q.done(&item);
        within("drain after done requeued the item", drain)
            .await
            .expect("drain task");
    }

    #[tokio::test]
    async fn len_counts_distinct_items() {
        let q = queue();
        q.add("foo".into());
        assert_eq!(q.len(), 1);
        q.add("bar".into());
        assert_eq!(q.len(), 2);
        q.add("foo".into());
        assert_eq!(q.len(), 2, "foo is de-duplicated");
    }

    #[tokio::test]
    async fn reinsert_while_processing_is_served_after_done() {
        let q = queue();
        q.add("foo".into());
        let item = q.get().await.expect("an item");
        q.add(item.clone());
        assert_eq!(q.len(), 0, "a processing item is not handed out twice");
        q.done(&item);
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await.as_deref(), Some("foo"));
    }

    #[tokio::test]
    async fn add_while_processing_is_collapsed_into_one_more_run() {
        let q = queue();
        q.add("foo".into());
        let item = q.get().await.expect("an item");
        q.add("foo".into());
        q.add("foo".into());
        q.done(&item);
        assert_eq!(q.len(), 1);
        let again = q.get().await.expect("foo again");
        q.done(&again);
        assert_eq!(q.len(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_item_is_never_processed_by_two_workers_at_once() {
        let q: RateLimitingQueue<u32> = RateLimitingQueue::new("test");
        let in_flight: Arc<Mutex<HashSet<u32>>> = Arc::default();
        let runs = Arc::new(AtomicUsize::new(0));
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..4 {
            let (q, in_flight, runs) = (q.clone(), Arc::clone(&in_flight), Arc::clone(&runs));
            workers.spawn(async move {
                while let Some(item) = q.get().await {
                    assert!(
                        in_flight.lock().insert(item),
                        "item {item} handed to two workers"
                    );
                    runs.fetch_add(1, Ordering::SeqCst);
                    if item % 2 == 0 && runs.load(Ordering::SeqCst) < 200 {
                        q.add(item); // re-add while processing
                    }
                    tokio::task::yield_now().await;
                    in_flight.lock().remove(&item);
                    q.done(&item);
                }
            });
        }
        for round in 0..20 {
            for item in 0..4 {
                q.add(item + round % 2);
            }
            tokio::task::yield_now().await;
        }
        within("drain", q.shutdown_with_drain()).await;
        within("workers", async {
            while let Some(res) = workers.join_next().await {
                res.expect("worker panicked");
            }
        })
        .await;
    }

    #[tokio::test]
    async fn get_waits_for_an_add() {
        let q = queue();
        let getter = {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        };
        tokio::task::yield_now().await;
        q.add("late".into());
        let got = within("get", getter).await.expect("getter task");
        assert_eq!(got.as_deref(), Some("late"));
    }

    #[tokio::test]
    async fn shutdown_lets_queued_items_out_then_returns_none() {
        let q = queue();
        q.add("a".into());
        q.shutdown();
        q.add("b".into());
        assert!(q.is_shutting_down());
        assert_eq!(q.get().await.as_deref(), Some("a"));
        assert_eq!(q.get().await, None);
    }

    #[tokio::test]
    async fn shutdown_wakes_idle_getters() {
        let q = queue();
        let getters: Vec<_> = (0..3)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move { q.get().await })
            })
            .collect();
        tokio::task::yield_now().await;
        q.shutdown();
        for g in getters {
            assert_eq!(within("getter", g).await.expect("getter task"), None);
        }
    }

    #[tokio::test]
    async fn shutdown_with_drain_waits_for_processing_items() {
        let q = queue();
        q.add("foo".into());
        q.add("bar".into());
        let first = q.get().await.expect("first");
        let second = q.get().await.expect("second");
        let drain = {
            let q = q.clone();
            tokio::spawn(async move { q.shutdown_with_drain().await })
        };
        tokio::task::yield_now().await;
        assert!(
            !drain.is_finished(),
            "drain returned with items still processing"
        );
        q.done(&first);
        tokio::task::yield_now().await;
        assert!(
            !drain.is_finished(),
            "drain returned with an item still processing"
        );
        q.done(&second);
        within("drain", drain).await.expect("drain task");
        assert_eq!(q.get().await, None);
    }

    #[tokio::test]
    async fn shutdown_without_drain_does_not_wait() {
        let q = queue();
        q.add("foo".into());
        let _item = q.get().await.expect("item");
        q.shutdown();
        assert!(q.is_shutting_down());
        assert_eq!(q.get().await, None);
    }

    #[tokio::test]
    async fn shutdown_forces_a_pending_drain_to_return() {
        let q = queue();
        q.add("foo".into());
        let _item = q.get().await.expect("item");
        let drain = {
            let q = q.clone();
            tokio::spawn(async move { q.shutdown_with_drain().await })
        };
        tokio::task::yield_now().await;
        assert!(!drain.is_finished());
        q.shutdown();
        within("drain", drain).await.expect("drain task");
    }

    #[tokio::test]
    async fn drain_serves_an_item_made_dirty_while_processing() {
        let q = queue();
        q.add("foo".into());
        let item = q.get().await.expect("item");
        q.add("foo".into());
        let drain = {
            let q = q.clone();
            tokio::spawn(async move { q.shutdown_with_drain().await })
        };
        tokio::task::yield_now().await;
        q.done(&item);
        let again = q.get().await.expect("the dirty item is queued again");
        assert_eq!(again, "foo");
        tokio::task::yield_now().await;
        assert!(!drain.is_finished());
        q.done(&again);
        within("drain", drain).await.expect("drain task");
    }

    #[tokio::test]
    async fn done_for_an_item_not_processing_does_not_queue_it_twice() {
        let q = queue();
        q.add("foo".into());
        q.done(&"foo".to_string());
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await.as_deref(), Some("foo"));
        q.shutdown();
        assert_eq!(q.get().await, None);
    }

    #[tokio::test]
    async fn queue_operations_are_reported_as_workqueue_metrics() {
        let q: RateLimitingQueue<String> = RateLimitingQueue::new("queue-metrics-test");
        q.add("a".into());
        q.add("b".into());
        q.add("a".into());
        q.add_after("c".into(), Duration::from_secs(3600));
        let text = crate::metrics::encode_text();
        let has = |line: &str| text.lines().any(|l| l == line);
        assert!(
            has("workqueue_adds_total{name=\"queue-metrics-test\"} 2"),
            "{text}"
        );
        assert!(
            has("workqueue_depth{name=\"queue-metrics-test\"} 2"),
            "{text}"
        );
        assert!(
            has("workqueue_retries_total{name=\"queue-metrics-test\"} 1"),
            "{text}"
        );

        let item = q.get().await.expect("an item");
        let text = crate::metrics::encode_text();
        let has = |line: &str| text.lines().any(|l| l == line);
        assert!(
            has("workqueue_depth{name=\"queue-metrics-test\"} 1"),
            "{text}"
        );
        assert!(
            has("workqueue_queue_duration_seconds_count{name=\"queue-metrics-test\"} 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "workqueue_longest_running_processor_seconds{name=\"queue-metrics-test\"}"
            ),
            "{text}"
        );
        q.done(&item);
        let text = crate::metrics::encode_text();
        assert!(
            text.lines().any(
                |l| l == "workqueue_work_duration_seconds_count{name=\"queue-metrics-test\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l == "workqueue_unfinished_work_seconds{name=\"queue-metrics-test\"} 0.0"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn a_cancelled_get_takes_nothing() {
        let q = queue();
        let res = tokio::time::timeout(Duration::from_millis(10), q.get()).await;
        assert!(res.is_err());
        q.add("foo".into());
        assert_eq!(q.get().await.as_deref(), Some("foo"));
    }
}
