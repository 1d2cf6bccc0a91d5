//! Injectable wall clock, so that TTLs, minReadySeconds and deadlines are testable without sleeping.
//!
//! Delays inside async code (`add_after`, backoff) use `tokio::time`, which tests pause and advance.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use parking_lot::Mutex;

/// A source of the current wall-clock time.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> Timestamp;
}

/// The system's real clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that only moves when told to. Clones share the same time.
#[derive(Clone, Debug)]
pub struct FakeClock {
    now: Arc<Mutex<Timestamp>>,
}

impl FakeClock {
    /// A fake clock reading `now`.
    pub fn new(now: Timestamp) -> Self {
        Self {
            now: Arc::new(Mutex::new(now)),
        }
    }

    /// Sets the time.
    pub fn set(&self, now: Timestamp) {
        *self.now.lock() = now;
    }

    /// Moves the time forward by `d`.
    pub fn step(&self, d: Duration) {
        let mut now = self.now.lock();
        let span = jiff::SignedDuration::try_from(d).expect("test durations fit a signed duration");
        *now = now
            .checked_add(span)
            .expect("fake clock stays within the representable range");
    }
}

impl Default for FakeClock {
    fn default() -> Self {
        Self::new(Timestamp::from_second(1_700_000_000).expect("valid timestamp"))
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Timestamp {
        *self.now.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_clock_moves_only_when_stepped_and_clones_share_time() {
        let clock = FakeClock::default();
        let other = clock.clone();
        let start = clock.now();
        assert_eq!(clock.now(), start);
        other.step(Duration::from_secs(90));
        assert_eq!(clock.now().as_second() - start.as_second(), 90);
    }
}
