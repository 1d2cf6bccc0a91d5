//! The CronJob's Jobs as plain values: the Job made from the template, the `status.active`
//! list, finished states and which finished Jobs the history limits remove (`utils.go` and
//! `cleanupFinishedJobs` of kube's `pkg/controller/cronjob`).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use jiff::tz::TimeZone;
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use rkcm_runtime::controller_ref::{controller_of, OwnerInfo};

use super::schedule::{job_name, rfc3339_in};

/// The annotation holding a Job's scheduled time, RFC 3339 in the CronJob's zone
/// (`batchv1.CronJobScheduledTimestampAnnotation`).
pub const SCHEDULED_TIMESTAMP_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// `getJobFromTemplate2`: the Job to create for the start time `scheduled`, with the template's
/// labels and annotations, the scheduled-timestamp annotation (in `zone`, the CronJob's
/// `spec.timeZone` or UTC), a deterministic name and the CronJob as controller.
pub fn job_from_template(cj: &CronJob, scheduled: Timestamp, zone: &TimeZone) -> Job {
    let template = cj.spec.as_ref().map(|s| &s.job_template);
    let template_meta = template.and_then(|t| t.metadata.as_ref());
    let labels: BTreeMap<String, String> = template_meta
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    let mut annotations: BTreeMap<String, String> = template_meta
        .and_then(|m| m.annotations.clone())
        .unwrap_or_default();
    annotations.insert(
        SCHEDULED_TIMESTAMP_ANNOTATION.to_string(),
        rfc3339_in(scheduled, zone),
    );
    let name = cj.metadata.name.as_deref().unwrap_or_default();
    Job {
        metadata: ObjectMeta {
            name: Some(job_name(name, scheduled)),
            namespace: cj.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: Some(annotations),
            // The server overwrites it; kube sets it so the create request says what it is for.
            creation_timestamp: Some(Time(scheduled)),
            owner_references: Some(vec![OwnerInfo::from_resource(cj).controller_ref()]),
            ..ObjectMeta::default()
        },
        spec: template.and_then(|t| t.spec.clone()),
        status: None,
    }
}

/// A reference to `job` for `status.active` (`ref.GetReference`).
pub fn job_reference(job: &Job) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".into()),
        kind: Some("Job".into()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        resource_version: job.metadata.resource_version.clone(),
        ..ObjectReference::default()
    }
}

fn active(cj: &CronJob) -> &[ObjectReference] {
    cj.status
        .as_ref()
        .and_then(|s| s.active.as_deref())
        .unwrap_or_default()
}

/// `inActiveList`: whether `status.active` holds a Job with this UID.
pub fn in_active_list(cj: &CronJob, uid: &str) -> bool {
    active(cj).iter().any(|r| r.uid.as_deref() == Some(uid))
}

/// `inActiveListByName`: whether `status.active` holds a Job with this namespace and name.
pub fn in_active_list_by_name(cj: &CronJob, namespace: &str, name: &str) -> bool {
    active(cj).iter().any(|r| {
        r.name.as_deref() == Some(name) && r.namespace.as_deref().unwrap_or("") == namespace
    })
}

/// `deleteFromActiveList`: drops the Job with this UID from `status.active`.
pub fn delete_from_active_list(cj: &mut CronJob, uid: &str) {
    if let Some(list) = cj.status.as_mut().and_then(|s| s.active.as_mut()) {
        list.retain(|r| r.uid.as_deref() != Some(uid));
    }
}

/// Appends `reference` to `status.active`.
pub fn add_to_active_list(cj: &mut CronJob, reference: ObjectReference) {
    cj.status
        .get_or_insert_with(Default::default)
        .active
        .get_or_insert_with(Vec::new)
        .push(reference);
}

/// The type of a Job's `Complete` or `Failed` condition that is `True`, if any
/// (`getFinishedStatus`).
pub fn finished_condition(job: &Job) -> Option<&str> {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        .map(|c| c.type_.as_str())
}

/// `jobutil.IsJobFinished`.
pub fn is_job_finished(job: &Job) -> bool {
    finished_condition(job).is_some()
}

/// `jobutil.IsJobSucceeded`: its `Complete` condition is `True`.
pub fn is_job_succeeded(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Complete" && c.status == "True")
}

/// `getJobsToBeReconciled`: Jobs whose controller reference names the CronJob (by name only,
/// as kube: labels that no longer match the template do not matter).
pub fn owned_by<'a, J: AsRef<Job> + 'a>(
    cj_name: &str,
    jobs: impl IntoIterator<Item = &'a J>,
) -> Vec<&'a J> {
    jobs.into_iter()
        .filter(|j| controller_of(&j.as_ref().metadata).is_some_and(|r| r.name == cj_name))
        .collect()
}

