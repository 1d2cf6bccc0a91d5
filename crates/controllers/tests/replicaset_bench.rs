//! Throughput of the ReplicaSet controller against the embedded API server: N ReplicaSets × M
//! replicas, compared with a plain client creating the same pods with similar concurrency.
//!
//! Ignored by default (it takes a while in debug builds). Run with
//! `RKCM_BENCH_RS=1000 RKCM_BENCH_REPLICAS=10 cargo test -p rkcm-controllers --release --test replicaset_bench -- --ignored --nocapture`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use futures::stream::{self, StreamExt};
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec};
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use rkcm_apiserver::testing;
use rkcm_controllers::replicaset::{Config, ReplicaSetController};
use rkcm_runtime::events::EventBroadcaster;
use rkcm_runtime::informer::InformerFactory;
use rkcm_runtime::pod_control::RealPodControl;
use rkcm_runtime::slow_start::{slow_start_batch, SLOW_START_INITIAL_BATCH_SIZE};
use rkcm_runtime::testing::{pod_template, FakePodControl};
use rkcm_runtime::Shutdown;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn template(app: &str) -> PodTemplateSpec {
    pod_template(rkcm_labels::set(&[("app", app)]), "c", "busybox")
}

/// Process CPU seconds (user + system) and peak RSS in MiB, from /proc (Linux).
fn process_usage() -> (f64, f64) {
    let cpu = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let fields: Vec<&str> = s.rsplit(')').next()?.split_whitespace().collect();
            let utime: f64 = fields.get(11)?.parse().ok()?;
            let stime: f64 = fields.get(12)?.parse().ok()?;
            Some((utime + stime) / 100.0)
        })
        .unwrap_or(0.0);
    let rss = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map(|kib| kib / 1024.0)
        .unwrap_or(0.0);
    (cpu, rss)
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "benchmark: run explicitly"]
async fn replica_sets_converge_at_plain_client_speed() -> Result<()> {
    let n_rs = env("RKCM_BENCH_RS", 1000);
    let replicas = env("RKCM_BENCH_REPLICAS", 10);
    let total = n_rs * replicas;
    let workers = env("RKCM_BENCH_WORKERS", 5);

    // Baseline: a plain client creating the same pods with the same concurrency as the
    // controller: as many sets at a time as it has workers, each in slow-start batches 1, 2, 4, ….
    let baseline = {
        let server = testing::start().await;
        let api: Api<Pod> = Api::namespaced(server.client(), "default");
        let started = Instant::now();
        let failures: Vec<usize> = stream::iter(0..n_rs)
            .map(|set| {
                let api = api.clone();
                let next = AtomicUsize::new(0);
                async move {
                    let (_, err) =
                        slow_start_batch(replicas, SLOW_START_INITIAL_BATCH_SIZE, || {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let api = api.clone();
                            async move {
                                let t = template("plain");
                                let pod = Pod {
                                    metadata: ObjectMeta {
                                        name: Some(format!("plain-{set}-{i}")),
                                        labels: t.metadata.and_then(|m| m.labels),
                                        ..Default::default()
                                    },
                                    spec: t.spec,
                                    status: None,
                                };
                                api.create(&PostParams::default(), &pod).await.map(|_| ())
                            }
                        })
                        .await;
                    usize::from(err.is_some())
                }
            })
            .buffer_unordered(workers)
            .collect()
            .await;
        let failed: usize = failures.iter().sum();
        if failed > 0 {
            bail!("{failed} plain sets failed");
        }
        started.elapsed()
    };

    let server = testing::start().await;
    let client = server.client();
    let shutdown = Shutdown::new();
    let factory = InformerFactory::new(client.clone(), Duration::ZERO);
    let broadcaster = EventBroadcaster::new(client.clone());
    // Counts the controller's pod writes.
    let counting = FakePodControl::forwarding_to(Arc::new(RealPodControl::new(
        client.clone(),
        broadcaster.recorder("replicaset-controller"),
    )));
    let ctrl = ReplicaSetController::<ReplicaSet>::with_pod_control(
        &factory,
        client.clone(),
        Arc::new(counting.clone()),
        Config::default(),
    );
    factory.start(shutdown.clone());
    tokio::spawn(ctrl.run(workers, shutdown.clone()));
    let (cpu_before, _) = process_usage();

    let rs_api: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let started = Instant::now();
    let created: Vec<_> = stream::iter(0..n_rs)
        .map(|i| {
            let rs_api = rs_api.clone();
            async move {
                let app = format!("app-{i}");
                let rs = ReplicaSet {
                    metadata: ObjectMeta {
                        name: Some(format!("rs-{i}")),
                        ..Default::default()
                    },
                    spec: Some(ReplicaSetSpec {
                        replicas: Some(i32::try_from(replicas).unwrap_or(i32::MAX)),
                        selector: LabelSelector {
                            match_labels: Some(BTreeMap::from([("app".to_string(), app.clone())])),
                            ..Default::default()
                        },
                        template: Some(template(&app)),
                        ..Default::default()
                    }),
                    status: None,
                };
                rs_api.create(&PostParams::default(), &rs).await
            }
        })
        .buffer_unordered(20)
        .collect()
        .await;
    if let Some(Err(e)) = created.into_iter().find(|r| r.is_err()) {
        bail!("creating replica sets failed: {e}");
    }

    let pods_api: Api<Pod> = Api::namespaced(client.clone(), "default");
    let deadline = Instant::now() + Duration::from_secs(1800);
    let mut pods_done = None;
    loop {
        if pods_done.is_none() {
            let n = pods_api.list(&ListParams::default()).await?.items.len();
            if n >= total {
                pods_done = Some(started.elapsed());
            }
        }
        if pods_done.is_some() {
            let rss = rs_api.list(&ListParams::default()).await?.items;
            let converged = rss.iter().all(|rs| {
                let s = rs.status.clone().unwrap_or_default();
                usize::try_from(s.replicas).ok() == Some(replicas)
                    && s.observed_generation == rs.metadata.generation
            });
            if converged {
                break;
            }
        }
        if Instant::now() > deadline {
            bail!("not converged within the deadline");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let converged = started.elapsed();
    let pods_done = pods_done.unwrap_or(converged);
    let (cpu_after, peak_rss) = process_usage();
    let writes = counting.write_calls();
    let final_pods = pods_api.list(&ListParams::default()).await?.items.len();
    println!(
        "replicaset bench: {n_rs} ReplicaSets x {replicas} replicas = {total} pods\n\
         controller: all pods created in {:.2}s ({:.0} pods/s), statuses converged in {:.2}s\n\
         plain client ({workers} workers, slow start): {total} pods in {:.2}s ({:.0} pods/s)\n\
         controller throughput / plain: {:.0}%\n\
         pod writes by the controller: {writes} ({:.3} per pod; status writes excluded)\n\
         process CPU during the run (API server + controller, in-process): {:.1}s; peak RSS {:.0} MiB",
        pods_done.as_secs_f64(),
        total as f64 / pods_done.as_secs_f64(),
        converged.as_secs_f64(),
        baseline.as_secs_f64(),
        total as f64 / baseline.as_secs_f64(),
        100.0 * baseline.as_secs_f64() / pods_done.as_secs_f64(),
        writes as f64 / total as f64,
        cpu_after - cpu_before,
        peak_rss,
    );
    assert_eq!(final_pods, total, "exactly the desired pods");
    shutdown.cancel();
    Ok(())
}
