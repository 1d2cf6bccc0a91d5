//! `rkcm bench jobs`: the Job controller running N one-pod Jobs (`sleep 1`) on simulated nodes
//! until every one is Complete, with the API writes it cost and the memory it took.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use futures::{stream, StreamExt, TryStreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, PostParams};
use rkcm_controllers::registry::{self, ControllerOptions};
use rkcm_runtime::{process, Shutdown, SystemClock};
use serde_json::json;

use super::metrics::{requests_between, server_requests, ServerSeries};
use super::{spawn_controllers, Cluster, JobArgs};

/// Writes the server answered between two snapshots, by `(verb, resource, subresource)`.
fn writes(
    after: &BTreeMap<ServerSeries, f64>,
    before: &BTreeMap<ServerSeries, f64>,
) -> BTreeMap<(String, String, String), f64> {
    let mut out = BTreeMap::new();
    for (request, n) in requests_between(after, before) {
        if request.is_write() {
            *out.entry((request.verb, request.resource, request.subresource))
                .or_insert(0.0) += n;
        }
    }
    out
}

/// The writes the Job controller makes: pods (create, finalizer patches, deletes), the Jobs'
/// status and events; not the Jobs the bench creates nor what the simulated kubelet writes.
fn controller_writes(w: &BTreeMap<(String, String, String), f64>) -> f64 {
    w.iter()
        .filter(
            |((verb, resource, sub), _)| match (resource.as_str(), sub.as_str()) {
                ("pods", "") => true,
                ("jobs", "status") => true,
                ("events", "") => true,
                ("jobs", "") => verb != "POST",
                _ => false,
            },
        )
        .map(|(_, n)| n)
        .sum()
}

pub(super) fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn is_complete(job: &Job) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Complete" && c.status == "True")
        })
}

