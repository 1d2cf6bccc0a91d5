//! Benchmark: pod creates/s with concurrent clients (p50/p99 latency), watch latency (from
//! sending a create to its ADDED event on a watch through the same server, p50/p99), then watch
//! fan-out; for each store given, side by side in one run.
//!
//! `cargo run --release -p rkcm-apiserver --example bench_creates -- [--stores redb,etcd]
//!  [--creates N] [--clients C] [--latency-writes L] [--watchers W] [--watch-events E]`
//!
//! Stores: `redb` (the default store, in a temporary data dir), `memory`, and `etcd` (a
//! one-member etcd, `/usr/bin/etcd` or `$ETCD_BIN`, with its data in a temporary directory).
//! `--memory` and `--etcd` run that store alone.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use serde_json::json;

struct Args {
    stores: Vec<String>,
    creates: usize,
    latency_writes: usize,
    clients: usize,
    watchers: usize,
    watch_events: usize,
}

fn parse_args() -> Args {
    let mut a = Args {
        stores: vec!["redb".into(), "etcd".into()],
        creates: 20_000,
        latency_writes: 1_000,
        clients: 100,
        watchers: 100,
        watch_events: 5_000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut num = |name: &str| -> usize {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} needs a number"))
        };
        match arg.as_str() {
            "--memory" => a.stores = vec!["memory".into()],
            "--etcd" => a.stores = vec!["etcd".into()],
            "--stores" => {
                a.stores = it
                    .next()
                    .expect("--stores needs a list")
                    .split(',')
                    .map(str::to_string)
                    .collect()
            }
            "--creates" => a.creates = num("--creates"),
            "--latency-writes" => a.latency_writes = num("--latency-writes"),
            "--clients" => a.clients = num("--clients"),
            "--watchers" => a.watchers = num("--watchers"),
            "--watch-events" => a.watch_events = num("--watch-events"),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}
    }))
    .expect("pod")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx]
}

/// Creates `total` pods with `clients` concurrent clients; each request body is pre-encoded and
/// each response is read but not decoded, so the client side costs little next to the server.
async fn create_load(
    client: &kube::Client,
    prefix: &str,
    total: usize,
    clients: usize,
) -> (Duration, Vec<Duration>) {
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let client = client.clone();
        let next = Arc::clone(&next);
        let prefix = prefix.to_string();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return lat;
                }
                let body = serde_json::to_vec(&pod(&format!("{prefix}-{i}"))).expect("json");
                let req = http::Request::post("/api/v1/namespaces/default/pods")
                    .header("Content-Type", "application/json")
                    .body(kube::client::Body::from(body))
                    .expect("request");
                let t = Instant::now();
                let resp = client.send(req).await.expect("create");
                let status = resp.status();
                let _ = http_body_util::BodyExt::collect(resp.into_body()).await;
                assert_eq!(status.as_u16(), 201, "create failed");
                lat.push(t.elapsed());
            }
        }));
    }
    let mut all = Vec::with_capacity(total);
    for t in tasks {
        all.extend(t.await.expect("client task"));
    }
    (start.elapsed(), all)
}

/// Sends `writes` creates one after the other; returns, for each, the time from sending it to
/// its ADDED event on a watch opened beforehand through the same server.
async fn watch_latency(client: &kube::Client, writes: usize) -> Vec<Duration> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let rv = pods
        .list_metadata(&kube::api::ListParams::default().limit(1))
        .await
        .expect("list")
        .metadata
        .resource_version
        .unwrap_or_default();
    let sent = Arc::new(parking_lot::Mutex::new(HashMap::<String, Instant>::new()));
    let mut stream = pods
        .watch(&WatchParams::default().labels("app=latency"), &rv)
        .await
        .expect("watch")
        .boxed();
    let seen = Arc::clone(&sent);
    let watcher = tokio::spawn(async move {
        let mut lat = Vec::with_capacity(writes);
        while lat.len() < writes {
            match stream.try_next().await {
                Ok(Some(WatchEvent::Added(p))) => {
                    let at = Instant::now();
                    let name = p.metadata.name.unwrap_or_default();
                    let from = seen.lock().get(&name).copied().expect("sent before seen");
                    lat.push(at - from);
                }
                Ok(Some(WatchEvent::Error(e))) => panic!("watch error event: {e:?}"),
                Ok(Some(_)) => {}
                Ok(None) => panic!("watch closed after {} events", lat.len()),
                Err(e) => panic!("watch error: {e}"),
            }
        }
        lat
    });
    for i in 0..writes {
        let mut p = pod(&format!("lat-{i}"));
        p.metadata.labels = Some([("app".to_string(), "latency".to_string())].into());
        sent.lock().insert(format!("lat-{i}"), Instant::now());
        pods.create(&PostParams::default(), &p)
            .await
            .expect("create");
    }
    watcher.await.expect("watcher")
}

/// One store's figures.
struct Figures {
    store: String,
    creates_per_s: f64,
    create_p50: Duration,
    create_p99: Duration,
    watch_p50: Duration,
    watch_p99: Duration,
    deliveries_per_s: Option<f64>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args();
    println!(
        "clients: {}, cores: {}",
        args.clients,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );
    let mut all = Vec::new();
    for store in &args.stores {
        all.push(run(&args, store).await?);
    }
    println!();
    println!("| store | creates/s | create p50 | create p99 | watch latency p50 | watch latency p99 | fan-out deliveries/s |");
    println!("|---|---|---|---|---|---|---|");
    for f in &all {
        println!(
            "| {} | {:.0} | {:.1} ms | {:.1} ms | {:.2} ms | {:.2} ms | {} |",
            f.store,
            f.creates_per_s,
            ms(f.create_p50),
            ms(f.create_p99),
            ms(f.watch_p50),
            ms(f.watch_p99),
            f.deliveries_per_s
                .map(|d| format!("{d:.0}"))
                .unwrap_or_else(|| "-".into()),
        );
    }
    Ok(())
}

