//! The Job controller against the embedded API server.
//!
//! No node agent runs here: pods stay Pending until a test writes their phase itself.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::Client;
use rkcm_apiserver::testing::{self, TestServer};

mod support;
use rkcm_controllers::job::{Config, JobController};
use rkcm_runtime::events::EventBroadcaster;
use rkcm_runtime::informer::InformerFactory;
use rkcm_runtime::Shutdown;

const NS: &str = "default";
const DEADLINE: Duration = Duration::from_secs(30);
const FINALIZER: &str = "batch.kubernetes.io/job-tracking";

struct Harness {
    _server: TestServer,
    client: Client,
    shutdown: Shutdown,
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn start() -> Harness {
    let server = testing::start().await;
    let client = server.client();
    let shutdown = Shutdown::new();
    let factory = InformerFactory::new(client.clone(), Duration::ZERO);
    let broadcaster = EventBroadcaster::new(client.clone());
    let ctrl = JobController::new(
        &factory,
        client.clone(),
        broadcaster.recorder("job-controller"),
        Config {
            sync_batch_period: Duration::ZERO,
            ..Config::default()
        },
    );
    factory.start(shutdown.clone());
    tokio::spawn(ctrl.run(2, shutdown.clone()));
    Harness {
        _server: server,
        client,
        shutdown,
    }
}

fn job(name: &str, parallelism: i32, completions: i32) -> Job {
    let labels = BTreeMap::from([("job-name".to_string(), name.to_string())]);
    Job {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        spec: Some(JobSpec {
            parallelism: Some(parallelism),
            completions: Some(completions),
            backoff_limit: Some(6),
            selector: Some(LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            }),
            manual_selector: Some(true),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
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
        status: None,
    }
}

/// Polls `check` until it returns `Ok(Some(v))` or the deadline passes.
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
            bail!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn pods_of(client: &Client, job: &str) -> Result<Vec<Pod>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let list = pods
        .list(&ListParams::default().labels(&format!("job-name={job}")))
        .await
        .context("listing pods")?;
    Ok(list.items)
}

/// Writes the pod's phase, as a kubelet would.
async fn set_phase(client: &Client, name: &str, phase: &str) -> Result<()> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let patch = serde_json::json!({ "status": { "phase": phase } });
    pods.patch_status(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .with_context(|| format!("setting {name} {phase}"))?;
    Ok(())
}

fn has_condition(job: &Job, type_: &str, reason: &str) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.type_ == type_ && c.status == "True" && c.reason.as_deref() == Some(reason)
            })
        })
}

