//! Pod tracking with finalizers: which finished pods go to `status.uncountedTerminatedPods`,
//! whose finalizer to remove, and how removed finalizers turn into counts
//! (`trackJobStatusAndRemoveFinalizers`, `cleanUncountedPodsWithoutFinalizers` of kube, and the
//! UID expectations of `tracking_utils.go`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::batch::v1::{Job, JobStatus, UncountedTerminatedPods};
use k8s_openapi::api::core::v1::Pod;
use parking_lot::Mutex;
use rkcm_runtime::ObjectKey;

use super::indexed::{valid_index, Intervals};
use super::pod_failure_policy::match_pod_failure_policy;
use super::pods::{has_tracking_finalizer, is_pod_failed, is_pod_succeeded};

/// Most pod UIDs held in `uncountedTerminatedPods` at once (`MaxUncountedPods`), so the status
/// stays small and one big Job cannot starve the others.
pub const MAX_UNCOUNTED_PODS: usize = 500;

/// Pod UIDs whose finalizer removal each Job waits to observe (`uidTrackingExpectations`).
/// Until the informer shows the finalizer gone, a pod must not be counted again.
#[derive(Debug, Default)]
pub struct FinalizerExpectations {
    by_job: Mutex<HashMap<ObjectKey, HashSet<String>>>,
}

impl FinalizerExpectations {
    /// The UIDs the Job still waits for.
    pub fn expected_uids(&self, job: &ObjectKey) -> HashSet<String> {
        self.by_job.lock().get(job).cloned().unwrap_or_default()
    }

    /// Records that the finalizers of `uids` are being removed.
    pub fn expect_removed(&self, job: &ObjectKey, uids: impl IntoIterator<Item = String>) {
        self.by_job
            .lock()
            .entry(job.clone())
            .or_default()
            .extend(uids);
    }

    /// The finalizer of `uid` is gone (or the removal failed and will not be observed).
    pub fn removal_observed(&self, job: &ObjectKey, uid: &str) {
        let mut by_job = self.by_job.lock();
        if let Some(uids) = by_job.get_mut(job) {
            uids.remove(uid);
            if uids.is_empty() {
                by_job.remove(job);
            }
        }
    }

    /// Forgets the Job.
    pub fn delete(&self, job: &ObjectKey) {
        self.by_job.lock().remove(job);
    }
}

/// Moves UIDs whose pods no longer carry the finalizer from `uncountedTerminatedPods` to the
/// `succeeded` and `failed` counts. Returns whether the status changed.
pub fn clean_uncounted(status: &mut JobStatus, with_finalizer: &HashSet<String>) -> bool {
    let uncounted = status
        .uncounted_terminated_pods
        .get_or_insert_with(UncountedTerminatedPods::default);
    let mut changed = false;
    for (list, counter) in [
        (&mut uncounted.succeeded, &mut status.succeeded),
        (&mut uncounted.failed, &mut status.failed),
    ] {
        let before = list.as_ref().map_or(0, Vec::len);
        let kept: Vec<String> = list
            .take()
            .unwrap_or_default()
            .into_iter()
            .filter(|uid| with_finalizer.contains(uid))
            .collect();
        let counted = before - kept.len();
        if counted > 0 {
            changed = true;
            *counter = Some(counter.unwrap_or(0) + i32::try_from(counted).unwrap_or(i32::MAX));
        }
        *list = (!kept.is_empty()).then_some(kept);
    }
    changed
}

/// What one tracking pass decided.
#[derive(Debug, Default)]
pub struct TrackingPlan {
    /// Pods whose finalizer to remove now.
    pub remove_finalizer: Vec<Arc<Pod>>,
    /// UIDs of pods still carrying the finalizer (and not expected to lose it).
    pub with_finalizer: HashSet<String>,
    /// Indexes that newly succeeded (Indexed Jobs).
    pub new_succeeded_indexes: Vec<usize>,
    /// The status must be written before finalizers are removed.
    pub needs_flush: bool,
    /// [`MAX_UNCOUNTED_PODS`] was reached; the rest waits for the next sync.
    pub reached_max_uncounted: bool,
    /// The pod failure policy action applied to each newly recorded failure that matched a rule.
    pub policy_actions: Vec<String>,
}

