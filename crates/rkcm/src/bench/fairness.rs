//! `rkcm bench fairness`: what a client flooding LISTs does to another user's writes, with API
//! Priority and Fairness on and off.
//!
//! Each scenario starts its own `rkcm up --nodes=0` child (same binary, a temporary data
//! directory, the durable embedded store, kube's default 400 + 200 seats unless told otherwise)
//! with two token users, `alice` and `bob`, each allowed to edit their own namespace. kube's
//! bootstrap configuration classifies both to `global-default`, one flow each (ByUser). Alice
//! lists the ConfigMaps of her namespace from many tasks at once, without pause; Bob creates
//! ConfigMaps in his, one at a time (kube-rs resends a refused write after its `Retry-After`).
//! Bob's write latency, resends included, is reported without the flood, then under it with the
//! filter on and off. The server runs in a process of its own, but on the same cores as the
//! clients: when the flood saturates the CPU before it fills its level's seats (as on a 2-core
//! machine), Bob's tail is time waiting for a core, which no concurrency limit arbitrates.
//!
//! With the filter on, each of Alice's LISTs takes one seat per 100 stored ConfigMaps (at most
//! the level's maximum, 8 of `global-default`'s 49 at 600 seats) and holds them until its body
//! has been sent, so only a few run at once, and fair queuing hands Bob the next free seat. With
//! it off, every LIST up to `--max-requests-inflight` runs at once.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use futures::{stream, StreamExt};
use http_body_util::BodyExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, PostParams};
use serde_json::json;

use super::report::percentile;

/// `rkcm bench fairness`.
#[derive(Debug, Clone, Args)]
pub struct FairnessArgs {
    /// Tasks listing Alice's ConfigMaps at once.
    #[arg(long, default_value_t = 64)]
    pub flooders: usize,
    /// ConfigMaps in Alice's namespace (the size of each LIST).
    #[arg(long, default_value_t = 500)]
    pub objects: usize,
    /// Bob's writes in each run.
    #[arg(long, default_value_t = 300)]
    pub writes: usize,
    /// The server's `--max-requests-inflight`.
    #[arg(long, default_value_t = rkcm_apiserver::http::inflight::DEFAULT_MAX_REQUESTS_INFLIGHT)]
    pub max_requests_inflight: usize,
    /// The server's `--max-mutating-requests-inflight`.
    #[arg(long, default_value_t = rkcm_apiserver::http::inflight::DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT)]
    pub max_mutating_requests_inflight: usize,
    /// Seconds the flood runs before Bob's writes are measured.
    #[arg(long, default_value_t = 2)]
    pub warmup_seconds: u64,
}

/// One run's figures.
struct Run {
    label: &'static str,
    write_p50: Duration,
    write_p99: Duration,
    lists: u64,
    lists_refused: u64,
    writes_refused: u64,
    seconds: f64,
}

/// Runs the three scenarios and prints their figures.
pub async fn run(args: &FairnessArgs) -> anyhow::Result<()> {
    println!(
        "{:<16} {:>12} {:>12} {:>10} {:>10} {:>10} {:>8}",
        "scenario", "write p50", "write p99", "LISTs/s", "LIST fail", "write 429", "seconds"
    );
    let mut runs = Vec::new();
    for (label, apf, flood) in [
        ("no flood", true, false),
        ("flood, APF on", true, true),
        ("flood, APF off", false, true),
    ] {
        let r = scenario(args, label, apf, flood).await?;
        println!(
            "{:<16} {:>10.1}ms {:>10.1}ms {:>10.0} {:>10} {:>10} {:>8.1}",
            r.label,
            r.write_p50.as_secs_f64() * 1e3,
            r.write_p99.as_secs_f64() * 1e3,
            r.lists as f64 / r.seconds,
            r.lists_refused,
            r.writes_refused,
            r.seconds
        );
        runs.push(r);
    }
    if let [base, on, off] = &runs[..] {
        let ratio = |r: &Run| r.write_p99.as_secs_f64() / base.write_p99.as_secs_f64().max(1e-9);
        println!(
            "Bob's write p99 under the flood: {:.2}× with APF on, {:.2}× with APF off",
            ratio(on),
            ratio(off)
        );
    }
    Ok(())
}

/// A client of the cluster whose kubeconfig is `kubeconfig`, authenticating with `token`.
async fn client_with_token(
    kubeconfig: &std::path::Path,
    token: Option<&str>,
) -> anyhow::Result<kube::Client> {
    let mut config = super::kube_config_from(kubeconfig).await?;
    if let Some(token) = token {
        config.auth_info = kube::config::AuthInfo {
            token: Some(token.to_string().into()),
            ..Default::default()
        };
    }
    Ok(kube::Client::try_from(config)?)
}

