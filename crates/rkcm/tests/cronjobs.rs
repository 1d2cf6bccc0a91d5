//! End to end: CronJobs on `rkcm up`, driven by the real kubectl, in one cluster. The scenarios
//! share the cluster and the same start time (the next minute), so they run side by side.

mod common;

use std::time::Duration;

use common::Cluster;

/// A `*/1` schedule fires within a minute; the Job then needs its pod to run.
const FIRE: Duration = Duration::from_secs(150);

fn apply(cluster: &Cluster, manifest: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("manifest.yaml");
    std::fs::write(&path, manifest).expect("manifest written");
    cluster.kubectl(&["apply", "-f", path.to_str().expect("utf-8 path")]);
}

/// Names of the Jobs whose controller is the CronJob `cronjob`.
fn jobs_of(cluster: &Cluster, cronjob: &str) -> Vec<String> {
    let out = cluster.jsonpath(
        &["get", "jobs"],
        r#"{range .items[*]}{.metadata.name}{" "}{.metadata.ownerReferences[0].name}{"\n"}{end}"#,
    );
    out.lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, owner)| *owner == cronjob)
        .map(|(name, _)| name.to_string())
        .collect()
}

fn complete(cluster: &Cluster, job: &str) -> bool {
    cluster.jsonpath(
        &["get", "job", job],
        r#"{.status.conditions[?(@.type=="Complete")].status}"#,
    ) == "True"
}

#[test]
fn cronjobs_fire_record_their_runs_and_keep_their_history() {
    let cluster = Cluster::start(&["--pod-ready-delay", "100ms"]);

    // Every minute, a Job echoing "hi".
    cluster.kubectl(&[
        "create",
        "cronjob",
        "hello",
        "--image=busybox",
        "--schedule=*/1 * * * *",
        "--",
        "sh",
        "-c",
        "echo hi",
    ]);
    // The same, suspended from the start, and one that keeps a single successful Job.
    apply(
        &cluster,
        r#"apiVersion: batch/v1
kind: CronJob
metadata:
  name: sleepy
spec:
  schedule: "*/1 * * * *"
  suspend: true
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: c
              image: busybox
              command: ["sh", "-c", "echo hi"]
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: trim
spec:
  schedule: "*/1 * * * *"
  successfulJobsHistoryLimit: 1
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
            - name: c
              image: busybox
              command: ["sh", "-c", "echo hi"]
"#,
    );
    // Defaults as kube's: Allow, not suspended, 3 successful and 1 failed Job kept.
    let defaults = cluster.jsonpath(
        &["get", "cronjob", "hello"],
        "{.spec.concurrencyPolicy} {.spec.suspend} {.spec.successfulJobsHistoryLimit} {.spec.failedJobsHistoryLimit}",
    );
    assert_eq!(defaults, "Allow false 3 1");

    // A Job started by hand from a CronJob's template runs at once.
    cluster.kubectl(&["create", "job", "manual", "--from=cronjob/hello"]);
    cluster.kubectl(&["create", "job", "trim-manual", "--from=cronjob/trim"]);
    cluster.kubectl(&[
        "wait",
        "--for=condition=complete",
        "job/manual",
        "job/trim-manual",
        "--timeout=60s",
    ]);
    assert_eq!(cluster.kubectl(&["logs", "job/manual"]), "hi\n");
    assert!(jobs_of(&cluster, "hello").contains(&"manual".to_string()));

    // The next minute's Job is created, named after its start time, runs and completes.
    let scheduled = cluster.eventually("hello's scheduled job", FIRE, || {
        jobs_of(&cluster, "hello")
            .into_iter()
            .find(|name| name != "manual")
    });
    let minutes: i64 = scheduled
        .strip_prefix("hello-")
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("job name {scheduled} is hello-<minutes>"));
    let stamp = cluster.jsonpath(
        &["get", "job", &scheduled],
        r#"{.metadata.annotations.batch\.kubernetes\.io/cronjob-scheduled-timestamp}"#,
    );
    let stamp: jiff::Timestamp = stamp.parse().expect("an RFC 3339 scheduled timestamp");
    assert_eq!(stamp.as_second(), minutes * 60);
    cluster.eventually("hello's job complete", FIRE, || {
        complete(&cluster, &scheduled).then_some(())
    });
    assert_eq!(
        cluster.kubectl(&["logs", &format!("job/{scheduled}")]),
        "hi\n"
    );

    // The CronJob records the run.
    let last_successful = cluster.eventually("lastSuccessfulTime", FIRE, || {
        let t = cluster.jsonpath(&["get", "cronjob", "hello"], "{.status.lastSuccessfulTime}");
        (!t.is_empty()).then_some(t)
    });
    assert!(last_successful.parse::<jiff::Timestamp>().is_ok());
    let last_schedule =
        cluster.jsonpath(&["get", "cronjob", "hello"], "{.status.lastScheduleTime}");
    let last_schedule: jiff::Timestamp = last_schedule.parse().expect("lastScheduleTime");
    assert!(last_schedule.as_second() >= minutes * 60);
    let table = cluster.kubectl(&["get", "cronjob", "hello"]);
    let mut lines = table.lines();
    let header = lines.next().expect("a header");
    let row = lines.next().expect("a row");
    let col = header
        .find("LAST SCHEDULE")
        .expect("a LAST SCHEDULE column");
    let cell = row[col..].split_whitespace().next().unwrap_or_default();
    assert!(
        cell != "<none>" && cell.ends_with(['s', 'm']),
        "LAST SCHEDULE shows {cell:?}:\n{table}"
    );
    let events = cluster.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=hello",
    ]);
    assert!(events.contains("SuccessfulCreate"), "{events}");

    // trim keeps one successful Job: the manual one, older, goes once the scheduled one is done.
    let kept = cluster.eventually("trim's history trimmed to one job", FIRE, || {
        let jobs = jobs_of(&cluster, "trim");
        (jobs.len() == 1 && jobs[0] != "trim-manual" && complete(&cluster, &jobs[0]))
            .then(|| jobs[0].clone())
    });
    assert!(kept.starts_with("trim-"));

    // The suspended CronJob created nothing, and its status stayed empty.
    assert!(jobs_of(&cluster, "sleepy").is_empty());
    let status = cluster.jsonpath(&["get", "cronjob", "sleepy"], "{.status}");
    assert!(status.is_empty() || status == "{}", "status {status}");
}