/// Decides, for every pod that still carries the finalizer, whether it is finished (or the Job
/// is) and records it in `status.uncountedTerminatedPods` (NonIndexed) or as a new succeeded index
/// (Indexed); those pods then lose their finalizer. `job_finishing`: the Job has a finished
/// condition, so every pod may lose its finalizer; `job_failing`: that condition is a failure, so
/// every unfinished pod counts as failed.
pub fn plan_tracking(
    job: &mut Job,
    pods: &[Arc<Pod>],
    expected_removals: &HashSet<String>,
    job_finishing: bool,
    job_failing: bool,
    prev_succeeded_indexes: &Intervals,
    delayed_removals: &HashSet<String>,
) -> TrackingPlan {
    let indexed = super::indexed::is_indexed(job);
    let completions = job
        .spec
        .as_ref()
        .and_then(|s| s.completions)
        .and_then(|c| usize::try_from(c).ok())
        .unwrap_or(0);
    let deleting = job.metadata.deletion_timestamp.is_some();
    let job_snapshot = job.clone();
    let mut plan = TrackingPlan::default();
    for pod in pods {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        if has_tracking_finalizer(pod) && !expected_removals.contains(&uid) {
            plan.with_finalizer.insert(uid);
        }
    }
    let status = job.status.get_or_insert_with(Default::default);
    if clean_uncounted(status, &plan.with_finalizer) {
        plan.needs_flush = true;
    }
    let uncounted = status
        .uncounted_terminated_pods
        .get_or_insert_with(UncountedTerminatedPods::default);
    let was_failed: HashSet<String> = uncounted.failed.iter().flatten().cloned().collect();
    let was_succeeded: HashSet<String> = uncounted.succeeded.iter().flatten().cloned().collect();
    let mut ordered: Vec<&Arc<Pod>> = pods.iter().collect();
    if indexed {
        // Introduce completed indexes in order.
        ordered.sort_by_key(|p| super::indexed::completion_index(p));
    }
    for pod in ordered {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        if !has_tracking_finalizer(pod) || expected_removals.contains(&uid) {
            // Processed by an earlier sync.
            continue;
        }
        let failed = is_pod_failed(pod, &job_snapshot);
        let finished = deleting || job_finishing || is_pod_succeeded(pod) || failed;
        if !finished {
            continue;
        }
        if !(deleting || job_finishing || is_pod_succeeded(pod)) && delayed_removals.contains(&uid)
        {
            // Kept until its replacement carries the index's failure count.
            continue;
        }
        plan.remove_finalizer.push(Arc::clone(pod));
        if is_pod_succeeded(pod) && !was_failed.contains(&uid) {
            if indexed {
                // The index is enough to avoid counting a success twice.
                if let Some(ix) = valid_index(pod, completions) {
                    if !prev_succeeded_indexes.has(ix) {
                        plan.new_succeeded_indexes.push(ix);
                        plan.needs_flush = true;
                    }
                }
            } else if !was_succeeded.contains(&uid) {
                uncounted.succeeded.get_or_insert_with(Vec::new).push(uid);
                plan.needs_flush = true;
            }
        } else if failed || job_failing {
            // When the Job fails, every pod not yet terminated counts as failed.
            let index_ok = !indexed || valid_index(pod, completions).is_some();
            // A failure the pod failure policy ignores loses its finalizer uncounted.
            let policy = job_snapshot
                .spec
                .as_ref()
                .and_then(|s| s.pod_failure_policy.as_ref());
            if !was_failed.contains(&uid) && index_ok {
                let verdict = match_pod_failure_policy(policy, pod);
                plan.policy_actions.extend(verdict.action);
                if verdict.count_failed {
                    uncounted.failed.get_or_insert_with(Vec::new).push(uid);
                    plan.needs_flush = true;
                }
            }
        }
        let pending = plan.new_succeeded_indexes.len()
            + uncounted.succeeded.as_ref().map_or(0, Vec::len)
            + uncounted.failed.as_ref().map_or(0, Vec::len);
        if pending >= MAX_UNCOUNTED_PODS {
            plan.reached_max_uncounted = true;
            break;
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::fixtures::{indexed_pod, job, pod};

    fn uids(list: &Option<Vec<String>>) -> Vec<String> {
        list.clone().unwrap_or_default()
    }

    #[test]
    fn clean_uncounted_counts_pods_whose_finalizer_is_gone() {
        let mut status = JobStatus {
            succeeded: Some(1),
            uncounted_terminated_pods: Some(UncountedTerminatedPods {
                succeeded: Some(vec!["a".into(), "b".into()]),
                failed: Some(vec!["c".into()]),
            }),
            ..Default::default()
        };
        let with: HashSet<String> = ["b".to_string()].into();
        assert!(clean_uncounted(&mut status, &with));
        assert_eq!(status.succeeded, Some(2));
        assert_eq!(status.failed, Some(1));
        let uncounted = status.uncounted_terminated_pods.clone().expect("uncounted");
        assert_eq!(uids(&uncounted.succeeded), ["b"]);
        assert!(uncounted.failed.is_none());
        assert!(!clean_uncounted(&mut status, &with));
    }

    /// Ported from job_controller_test.go `TestTrackJobStatusAndRemoveFinalizers` ("succeeded
    /// and failed pods", "pods already in uncounted", "job failed").
    #[test]
    fn finished_pods_go_to_uncounted_and_lose_their_finalizer() {
        let mut j = job("j", Some(3), Some(3));
        let running = Arc::new(pod(&j, "running", "Running"));
        let ok = Arc::new(pod(&j, "ok", "Succeeded"));
        let bad = Arc::new(pod(&j, "bad", "Failed"));
        let mut counted = pod(&j, "counted", "Succeeded");
        counted.metadata.finalizers = None;
        let pods = [running.clone(), ok, bad, Arc::new(counted)];
        let plan = plan_tracking(
            &mut j,
            &pods,
            &HashSet::new(),
            false,
            false,
            &Intervals::default(),
            &HashSet::new(),
        );
        let names: Vec<_> = plan
            .remove_finalizer
            .iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect();
        assert_eq!(names, ["ok", "bad"]);
        assert!(plan.needs_flush);
        let uncounted = j
            .status
            .clone()
            .and_then(|s| s.uncounted_terminated_pods)
            .expect("uncounted");
        assert_eq!(uids(&uncounted.succeeded), ["uid-ok"]);
        assert_eq!(uids(&uncounted.failed), ["uid-bad"]);

        // Next sync, same pods: nothing new to record, the removals are still due.
        let again = plan_tracking(
            &mut j,
            &pods,
            &HashSet::new(),
            false,
            false,
            &Intervals::default(),
            &HashSet::new(),
        );
        assert!(!again.needs_flush);
        assert_eq!(again.remove_finalizer.len(), 2);

        // The finalizers are expected to go: those pods are skipped.
        let expected: HashSet<String> = ["uid-ok".to_string(), "uid-bad".to_string()].into();
        let skipped = plan_tracking(
            &mut j,
            &pods,
            &expected,
            false,
            false,
            &Intervals::default(),
            &HashSet::new(),
        );
        assert!(skipped.remove_finalizer.is_empty());
        // And once they are gone, they are counted.
        let status = j.status.clone().expect("status");
        assert_eq!((status.succeeded, status.failed), (Some(1), Some(1)));

        // A failing Job counts its running pod as failed.
        let failing = plan_tracking(
            &mut j,
            &[running],
            &HashSet::new(),
            true,
            true,
            &Intervals::default(),
            &HashSet::new(),
        );
        assert_eq!(failing.remove_finalizer.len(), 1);
        let uncounted = j
            .status
            .clone()
            .and_then(|s| s.uncounted_terminated_pods)
            .expect("uncounted");
        assert_eq!(uids(&uncounted.failed), ["uid-running"]);
    }

    #[test]
    fn indexed_successes_are_tracked_by_index_not_uid() {
        let mut j = job("j", Some(2), Some(3));
        j.spec.as_mut().expect("spec").completion_mode = Some("Indexed".into());
        let pods = [
            Arc::new(indexed_pod(&j, "b", "Succeeded", 2)),
            Arc::new(indexed_pod(&j, "a", "Succeeded", 0)),
            Arc::new(indexed_pod(&j, "dup", "Succeeded", 0)),
        ];
        let prev = Intervals::parse("0", 3);
        let plan = plan_tracking(
            &mut j,
            &pods,
            &HashSet::new(),
            false,
            false,
            &prev,
            &HashSet::new(),
        );
        assert_eq!(plan.new_succeeded_indexes, [2]);
        assert_eq!(plan.remove_finalizer.len(), 3);
        let uncounted = j
            .status
            .clone()
            .and_then(|s| s.uncounted_terminated_pods)
            .expect("uncounted");
        assert!(uncounted.succeeded.is_none());
    }

    #[test]
    fn at_most_max_uncounted_pods_are_recorded_per_sync() {
        let mut j = job("j", Some(1000), Some(1000));
        let pods: Vec<_> = (0..MAX_UNCOUNTED_PODS + 10)
            .map(|i| Arc::new(pod(&j, &format!("p{i}"), "Succeeded")))
            .collect();
        let plan = plan_tracking(
            &mut j,
            &pods,
            &HashSet::new(),
            false,
            false,
            &Intervals::default(),
            &HashSet::new(),
        );
        assert!(plan.reached_max_uncounted);
        assert_eq!(plan.remove_finalizer.len(), MAX_UNCOUNTED_PODS);
    }

    #[test]
    fn finalizer_expectations_track_uids_per_job() {
        let e = FinalizerExpectations::default();
        let key = ObjectKey::new("ns", "j");
        e.expect_removed(&key, ["a".to_string(), "b".to_string()]);
        e.removal_observed(&key, "a");
        assert_eq!(e.expected_uids(&key), ["b".to_string()].into());
        e.removal_observed(&key, "b");
        assert!(e.expected_uids(&key).is_empty());
        e.expect_removed(&key, ["c".to_string()]);
        e.delete(&key);
        assert!(e.expected_uids(&key).is_empty());
    }
}
