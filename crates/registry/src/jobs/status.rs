//! Job status validation (`ValidateJobStatus`, `ValidateJobStatusUpdate`) with the options
//! `getStatusValidationOptions` of `pkg/registry/batch/job/strategy.go` turns on: most rules
//! apply only when the fields they look at change, so that jobs written by older controllers
//! stay updatable.
//!
//! kube's status strategy turns on every rule of `JobStatusValidationOptions` except
//! `RejectFailedJobWithoutFailureTarget`, `RejectCompleteJobWithoutSuccessCriteriaMet`,
//! `RejectMoreReadyThanActivePods` and `RejectFinishedJobWithTerminatingPods`, which stay off
//! here as there.

use serde_json::{json, Value};

use super::validation::{is_indexed, overlapping_index, parse_indexes};
use crate::meta::validate_nonnegative;
use crate::object::get;
use crate::FieldError;

/// Whether `status.conditions` has a condition of type `ty` with status `True`.
fn condition_true(job: &Value, ty: &str) -> bool {
    get(job, &["status", "conditions"])
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(ty)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

fn complete(job: &Value) -> bool {
    condition_true(job, "Complete")
}

fn failed(job: &Value) -> bool {
    condition_true(job, "Failed")
}

fn finished(job: &Value) -> bool {
    complete(job) || failed(job)
}

fn status<'a>(job: &'a Value, field: &str) -> Option<&'a Value> {
    get(job, &["status", field]).filter(|v| !v.is_null())
}

fn count(job: &Value, field: &str) -> i64 {
    status(job, field).and_then(Value::as_i64).unwrap_or(0)
}

fn changed(new: &Value, old: &Value, field: &str) -> bool {
    status(new, field) != status(old, field)
}

