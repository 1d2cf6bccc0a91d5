//! Expectations: how many creations and which deletions a controller waits to observe before it trusts its
//! cache again (`pkg/controller/controller_utils.go` `ControllerExpectations` and
//! `UIDTrackingControllerExpectations`).
//!
//! A controller that has just created or deleted pods must not sync again until its informer has seen those
//! changes, or it would act twice on a stale cache. It records what it expects; event handlers lower the counts
//! as they observe creations and deletions; [`ControllerExpectations::satisfied_expectations`] says when the
//! controller may sync. Expectations that are never met expire after [`EXPECTATIONS_TIMEOUT`], so a lost watch
//! event delays a controller but never wedges it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use parking_lot::Mutex;

use crate::clock::Clock;
use crate::object_key::ObjectKey;

/// How long expectations stay in force when they are not met (client-go `ExpectationsTimeout`).
pub const EXPECTATIONS_TIMEOUT: Duration = Duration::from_secs(5 * 60);

#[derive(Clone, Debug)]
struct Controllee {
    add: i64,
    del: i64,
    timestamp: Timestamp,
}

impl Controllee {
    fn fulfilled(&self) -> bool {
        self.add <= 0 && self.del <= 0
    }
}

#[derive(Debug, Default)]
struct Inner {
    counts: HashMap<ObjectKey, Controllee>,
    /// Keys of the controllees each controller expects to see deleted, so a pod that is first marked for
    /// deletion and later removed is counted once.
    deletions: HashMap<ObjectKey, HashSet<ObjectKey>>,
}

/// Per-controller expectations of creations (a count) and deletions (a set of controllee keys).
///
/// Keyed by the controller's [`ObjectKey`]. Safe to share between event handlers and workers; every method
/// takes one short lock.
pub struct ControllerExpectations {
    clock: Arc<dyn Clock>,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for ControllerExpectations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerExpectations")
            .field("inner", &*self.inner.lock())
            .finish()
    }
}

impl Default for ControllerExpectations {
    /// Empty expectations on the system clock.
    fn default() -> Self {
        Self::new(Arc::new(crate::clock::SystemClock))
    }
}

impl ControllerExpectations {
    /// Empty expectations; `clock` decides when they expire.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        Self {
            clock,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn expired(&self, exp: &Controllee) -> bool {
        let age = self.clock.now().duration_since(exp.timestamp);
        age > jiff::SignedDuration::try_from(EXPECTATIONS_TIMEOUT)
            .unwrap_or(jiff::SignedDuration::MAX)
    }

    /// Whether the controller may sync: it has no expectations, they are fulfilled (no creations or deletions
    /// still outstanding), or they have expired.
    pub fn satisfied_expectations(&self, controller: &ObjectKey) -> bool {
        let inner = self.inner.lock();
        match inner.counts.get(controller) {
            None => true,
            Some(exp) if exp.fulfilled() => true,
            Some(exp) if self.expired(exp) => {
                tracing::debug!(%controller, add = exp.add, del = exp.del, "controller expectations expired");
                true
            }
            Some(exp) => {
                tracing::trace!(%controller, add = exp.add, del = exp.del, "controller still waiting on expectations");
                false
            }
        }
    }

    /// The outstanding `(creations, deletions)` of the controller, if it has expectations. Counts go negative
    /// when more is observed than was expected.
    pub fn get_expectations(&self, controller: &ObjectKey) -> Option<(i64, i64)> {
        self.inner
            .lock()
            .counts
            .get(controller)
            .map(|exp| (exp.add, exp.del))
    }

    /// Replaces the controller's counts with `add` creations and `del` deletions, timestamped now.
    pub fn set_expectations(&self, controller: &ObjectKey, add: usize, del: usize) {
        let exp = Controllee {
            add: i64::try_from(add).unwrap_or(i64::MAX),
            del: i64::try_from(del).unwrap_or(i64::MAX),
            timestamp: self.clock.now(),
        };
        tracing::trace!(%controller, add = exp.add, del = exp.del, "setting expectations");
        self.inner.lock().counts.insert(controller.clone(), exp);
    }

