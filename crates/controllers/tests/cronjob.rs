//! The CronJob controller (with the Job controller) against the embedded API server, on an
//! injected clock: the tests move time to a start time instead of waiting for it.
//!
//! No node agent runs here: pods stay Pending until a test writes their phase itself.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{CronJob, CronJobSpec, Job, JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{Container, Event, Pod, PodSpec, PodTemplateSpec};
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::Client;
use rkcm_apiserver::testing::{self, TestServer};
use rkcm_controllers::cronjob::{self, CronJobController};
use rkcm_controllers::job::{self as jobctl, JobController};
use rkcm_runtime::events::EventBroadcaster;
use rkcm_runtime::informer::InformerFactory;
use rkcm_runtime::{FakeClock, Shutdown};

const NS: &str = "default";
const DEADLINE: Duration = Duration::from_secs(30);

struct Harness {
    _server: TestServer,
    client: Client,
    clock: FakeClock,
    /// The Job controller's clock: it stamps the Jobs' start times.
    job_clock: FakeClock,
    shutdown: Shutdown,
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// The next top of the hour after the real time, plus `seconds`: the API server stamps
/// creation times with the real clock, the controllers read the fake one.
fn next_hour_plus(seconds: i64) -> Timestamp {
    let now = Timestamp::now().as_second();
    Timestamp::from_second((now / 3600 + 1) * 3600 + seconds).expect("in range")
}

async fn start() -> Harness {
    let server = testing::start().await;
    let client = server.client();
    let shutdown = Shutdown::new();
    let clock = FakeClock::new(Timestamp::now());
    let job_clock = FakeClock::new(Timestamp::now());
    let factory = InformerFactory::new(client.clone(), Duration::ZERO);
    let broadcaster = EventBroadcaster::new(client.clone());
    let cronjobs = CronJobController::new(
        &factory,
        client.clone(),
        broadcaster.recorder(cronjob::CONTROLLER_NAME),
        cronjob::Config {
            clock: Arc::new(clock.clone()),
            local_zone: jiff::tz::TimeZone::UTC,
        },
    );
    let jobs = JobController::new(
        &factory,
        client.clone(),
        broadcaster.recorder(jobctl::CONTROLLER_NAME),
        jobctl::Config {
            sync_batch_period: Duration::ZERO,
            clock: Arc::new(job_clock.clone()),
            ..jobctl::Config::default()
        },
    );
    factory.start(shutdown.clone());
    tokio::spawn(cronjobs.run(2, shutdown.clone()));
    tokio::spawn(jobs.run(2, shutdown.clone()));
    Harness {
        _server: server,
        client,
        clock,
        job_clock,
        shutdown,
    }
}

fn cron_job(name: &str, schedule: &str, policy: &str) -> CronJob {
    CronJob {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        spec: Some(CronJobSpec {
            schedule: schedule.into(),
            concurrency_policy: Some(policy.into()),
            job_template: JobTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some([("team".to_string(), "batch".to_string())].into()),
                    ..Default::default()
                }),
                spec: Some(JobSpec {
                    template: PodTemplateSpec {
                        metadata: None,
                        spec: Some(PodSpec {
                            containers: vec![Container {
                                name: "c".into(),
                                image: Some("busybox".into()),
                                ..Default::default()
                            }],
                            restart_policy: Some("Never".into()),
                            ..Default::default()
                        }),
                    },
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        status: None,
    }
}

async fn eventually<T, F, Fut>(what: &str, check: F) -> Result<T>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Option<T>>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check().await? {
            return Ok(v);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out waiting for {what} (is the controller running?)");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn jobs_of(client: &Client, cronjob: &str) -> Result<Vec<Job>> {
    let jobs: Api<Job> = Api::namespaced(client.clone(), NS);
    let mut list = jobs.list(&ListParams::default()).await?.items;
    list.retain(|j| {
        j.metadata
            .owner_references
            .iter()
            .flatten()
            .any(|r| r.name == cronjob && r.controller == Some(true))
    });
    list.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(list)
}

async fn event_reasons(client: &Client, object: &str) -> Result<Vec<String>> {
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    Ok(events
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref() == Some(object))
        .filter_map(|e| e.reason)
        .collect())
}

/// Sets every pod of the Job Succeeded, as a kubelet would.
async fn succeed_pods(client: &Client, job: &str) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let list = eventually("the job's pod", || async {
        let list = pods
            .list(&ListParams::default().labels(&format!("job-name={job}")))
            .await?;
        Ok((!list.items.is_empty()).then_some(list.items))
    })
    .await?;
    for pod in list {
        let name = pod.metadata.name.unwrap_or_default();
        let patch = serde_json::json!({ "status": { "phase": "Succeeded" } });
        pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .with_context(|| format!("setting {name} Succeeded"))?;
    }
    Ok(())
}

/// Wakes the controller for `name` now (a metadata change requeues it at once).
async fn poke(client: &Client, name: &str, n: u32) -> Result<()> {
    let cronjobs: Api<CronJob> = Api::namespaced(client.clone(), NS);
    let patch = serde_json::json!({ "metadata": { "labels": { "poke": n.to_string() } } });
    cronjobs
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_start_time_creates_the_job_and_its_completion_is_recorded() -> Result<()> {
    let h = start().await;
    let at = next_hour_plus(5);
    h.clock.set(at);
    let cronjobs: Api<CronJob> = Api::namespaced(h.client.clone(), NS);
    cronjobs
        .create(
            &PostParams::default(),
            &cron_job("hourly", "0 * * * *", "Allow"),
        )
        .await
        .context("creating the cronjob")?;

    let job = eventually("the scheduled job", || async {
        Ok(jobs_of(&h.client, "hourly").await?.into_iter().next())
    })
    .await?;
    let minutes = (at.as_second() - 5) / 60;
    assert_eq!(
        job.metadata.name.as_deref(),
        Some(&*format!("hourly-{minutes}"))
    );
    let annotations = job.metadata.annotations.clone().unwrap_or_default();
    let scheduled = Timestamp::from_second(at.as_second() - 5)?;
    assert_eq!(
        annotations
            .get("batch.kubernetes.io/cronjob-scheduled-timestamp")
            .map(String::as_str),
        Some(&*scheduled.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
    );
    let labels = job.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("team").map(String::as_str), Some("batch"));
    let owner = &job.metadata.owner_references.clone().unwrap_or_default()[0];
    assert_eq!(owner.block_owner_deletion, Some(true));

    let cj = eventually("the job listed as active", || async {
        let cj = cronjobs.get("hourly").await?;
        let active = cj
            .status
            .as_ref()
            .and_then(|s| s.active.clone())
            .unwrap_or_default();
        Ok((active.len() == 1).then_some(cj))
    })
    .await?;
    let status = cj.status.unwrap_or_default();
    assert_eq!(status.last_schedule_time.map(|t| t.0), Some(scheduled));

    let name = job.metadata.name.clone().unwrap_or_default();
    succeed_pods(&h.client, &name).await?;
    let cj = eventually("the completion recorded", || async {
        let cj = cronjobs.get("hourly").await?;
        let status = cj.status.clone().unwrap_or_default();
        let done =
            status.active.unwrap_or_default().is_empty() && status.last_successful_time.is_some();
        Ok(done.then_some(cj))
    })
    .await?;
    let job = Api::<Job>::namespaced(h.client.clone(), NS)
        .get(&name)
        .await?;
    let completed = job.status.and_then(|s| s.completion_time).map(|t| t.0);
    assert_eq!(
        cj.status.and_then(|s| s.last_successful_time).map(|t| t.0),
        completed
    );
    let reasons = eventually("the events", || async {
        let reasons = event_reasons(&h.client, "hourly").await?;
        let both = reasons.iter().any(|r| r == "SuccessfulCreate")
            && reasons.iter().any(|r| r == "SawCompletedJob");
        Ok(both.then_some(reasons))
    })
    .await?;
    assert!(!reasons.iter().any(|r| r == "UnexpectedJob"), "{reasons:?}");
    Ok(())
}

#[tokio::test]
async fn replace_deletes_the_running_job_and_forbid_skips_the_start() -> Result<()> {
    let h = start().await;
    let hour = next_hour_plus(0);
    h.clock.set(next_hour_plus(5));
    let cronjobs: Api<CronJob> = Api::namespaced(h.client.clone(), NS);
    for (name, policy) in [("replace", "Replace"), ("forbid", "Forbid")] {
        cronjobs
            .create(&PostParams::default(), &cron_job(name, "0 * * * *", policy))
            .await?;
    }
    for name in ["replace", "forbid"] {
        eventually("the first job active", || async {
            let cj = cronjobs.get(name).await?;
            let active = cj.status.and_then(|s| s.active).unwrap_or_default();
            Ok((active.len() == 1).then_some(()))
        })
        .await?;
    }

    // An hour later, the first Jobs still run.
    h.clock.set(next_hour_plus(3605));
    poke(&h.client, "replace", 1).await?;
    poke(&h.client, "forbid", 1).await?;
    let second = format!("replace-{}", (hour.as_second() + 3600) / 60);
    let first = format!("replace-{}", hour.as_second() / 60);
    eventually("the running job replaced", || async {
        let names: Vec<_> = jobs_of(&h.client, "replace")
            .await?
            .into_iter()
            .filter_map(|j| j.metadata.name)
            .collect();
        Ok((names == [second.clone()]).then_some(()))
    })
    .await?;
    let cj = eventually("only the new job active", || async {
        let cj = cronjobs.get("replace").await?;
        let active = cj.status.clone().and_then(|s| s.active).unwrap_or_default();
        let names: Vec<_> = active.into_iter().filter_map(|r| r.name).collect();
        Ok((names == [second.clone()]).then_some(cj))
    })
    .await?;
    assert_ne!(first, second);
    assert!(cj.status.and_then(|s| s.last_schedule_time).is_some());
    eventually("SuccessfulDelete", || async {
        let reasons = event_reasons(&h.client, "replace").await?;
        Ok(reasons
            .iter()
            .any(|r| r == "SuccessfulDelete")
            .then_some(()))
    })
    .await?;

    eventually("JobAlreadyActive", || async {
        let reasons = event_reasons(&h.client, "forbid").await?;
        Ok(reasons
            .iter()
            .any(|r| r == "JobAlreadyActive")
            .then_some(()))
    })
    .await?;
    assert_eq!(jobs_of(&h.client, "forbid").await?.len(), 1);
    Ok(())
}

#[tokio::test]
async fn a_suspended_cronjob_creates_nothing_but_its_history_is_trimmed() -> Result<()> {
    let h = start().await;
    h.clock.set(next_hour_plus(5));
    let cronjobs: Api<CronJob> = Api::namespaced(h.client.clone(), NS);
    let mut cj = cron_job("trimmed", "0 * * * *", "Allow");
    if let Some(s) = cj.spec.as_mut() {
        s.suspend = Some(true);
        s.successful_jobs_history_limit = Some(1);
    }
    let cj = cronjobs.create(&PostParams::default(), &cj).await?;

    // Three Jobs of the CronJob's, run to completion one after the other.
    let jobs: Api<Job> = Api::namespaced(h.client.clone(), NS);
    let owner = k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
        api_version: "batch/v1".into(),
        kind: "CronJob".into(),
        name: "trimmed".into(),
        uid: cj.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    for i in 0..3 {
        let mut job = Job {
            metadata: ObjectMeta {
                name: Some(format!("trimmed-{i}")),
                namespace: Some(NS.into()),
                owner_references: Some(vec![owner.clone()]),
                ..Default::default()
            },
            spec: cj.spec.as_ref().and_then(|s| s.job_template.spec.clone()),
            status: None,
        };
        if let Some(s) = job.spec.as_mut() {
            s.template.metadata = None;
        }
        jobs.create(&PostParams::default(), &job).await?;
        succeed_pods(&h.client, &format!("trimmed-{i}")).await?;
        eventually("the job complete", || async {
            let j = jobs.get(&format!("trimmed-{i}")).await?;
            Ok(j.status.and_then(|s| s.completion_time).map(|_| ()))
        })
        .await?;
        // Start times are whole seconds: keep them apart so the oldest is well defined.
        h.job_clock.step(Duration::from_secs(60));
    }
    poke(&h.client, "trimmed", 1).await?;
    eventually("the two oldest jobs deleted", || async {
        let names: Vec<_> = jobs_of(&h.client, "trimmed")
            .await?
            .into_iter()
            .filter_map(|j| j.metadata.name)
            .collect();
        Ok((names == ["trimmed-2"]).then_some(()))
    })
    .await?;
    // Suspended: the start time due passed without a Job, and no schedule time was recorded.
    let cj = cronjobs.get("trimmed").await?;
    assert!(cj.status.and_then(|s| s.last_schedule_time).is_none());
    Ok(())
}
