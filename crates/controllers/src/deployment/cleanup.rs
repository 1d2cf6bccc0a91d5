//! Revision history: which old ReplicaSets beyond `revisionHistoryLimit` may be deleted.
//!
//! Mirrors `cleanupDeployment` in `pkg/controller/deployment/sync.go`.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use super::replica_sets::sort_by_revision;
use super::spec::{revision_history_limit, rs_replicas, rs_status_replicas};

/// The old ReplicaSets to delete, lowest revision first: of the ReplicaSets beyond the history
/// limit, those with no replicas (spec and status), whose status reflects their latest generation and
/// that are not being deleted already.
#[doc(alias = "cleanupDeployment")]
pub fn replica_sets_to_delete(d: &Deployment, old_rss: &[Arc<ReplicaSet>]) -> Vec<Arc<ReplicaSet>> {
    let Some(limit) = revision_history_limit(d) else {
        return Vec::new();
    };
    let mut cleanable: Vec<Arc<ReplicaSet>> = old_rss
        .iter()
        .filter(|rs| rs.metadata.deletion_timestamp.is_none())
        .cloned()
        .collect();
    let diff = cleanable.len() as i64 - i64::from(limit);
    if diff <= 0 {
        return Vec::new();
    }
    sort_by_revision(&mut cleanable);
    cleanable
        .into_iter()
        .take(diff as usize)
        .filter(|rs| {
            let observed = rs
                .status
                .as_ref()
                .and_then(|s| s.observed_generation)
                .unwrap_or(0);
            rs_status_replicas(rs) == 0
                && rs_replicas(rs) == 0
                && rs.metadata.generation.unwrap_or(0) <= observed
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::fixtures::{new_deployment, new_rs_with_status, ts};

    #[test]
    fn only_empty_replica_sets_beyond_the_limit_are_deleted() {
        // TestDeploymentController_cleanupDeployment: (old RSs as (spec, status), limit, deletions).
        let sel = [("foo", "bar")];
        let mut already_deleted = new_rs_with_status("foo-1", 0, 0, &sel);
        already_deleted.metadata.deletion_timestamp = Some(ts(0));
        let build = |specs: &[(i32, i32)]| -> Vec<Arc<ReplicaSet>> {
            specs
                .iter()
                .enumerate()
                .map(|(i, (spec, status))| {
                    Arc::new(new_rs_with_status(
                        &format!("foo-{}", i + 1),
                        *spec,
                        *status,
                        &sel,
                    ))
                })
                .collect()
        };
        let cases = [
            (build(&[(0, 0), (0, 0), (0, 0)]), 1, 2),
            (build(&[(0, 0), (0, 1), (1, 0), (1, 1)]), 0, 1),
            (build(&[(0, 0), (0, 0)]), 0, 2),
            (build(&[(1, 1), (1, 1)]), 0, 0),
            (vec![Arc::new(already_deleted)], 0, 0),
            (build(&[(0, 0), (0, 0), (0, 0)]), i32::MAX, 0),
        ];
        for (i, (olds, limit, expected)) in cases.into_iter().enumerate() {
            let d = new_deployment("foo", 1, Some(limit), None, None, &sel);
            assert_eq!(
                replica_sets_to_delete(&d, &olds).len(),
                expected,
                "case {i}"
            );
        }
    }

    #[test]
    fn oldest_revisions_go_first_and_unobserved_generations_are_kept() {
        let sel = [("foo", "bar")];
        let with_rev = |name: &str, rev: &str| {
            let mut rs = new_rs_with_status(name, 0, 0, &sel);
            rs.metadata.annotations = Some(
                [(
                    crate::deployment::annotations::REVISION.to_string(),
                    rev.to_string(),
                )]
                .into(),
            );
            rs
        };
        let olds: Vec<_> = [with_rev("c", "3"), with_rev("a", "1"), with_rev("b", "2")]
            .into_iter()
            .map(Arc::new)
            .collect();
        let d = new_deployment("foo", 1, Some(1), None, None, &sel);
        let names: Vec<_> = replica_sets_to_delete(&d, &olds)
            .iter()
            .map(|r| r.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["a", "b"]);
        let mut pending = with_rev("a", "1");
        pending.metadata.generation = Some(2);
        let olds = vec![Arc::new(pending), Arc::new(with_rev("b", "2"))];
        let d = new_deployment("foo", 1, Some(0), None, None, &sel);
        let names: Vec<_> = replica_sets_to_delete(&d, &olds)
            .iter()
            .map(|r| r.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["b"]);
    }

    #[test]
    fn unparsable_revisions_are_ordered_by_creation_time_then_name() {
        // ReplicaSetsByRevision: an unparsable revision is not 0; the pair falls back to
        // ReplicaSetsByCreationTimestamp.
        let sel = [("foo", "bar")];
        let rs = |name: &str, rev: Option<&str>, created: i64| {
            let mut rs = new_rs_with_status(name, 0, 0, &sel);
            rs.metadata.annotations = rev.map(|rev| {
                [(
                    crate::deployment::annotations::REVISION.to_string(),
                    rev.to_string(),
                )]
                .into()
            });
            rs.metadata.creation_timestamp = Some(ts(created));
            Arc::new(rs)
        };
        let names = |olds: Vec<Arc<ReplicaSet>>, limit: i32| -> Vec<String> {
            let d = new_deployment("foo", 1, Some(limit), None, None, &sel);
            replica_sets_to_delete(&d, &olds)
                .iter()
                .map(|r| r.metadata.name.clone().unwrap())
                .collect()
        };
        // "bad" is older than revision 1: it goes first, where reading it as 0 would agree; but
        // "late-bad", newer than revision 2, is kept while revision 1 goes.
        assert_eq!(
            names(
                vec![
                    rs("r2", Some("2"), 20),
                    rs("late-bad", Some("x"), 30),
                    rs("r1", Some("1"), 10)
                ],
                2
            ),
            ["r1"]
        );
        // Equal times fall back to names; a missing annotation is revision 0.
        assert_eq!(
            names(
                vec![
                    rs("b", Some("x"), 10),
                    rs("a", Some("y"), 10),
                    rs("r0", None, 5)
                ],
                1
            ),
            ["r0", "a"]
        );
        // A cycle (r1 < r2 by revision, r2 < bad and bad < r1 by time) still sorts, as Go's
        // insertion sort would: bad, r1, r2.
        assert_eq!(
            names(
                vec![
                    rs("r1", Some("1"), 30),
                    rs("bad", Some("x"), 20),
                    rs("r2", Some("2"), 10)
                ],
                2
            ),
            ["bad"]
        );
    }
}
