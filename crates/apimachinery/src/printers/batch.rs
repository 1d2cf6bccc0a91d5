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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    const IN_A_MOMENT: &str = "2026-01-01T00:00:01.9Z";
    const TEN_YEARS_AGO: &str = "2016-01-03T00:00:00Z";

    fn job(name: &str, created: &str, status: Value) -> Value {
        json!({"metadata":{"name":name,"creationTimestamp":created},"spec":{},"status":status})
    }

    #[test]
    fn job_rows_match_kube() {
        // TestPrintJob.
        let j = json!({"metadata":{"name":"job1","creationTimestamp":IN_A_MOMENT},
            "spec":{"completions":2,"selector":{"matchLabels":{"job-label":"job-label-value"}},
                "template":{"spec":{"containers":[
                    {"name":"fake-job-container1","image":"fake-job-image1"},
                    {"name":"fake-job-container2","image":"fake-job-image2"}]}}},
            "status":{"succeeded":1}});
        assert_eq!(
            Value::Array(job_cells(&j, now())),
            json!([
                "job1",
                "Running",
                "1/2",
                "",
                "0s",
                "fake-job-container1,fake-job-container2",
                "fake-job-image1,fake-job-image2",
                "job-label=job-label-value"
            ])
        );
        let old = job("job2", TEN_YEARS_AGO, json!({"succeeded":0}));
        assert_eq!(
            &job_cells(&old, now())[..5],
            &json!(["job2", "Running", "0/1", "", "10y"])
                .as_array()
                .unwrap()[..]
        );
        let done = job(
            "job3",
            TEN_YEARS_AGO,
            json!({"startTime":"2026-01-01T00:01:00Z","completionTime":"2026-01-01T00:31:00Z"}),
        );
        assert_eq!(job_cells(&done, now())[3], "30m");
        let running = job(
            "job4",
            TEN_YEARS_AGO,
            json!({"startTime":"2025-12-31T23:40:00Z"}),
        );
        assert_eq!(job_cells(&running, now())[3], "20m");
    }

    #[test]
    fn job_status_follows_kube_precedence() {
        // TestPrintJob job5 to job9, and SuccessCriteriaMet.
        let with = |type_: &str, status: &str| {
            job(
                "j",
                IN_A_MOMENT,
                json!({"conditions":[{"type":type_,"status":status}]}),
            )
        };
        assert_eq!(job_cells(&with("Complete", "True"), now())[1], "Complete");
        assert_eq!(job_cells(&with("Failed", "True"), now())[1], "Failed");
        assert_eq!(job_cells(&with("Suspended", "True"), now())[1], "Suspended");
        assert_eq!(
            job_cells(&with("FailureTarget", "True"), now())[1],
            "FailureTarget"
        );
        assert_eq!(
            job_cells(&with("SuccessCriteriaMet", "True"), now())[1],
            "SuccessCriteriaMet"
        );
        assert_eq!(job_cells(&with("Suspended", "False"), now())[1], "Running");
        let mut deleted = job("job9", IN_A_MOMENT, json!({}));
        deleted["metadata"]["deletionTimestamp"] = json!(IN_A_MOMENT);
        assert_eq!(job_cells(&deleted, now())[1], "Terminating");
        // A finished job stays finished while it is deleted.
        let mut finished = with("Complete", "True");
        finished["metadata"]["deletionTimestamp"] = json!(IN_A_MOMENT);
        assert_eq!(job_cells(&finished, now())[1], "Complete");
    }

    #[test]
    fn job_completions_for_work_queues() {
        let mut j = job("j", IN_A_MOMENT, json!({"succeeded":2}));
        j["spec"]["parallelism"] = json!(3);
        assert_eq!(job_cells(&j, now())[2], "2/1 of 3");
        j["spec"]["parallelism"] = json!(1);
        assert_eq!(job_cells(&j, now())[2], "2/1");
        assert_eq!(job_cells(&j, now())[7], "<none>");
    }

    #[test]
    fn cron_job_rows_match_kube() {
        // TestPrintCronJob.
        let cj = json!({"metadata":{"name":"cronjob1","creationTimestamp":IN_A_MOMENT},
            "spec":{"schedule":"0/5 * * * ?","suspend":false,
                "jobTemplate":{"spec":{"completions":2,"selector":{"matchLabels":{"a":"b"}},
                    "template":{"spec":{"containers":[
                        {"name":"fake-job-container1","image":"fake-job-image1"},
                        {"name":"fake-job-container2","image":"fake-job-image2"}]}}}}},
            "status":{"lastScheduleTime":IN_A_MOMENT}});
        assert_eq!(
            Value::Array(cron_job_cells(&cj, now())),
            json!([
                "cronjob1",
                "0/5 * * * ?",
                "<none>",
                "False",
                0,
                "0s",
                "0s",
                "fake-job-container1,fake-job-container2",
                "fake-job-image1,fake-job-image2",
                "a=b"
            ])
        );
        let mut zoned = cj.clone();
        zoned["spec"]["timeZone"] = json!("LOCAL");
        assert_eq!(cron_job_cells(&zoned, now())[2], "LOCAL");
        let cj2 = json!({"metadata":{"name":"cronjob2","creationTimestamp":"2025-12-31T23:55:00Z"},
            "spec":{"schedule":"0/5 * * * ?","suspend":false},
            "status":{"lastScheduleTime":"2025-12-31T23:59:30Z","active":[{"name":"j"}]}});
        assert_eq!(
            &cron_job_cells(&cj2, now())[..7],
            &json!(["cronjob2", "0/5 * * * ?", "<none>", "False", 1, "30s", "5m"])
                .as_array()
                .unwrap()[..]
        );
        let cj3 = json!({"metadata":{"name":"cronjob3"},"spec":{"schedule":"@hourly"}});
        let c = cron_job_cells(&cj3, now());
        assert_eq!(
            (&c[3], &c[5], &c[9]),
            (&json!("<unset>"), &json!("<none>"), &json!("<none>"))
        );
    }
}
