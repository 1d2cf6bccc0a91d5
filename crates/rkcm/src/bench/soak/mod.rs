//! `rkcm bench soak`: creates, updates, deletes and watches of ConfigMaps at a steady rate
//! against `rkcm up` while faults hit it at seeded random moments — SIGKILL and restart on the
//! embedded store, one of three etcd members stopped and started on etcd — then checks that no
//! acknowledged write was lost and that no watcher missed one.

pub mod checker;
mod faults;
mod load;
mod report;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, PostParams};
use rkcm_apiserver::storage::etcd::testing::EtcdProcess;
use rkcm_runtime::process;
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinSet;

use checker::{History, Key};
use faults::{Fault, Target, Up};
use load::Timed;
use report::{per_minute, print, Report, StoreReport};

/// Which store the soak runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Store {
    /// The embedded store (redb); faults kill `rkcm up` with SIGKILL and restart it.
    Embedded,
    /// A three-member etcd; faults stop one member and start it again.
    Etcd,
    /// The embedded store, then etcd.
    Both,
}

/// `rkcm bench soak`.
#[derive(Debug, Clone, Args)]
pub struct SoakArgs {
    /// How long the load runs on each store.
    #[arg(long, default_value = "10m", value_parser = rkcm_apimachinery::duration::parse_non_negative)]
    pub duration: Duration,
    /// Store to run on.
    #[arg(long, value_enum, default_value_t = Store::Both)]
    pub store: Store,
    /// Writes per second, spread over the writers.
    #[arg(long, default_value_t = 50.0)]
    pub rate: f64,
    /// Writer tasks (each owns its share of the keys).
    #[arg(long, default_value_t = 4)]
    pub writers: usize,
    /// Namespaces written and watched.
    #[arg(long, default_value_t = 3)]
    pub namespaces: usize,
    /// ConfigMap names per namespace.
    #[arg(long, default_value_t = 20)]
    pub keys: usize,
    /// Watchers per namespace.
    #[arg(long, default_value_t = 1)]
    pub watchers: usize,
    /// Seed of the fault plan and of the writers' choices (random when not given; printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Mean time between faults.
    #[arg(long, default_value = "60s", value_parser = rkcm_apimachinery::duration::parse_non_negative)]
    pub fault_interval: Duration,
    /// Longest a killed process or stopped member stays down before it is started again.
    #[arg(long, default_value = "5s", value_parser = rkcm_apimachinery::duration::parse_non_negative)]
    pub max_down: Duration,
    /// Largest RSS growth of the `up` process from start to end that passes, MiB.
    #[arg(long, default_value_t = 64.0)]
    pub rss_growth_limit_mib: f64,
    /// Writes the report as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Writes each store's whole recorded history (writes, watch events, lists) as JSON to
    /// `PATH.<store>.json`, for looking into a failure.
    #[arg(long, value_name = "PATH")]
    pub history: Option<PathBuf>,
}

/// Runs the soak on the chosen stores, prints the report, writes its JSON; fails when a store
/// lost a write, a watcher missed one, no fault happened or RSS grew past its bound.
pub async fn run(args: SoakArgs) -> anyhow::Result<()> {
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    });
    let stores = match args.store {
        Store::Embedded => vec![Store::Embedded],
        Store::Etcd => vec![Store::Etcd],
        Store::Both => vec![Store::Embedded, Store::Etcd],
    };
    let mut report = Report {
        seed,
        rate: args.rate,
        stores: Vec::new(),
    };
    for store in stores {
        let r = soak(store, &args, seed).await?;
        print(&r, seed);
        report.stores.push(r);
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_vec_pretty(&report)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let failed: Vec<&str> = report
        .stores
        .iter()
        .filter(|r| !r.passed)
        .map(|r| r.store.as_str())
        .collect();
    anyhow::ensure!(failed.is_empty(), "soak failed on {}", failed.join(", "));
    Ok(())
}

