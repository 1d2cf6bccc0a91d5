//! `rkcm bench all`: the scale suite of one run, each scenario against a whole `rkcm up` child
//! (API server, store, the controllers and the simulated nodes in one process, as a user runs it),
//! driven by the bench process over the API.
//!
//! - `ceiling` (its own `up --nodes 0` with no controller): a plain client creates D × R pods,
//!   patches each one's status to Running and Ready, as a kubelet does, then deletes them all, with
//!   `--concurrency` requests in flight. The time until every pod is seen Ready is the ceiling.
//! - `density`, `rollout`, `scale`, `churn` (one `up` with every controller and enough simulated
//!   nodes): D Deployments × R replicas created until every Deployment is Available; then a
//!   template change of every Deployment until each rollout completes; then every Deployment
//!   scaled R → 2R → R; then every pod deleted, the ReplicaSets replacing them, until all are
//!   Ready again; at the end every Deployment is deleted and the pods' going is timed.
//! - `burst` and `hold` (one `up --nodes 0` with every controller): one ReplicaSet of
//!   `--burst-replicas` until all its pods exist; then N pods created directly through the API,
//!   then the process's idle CPU and its RSS measured.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use futures::{stream, StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use rkcm_runtime::process;
use serde_json::json;

use super::observe::{Observer, Probe, Progress};
use super::report::{self, Latency, Run, Scenario};
use super::{pod_template, svg, workload, Cluster};

const NAMESPACE: &str = "bench";
/// Pods a simulated node runs at most (kubelet's `--max-pods` default).
const PODS_PER_NODE: usize = 110;
/// Points kept per curve of the plot and the JSON.
const CURVE_POINTS: usize = 400;

/// A preset of `rkcm bench all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Size {
    /// 5 Deployments × 10 replicas, 1,000 pods held, a ReplicaSet of 100: a smoke test.
    Small,
    /// 1,000 Deployments × 10 replicas, 100,000 pods held, a ReplicaSet of 1,000.
    Large,
}

/// The scenarios of `rkcm bench all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScenarioName {
    Ceiling,
    Density,
    Rollout,
    Scale,
    Churn,
    Burst,
    Hold,
}

/// `rkcm bench all`.
#[derive(Debug, Clone, Args)]
pub struct SuiteArgs {
    /// Preset sizes; the flags below override them one by one.
    #[arg(long, value_enum, default_value = "small")]
    pub size: Size,
    /// Deployments of density, rollout, scale and churn (D).
    #[arg(long)]
    pub deployments: Option<usize>,
    /// Replicas of each Deployment (R).
    #[arg(long)]
    pub replicas: Option<i32>,
    /// Pods stored by `hold`.
    #[arg(long)]
    pub pods: Option<usize>,
    /// Replicas of `burst`'s one ReplicaSet.
    #[arg(long)]
    pub burst_replicas: Option<i32>,
    /// Simulated nodes for density (default: room for 2 × D × R pods at 100 a node).
    #[arg(long)]
    pub nodes: Option<usize>,
    /// Requests the bench keeps in flight (creates, patches, deletes).
    #[arg(long, default_value_t = 16)]
    pub concurrency: usize,
    /// Time a simulated node takes to make a pod Ready.
    #[arg(long, default_value = "0s", value_parser = rkcm_apimachinery::duration::parse_non_negative)]
    pub pod_ready_delay: Duration,
    /// Window over which `hold` measures idle CPU, once the process has settled.
    #[arg(long, value_parser = rkcm_apimachinery::duration::parse_non_negative)]
    pub idle: Option<Duration>,
    /// Scenarios to run (all by default).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "ceiling,density,rollout,scale,churn,burst,hold"
    )]
    pub scenarios: Vec<ScenarioName>,
    /// Writes the run as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Writes the plot (pods Ready over time, RSS against pods held) as SVG to this file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Records each scenario's `up` process with `perf record` into this directory and reports
    /// the functions it spent its CPU in (needs `perf`; a release build with line tables, e.g.
    /// `CARGO_PROFILE_RELEASE_DEBUG=line-tables-only`, names them best).
    #[arg(long, value_name = "DIR")]
    pub profile: Option<PathBuf>,
}

