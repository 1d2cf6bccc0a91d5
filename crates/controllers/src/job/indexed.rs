//! Indexed completion mode: completion indexes on pods, `completedIndexes` intervals, which
//! indexes to start next and which duplicates to delete (kube's `indexed_job_utils.go`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{EnvVar, EnvVarSource, ObjectFieldSelector, Pod, PodTemplateSpec};

use super::pods::{has_tracking_finalizer, is_pod_succeeded, rank_for_removal};

/// Annotation (and label) carrying a pod's completion index.
pub const JOB_COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// Environment variable carrying the completion index in every container.
pub const JOB_COMPLETION_INDEX_ENV_NAME: &str = "JOB_COMPLETION_INDEX";
/// Longest generateName prefix the API server keeps whole (63 less 5 random characters).
const MAX_GENERATED_NAME_LENGTH: usize = 58;

/// Whether the Job uses `completionMode: Indexed`.
pub fn is_indexed(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.completion_mode.as_deref()) == Some("Indexed")
}

/// The pod's completion index, if its annotation holds a non-negative integer
/// (`getCompletionIndex`).
pub fn completion_index(pod: &Pod) -> Option<usize> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(JOB_COMPLETION_INDEX_ANNOTATION)?
        .parse::<usize>()
        .ok()
}

/// The pod's completion index if it is below `completions`.
pub fn valid_index(pod: &Pod, completions: usize) -> Option<usize> {
    completion_index(pod).filter(|ix| *ix < completions)
}

/// Sorted, disjoint, non-adjacent closed intervals of indexes (`orderedIntervals`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Intervals(Vec<(usize, usize)>);

impl Intervals {
    /// Parses kube's `1,3-5,7` format, dropping what is malformed or not below `completions`
    /// (`parseIndexesFromString`).
    pub fn parse(s: &str, completions: usize) -> Intervals {
        let mut result = Intervals::default();
        if s.is_empty() || completions == 0 {
            return result;
        }
        for part in s.split(',') {
            let (first, last) = match part.split_once('-') {
                Some((a, b)) => (a.parse::<usize>(), b.parse::<usize>()),
                None => (part.parse::<usize>(), part.parse::<usize>()),
            };
            let (Ok(first), Ok(last)) = (first, last) else {
                tracing::debug!(
                    interval = part,
                    "corrupted completed indexes interval, ignoring"
                );
                continue;
            };
            if first > last || first >= completions {
                continue;
            }
            result.push(first, last.min(completions - 1));
        }
        result
    }

    fn push(&mut self, first: usize, last: usize) {
        match self.0.last_mut() {
            Some(prev) if prev.1 + 1 >= first => prev.1 = prev.1.max(last),
            _ => self.0.push((first, last)),
        }
    }

    /// These intervals plus the sorted `indexes` (`withOrderedIndexes`).
    pub fn with_ordered_indexes(&self, indexes: &[usize]) -> Intervals {
        let mut all: Vec<(usize, usize)> = self.0.clone();
        all.extend(indexes.iter().map(|&ix| (ix, ix)));
        all.sort_unstable();
        let mut result = Intervals::default();
        for (first, last) in all {
            result.push(first, last);
        }
        result
    }

    /// The closed intervals, in order.
    pub fn as_slice(&self) -> &[(usize, usize)] {
        &self.0
    }

    /// These intervals and `other`'s.
    pub fn merge(&self, other: &Intervals) -> Intervals {
        let mut all: Vec<(usize, usize)> = self.0.iter().chain(&other.0).copied().collect();
        all.sort_unstable();
        let mut result = Intervals::default();
        for (first, last) in all {
            result.push(first, last);
        }
        result
    }

    /// Number of indexes.
    pub fn total(&self) -> usize {
        self.0.iter().map(|(f, l)| l - f + 1).sum()
    }

    /// Whether `ix` is in an interval.
    pub fn has(&self, ix: usize) -> bool {
        self.0.iter().any(|(f, l)| (*f..=*l).contains(&ix))
    }
}

impl std::fmt::Display for Intervals {
    /// kube's format: `a` alone, `a,b` for two consecutive, `a-b` for longer runs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (first, last)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{first}")?;
            if last > first {
                let sep = if *last == first + 1 { "," } else { "-" };
                write!(f, "{sep}{last}")?;
            }
        }
        Ok(())
    }
}

/// The indexes already recorded in `completedIndexes`, and those plus the indexes of succeeded
/// pods not yet counted (still carrying the finalizer) (`calculateSucceededIndexes`).
pub fn succeeded_indexes(
    job: &Job,
    pods: &[Arc<Pod>],
    completions: usize,
) -> (Intervals, Intervals) {
    let recorded = job
        .status
        .as_ref()
        .and_then(|s| s.completed_indexes.as_deref())
        .unwrap_or("");
    let prev = Intervals::parse(recorded, completions);
    let new: BTreeSet<usize> = pods
        .iter()
        .filter(|p| is_pod_succeeded(p) && has_tracking_finalizer(p))
        .filter_map(|p| valid_index(p, completions))
        .collect();
    let new: Vec<usize> = new.into_iter().collect();
    let all = prev.with_ordered_indexes(&new);
    (prev, all)
}

