//! Job conditions: building, finding and setting them as kube's `newCondition`,
//! `findConditionByType` and `ensureJobConditionStatus` do.

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{Job, JobCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// `Complete`: the Job succeeded and all its pods are gone or finished.
pub const COMPLETE: &str = "Complete";
/// `Failed`: the Job failed and all its pods are gone or finished.
pub const FAILED: &str = "Failed";
/// `SuccessCriteriaMet`: the Job succeeded; pods may still be terminating.
pub const SUCCESS_CRITERIA_MET: &str = "SuccessCriteriaMet";
/// `FailureTarget`: the Job failed; pods may still be terminating.
pub const FAILURE_TARGET: &str = "FailureTarget";
/// `Suspended`: whether the Job is suspended.
pub const SUSPENDED: &str = "Suspended";

/// Reason of a Job that ran more failed pods than `backoffLimit`.
pub const REASON_BACKOFF_LIMIT_EXCEEDED: &str = "BackoffLimitExceeded";
/// Reason of a Job that ran longer than `activeDeadlineSeconds`.
pub const REASON_DEADLINE_EXCEEDED: &str = "DeadlineExceeded";
/// Reason of a Job that reached its completions.
pub const REASON_COMPLETIONS_REACHED: &str = "CompletionsReached";
/// Message of [`REASON_BACKOFF_LIMIT_EXCEEDED`].
pub const MESSAGE_BACKOFF_LIMIT_EXCEEDED: &str = "Job has reached the specified backoff limit";
/// Message of [`REASON_DEADLINE_EXCEEDED`].
pub const MESSAGE_DEADLINE_EXCEEDED: &str = "Job was active longer than specified deadline";
/// Message of [`REASON_COMPLETIONS_REACHED`].
pub const MESSAGE_COMPLETIONS_REACHED: &str = "Reached expected number of succeeded pods";

/// A condition of `type_` that changed at `now`.
pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> JobCondition {
    JobCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message.to_string()),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// The condition of `type_`, if the list has one.
pub fn find<'a>(conditions: &'a [JobCondition], type_: &str) -> Option<&'a JobCondition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The condition of `type_` if it is `True`.
pub fn find_true<'a>(job: &'a Job, type_: &str) -> Option<&'a JobCondition> {
    let conditions = job.status.as_ref()?.conditions.as_deref()?;
    find(conditions, type_).filter(|c| c.status == "True")
}

/// Whether the Job has a `Complete` or `Failed` condition that is `True` (`util.IsJobFinished`).
pub fn is_finished(job: &Job) -> bool {
    find_true(job, COMPLETE).is_some() || find_true(job, FAILED).is_some()
}

/// Sets the condition of `type_` to `status`, `reason` and `message`, replacing one that differs
/// and appending a new one unless it would be `False` (going from nothing to `False` means
/// nothing). Returns whether the list changed (`ensureJobConditionStatus`).
pub fn ensure_status(
    conditions: &mut Vec<JobCondition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> bool {
    if let Some(existing) = conditions.iter_mut().find(|c| c.type_ == type_) {
        if existing.status != status
            || existing.reason.as_deref().unwrap_or("") != reason
            || existing.message.as_deref().unwrap_or("") != message
        {
            *existing = new_condition(type_, status, reason, message, now);
            return true;
        }
        return false;
    }
    if status != "False" {
        conditions.push(new_condition(type_, status, reason, message, now));
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).expect("valid")
    }

    /// Ported from job_controller_test.go `TestEnsureJobConditions`.
    #[test]
    fn ensure_status_appends_updates_or_leaves_the_list_alone() {
        let mut list = Vec::new();
        assert!(!ensure_status(
            &mut list,
            SUSPENDED,
            "False",
            "JobResumed",
            "Job resumed",
            now()
        ));
        assert!(list.is_empty(), "nothing to False is not recorded");

        assert!(ensure_status(
            &mut list,
            SUSPENDED,
            "True",
            "JobSuspended",
            "Job suspended",
            now()
        ));
        assert_eq!(list.len(), 1);
        assert!(!ensure_status(
            &mut list,
            SUSPENDED,
            "True",
            "JobSuspended",
            "Job suspended",
            now()
        ));

        let later = now() + jiff::SignedDuration::from_secs(5);
        assert!(ensure_status(
            &mut list,
            SUSPENDED,
            "False",
            "JobResumed",
            "Job resumed",
            later
        ));
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].status, "False");
        assert_eq!(list[0].reason.as_deref(), Some("JobResumed"));
        assert_eq!(list[0].last_transition_time, Some(Time(later)));

        assert!(ensure_status(&mut list, COMPLETE, "True", "", "", later));
        assert_eq!(list.len(), 2);
    }

    #[test]
    fn a_job_is_finished_only_with_a_true_complete_or_failed_condition() {
        let mut job = Job::default();
        assert!(!is_finished(&job));
        let status = job.status.get_or_insert_with(Default::default);
        status.conditions = Some(vec![new_condition(
            SUCCESS_CRITERIA_MET,
            "True",
            "",
            "",
            now(),
        )]);
        assert!(!is_finished(&job));
        let status = job.status.get_or_insert_with(Default::default);
        status.conditions = Some(vec![new_condition(FAILED, "False", "", "", now())]);
        assert!(!is_finished(&job));
        let status = job.status.get_or_insert_with(Default::default);
        status.conditions = Some(vec![new_condition(FAILED, "True", "", "", now())]);
        assert!(is_finished(&job));
    }
}