/// The validation of a Job's status as a `/status` update (or a spec update, whose status is
/// the old one and so passes) makes it.
pub(crate) fn validate_status_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for field in ["active", "succeeded", "failed", "ready", "terminating"] {
        errs.extend(validate_nonnegative(
            status(new, field),
            &format!("status.{field}"),
        ));
    }
    let uncounted = status(new, "uncountedTerminatedPods");
    if let Some(uncounted) = uncounted {
        let mut seen = std::collections::BTreeSet::new();
        for list in ["succeeded", "failed"] {
            let uids = uncounted.get(list).and_then(Value::as_array);
            for (i, uid) in uids.into_iter().flatten().enumerate() {
                let path = format!("status.uncountedTerminatedPods.{list}[{i}]");
                let uid = uid.as_str().unwrap_or("");
                if uid.is_empty() {
                    errs.push(FieldError::invalid(path, &json!(uid), "must not be empty"));
                } else if !seen.insert(uid) {
                    errs.push(FieldError::duplicate(path, &json!(uid)));
                }
            }
        }
    }

    let finished_changed = finished(new) != finished(old);
    let complete_changed = complete(new) != complete(old);
    let failed_changed = failed(new) != failed(old);
    let failure_target_changed =
        condition_true(new, "FailureTarget") != condition_true(old, "FailureTarget");
    let completion_time_changed = changed(new, old, "completionTime");
    let start_time_changed = changed(new, old, "startTime");
    let completed_indexes_changed = changed(new, old, "completedIndexes");
    let failed_indexes_changed = changed(new, old, "failedIndexes");
    let completion_time = status(new, "completionTime");
    let start_time = status(new, "startTime");

    if (complete_changed || failed_changed) && complete(new) && failed(new) {
        errs.push(FieldError::invalid_omitting_value(
            "status.conditions",
            "cannot set Complete=True and Failed=true conditions",
        ));
    }
    if (complete_changed || failure_target_changed)
        && complete(new)
        && condition_true(new, "FailureTarget")
    {
        errs.push(FieldError::invalid_omitting_value(
            "status.conditions",
            "cannot set Complete=True and FailureTarget=true conditions",
        ));
    }
    if complete_changed || completion_time_changed {
        match completion_time {
            Some(t) if !complete(new) => errs.push(FieldError::invalid(
                "status.completionTime",
                t,
                "cannot set completionTime when there is no Complete=True condition",
            )),
            None if complete(new) => errs.push(FieldError::required(
                "status.completionTime",
                "completionTime is required for Complete jobs",
            )),
            _ => {}
        }
    }
    if start_time_changed || completion_time_changed {
        if let (Some(c), Some(s)) = (completion_time, start_time) {
            let parse = |v: &Value| v.as_str().and_then(|t| t.parse::<jiff::Timestamp>().ok());
            if let (Some(ct), Some(st)) = (parse(c), parse(s)) {
                if ct < st {
                    errs.push(FieldError::invalid(
                        "status.completionTime",
                        c,
                        "completionTime cannot be set before startTime",
                    ));
                }
            }
        }
    }
    if (finished_changed || changed(new, old, "active"))
        && finished(new)
        && count(new, "active") > 0
    {
        errs.push(FieldError::invalid(
            "status.active",
            &json!(count(new, "active")),
            "active>0 is invalid for finished job",
        ));
    }
    if (finished_changed || start_time_changed) && finished(new) && start_time.is_none() {
        errs.push(FieldError::required(
            "status.startTime",
            "startTime is required for finished job",
        ));
    }
    let uncounted_len = uncounted.map_or(0, |u| {
        ["succeeded", "failed"]
            .iter()
            .filter_map(|l| u.get(*l).and_then(Value::as_array))
            .map(Vec::len)
            .sum()
    });
    if (finished_changed || changed(new, old, "uncountedTerminatedPods"))
        && finished(new)
        && uncounted_len > 0
    {
        errs.push(FieldError::invalid(
            "status.uncountedTerminatedPods",
            uncounted.unwrap_or(&Value::Null),
            "uncountedTerminatedPods needs to be empty for finished job",
        ));
    }

    let spec = get(new, &["spec"]).unwrap_or(&Value::Null);
    let completions = spec.get("completions").and_then(Value::as_i64);
    let per_index = spec.get("backoffLimitPerIndex").filter(|v| !v.is_null());
    let completed_indexes = status(new, "completedIndexes")
        .and_then(Value::as_str)
        .unwrap_or("");
    let failed_indexes = status(new, "failedIndexes");
    if let Some(c) = completions {
        if completed_indexes_changed {
            if let Err(e) = parse_indexes(completed_indexes, c) {
                errs.push(FieldError::invalid(
                    "status.completedIndexes",
                    &json!(completed_indexes),
                    &format!("error parsing completedIndexes: {e}"),
                ));
            }
        }
        if let (Some(_), Some(f), true) = (per_index, failed_indexes, failed_indexes_changed) {
            if let Err(e) = parse_indexes(f.as_str().unwrap_or(""), c) {
                errs.push(FieldError::invalid(
                    "status.failedIndexes",
                    f,
                    &format!("error parsing failedIndexes: {e}"),
                ));
            }
        }
    }
    if completed_indexes_changed && !completed_indexes.is_empty() && !is_indexed(spec) {
        errs.push(FieldError::invalid(
            "status.completedIndexes",
            &json!(completed_indexes),
            "cannot set non-empty completedIndexes when non-indexed completion mode",
        ));
    }
    if failed_indexes_changed && per_index.is_none() {
        if let Some(f) = failed_indexes {
            errs.push(FieldError::invalid(
                "status.failedIndexes",
                f,
                "cannot set non-null failedIndexes when backoffLimitPerIndex is null",
            ));
        }
    }
    if failed_indexes_changed || completed_indexes_changed {
        if let (Some(c), Some(f)) = (completions, failed_indexes) {
            let failed_text = f.as_str().unwrap_or("");
            if let Some(index) = overlapping_index(completed_indexes, failed_text, c) {
                errs.push(FieldError::invalid(
                    "status.failedIndexes",
                    f,
                    &format!("failedIndexes and completedIndexes overlap at index: {index}"),
                ));
            }
        }
    }
    let success_criteria_met = condition_true(new, "SuccessCriteriaMet");
    // `AllowForSuccessCriteriaMetInExtendedScope` is on in 1.33, so SuccessCriteriaMet is not
    // refused for NonIndexed jobs or jobs without a success policy.
    if success_criteria_met && failed(new) {
        errs.push(FieldError::invalid_omitting_value(
            "status.conditions",
            "cannot set SuccessCriteriaMet=True and Failed=true conditions",
        ));
    }
    if success_criteria_met && condition_true(new, "FailureTarget") {
        errs.push(FieldError::invalid_omitting_value(
            "status.conditions",
            "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions",
        ));
    }
    if spec.get("successPolicy").is_some_and(|p| !p.is_null())
        && !success_criteria_met
        && complete(new)
    {
        errs.push(FieldError::invalid_omitting_value(
            "status.conditions",
            "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True",
        ));
    }

    // ValidateJobStatusUpdate.
    for ty in ["Failed", "Complete", "FailureTarget"] {
        if condition_true(old, ty) && !condition_true(new, ty) {
            errs.push(FieldError::invalid_omitting_value(
                "status.conditions",
                &format!("cannot disable the terminal {ty}=True condition"),
            ));
        }
    }
    if count(new, "failed") < count(old, "failed") {
        errs.push(FieldError::invalid(
            "status.failed",
            &json!(count(new, "failed")),
            "cannot decrease the failed counter",
        ));
    }
    // Elastic Indexed jobs (completions scaled with parallelism) may lose succeeded pods.
    let elastic =
        is_indexed(spec) && completions == spec.get("parallelism").and_then(Value::as_i64);
    if !elastic && count(new, "succeeded") < count(old, "succeeded") {
        errs.push(FieldError::invalid(
            "status.succeeded",
            &json!(count(new, "succeeded")),
            "cannot decrease the succeeded counter",
        ));
    }
    if let (Some(n), Some(o)) = (completion_time, status(old, "completionTime")) {
        if n != o {
            errs.push(FieldError::invalid(
                "status.completionTime",
                n,
                "completionTime cannot be mutated",
            ));
        }
    }
    let suspended = spec.get("suspend").and_then(Value::as_bool) == Some(true);
    // Resuming (Suspended True -> not True) restarts the clock: the controller writes a new
    // startTime with the JobResumed condition (kubernetes#134769, in 1.33's patch releases).
    let resuming = condition_true(old, "Suspended") && !condition_true(new, "Suspended");
    if start_time_changed && status(old, "startTime").is_some() && !suspended && !resuming {
        errs.push(FieldError::required(
            "status.startTime",
            "startTime cannot be removed for unsuspended job",
        ));
    }
    let old_success_criteria_met = condition_true(old, "SuccessCriteriaMet");
    if old_success_criteria_met && !success_criteria_met {
        errs.push(FieldError::invalid_omitting_value(
            "status.conditions",
            "cannot disable the SuccessCriteriaMet=True condition",
        ));
    }
    if complete(old) && !old_success_criteria_met && success_criteria_met {
        errs.push(FieldError::invalid_omitting_value(
            "status.conditions",
            "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions",
        ));
    }
    errs
}
