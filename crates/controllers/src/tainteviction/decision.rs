//! What to do about one pod on a node with NoExecute taints: evict now, evict when the shortest
//! `tolerationSeconds` runs out, or never (`processPodOnNode`, `GetMatchingTolerations`,
//! `getMinTolerationTime`).

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Taint, Toleration};

pub use rkcm_runtime::scheduling::taints::tolerates;

/// The tolerations used to tolerate every taint (the first tolerating each), or `None` when some
/// taint is not tolerated (`GetMatchingTolerations`).
pub fn matching_tolerations<'a>(
    taints: &[Taint],
    tolerations: &'a [Toleration],
) -> Option<Vec<&'a Toleration>> {
    taints
        .iter()
        .map(|t| tolerations.iter().find(|tol| tolerates(tol, t)))
        .collect()
}

/// The shortest `tolerationSeconds` of `used`: `None` when every one tolerates forever, zero for
/// a non-positive one or when none is used (`getMinTolerationTime`).
pub fn min_toleration_time(used: &[&Toleration]) -> Option<Duration> {
    if used.is_empty() {
        return Some(Duration::ZERO);
    }
    let mut min: Option<i64> = None;
    for seconds in used.iter().filter_map(|t| t.toleration_seconds) {
        if seconds <= 0 {
            return Some(Duration::ZERO);
        }
        min = Some(min.map_or(seconds, |m| m.min(seconds)));
    }
    min.map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0)))
}

/// A scheduled eviction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scheduled {
    /// When the eviction was first scheduled (tolerations count from here).
    pub created_at: Timestamp,
    /// When the pod is deleted.
    pub fire_at: Timestamp,
}

/// What to do about a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Cancel any scheduled eviction (no taints, or all tolerated forever).
    Cancel,
    /// Cancel any scheduled eviction and delete the pod now (a taint it does not tolerate).
    EvictNow,
    /// Keep the eviction already scheduled: it fires no later than the new one would.
    Keep,
    /// (Re)schedule the eviction.
    Schedule(Scheduled),
}

fn plus(t: Timestamp, d: Duration) -> Timestamp {
    t.checked_add(SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX))
        .unwrap_or(Timestamp::MAX)
}

/// The decision for a pod with `tolerations` on a node with NoExecute `taints`, at `now`, given
/// the eviction already scheduled for it.
pub fn decide(
    taints: &[Taint],
    tolerations: &[Toleration],
    existing: Option<Scheduled>,
    now: Timestamp,
) -> Decision {
    if taints.is_empty() {
        return Decision::Cancel;
    }
    let Some(used) = matching_tolerations(taints, tolerations) else {
        return Decision::EvictNow;
    };
    let Some(min) = min_toleration_time(&used) else {
        return Decision::Cancel;
    };
    let trigger = plus(now, min);
    match existing {
        Some(s) if plus(s.created_at, min) < trigger => Decision::Keep,
        // kube reschedules from the original start but fires at the new trigger.
        Some(s) => Decision::Schedule(Scheduled {
            created_at: s.created_at,
            fire_at: trigger,
        }),
        None => Decision::Schedule(Scheduled {
            created_at: now,
            fire_at: trigger,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str) -> Taint {
        Taint {
            key: key.into(),
            value: Some(value.into()),
            effect: "NoExecute".into(),
            time_added: None,
        }
    }

    fn tol(key: &str, value: &str, seconds: Option<i64>) -> Toleration {
        Toleration {
            key: Some(key.into()),
            operator: Some("Equal".into()),
            value: Some(value.into()),
            effect: Some("NoExecute".into()),
            toleration_seconds: seconds,
        }
    }

    fn at(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap()
    }

    // TestCreatePod: "not scheduled - ignore", "scheduled on untainted Node",
    // "schedule on tainted Node", "schedule on tainted Node with finite toleration",
    // "schedule on tainted Node with infinite toleration", "schedule on tainted Node with
    // infinite invalid toleration".
    #[test]
    fn create_pod_cases() {
        let t = [taint("testTaint1", "taint1")];
        assert_eq!(decide(&[], &[], None, at(0)), Decision::Cancel);
        assert_eq!(decide(&t, &[], None, at(0)), Decision::EvictNow);
        assert_eq!(
            decide(&t, &[tol("testTaint1", "taint1", Some(100))], None, at(0)),
            Decision::Schedule(Scheduled {
                created_at: at(0),
                fire_at: at(100)
            })
        );
        assert_eq!(
            decide(&t, &[tol("testTaint1", "taint1", None)], None, at(0)),
            Decision::Cancel
        );
        assert_eq!(
            decide(&t, &[tol("testTaint1", "taint2", None)], None, at(0)),
            Decision::EvictNow
        );
    }

    // TestUpdateNode: a second taint the pod does not tolerate evicts at once; the shortest
    // toleration wins; zero or negative seconds mean now.
    #[test]
    fn update_node_cases() {
        let two = [taint("testTaint1", "taint1"), taint("testTaint2", "taint2")];
        assert_eq!(
            decide(&two, &[tol("testTaint1", "taint1", None)], None, at(0)),
            Decision::EvictNow
        );
        let tols = [
            tol("testTaint1", "taint1", Some(200)),
            tol("testTaint2", "taint2", Some(100)),
        ];
        assert_eq!(
            decide(&two, &tols, None, at(0)),
            Decision::Schedule(Scheduled {
                created_at: at(0),
                fire_at: at(100)
            })
        );
        let zero = [tol("testTaint1", "taint1", Some(0))];
        assert_eq!(
            decide(&two[..1], &zero, None, at(5)),
            Decision::Schedule(Scheduled {
                created_at: at(5),
                fire_at: at(5)
            })
        );
    }

    // An eviction counts from when it was first scheduled; a later update keeps the earlier one.
    #[test]
    fn a_scheduled_eviction_keeps_its_start() {
        let t = [taint("testTaint1", "taint1")];
        let tols = [tol("testTaint1", "taint1", Some(100))];
        let existing = Scheduled {
            created_at: at(0),
            fire_at: at(100),
        };
        assert_eq!(decide(&t, &tols, Some(existing), at(50)), Decision::Keep);
        // Same trigger: rescheduled from the original start.
        assert_eq!(
            decide(&t, &tols, Some(existing), at(0)),
            Decision::Schedule(existing)
        );
    }

    // TestDeleteNode / taint removal: no taints cancels.
    #[test]
    fn removing_the_taints_cancels() {
        let tols = [tol("testTaint1", "taint1", Some(100))];
        let existing = Scheduled {
            created_at: at(0),
            fire_at: at(100),
        };
        assert_eq!(decide(&[], &tols, Some(existing), at(10)), Decision::Cancel);
    }

    #[test]
    fn an_exists_toleration_without_key_tolerates_everything() {
        let t = [taint("a", "1"), taint("b", "2")];
        let all = Toleration {
            operator: Some("Exists".into()),
            ..Toleration::default()
        };
        assert_eq!(decide(&t, &[all], None, at(0)), Decision::Cancel);
    }
}
