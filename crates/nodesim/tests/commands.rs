//! The container-command convention against the in-process API server: pods whose containers
//! run `sleep`, `echo`, `exit` … terminate as their commands say, and `pods/log` returns what they
//! printed.

use std::future::Future;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{LogParams, PostParams};
use kube::{Api, Client};
use rkcm_apiserver::testing::{self, TestServer};
use rkcm_nodesim::{Config, NodeSim, CONTAINER_LOGS_ANNOTATION};
use rkcm_runtime::Shutdown;

const DEADLINE: Duration = Duration::from_secs(30);

struct Cluster {
    _server: TestServer,
    client: Client,
    shutdown: Shutdown,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn cluster() -> Cluster {
    let server = testing::start().await;
    let client = server.client();
    let shutdown = Shutdown::new();
    let config = Config {
        nodes: 1,
        pod_ready_delay: Duration::from_millis(100),
        termination_grace_cap: Some(Duration::from_secs(1)),
        ..Config::default()
    };
    tokio::spawn(NodeSim::new(client.clone(), config).run(shutdown.clone()));
    Cluster {
        _server: server,
        client,
        shutdown,
    }
}

/// Polls `check` until it returns `Some`, failing with `what` after [`DEADLINE`].
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(value) = check().await {
            return Ok(value);
        }
        if tokio::time::Instant::now() > deadline {
            bail!("timed out waiting for {what} (is the kubelet stand-in running the command?)");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn container(name: &str, command: &[&str]) -> Container {
    Container {
        name: name.into(),
        image: Some("busybox:1.36".into()),
        command: Some(command.iter().map(|s| s.to_string()).collect()),
        ..Default::default()
    }
}

fn pod(name: &str, restart_policy: &str, containers: Vec<Container>) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            restart_policy: Some(restart_policy.into()),
            containers,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn statuses(pod: &Pod, init: bool) -> Vec<ContainerStatus> {
    let status = pod.status.clone().unwrap_or_default();
    if init {
        status.init_container_statuses.unwrap_or_default()
    } else {
        status.container_statuses.unwrap_or_default()
    }
}

fn condition(pod: &Pod, type_: &str) -> Option<String> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.clone())
}

async fn wait_for_phase(pods: &Api<Pod>, name: &str, want: &str) -> Result<Pod> {
    eventually(&format!("{name} {want}"), || async {
        pods.get_opt(name)
            .await
            .ok()
            .flatten()
            .filter(|p| phase(p) == want)
    })
    .await
}

fn logs_for(container: &str) -> LogParams {
    LogParams {
        container: Some(container.into()),
        ..LogParams::default()
    }
}

#[tokio::test]
async fn a_job_like_pod_runs_its_script_and_its_output_is_its_log() -> Result<()> {
    let c = cluster().await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    let mut p = pod(
        "job",
        "Never",
        vec![container(
            "main",
            &["sh", "-c", "echo \"hello, world\"; sleep 1 && echo done"],
        )],
    );
    p.spec.as_mut().context("spec")?.init_containers =
        Some(vec![container("prepare", &["echo", "preparing"])]);
    pods.create(&PostParams::default(), &p).await?;

    let running = wait_for_phase(&pods, "job", "Running").await?;
    assert_eq!(condition(&running, "Ready").as_deref(), Some("True"));
    let done = wait_for_phase(&pods, "job", "Succeeded").await?;
    let main = &statuses(&done, false)[0];
    let terminated = main
        .state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .context("main terminated")?;
    assert_eq!(
        (terminated.exit_code, terminated.reason.as_deref()),
        (0, Some("Completed"))
    );
    let (started, finished) = (
        terminated.started_at.as_ref().context("startedAt")?.0,
        terminated.finished_at.as_ref().context("finishedAt")?.0,
    );
    assert_eq!(started.duration_until(finished).as_secs(), 1);
    assert_eq!(condition(&done, "Ready").as_deref(), Some("False"));
    assert_eq!(condition(&done, "Initialized").as_deref(), Some("True"));
    let prepare = &statuses(&done, true)[0];
    assert_eq!(
        prepare
            .state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .map(|t| t.exit_code),
        Some(0)
    );

    assert_eq!(
        pods.logs("job", &logs_for("main")).await?,
        "hello, world\ndone\n"
    );
    assert_eq!(pods.logs("job", &logs_for("prepare")).await?, "preparing\n");
    let tail = LogParams {
        tail_lines: Some(1),
        timestamps: true,
        ..logs_for("main")
    };
    let last = pods.logs("job", &tail).await?;
    assert!(
        last.ends_with(" done\n") && last.starts_with("20"),
        "one timestamped line: {last:?}"
    );
    let annotations = done.metadata.annotations.clone().unwrap_or_default();
    assert!(annotations.contains_key(CONTAINER_LOGS_ANNOTATION));
    Ok(())
}

