//! A token bucket with reservations, as `golang.org/x/time/rate.Limiter`: the work queue's overall
//! retry limiter and the REST client's `--kube-api-qps`/`--kube-api-burst` throttle share it.

use std::time::Duration;

use tokio::time::Instant;

/// `qps` tokens per second, at most `burst` saved up. Each [`reserve`](Self::reserve) takes a token
/// and returns how long until it exists (`Limiter.Reserve().Delay()`); the balance may go negative:
/// a negative balance is tokens already promised to earlier callers.
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    /// A full bucket refilled at `qps` tokens per second, holding at most `burst`.
    ///
    /// `qps` should be positive: what a zero or negative rate means is the caller's to decide
    /// (the REST client follows client-go in `rest_client::limits`). As a guard against dividing
    /// by zero, a bucket with a non-positive rate never makes callers wait.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            qps,
            burst: f64::from(burst),
            tokens: f64::from(burst),
            last: Instant::now(),
        }
    }

    /// Takes one token at `now` and returns how long the caller must wait before using it.
    pub fn reserve(&mut self, now: Instant) -> Duration {
        if self.qps <= 0.0 {
            return Duration::ZERO;
        }
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.last = now.max(self.last);
        self.tokens = (self.tokens + elapsed * self.qps).min(self.burst) - 1.0;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.qps)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bucket_serves_its_burst_without_waiting_then_paces_at_qps() {
        let start = Instant::now();
        let mut bucket = TokenBucket::new(10.0, 3);
        bucket.last = start;
        for _ in 0..3 {
            assert_eq!(bucket.reserve(start), Duration::ZERO);
        }
        let wait = bucket.reserve(start);
        assert!((wait.as_secs_f64() - 0.1).abs() < 1e-9, "{wait:?}");
        let wait = bucket.reserve(start);
        assert!((wait.as_secs_f64() - 0.2).abs() < 1e-9, "{wait:?}");
        // Two seconds later the debt is repaid and the bucket is full again (capped at the burst).
        let later = start + Duration::from_secs(2);
        assert_eq!(bucket.reserve(later), Duration::ZERO);
    }

    #[test]
    fn a_non_positive_rate_never_divides_by_zero() {
        let mut bucket = TokenBucket::new(0.0, 1);
        for _ in 0..100 {
            assert_eq!(bucket.reserve(Instant::now()), Duration::ZERO);
        }
    }
}
