//! `backoffLimitPerIndex` of Indexed Jobs: each index fails on its own after that many failed
//! pods, counted in the `job-index-failure-count` annotation carried from a failed pod to its
//! replacement (the per-index parts of kube's `indexed_job_utils.go` and `backoff_utils.go`).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};

use super::backoff::BackoffRecord;
use super::indexed::{completion_index, is_indexed, valid_index, Intervals};
use super::pod_failure_policy::match_pod_failure_policy;
use super::pods::{finished_time, has_tracking_finalizer, is_pod_failed};

/// Failures of the pod's index so far (excluding ignored ones).
pub const JOB_INDEX_FAILURE_COUNT_ANNOTATION: &str = "batch.kubernetes.io/job-index-failure-count";
/// Failures of the pod's index that the pod failure policy ignored.
pub const JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: &str =
    "batch.kubernetes.io/job-index-ignored-failure-count";
/// Reason of a Job with more failed indexes than `maxFailedIndexes`.
pub const REASON_MAX_FAILED_INDEXES_EXCEEDED: &str = "MaxFailedIndexesExceeded";
/// Message of [`REASON_MAX_FAILED_INDEXES_EXCEEDED`].
pub const MESSAGE_MAX_FAILED_INDEXES_EXCEEDED: &str =
    "Job has exceeded the specified maximal number of failed indexes";
/// Reason of a Job whose every index finished, some failed.
pub const REASON_FAILED_INDEXES: &str = "FailedIndexes";
/// Message of [`REASON_FAILED_INDEXES`].
pub const MESSAGE_FAILED_INDEXES: &str = "Job has failed indexes";

/// Whether the Job is Indexed with `backoffLimitPerIndex`.
pub fn has_backoff_limit_per_index(job: &Job) -> bool {
    is_indexed(job)
        && job
            .spec
            .as_ref()
            .is_some_and(|s| s.backoff_limit_per_index.is_some())
}

fn annotation_count(pod: &Pod, key: &str) -> u32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .and_then(|v| v.parse::<i32>().ok())
        .and_then(|v| u32::try_from(v).ok())
        .unwrap_or(0)
}

/// The pod's `job-index-failure-count` (0 if absent or invalid).
pub fn index_failure_count(pod: &Pod) -> u32 {
    annotation_count(pod, JOB_INDEX_FAILURE_COUNT_ANNOTATION)
}

/// Counted plus ignored failures of the pod's index.
pub fn absolute_failure_count(pod: &Pod) -> u32 {
    index_failure_count(pod) + annotation_count(pod, JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION)
}

/// Whether the failed pod fails its index: a `FailIndex` rule matched, or the failure counts and
/// the index already failed `backoffLimitPerIndex` times (`isIndexFailed`).
pub fn is_index_failed(job: &Job, pod: &Pod) -> bool {
    if !is_pod_failed(pod, job) {
        return false;
    }
    let spec = job.spec.as_ref();
    let verdict = match_pod_failure_policy(spec.and_then(|s| s.pod_failure_policy.as_ref()), pod);
    if verdict.action.as_deref() == Some("FailIndex") {
        return true;
    }
    let limit = spec
        .and_then(|s| s.backoff_limit_per_index)
        .and_then(|l| u32::try_from(l).ok())
        .unwrap_or(u32::MAX);
    verdict.count_failed && index_failure_count(pod) >= limit
}

/// The indexes recorded in `status.failedIndexes` plus those of failed pods not yet counted
/// (`calculateFailedIndexes`).
pub fn failed_indexes(job: &Job, pods: &[Arc<Pod>], completions: usize) -> Intervals {
    let recorded = job
        .status
        .as_ref()
        .and_then(|s| s.failed_indexes.as_deref())
        .unwrap_or("");
    let prev = Intervals::parse(recorded, completions);
    let mut new: Vec<usize> = pods
        .iter()
        .filter(|p| has_tracking_finalizer(p) && is_index_failed(job, p))
        .filter_map(|p| valid_index(p, completions))
        .collect();
    new.sort_unstable();
    new.dedup();
    prev.with_ordered_indexes(&new)
}

/// For every index that is neither done nor running, its latest failed pod still carrying the
/// finalizer: that pod is kept until its replacement exists, which inherits its failure count
/// (`getPodsWithDelayedDeletionPerIndex`).
pub fn pods_with_delayed_deletion(
    job: &Job,
    pods: &[Arc<Pod>],
    active: &[Arc<Pod>],
    succeeded: &Intervals,
    failed: &Intervals,
    expected_removals: &HashSet<String>,
    completions: usize,
) -> BTreeMap<usize, Arc<Pod>> {
    let active: HashSet<usize> = active.iter().filter_map(|p| completion_index(p)).collect();
    let mut delayed: BTreeMap<usize, Arc<Pod>> = BTreeMap::new();
    for pod in pods {
        let uid = pod.metadata.uid.as_deref().unwrap_or("");
        if !has_tracking_finalizer(pod)
            || expected_removals.contains(uid)
            || !is_pod_failed(pod, job)
        {
            continue;
        }
        let Some(ix) = valid_index(pod, completions) else {
            continue;
        };
        if succeeded.has(ix) || failed.has(ix) || active.contains(&ix) {
            continue;
        }
        let replace = delayed.get(&ix).is_none_or(|last| {
            absolute_failure_count(last) <= absolute_failure_count(pod)
                && finished_time(pod) >= finished_time(last)
        });
        if replace {
            delayed.insert(ix, Arc::clone(pod));
        }
    }
    delayed
}

