//! `rkcm bench`: the figures docs/benchmarks.md reports, measured on this machine in one run.
//!
//! Every scenario starts its own `rkcm up` child process (same binary) on a free port with a
//! temporary data directory (the embedded, durable store), so the API server and simulated nodes
//! never share a process with what is measured. Controllers under test run in the bench process,
//! so its CPU time and peak RSS are theirs.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Args, Subcommand};
use futures::{stream, StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use rkcm_controllers::registry::{self, ControllerOptions};
use rkcm_runtime::{process, Shutdown, SystemClock};
use serde_json::json;

mod fairness;
mod jobs;
mod metrics;
mod observe;
mod profile;
mod report;
pub mod soak;
mod suite;
mod svg;

pub use suite::Size;

use crate::manager::{self, ManagerConfig};
use crate::serving::Health;
use metrics::{server_delta, server_requests};

/// `rkcm bench` scenarios.
#[derive(Debug, Clone, Subcommand)]
pub enum BenchCommand {
    /// The scale suite in one run: ceiling, density, rollout, scale, churn, burst and hold against
    /// whole `rkcm up` children, as a table, JSON (`--json`) and an SVG plot (`--svg`).
    All(suite::SuiteArgs),
    /// Time from `rkcm up` start to the API answering, and idle RSS with 3 nodes.
    Startup(StartupArgs),
    /// ReplicaSet controller: N ReplicaSets × R replicas against the embedded API server, compared
    /// with a plain client creating the same pods with the same concurrency.
    Replicasets(ReplicaSetArgs),
    /// Deployment controller: rolling update of N Deployments × R replicas on simulated nodes.
    Deployments(DeploymentArgs),
    /// Job controller: N one-pod Jobs whose container runs `sleep 1` on simulated nodes, until
    /// every Job is Complete.
    Jobs(JobArgs),
    /// StatefulSet controller: N Parallel StatefulSets × R replicas on simulated nodes.
    Statefulsets(StatefulSetArgs),
    /// API Priority and Fairness: one user's write latency while another floods LISTs, with the
    /// filter on and off.
    Fairness(fairness::FairnessArgs),
    /// Creates, updates, deletes and watches at a steady rate while `rkcm up` is killed and
    /// restarted (embedded store) or etcd members stop and start (etcd); checks that no
    /// acknowledged write was lost and no watcher missed one.
    Soak(soak::SoakArgs),
}

/// `rkcm bench statefulsets`.
#[derive(Debug, Clone, Args)]
pub struct StatefulSetArgs {
    /// Number of StatefulSets.
    #[arg(long, default_value_t = 10)]
    pub count: usize,
    /// Replicas of each.
    #[arg(long, default_value_t = 100)]
    pub replicas: i32,
    /// `podManagementPolicy` of the sets (`Parallel` or `OrderedReady`).
    #[arg(long, default_value = "Parallel")]
    pub pod_management_policy: String,
    /// Simulated nodes (110 pods each).
    #[arg(long, default_value_t = 10)]
    pub nodes: usize,
    /// Time a simulated node takes to make a pod Ready.
    #[arg(long, default_value = "100ms", value_parser = rkcm_apimachinery::duration::parse_non_negative)]
    pub pod_ready_delay: Duration,
    /// Controller workers (`--concurrent-statefulset-syncs`).
    #[arg(long, default_value_t = 5)]
    pub workers: usize,
    /// Client-side QPS of the controller.
    #[arg(long, default_value_t = 5000.0)]
    pub qps: f32,
    /// Client-side burst of the controller.
    #[arg(long, default_value_t = 10000)]
    pub burst: u32,
}

/// `rkcm bench startup`.
#[derive(Debug, Clone, Args)]
pub struct StartupArgs {
    /// Repetitions (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Seconds to let the cluster idle before reading its RSS.
    #[arg(long, default_value_t = 5)]
    pub idle_seconds: u64,
}

/// `rkcm bench replicasets`.
#[derive(Debug, Clone, Args)]
pub struct ReplicaSetArgs {
    /// Number of ReplicaSets.
    #[arg(long, default_value_t = 1000)]
    pub count: usize,
    /// Replicas of each.
    #[arg(long, default_value_t = 10)]
    pub replicas: i32,
    /// Controller workers (`--concurrent-replicaset-syncs`); the plain client uses as many tasks.
    #[arg(long, default_value_t = 5)]
    pub workers: usize,
    /// Client-side QPS of the controller and of the plain client.
    #[arg(long, default_value_t = 5000.0)]
    pub qps: f32,
    /// Client-side burst of the controller and of the plain client.
    #[arg(long, default_value_t = 10000)]
    pub burst: u32,
}

/// `rkcm bench deployments`.
#[derive(Debug, Clone, Args)]
pub struct DeploymentArgs {
    /// Number of Deployments.
    #[arg(long, default_value_t = 100)]
    pub count: usize,
    /// Replicas of each.
    #[arg(long, default_value_t = 20)]
    pub replicas: i32,
    /// Simulated nodes (110 pods each).
    #[arg(long, default_value_t = 30)]
    pub nodes: usize,
    /// Time a simulated node takes to make a pod Ready.
    #[arg(long, default_value = "100ms", value_parser = rkcm_apimachinery::duration::parse_non_negative)]
    pub pod_ready_delay: Duration,
    /// Client-side QPS of each controller.
    #[arg(long, default_value_t = 5000.0)]
    pub qps: f32,
    /// Client-side burst of each controller.
    #[arg(long, default_value_t = 10000)]
    pub burst: u32,
}

/// `rkcm bench jobs`.
#[derive(Debug, Clone, Args)]
pub struct JobArgs {
    /// Number of Jobs (one pod each).
    #[arg(long, default_value_t = 1000)]
    pub count: usize,
    /// Simulated nodes (110 pods each).
    #[arg(long, default_value_t = 20)]
    pub nodes: usize,
    /// Time a simulated node takes to make a pod Ready (then `sleep 1` runs for a second).
    #[arg(long, default_value = "100ms", value_parser = rkcm_apimachinery::duration::parse_non_negative)]
    pub pod_ready_delay: Duration,
    /// Controller workers (`--concurrent-job-syncs`).
    #[arg(long, default_value_t = 5)]
    pub workers: usize,
    /// Client-side QPS of the controller.
    #[arg(long, default_value_t = 5000.0)]
    pub qps: f32,
    /// Client-side burst of the controller.
    #[arg(long, default_value_t = 10000)]
    pub burst: u32,
}

/// Runs one scenario and prints its report.
pub async fn run(command: BenchCommand) -> anyhow::Result<()> {
    match command {
        BenchCommand::All(args) => suite::run(args).await,
        BenchCommand::Startup(args) => startup(args).await,
        BenchCommand::Replicasets(args) => replicasets(args).await,
        BenchCommand::Deployments(args) => deployments(args).await,
        BenchCommand::Jobs(args) => jobs::run(args).await,
        BenchCommand::Statefulsets(args) => statefulsets(args).await,
        BenchCommand::Fairness(args) => fairness::run(&args).await,
        BenchCommand::Soak(args) => soak::run(args).await,
    }
}

/// A child `rkcm up` with a temporary data directory.
struct Cluster {
    child: Child,
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

/// Starts `rkcm up` (this binary) with `args` and its logs off, and waits up to 120 s for the
/// kubeconfig line it prints when ready. Its output is read to the end on a thread of its own,
/// so that it never writes into a closed pipe.
pub(crate) fn spawn_up(
    args: impl IntoIterator<Item = std::ffi::OsString>,
) -> anyhow::Result<(Child, PathBuf)> {
    let exe = std::env::current_exe().context("locating the rkcm binary")?;
    let mut child = Command::new(exe)
        .arg("up")
        .args(args)
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting rkcm up")?;
    let stdout = child.stdout.take().context("rkcm up's stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(path) = line.strip_prefix("export KUBECONFIG=") {
                let _ = tx.send(PathBuf::from(path));
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(path) => Ok((child, path)),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            anyhow::bail!("rkcm up did not print its kubeconfig line within 120 s")
        }
    }
}

impl Cluster {
    /// Starts `rkcm up` with `args` and waits for its kubeconfig line.
    fn start(args: &[&str]) -> anyhow::Result<(Self, Instant)> {
        let dir = tempfile::tempdir().context("creating a temporary data directory")?;
        let started = Instant::now();
        let mut up_args = vec![
            "--port=0".into(),
            "--data-dir".into(),
            dir.path().as_os_str().to_owned(),
            // These clusters run only the controllers under measure, not the one that creates
            // each namespace's `default` ServiceAccount: as kube's integration tests do, the
            // ServiceAccount admission plugin is off.
            "--disable-admission-plugins=ServiceAccount".into(),
        ];
        up_args.extend(args.iter().map(std::ffi::OsString::from));
        let (child, kubeconfig) = spawn_up(up_args)?;
        Ok((
            Self {
                child,
                _dir: dir,
                kubeconfig,
            },
            started,
        ))
    }

    async fn kube_config(&self) -> anyhow::Result<kube::Config> {
        kube_config_from(&self.kubeconfig).await
    }

    fn rss_kib(&self) -> u64 {
        process::rss_kib_of(self.child.id())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn kube_config_from(path: &Path) -> anyhow::Result<kube::Config> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path)?;
    Ok(kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

async fn startup(args: StartupArgs) -> anyhow::Result<()> {
    let mut answer_ms = Vec::new();
    let mut ready_ms = Vec::new();
    let mut rss = Vec::new();
    for _ in 0..args.runs.max(1) {
        let dir = tempfile::tempdir()?;
        let exe = std::env::current_exe()?;
        let started = Instant::now();
        let mut child = Command::new(exe)
            .args(["up", "--port=0", "--nodes=3", "--data-dir"])
            .arg(dir.path())
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let kubeconfig_path = dir.path().join("kubeconfig");
        // The API answers as soon as the kubeconfig exists and /version succeeds.
        let answered = loop {
            if kubeconfig_path.exists() {
                if let Ok(config) = kube_config_from(&kubeconfig_path).await {
                    if let Ok(client) = kube::Client::try_from(config) {
                        if client.apiserver_version().await.is_ok() {
                            break started.elapsed();
                        }
                    }
                }
            }
            if started.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                anyhow::bail!("rkcm up did not answer within 30s");
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        let stdout = child.stdout.take().context("child stdout")?;
        let ready = tokio::task::spawn_blocking(move || {
            BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
                .any(|l| l.starts_with("export KUBECONFIG="))
        })
        .await?;
        let ready_at = started.elapsed();
        anyhow::ensure!(ready, "rkcm up exited early");
        tokio::time::sleep(Duration::from_secs(args.idle_seconds)).await;
        let kib = process::rss_kib_of(child.id());
        let _ = child.kill();
        let _ = child.wait();
        answer_ms.push(answered.as_secs_f64() * 1000.0);
        ready_ms.push(ready_at.as_secs_f64() * 1000.0);
        rss.push(kib as f64 / 1024.0);
    }
    println!(
        "rkcm up, empty data dir, 3 nodes, {} runs (median):",
        answer_ms.len()
    );
    println!(
        "  start → API answering /version: {:.0} ms",
        median(answer_ms)
    );
    println!(
        "  start → ready line printed:     {:.0} ms",
        median(ready_ms)
    );
    println!(
        "  idle RSS after {}s:             {:.1} MiB",
        args.idle_seconds,
        median(rss)
    );
    Ok(())
}

/// `rest_client_requests_total` of this process, by HTTP method and status code.
fn requests_by_method() -> BTreeMap<(String, String), f64> {
    metrics::parse_counter(
        &rkcm_runtime::metrics::encode_text(),
        "rest_client_requests_total",
        &["method", "code"],
    )
    .into_iter()
    .map(|(mut k, v)| {
        let code = k.pop().unwrap_or_default();
        let method = k.pop().unwrap_or_default();
        ((method, code), v)
    })
    .collect()
}

/// Requests with `method` between two snapshots, whatever their status code.
fn delta(
    after: &BTreeMap<(String, String), f64>,
    before: &BTreeMap<(String, String), f64>,
    method: &str,
) -> f64 {
    after
        .iter()
        .filter(|((m, _), _)| m == method)
        .map(|(k, v)| v - before.get(k).copied().unwrap_or(0.0))
        .sum()
}

/// Client write requests (POST, PUT, PATCH, DELETE) between two snapshots.
fn write_delta(
    after: &BTreeMap<(String, String), f64>,
    before: &BTreeMap<(String, String), f64>,
) -> f64 {
    ["POST", "PUT", "PATCH", "DELETE"]
        .iter()
        .map(|m| delta(after, before, m))
        .sum()
}

/// `POST 201: 10000, PUT 200: 2000, …` between two snapshots.
fn breakdown(
    after: &BTreeMap<(String, String), f64>,
    before: &BTreeMap<(String, String), f64>,
) -> String {
    after
        .iter()
        .map(|(k, v)| (k, v - before.get(k).copied().unwrap_or(0.0)))
        .filter(|(_, n)| *n > 0.0)
        .map(|((m, c), n)| format!("{m} {c}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A workload (Deployment, ReplicaSet) `name` of `replicas` pods, selected by the label
/// `key: name`.
fn workload<K: serde::de::DeserializeOwned>(
    name: &str,
    replicas: i32,
    key: &str,
) -> anyhow::Result<K> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {key: name}},
            "template": pod_template(json!({key: name})),
        }
    }))?)
}