/// The first `count` indexes below `completions` that neither succeeded nor have a pod in
/// `taken` (the active pods, and the terminating ones when only failed pods are replaced)
/// (`firstPendingIndexes`).
pub fn first_pending_indexes(
    taken: &[Arc<Pod>],
    succeeded: &Intervals,
    count: usize,
    completions: usize,
) -> Vec<usize> {
    let taken: BTreeSet<usize> = taken
        .iter()
        .filter_map(|p| valid_index(p, completions))
        .collect();
    (0..completions)
        .filter(|ix| !succeeded.has(*ix) && !taken.contains(ix))
        .take(count)
        .collect()
}

/// Active pods to delete in an Indexed Job: those without a valid index, and all but the best
/// ranked pod of every index held by more than one (`appendDuplicatedIndexPodsForRemoval`).
/// Returns the pods to delete and the pods left.
pub fn duplicated_index_pods_for_removal(
    pods: &[Arc<Pod>],
    completions: usize,
) -> (Vec<Arc<Pod>>, Vec<Arc<Pod>>) {
    let mut by_index: BTreeMap<usize, Vec<Arc<Pod>>> = BTreeMap::new();
    let mut rm = Vec::new();
    for pod in pods {
        match valid_index(pod, completions) {
            Some(ix) => by_index.entry(ix).or_default().push(Arc::clone(pod)),
            None => rm.push(Arc::clone(pod)),
        }
    }
    let mut left = Vec::new();
    for (_, group) in by_index {
        let ranked = rank_for_removal(&group, group.len());
        let (extra, keep) = ranked.split_at(ranked.len() - 1);
        rm.extend(extra.iter().cloned());
        left.extend(keep.iter().cloned());
    }
    (rm, left)
}

/// The generateName of a pod for `index`: `<job>-<index>-`, the Job name cut so the prefix fits
/// (`podGenerateNameWithIndex`).
pub fn generate_name_with_index(job_name: &str, index: usize) -> String {
    let appendix = format!("-{index}-");
    let prefix = format!("{job_name}{appendix}");
    if prefix.len() <= MAX_GENERATED_NAME_LENGTH {
        return prefix;
    }
    let keep = MAX_GENERATED_NAME_LENGTH.saturating_sub(appendix.len());
    let cut: String = job_name.chars().take(keep).collect();
    format!("{cut}{appendix}")
}

/// Adds `JOB_COMPLETION_INDEX` from the index label to every container and init container that
/// does not set it (`addCompletionIndexEnvVariables`).
pub fn add_completion_index_env(template: &mut PodTemplateSpec) {
    let Some(spec) = template.spec.as_mut() else {
        return;
    };
    let containers = spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten());
    for container in containers {
        let env = container.env.get_or_insert_with(Vec::new);
        if env.iter().any(|e| e.name == JOB_COMPLETION_INDEX_ENV_NAME) {
            continue;
        }
        env.push(EnvVar {
            name: JOB_COMPLETION_INDEX_ENV_NAME.into(),
            value: None,
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: format!("metadata.labels['{JOB_COMPLETION_INDEX_ANNOTATION}']"),
                    api_version: None,
                }),
                ..Default::default()
            }),
        });
    }
}