/// Sizes of one run, presets and overrides resolved.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    size: &'static str,
    deployments: usize,
    replicas: i32,
    hold_pods: usize,
    burst_replicas: i32,
    nodes: usize,
    concurrency: usize,
    pod_ready_delay: Duration,
    idle: Duration,
    profile: Option<PathBuf>,
}

impl Plan {
    fn of(args: &SuiteArgs) -> anyhow::Result<Self> {
        let (deployments, replicas, hold_pods, burst_replicas, idle) = match args.size {
            Size::Small => (5, 10, 1_000, 100, Duration::from_secs(1)),
            Size::Large => (1_000, 10, 100_000, 1_000, Duration::from_secs(10)),
        };
        let custom = args.deployments.is_some()
            || args.replicas.is_some()
            || args.pods.is_some()
            || args.burst_replicas.is_some();
        let deployments = args.deployments.unwrap_or(deployments);
        let replicas = args.replicas.unwrap_or(replicas);
        anyhow::ensure!(deployments > 0, "--deployments must be at least 1");
        anyhow::ensure!(replicas > 0, "--replicas must be at least 1");
        anyhow::ensure!(args.concurrency > 0, "--concurrency must be at least 1");
        let pods = deployments * replicas as usize;
        Ok(Self {
            size: match (custom, args.size) {
                (true, _) => "custom",
                (false, Size::Small) => "small",
                (false, Size::Large) => "large",
            },
            deployments,
            replicas,
            hold_pods: args.pods.unwrap_or(hold_pods),
            burst_replicas: args.burst_replicas.unwrap_or(burst_replicas).max(0),
            // Room for scale's 2R with a tenth spare, never more than 110 a node.
            nodes: args
                .nodes
                .unwrap_or_else(|| (2 * pods).div_ceil(PODS_PER_NODE * 9 / 10).max(1)),
            concurrency: args.concurrency,
            pod_ready_delay: args.pod_ready_delay,
            idle: args.idle.unwrap_or(idle),
            profile: args.profile.clone(),
        })
    }

    /// Where `scenario`'s profile goes, when `--profile` asks for one.
    fn profiling<'a>(&'a self, scenario: &'a str) -> Option<(&'a std::path::Path, &'a str)> {
        self.profile.as_deref().map(|dir| (dir, scenario))
    }

    fn pods(&self) -> u64 {
        self.deployments as u64 * self.replicas as u64
    }

    /// How long any one wait may take before the run is given up.
    fn timeout(&self) -> Duration {
        Duration::from_secs(120) + Duration::from_millis(20 * (self.pods() + self.hold_pods as u64))
    }
}

