//! `add_rate_limited`, `forget` and `num_requeues`: retries delayed by the queue's rate limiter
//! (client-go `rate_limiting_queue.go`).

use std::hash::Hash;

use super::queue::RateLimitingQueue;

impl<T: Clone + Eq + Hash + Send + Sync + 'static> RateLimitingQueue<T> {
    /// Adds `item` after the delay the rate limiter gives it; each call counts as one more failure of `item`.
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.shared.rate_limiter.when(&item);
        self.add_after(item, delay);
    }

    /// Stops tracking `item`'s failures (it succeeded, or was given up on). It does not remove `item` from
    /// the queue.
    pub fn forget(&self, item: &T) {
        self.shared.rate_limiter.forget(item);
    }

    /// How many times `item` has been rate-limited since it was last forgotten.
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.shared.rate_limiter.num_requeues(item)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::workqueue::ItemExponentialFailureRateLimiter;

    #[tokio::test(start_paused = true)]
    async fn rate_limited_adds_back_off_and_forget_resets() {
        let limiter = ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(1),
            Duration::from_secs(1),
        );
        let q: RateLimitingQueue<&str> =
            RateLimitingQueue::with_rate_limiter("test", Box::new(limiter));

        q.add_rate_limited("one");
        q.add_rate_limited("one");
        assert_eq!(q.num_requeues(&"one"), 2);
        assert_eq!(q.len(), 0, "waiting for the backoff");
        q.add_rate_limited("two");
        assert_eq!(q.num_requeues(&"two"), 1);

        tokio::time::advance(Duration::from_millis(2)).await;
        assert_eq!(
            q.len(),
            2,
            "both items are queued once, whatever the number of retries"
        );

        q.forget(&"one");
        assert_eq!(q.num_requeues(&"one"), 0);
        q.forget(&"two");
        assert_eq!(q.num_requeues(&"two"), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn default_queue_retries_after_five_milliseconds_then_ten() {
        let q: RateLimitingQueue<String> = RateLimitingQueue::new("test");
        let key = "ns/a".to_string();
        let start = tokio::time::Instant::now();
        q.add_rate_limited(key.clone());
        let got = q.get().await.expect("item");
        assert_eq!(start.elapsed(), Duration::from_millis(5));
        q.done(&got);
        q.add_rate_limited(key.clone());
        q.get().await.expect("item");
        assert_eq!(start.elapsed(), Duration::from_millis(15));
        assert_eq!(q.num_requeues(&key), 2);
    }
}
