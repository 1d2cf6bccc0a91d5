//! Durability of the redb store: a restart keeps every object and the revision counter, and a
//! `kill -9` during a write load loses no acknowledged write.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, PostParams};
use parking_lot::Mutex;
use rkcm_apiserver::testing;
use rkcm_apiserver::Config;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

const CHILD_ENV: &str = "RKCM_DURABILITY_CHILD_DIR";

fn config(dir: &std::path::Path) -> Config {
    Config {
        data_dir: Some(dir.to_path_buf()),
        ..testing::config()
    }
}

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": name}})).expect("cm")
}

#[tokio::test]
async fn restart_keeps_objects_revisions_token_and_ca() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = testing::start_with(config(dir.path())).await;
    let token = server.admin_token().to_string();
    let ca = server.ca_pem().map(str::to_string);
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let mut rvs = Vec::new();
    for i in 0..20 {
        let cm = cms
            .create(&PostParams::default(), &configmap(&format!("cm-{i}")))
            .await
            .expect("create");
        rvs.push(cm.metadata.resource_version.expect("rv"));
    }
    let last_rv: i64 = rvs.last().expect("rv").parse().expect("numeric");
    let nss: Api<Namespace> = Api::all(server.client());
    nss.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "kept"}})).expect("ns"),
    )
    .await
    .expect("create ns");
    server.stop().await;

    let server = open_again(dir.path()).await;
    assert_eq!(server.admin_token(), token);
    assert_eq!(server.ca_pem().map(str::to_string), ca);
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    for (i, rv) in rvs.iter().enumerate() {
        let cm = cms
            .get(&format!("cm-{i}"))
            .await
            .expect("kept across restart");
        assert_eq!(cm.metadata.resource_version.as_ref(), Some(rv));
    }
    let nss: Api<Namespace> = Api::all(server.client());
    let kept = nss.get("kept").await.expect("namespace kept");
    assert_eq!(kept.status.and_then(|s| s.phase).as_deref(), Some("Active"));
    let next = cms
        .create(&PostParams::default(), &configmap("after"))
        .await
        .expect("create after restart");
    let next_rv: i64 = next
        .metadata
        .resource_version
        .expect("rv")
        .parse()
        .expect("numeric");
    assert!(
        next_rv > last_rv + 1,
        "revisions continue: {next_rv} after {last_rv}"
    );
}

/// Reopens the store in `dir`; the previous server's writer thread may hold the file briefly.
async fn open_again(dir: &std::path::Path) -> testing::TestServer {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        // The old writer thread exits when its channel closes; retry until the file is free.
        let attempt = tokio::spawn({
            let dir = dir.to_path_buf();
            async move { testing::start_with(config(&dir)).await }
        })
        .await;
        match attempt {
            Ok(server) => return server,
            Err(_) if tokio::time::Instant::now() < deadline => tokio::task::yield_now().await,
            Err(e) => panic!("server did not restart: {e}"),
        }
    }
}

/// Run as a child process by `kill_9_loses_no_acknowledged_write`: serves `dir` until killed.
#[tokio::test]
async fn durability_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let server = rkcm_apiserver::ApiServer::new(config(std::path::Path::new(&dir)))
        .await
        .expect("child server");
    println!("RKCM_CHILD_READY https://{addr}");
    server
        .serve(listener, tokio_util::sync::CancellationToken::new())
        .await
        .expect("serve");
}

#[tokio::test]
async fn kill_9_loses_no_acknowledged_write() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = std::env::current_exe().expect("test binary");
    let mut child = tokio::process::Command::new(exe)
        .args([
            "--exact",
            "durability_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir.path())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn child server");
    let stdout = child.stdout.take().expect("child stdout");
    let mut lines = BufReader::new(stdout).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.expect("read child") {
            // The harness prints "test durability_child ... " on the same line.
            if let Some((_, url)) = line.split_once("RKCM_CHILD_READY ") {
                return url.trim().to_string();
            }
        }
        panic!("child exited before it was ready");
    })
    .await
    .expect("child ready within 60s");

    let token = std::fs::read_to_string(dir.path().join("admin-token")).expect("token");
    let ca = std::fs::read_to_string(dir.path().join("ca.crt")).expect("ca");
    let yaml = rkcm_apiserver::server::kubeconfig_yaml(&url, Some(&ca), token.trim());
    let kc = kube::config::Kubeconfig::from_yaml(&yaml).expect("kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    let client = kube::Client::try_from(cfg).expect("client");

    let acked: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut writers = Vec::new();
    for w in 0..16 {
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let acked = Arc::clone(&acked);
        writers.push(tokio::spawn(async move {
            for i in 0.. {
                let name = format!("w{w}-{i}");
                match cms.create(&PostParams::default(), &configmap(&name)).await {
                    Ok(_) => acked.lock().push(name),
                    Err(_) => return,
                }
            }
        }));
    }
    // Kill the server mid-load, once a good number of writes were acknowledged.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while acked.lock().len() < 400 {
        assert!(tokio::time::Instant::now() < deadline, "writes too slow");
        tokio::task::yield_now().await;
    }
    child.start_kill().expect("kill -9");
    child.wait().await.expect("child reaped");
    for w in writers {
        let _ = w.await;
    }
    let acked = acked.lock().clone();

    let server = open_again(dir.path()).await;
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let stored: std::collections::HashSet<String> = cms
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    let lost: Vec<&String> = acked.iter().filter(|n| !stored.contains(*n)).collect();
    assert!(
        lost.is_empty(),
        "{} acknowledged writes lost, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(5)]
    );
    assert!(acked.len() >= 400);
}
