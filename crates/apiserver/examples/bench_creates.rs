//! Benchmark: pod creates/s with concurrent clients (p50/p99 latency), then watch fan-out.
//!
//! `cargo run --release -p rkcm-apiserver --example bench_creates -- [--memory | --etcd]
//!  [--creates N] [--clients C] [--watchers W] [--watch-events E]`
//!
//! `--etcd` starts a one-member etcd (`/usr/bin/etcd`, or
//! `$ETCD_BIN`) with its data in a
//! temporary directory and stores objects there instead of in redb.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use serde_json::json;

struct Args {
    memory: bool,
    etcd: bool,
    creates: usize,
    clients: usize,
    watchers: usize,
    watch_events: usize,
}

fn parse_args() -> Args {
    let mut a = Args {
        memory: false,
        etcd: false,
        creates: 20_000,
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
            "--memory" => a.memory = true,
            "--etcd" => a.etcd = true,
            "--creates" => a.creates = num("--creates"),
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

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = parse_args();
    let dir = tempfile::tempdir()?;
    let etcd = if args.etcd {
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
        data_dir: (!args.memory).then(|| dir.path().to_path_buf()),
        etcd: etcd_config,
        ..rkcm_apiserver::testing::config()
    };
    let server = rkcm_apiserver::testing::start_with(config).await;
    let client = server.client();
    println!(
        "store: {}, clients: {}, cores: {}",
        if args.memory {
            "memory"
        } else if args.etcd {
            "etcd (one member, fsync per raft batch)"
        } else {
            "redb (fsync per group commit)"
        },
        args.clients,
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    );

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

    if args.watchers == 0 || args.watch_events == 0 {
        server.stop().await;
        return Ok(());
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
    server.stop().await;
    Ok(())
}