/// Calls `f` until it succeeds or `within` passes (the server may be restarting).
async fn retry<T, F, Fut>(what: &str, within: Duration, mut f: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let deadline = Instant::now() + within;
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if Instant::now() > deadline => {
                return Err(e).with_context(|| format!("{what} within {within:?}"))
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

fn namespace_name(i: usize) -> String {
    format!("soak-{i}")
}

async fn soak(store: Store, args: &SoakArgs, seed: u64) -> anyhow::Result<StoreReport> {
    let dir = tempfile::tempdir().context("creating a temporary data directory")?;
    let data_dir = dir.path().join("data");
    let (target, name) = match store {
        Store::Etcd => {
            let etcd = tokio::task::spawn_blocking(|| EtcdProcess::cluster_or_skip(3))
                .await
                .context("starting a three-member etcd")?
                .context("the etcd store needs an etcd binary: /usr/bin/etcd or $ETCD_BIN")?;
            let servers = etcd.endpoints().join(",");
            let flags = vec!["--etcd-servers".to_string(), servers];
            let up = tokio::task::spawn_blocking(move || Up::start(&data_dir, &flags)).await??;
            (Target::Etcd { up, etcd }, "etcd")
        }
        _ => {
            let up = tokio::task::spawn_blocking(move || Up::start(&data_dir, &[])).await??;
            (Target::Embedded(up), "embedded")
        }
    };
    let kubeconfig = kube::config::Kubeconfig::read_from(target.up().kubeconfig())?;
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    config.connect_timeout = Some(Duration::from_secs(2));
    // kube-rs resends any request answered 429, 503 or 504. A write answered 503 may have been
    // applied (etcd committed it, its answer was lost); resent, it then fails with 409 or 404,
    // and the write would look refused. The soak records the server's own answers.
    config.default_retry = false;
    // Watches hold their connection; the server ends them (`timeoutSeconds`) or a kill does.
    let watch_client = kube::Client::try_from(config.clone())?;
    config.read_timeout = Some(Duration::from_secs(15));
    let client = kube::Client::try_from(config)?;

    let namespaces: Vec<String> = (0..args.namespaces.max(1)).map(namespace_name).collect();
    let ns_api: Api<Namespace> = Api::all(client.clone());
    let post = PostParams::default();
    for ns in &namespaces {
        let body: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}}))?;
        retry("creating a namespace", Duration::from_secs(60), || async {
            match ns_api.create(&post, &body).await {
                // An earlier attempt of ours did create it.
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
                r => r.map(|_| ()),
            }
        })
        .await?;
    }
    let rss_start = target.up().pid().map_or(0, process::rss_kib_of);

    // Watchers first, each with its own stop signal: the resourceVersion to reach.
    let mut stops = BTreeMap::new();
    let mut watchers = JoinSet::new();
    for ns in &namespaces {
        let (tx, rx) = watch::channel(None);
        stops.insert(ns.clone(), tx);
        for _ in 0..args.watchers {
            let api = Api::<ConfigMap>::namespaced(watch_client.clone(), ns);
            watchers.spawn(load::watcher(
                api,
                ns.clone(),
                rx.clone(),
                Duration::from_secs(60),
            ));
        }
    }

    let started = Instant::now();
    let (stop_tx, stop_rx) = watch::channel(false);
    let writers_n = args.writers.max(1);
    let period = Duration::from_secs_f64(writers_n as f64 / args.rate.max(0.1));
    let mut writers = JoinSet::new();
    for w in 0..writers_n {
        let keys: Vec<Key> = namespaces
            .iter()
            .flat_map(|ns| {
                (0..args.keys).map(move |k| Key {
                    namespace: ns.clone(),
                    name: format!("cm-{k}"),
                })
            })
            .enumerate()
            .filter(|(i, _)| i % writers_n == w)
            .map(|(_, k)| k)
            .collect();
        let client = client.clone();
        writers.spawn(load::writer(
            move |ns: &str| Api::namespaced(client.clone(), ns),
            keys,
            period,
            seed.wrapping_add(w as u64 + 1),
            started,
            stop_rx.clone(),
        ));
    }

    let plan = faults::plan(seed, args.duration, args.fault_interval, args.max_down, 3);
    let faults_task = tokio::task::spawn_blocking(move || {
        let mut target = target;
        let mut done = Vec::new();
        for fault in plan {
            if let Some(wait) = fault.at.checked_sub(started.elapsed()) {
                std::thread::sleep(wait);
            }
            let at = started.elapsed();
            let what = target.hit(&fault)?;
            done.push(Fault {
                what,
                at_seconds: at.as_secs_f64(),
                back_at_seconds: started.elapsed().as_secs_f64(),
            });
        }
        anyhow::Ok((target, done))
    });

    tokio::time::sleep(args.duration.saturating_sub(started.elapsed())).await;
    let _ = stop_tx.send(true);
    let mut timed: Vec<Timed> = Vec::new();
    while let Some(w) = writers.join_next().await {
        timed.extend(w.context("a writer panicked")?);
    }
    let seconds = started.elapsed().as_secs_f64();
    let (target, faults) = faults_task.await.context("the fault task panicked")??;
    for ns in &namespaces {
        let api = Api::<ConfigMap>::namespaced(client.clone(), ns);
        timed.extend(load::fence(&api, ns, started, Duration::from_secs(60)).await?);
    }

    // Each watcher stops once it has delivered its namespace's last acknowledged write.
    let mut last_acked: BTreeMap<&str, u64> = BTreeMap::new();
    for t in &timed {
        if let checker::Outcome::Acked { rv } = t.write.outcome {
            let e = last_acked
                .entry(t.write.key.namespace.as_str())
                .or_insert(0);
            *e = (*e).max(rv);
        }
    }
    for (ns, tx) in &stops {
        let _ = tx.send(Some(last_acked.get(ns.as_str()).copied().unwrap_or(0)));
    }
    let mut history = History::default();
    while let Some(w) = watchers.join_next().await {
        history.watchers.push(w.context("a watcher panicked")?);
    }
    for ns in &namespaces {
        let api = Api::<ConfigMap>::namespaced(client.clone(), ns);
        let state = retry("listing the final state", Duration::from_secs(60), || {
            load::list(&api)
        })
        .await?;
        history.final_lists.insert(ns.clone(), state);
    }
    let rss_end = target.up().pid().map_or(0, process::rss_kib_of);
    let latency = per_minute(&timed);
    let mut errors = BTreeMap::new();
    for reason in timed.iter().filter_map(|t| t.error.clone()) {
        *errors.entry(reason).or_insert(0) += 1;
    }
    history.writes = timed.into_iter().map(|t| t.write).collect();
    let verdict = checker::check(&history);
    if let Some(path) = &args.history {
        let path = path.with_extension(format!("{name}.json"));
        std::fs::write(&path, serde_json::to_vec(&history)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    drop(target);

    let mib = |kib: u64| kib as f64 / 1024.0;
    let growth = mib(rss_end) - mib(rss_start);
    Ok(StoreReport {
        store: name.to_string(),
        seconds,
        writes_acknowledged: verdict.acknowledged,
        writes_refused: verdict.refused,
        writes_indeterminate: verdict.indeterminate,
        errors,
        refused_but_applied: verdict.refused_but_applied,
        writes_lost: verdict.lost.len(),
        watch_gaps: verdict.gaps.len(),
        watch_events: verdict.events,
        relists: verdict.relists,
        resumes: verdict.resumes,
        passed: verdict.lost.is_empty()
            && verdict.gaps.is_empty()
            && !faults.is_empty()
            && growth <= args.rss_growth_limit_mib,
        faults,
        rss_start_mib: mib(rss_start),
        rss_end_mib: mib(rss_end),
        rss_growth_limit_mib: args.rss_growth_limit_mib,
        latency,
        lost: verdict.lost.into_iter().take(20).collect(),
        gaps: verdict.gaps.into_iter().take(20).collect(),
    })
}