fn pod_template(labels: serde_json::Value) -> serde_json::Value {
    json!({
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}
    })
}

/// Runs the named controllers in this process against `kube_config` until `shutdown`.
fn spawn_controllers(
    kube_config: kube::Config,
    controllers: Vec<&'static str>,
    options: ControllerOptions,
    qps: f32,
    burst: u32,
    shutdown: Shutdown,
) -> tokio::task::JoinHandle<anyhow::Result<manager::Report>> {
    let config = ManagerConfig {
        kube_config,
        controllers,
        options,
        qps,
        burst,
        min_resync_period: Duration::from_secs(12 * 3600),
        use_service_account_credentials: false,
        leader_election: None,
        serving: None,
    };
    tokio::spawn(manager::run(config, Arc::new(Health::default()), shutdown))
}

async fn wait_until<F, Fut>(what: &str, timeout: Duration, mut f: F) -> anyhow::Result<()>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if f().await? {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn replicasets(args: ReplicaSetArgs) -> anyhow::Result<()> {
    let total = args.count * args.replicas.max(0) as usize;
    let (cluster, _) = Cluster::start(&["--nodes=0", "--controllers="])?;
    let kube_config = cluster.kube_config().await?;
    let plain = kube::Client::try_from(kube_config.clone())?;
    let ns = "bench";
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(plain.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}}))?,
        )
        .await?;

    // Baseline: a plain client creating the same pods with the same concurrency and limiter.
    let limited = rkcm_runtime::rest_client::client(kube_config.clone(), args.qps, args.burst)?;
    let pods: Api<Pod> = Api::namespaced(limited, ns);
    let started = Instant::now();
    stream::iter(0..total)
        .map(|i| {
            let pods = pods.clone();
            async move {
                let pod: Pod = serde_json::from_value(json!({
                    "metadata": {"generateName": "plain-", "labels": {"bench": "plain", "i": i.to_string()}},
                    "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}
                }))?;
                pods.create(&PostParams::default(), &pod).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(args.workers.max(1))
        .try_collect::<Vec<_>>()
        .await?;
    let plain_secs = started.elapsed().as_secs_f64();
    let plain_rate = total as f64 / plain_secs;
    Api::<Pod>::namespaced(plain.clone(), ns)
        .delete_collection(
            &DeleteParams::default().grace_period(0),
            &ListParams::default().labels("bench=plain"),
        )
        .await?;

    // The controller.
    let shutdown = Shutdown::new();
    let before = requests_by_method();
    let server_before = server_requests(&plain).await?;
    let cpu_before = process::cpu_seconds();
    let manager = spawn_controllers(
        kube_config.clone(),
        vec![registry::REPLICASET],
        ControllerOptions {
            concurrent_replicaset_syncs: args.workers,
            clock: Arc::new(SystemClock),
            ..ControllerOptions::default()
        },
        args.qps,
        args.burst,
        shutdown.clone(),
    );
    let rss_api: Api<ReplicaSet> = Api::namespaced(plain.clone(), ns);
    let started = Instant::now();
    stream::iter(0..args.count)
        .map(|i| {
            let rss_api = rss_api.clone();
            let replicas = args.replicas;
            async move {
                let rs: ReplicaSet = workload(&format!("rs-{i}"), replicas, "rs")?;
                rss_api.create(&PostParams::default(), &rs).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;
    let count = args.count;
    let replicas = args.replicas;
    wait_until(
        "every ReplicaSet's status to converge",
        Duration::from_secs(1800),
        || {
            let rss_api = rss_api.clone();
            async move {
                let list = rss_api.list(&ListParams::default()).await?;
                Ok(list.items.len() == count
                    && list.items.iter().all(|rs| {
                        let status = rs.status.as_ref();
                        status.map(|s| s.replicas) == Some(replicas)
                            && status.and_then(|s| s.observed_generation) == rs.metadata.generation
                    }))
            }
        },
    )
    .await?;
    let controller_secs = started.elapsed().as_secs_f64();
    let cpu = process::cpu_seconds() - cpu_before;
    let pods_now = Api::<Pod>::namespaced(plain.clone(), ns)
        .list(&ListParams::default().labels("!bench"))
        .await?
        .items
        .len();
    shutdown.cancel();
    let report = manager
        .await
        .context("the controller manager task panicked")??;
    // After shutdown, so that queued events have been written too.
    let after = requests_by_method();
    let server_after = server_requests(&plain).await?;

    // Pod and Event writes as the API server counted them (only the controller writes either
    // while it runs: the bench itself creates ReplicaSets and lists them).
    let server =
        |verb: &str, resource: &str| server_delta(&server_after, &server_before, verb, resource);
    let pod_writes = server("POST", "pods") + server("DELETE", "pods") + server("PATCH", "pods");
    let (event_posts, event_patches) = (
        server("POST", "events").round() as i64,
        server("PATCH", "events").round() as i64,
    );
    let status_writes = delta(&after, &before, "PUT");
    let rate = total as f64 / controller_secs;
    println!(
        "ReplicaSet controller: {} ReplicaSets × {} replicas = {total} pods, {} workers, qps {} burst {}",
        args.count, args.replicas, args.workers, args.qps, args.burst
    );
    println!("  pods present at the end:        {pods_now}");
    println!("  wall time to converge:          {controller_secs:.1} s ({rate:.0} pods/s)");
    println!("  plain client, same concurrency: {plain_secs:.1} s ({plain_rate:.0} pods/s)");
    println!("  controller / plain throughput:  {:.2}", rate / plain_rate);
    println!(
        "  writes per pod created:         {:.3} ({pod_writes} pod writes; also {status_writes} status updates)",
        pod_writes / total as f64,
    );
    println!(
        "  events:                         {event_posts} created, {event_patches} patched (series), {} dropped (event queue full)",
        report.events_dropped
    );
    println!(
        "  requests (method code: count):  {}",
        breakdown(&after, &before)
    );
    println!("  controller CPU:                 {cpu:.1} s");
    println!(
        "  bench process peak RSS:         {:.1} MiB",
        process::peak_rss_kib() as f64 / 1024.0
    );
    println!(
        "  API server RSS at the end:      {:.1} MiB",
        cluster.rss_kib() as f64 / 1024.0
    );
    Ok(())
}

async fn deployments(args: DeploymentArgs) -> anyhow::Result<()> {
    let nodes = format!("--nodes={}", args.nodes);
    let delay = format!("--pod-ready-delay={}ms", args.pod_ready_delay.as_millis());
    let (cluster, _) = Cluster::start(&[
        &nodes,
        &delay,
        "--pod-termination-max=100ms",
        "--controllers=podgc",
    ])?;
    let kube_config = cluster.kube_config().await?;
    let plain = kube::Client::try_from(kube_config.clone())?;
    let ns = "default";
    let shutdown = Shutdown::new();
    let manager = spawn_controllers(
        kube_config.clone(),
        vec![registry::REPLICASET, registry::DEPLOYMENT],
        ControllerOptions::default(),
        args.qps,
        args.burst,
        shutdown.clone(),
    );
    let deploys: Api<Deployment> = Api::namespaced(plain.clone(), ns);
    for i in 0..args.count {
        let d: Deployment = workload(&format!("web-{i}"), args.replicas, "app")?;
        deploys.create(&PostParams::default(), &d).await?;
    }
    let complete = |deploys: Api<Deployment>, count: usize, replicas: i32| async move {
        let list = deploys.list(&ListParams::default()).await?;
        anyhow::Ok(
            list.items.len() == count
                && list.items.iter().all(|d| {
                    let s = d.status.clone().unwrap_or_default();
                    s.observed_generation == d.metadata.generation
                        && s.updated_replicas == Some(replicas)
                        && s.available_replicas == Some(replicas)
                        && s.replicas == Some(replicas)
                }),
        )
    };
    let started = Instant::now();
    wait_until(
        "every Deployment to become available",
        Duration::from_secs(1800),
        || complete(deploys.clone(), args.count, args.replicas),
    )
    .await?;
    let first_rollout = started.elapsed().as_secs_f64();

    let before = requests_by_method();
    let cpu_before = process::cpu_seconds();
    let started = Instant::now();
    for i in 0..args.count {
        let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10.1"}]}}}});
        deploys
            .patch(
                &format!("web-{i}"),
                &PatchParams::default(),
                &Patch::Strategic(&patch),
            )
            .await?;
    }
    wait_until(
        "every rolling update to complete",
        Duration::from_secs(1800),
        || complete(deploys.clone(), args.count, args.replicas),
    )
    .await?;
    let rollout = started.elapsed().as_secs_f64();
    let cpu = process::cpu_seconds() - cpu_before;
    let after = requests_by_method();
    shutdown.cancel();
    let report = manager
        .await
        .context("the controller manager task panicked")??;

    let writes = write_delta(&after, &before);
    let replaced = (args.count as i32 * args.replicas) as f64;
    println!(
        "Deployment controller: {} Deployments × {} replicas, {} simulated nodes, pod ready delay {}",
        args.count,
        args.replicas,
        args.nodes,
        rkcm_apimachinery::duration::format_std(args.pod_ready_delay)
    );
    println!("  initial rollout:                {first_rollout:.1} s");
    println!("  rolling update of all:          {rollout:.1} s");
    println!(
        "  API writes per replaced pod:    {:.2} ({writes} writes by the controllers)",
        writes / replaced
    );
    println!(
        "  requests (method code: count):  {}",
        breakdown(&after, &before)
    );
    println!(
        "  events dropped (queue full):    {}",
        report.events_dropped
    );
    println!("  controllers' CPU (update):      {cpu:.1} s");
    println!(
        "  bench process peak RSS:         {:.1} MiB",
        process::peak_rss_kib() as f64 / 1024.0
    );
    drop(cluster);
    Ok(())
}

async fn statefulsets(args: StatefulSetArgs) -> anyhow::Result<()> {
    let nodes = format!("--nodes={}", args.nodes);
    let delay = format!("--pod-ready-delay={}ms", args.pod_ready_delay.as_millis());
    let (cluster, _) = Cluster::start(&[
        &nodes,
        &delay,
        "--pod-termination-max=100ms",
        "--controllers=podgc",
    ])?;
    let kube_config = cluster.kube_config().await?;
    let plain = kube::Client::try_from(kube_config.clone())?;
    let ns = "default";
    let shutdown = Shutdown::new();
    let before = requests_by_method();
    let cpu_before = process::cpu_seconds();
    let manager = spawn_controllers(
        kube_config.clone(),
        vec![registry::STATEFULSET],
        ControllerOptions {
            concurrent_statefulset_syncs: args.workers,
            clock: Arc::new(SystemClock),
            ..ControllerOptions::default()
        },
        args.qps,
        args.burst,
        shutdown.clone(),
    );
    let sets: Api<StatefulSet> = Api::namespaced(plain.clone(), ns);
    let started = Instant::now();
    for i in 0..args.count {
        let name = format!("db-{i}");
        let set: StatefulSet = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "replicas": args.replicas,
                "serviceName": name,
                "podManagementPolicy": args.pod_management_policy,
                "selector": {"matchLabels": {"app": name}},
                "template": pod_template(json!({"app": name})),
            }
        }))?;
        sets.create(&PostParams::default(), &set).await?;
    }
    let ready = |sets: Api<StatefulSet>, count: usize, replicas: i32| async move {
        let list = sets.list(&ListParams::default()).await?;
        anyhow::Ok(
            list.items.len() == count
                && list.items.iter().all(|s| {
                    let st = s.status.clone().unwrap_or_default();
                    st.observed_generation == s.metadata.generation
                        && st.ready_replicas == Some(replicas)
                        && st.replicas == replicas
                }),
        )
    };
    wait_until(
        "every StatefulSet to become ready",
        Duration::from_secs(1800),
        || ready(sets.clone(), args.count, args.replicas),
    )
    .await?;
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = process::cpu_seconds() - cpu_before;
    let after = requests_by_method();
    shutdown.cancel();
    let report = manager
        .await
        .context("the controller manager task panicked")??;

    let writes = write_delta(&after, &before);
    let pods = (args.count as i32 * args.replicas) as f64;
    println!(
        "StatefulSet controller: {} {} StatefulSets × {} replicas, {} simulated nodes, pod ready delay {}",
        args.count,
        args.pod_management_policy,
        args.replicas,
        args.nodes,
        rkcm_apimachinery::duration::format_std(args.pod_ready_delay)
    );
    println!("  time until all ready:           {elapsed:.1} s");
    println!(
        "  API writes per pod:             {:.2} ({writes} writes by the controller)",
        writes / pods
    );
    println!(
        "  requests (method code: count):  {}",
        breakdown(&after, &before)
    );
    println!(
        "  events dropped (queue full):    {}",
        report.events_dropped
    );
    println!("  controller CPU:                 {cpu:.1} s");
    println!(
        "  bench process peak RSS:         {:.1} MiB",
        process::peak_rss_kib() as f64 / 1024.0
    );
    drop(cluster);
    Ok(())
}
