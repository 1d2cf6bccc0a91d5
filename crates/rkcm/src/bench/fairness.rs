//! `rkcm bench fairness`: what a client flooding LISTs does to another user's writes, with API
//! Priority and Fairness on and off.
//!
//! An API server runs in this process (in-memory store, token users `alice` and `bob`, both
//! classified by kube's bootstrap configuration to `global-default`, one flow each). Alice lists
//! the ConfigMaps of her namespace from many tasks at once, without pause; Bob creates ConfigMaps
//! in his, one at a time, retrying a refused write after its `Retry-After`. Bob's write latency
//! (retries included) is reported without the flood, then under it with the filter on and off.
//!
//! The filter limits how many requests of a level run at once, not their CPU: it protects Bob
//! when Alice's flood exceeds `global-default`'s seats (20/245 of the server's), which on a small
//! machine means a server with fewer seats than kube's default 600.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use futures::{stream, StreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
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
        "scenario", "write p50", "write p99", "LISTs/s", "LIST 429", "write 429", "seconds"
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

async fn scenario(
    args: &FairnessArgs,
    label: &'static str,
    apf: bool,
    flood: bool,
) -> anyhow::Result<Run> {
    let dir = tempfile::tempdir()?;
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "alice-token,alice,1001\nbob-token,bob,1002\n")?;
    let server = rkcm_apiserver::testing::start_with(rkcm_apiserver::Config {
        token_auth_file: Some(tokens),
        enable_priority_and_fairness: apf,
        max_requests_inflight: args.max_requests_inflight,
        max_mutating_requests_inflight: args.max_mutating_requests_inflight,
        ..rkcm_apiserver::testing::config()
    })
    .await;
    let admin = server.client();
    for ns in ["alice", "bob"] {
        let object: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}}))?;
        Api::<Namespace>::all(admin.clone())
            .create(&PostParams::default(), &object)
            .await?;
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

    let alice = server.client_as(json!({"token": "alice-token"})).await;
    let bob = server.client_as(json!({"token": "bob-token"})).await;
    let stop = Arc::new(AtomicBool::new(false));
    let lists = Arc::new(AtomicU64::new(0));
    let lists_refused = Arc::new(AtomicU64::new(0));
    let mut flooders = tokio::task::JoinSet::new();
    if flood {
        for _ in 0..args.flooders {
            let client = alice.clone();
            let (stop, lists, refused) = (stop.clone(), lists.clone(), lists_refused.clone());
            // The body is read, not decoded: the flood's cost is the server's, not this process's.
            flooders.spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let Ok(req) =
                        http::Request::get("/api/v1/namespaces/alice/configmaps").body(Vec::new())
                    else {
                        return;
                    };
                    match client.request_text(req).await {
                        Ok(_) => lists.fetch_add(1, Ordering::Relaxed),
                        Err(_) => refused.fetch_add(1, Ordering::Relaxed),
                    };
                }
            });
        }
        // Let the flood build up before measuring.
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    let started = Instant::now();
    let lists_before = lists.load(Ordering::Relaxed);
    let api = Api::<ConfigMap>::namespaced(bob, "bob");
    let mut latencies = Vec::with_capacity(args.writes);
    let mut writes_refused = 0u64;
    for i in 0..args.writes {
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("w-{i}")}}))?;
        let t = Instant::now();
        loop {
            match api.create(&PostParams::default(), &cm).await {
                Ok(_) => break,
                Err(kube::Error::Api(e)) if e.code == 429 => {
                    writes_refused += 1;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
        latencies.push(t.elapsed());
    }
    let seconds = started.elapsed().as_secs_f64();
    let lists_done = lists.load(Ordering::Relaxed) - lists_before;
    stop.store(true, Ordering::Relaxed);
    while flooders.join_next().await.is_some() {}
    server.stop().await;
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
