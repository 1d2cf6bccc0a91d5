//! CronJobs: defaults (`SetDefaults_CronJob`, the job template's pod defaults), validation
//! (`ValidateCronJobCreate`/`Update`: schedule, time zone, history limits, the job template)
//! and the status split.
//!
//! Mirrors `pkg/registry/batch/cronjob/strategy.go`, `pkg/apis/batch/v1/defaults.go` and
//! `pkg/apis/batch/validation/validation.go` of kube 1.33. Schedules are parsed by
//! [`rkcm_apimachinery::cron`], as kube parses them with robfig/cron. Time zones come from the
//! system tz database (`/usr/share/zoneinfo`), as Go's `time.LoadLocation` reads it first.

use rkcm_apimachinery::catalog::ResourceInfo;
use rkcm_apimachinery::cron;
use serde_json::{json, Value};

use super::generic::GenericStrategy;
use super::meta::validate_nonnegative;
use super::object::{default_field, get, object_mut};
use super::simple::{no_checks, SimpleStrategy};
use super::FieldError;

/// The cronjob controller names its jobs `<cronjob>-<11 characters>`, and job names must fit in
/// a label value: 63 - 11.
const MAX_NAME_LENGTH: usize = 52;

/// `SetDefaults_CronJob`; the job template gets only its pod template's defaults (kube has no
/// `SetDefaults_JobSpec` for templates).
fn default_cron_job(obj: &mut Value) {
    if let Some(spec) = object_mut(obj, &["spec"]) {
        default_field(spec, "concurrencyPolicy", json!("Allow"));
        default_field(spec, "suspend", json!(false));
        default_field(spec, "successfulJobsHistoryLimit", json!(3));
        default_field(spec, "failedJobsHistoryLimit", json!(1));
        if let Some(job_spec) = spec
            .get_mut("jobTemplate")
            .and_then(|t| t.get_mut("spec"))
            .filter(|s| s.is_object())
        {
            super::jobs::default_job_template(job_spec);
        }
    }
}