#[tokio::test]
async fn a_job_runs_its_pods_to_completion_and_releases_them() -> Result<()> {
    let h = start().await;
    let jobs: Api<Job> = Api::namespaced(h.client.clone(), NS);
    jobs.create(&PostParams::default(), &job("pi", 2, 3))
        .await
        .context("creating job")?;

    // Two pods at a time, each with the tracking finalizer.
    let first = eventually("two pods", || async {
        let pods = pods_of(&h.client, "pi").await?;
        Ok((pods.len() == 2).then_some(pods))
    })
    .await?;
    for pod in &first {
        let finalizers = pod.metadata.finalizers.clone().unwrap_or_default();
        assert_eq!(finalizers, [FINALIZER]);
        assert!(pod
            .metadata
            .name
            .as_deref()
            .is_some_and(|n| n.starts_with("pi-")));
    }

    // Every pod that succeeds is counted and replaced until three have.
    for round in 0..3 {
        let pods = eventually("a running pod", || async {
            let pods = pods_of(&h.client, "pi").await?;
            Ok(pods
                .into_iter()
                .find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Succeeded")))
        })
        .await?;
        let name = pods.metadata.name.clone().unwrap_or_default();
        set_phase(&h.client, &name, "Succeeded").await?;
        eventually("the success counted", || async {
            let job = jobs.get("pi").await?;
            let succeeded = job.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0);
            Ok((succeeded > round).then_some(()))
        })
        .await?;
    }
    let done = eventually("Complete", || async {
        let job = jobs.get("pi").await?;
        Ok(has_condition(&job, "Complete", "CompletionsReached").then_some(job))
    })
    .await?;
    let status = done.status.clone().unwrap_or_default();
    assert_eq!(status.succeeded, Some(3));
    assert!(status.completion_time.is_some());
    assert!(status.start_time.is_some());
    assert!(has_condition(
        &done,
        "SuccessCriteriaMet",
        "CompletionsReached"
    ));
    // No pod keeps the finalizer.
    eventually("finalizers removed", || async {
        let pods = pods_of(&h.client, "pi").await?;
        Ok(pods
            .iter()
            .all(|p| p.metadata.finalizers.as_ref().is_none_or(|f| f.is_empty()))
            .then_some(()))
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_failure_beyond_the_backoff_limit_fails_the_job() -> Result<()> {
    let h = start().await;
    let jobs: Api<Job> = Api::namespaced(h.client.clone(), NS);
    let mut j = job("fails", 2, 2);
    j.spec.as_mut().expect("spec").backoff_limit = Some(0);
    jobs.create(&PostParams::default(), &j)
        .await
        .context("creating job")?;
    let pods = eventually("two pods", || async {
        let pods = pods_of(&h.client, "fails").await?;
        Ok((pods.len() == 2).then_some(pods))
    })
    .await?;
    let name = pods[0].metadata.name.clone().unwrap_or_default();
    set_phase(&h.client, &name, "Failed").await?;
    let failed = eventually("Failed", || async {
        let job = jobs.get("fails").await?;
        Ok(has_condition(&job, "Failed", "BackoffLimitExceeded").then_some(job))
    })
    .await?;
    assert!(has_condition(
        &failed,
        "FailureTarget",
        "BackoffLimitExceeded"
    ));
    let status = failed.status.clone().unwrap_or_default();
    // The running pod was deleted and counted as failed too.
    assert_eq!(status.failed, Some(2));
    assert_eq!(status.active, None);
    assert_eq!(status.terminating, Some(0));
    Ok(())
}

#[tokio::test]
async fn suspending_a_job_deletes_its_pods_and_resuming_recreates_them() -> Result<()> {
    let h = start().await;
    let jobs: Api<Job> = Api::namespaced(h.client.clone(), NS);
    jobs.create(&PostParams::default(), &job("pause", 2, 4))
        .await
        .context("creating job")?;
    eventually("two pods", || async {
        Ok((pods_of(&h.client, "pause").await?.len() == 2).then_some(()))
    })
    .await?;
    let suspend = serde_json::json!({ "spec": { "suspend": true } });
    jobs.patch("pause", &PatchParams::default(), &Patch::Merge(&suspend))
        .await
        .context("suspending")?;
    eventually("pods deleted and Suspended", || async {
        let job = jobs.get("pause").await?;
        let pods = pods_of(&h.client, "pause").await?;
        Ok((pods.is_empty() && has_condition(&job, "Suspended", "JobSuspended")).then_some(()))
    })
    .await?;
    // Resuming writes a new startTime: let the clock pass the old one's second, so that the
    // server sees it change (kubernetes#134521).
    let started = jobs
        .get("pause")
        .await?
        .status
        .and_then(|s| s.start_time)
        .context("startTime of the suspended job")?;
    eventually("a new second", || async {
        Ok((jiff::Timestamp::now().as_second() > started.0.as_second()).then_some(()))
    })
    .await?;
    let resume = serde_json::json!({ "spec": { "suspend": false } });
    jobs.patch("pause", &PatchParams::default(), &Patch::Merge(&resume))
        .await
        .context("resuming")?;
    eventually("pods again and JobResumed", || async {
        let job = jobs.get("pause").await?;
        let resumed = job
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.type_ == "Suspended"
                        && c.status == "False"
                        && c.reason.as_deref() == Some("JobResumed")
                })
            });
        Ok((resumed && pods_of(&h.client, "pause").await?.len() == 2).then_some(()))
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn an_indexed_job_names_its_pods_by_index_and_reports_completed_indexes() -> Result<()> {
    let h = start().await;
    let jobs: Api<Job> = Api::namespaced(h.client.clone(), NS);
    let mut j = job("idx", 3, 3);
    j.spec.as_mut().expect("spec").completion_mode = Some("Indexed".into());
    jobs.create(&PostParams::default(), &j)
        .await
        .context("creating job")?;
    let pods = eventually("three pods", || async {
        let pods = pods_of(&h.client, "idx").await?;
        Ok((pods.len() == 3).then_some(pods))
    })
    .await?;
    let mut indexes = Vec::new();
    for pod in &pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let index = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get("batch.kubernetes.io/job-completion-index"))
            .cloned()
            .context("index annotation")?;
        assert!(name.starts_with(&format!("idx-{index}-")), "{name}");
        let hostname = pod.spec.as_ref().and_then(|s| s.hostname.clone());
        assert_eq!(hostname, Some(format!("idx-{index}")));
        indexes.push((index, name));
    }
    indexes.sort();
    // Indexes 0 and 2 succeed.
    set_phase(&h.client, &indexes[0].1, "Succeeded").await?;
    set_phase(&h.client, &indexes[2].1, "Succeeded").await?;
    eventually("completedIndexes 0,2", || async {
        let job = jobs.get("idx").await?;
        let completed = job.status.and_then(|s| s.completed_indexes);
        Ok((completed.as_deref() == Some("0,2")).then_some(()))
    })
    .await?;
    set_phase(&h.client, &indexes[1].1, "Succeeded").await?;
    let done = eventually("Complete", || async {
        let job = jobs.get("idx").await?;
        Ok(has_condition(&job, "Complete", "CompletionsReached").then_some(job))
    })
    .await?;
    let status = done.status.unwrap_or_default();
    assert_eq!(status.completed_indexes.as_deref(), Some("0-2"));
    assert_eq!(status.succeeded, Some(3));
    Ok(())
}

