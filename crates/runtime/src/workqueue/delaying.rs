//! `add_after`: items that join the queue once a delay has passed (client-go `delaying_queue.go`).
//!
//! Instead of client-go's waiting goroutine, waiting items sit in a heap inside the queue state and are moved
//! to the queue by whoever looks next (`get`, `len`); an idle `get` sleeps until the earliest deadline. So a
//! queue needs no background task, and `tokio::time::pause` drives delays in tests.

use std::cmp::Ordering;
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

use super::queue::{add_locked, RateLimitingQueue, State};

/// An item waiting for its delay; ordered so that the `BinaryHeap` pops the earliest first.
pub(super) struct Waiting<T> {
    ready_at: Instant,
    /// Tie-breaker (first added first) and liveness check against `State::waiting_index`.
    seq: u64,
    item: T,
}

impl<T> PartialEq for Waiting<T> {
    fn eq(&self, other: &Self) -> bool {
        self.ready_at == other.ready_at && self.seq == other.seq
    }
}

impl<T> Eq for Waiting<T> {}

impl<T> PartialOrd for Waiting<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Waiting<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap.
        (other.ready_at, other.seq).cmp(&(self.ready_at, self.seq))
    }
}

/// Moves every waiting item whose time has come onto the queue (skipping entries superseded by an earlier one).
pub(super) fn promote_ready<T: Clone + Eq + Hash>(state: &mut State<T>, now: Instant) {
    while state.waiting.peek().is_some_and(|w| w.ready_at <= now) {
        let Some(entry) = state.waiting.pop() else {
            break;
        };
        let live = state
            .waiting_index
            .get(&entry.item)
            .is_some_and(|(_, seq)| *seq == entry.seq);
        if live {
            state.waiting_index.remove(&entry.item);
            add_locked(state, entry.item);
        }
    }
}

/// When the earliest waiting item becomes ready (possibly a stale entry: waking early is harmless).
pub(super) fn next_deadline<T>(state: &State<T>) -> Option<Instant> {
    state.waiting.peek().map(|w| w.ready_at)
}

impl<T: Clone + Eq + Hash + Send + Sync + 'static> RateLimitingQueue<T> {
    /// Adds `item` once `delay` has passed (at once if `delay` is zero). If `item` is already waiting, the
    /// earlier of the two deadlines wins. Ignored after shutdown. Counts as a retry in `workqueue_retries_total`.
    pub fn add_after(&self, item: T, delay: Duration) {
        {
            let mut state = self.shared.state.lock();
            if state.shutting_down {
                return;
            }
            state.metrics.handles.retries.inc();
            if delay.is_zero() {
                let queued = add_locked(&mut state, item);
                drop(state);
                if queued {
                    self.shared.item_ready.notify_one();
                }
                return;
            }
            // A delay too large to represent means "practically never": wait a year.
            let now = Instant::now();
            let ready_at = now
                .checked_add(delay)
                .unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 60 * 60));
            if let Some((existing, _)) = state.waiting_index.get(&item) {
                if *existing <= ready_at {
                    return;
                }
            }
            state.waiting_seq += 1;
            let seq = state.waiting_seq;
            state.waiting_index.insert(item.clone(), (ready_at, seq));
            state.waiting.push(Waiting {
                ready_at,
                seq,
                item,
            });
        }
        // A sleeping `get` may be waiting for a later deadline: let one recompute.
        self.shared.item_ready.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn queue() -> RateLimitingQueue<String> {
        RateLimitingQueue::new("test")
    }

    #[tokio::test(start_paused = true)]
    async fn simple_delayed_item_appears_after_its_delay() {
        let q = queue();
        q.add_after("foo".into(), ms(50));
        assert_eq!(q.len(), 0, "added too early");
        tokio::time::advance(ms(60)).await;
        assert_eq!(q.len(), 1);
        let item = q.get().await.expect("foo");
        q.done(&item);
        tokio::time::advance(ms(60)).await;
        assert_eq!(q.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn deduping_keeps_the_earliest_deadline() {
        let q = queue();
        q.add_after("foo".into(), ms(50));
        q.add_after("foo".into(), ms(70));
        assert_eq!(q.len(), 0);
        tokio::time::advance(ms(60)).await;
        assert_eq!(q.len(), 1, "the earlier deadline wins");
        let item = q.get().await.expect("foo");
        q.done(&item);
        tokio::time::advance(ms(20)).await;
        assert_eq!(q.len(), 0, "the later deadline was dropped");

        q.add_after("foo".into(), ms(70));
        q.add_after("foo".into(), ms(50));
        tokio::time::advance(ms(60)).await;
        assert_eq!(q.len(), 1, "a shorter delay moves the deadline earlier");
        let item = q.get().await.expect("foo");
        q.done(&item);
        tokio::time::advance(ms(20)).await;
        assert_eq!(q.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn two_items_fire_in_deadline_order() {
        let q = queue();
        q.add_after("foo".into(), Duration::from_secs(1));
        q.add_after("bar".into(), ms(50));
        tokio::time::advance(ms(60)).await;
        assert_eq!(q.get().await.as_deref(), Some("bar"));
        q.add_after("foo".into(), ms(50));
        tokio::time::advance(ms(60)).await;
        assert_eq!(q.get().await.as_deref(), Some("foo"));
    }

    #[tokio::test(start_paused = true)]
    async fn copy_shifting_items_come_out_earliest_first() {
        let q = queue();
        q.add_after("foo".into(), Duration::from_secs(3));
        q.add_after("bar".into(), Duration::from_secs(1));
        q.add_after("baz".into(), Duration::from_secs(2));
        tokio::time::advance(Duration::from_secs(4)).await;
        assert_eq!(q.len(), 3);
        for want in ["bar", "baz", "foo"] {
            assert_eq!(q.get().await.as_deref(), Some(want));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_get_wakes_when_the_delay_passes() {
        let q = queue();
        q.add_after("foo".into(), Duration::from_secs(5));
        let start = Instant::now();
        assert_eq!(q.get().await.as_deref(), Some("foo"));
        assert!(start.elapsed() >= Duration::from_secs(5));
    }

    #[tokio::test(start_paused = true)]
    async fn an_earlier_add_after_wakes_a_sleeping_get() {
        let q = queue();
        q.add_after("late".into(), Duration::from_secs(60));
        let getter = {
            let q = q.clone();
            tokio::spawn(async move { q.get().await })
        };
        tokio::task::yield_now().await;
        let start = Instant::now();
        q.add_after("early".into(), Duration::from_secs(1));
        assert_eq!(getter.await.expect("getter").as_deref(), Some("early"));
        assert!(start.elapsed() < Duration::from_secs(60));
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_items_are_dropped_on_shutdown() {
        let q = queue();
        q.add_after("foo".into(), ms(50));
        q.shutdown();
        q.add_after("bar".into(), ms(0));
        tokio::time::advance(ms(60)).await;
        assert_eq!(q.get().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn zero_delay_adds_at_once() {
        let q = queue();
        q.add_after("foo".into(), Duration::ZERO);
        assert_eq!(q.len(), 1);
    }
}
