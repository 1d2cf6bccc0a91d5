//! Memory held per stored object: 20,000 small pods created through the server.
//!
//! How the bound was chosen: a pod of this test as the server stores it (defaults, uid,
//! timestamps) is printed below, about 1 KiB of JSON. The process holds it twice, once in the
//! in-memory storage backend (standing in for etcd) and once in the watch cache, as bytes plus a
//! few decoded fields. Measured with this test: about 2.8 KiB per pod with that representation,
//! and about 11.6 KiB per pod when the watch cache also kept a decoded `serde_json::Value` tree
//! per object. 6 KiB lies between the two with a margin of about 2x on either side, wide enough
//! for allocator noise (arenas, fragmentation; the server's start-up and the client's buffers
//! are measured before the baseline, and 20,000 objects make a fixed offset of a few MiB count
//! for little per object), and small enough that a tree per object fails it.

use std::time::Duration;

use futures::{stream, StreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

const PODS: usize = 20_000;
const WARM_UP: usize = 500;
const BOUND_PER_OBJECT: usize = 6 * 1024;

/// Resident set size of this process, from `/proc/self/statm` (pages × page size).
fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("read /proc/self/statm");
    let resident: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("statm has a resident field");
    resident * 4096
}

fn pod(i: usize) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("p-{i:06}"), "labels": {"app": "scale", "shard": format!("s{}", i % 16)}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}
    }))
    .expect("pod")
}

async fn create(pods: &Api<Pod>, range: std::ops::Range<usize>) {
    stream::iter(range)
        .map(|i| {
            let pods = pods.clone();
            async move {
                pods.create(&PostParams::default(), &pod(i))
                    .await
                    .map(|_| ())
            }
        })
        .buffer_unordered(16)
        .for_each(|r| async move { r.expect("create pod") })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_pods_cost_less_than_the_bound_each() {
    let server = rkcm_apiserver::testing::start().await;
    let pods: Api<Pod> = Api::namespaced(server.client(), "default");
    tokio::time::timeout(Duration::from_secs(900), async {
        create(&pods, 0..WARM_UP).await;
        let before = rss_bytes();
        create(&pods, WARM_UP..WARM_UP + PODS).await;
        let after = rss_bytes();
        let per_object = after.saturating_sub(before) / PODS;
        let one = pods.get("p-000000").await.expect("get pod");
        println!(
            "RSS {} MiB -> {} MiB for {PODS} pods of {} bytes of JSON: {per_object} bytes per pod",
            before >> 20,
            after >> 20,
            serde_json::to_vec(&one).map(|b| b.len()).unwrap_or(0)
        );
        let all = pods.list(&ListParams::default()).await.expect("list pods");
        assert_eq!(all.items.len(), WARM_UP + PODS, "every pod was stored");
        assert!(
            per_object < BOUND_PER_OBJECT,
            "{per_object} bytes per pod, bound {BOUND_PER_OBJECT}"
        );
    })
    .await
    .expect("creating the pods took too long: server likely stuck");
}
