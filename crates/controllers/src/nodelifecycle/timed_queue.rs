//! A rate-limited queue of node names waiting for their NoExecute taint, one per zone
//! (`scheduler.RateLimitedTimedQueue` with a token-bucket `TryAccept` limiter).

use std::collections::VecDeque;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

/// Tokens saved up by a tainting limiter (`EvictionRateLimiterBurst`).
pub const EVICTION_RATE_LIMITER_BURST: u32 = 1;

/// A token bucket that answers "now or not" (`flowcontrol.TokenBucketRateLimiter.TryAccept`);
/// a rate of 0 never accepts (`NewFakeNeverRateLimiter`).
#[derive(Clone, Debug)]
pub struct TryBucket {
    qps: f32,
    burst: f64,
    tokens: f64,
    last: Option<Timestamp>,
}

impl TryBucket {
    /// A full bucket of `burst` tokens refilled at `qps`.
    pub fn new(qps: f32, burst: u32) -> Self {
        Self {
            qps,
            burst: f64::from(burst),
            tokens: f64::from(burst),
            last: None,
        }
    }

    /// The refill rate.
    pub fn qps(&self) -> f32 {
        self.qps
    }

    /// Takes a token if one is there at `now`.
    pub fn try_accept(&mut self, now: Timestamp) -> bool {
        if self.qps <= 0.0 {
            return false;
        }
        if let Some(last) = self.last {
            let elapsed = now.duration_since(last).as_secs_f64().max(0.0);
            self.tokens = (self.tokens + elapsed * f64::from(self.qps)).min(self.burst);
        }
        self.last = Some(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// One queued node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimedValue {
    /// Node name.
    pub value: String,
    /// Node UID.
    pub uid: String,
    /// When it was queued.
    pub added_at: Timestamp,
    /// Not before this time.
    pub process_at: Timestamp,
}

/// Node names in insertion order, each at most once, handed out at the limiter's pace.
#[derive(Debug)]
pub struct RateLimitedTimedQueue {
    queue: VecDeque<TimedValue>,
    limiter: TryBucket,
}

impl RateLimitedTimedQueue {
    /// An empty queue paced at `qps` with kube's burst of 1.
    pub fn new(qps: f32) -> Self {
        Self {
            queue: VecDeque::new(),
            limiter: TryBucket::new(qps, EVICTION_RATE_LIMITER_BURST),
        }
    }

    /// Queues `value` unless it is queued already; returns whether it was added.
    pub fn add(&mut self, value: &str, uid: &str, now: Timestamp) -> bool {
        if self.queue.iter().any(|v| v.value == value) {
            return false;
        }
        self.queue.push_back(TimedValue {
            value: value.into(),
            uid: uid.into(),
            added_at: now,
            process_at: now,
        });
        true
    }

    /// Removes `value`; returns whether it was queued.
    pub fn remove(&mut self, value: &str) -> bool {
        let before = self.queue.len();
        self.queue.retain(|v| v.value != value);
        before != self.queue.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The queued names, in order.
    pub fn values(&self) -> Vec<String> {
        self.queue.iter().map(|v| v.value.clone()).collect()
    }

    /// Replaces the limiter when the rate changes (`SwapLimiter`); a new one starts full.
    pub fn swap_limiter(&mut self, qps: f32) {
        if self.limiter.qps() != qps {
            self.limiter = TryBucket::new(qps, EVICTION_RATE_LIMITER_BURST);
        }
    }

    /// The values the limiter lets through at `now`, in order, taken off the queue (`Try`
    /// without the callback): stops at the first value not due yet or when the limiter refuses.
    /// A value whose processing must be retried goes back with [`requeue`](Self::requeue).
    pub fn take_due(&mut self, now: Timestamp) -> Vec<TimedValue> {
        let mut out = Vec::new();
        while let Some(front) = self.queue.front() {
            if front.process_at > now {
                break;
            }
            if !self.limiter.try_accept(now) {
                break;
            }
            if let Some(v) = self.queue.pop_front() {
                out.push(v);
            }
        }
        out
    }

    /// Puts `value` back at the front, to be retried after `wait`.
    pub fn requeue(&mut self, mut value: TimedValue, now: Timestamp, wait: Duration) {
        if self.queue.iter().any(|v| v.value == value.value) {
            return;
        }
        value.process_at = now
            .checked_add(SignedDuration::try_from(wait).unwrap_or(SignedDuration::ZERO))
            .unwrap_or(now);
        self.queue.push_front(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap()
    }

    #[test]
    fn values_are_unique_and_leave_at_the_limiters_pace() {
        let mut q = RateLimitedTimedQueue::new(0.1);
        assert!(q.add("a", "ua", at(0)));
        assert!(!q.add("a", "ua", at(0)));
        assert!(q.add("b", "ub", at(0)));
        // Burst 1: one at once, the next ten seconds later.
        let due: Vec<_> = q.take_due(at(0)).into_iter().map(|v| v.value).collect();
        assert_eq!(due, ["a"]);
        assert!(q.take_due(at(5)).is_empty());
        let due: Vec<_> = q.take_due(at(10)).into_iter().map(|v| v.value).collect();
        assert_eq!(due, ["b"]);
        assert!(q.is_empty());
    }

    #[test]
    fn a_zero_rate_lets_nothing_through_and_removal_works() {
        let mut q = RateLimitedTimedQueue::new(0.0);
        q.add("a", "ua", at(0));
        assert!(q.take_due(at(100)).is_empty());
        assert!(q.remove("a"));
        assert!(!q.remove("a"));
        q.add("a", "ua", at(0));
        q.swap_limiter(0.1);
        assert_eq!(q.take_due(at(100)).len(), 1);
    }

    #[test]
    fn a_requeued_value_waits_its_delay() {
        let mut q = RateLimitedTimedQueue::new(100.0);
        q.add("a", "ua", at(0));
        let v = q.take_due(at(0)).pop().unwrap();
        q.requeue(v, at(0), Duration::from_secs(1));
        assert!(q.take_due(at(0)).is_empty());
        assert_eq!(q.take_due(at(1)).len(), 1);
    }
}