async fn scenario(
    args: &FairnessArgs,
    label: &'static str,
    apf: bool,
    flood: bool,
) -> anyhow::Result<Run> {
    let dir = tempfile::tempdir()?;
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "alice-token,alice,1001\nbob-token,bob,1002\n")?;
    let up_args = [
        "--nodes=0".to_string(),
        format!("--token-auth-file={}", tokens.display()),
        format!("--max-requests-inflight={}", args.max_requests_inflight),
        format!(
            "--max-mutating-requests-inflight={}",
            args.max_mutating_requests_inflight
        ),
        format!("--enable-priority-and-fairness={apf}"),
    ];
    let (cluster, _) = super::Cluster::start(&up_args.each_ref().map(String::as_str))?;
    let kubeconfig = cluster.kubeconfig.clone();
    let admin = client_with_token(&kubeconfig, None).await?;
    for ns in ["alice", "bob"] {
        let object: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}}))?;
        Api::<Namespace>::all(admin.clone())
            .create(&PostParams::default(), &object)
            .await
            .with_context(|| format!("creating namespace {ns}"))?;
        let binding: RoleBinding = serde_json::from_value(json!({
            "metadata": {"name": "edit"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": ns}],
        }))?;
        Api::<RoleBinding>::namespaced(admin.clone(), ns)
            .create(&PostParams::default(), &binding)
            .await
            .with_context(|| format!("letting {ns} edit namespace {ns}"))?;
    }
    let seeded = Api::<ConfigMap>::namespaced(admin.clone(), "alice");
    stream::iter(0..args.objects)
        .map(|i| {
            let api = seeded.clone();
            async move {
                let cm: ConfigMap = serde_json::from_value(json!({
                    "metadata": {"name": format!("cm-{i}")},
                    "data": {"payload": "x".repeat(512)},
                }))?;
                api.create(&PostParams::default(), &cm).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<anyhow::Result<Vec<_>>>()?;

    // Alice's flood and Bob's writes each run on a thread of their own with a runtime of its
    // own: Bob's requests never wait behind the flood's tasks in this process, and the flood
    // takes at most one core on the client side.
    let stop = Arc::new(AtomicBool::new(false));
    let lists = Arc::new(AtomicU64::new(0));
    let lists_refused = Arc::new(AtomicU64::new(0));
    let flood_thread = flood.then(|| {
        let (kubeconfig, flooders) = (kubeconfig.clone(), args.flooders);
        let (stop, lists, refused) = (stop.clone(), lists.clone(), lists_refused.clone());
        on_own_thread(move || async move {
            let alice = client_with_token(&kubeconfig, Some("alice-token")).await?;
            let mut tasks = tokio::task::JoinSet::new();
            for _ in 0..flooders {
                let (client, stop) = (alice.clone(), stop.clone());
                let (lists, refused) = (lists.clone(), refused.clone());
                tasks.spawn(flood_lists(client, stop, lists, refused));
            }
            while tasks.join_next().await.is_some() {}
            anyhow::Ok(())
        })
    });
    if flood {
        // Let the flood build up before measuring.
        tokio::time::sleep(Duration::from_secs(args.warmup_seconds)).await;
    }
    let started = Instant::now();
    let lists_before = lists.load(Ordering::Relaxed);
    let writes = args.writes;
    let measured = on_own_thread(move || async move {
        let bob = client_with_token(&kubeconfig, Some("bob-token")).await?;
        bob_writes(bob, writes).await
    });
    let written = tokio::task::spawn_blocking(move || measured.join()).await?;
    let seconds = started.elapsed().as_secs_f64();
    let lists_done = lists.load(Ordering::Relaxed) - lists_before;
    stop.store(true, Ordering::Relaxed);
    if let Some(thread) = flood_thread {
        let flooded = tokio::task::spawn_blocking(move || thread.join()).await?;
        flooded.map_err(|_| anyhow::anyhow!("the flood's thread panicked"))??;
    }
    let (mut latencies, writes_refused) =
        written.map_err(|_| anyhow::anyhow!("Bob's thread panicked"))??;
    latencies.sort_unstable();
    Ok(Run {
        label,
        write_p50: percentile(&latencies, 50.0).unwrap_or_default(),
        write_p99: percentile(&latencies, 99.0).unwrap_or_default(),
        lists: lists_done,
        lists_refused: lists_refused.load(Ordering::Relaxed),
        writes_refused,
        seconds,
    })
}

/// Runs `f`'s future to its end on a new thread with a single-threaded runtime.
fn on_own_thread<T, Fut>(
    f: impl FnOnce() -> Fut + Send + 'static,
) -> std::thread::JoinHandle<anyhow::Result<T>>
where
    T: Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(f())
    })
}

/// Lists Alice's ConfigMaps until `stop`, counting the answers and the failures. The body is
/// read, not decoded: the flood's cost is the server's, not this process's.
async fn flood_lists(
    client: kube::Client,
    stop: Arc<AtomicBool>,
    lists: Arc<AtomicU64>,
    refused: Arc<AtomicU64>,
) {
    while !stop.load(Ordering::Relaxed) {
        let Ok(req) = http::Request::get("/api/v1/namespaces/alice/configmaps")
            .body(kube::client::Body::empty())
        else {
            return;
        };
        let answered = match client.send(req).await {
            Ok(resp) if resp.status().is_success() => resp.into_body().collect().await.is_ok(),
            Ok(resp) => {
                let _ = resp.into_body().collect().await;
                false
            }
            Err(_) => false,
        };
        let counter = if answered { &lists } else { &refused };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Bob's `writes` creates, one at a time: each one's latency (resends after a 429 included)
/// and the number of 429s.
async fn bob_writes(bob: kube::Client, writes: usize) -> anyhow::Result<(Vec<Duration>, u64)> {
    let api = Api::<ConfigMap>::namespaced(bob, "bob");
    let mut latencies = Vec::with_capacity(writes);
    let mut refused = 0u64;
    for i in 0..writes {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("w-{i}")}}))?;
        let t = Instant::now();
        loop {
            match api.create(&PostParams::default(), &cm).await {
                Ok(_) => break,
                Err(kube::Error::Api(e)) if e.code == 429 => {
                    refused += 1;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
        latencies.push(t.elapsed());
    }
    Ok((latencies, refused))
}
