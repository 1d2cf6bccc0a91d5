//! Rate limiters that decide how long a failed item waits before it is retried (client-go `default_rate_limiters.go`).

use std::collections::HashMap;
use std::hash::Hash;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use crate::token_bucket::TokenBucket;

/// Decides how long an item waits before it is added back to the queue.
///
/// Implementations are called concurrently from every worker and must be cheap.
pub trait RateLimiter<T>: Send + Sync {
    /// How long `item` should wait now; each call counts as one more failure of `item`.
    fn when(&self, item: &T) -> Duration;
    /// Forgets `item`'s failures: it is done being retried, successfully or not.
    fn forget(&self, item: &T);
    /// How many times `item` has failed since it was last forgotten.
    fn num_requeues(&self, item: &T) -> u32;
}

/// Per-item exponential backoff: `base * 2^failures`, capped at `max`.
#[derive(Debug)]
pub struct ItemExponentialFailureRateLimiter<T> {
    failures: Mutex<HashMap<T, u32>>,
    base_delay: Duration,
    max_delay: Duration,
}

impl<T: Eq + Hash> ItemExponentialFailureRateLimiter<T> {
    /// Backoff starting at `base_delay` and doubling per failure up to `max_delay`.
    pub fn new(base_delay: Duration, max_delay: Duration) -> Self {
        Self {
            failures: Mutex::new(HashMap::new()),
            base_delay,
            max_delay,
        }
    }
}

impl<T: Clone + Eq + Hash + Send + Sync> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let exp = {
            let mut failures = self.failures.lock();
            let count = failures.entry(item.clone()).or_insert(0);
            let exp = *count;
            *count = count.saturating_add(1);
            exp
        };
        // The multiplication overflows long before 2^exp itself does; either way the answer is max_delay.
        let factor = 2u32.checked_pow(exp);
        match factor.and_then(|f| self.base_delay.checked_mul(f)) {
            Some(backoff) => backoff.min(self.max_delay),
            None => self.max_delay,
        }
    }

    fn forget(&self, item: &T) {
        self.failures.lock().remove(item);
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.failures.lock().get(item).copied().unwrap_or(0)
    }
}

/// An overall token bucket shared by all items: `qps` tokens per second, at most `burst` saved up.
///
/// Each [`RateLimiter::when`] reserves one token and returns how long until that token exists
/// (golang.org/x/time/rate `Limiter.Reserve().Delay()`); it never tracks individual items.
#[derive(Debug)]
pub struct BucketRateLimiter {
    bucket: Mutex<TokenBucket>,
}