#[tokio::test]
async fn deleting_a_job_releases_the_finalizers_of_its_pods() -> Result<()> {
    let h = start().await;
    let jobs: Api<Job> = Api::namespaced(h.client.clone(), NS);
    jobs.create(&PostParams::default(), &job("gone", 2, 2))
        .await
        .context("creating job")?;
    eventually("two pods with the finalizer", || async {
        let pods = pods_of(&h.client, "gone").await?;
        Ok((pods.len() == 2
            && pods.iter().all(|p| {
                p.metadata
                    .finalizers
                    .as_ref()
                    .is_some_and(|f| f.iter().any(|f| f == FINALIZER))
            }))
        .then_some(()))
    })
    .await?;
    jobs.delete("gone", &kube::api::DeleteParams::background())
        .await
        .context("deleting job")?;
    // No garbage collector runs here: the pods stay, but nothing holds them anymore.
    eventually("finalizers removed", || async {
        let pods = pods_of(&h.client, "gone").await?;
        Ok(pods
            .iter()
            .all(|p| p.metadata.finalizers.as_ref().is_none_or(|f| f.is_empty()))
            .then_some(()))
    })
    .await?;
    Ok(())
}

#[tokio::test]
async fn a_fail_job_rule_fails_the_job_on_a_matching_exit_code() -> Result<()> {
    use k8s_openapi::api::batch::v1::{
        PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement, PodFailurePolicyRule,
    };
    let h = start().await;
    let jobs: Api<Job> = Api::namespaced(h.client.clone(), NS);
    let mut j = job("policy", 1, 1);
    j.spec.as_mut().expect("spec").pod_failure_policy = Some(PodFailurePolicy {
        rules: vec![PodFailurePolicyRule {
            action: "FailJob".into(),
            on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                container_name: None,
                operator: "In".into(),
                values: vec![42],
            }),
            on_pod_conditions: None,
        }],
    });
    jobs.create(&PostParams::default(), &j)
        .await
        .context("creating job")?;
    let pod = eventually("a pod", || async {
        Ok(pods_of(&h.client, "policy").await?.into_iter().next())
    })
    .await?;
    let name = pod.metadata.name.clone().unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(h.client.clone(), NS);
    let status = serde_json::json!({ "status": {
        "phase": "Failed",
        "containerStatuses": [{
            "name": "c", "image": "busybox", "imageID": "", "ready": false, "restartCount": 0,
            "state": { "terminated": { "exitCode": 42, "finishedAt": "2026-01-01T00:00:00Z" } }
        }]
    }});
    pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .context("failing the pod")?;
    let failed = eventually("Failed", || async {
        let job = jobs.get("policy").await?;
        Ok(has_condition(&job, "Failed", "PodFailurePolicy").then_some(job))
    })
    .await?;
    let message = failed
        .status
        .and_then(|s| s.conditions)
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "Failed")
        .and_then(|c| c.message);
    assert_eq!(
        message,
        Some(format!(
            "Container c for pod {NS}/{name} failed with exit code 42 matching FailJob rule at index 0"
        ))
    );
    Ok(())
}

/// A finished Job with `ttlSecondsAfterFinished: 0` is deleted with its pods by the
/// TTL-after-finished controller (foreground, so the garbage collector takes part).
#[tokio::test]
async fn a_finished_job_past_its_ttl_is_deleted() -> Result<()> {
    use rkcm_controllers::registry::{self, ControllerOptions};
    let cluster = support::Cluster::start().await;
    cluster
        .start_registered(
            &[registry::GARBAGECOLLECTOR, registry::TTL_AFTER_FINISHED],
            ControllerOptions::default(),
        )
        .await?;
    let jobs: Api<Job> = Api::namespaced(cluster.client.clone(), "default");
    let job: Job = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "short-lived"},
        "spec": {"ttlSecondsAfterFinished": 0, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}},
    }))?;
    jobs.create(&PostParams::default(), &job).await?;
    jobs.patch_status(
        "short-lived",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"status": {"conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"},
            {"type": "Complete", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z"}],
            "startTime": "2025-01-01T00:00:00Z", "completionTime": "2025-01-01T00:00:00Z",
            "succeeded": 1}})),
    )
    .await?;
    support::eventually("the finished job to be deleted", || async {
        Ok(jobs.get_opt("short-lived").await?.is_none().then_some(()))
    })
    .await?;
    cluster.stop().await;
    Ok(())
}
