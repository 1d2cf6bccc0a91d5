//! The README quickstart, exactly as written, against `rkcm up` with the real kubectl.

mod common;

use std::time::Duration;

use common::Cluster;

/// The `$ kubectl …` lines of the README's quickstart block.
fn quickstart_commands() -> Vec<Vec<String>> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md readable");
    let start = readme
        .find("## Quickstart")
        .expect("README has a Quickstart section");
    let section = &readme[start..];
    let block_start = section
        .find("```console")
        .expect("quickstart console block")
        + "```console".len();
    let block = &section[block_start..];
    let block = &block[..block.find("```").expect("block closes")];
    block
        .lines()
        .filter_map(|l| l.trim().strip_prefix("$ kubectl "))
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

fn run_quickstart(cluster: &Cluster) {
    let commands = quickstart_commands();
    assert!(
        commands.len() >= 8,
        "the quickstart lost its commands: {commands:?}"
    );
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    for args in &commands {
        // Paths in the README are relative to the repository root.
        let mut full: Vec<String> = args
            .iter()
            .map(|a| {
                if a.starts_with("examples/") {
                    format!("{root}/{a}")
                } else {
                    a.clone()
                }
            })
            .collect();
        if full.first().map(String::as_str) == Some("rollout")
            && full.get(1).map(String::as_str) == Some("status")
        {
            full.push("--timeout=120s".into());
        }
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        cluster.kubectl(&full);
    }
    // `kubectl delete deployment web` cascades: its ReplicaSets and pods go too.
    cluster.eventually(
        "the deployment's pods and replica sets are collected",
        Duration::from_secs(60),
        || {
            let left = cluster.kubectl(&["get", "pods,replicasets", "-l", "app=web", "-o", "name"]);
            left.trim().is_empty().then_some(())
        },
    );
}

#[test]
fn the_readme_quickstart_works_with_the_default_kubectl() {
    let cluster = Cluster::start(&["--pod-ready-delay", "200ms"]);
    run_quickstart(&cluster);
}

#[test]
fn the_readme_quickstart_works_with_an_older_kubectl() {
    let Some(older) = common::older_kubectl("1.29") else {
        panic!("kubectl 1.29 is expected at /usr/lib/google-cloud-sdk/bin/kubectl.1.29");
    };
    let mut cluster = Cluster::start(&["--pod-ready-delay", "200ms"]);
    cluster.kubectl = older;
    run_quickstart(&cluster);
}

#[test]
fn the_readme_quickstart_works_with_a_newer_kubectl() {
    let Some(newer) = common::older_kubectl("1.33") else {
        panic!("kubectl 1.33 is expected at /usr/lib/google-cloud-sdk/bin/kubectl.1.33");
    };
    let mut cluster = Cluster::start(&["--pod-ready-delay", "200ms"]);
    cluster.kubectl = newer;
    run_quickstart(&cluster);
}