async fn run(args: &Args, store: &str) -> anyhow::Result<Figures> {
    let dir = tempfile::tempdir()?;
    let etcd = if store == "etcd" {
        Some(
            rkcm_apiserver::storage::etcd::testing::EtcdProcess::start_or_skip()
                .ok_or_else(|| anyhow::anyhow!("--etcd needs an etcd binary"))?,
        )
    } else {
        None
    };
    let etcd_config = etcd
        .as_ref()
        .map(|e| rkcm_apiserver::storage::EtcdConfig::new(e.endpoints()));
    let config = rkcm_apiserver::Config {
        data_dir: (store != "memory").then(|| dir.path().to_path_buf()),
        etcd: etcd_config,
        ..rkcm_apiserver::testing::config()
    };
    let server = rkcm_apiserver::testing::start_with(config).await;
    let client = server.client();
    let described = match store {
        "memory" => "memory",
        "etcd" => "etcd (one member, fsync per raft batch)",
        "redb" => "redb (fsync per group commit)",
        other => anyhow::bail!("unknown store {other}: redb, memory or etcd"),
    };
    println!("store: {described}");

    // Warm up connections.
    create_load(&client, "warm", args.clients, args.clients).await;

    let (elapsed, mut lat) = create_load(&client, "bench", args.creates, args.clients).await;
    lat.sort();
    println!(
        "creates: {} in {:.2}s = {:.0}/s; latency p50 {:.2}ms p99 {:.2}ms max {:.2}ms",
        args.creates,
        elapsed.as_secs_f64(),
        args.creates as f64 / elapsed.as_secs_f64(),
        percentile(&lat, 0.50).as_secs_f64() * 1e3,
        percentile(&lat, 0.99).as_secs_f64() * 1e3,
        lat.last().copied().unwrap_or_default().as_secs_f64() * 1e3,
    );

    let mut watch = watch_latency(&client, args.latency_writes).await;
    watch.sort();
    println!(
        "watch latency (create sent to ADDED received, {} sequential creates): p50 {:.2}ms p99 {:.2}ms max {:.2}ms",
        args.latency_writes,
        ms(percentile(&watch, 0.50)),
        ms(percentile(&watch, 0.99)),
        ms(watch.last().copied().unwrap_or_default()),
    );
    let mut figures = Figures {
        store: store.to_string(),
        creates_per_s: args.creates as f64 / elapsed.as_secs_f64(),
        create_p50: percentile(&lat, 0.50),
        create_p99: percentile(&lat, 0.99),
        watch_p50: percentile(&watch, 0.50),
        watch_p99: percentile(&watch, 0.99),
        deliveries_per_s: None,
    };

    if args.watchers == 0 || args.watch_events == 0 {
        server.stop().await;
        return Ok(figures);
    }
    // Watch fan-out: every watcher must see every event.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let rv = pods
        .list_metadata(&kube::api::ListParams::default().limit(1))
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    let received = Arc::new(AtomicUsize::new(0));
    let mut watchers = Vec::new();
    for _ in 0..args.watchers {
        let pods = pods.clone();
        let rv = rv.clone();
        let received = Arc::clone(&received);
        let want = args.watch_events;
        watchers.push(tokio::spawn(async move {
            let mut stream = pods
                .watch(&WatchParams::default().labels("app=fanout"), &rv)
                .await
                .expect("watch")
                .boxed();
            let mut n = 0;
            while n < want {
                match stream.try_next().await {
                    Ok(Some(WatchEvent::Added(_))) => {
                        n += 1;
                        received.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(Some(WatchEvent::Error(e))) => panic!("watcher fell behind: {e:?}"),
                    Ok(Some(_)) => {}
                    Ok(None) => panic!("watch closed after {n} events"),
                    Err(e) => panic!("watch error: {e}"),
                }
            }
            Instant::now()
        }));
    }
    let start = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let mut writers = Vec::new();
    for _ in 0..args.clients {
        let pods = pods.clone();
        let next = Arc::clone(&next);
        let total = args.watch_events;
        writers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    return;
                }
                let mut p = pod(&format!("fan-{i}"));
                p.metadata.labels = Some([("app".to_string(), "fanout".to_string())].into());
                pods.create(&PostParams::default(), &p)
                    .await
                    .expect("create");
            }
        }));
    }
    for w in writers {
        w.await?;
    }
    let writes_done = start.elapsed();
    let mut last = start;
    for w in watchers {
        last = last.max(w.await?);
    }
    let total = received.load(Ordering::Relaxed);
    println!(
        "watch fan-out: {} watchers x {} events = {} deliveries; writes done in {:.2}s, last watcher done at {:.2}s ({:.0} deliveries/s)",
        args.watchers,
        args.watch_events,
        total,
        writes_done.as_secs_f64(),
        (last - start).as_secs_f64(),
        total as f64 / (last - start).as_secs_f64()
    );
    figures.deliveries_per_s = Some(total as f64 / (last - start).as_secs_f64());
    server.stop().await;
    Ok(figures)
}