/// Runs the suite, prints its table and writes the files asked for.
pub async fn run(args: SuiteArgs) -> anyhow::Result<()> {
    let plan = Plan::of(&args)?;
    let wants = |s: ScenarioName| args.scenarios.contains(&s);
    let mut run = Run {
        size: plan.size.to_string(),
        deployments: plan.deployments,
        replicas: plan.replicas,
        hold_pods: plan.hold_pods,
        nodes: plan.nodes,
        concurrency: plan.concurrency,
        pod_ready_delay_seconds: plan.pod_ready_delay.as_secs_f64(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        profile: if cfg!(debug_assertions) {
            "debug"
        } else {
            "release"
        }
        .to_string(),
        scenarios: Vec::new(),
        density_over_ceiling: None,
    };
    if wants(ScenarioName::Ceiling) {
        run.scenarios
            .push(ceiling(&plan).await.context("scenario ceiling")?);
    }
    let deployment_scenarios = [
        ScenarioName::Density,
        ScenarioName::Rollout,
        ScenarioName::Scale,
        ScenarioName::Churn,
    ];
    if deployment_scenarios.iter().any(|s| wants(*s)) {
        let mut scenarios = deployments(&plan, &wants).await?;
        run.scenarios.append(&mut scenarios);
    }
    if wants(ScenarioName::Burst) || wants(ScenarioName::Hold) {
        let mut scenarios = burst_and_hold(&plan, &wants).await?;
        run.scenarios.append(&mut scenarios);
    }
    run.compute_ratio();
    print!("{}", report::table(&run));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&run)?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.svg {
        std::fs::write(path, svg::plot(&run))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// A started `rkcm up` child with an admin client and the bench namespace created.
struct Target {
    cluster: Cluster,
    client: kube::Client,
    pid: u32,
}

impl Target {
    async fn start(args: &[&str]) -> anyhow::Result<Self> {
        let (cluster, _) = Cluster::start(args)?;
        let client = kube::Client::try_from(cluster.kube_config().await?)?;
        let pid = cluster.child.id();
        let namespaces: Api<Namespace> = Api::all(client.clone());
        namespaces
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?,
            )
            .await
            .context("creating the bench namespace")?;
        Ok(Self {
            cluster,
            client,
            pid,
        })
    }

    fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client.clone(), NAMESPACE)
    }

    fn deployments(&self) -> Api<Deployment> {
        Api::namespaced(self.client.clone(), NAMESPACE)
    }

    fn memory(&self, scenario: &mut Scenario, pods: u64) {
        scenario.set_memory(
            pods,
            self.cluster.rss_kib(),
            process::peak_rss_kib_of(self.pid),
        );
    }
}

