//! Batch tables: Job and CronJob (`printJob`, `printCronJob`).

use jiff::Timestamp;
use serde_json::Value;

use super::{
    age, array_at, col, containers_and_images, deleting, duration, format_label_selector, int_at,
    name, since, str_at, time_at, wide, Column, Description, AGE, NAME,
};

const CONTAINERS: Column = wide(
    "Containers",
    "string",
    Description::Text("Names of each container in the template."),
);
const IMAGES: Column = wide(
    "Images",
    "string",
    Description::Text("Images referenced by each container in the template."),
);
const SELECTOR: Column = wide(
    "Selector",
    "string",
    Description::Field("io.k8s.api.batch.v1.JobSpec", "selector"),
);

/// Job columns.
pub(super) const JOB_COLUMNS: &[Column] = &[
    NAME,
    col("Status", "string", Description::Text("Status of the job.")),
    col(
        "Completions",
        "string",
        Description::Field("io.k8s.api.batch.v1.JobStatus", "succeeded"),
    ),
    col(
        "Duration",
        "string",
        Description::Text("Time required to complete the job."),
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

/// `hasJobCondition`: whether the first condition of `type_` is true.
fn has_condition(job: &Value, type_: &str) -> bool {
    array_at(job, "/status/conditions")
        .iter()
        .find(|c| str_at(c, "/type") == type_)
        .is_some_and(|c| str_at(c, "/status") == "True")
}

/// The Status cell: terminal conditions first, then deletion, then the interim conditions.
fn job_status(job: &Value) -> &'static str {
    if has_condition(job, "Complete") {
        "Complete"
    } else if has_condition(job, "Failed") {
        "Failed"
    } else if deleting(job) {
        "Terminating"
    } else if has_condition(job, "Suspended") {
        "Suspended"
    } else if has_condition(job, "FailureTarget") {
        "FailureTarget"
    } else if has_condition(job, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

/// The Completions cell: `succeeded/completions`, or `succeeded/1 of parallelism` for a work
/// queue with more than one worker.
fn completions(job: &Value) -> String {
    let succeeded = int_at(job, "/status/succeeded", 0);
    match job.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(completions) => format!("{succeeded}/{completions}"),
        None => match int_at(job, "/spec/parallelism", 0) {
            parallelism if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
            _ => format!("{succeeded}/1"),
        },
    }
}

/// The Duration cell: from start to completion, or to `now` while running; empty before start.
fn job_duration(job: &Value, now: Timestamp) -> String {
    let Some(start) = time_at(job, "/status/startTime") else {
        return String::new();
    };
    let end = time_at(job, "/status/completionTime").unwrap_or(now);
    duration::human_duration(end.as_nanosecond() - start.as_nanosecond())
}

/// The cells of one Job's row.
pub(super) fn job_cells(job: &Value, now: Timestamp) -> Vec<Value> {
    let (containers, images) = containers_and_images(job.pointer("/spec/template/spec"));
    vec![
        name(job),
        job_status(job).into(),
        completions(job).into(),
        job_duration(job, now).into(),
        age(job, now),
        containers.into(),
        images.into(),
        format_label_selector(job.pointer("/spec/selector")).into(),
    ]
}

const CRON_JOB_SPEC: &str = "io.k8s.api.batch.v1.CronJobSpec";
const CRON_JOB_STATUS: &str = "io.k8s.api.batch.v1.CronJobStatus";

/// CronJob columns.
pub(super) const CRON_JOB_COLUMNS: &[Column] = &[
    NAME,
    col(
        "Schedule",
        "string",
        Description::Field(CRON_JOB_SPEC, "schedule"),
    ),
    col(
        "Timezone",
        "string",
        Description::Field(CRON_JOB_SPEC, "timeZone"),
    ),
    col(
        "Suspend",
        "boolean",
        Description::Field(CRON_JOB_SPEC, "suspend"),
    ),
    col(
        "Active",
        "integer",
        Description::Field(CRON_JOB_STATUS, "active"),
    ),
    col(
        "Last Schedule",
        "string",
        Description::Field(CRON_JOB_STATUS, "lastScheduleTime"),
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

/// `printBoolPtr`: `True`, `False` or `<unset>`.
pub(super) fn bool_ptr(v: &Value, pointer: &str) -> &'static str {
    match v.pointer(pointer).and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    }
}

/// The cells of one CronJob's row.
pub(super) fn cron_job_cells(cj: &Value, now: Timestamp) -> Vec<Value> {
    let last_schedule = match time_at(cj, "/status/lastScheduleTime") {
        Some(t) => since(Some(t), now),
        None => "<none>".to_string(),
    };
    let time_zone = cj
        .pointer("/spec/timeZone")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    let job_spec = cj.pointer("/spec/jobTemplate/spec");
    let (containers, images) =
        containers_and_images(job_spec.and_then(|s| s.pointer("/template/spec")));
    vec![
        name(cj),
        str_at(cj, "/spec/schedule").into(),
        time_zone.into(),
        bool_ptr(cj, "/spec/suspend").into(),
        (array_at(cj, "/status/active").len() as i64).into(),
        last_schedule.into(),
        age(cj, now),
        containers.into(),
        images.into(),
        format_label_selector(job_spec.and_then(|s| s.get("selector"))).into(),
    ]
}