    /// Expects `adds` creations (and no deletions).
    pub fn expect_creations(&self, controller: &ObjectKey, adds: usize) {
        self.set_expectations(controller, adds, 0);
    }

    /// Expects the deletion of each controllee in `deleted` (and no creations).
    pub fn expect_deletions(&self, controller: &ObjectKey, deleted: &[ObjectKey]) {
        let keys: HashSet<ObjectKey> = deleted.iter().cloned().collect();
        let count = keys.len();
        {
            let mut inner = self.inner.lock();
            if let Some(existing) = inner.deletions.get(controller).filter(|s| !s.is_empty()) {
                tracing::warn!(%controller, existing = existing.len(), "clobbering existing delete keys");
            }
            inner.deletions.insert(controller.clone(), keys);
        }
        self.set_expectations(controller, 0, count);
    }

    /// One expected creation was observed (or a create call failed, so it will never be observed).
    pub fn creation_observed(&self, controller: &ObjectKey) {
        self.lower_expectations(controller, 1, 0);
    }

    /// `controllee` was observed deleted (or marked for deletion); counted only if its deletion was expected,
    /// and only once.
    pub fn deletion_observed(&self, controller: &ObjectKey, controllee: &ObjectKey) {
        let mut inner = self.inner.lock();
        let expected = inner
            .deletions
            .get_mut(controller)
            .is_some_and(|keys| keys.remove(controllee));
        if expected {
            tracing::trace!(%controller, %controllee, "observed expected deletion");
            if let Some(exp) = inner.counts.get_mut(controller) {
                exp.del -= 1;
            }
        }
    }

    /// Lowers the outstanding counts by `add` creations and `del` deletions (does nothing without expectations).
    pub fn lower_expectations(&self, controller: &ObjectKey, add: usize, del: usize) {
        self.adjust(controller, -to_i64(add), -to_i64(del));
    }

    /// Raises the outstanding counts by `add` creations and `del` deletions (does nothing without expectations).
    pub fn raise_expectations(&self, controller: &ObjectKey, add: usize, del: usize) {
        self.adjust(controller, to_i64(add), to_i64(del));
    }

    fn adjust(&self, controller: &ObjectKey, add: i64, del: i64) {
        if let Some(exp) = self.inner.lock().counts.get_mut(controller) {
            exp.add = exp.add.saturating_add(add);
            exp.del = exp.del.saturating_add(del);
        }
    }

    /// Forgets the controller's expectations, for example when the controller object is deleted.
    pub fn delete_expectations(&self, controller: &ObjectKey) {
        let mut inner = self.inner.lock();
        inner.counts.remove(controller);
        inner.deletions.remove(controller);
    }

    /// The controllees whose deletion the controller still expects (client-go `GetUIDs`); `None` if it has
    /// no deletion expectations.
    pub fn expected_deletions(&self, controller: &ObjectKey) -> Option<HashSet<ObjectKey>> {
        self.inner.lock().deletions.get(controller).cloned()
    }
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;

    fn expectations() -> (Arc<ControllerExpectations>, FakeClock) {
        let clock = FakeClock::default();
        (
            Arc::new(ControllerExpectations::new(Arc::new(clock.clone()))),
            clock,
        )
    }

    #[test]
    fn controller_expectations_are_met_by_observations_and_expire_after_the_ttl() {
        let (e, clock) = expectations();
        let rc = ObjectKey::new("default", "rc");
        let (adds, dels) = (10, 30);
        e.set_expectations(&rc, adds, dels);

        // Observations arrive concurrently from event handlers; one more creation than expected
        // (a failed create is also "observed").
        std::thread::scope(|s| {
            for _ in 0..adds + 1 {
                s.spawn(|| e.creation_observed(&rc));
            }
        });
        assert!(
            !e.satisfied_expectations(&rc),
            "the controller would sync before its deletions are observed"
        );

        std::thread::scope(|s| {
            for _ in 0..dels + 1 {
                s.spawn(|| e.lower_expectations(&rc, 0, 1));
            }
        });
        assert_eq!(
            e.get_expectations(&rc),
            Some((-1, -1)),
            "expectations have been surpassed"
        );
        assert!(e.satisfied_expectations(&rc));

        // New expectations are not met, until they expire.
        e.set_expectations(&rc, 1, 2);
        assert_eq!(e.get_expectations(&rc), Some((1, 2)));
        assert!(!e.satisfied_expectations(&rc));
        clock.step(EXPECTATIONS_TIMEOUT);
        assert!(
            !e.satisfied_expectations(&rc),
            "not expired at exactly the timeout"
        );
        clock.step(Duration::from_secs(1));
        assert!(
            e.satisfied_expectations(&rc),
            "expectations should have expired"
        );
    }