/// The template for the pod of `index`: the index as annotation and label, hostname
/// `<job>-<index>` and generateName `<job>-<index>-`.
pub fn template_for_index(
    template: &PodTemplateSpec,
    job_name: &str,
    index: usize,
) -> PodTemplateSpec {
    let mut t = template.clone();
    let meta = t.metadata.get_or_insert_with(Default::default);
    meta.annotations
        .get_or_insert_with(Default::default)
        .insert(JOB_COMPLETION_INDEX_ANNOTATION.into(), index.to_string());
    meta.labels
        .get_or_insert_with(Default::default)
        .insert(JOB_COMPLETION_INDEX_ANNOTATION.into(), index.to_string());
    meta.generate_name = Some(generate_name_with_index(job_name, index));
    t.spec.get_or_insert_with(Default::default).hostname = Some(format!("{job_name}-{index}"));
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::fixtures::{indexed_pod, job};

    /// Ported from indexed_job_utils_test.go `TestCalculateSucceededIndexes` and
    /// `TestIntervalsHaveIndex`.
    #[test]
    fn intervals_parse_merge_and_print_as_kube() {
        let parsed = Intervals::parse("0,2-4,6", 10);
        assert_eq!(parsed.to_string(), "0,2-4,6");
        assert_eq!(parsed.total(), 5);
        assert!(parsed.has(3) && !parsed.has(5));
        assert_eq!(parsed.with_ordered_indexes(&[1, 5]).to_string(), "0-6");
        assert_eq!(
            Intervals::default()
                .with_ordered_indexes(&[3, 4])
                .to_string(),
            "3,4"
        );
        assert_eq!(
            Intervals::default()
                .with_ordered_indexes(&[3, 4, 5])
                .to_string(),
            "3-5"
        );
        // Out of range and malformed parts are dropped; the last interval is cut.
        assert_eq!(Intervals::parse("0,x,2-12,15", 5).to_string(), "0,2-4");
        assert_eq!(Intervals::parse("", 5).total(), 0);
    }

    #[test]
    fn succeeded_indexes_add_uncounted_succeeded_pods_to_the_recorded_ones() {
        let mut j = job("j", Some(2), Some(6));
        j.status
            .get_or_insert_with(Default::default)
            .completed_indexes = Some("0,1".into());
        let pods = [
            Arc::new(indexed_pod(&j, "a", "Succeeded", 3)),
            Arc::new(indexed_pod(&j, "b", "Succeeded", 9)),
            Arc::new(indexed_pod(&j, "c", "Running", 4)),
        ];
        let (prev, all) = succeeded_indexes(&j, &pods, 6);
        assert_eq!(prev.to_string(), "0,1");
        assert_eq!(all.to_string(), "0,1,3");
    }

    /// Ported from indexed_job_utils_test.go `TestFirstPendingIndexes`.
    #[test]
    fn first_pending_indexes_skip_succeeded_and_active_ones() {
        let j = job("j", Some(3), Some(6));
        let active = [
            Arc::new(indexed_pod(&j, "a", "Running", 1)),
            Arc::new(indexed_pod(&j, "b", "Running", 3)),
        ];
        let succeeded = Intervals::parse("0,4", 6);
        assert_eq!(first_pending_indexes(&active, &succeeded, 2, 6), [2, 5]);
        assert_eq!(first_pending_indexes(&active, &succeeded, 5, 6), [2, 5]);
        assert!(first_pending_indexes(&[], &Intervals::parse("0-5", 6), 1, 6).is_empty());
    }

    /// Ported from job_controller_test.go `TestActivePodsForRemoval` (indexed cases).
    #[test]
    fn duplicated_and_out_of_range_indexes_are_removed() {
        let j = job("j", Some(3), Some(3));
        let mut unindexed = indexed_pod(&j, "none", "Running", 0);
        unindexed.metadata.annotations = None;
        let mut ready_dup = indexed_pod(&j, "b", "Running", 1);
        ready_dup
            .status
            .get_or_insert_with(Default::default)
            .conditions = Some(vec![k8s_openapi::api::core::v1::PodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            ..Default::default()
        }]);
        let pods = [
            Arc::new(indexed_pod(&j, "a", "Running", 0)),
            Arc::new(indexed_pod(&j, "c", "Running", 1)),
            Arc::new(ready_dup),
            Arc::new(indexed_pod(&j, "far", "Running", 7)),
            Arc::new(unindexed),
        ];
        let (rm, left) = duplicated_index_pods_for_removal(&pods, 3);
        let names = |v: &[Arc<Pod>]| -> Vec<String> {
            v.iter()
                .map(|p| p.metadata.name.clone().unwrap_or_default())
                .collect()
        };
        assert_eq!(names(&rm), ["far", "none", "c"]);
        assert_eq!(names(&left), ["a", "b"]);
    }

    #[test]
    fn index_templates_carry_annotation_label_hostname_and_name_prefix() {
        let j = job("pi", Some(1), Some(3));
        let template = j.spec.clone().expect("spec").template;
        let t = template_for_index(&template, "pi", 2);
        let meta = t.metadata.expect("meta");
        assert_eq!(
            meta.annotations.expect("annotations")[JOB_COMPLETION_INDEX_ANNOTATION],
            "2"
        );
        assert_eq!(
            meta.labels.expect("labels")[JOB_COMPLETION_INDEX_ANNOTATION],
            "2"
        );
        assert_eq!(meta.generate_name.as_deref(), Some("pi-2-"));
        assert_eq!(t.spec.expect("spec").hostname.as_deref(), Some("pi-2"));

        let long = "x".repeat(60);
        let name = generate_name_with_index(&long, 123);
        assert_eq!(name.len(), MAX_GENERATED_NAME_LENGTH);
        assert!(name.ends_with("-123-"));
    }

    #[test]
    fn completion_index_env_comes_from_the_label_and_is_added_once() {
        let j = job("pi", Some(1), Some(3));
        let mut template = j.spec.clone().expect("spec").template;
        add_completion_index_env(&mut template);
        add_completion_index_env(&mut template);
        let env = template.spec.expect("spec").containers[0]
            .env
            .clone()
            .expect("env");
        assert_eq!(env.len(), 1);
        assert_eq!(
            env[0]
                .value_from
                .as_ref()
                .and_then(|v| v.field_ref.as_ref())
                .map(|f| f.field_path.as_str()),
            Some("metadata.labels['batch.kubernetes.io/job-completion-index']")
        );
    }
}