/// `byJobStartTime`: started Jobs first, oldest first, names breaking ties.
pub fn by_job_start_time(a: &Job, b: &Job) -> Ordering {
    let start = |j: &Job| {
        j.status
            .as_ref()
            .and_then(|s| s.start_time.as_ref())
            .map(|t| t.0)
    };
    match (start(a), start(b)) {
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (x, y) if x == y => a.metadata.name.cmp(&b.metadata.name),
        (x, y) => x.cmp(&y),
    }
}

/// `cleanupFinishedJobs` + `removeOldestJobs`: the finished Jobs beyond
/// `successfulJobsHistoryLimit` and `failedJobsHistoryLimit`, oldest first. A limit that is not
/// set keeps every Job of its kind.
pub fn jobs_to_be_removed<'a>(cj: &CronJob, jobs: &[&'a Job]) -> Vec<&'a Job> {
    let spec = cj.spec.as_ref();
    let successful_limit = spec.and_then(|s| s.successful_jobs_history_limit);
    let failed_limit = spec.and_then(|s| s.failed_jobs_history_limit);
    let mut successful = Vec::new();
    let mut failed = Vec::new();
    for &job in jobs {
        match finished_condition(job) {
            Some("Complete") => successful.push(job),
            Some("Failed") => failed.push(job),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (mut list, limit) in [(successful, successful_limit), (failed, failed_limit)] {
        let Some(limit) = limit else { continue };
        let excess = list
            .len()
            .saturating_sub(usize::try_from(limit).unwrap_or(0));
        if excess == 0 {
            continue;
        }
        list.sort_by(|a, b| by_job_start_time(a, b));
        out.extend(list.into_iter().take(excess));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cronjob::schedule::tests::top_of_the_hour;
    use k8s_openapi::api::batch::v1::{
        CronJobSpec, JobCondition, JobSpec, JobStatus, JobTemplateSpec,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn cronjob(success: Option<i32>, failed: Option<i32>) -> CronJob {
        CronJob {
            metadata: ObjectMeta {
                name: Some("mycronjob".into()),
                namespace: Some("snazzycats".into()),
                uid: Some("1a2b3c".into()),
                ..ObjectMeta::default()
            },
            spec: Some(CronJobSpec {
                schedule: "* * * * ?".into(),
                successful_jobs_history_limit: success,
                failed_jobs_history_limit: failed,
                job_template: JobTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some([("a".to_string(), "b".to_string())].into()),
                        annotations: Some([("x".to_string(), "y".to_string())].into()),
                        ..ObjectMeta::default()
                    }),
                    spec: Some(JobSpec {
                        active_deadline_seconds: Some(1),
                        ..JobSpec::default()
                    }),
                },
                ..CronJobSpec::default()
            }),
            status: None,
        }
    }

    fn job(name: &str, condition: Option<&str>, start_secs: Option<i64>) -> Job {
        Job {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("snazzycats".into()),
                uid: Some(format!("uid-{name}")),
                ..ObjectMeta::default()
            },
            spec: None,
            status: Some(JobStatus {
                start_time: start_secs.map(|s| Time(Timestamp::from_second(s).unwrap())),
                conditions: condition.map(|c| {
                    vec![JobCondition {
                        type_: c.into(),
                        status: "True".into(),
                        ..JobCondition::default()
                    }]
                }),
                ..JobStatus::default()
            }),
        }
    }

    /// Ported from utils_test.go `TestGetJobFromTemplate2`.
    #[test]
    fn the_job_copies_the_template_and_records_its_scheduled_time() {
        let mut cj = cronjob(None, None);
        let t = top_of_the_hour();
        let j = job_from_template(&cj, t, &TimeZone::UTC);
        assert!(j
            .metadata
            .name
            .as_deref()
            .unwrap()
            .starts_with("mycronjob-"));
        assert_eq!(j.metadata.labels.as_ref().unwrap().len(), 1);
        let annotations = j.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations.len(), 2);
        assert_eq!(
            annotations[SCHEDULED_TIMESTAMP_ANNOTATION],
            "2016-05-19T10:00:00Z"
        );
        assert_eq!(j.spec.as_ref().unwrap().active_deadline_seconds, Some(1));
        let owner = &j.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (
                owner.api_version.as_str(),
                owner.kind.as_str(),
                owner.name.as_str()
            ),
            ("batch/v1", "CronJob", "mycronjob")
        );
        assert_eq!(owner.uid, "1a2b3c");
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.block_owner_deletion, Some(true));

        cj.spec
            .as_mut()
            .unwrap()
            .job_template
            .metadata
            .as_mut()
            .unwrap()
            .annotations = Some([("x".into(), "y".into()), ("z".into(), "x".into())].into());
        let rome = crate::cronjob::schedule::load_location("Europe/Rome").unwrap();
        let j = job_from_template(&cj, t, &rome);
        let annotations = j.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations.len(), 3);
        assert_eq!(
            annotations[SCHEDULED_TIMESTAMP_ANNOTATION],
            "2016-05-19T12:00:00+02:00"
        );
    }

    /// Ported from utils_test.go `TestByJobStartTime`.
    #[test]
    fn jobs_sort_started_first_then_by_start_time_then_by_name() {
        let names = |mut v: Vec<Job>| {
            v.sort_by(by_job_start_time);
            v.into_iter()
                .map(|j| {
                    (
                        j.metadata.name.unwrap(),
                        j.status.unwrap().start_time.is_some(),
                    )
                })
                .collect::<Vec<_>>()
        };
        let a = |s| job("a", None, s);
        let b = |s| job("b", None, s);
        let at = |n: &str, s: bool| (n.to_string(), s);
        assert_eq!(
            names(vec![b(None), a(None)]),
            [at("a", false), at("b", false)]
        );
        assert_eq!(
            names(vec![a(None), b(Some(1))]),
            [at("b", true), at("a", false)]
        );
        assert_eq!(
            names(vec![a(Some(1)), b(None)]),
            [at("a", true), at("b", false)]
        );
        assert_eq!(
            names(vec![b(Some(1)), a(Some(1))]),
            [at("a", true), at("b", true)]
        );
        assert_eq!(
            names(vec![a(Some(2)), b(Some(1))]),
            [at("b", true), at("a", true)]
        );
    }

    /// Ported from cronjob_controllerv2_test.go `TestControllerV2CleanupFinishedJobs` /
    /// `TestCleanupFinishedJobs`: the oldest finished Jobs beyond each limit go.
    #[test]
    fn history_limits_remove_the_oldest_finished_jobs() {
        let jobs = [
            job("s1", Some("Complete"), Some(1)),
            job("s2", Some("Complete"), Some(2)),
            job("s3", Some("Complete"), Some(3)),
            job("f1", Some("Failed"), Some(1)),
            job("f2", Some("Failed"), Some(2)),
            job("r1", None, Some(0)),
        ];
        let refs: Vec<&Job> = jobs.iter().collect();
        let removed = |cj: &CronJob| {
            let mut names: Vec<_> = jobs_to_be_removed(cj, &refs)
                .into_iter()
                .map(|j| j.metadata.name.clone().unwrap())
                .collect();
            names.sort();
            names
        };
        assert_eq!(removed(&cronjob(Some(3), Some(1))), ["f1"]);
        assert_eq!(removed(&cronjob(Some(1), Some(1))), ["f1", "s1", "s2"]);
        assert_eq!(
            removed(&cronjob(Some(0), Some(0))),
            ["f1", "f2", "s1", "s2", "s3"]
        );
        assert!(removed(&cronjob(None, None)).is_empty());
        assert_eq!(removed(&cronjob(None, Some(0))), ["f1", "f2"]);
        assert_eq!(removed(&cronjob(Some(2), None)), ["s1"]);
    }

    /// Ported from `TestIsJobFinished` (job/util): only a `True` Complete or Failed condition.
    #[test]
    fn a_job_is_finished_only_with_a_true_complete_or_failed_condition() {
        assert!(is_job_finished(&job("a", Some("Complete"), None)));
        assert!(is_job_finished(&job("a", Some("Failed"), None)));
        assert!(!is_job_finished(&job("a", Some("Suspended"), None)));
        assert!(!is_job_finished(&job("a", None, None)));
        let mut j = job("a", Some("Complete"), None);
        j.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
        assert!(!is_job_finished(&j));
        assert!(is_job_succeeded(&job("a", Some("Complete"), None)));
        assert!(!is_job_succeeded(&job("a", Some("Failed"), None)));
    }

    /// Ported from `TestControllerV2GetJobsToBeReconciled`.
    #[test]
    fn jobs_are_matched_to_the_cronjob_by_controller_reference_name() {
        let owned = |name: &str, owner: Option<&str>| {
            let mut j = job(name, None, None);
            j.metadata.owner_references = owner.map(|o| {
                vec![OwnerReference {
                    name: o.into(),
                    controller: Some(true),
                    ..OwnerReference::default()
                }]
            });
            std::sync::Arc::new(j)
        };
        let jobs = [
            owned("foo", None),
            owned("foo-fooer-owner-ref", Some("fooer")),
            owned("foo-other-owner-ref", Some("another-cronjob")),
        ];
        let got: Vec<_> = owned_by("fooer", jobs.iter())
            .into_iter()
            .map(|j| j.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(got, ["foo-fooer-owner-ref"]);
    }

    #[test]
    fn the_active_list_is_edited_by_uid_and_read_by_name() {
        let mut cj = cronjob(None, None);
        let j = job("a", None, None);
        assert!(!in_active_list(&cj, "uid-a"));
        add_to_active_list(&mut cj, job_reference(&j));
        assert!(in_active_list(&cj, "uid-a"));
        assert!(in_active_list_by_name(&cj, "snazzycats", "a"));
        assert!(!in_active_list_by_name(&cj, "other", "a"));
        delete_from_active_list(&mut cj, "uid-a");
        assert!(!in_active_list(&cj, "uid-a"));
    }
}
