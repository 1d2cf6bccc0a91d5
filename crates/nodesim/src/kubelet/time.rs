//! Timestamp arithmetic for the simulated kubelet's deadlines.

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};

/// `at + d`, saturating at the largest representable time.
pub fn add(at: Timestamp, d: Duration) -> Timestamp {
    SignedDuration::try_from(d)
        .ok()
        .and_then(|d| at.checked_add(d).ok())
        .unwrap_or(Timestamp::MAX)
}

/// `at − d`, saturating at the smallest representable time.
pub fn sub(at: Timestamp, d: Duration) -> Timestamp {
    SignedDuration::try_from(d)
        .ok()
        .and_then(|d| at.checked_sub(d).ok())
        .unwrap_or(Timestamp::MIN)
}

/// True once `now` has reached `due`.
pub fn at_or_after(now: Timestamp, due: Timestamp) -> bool {
    now >= due
}

/// How long from `now` until `due` (zero when already due).
pub fn until(now: Timestamp, due: Timestamp) -> Duration {
    Duration::try_from(now.duration_until(due)).unwrap_or(Duration::ZERO)
}
