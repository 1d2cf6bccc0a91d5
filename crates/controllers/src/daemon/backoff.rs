//! Per-key exponential backoff for deleting failed daemon pods, so the controller does not fight
//! a kubelet that keeps rejecting its pods. Mirrors client-go `util/flowcontrol/backoff.go`
//! (without jitter, as kube-controller-manager builds it: `flowcontrol.NewBackOff(1s, 15m)`).

use std::collections::HashMap;
use std::time::Duration;

use jiff::Timestamp;
use parking_lot::Mutex;

/// First delay after a failed pod is deleted.
pub const FAILED_PODS_BACKOFF_INITIAL: Duration = Duration::from_secs(1);
/// Longest delay between deletions of failed pods on one node.
pub const FAILED_PODS_BACKOFF_MAX: Duration = Duration::from_secs(15 * 60);
/// How often entries idle for twice the maximum are forgotten (`BackoffGCInterval`).
pub const BACKOFF_GC_INTERVAL: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug)]
struct Entry {
    backoff: Duration,
    last_update: Timestamp,
}

/// Delays by key that double on every [`Backoff::next`] up to a maximum, and start over after
/// twice the maximum without an update. Safe to share between workers.
#[derive(Debug)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    entries: Mutex<HashMap<String, Entry>>,
}

fn elapsed(now: Timestamp, since: Timestamp) -> Duration {
    let nanos = now.as_nanosecond() - since.as_nanosecond();
    Duration::from_nanos(u64::try_from(nanos.max(0)).unwrap_or(u64::MAX))
}

impl Backoff {
    /// A backoff starting at `initial` and doubling up to `max`.
    pub fn new(initial: Duration, max: Duration) -> Self {
        Self {
            initial,
            max,
            entries: Mutex::new(HashMap::new()),
        }
    }

    /// The daemon controller's: 1 s doubling to 15 min.
    pub fn failed_pods() -> Self {
        Self::new(FAILED_PODS_BACKOFF_INITIAL, FAILED_PODS_BACKOFF_MAX)
    }

    /// After twice the maximum without an update, a key starts over (`hasExpired`).
    fn has_expired(&self, now: Timestamp, last_update: Timestamp) -> bool {
        elapsed(now, last_update) > self.max * 2
    }

    /// The current delay of `key`, zero if it has none (`Get`).
    pub fn get(&self, key: &str) -> Duration {
        self.entries
            .lock()
            .get(key)
            .map_or(Duration::ZERO, |e| e.backoff)
    }

    /// Records an event at `now`: the first (or first after expiry) gets the initial delay,
    /// later ones double it up to the maximum (`Next`).
    pub fn next(&self, key: &str, now: Timestamp) {
        let mut entries = self.entries.lock();
        let backoff = match entries.get(key) {
            Some(e) if !self.has_expired(now, e.last_update) => (e.backoff * 2).min(self.max),
            _ => self.initial,
        };
        entries.insert(
            key.to_string(),
            Entry {
                backoff,
                last_update: now,
            },
        );
    }

    /// Whether `now` is still within the delay since the last event of `key`
    /// (`IsInBackOffSinceUpdate`).
    pub fn is_in_backoff_since_update(&self, key: &str, now: Timestamp) -> bool {
        let entries = self.entries.lock();
        let Some(e) = entries.get(key) else {
            return false;
        };
        if self.has_expired(now, e.last_update) {
            return false;
        }
        elapsed(now, e.last_update) < e.backoff
    }

    /// Forgets keys not updated for twice the maximum (`GC`).
    pub fn gc(&self, now: Timestamp) {
        self.entries
            .lock()
            .retain(|_, e| elapsed(now, e.last_update) <= self.max * 2);
    }

    /// Number of keys tracked (for tests).
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether no key is tracked.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).expect("valid")
    }

    /// Ported from client-go flowcontrol backoff_test.go `TestSlowBackoff` / `TestBackoffReset`.
    #[test]
    fn delays_double_up_to_the_maximum_and_reset_after_twice_it() {
        let b = Backoff::failed_pods();
        let key = "uid/1/node";
        assert_eq!(b.get(key), Duration::ZERO);
        assert!(!b.is_in_backoff_since_update(key, at(0)));
        let mut now = 0;
        let mut want = 1;
        for _ in 0..12 {
            b.next(key, at(now));
            assert_eq!(b.get(key), Duration::from_secs(want));
            assert!(b.is_in_backoff_since_update(key, at(now)));
            assert!(b.is_in_backoff_since_update(key, at(now + want as i64 - 1)));
            assert!(!b.is_in_backoff_since_update(key, at(now + want as i64)));
            now += want as i64;
            want = (want * 2).min(900);
        }
        // Idle for more than twice the maximum: start over.
        now += 1801;
        assert!(!b.is_in_backoff_since_update(key, at(now)));
        b.next(key, at(now));
        assert_eq!(b.get(key), Duration::from_secs(1));
    }

    /// Ported from client-go flowcontrol backoff_test.go `TestBackoffGC`.
    #[test]
    fn gc_forgets_keys_idle_for_twice_the_maximum() {
        let b = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
        b.next("a", at(0));
        b.next("b", at(100));
        b.gc(at(121));
        assert_eq!(b.len(), 1);
        assert_eq!(b.get("a"), Duration::ZERO);
        assert_eq!(b.get("b"), Duration::from_secs(1));
    }
}
