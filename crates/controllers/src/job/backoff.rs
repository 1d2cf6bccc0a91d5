//! The Job-level backoff before replacing failed pods: a record of consecutive failures since the
//! last success, and the delay it implies (kube's `backoff_utils.go`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;
use rkcm_runtime::ObjectKey;

use super::pods::finished_time;

/// The first delay before a failed pod is replaced (`DefaultJobPodFailureBackOff`).
pub const DEFAULT_JOB_POD_FAILURE_BACKOFF: Duration = Duration::from_secs(10);
/// The longest delay before a failed pod is replaced (`MaxJobPodFailureBackOff`).
pub const MAX_JOB_POD_FAILURE_BACKOFF: Duration = Duration::from_secs(360);

/// Pod failures of one Job since its last success.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackoffRecord {
    /// Failed pods finished after the last succeeded one.
    pub failures_after_last_success: u32,
    /// When the latest of them finished.
    pub last_failure_time: Option<Timestamp>,
}

impl BackoffRecord {
    /// The record after `new_succeeded` and `new_failed` pods were counted
    /// (`newBackoffRecord`): failures add up; a success resets the count to the failures that
    /// finished after it.
    pub fn next(&self, new_succeeded: &[Arc<Pod>], new_failed: &[Arc<Pod>]) -> BackoffRecord {
        let mut failed: Vec<Timestamp> = new_failed.iter().map(|p| finish(p)).collect();
        failed.sort();
        let last_success = new_succeeded.iter().map(|p| finish(p)).max();
        match last_success {
            None if failed.is_empty() => self.clone(),
            None => BackoffRecord {
                failures_after_last_success: self.failures_after_last_success
                    + u32::try_from(failed.len()).unwrap_or(u32::MAX),
                last_failure_time: failed.last().copied(),
            },
            Some(success) => {
                let after: Vec<_> = failed.iter().filter(|t| **t > success).collect();
                BackoffRecord {
                    failures_after_last_success: u32::try_from(after.len()).unwrap_or(u32::MAX),
                    // kube keeps the first failure it meets walking back from the latest.
                    last_failure_time: after.last().map(|t| **t),
                }
            }
        }
    }

    /// How long to wait before creating pods again (`getRemainingTime`): `default` doubled for
    /// every failure after the first, capped at `max`, less the time since the last failure.
    pub fn remaining_time(&self, now: Timestamp, default: Duration, max: Duration) -> Duration {
        let Some(last) = self.last_failure_time else {
            return Duration::ZERO;
        };
        if self.failures_after_last_success == 0 {
            return Duration::ZERO;
        }
        let mut backoff = default;
        for _ in 1..self.failures_after_last_success {
            backoff = backoff.saturating_mul(2);
            if backoff >= max {
                backoff = max;
                break;
            }
        }
        let elapsed = Duration::try_from(now.duration_since(last)).unwrap_or(Duration::ZERO);
        backoff.saturating_sub(elapsed)
    }
}

/// A pod's finish time, for ordering; kube falls back to the zero time.
fn finish(pod: &Pod) -> Timestamp {
    finished_time(pod).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// The backoff records of every Job, by key (`backoffStore`). Updated only after the counted
/// pods were written to the Job's status, so a failed write does not count a failure twice.
#[derive(Debug, Default)]
pub struct BackoffStore {
    records: Mutex<HashMap<ObjectKey, BackoffRecord>>,
}

impl BackoffStore {
    /// The Job's record (empty if none).
    pub fn get(&self, key: &ObjectKey) -> BackoffRecord {
        self.records.lock().get(key).cloned().unwrap_or_default()
    }

    /// Replaces the Job's record.
    pub fn set(&self, key: &ObjectKey, record: BackoffRecord) {
        self.records.lock().insert(key.clone(), record);
    }

    /// Forgets the Job (deleted or finished).
    pub fn remove(&self, key: &ObjectKey) {
        self.records.lock().remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::fixtures::{failed_at, job, ts};

    fn at(s: i64) -> Timestamp {
        ts(s).0
    }

    /// Ported from backoff_utils_test.go `TestNewBackoffRecord`.
    #[test]
    fn new_backoff_record_counts_failures_since_the_last_success() {
        let j = job("j", Some(5), Some(5));
        let p = |name: &str, phase: &str, s: i64| Arc::new(failed_at(&j, name, phase, s));
        let empty = BackoffRecord::default();

        assert_eq!(empty.next(&[], &[]), empty);
        let two_failures = empty.next(&[], &[p("a", "Failed", 10), p("b", "Failed", 20)]);
        assert_eq!(
            two_failures,
            BackoffRecord {
                failures_after_last_success: 2,
                last_failure_time: Some(at(20))
            }
        );
        let more = two_failures.next(&[], &[p("c", "Failed", 30)]);
        assert_eq!(more.failures_after_last_success, 3);
        assert_eq!(more.last_failure_time, Some(at(30)));

        // A success resets the count.
        assert_eq!(more.next(&[p("s", "Succeeded", 40)], &[]), empty);
        // Failures before the success do not count; after it they do.
        let mixed = more.next(
            &[p("s", "Succeeded", 40)],
            &[
                p("d", "Failed", 35),
                p("e", "Failed", 45),
                p("f", "Failed", 50),
            ],
        );
        assert_eq!(mixed.failures_after_last_success, 2);
        assert_eq!(mixed.last_failure_time, Some(at(50)));
    }

    /// Ported from backoff_utils_test.go `TestGetRemainingBackoffTime`.
    #[test]
    fn remaining_time_doubles_per_failure_and_is_capped() {
        let record = |failures, last| BackoffRecord {
            failures_after_last_success: failures,
            last_failure_time: Some(at(last)),
        };
        let (d, m) = (DEFAULT_JOB_POD_FAILURE_BACKOFF, MAX_JOB_POD_FAILURE_BACKOFF);
        assert_eq!(
            BackoffRecord::default().remaining_time(at(0), d, m),
            Duration::ZERO
        );
        assert_eq!(
            record(1, 0).remaining_time(at(0), d, m),
            Duration::from_secs(10)
        );
        assert_eq!(
            record(1, 0).remaining_time(at(4), d, m),
            Duration::from_secs(6)
        );
        assert_eq!(record(1, 0).remaining_time(at(11), d, m), Duration::ZERO);
        assert_eq!(
            record(3, 0).remaining_time(at(5), d, m),
            Duration::from_secs(35)
        );
        assert_eq!(
            record(6, 0).remaining_time(at(0), d, m),
            Duration::from_secs(320)
        );
        assert_eq!(
            record(7, 0).remaining_time(at(0), d, m),
            Duration::from_secs(360)
        );
        assert_eq!(
            record(50, 0).remaining_time(at(60), d, m),
            Duration::from_secs(300)
        );
    }
}