/// Runs the scenario and prints its report.
pub(super) async fn run(args: JobArgs) -> anyhow::Result<()> {
    let nodes = format!("--nodes={}", args.nodes);
    let delay = format!("--pod-ready-delay={}ms", args.pod_ready_delay.as_millis());
    // The API server and simulated nodes in a child process; only PodGC runs there.
    let (cluster, _) = Cluster::start(&[
        &nodes,
        &delay,
        "--pod-termination-max=100ms",
        "--controllers=podgc",
    ])?;
    let kube_config = cluster.kube_config().await?;
    let plain = kube::Client::try_from(kube_config.clone())?;
    let ns = "default";
    // Every node registered and Ready before the clock starts.
    let node_api: Api<Node> = Api::all(plain.clone());
    let wanted = args.nodes;
    super::wait_until(
        "the simulated nodes to be Ready",
        Duration::from_secs(120),
        || {
            let node_api = node_api.clone();
            async move {
                let list = node_api.list(&ListParams::default()).await?;
                let ready = list.items.iter().filter(|n| node_ready(n)).count();
                Ok(ready >= wanted)
            }
        },
    )
    .await?;

    let shutdown = Shutdown::new();
    let server_before = server_requests(&plain).await?;
    let cpu_before = process::cpu_seconds();
    let manager = spawn_controllers(
        kube_config.clone(),
        vec![registry::JOB],
        ControllerOptions {
            concurrent_job_syncs: args.workers,
            clock: Arc::new(SystemClock),
            ..ControllerOptions::default()
        },
        args.qps,
        args.burst,
        shutdown.clone(),
    );
    let jobs: Api<Job> = Api::namespaced(plain.clone(), ns);
    let started = Instant::now();
    stream::iter(0..args.count)
        .map(|i| {
            let jobs = jobs.clone();
            async move {
                let job: Job = serde_json::from_value(json!({
                    "metadata": {"name": format!("job-{i}"), "labels": {"bench": "jobs"}},
                    "spec": {
                        "completions": 1,
                        "parallelism": 1,
                        "template": {"spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "1"]}],
                        }},
                    }
                }))?;
                jobs.create(&PostParams::default(), &job).await?;
                anyhow::Ok(())
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<_>>()
        .await?;
    let created_secs = started.elapsed().as_secs_f64();

    let deadline = Instant::now() + Duration::from_secs(1800);
    let last_complete = loop {
        let list = jobs
            .list(&ListParams::default().labels("bench=jobs"))
            .await
            .context("listing the Jobs")?;
        let complete = list.items.iter().filter(|j| is_complete(j)).count();
        if complete == args.count {
            break complete;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "timed out with {complete} of {} Jobs Complete",
            args.count
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let complete_secs = started.elapsed().as_secs_f64();
    let cpu = process::cpu_seconds() - cpu_before;
    let peak_rss = process::peak_rss_kib();
    shutdown.cancel();
    let report = manager
        .await
        .context("the controller manager task panicked")??;
    // After shutdown, so that queued events have been written too.
    let server_after = server_requests(&plain).await?;
    let w = writes(&server_after, &server_before);
    let n = args.count as f64;
    let controller = controller_writes(&w);
    let all: f64 = w
        .iter()
        .filter(|((verb, resource, sub), _)| {
            !(verb == "POST" && resource == "jobs" && sub.is_empty())
        })
        .map(|(_, v)| v)
        .sum();
    let breakdown = w
        .iter()
        .map(|((verb, resource, sub), v)| {
            let path = if sub.is_empty() {
                resource.clone()
            } else {
                format!("{resource}/{sub}")
            };
            format!("{verb} {path}: {v}")
        })
        .collect::<Vec<_>>()
        .join(", ");
    println!(
        "Job controller: {} Jobs × 1 pod (`sleep 1`), {} simulated nodes, pod ready delay {}, {} workers",
        args.count,
        args.nodes,
        rkcm_apimachinery::duration::format_std(args.pod_ready_delay),
        args.workers
    );
    println!("  Jobs created in:                {created_secs:.1} s");
    println!(
        "  all Complete after:             {complete_secs:.1} s ({:.0} Jobs/s; {last_complete} Complete)",
        n / complete_secs
    );
    println!(
        "  Job controller writes per Job:  {:.2} ({controller} writes: pods, jobs/status, events)",
        controller / n
    );
    println!(
        "  all API writes per Job:         {:.2} (with the simulated kubelet's pod status, nodes, leases)",
        all / n
    );
    println!("  writes (verb resource: count):  {breakdown}");
    println!(
        "  events dropped (queue full):    {}",
        report.events_dropped
    );
    println!("  controller CPU:                 {cpu:.1} s");
    println!(
        "  bench process peak RSS:         {:.1} MiB",
        peak_rss as f64 / 1024.0
    );
    println!(
        "  API server RSS at the end:      {:.1} MiB",
        cluster.rss_kib() as f64 / 1024.0
    );
    drop(cluster);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_writes_leave_out_the_bench_and_the_kubelet() {
        let series = |verb: &str, resource: &str, sub: &str, n: f64| {
            (
                (
                    verb.to_string(),
                    String::new(),
                    resource.to_string(),
                    sub.to_string(),
                    "200".to_string(),
                ),
                n,
            )
        };
        let before = BTreeMap::from([series("POST", "pods", "", 2.0)]);
        let after = BTreeMap::from([
            series("POST", "pods", "", 12.0),
            series("PATCH", "pods", "", 10.0),
            series("PATCH", "pods", "status", 30.0),
            series("POST", "jobs", "", 10.0),
            series("PUT", "jobs", "status", 20.0),
            series("POST", "events", "", 20.0),
            series("GET", "jobs", "", 99.0),
        ]);
        let w = writes(&after, &before);
        assert_eq!(w.len(), 6);
        assert_eq!(controller_writes(&w), 10.0 + 10.0 + 20.0 + 20.0);
    }
}