#[tokio::test]
async fn exit_codes_fail_never_pods_and_other_containers_keep_running() -> Result<()> {
    let c = cluster().await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    pods.create(
        &PostParams::default(),
        &pod(
            "failing",
            "Never",
            vec![
                container("ok", &["true"]),
                container("bad", &["/bin/sh", "-c", "echo oops; exit 3"]),
            ],
        ),
    )
    .await?;
    pods.create(
        &PostParams::default(),
        &pod(
            "server",
            "Never",
            vec![container("web", &["nginx", "-g", "daemon off;"])],
        ),
    )
    .await?;

    let failed = wait_for_phase(&pods, "failing", "Failed").await?;
    let by_name = |name: &str| {
        statuses(&failed, false)
            .into_iter()
            .find(|s| s.name == name)
            .and_then(|s| s.state?.terminated)
            .map(|t| (t.exit_code, t.reason.unwrap_or_default()))
    };
    assert_eq!(by_name("ok"), Some((0, "Completed".to_string())));
    assert_eq!(by_name("bad"), Some((3, "Error".to_string())));
    assert_eq!(pods.logs("failing", &logs_for("bad")).await?, "oops\n");

    let server = wait_for_phase(&pods, "server", "Running").await?;
    assert_eq!(condition(&server, "Ready").as_deref(), Some("True"));
    // A container outside the convention prints nothing: its log is empty, as a kubelet's.
    assert_eq!(pods.logs("server", &LogParams::default()).await?, "");
    Ok(())
}

#[tokio::test]
async fn failed_containers_restart_after_the_back_off_under_on_failure() -> Result<()> {
    let c = cluster().await;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), "default");
    pods.create(
        &PostParams::default(),
        &pod(
            "retry",
            "OnFailure",
            vec![container("app", &["sh", "-c", "echo try; exit 1"])],
        ),
    )
    .await?;
    let crashing = eventually("retry restarted once", || async {
        let p = pods.get_opt("retry").await.ok().flatten()?;
        let app = statuses(&p, false).into_iter().next()?;
        let waiting = app.state.as_ref()?.waiting.as_ref()?.reason.clone()?;
        (app.restart_count == 1 && waiting == "CrashLoopBackOff").then_some(p)
    })
    .await?;
    assert_eq!(phase(&crashing), "Running");
    let app = &statuses(&crashing, false)[0];
    let last = app
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .context("lastState.terminated")?;
    assert_eq!(last.exit_code, 1);
    let message = app
        .state
        .as_ref()
        .and_then(|s| s.waiting.as_ref())
        .and_then(|w| w.message.clone())
        .unwrap_or_default();
    assert!(message.starts_with("back-off 20s"), "{message}");
    let previous = LogParams {
        previous: true,
        ..logs_for("app")
    };
    assert_eq!(pods.logs("retry", &previous).await?, "try\n");
    assert_eq!(pods.logs("retry", &logs_for("app")).await?, "try\n");
    Ok(())
}
