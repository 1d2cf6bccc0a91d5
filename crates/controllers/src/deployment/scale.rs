//! Scaling events: telling a replicas change apart from a rollout, and spreading it across the
//! active ReplicaSets in proportion to their sizes.
//!
//! Mirrors `isScalingEvent` and `scale` in `pkg/controller/deployment/sync.go`.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::annotations::{desired_replicas_annotation, is_saturated};
use super::fenceposts::max_surge;
use super::replica_sets::{by_size_newer, by_size_older, filter_active, find_active_or_latest};
use super::replicas::{proportion, replica_count};
use super::spec::{is_rolling_update, replicas, rs_replicas};

/// One planned write of a ReplicaSet's size (and of its replicas annotations).
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleStep {
    /// The ReplicaSet as last read.
    pub rs: Arc<ReplicaSet>,
    /// Its new `spec.replicas`.
    pub to: i32,
    /// `"up"` or `"down"` for the event message; empty when a proportional pass leaves the size
    /// as it is and only refreshes the annotations.
    pub operation: &'static str,
}

impl ScaleStep {
    /// A resize of `rs` to `to`, or `None` when it already has that size
    /// (`scaleReplicaSetAndRecordEvent`'s no-op).
    pub fn resize(rs: &Arc<ReplicaSet>, to: i32) -> Option<Self> {
        let from = rs_replicas(rs);
        (from != to).then(|| Self {
            rs: Arc::clone(rs),
            to,
            operation: if from < to { "up" } else { "down" },
        })
    }

    /// Name of the ReplicaSet.
    pub fn name(&self) -> &str {
        self.rs.metadata.name.as_deref().unwrap_or_default()
    }
}

/// Whether the Deployment's `spec.replicas` differs from the desired-replicas annotation of any
/// active ReplicaSet: a scaling event, handled by [`plan_scale`] rather than by a rollout.
#[doc(alias = "isScalingEvent")]
pub fn is_scaling_event(
    d: &Deployment,
    new_rs: Option<&Arc<ReplicaSet>>,
    old_rss: &[Arc<ReplicaSet>],
) -> bool {
    let want = replicas(d);
    filter_active(old_rss.iter().chain(new_rs))
        .iter()
        .filter_map(|rs| desired_replicas_annotation(rs))
        .any(|desired| desired != want)
}