/// The failure counts the replacement of `replaced` starts with (`getNewIndexFailureCounts`).
pub fn new_index_failure_counts(job: &Job, replaced: Option<&Pod>) -> (u32, u32) {
    let Some(pod) = replaced else {
        return (0, 0);
    };
    let (mut counted, mut ignored) = (
        index_failure_count(pod),
        annotation_count(pod, JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION),
    );
    let policy = job
        .spec
        .as_ref()
        .and_then(|s| s.pod_failure_policy.as_ref());
    if match_pod_failure_policy(policy, pod).count_failed {
        counted += 1;
    } else {
        ignored += 1;
    }
    (counted, ignored)
}

/// Sets the failure-count annotations of a replacement pod (`addIndexFailureCountAnnotation`).
pub fn add_index_failure_count_annotations(
    template: &mut PodTemplateSpec,
    job: &Job,
    replaced: Option<&Pod>,
) {
    let (counted, ignored) = new_index_failure_counts(job, replaced);
    let annotations = template
        .metadata
        .get_or_insert_with(Default::default)
        .annotations
        .get_or_insert_with(Default::default);
    annotations.insert(
        JOB_INDEX_FAILURE_COUNT_ANNOTATION.into(),
        counted.to_string(),
    );
    if ignored > 0 {
        annotations.insert(
            JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION.into(),
            ignored.to_string(),
        );
    }
}

/// How long the index of `last_failed` waits before its replacement (`getRemainingTimePerIndex`).
pub fn remaining_time_for_index(
    last_failed: Option<&Pod>,
    now: Timestamp,
    default: Duration,
    max: Duration,
) -> Duration {
    let Some(pod) = last_failed else {
        return Duration::ZERO;
    };
    BackoffRecord {
        failures_after_last_success: absolute_failure_count(pod) + 1,
        last_failure_time: Some(finished_time(pod).unwrap_or(Timestamp::UNIX_EPOCH)),
    }
    .remaining_time(now, default, max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::fixtures::{failed_at, indexed_pod, job, ts};

    fn per_index_job(limit: i32) -> Job {
        let mut j = job("j", Some(3), Some(4));
        let spec = j.spec.as_mut().expect("spec");
        spec.completion_mode = Some("Indexed".into());
        spec.backoff_limit_per_index = Some(limit);
        j
    }

    fn failed(j: &Job, name: &str, index: usize, count: u32, at: i64) -> Pod {
        let mut p = failed_at(j, name, "Failed", at);
        let annotations = indexed_pod(j, name, "Failed", index).metadata.annotations;
        p.metadata.annotations = annotations;
        p.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(JOB_INDEX_FAILURE_COUNT_ANNOTATION.into(), count.to_string());
        p
    }

    /// Ported from indexed_job_utils_test.go `TestCalculateFailedIndexes`.
    #[test]
    fn an_index_fails_once_its_failure_count_reaches_the_limit() {
        let mut j = per_index_job(1);
        j.status.get_or_insert_with(Default::default).failed_indexes = Some("3".into());
        let pods = [
            Arc::new(failed(&j, "a", 0, 0, 0)),
            Arc::new(failed(&j, "b", 1, 1, 0)),
            Arc::new(indexed_pod(&j, "c", "Running", 2)),
        ];
        assert_eq!(failed_indexes(&j, &pods, 4).to_string(), "1,3");
    }

    /// Ported from indexed_job_utils_test.go `TestGetPodsWithDelayedDeletionPerIndex`.
    #[test]
    fn the_latest_failed_pod_of_a_pending_index_is_kept_for_its_replacement() {
        let j = per_index_job(3);
        let older = Arc::new(failed(&j, "old", 0, 0, 0));
        let newer = Arc::new(failed(&j, "new", 0, 1, 10));
        let running_index = Arc::new(failed(&j, "x", 1, 0, 0));
        let active = [Arc::new(indexed_pod(&j, "r", "Running", 1))];
        let delayed = pods_with_delayed_deletion(
            &j,
            &[older, newer, running_index],
            &active,
            &Intervals::default(),
            &Intervals::default(),
            &HashSet::new(),
            4,
        );
        assert_eq!(delayed.len(), 1);
        assert_eq!(delayed[&0].metadata.name.as_deref(), Some("new"));
    }

    #[test]
    fn a_replacement_inherits_the_failure_count_and_backs_off_per_index() {
        let j = per_index_job(3);
        let last = failed(&j, "a", 0, 1, 0);
        assert_eq!(new_index_failure_counts(&j, Some(&last)), (2, 0));
        assert_eq!(new_index_failure_counts(&j, None), (0, 0));
        let mut template = PodTemplateSpec::default();
        add_index_failure_count_annotations(&mut template, &j, Some(&last));
        let annotations = template
            .metadata
            .and_then(|m| m.annotations)
            .expect("annotations");
        assert_eq!(annotations[JOB_INDEX_FAILURE_COUNT_ANNOTATION], "2");
        // Second failure of the index: 20 s.
        let (d, m) = (Duration::from_secs(10), Duration::from_secs(360));
        assert_eq!(
            remaining_time_for_index(Some(&last), ts(5).0, d, m),
            Duration::from_secs(15)
        );
        assert_eq!(
            remaining_time_for_index(None, ts(5).0, d, m),
            Duration::ZERO
        );
    }
}