/// Waits until `done` holds, showing `count` of `total` on the progress line.
async fn wait_for(
    label: &str,
    unit: &'static str,
    total: u64,
    timeout: Duration,
    count: impl Fn() -> u64 + Send + Sync + 'static,
    done: impl Fn() -> bool,
) -> anyhow::Result<()> {
    let count: Arc<dyn Fn() -> u64 + Send + Sync> = Arc::new(count);
    let _progress = Progress::new(label.to_string(), unit, total, Arc::clone(&count));
    let deadline = Instant::now() + timeout;
    while !done() {
        anyhow::ensure!(
            Instant::now() < deadline,
            "{label}: timed out after {timeout:?} with {}/{total} {unit}",
            count()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// Waits until `done` holds of what `observer` saw, the progress line showing `count` of `total`.
async fn wait_observed(
    observer: &Arc<Observer>,
    label: &str,
    unit: &'static str,
    total: u64,
    timeout: Duration,
    count: fn(&Observer) -> u64,
    done: impl Fn(&Observer) -> bool,
) -> anyhow::Result<()> {
    let o = Arc::clone(observer);
    wait_for(
        label,
        unit,
        total,
        timeout,
        move || count(&o),
        || done(observer),
    )
    .await
}

/// Runs `op` on `0..n` with `concurrency` in flight, counting completions in `done`.
async fn for_each<F, Fut>(
    n: usize,
    concurrency: usize,
    done: &Arc<AtomicU64>,
    op: F,
) -> anyhow::Result<()>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    stream::iter(0..n)
        .map(|i| {
            let fut = op(i);
            let done = Arc::clone(done);
            async move {
                fut.await?;
                done.fetch_add(1, Ordering::Relaxed);
                anyhow::Ok(())
            }
        })
        .buffer_unordered(concurrency)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

async fn ceiling(plan: &Plan) -> anyhow::Result<Scenario> {
    let target = Target::start(&["--nodes=0", "--controllers="]).await?;
    let observer = Arc::new(Observer::start(target.client.clone(), NAMESPACE).await?);
    let total = plan.pods();
    let pods = target.pods();
    let probe = Probe::start(target.pid, &target.client, plan.profiling("ceiling")).await?;
    let started = Instant::now();
    let done = Arc::new(AtomicU64::new(0));
    let o = Arc::clone(&observer);
    let progress = Progress::new(
        "ceiling".into(),
        "pods Ready",
        total,
        Arc::new(move || o.ready()),
    );
    for_each(total as usize, plan.concurrency, &done, |i| {
        let pods = pods.clone();
        async move {
            let name = format!("ceiling-{i}");
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": name, "labels": {"app": "ceiling"}},
                "spec": pod_template(json!({}))["spec"],
            }))?;
            pods.create(&PostParams::default(), &pod).await?;
            let now = jiff::Timestamp::now().to_string();
            let status = json!({"status": {
                "phase": "Running",
                "conditions": [
                    {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
                    {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                    {"type": "ContainersReady", "status": "True", "lastTransitionTime": now},
                    {"type": "Ready", "status": "True", "lastTransitionTime": now},
                ],
                "containerStatuses": [{
                    "name": "app", "image": "registry.k8s.io/pause:3.10", "imageID": "",
                    "ready": true, "restartCount": 0, "started": true,
                    "state": {"running": {"startedAt": now}},
                }],
            }});
            pods.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                .await?;
            Ok(())
        }
    })
    .await?;
    drop(progress);
    wait_observed(
        &observer,
        "ceiling",
        "pods Ready",
        total,
        plan.timeout(),
        Observer::ready,
        |o| o.ready() == total,
    )
    .await?;
    let elapsed = started.elapsed();
    let mut scenario = Scenario::new("ceiling", "pods", total, elapsed);
    target.memory(&mut scenario, total);
    scenario.ready_over_time = observer.ready_between(started, Instant::now(), CURVE_POINTS);

    let deleting = Instant::now();
    let deleted = Arc::new(AtomicU64::new(0));
    let d = Arc::clone(&deleted);
    let progress = Progress::counting("ceiling".into(), "pods deleted", total, d);
    for_each(total as usize, plan.concurrency, &deleted, |i| {
        let pods = pods.clone();
        async move {
            pods.delete(&format!("ceiling-{i}"), &DeleteParams::default())
                .await?;
            Ok(())
        }
    })
    .await?;
    drop(progress);
    wait_observed(
        &observer,
        "ceiling",
        "pods left",
        total,
        plan.timeout(),
        Observer::pods,
        |o| o.pods() == 0,
    )
    .await?;
    let delete_secs = deleting.elapsed().as_secs_f64();
    scenario.extra.insert("delete_seconds".into(), delete_secs);
    scenario
        .extra
        .insert("deletes_per_second".into(), total as f64 / delete_secs);
    probe.finish(&target.client, &mut scenario).await?;
    Ok(scenario)
}

/// The Deployments `web-0` … `web-{D-1}`.
fn deployment_name(i: usize) -> String {
    format!("web-{i}")
}

/// Applies `change` to every Deployment with `concurrency` in flight, records when each request was
/// sent and the generation it produced, and waits until each of those generations is complete.
/// Returns the per-Deployment times from the request to completion.
async fn change_and_wait<F, Fut>(
    label: &str,
    plan: &Plan,
    observer: &Arc<Observer>,
    change: F,
) -> anyhow::Result<Vec<Duration>>
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<Deployment>>,
{
    let sent: Arc<parking_lot::Mutex<HashMap<usize, (Instant, i64)>>> = Arc::default();
    let done = Arc::new(AtomicU64::new(0));
    let total = plan.deployments as u64;
    let o = Arc::clone(observer);
    let progress = Progress::new(
        label.to_string(),
        "pods Ready",
        plan.pods(),
        Arc::new(move || o.ready()),
    );
    for_each(plan.deployments, plan.concurrency, &done, |i| {
        let sent = Arc::clone(&sent);
        let fut = change(i);
        async move {
            let at = Instant::now();
            let d = fut.await?;
            sent.lock()
                .insert(i, (at, d.metadata.generation.unwrap_or_default()));
            Ok(())
        }
    })
    .await?;
    drop(progress);
    let sent = std::mem::take(&mut *sent.lock());
    let mut order: Vec<usize> = sent.keys().copied().collect();
    order.sort_unstable();
    let targets: Arc<Vec<(String, i64)>> = Arc::new(
        order
            .iter()
            .map(|i| (deployment_name(*i), sent[i].1))
            .collect(),
    );
    let (o, t) = (Arc::clone(observer), Arc::clone(&targets));
    let count = move || o.completed(&t).iter().filter(|c| c.is_some()).count() as u64;
    let (o, t) = (Arc::clone(observer), Arc::clone(&targets));
    wait_for(
        label,
        "Deployments complete",
        total,
        plan.timeout(),
        count,
        move || o.completed(&t).iter().all(Option::is_some),
    )
    .await?;
    Ok(order
        .iter()
        .zip(observer.completed(&targets))
        .filter_map(|(i, at)| Some(at?.saturating_duration_since(sent[i].0)))
        .collect())
}

async fn wait_for_nodes(
    client: &kube::Client,
    nodes: usize,
    timeout: Duration,
) -> anyhow::Result<()> {
    let api: Api<Node> = Api::all(client.clone());
    let deadline = Instant::now() + timeout;
    loop {
        let list = api.list(&ListParams::default()).await?;
        let ready = list
            .items
            .iter()
            .filter(|n| super::jobs::node_ready(n))
            .count();
        if ready >= nodes {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{ready}/{nodes} simulated nodes Ready after {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn deployments(
    plan: &Plan,
    wants: &dyn Fn(ScenarioName) -> bool,
) -> anyhow::Result<Vec<Scenario>> {
    let nodes = format!("--nodes={}", plan.nodes);
    let delay = format!("--pod-ready-delay={}ms", plan.pod_ready_delay.as_millis());
    let target = Target::start(&[&nodes, &delay, "--pod-termination-max=100ms"]).await?;
    wait_for_nodes(&target.client, plan.nodes, plan.timeout()).await?;
    let observer = Arc::new(Observer::start(target.client.clone(), NAMESPACE).await?);
    let api = target.deployments();
    let total = plan.pods();
    let mut out = Vec::new();

    // density: every Deployment created, until each is Available. Always run: the others start
    // from it.
    let probe = Probe::start(target.pid, &target.client, plan.profiling("density")).await?;
    let started = Instant::now();
    let replicas = plan.replicas;
    let latencies = change_and_wait("density", plan, &observer, |i| {
        let api = api.clone();
        async move {
            let d: Deployment = workload(&deployment_name(i), replicas, "app")?;
            Ok(api.create(&PostParams::default(), &d).await?)
        }
    })
    .await
    .context("scenario density")?;
    let mut density = Scenario::new("density", "pods", total, started.elapsed());
    density.deployment_to_available = Latency::of(latencies);
    target.memory(&mut density, total);
    density.ready_over_time = observer.ready_between(started, Instant::now(), CURVE_POINTS);
    probe.finish(&target.client, &mut density).await?;

    if wants(ScenarioName::Rollout) {
        let probe = Probe::start(target.pid, &target.client, plan.profiling("rollout")).await?;
        let started = Instant::now();
        let latencies = change_and_wait("rollout", plan, &observer, |i| {
            let api = api.clone();
            async move {
                let patch = json!({"spec": {"template": {"metadata": {"annotations": {"bench/rollout": "1"}}}}});
                Ok(api
                    .patch(&deployment_name(i), &PatchParams::default(), &Patch::Merge(&patch))
                    .await?)
            }
        })
        .await
        .context("scenario rollout")?;
        let mut s = Scenario::new("rollout", "pods replaced", total, started.elapsed());
        s.deployment_to_available = Latency::of(latencies);
        target.memory(&mut s, total);
        s.ready_over_time = observer.ready_between(started, Instant::now(), CURVE_POINTS);
        probe.finish(&target.client, &mut s).await?;
        out.push(s);
    }

    if wants(ScenarioName::Scale) {
        let probe = Probe::start(target.pid, &target.client, plan.profiling("scale")).await?;
        let started = Instant::now();
        let scale_to = |replicas: i32| {
            let api = api.clone();
            move |i: usize| {
                let api = api.clone();
                async move {
                    let patch = json!({"spec": {"replicas": replicas}});
                    Ok(api
                        .patch(
                            &deployment_name(i),
                            &PatchParams::default(),
                            &Patch::Merge(&patch),
                        )
                        .await?)
                }
            }
        };
        let mut latencies = change_and_wait("scale up", plan, &observer, scale_to(2 * replicas))
            .await
            .context("scenario scale, up")?;
        let up_secs = started.elapsed().as_secs_f64();
        let mut s = Scenario::new(
            "scale",
            "pods created and deleted",
            2 * total,
            Duration::ZERO,
        );
        target.memory(&mut s, 2 * total);
        latencies.extend(
            change_and_wait("scale down", plan, &observer, scale_to(replicas))
                .await
                .context("scenario scale, down")?,
        );
        // The scaled-down pods are deleted once they are gone, not when the Deployments no longer
        // count them.
        wait_observed(
            &observer,
            "scale down",
            "pods",
            total,
            plan.timeout(),
            Observer::pods,
            |o| o.pods() == total && o.ready() == total,
        )
        .await
        .context("scenario scale, down")?;
        let elapsed = started.elapsed();
        s.seconds = elapsed.as_secs_f64();
        s.objects_per_second = s.objects as f64 / s.seconds;
        s.extra.insert("scale_up_seconds".into(), up_secs);
        s.extra
            .insert("scale_down_seconds".into(), s.seconds - up_secs);
        s.deployment_to_available = Latency::of(latencies);
        s.ready_over_time = observer.ready_between(started, Instant::now(), CURVE_POINTS);
        probe.finish(&target.client, &mut s).await?;
        out.push(s);
    }

    if wants(ScenarioName::Churn) {
        // A completed rollout can leave old pods terminating: churn starts from D × R pods.
        wait_observed(
            &observer,
            "churn",
            "pods",
            total,
            plan.timeout(),
            Observer::pods,
            |o| o.pods() == total && o.ready() == total,
        )
        .await?;
        let probe = Probe::start(target.pid, &target.client, plan.profiling("churn")).await?;
        let started = Instant::now();
        let victims = Arc::new(observer.pod_names());
        let deleted = Arc::new(AtomicU64::new(0));
        let pods = target.pods();
        let o = Arc::clone(&observer);
        let progress = Progress::new(
            "churn".into(),
            "pods Ready",
            total,
            Arc::new(move || o.ready()),
        );
        for_each(victims.len(), plan.concurrency, &deleted, |i| {
            let (pods, victims) = (pods.clone(), Arc::clone(&victims));
            async move {
                match pods.delete(&victims[i], &DeleteParams::default()).await {
                    Ok(_) => Ok(()),
                    // Already gone: nothing to churn.
                    Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
                    Err(e) => Err(e.into()),
                }
            }
        })
        .await
        .context("scenario churn")?;
        drop(progress);
        let old: std::collections::HashSet<String> = victims.iter().cloned().collect();
        wait_observed(
            &observer,
            "churn",
            "pods Ready",
            total,
            plan.timeout(),
            Observer::ready,
            |o| {
                o.pods() == total
                    && o.ready() == total
                    && o.pod_names().iter().all(|n| !old.contains(n))
            },
        )
        .await
        .context("scenario churn")?;
        let mut s = Scenario::new(
            "churn",
            "pods replaced",
            victims.len() as u64,
            started.elapsed(),
        );
        target.memory(&mut s, total);
        s.ready_over_time = observer.ready_between(started, Instant::now(), CURVE_POINTS);
        probe.finish(&target.client, &mut s).await?;
        out.push(s);
    }

    // Teardown, reported with density: every Deployment deleted, until no pod is left.
    let deleting = Instant::now();
    let d = Arc::new(AtomicU64::new(0));
    for_each(plan.deployments, plan.concurrency, &d, |i| {
        let api = api.clone();
        async move {
            api.delete(&deployment_name(i), &DeleteParams::background())
                .await?;
            Ok(())
        }
    })
    .await?;
    wait_observed(
        &observer,
        "teardown",
        "pods left",
        total,
        plan.timeout(),
        Observer::pods,
        |o| o.pods() == 0,
    )
    .await
    .context("deleting every Deployment")?;
    let secs = deleting.elapsed().as_secs_f64();
    density.extra.insert("teardown_seconds".into(), secs);
    density
        .extra
        .insert("teardown_pods_per_second".into(), total as f64 / secs);
    let mut all = vec![];
    if wants(ScenarioName::Density) {
        all.push(density);
    }
    all.append(&mut out);
    Ok(all)
}

async fn burst_and_hold(
    plan: &Plan,
    wants: &dyn Fn(ScenarioName) -> bool,
) -> anyhow::Result<Vec<Scenario>> {
    let target = Target::start(&["--nodes=0"]).await?;
    let mut out = Vec::new();
    if wants(ScenarioName::Burst) {
        let observer = Arc::new(Observer::start(target.client.clone(), NAMESPACE).await?);
        let replicas = plan.burst_replicas;
        let rs: ReplicaSet = workload("burst", replicas, "app")?;
        let api: Api<ReplicaSet> = Api::namespaced(target.client.clone(), NAMESPACE);
        let probe = Probe::start(target.pid, &target.client, plan.profiling("burst")).await?;
        let started = Instant::now();
        api.create(&PostParams::default(), &rs).await?;
        let n = replicas as u64;
        wait_observed(
            &observer,
            "burst",
            "pods",
            n,
            plan.timeout(),
            Observer::pods,
            |o| o.pods() >= n,
        )
        .await
        .context("scenario burst")?;
        let mut s = Scenario::new("burst", "pods created", n, started.elapsed());
        target.memory(&mut s, n);
        probe.finish(&target.client, &mut s).await?;
        out.push(s);
        api.delete("burst", &DeleteParams::background()).await?;
        wait_observed(
            &observer,
            "burst",
            "pods left",
            n,
            plan.timeout(),
            Observer::pods,
            |o| o.pods() == 0,
        )
        .await
        .context("deleting the burst ReplicaSet")?;
    }
    if wants(ScenarioName::Hold) {
        out.push(hold(plan, &target).await.context("scenario hold")?);
    }
    Ok(out)
}

/// `hold`: N pods created through the API (no watcher of the bench's own: the `up` process's
/// controllers are the only ones caching them), the RSS sampled as they accumulate, then the idle
/// CPU and RSS once the process has settled.
async fn hold(plan: &Plan, target: &Target) -> anyhow::Result<Scenario> {
    let total = plan.hold_pods;
    let pods = target.pods();
    let created = Arc::new(AtomicU64::new(0));
    let probe = Probe::start(target.pid, &target.client, plan.profiling("hold")).await?;
    let started = Instant::now();
    // RSS against pods stored, sampled while they are created.
    let samples: Arc<parking_lot::Mutex<Vec<(u64, f64)>>> = Arc::default();
    let sampler = {
        let (created, samples, pid) = (Arc::clone(&created), Arc::clone(&samples), target.pid);
        tokio::spawn(async move {
            loop {
                let rss = process::rss_kib_of(pid) as f64 / 1024.0;
                samples.lock().push((created.load(Ordering::Relaxed), rss));
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        })
    };
    // When the first and the last tenth of the creates were done, to compare creates on an empty
    // store with creates on a full one.
    let tenth = (total / 10).max(1) as u64;
    let marks: Arc<parking_lot::Mutex<[Option<Instant>; 2]>> = Arc::default();
    let progress = Progress::counting(
        "hold".into(),
        "pods created",
        total as u64,
        Arc::clone(&created),
    );
    let result = for_each(total, plan.concurrency, &Arc::new(AtomicU64::new(0)), |i| {
        let (pods, created, marks) = (pods.clone(), Arc::clone(&created), Arc::clone(&marks));
        async move {
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": format!("hold-{i}"), "labels": {"app": "hold"}},
                "spec": pod_template(json!({}))["spec"],
            }))?;
            pods.create(&PostParams::default(), &pod).await?;
            let n = created.fetch_add(1, Ordering::Relaxed) + 1;
            if n == tenth {
                marks.lock()[0] = Some(Instant::now());
            }
            if n == total as u64 - tenth {
                marks.lock()[1] = Some(Instant::now());
            }
            Ok(())
        }
    })
    .await;
    drop(progress);
    let elapsed = started.elapsed();
    sampler.abort();
    result?;
    let mut s = Scenario::new("hold", "pods created", total as u64, elapsed);
    let [first, last] = *marks.lock();
    if let (Some(first), Some(last)) = (first, last) {
        let first_secs = first.duration_since(started).as_secs_f64();
        let last_secs = elapsed.as_secs_f64() - last.duration_since(started).as_secs_f64();
        if first_secs > 0.0 && last_secs > 0.0 {
            s.extra.insert(
                "creates_per_second_first_tenth".into(),
                tenth as f64 / first_secs,
            );
            s.extra.insert(
                "creates_per_second_last_tenth".into(),
                tenth as f64 / last_secs,
            );
        }
    }
    probe.finish(&target.client, &mut s).await?;

    // Settle: the controllers' informers catch up; then one window of idle CPU.
    let settling = Instant::now();
    let window = Duration::from_secs(1);
    let settle_deadline = settling + plan.timeout();
    loop {
        let before = process::cpu_seconds_of(target.pid);
        tokio::time::sleep(window).await;
        let busy = (process::cpu_seconds_of(target.pid) - before) / window.as_secs_f64();
        if busy < 0.05 || Instant::now() > settle_deadline {
            break;
        }
    }
    s.extra
        .insert("settle_seconds".into(), settling.elapsed().as_secs_f64());
    let idle_window = plan.idle.max(Duration::from_millis(500));
    let cpu_before = process::cpu_seconds_of(target.pid);
    tokio::time::sleep(idle_window).await;
    let idle_cpu = process::cpu_seconds_of(target.pid) - cpu_before;
    s.extra.insert(
        "idle_cpu_percent".into(),
        100.0 * idle_cpu / idle_window.as_secs_f64(),
    );
    target.memory(&mut s, total as u64);
    let mut curve = std::mem::take(&mut *samples.lock());
    curve.push((total as u64, s.rss_mib));
    s.rss_over_pods = super::observe::thin(&curve, CURVE_POINTS);
    Ok(s)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: SuiteArgs,
    }

    fn plan(args: &[&str]) -> anyhow::Result<Plan> {
        let mut argv = vec!["all"];
        argv.extend_from_slice(args);
        Plan::of(&Cli::try_parse_from(argv)?.args)
    }

    #[test]
    fn presets_and_overrides() {
        let small = plan(&[]).expect("small");
        assert_eq!(
            (small.size, small.deployments, small.replicas),
            ("small", 5, 10)
        );
        assert_eq!((small.hold_pods, small.burst_replicas), (1_000, 100));
        assert_eq!(small.nodes, 2, "100 pods at 99 a node");
        let large = plan(&["--size", "large"]).expect("large");
        assert_eq!(large.pods(), 10_000);
        assert_eq!(large.hold_pods, 100_000);
        assert_eq!(large.burst_replicas, 1_000);
        assert_eq!(large.nodes, 203);
        assert!(large.nodes * PODS_PER_NODE >= 2 * 10_000);
        let custom = plan(&["--size=large", "--pods=5000", "--nodes=7"]).expect("custom");
        assert_eq!(custom.size, "custom");
        assert_eq!(
            (custom.hold_pods, custom.nodes, custom.deployments),
            (5_000, 7, 1_000)
        );
        assert!(plan(&["--replicas=0"]).is_err());
        assert!(plan(&["--concurrency=0"]).is_err());
        assert!(plan(&["--scenarios=density,nope"]).is_err());
        assert!(plan(&["--idle=-1s"]).is_err());
    }
}