impl BucketRateLimiter {
    /// A full bucket refilling at `qps` tokens per second, holding at most `burst`.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            bucket: Mutex::new(TokenBucket::new(qps, burst)),
        }
    }

    fn reserve(&self) -> Duration {
        self.bucket.lock().reserve(Instant::now())
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.reserve()
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

/// The strictest of several limiters: the longest delay, the highest requeue count.
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> MaxOfRateLimiter<T> {
    /// Combines `limiters`.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        // Every limiter is asked, so that each records the failure.
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    fn forget(&self, item: &T) {
        for l in &self.limiters {
            l.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// client-go's `DefaultControllerRateLimiter`: per-item exponential backoff from 5ms to 1000s, and an overall
/// token bucket of 10 qps with a burst of 100 (which only matters for a flood of distinct failing items).
pub fn default_controller_rate_limiter<T: Clone + Eq + Hash + Send + Sync + 'static>(
) -> Box<dyn RateLimiter<T>> {
    Box::new(MaxOfRateLimiter::new(vec![
        Box::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Box::new(BucketRateLimiter::new(10.0, 100)),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn item_exponential_failure_rate_limiter_doubles_per_failure_up_to_max() {
        let limiter = ItemExponentialFailureRateLimiter::new(ms(1), Duration::from_secs(1));
        for want in [1, 2, 4, 8, 16] {
            assert_eq!(limiter.when(&"one"), ms(want));
        }
        assert_eq!(limiter.num_requeues(&"one"), 5);
        assert_eq!(limiter.when(&"two"), ms(1));
        assert_eq!(limiter.when(&"two"), ms(2));
        assert_eq!(limiter.num_requeues(&"two"), 2);
        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), ms(1));
    }

    #[test]
    fn item_exponential_failure_rate_limiter_caps_instead_of_overflowing() {
        let limiter = ItemExponentialFailureRateLimiter::new(ms(1), Duration::from_secs(1000));
        for _ in 0..5 {
            limiter.when(&"one");
        }
        assert_eq!(limiter.when(&"one"), ms(32));
        for _ in 0..1000 {
            limiter.when(&"overflow1");
        }
        assert_eq!(limiter.when(&"overflow1"), Duration::from_secs(1000));

        let limiter = ItemExponentialFailureRateLimiter::new(
            Duration::from_secs(60 * 60),
            Duration::from_secs(1000 * 60 * 60),
        );
        for _ in 0..2 {
            limiter.when(&"two");
        }
        assert_eq!(limiter.when(&"two"), Duration::from_secs(4 * 60 * 60));
        for _ in 0..1000 {
            limiter.when(&"overflow2");
        }
        assert_eq!(
            limiter.when(&"overflow2"),
            Duration::from_secs(1000 * 60 * 60)
        );
    }

    /// Two fast-then-slow limiters stand in for Go's ItemFastSlowRateLimiter in TestMaxOfRateLimiter.
    struct FastSlow {
        fast: Duration,
        slow: Duration,
        max_fast: u32,
        attempts: Mutex<HashMap<&'static str, u32>>,
    }

    impl RateLimiter<&'static str> for FastSlow {
        fn when(&self, item: &&'static str) -> Duration {
            let mut attempts = self.attempts.lock();
            let n = attempts.entry(item).or_insert(0);
            *n += 1;
            if *n <= self.max_fast {
                self.fast
            } else {
                self.slow
            }
        }
        fn forget(&self, item: &&'static str) {
            self.attempts.lock().remove(item);
        }
        fn num_requeues(&self, item: &&'static str) -> u32 {
            self.attempts.lock().get(item).copied().unwrap_or(0)
        }
    }

    #[test]
    fn max_of_rate_limiter_takes_the_longest_delay() {
        let limiter = MaxOfRateLimiter::new(vec![
            Box::new(FastSlow {
                fast: ms(5),
                slow: Duration::from_secs(3),
                max_fast: 3,
                attempts: Mutex::default(),
            }),
            Box::new(ItemExponentialFailureRateLimiter::new(
                ms(1),
                Duration::from_secs(1),
            )),
        ]);
        assert_eq!(limiter.when(&"one"), ms(5));
        assert_eq!(limiter.when(&"one"), ms(5));
        assert_eq!(limiter.when(&"one"), ms(5));
        assert_eq!(limiter.when(&"one"), Duration::from_secs(3));
        assert_eq!(limiter.when(&"one"), Duration::from_secs(3));
        assert_eq!(limiter.num_requeues(&"one"), 5);
        assert_eq!(limiter.when(&"two"), ms(5));
        assert_eq!(limiter.when(&"two"), ms(5));
        assert_eq!(limiter.num_requeues(&"two"), 2);
        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), ms(5));
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_rate_limiter_lets_a_burst_through_then_spaces_items() {
        let limiter = BucketRateLimiter::new(10.0, 3);
        let when = |item: &str| RateLimiter::<&str>::when(&limiter, &item);
        assert_eq!(when("a"), Duration::ZERO);
        assert_eq!(when("b"), Duration::ZERO);
        assert_eq!(when("c"), Duration::ZERO);
        // The bucket is empty: each further reservation waits one more token (100ms at 10 qps).
        assert_eq!(when("d"), ms(100));
        assert_eq!(when("e"), ms(200));
        tokio::time::advance(ms(200)).await;
        assert_eq!(when("f"), ms(100));
        tokio::time::advance(Duration::from_secs(10)).await;
        assert_eq!(when("g"), Duration::ZERO, "the bucket refilled");
        assert_eq!(RateLimiter::<&str>::num_requeues(&limiter, &"d"), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn default_controller_rate_limiter_backs_off_per_item() {
        let limiter = default_controller_rate_limiter::<String>();
        let key = "ns/web".to_string();
        assert_eq!(limiter.when(&key), ms(5));
        assert_eq!(limiter.when(&key), ms(10));
        assert_eq!(limiter.num_requeues(&key), 2);
        limiter.forget(&key);
        assert_eq!(limiter.num_requeues(&key), 0);
    }
}