/// `validateScheduleFormat`: robfig's parse error, and no `TZ=` in the schedule unless the old
/// schedule already had one (then not together with `spec.timeZone`).
fn validate_schedule(schedule: &str, allow_tz: bool, time_zone: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = "spec.schedule";
    if let Err(e) = cron::parse_standard(schedule) {
        errs.push(FieldError::invalid(path, &json!(schedule), &e.to_string()));
    }
    if schedule.contains("TZ") {
        if !allow_tz {
            errs.push(FieldError::invalid(
                path,
                &json!(schedule),
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        } else if time_zone {
            errs.push(FieldError::invalid(
                path,
                &json!(schedule),
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            ));
        }
    }
    errs
}

/// `validateTimeZone`: an IANA name the tz database knows, never `Local`.
fn validate_time_zone(tz: &Value) -> Vec<FieldError> {
    let path = "spec.timeZone";
    let name = tz.as_str().unwrap_or("");
    if name.is_empty() {
        return vec![FieldError::invalid(
            path,
            tz,
            "timeZone must be nil or non-empty string",
        )];
    }
    let part_ok = |part: &str| {
        part != "."
            && part != ".."
            && !part.starts_with('-')
            && (1..=14).contains(&part.len())
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-_+".contains(c))
    };
    if !name.split('/').all(part_ok) {
        return vec![FieldError::invalid(
            path,
            tz,
            &format!("unknown time zone {name}"),
        )];
    }
    let mut errs = Vec::new();
    if name.eq_ignore_ascii_case("Local") {
        errs.push(FieldError::invalid(
            path,
            tz,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    // Go's LoadLocation knows "UTC" and "Local" without the database.
    if name != "UTC" && name != "Local" && jiff::tz::TimeZone::get(name).is_err() {
        errs.push(FieldError::invalid(
            path,
            tz,
            &format!("unknown time zone {name}"),
        ));
    }
    errs
}

/// `validateCronJobSpec`; `old` is the old object on update.
fn validate_spec(obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = get(obj, &["spec"]).unwrap_or(&Value::Null);
    let schedule = spec.get("schedule").and_then(Value::as_str).unwrap_or("");
    let time_zone = spec.get("timeZone").filter(|v| !v.is_null());
    if schedule.is_empty() {
        errs.push(FieldError::required("spec.schedule", ""));
    } else {
        let allow_tz = old
            .and_then(|o| get(o, &["spec", "schedule"]))
            .and_then(Value::as_str)
            .is_some_and(|s| s.contains("TZ"));
        errs.extend(validate_schedule(schedule, allow_tz, time_zone.is_some()));
    }
    errs.extend(validate_nonnegative(
        spec.get("startingDeadlineSeconds"),
        "spec.startingDeadlineSeconds",
    ));
    let old_time_zone = old.and_then(|o| get(o, &["spec", "timeZone"]).filter(|v| !v.is_null()));
    if old.is_none() || old_time_zone != time_zone {
        errs.extend(time_zone.map(validate_time_zone).unwrap_or_default());
    }
    let policy = spec.get("concurrencyPolicy").unwrap_or(&Value::Null);
    match policy.as_str().unwrap_or("") {
        "Allow" | "Forbid" | "Replace" => {}
        "" => errs.push(FieldError::required("spec.concurrencyPolicy", "")),
        _ => errs.push(FieldError::not_supported(
            "spec.concurrencyPolicy",
            policy,
            &["Allow", "Forbid", "Replace"],
        )),
    }
    let empty = json!({});
    let template = spec
        .get("jobTemplate")
        .filter(|v| !v.is_null())
        .unwrap_or(&empty);
    errs.extend(super::jobs::validate_job_template_spec(
        template,
        "spec.jobTemplate",
    ));
    for limit in ["successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        errs.extend(validate_nonnegative(
            spec.get(limit),
            &format!("spec.{limit}"),
        ));
    }
    errs
}

/// `ValidateCronJobCreate` beyond the metadata: the spec, and a name short enough for the
/// jobs the controller names after it.
fn validate_create(obj: &Value) -> Vec<FieldError> {
    let mut errs = validate_spec(obj, None);
    let name = get(obj, &["metadata", "name"])
        .and_then(Value::as_str)
        .unwrap_or("");
    if name.len() > MAX_NAME_LENGTH {
        errs.push(FieldError::invalid(
            "metadata.name",
            &json!(name),
            "must be no more than 52 characters",
        ));
    }
    errs
}

/// `ValidateCronJobUpdate` beyond the metadata; the name limit is not applied, so that older
/// cronjobs with longer names can still be updated and deleted.
fn validate_update(new: &Value, old: &Value) -> Vec<FieldError> {
    validate_spec(new, Some(old))
}

/// The strategy of `info` (batch/v1 cron jobs): generic bookkeeping with generations, plus the
/// above; the spec is validated against the old object on update, so it is not among the
/// checks run on every write.
pub(crate) fn strategy(info: &'static ResourceInfo) -> SimpleStrategy {
    SimpleStrategy::new(
        GenericStrategy::new(info).tracking_generation(),
        default_cron_job,
        no_checks,
        validate_update,
    )
    .with_create_only_checks(validate_create)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Strategy;
    use rkcm_apimachinery::catalog;

    fn strategy() -> SimpleStrategy {
        super::strategy(catalog::by_kind("batch/v1", "CronJob").expect("served"))
    }

    fn cron_job() -> Value {
        json!({
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "hello", "namespace": "default"},
            "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "containers": [{"name": "hello", "image": "busybox:1.36"}], "restartPolicy": "OnFailure"}}}}}
        })
    }

    fn created() -> Value {
        let mut c = cron_job();
        strategy().default(&mut c);
        strategy().prepare_for_create(&mut c);
        c
    }

    /// A change to a valid object and the one error kube reports for it.
    type Case = (fn(&mut Value), &'static str);

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(FieldError::message_with_field).collect()
    }

    fn create_errors(mutate: impl FnOnce(&mut Value)) -> Vec<String> {
        let mut c = created();
        mutate(&mut c);
        messages(&strategy().validate_create(&c))
    }

    #[test]
    fn defaults_follow_set_defaults_cron_job() {
        // TestSetDefaultCronJob.
        let c = created();
        assert_eq!(c["spec"]["concurrencyPolicy"], "Allow");
        assert_eq!(c["spec"]["suspend"], false);
        assert_eq!(c["spec"]["successfulJobsHistoryLimit"], 3);
        assert_eq!(c["spec"]["failedJobsHistoryLimit"], 1);
        let job_spec = &c["spec"]["jobTemplate"]["spec"];
        assert_eq!(job_spec["template"]["spec"]["dnsPolicy"], "ClusterFirst");
        assert!(
            job_spec.get("backoffLimit").is_none(),
            "job templates keep their job fields unset"
        );
        assert_eq!(c["metadata"]["generation"], 1);
        assert_eq!(c["status"], json!({}));
        assert!(
            strategy().validate_create(&c).is_empty(),
            "{:?}",
            strategy().validate_create(&c)
        );
        let mut custom = cron_job();
        custom["spec"]["concurrencyPolicy"] = json!("Forbid");
        custom["spec"]["successfulJobsHistoryLimit"] = json!(0);
        strategy().default(&mut custom);
        assert_eq!(custom["spec"]["concurrencyPolicy"], "Forbid");
        assert_eq!(custom["spec"]["successfulJobsHistoryLimit"], 0);
    }

    #[test]
    fn spec_errors_carry_kube_messages() {
        // Cases of TestValidateCronJob.
        let cases: Vec<Case> = vec![
            (|c| c["spec"]["schedule"] = json!(""), "spec.schedule: Required value"),
            (
                |c| c["spec"]["schedule"] = json!("error"),
                "spec.schedule: Invalid value: \"error\": expected exactly 5 fields, found 1: [error]",
            ),
            (
                |c| c["spec"]["schedule"] = json!("TZ=UTC 0 * * * *"),
                "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ),
            (
                |c| c["spec"]["startingDeadlineSeconds"] = json!(-1),
                "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                |c| c["spec"]["successfulJobsHistoryLimit"] = json!(-1),
                "spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                |c| c["spec"]["failedJobsHistoryLimit"] = json!(-1),
                "spec.failedJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                |c| c["spec"]["concurrencyPolicy"] = json!("Sometimes"),
                "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
            ),
            (
                |c| c["spec"]["timeZone"] = json!(""),
                "spec.timeZone: Invalid value: \"\": timeZone must be nil or non-empty string",
            ),
            (
                |c| c["spec"]["timeZone"] = json!("Local"),
                "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
            ),
            (
                |c| c["spec"]["timeZone"] = json!("America/New_Yrok"),
                "spec.timeZone: Invalid value: \"America/New_Yrok\": unknown time zone America/New_Yrok",
            ),
            (
                |c| c["spec"]["timeZone"] = json!("../etc/passwd"),
                "spec.timeZone: Invalid value: \"../etc/passwd\": unknown time zone ../etc/passwd",
            ),
            (
                |c| c["spec"]["jobTemplate"]["spec"]["selector"] = json!({"matchLabels": {"a": "b"}}),
                "spec.jobTemplate.spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"}}: `selector` will be auto-generated",
            ),
            (
                |c| c["spec"]["jobTemplate"]["spec"]["manualSelector"] = json!(true),
                "spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: \"nil\", \"false\"",
            ),
            (
                |c| c["spec"]["jobTemplate"]["spec"]["parallelism"] = json!(-1),
                "spec.jobTemplate.spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                |c| c["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = json!("Always"),
                "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            ),
            (
                |c| c["metadata"]["name"] = json!("a".repeat(53)),
                "metadata.name: Invalid value: \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": must be no more than 52 characters",
            ),
        ];
        for (mutate, want) in cases {
            assert_eq!(create_errors(mutate), [want]);
        }
        for ok in ["America/New_York", "UTC", "Etc/GMT+5"] {
            assert!(
                create_errors(|c| c["spec"]["timeZone"] = json!(ok)).is_empty(),
                "{ok}"
            );
        }
    }

    #[test]
    fn updates_allow_old_tz_schedules_and_long_names() {
        let s = strategy();
        let mut old = created();
        old["metadata"]["name"] = json!("a".repeat(60));
        old["spec"]["schedule"] = json!("TZ=UTC 0 * * * *");
        let mut new = old.clone();
        new["spec"]["schedule"] = json!("TZ=UTC 5 * * * *");
        s.prepare_for_update(&mut new, &old);
        assert_eq!(new["metadata"]["generation"], 2);
        assert!(
            s.validate_update(&new, &old).is_empty(),
            "{:?}",
            s.validate_update(&new, &old)
        );
        new["spec"]["timeZone"] = json!("UTC");
        assert_eq!(
            messages(&s.validate_update(&new, &old)),
            ["spec.schedule: Invalid value: \"TZ=UTC 5 * * * *\": cannot use both timeZone field and TZ or CRON_TZ in schedule"]
        );
    }

    #[test]
    fn status_updates_keep_the_spec() {
        let s = strategy();
        let old = created();
        let mut new = old.clone();
        new["spec"]["suspend"] = json!(true);
        new["status"] = json!({"lastScheduleTime": "2024-01-01T00:00:00Z"});
        s.prepare_for_status_update(&mut new, &old);
        assert_eq!(new["spec"], old["spec"]);
        assert_eq!(new["status"]["lastScheduleTime"], "2024-01-01T00:00:00Z");
        assert_eq!(new["metadata"]["generation"], 1);
    }
}