/// The writes that bring the ReplicaSets to the Deployment's size without advancing a rollout:
/// the only active (or newest) ReplicaSet takes the full size; a saturated new ReplicaSet empties the
/// old ones; otherwise, for RollingUpdate, the difference to `replicas + maxSurge` is spread over the
/// active ReplicaSets in proportion, leftovers going to the largest (newest when scaling up, oldest
/// when scaling down).
#[doc(alias = "scale")]
pub fn plan_scale(
    d: &Deployment,
    new_rs: Option<&Arc<ReplicaSet>>,
    old_rss: &[Arc<ReplicaSet>],
) -> Vec<ScaleStep> {
    let want = replicas(d);
    if let Some(rs) = find_active_or_latest(new_rs, old_rss) {
        return ScaleStep::resize(&rs, want).into_iter().collect();
    }
    if is_saturated(d, new_rs.map(|rs| &**rs)) {
        return filter_active(old_rss)
            .iter()
            .filter_map(|old| ScaleStep::resize(old, 0))
            .collect();
    }
    if !is_rolling_update(d) {
        return Vec::new();
    }
    let mut all = filter_active(old_rss.iter().chain(new_rs));
    let current = replica_count(all.iter().map(|rs| &**rs));
    let allowed = if want > 0 { want + max_surge(d) } else { 0 };
    let to_add = allowed - current;
    let operation = match to_add {
        n if n > 0 => {
            all.sort_by(|a, b| by_size_newer(a, b));
            "up"
        }
        n if n < 0 => {
            all.sort_by(|a, b| by_size_older(a, b));
            "down"
        }
        _ => "",
    };
    let mut added = 0;
    let mut sizes: Vec<i32> = all
        .iter()
        .map(|rs| {
            if to_add == 0 {
                return rs_replicas(rs);
            }
            let p = proportion(rs, d, to_add, added);
            added += p;
            rs_replicas(rs) + p
        })
        .collect();
    if to_add != 0 {
        if let Some(first) = sizes.first_mut() {
            *first = (*first + to_add - added).max(0);
        }
    }
    all.into_iter()
        .zip(sizes)
        .map(|(rs, to)| ScaleStep { rs, to, operation })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::annotations::set_replicas_annotations;
    use crate::deployment::fixtures::{new_deployment, rs, ts, with_available};
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

    struct Case {
        name: &'static str,
        deployment: Deployment,
        old_deployment: Deployment,
        new_rs: Option<ReplicaSet>,
        old_rss: Vec<ReplicaSet>,
        expected_new: Option<i32>,
        expected_old: Vec<i32>,
        desired_annotations: Vec<(&'static str, i32)>,
    }

    fn d(replicas: i32) -> Deployment {
        new_deployment("foo", replicas, None, None, None, &[])
    }

    fn d_surge(replicas: i32, surge: i32, unavailable: Option<i32>) -> Deployment {
        new_deployment(
            "foo",
            replicas,
            None,
            Some(IntOrString::Int(surge)),
            unavailable.map(IntOrString::Int),
            &[],
        )
    }

    fn case(name: &'static str, deployment: Deployment, old_deployment: Deployment) -> Case {
        Case {
            name,
            deployment,
            old_deployment,
            new_rs: None,
            old_rss: vec![],
            expected_new: None,
            expected_old: vec![],
            desired_annotations: vec![],
        }
    }

    #[test]
    fn scaling_events_are_spread_in_proportion_as_kube_does() {
        // TestScale in sync_test.go. Timestamps: new 02:00, old 01:00, older 00:00.
        let (new, old, older) = (Some(ts(7200)), Some(ts(3600)), Some(ts(0)));
        let r = |name, n, t: &Option<_>| rs(name, n, &[], t.clone());
        let mut template_changed = d(14);
        template_changed
            .spec
            .as_mut()
            .unwrap()
            .template
            .metadata
            .as_mut()
            .unwrap()
            .labels = Some([("another".to_string(), "label".to_string())].into());
        let cases = vec![
            Case {
                new_rs: Some(r("foo-v1", 10, &new)),
                expected_new: Some(12),
                ..case("normal scaling event: 10 -> 12", d(12), d(10))
            },
            Case {
                new_rs: Some(r("foo-v1", 10, &new)),
                expected_new: Some(5),
                ..case("normal scaling event: 10 -> 5", d(5), d(10))
            },
            Case {
                new_rs: Some(r("foo-v2", 2, &new)),
                old_rss: vec![r("foo-v1", 3, &old)],
                expected_new: Some(4),
                expected_old: vec![6],
                ..case("proportional scaling: 5 -> 10", d(10), d(5))
            },
            Case {
                new_rs: Some(r("foo-v2", 2, &new)),
                old_rss: vec![r("foo-v1", 3, &old)],
                expected_new: Some(1),
                expected_old: vec![2],
                ..case("proportional scaling: 5 -> 3", d(3), d(5))
            },
            Case {
                new_rs: Some(r("foo-v2", 8, &new)),
                old_rss: vec![r("foo-v1", 1, &old)],
                expected_new: Some(4),
                expected_old: vec![0],
                ..case("proportional scaling: 9 -> 4", d(4), d(9))
            },
            Case {
                new_rs: Some(r("foo-v3", 2, &new)),
                old_rss: vec![r("foo-v2", 3, &old), r("foo-v1", 2, &older)],
                expected_new: Some(3),
                expected_old: vec![4, 3],
                ..case("proportional scaling: 7 -> 10", d(10), d(7))
            },
            Case {
                new_rs: Some(r("foo-v3", 2, &new)),
                old_rss: vec![r("foo-v2", 8, &old), r("foo-v1", 3, &older)],
                expected_new: Some(1),
                expected_old: vec![5, 2],
                ..case("proportional scaling: 13 -> 8", d(8), d(13))
            },
            Case {
                new_rs: Some(r("foo-v3", 1, &new)),
                old_rss: vec![r("foo-v2", 1, &old), r("foo-v1", 1, &older)],
                expected_new: Some(2),
                expected_old: vec![1, 1],
                ..case("leftover distribution: 3 -> 4", d(4), d(3))
            },
            Case {
                new_rs: Some(r("foo-v3", 1, &new)),
                old_rss: vec![r("foo-v2", 1, &old), r("foo-v1", 1, &older)],
                expected_new: Some(1),
                expected_old: vec![1, 0],
                ..case("leftover distribution: 3 -> 2", d(2), d(3))
            },
            Case {
                old_rss: vec![r("foo-v2", 2, &old), r("foo-v1", 2, &older)],
                expected_old: vec![3, 2],
                ..case("proportional scaling (no new rs): 4 -> 5", d(5), d(4))
            },
            Case {
                new_rs: Some(r("foo-v3", 3, &new)),
                old_rss: vec![r("foo-v2", 2, &old), r("foo-v1", 1, &older)],
                expected_new: Some(0),
                expected_old: vec![0, 0],
                ..case("proportional scaling: 6 -> 0", d(0), d(6))
            },
            Case {
                new_rs: Some(r("foo-v3", 0, &new)),
                old_rss: vec![r("foo-v2", 0, &old), r("foo-v1", 0, &older)],
                expected_new: Some(6),
                expected_old: vec![0, 0],
                ..case("proportional scaling: 0 -> 6", d(6), d(6))
            },
            Case {
                new_rs: Some(r("foo-v3", 2, &new)),
                old_rss: vec![r("foo-v2", 1, &old), r("foo-v1", 1, &older)],
                expected_new: Some(2),
                expected_old: vec![2, 1],
                desired_annotations: vec![("foo-v2", 3)],
                ..case("failed rs update", d(5), d(5))
            },
            Case {
                new_rs: Some(r("foo-v2", 6, &new)),
                old_rss: vec![r("foo-v1", 6, &old)],
                expected_new: Some(11),
                expected_old: vec![11],
                ..case(
                    "deployment with surge pods",
                    d_surge(20, 2, None),
                    d_surge(10, 2, None),
                )
            },
            Case {
                new_rs: Some(r("foo-v2", 5, &new)),
                old_rss: vec![r("foo-v1", 8, &old)],
                expected_new: Some(22),
                expected_old: vec![34],
                ..case(
                    "change both surge and size",
                    d_surge(50, 6, None),
                    d_surge(10, 3, None),
                )
            },
            Case {
                old_rss: vec![r("foo-v2", 7, &new), r("foo-v1", 3, &old)],
                expected_old: vec![10, 4],
                ..case("change both size and template", template_changed, d(10))
            },
            Case {
                new_rs: Some(with_available(r("foo-v2", 2, &new), 0)),
                old_rss: vec![r("foo-v1", 1, &old)],
                expected_new: Some(2),
                expected_old: vec![1],
                ..case(
                    "saturated but broken new replica set does not affect old pods",
                    d_surge(2, 1, Some(1)),
                    d_surge(2, 1, Some(1)),
                )
            },
        ];
        for mut c in cases {
            let annotate = |r: &mut ReplicaSet, c: &Case| {
                let name = r.metadata.name.clone().unwrap();
                let desired = c
                    .desired_annotations
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map_or(replicas(&c.old_deployment), |(_, v)| *v);
                set_replicas_annotations(r, desired, desired + max_surge(&c.old_deployment));
            };
            let mut new_rs = c.new_rs.take();
            if let Some(r) = new_rs.as_mut() {
                annotate(r, &c);
            }
            let mut olds = std::mem::take(&mut c.old_rss);
            for r in olds.iter_mut() {
                annotate(r, &c);
            }
            let new_rs = new_rs.map(Arc::new);
            let olds: Vec<_> = olds.into_iter().map(Arc::new).collect();
            let steps = plan_scale(&c.deployment, new_rs.as_ref(), &olds);
            let size = |r: &Arc<ReplicaSet>| {
                steps
                    .iter()
                    .find(|s| s.rs.metadata.name == r.metadata.name)
                    .map_or(rs_replicas(r), |s| s.to)
            };
            if let (Some(expected), Some(r)) = (c.expected_new, new_rs.as_ref()) {
                assert_eq!(size(r), expected, "{}: new replica set", c.name);
            }
            let got: Vec<i32> = olds.iter().map(size).collect();
            assert_eq!(got, c.expected_old, "{}: old replica sets", c.name);
        }
    }

    #[test]
    fn a_scaling_event_is_a_replicas_change_against_the_annotations() {
        let deployment = d(5);
        let mut a = rs("a", 3, &[], None);
        set_replicas_annotations(&mut a, 3, 3);
        let a = Arc::new(a);
        assert!(is_scaling_event(&deployment, Some(&a), &[]));
        let mut b = rs("b", 5, &[], None);
        set_replicas_annotations(&mut b, 5, 5);
        let b = Arc::new(b);
        assert!(!is_scaling_event(&deployment, Some(&b), &[]));
        // Inactive ReplicaSets and ReplicaSets without annotations do not count.
        let idle = Arc::new(rs("idle", 0, &[], None));
        let bare = Arc::new(rs("bare", 2, &[], None));
        assert!(!is_scaling_event(&deployment, Some(&b), &[idle, bare]));
    }
}