    #[test]
    fn a_controller_without_expectations_may_sync() {
        let (e, _) = expectations();
        let rc = ObjectKey::new("default", "new");
        assert!(e.satisfied_expectations(&rc));
        assert_eq!(e.get_expectations(&rc), None);
        e.creation_observed(&rc);
        e.raise_expectations(&rc, 1, 1);
        assert_eq!(
            e.get_expectations(&rc),
            None,
            "lowering or raising absent expectations creates none"
        );
    }

    #[test]
    fn raise_and_lower_move_both_counts() {
        let (e, _) = expectations();
        let rs = ObjectKey::new("ns", "rs");
        e.expect_creations(&rs, 2);
        e.raise_expectations(&rs, 1, 2);
        assert_eq!(e.get_expectations(&rs), Some((3, 2)));
        e.lower_expectations(&rs, 3, 2);
        assert!(e.satisfied_expectations(&rs));
        e.delete_expectations(&rs);
        assert_eq!(e.get_expectations(&rs), None);
    }

    #[test]
    fn uid_expectations_count_each_expected_deletion_once() {
        let (e, _) = expectations();
        let mut controllers = Vec::new();
        for (i, _replicas) in [2, 1, 0, 5].iter().enumerate() {
            let rc = ObjectKey::new("default", format!("rc-{i}"));
            let pods: Vec<ObjectKey> = (0..5)
                .map(|p| ObjectKey::new("default", format!("pod{p}-rc-{i}")))
                .collect();
            e.expect_deletions(&rc, &pods);
            controllers.push((rc, pods));
        }
        // Observe in an order unrelated to the order of expectation.
        controllers.reverse();
        controllers.swap(0, 2);
        for (rc, pods) in &controllers {
            assert!(
                !e.satisfied_expectations(rc),
                "{rc} satisfied expectations before deletion"
            );
            for pod in pods {
                e.deletion_observed(rc, pod);
                // A second observation of the same pod (update with deletionTimestamp, then delete) is ignored.
                e.deletion_observed(rc, pod);
            }
            assert_eq!(e.get_expectations(rc), Some((0, 0)));
            assert!(
                e.satisfied_expectations(rc),
                "{rc} didn't satisfy expectations after deletion"
            );
            e.delete_expectations(rc);
            assert_eq!(
                e.expected_deletions(rc),
                None,
                "failed to delete uid expectations for {rc}"
            );
        }
    }

    #[test]
    fn deletions_of_unexpected_controllees_are_ignored() {
        let (e, _) = expectations();
        let rs = ObjectKey::new("ns", "rs");
        let pod = ObjectKey::new("ns", "p1");
        e.expect_deletions(&rs, std::slice::from_ref(&pod));
        e.deletion_observed(&rs, &ObjectKey::new("ns", "other"));
        assert_eq!(e.get_expectations(&rs), Some((0, 1)));
        assert_eq!(e.expected_deletions(&rs).map(|s| s.len()), Some(1));
        e.deletion_observed(&rs, &pod);
        assert!(e.satisfied_expectations(&rs));
    }

    #[test]
    fn duplicate_deletion_keys_are_expected_once() {
        let (e, _) = expectations();
        let rs = ObjectKey::new("ns", "rs");
        let pod = ObjectKey::new("ns", "p1");
        e.expect_deletions(&rs, &[pod.clone(), pod.clone()]);
        assert_eq!(e.get_expectations(&rs), Some((0, 1)));
    }
}
