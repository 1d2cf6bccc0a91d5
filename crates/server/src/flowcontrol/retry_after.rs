//! The `Retry-After` of refused requests, per priority level: it doubles while a level keeps
//! dropping requests and shrinks back by one a second when it stops
//! (`staging/src/k8s.io/apiserver/pkg/util/flowcontrol/dropped_requests_tracker.go`).

use std::collections::{HashMap, VecDeque};

use parking_lot::Mutex;

/// The longest `Retry-After`, in seconds.
pub const MAX_RETRY_AFTER: i64 = 32;

#[derive(Debug)]
struct Level {
    /// Dropped requests by second (unix time), the current second last.
    history: VecDeque<(i64, i64)>,
    retry_after: i64,
    updated_at: i64,
}

impl Level {
    fn new() -> Self {
        Self {
            history: VecDeque::new(),
            retry_after: 1,
            updated_at: 0,
        }
    }

    fn record(&mut self, now: i64) {
        if let Some((second, n)) = self.history.back_mut() {
            if *second == now {
                *n += 1;
                return;
            }
        }
        while self
            .history
            .front()
            .is_some_and(|(second, _)| now - second > MAX_RETRY_AFTER)
        {
            self.history.pop_front();
        }
        self.update(now);
        self.history.push_back((now, 1));
    }

    /// Recomputed when a new second starts, from the seconds before it
    /// (`updateRetryAfterIfNeededLocked`).
    fn update(&mut self, now: i64) {
        let retry_after = self.retry_after;
        let dropped: i64 = self
            .history
            .iter()
            .rev()
            .take_while(|(second, _)| now - second <= retry_after)
            .filter(|(second, _)| *second < now)
            .map(|(_, n)| n)
            .sum();
        if now - self.updated_at >= retry_after && dropped >= 3 * retry_after {
            self.retry_after = (retry_after * 2).min(MAX_RETRY_AFTER);
            self.updated_at = now;
        } else if dropped < retry_after && retry_after > 1 {
            self.retry_after -= 1;
        }
    }
}

/// The dropped requests of every level (`DroppedRequestsTracker`).
#[derive(Debug, Default)]
pub struct DroppedRequests {
    levels: Mutex<HashMap<String, Level>>,
}

impl DroppedRequests {
    /// Notes a request of `level` dropped at `now` (unix seconds).
    pub fn record(&self, level: &str, now: i64) {
        let mut levels = self.levels.lock();
        match levels.get_mut(level) {
            Some(l) => l.record(now),
            None => levels
                .entry(level.to_string())
                .or_insert_with(Level::new)
                .record(now),
        }
    }

    /// The `Retry-After` to answer for `level`, in seconds.
    pub fn retry_after(&self, level: &str) -> i64 {
        self.levels.lock().get(level).map_or(1, |l| l.retry_after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_doubles_under_drops_and_decays_after() {
        // dropped_requests_tracker_test.go, in outline.
        let t = DroppedRequests::default();
        assert_eq!(t.retry_after("pl"), 1);
        // 3 drops a second for a few seconds: 1 → 2 → 4.
        for now in 1000..1003 {
            for _ in 0..3 {
                t.record("pl", now);
            }
        }
        assert_eq!(t.retry_after("pl"), 2);
        for now in 1003..1006 {
            for _ in 0..12 {
                t.record("pl", now);
            }
        }
        assert_eq!(t.retry_after("pl"), 4);
        // Then a single drop now and then: back down one second at a time.
        t.record("pl", 1020);
        assert_eq!(t.retry_after("pl"), 3);
        t.record("pl", 1030);
        assert_eq!(t.retry_after("pl"), 2);
        assert_eq!(t.retry_after("other"), 1);
    }
}
