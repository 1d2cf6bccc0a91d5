//! Time from process start to a CustomResourceDefinition Established and its first object
//! served, with the API server in-process ([`rkcm::testenv`], in-memory store).
//!
//! `cargo run --release -p rkcm --example crd_startup [runs]` prints each phase of each run
//! (every run a fresh process-local server, the first one measured from `main`), then the
//! median of the runs.

use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use rkcm::testenv::{eventually, TestEnv};
use serde_json::json;

/// One run's phases, each from the run's start.
struct Phases {
    server: Duration,
    established: Duration,
    served: Duration,
}

fn widget_crd() -> anyhow::Result<CustomResourceDefinition> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.bench.rkcm.dev"},
        "spec": {"group": "bench.rkcm.dev", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "size": {"type": "integer"},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["port"],
                            "items": {"type": "object", "required": ["port"],
                                "properties": {"port": {"type": "integer"}}}}}},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}
    }))?)
}

async fn run_once(start: Instant) -> anyhow::Result<Phases> {
    let env = TestEnv::start().await?;
    let server = start.elapsed();
    env.install_crd(widget_crd()?).await?;
    let established = start.elapsed();
    let gvk = GroupVersionKind::gvk("bench.rkcm.dev", "v1", "Widget");
    let widgets: Api<DynamicObject> = Api::namespaced_with(
        env.client(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "widgets"),
    );
    let widget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "bench.rkcm.dev/v1", "kind": "Widget",
        "metadata": {"name": "first"}, "spec": {"size": 1, "ports": [{"port": 80}]}
    }))?;
    widgets.create(&PostParams::default(), &widget).await?;
    eventually(
        "the first Widget to be served",
        Duration::from_secs(30),
        || async { widgets.get_opt("first").await.ok().flatten() },
    )
    .await?;
    let served = start.elapsed();
    env.stop().await;
    Ok(Phases {
        server,
        established,
        served,
    })
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let process_start = Instant::now();
    let runs: usize = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 5,
    };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mut served = Vec::new();
    for i in 0..runs.max(1) {
        let start = if i == 0 {
            process_start
        } else {
            Instant::now()
        };
        let p = run_once(start).await?;
        println!(
            "run {}: API server {:.1} ms, CRD Established {:.1} ms, first object served {:.1} ms{}",
            i + 1,
            ms(p.server),
            ms(p.established),
            ms(p.served),
            if i == 0 { " (from process start)" } else { "" }
        );
        served.push(ms(p.served));
    }
    served.sort_by(f64::total_cmp);
    println!(
        "median of {} runs: first object served {:.1} ms after start",
        served.len(),
        served[served.len() / 2]
    );
    Ok(())
}
