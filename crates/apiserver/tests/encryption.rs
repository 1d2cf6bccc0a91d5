//! Encryption at rest (`--encryption-provider-config`): Secrets are stored encrypted on the
//! embedded store and on etcd (the raw bytes hold no Secret value), read back plain, and a key
//! rotation as kube documents it (add a key, restart, replace every Secret, drop the old key)
//! loses nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams, PostParams};
use rkcm_apiserver::storage::etcd::testing::EtcdProcess;
use rkcm_apiserver::storage::etcd::EtcdConfig;
use rkcm_apiserver::testing;
use rkcm_apiserver::Config;
use serde_json::json;

/// Two 32-byte AES keys, base64 encoded (`head -c 32 /dev/urandom | base64`).
const KEY1: &str = "dGhpcyBpcyB0aGUgZmlyc3Qga2V5IG9mIDMyIGJ5dGU=";
const KEY2: &str = "YW5kIHRoaXMgaXMgdGhlIHNlY29uZCBrZXkgb2YgMzI=";

/// The Secret value looked for in the raw store (its base64 form is what JSON holds).
const PLAIN: &str = "correct horse battery staple";

fn base64(s: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(s)
}

/// Writes an `EncryptionConfiguration` for Secrets with `providers` (YAML list items).
fn encryption_config(dir: &Path, name: &str, providers: &str) -> PathBuf {
    let path = dir.join(name);
    let text = format!(
        "apiVersion: apiserver.config.k8s.io/v1\n\
         kind: EncryptionConfiguration\n\
         resources:\n\
         - resources:\n  - secrets\n  providers:\n{providers}"
    );
    std::fs::write(&path, text).expect("write the encryption config");
    path
}

fn aescbc(keys: &[(&str, &str)]) -> String {
    provider("aescbc", keys)
}

fn provider(name: &str, keys: &[(&str, &str)]) -> String {
    let mut out = format!("  - {name}:\n      keys:\n");
    for (key, secret) in keys {
        out.push_str(&format!("      - name: {key}\n        secret: {secret}\n"));
    }
    out
}

fn redb_config(data: &Path, encryption: Option<PathBuf>) -> Config {
    Config {
        data_dir: Some(data.to_path_buf()),
        encryption_provider_config: encryption,
        ..testing::config()
    }
}

fn secret(name: &str) -> Secret {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "data": {"password": base64(PLAIN)},
    }))
    .expect("secret")
}

fn password(s: &Secret) -> Option<String> {
    s.data
        .as_ref()
        .and_then(|d| d.get("password"))
        .map(|v| String::from_utf8_lossy(&v.0).into_owned())
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Starts a server on `config`'s data dir again once the stopped one has let go of the file
/// (its writer thread exits when its channel closes).
async fn start_again(config: Config) -> testing::TestServer {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let attempt = tokio::spawn(testing::start_with(config.clone())).await;
        match attempt {
            Ok(server) => return server,
            Err(_) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(e) => panic!("the server did not restart within 20s: {e}"),
        }
    }
}

/// The text of `/metrics`.
async fn metrics(client: &kube::Client) -> String {
    let req = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    client.request_text(req).await.expect("GET /metrics")
}

#[tokio::test]
async fn aescbc_keeps_secret_values_out_of_the_redb_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let enc = encryption_config(dir.path(), "enc.yaml", &aescbc(&[("key1", KEY1)]));
    let server = testing::start_with(redb_config(&data, Some(enc.clone()))).await;
    let secrets: Api<Secret> = Api::namespaced(server.client(), "default");
    secrets
        .create(&PostParams::default(), &secret("db"))
        .await
        .expect("create secret");
    // A ConfigMap is not configured: stored as it is, which shows the raw read finds values.
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let cm: ConfigMap = serde_json::from_value(
        json!({"metadata": {"name": "cm"}, "data": {"k": "visible-in-the-file"}}),
    )
    .expect("cm");
    cms.create(&PostParams::default(), &cm)
        .await
        .expect("create cm");
    let got = secrets.get("db").await.expect("get secret");
    assert_eq!(password(&got).as_deref(), Some(PLAIN));
    let text = metrics(&server.client()).await;
    assert!(
        text.contains(
            "apiserver_storage_transformation_operations_total{status=\"OK\",transformation_type=\"to_storage\",transformer_prefix=\"k8s:enc:aescbc:v1:\"}"
        ),
        "{text}"
    );
    server.stop().await;

    let raw = std::fs::read(data.join("rkcm.redb")).expect("read the redb file");
    assert!(contains(&raw, "visible-in-the-file"));
    assert!(contains(&raw, "k8s:enc:aescbc:v1:key1:"));
    assert!(
        !contains(&raw, &base64(PLAIN)),
        "the Secret's value is in the file in plain text"
    );
    assert!(!contains(&raw, PLAIN));

    // Restarted with the same configuration, the Secret reads; with only another key, the
    // server refuses to start and names the value it cannot read.
    let server = start_again(redb_config(&data, Some(enc))).await;
    let secrets: Api<Secret> = Api::namespaced(server.client(), "default");
    let got = secrets.get("db").await.expect("get after restart");
    assert_eq!(password(&got).as_deref(), Some(PLAIN));
    server.stop().await;
    let other = encryption_config(dir.path(), "other.yaml", &aescbc(&[("key2", KEY2)]));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let source = loop {
        let refused = rkcm_apiserver::ApiServer::new(redb_config(&data, Some(other.clone()))).await;
        let err = refused.err().expect("a value no key reads");
        let source = std::error::Error::source(&err).map(ToString::to_string);
        if source
            .as_deref()
            .is_some_and(|s| s.contains("already open"))
            && tokio::time::Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        break source;
    };
    assert_eq!(
        source.as_deref(),
        Some(
            "storage backend failed: unable to transform from storage key \"/core/secrets/default/db\": \
             no matching key was found for the provided AES transformer"
        )
    );
}

#[tokio::test]
async fn key_rotation_rewrites_every_secret_and_then_drops_the_old_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    rotate(dir.path(), &|enc| redb_config(&data, Some(enc))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_rotation_on_etcd() {
    let Some(etcd) = EtcdProcess::start_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    rotate(dir.path(), &|enc| Config {
        etcd: Some(EtcdConfig::new(etcd.endpoints())),
        encryption_provider_config: Some(enc),
        ..testing::config()
    })
    .await;
}

/// Kube's rotation on the store of `config` (given the encryption configuration's path):
/// Secrets written with key1; key2 first and key1 kept, restart; every Secret replaced as it
/// is; key1 removed, restart; every Secret reads.
async fn rotate(dir: &Path, config: &dyn Fn(PathBuf) -> Config) {
    let old = encryption_config(dir, "old.yaml", &aescbc(&[("key1", KEY1)]));
    let server = testing::start_with(config(old)).await;
    let secrets: Api<Secret> = Api::namespaced(server.client(), "default");
    for i in 0..3 {
        secrets
            .create(&PostParams::default(), &secret(&format!("s{i}")))
            .await
            .expect("create secret");
    }
    server.stop().await;

    // Step 1: the new key first, the old one still read; restart.
    let both = encryption_config(dir, "both.yaml", &aescbc(&[("key2", KEY2), ("key1", KEY1)]));
    let server = start_again(config(both)).await;
    let all: Api<Secret> = Api::all(server.client());
    // Step 2: `kubectl get secrets -A -o json | kubectl replace -f -`.
    let listed = all
        .list(&ListParams::default())
        .await
        .expect("list secrets");
    let mut replaced = 0;
    for s in listed.items {
        let ns = s.metadata.namespace.clone().expect("namespaced");
        let name = s.metadata.name.clone().expect("named");
        let before = s.metadata.resource_version.clone();
        let api: Api<Secret> = Api::namespaced(server.client(), &ns);
        let after = api
            .replace(&name, &PostParams::default(), &s)
            .await
            .expect("replace secret");
        if ns == "default" {
            assert_ne!(
                after.metadata.resource_version, before,
                "{name}: an unchanged Secret under the old key is written again"
            );
            replaced += 1;
        }
    }
    assert_eq!(replaced, 3);
    let text = metrics(&server.client()).await;
    assert!(
        text.contains("transformation_type=\"to_storage\",transformer_prefix=\"key2:\""),
        "{text}"
    );
    // Written again with key2, a Secret is no longer stale: another replace changes nothing.
    let s0 = all.list(&ListParams::default()).await.expect("list").items;
    let s0 = s0
        .into_iter()
        .find(|s| s.metadata.name.as_deref() == Some("s0"))
        .expect("s0");
    let api: Api<Secret> = Api::namespaced(server.client(), "default");
    let again = api
        .replace("s0", &PostParams::default(), &s0)
        .await
        .expect("replace again");
    assert_eq!(
        again.metadata.resource_version,
        s0.metadata.resource_version
    );
    server.stop().await;

    // Step 3: the old key removed; restart: everything reads.
    let new = encryption_config(dir, "new.yaml", &aescbc(&[("key2", KEY2)]));
    let server = start_again(config(new)).await;
    let secrets: Api<Secret> = Api::namespaced(server.client(), "default");
    for i in 0..3 {
        let s = secrets
            .get(&format!("s{i}"))
            .await
            .expect("readable with key2 only");
        assert_eq!(password(&s).as_deref(), Some(PLAIN));
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_holds_secrets_encrypted_and_a_second_server_reads_them() {
    let Some(etcd) = EtcdProcess::start_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let enc = encryption_config(
        dir.path(),
        "enc.yaml",
        &format!(
            "{}{}",
            provider("aesgcm", &[("key1", KEY1)]),
            aescbc(&[("key2", KEY2)])
        ),
    );
    let config = || Config {
        etcd: Some(EtcdConfig::new(etcd.endpoints())),
        encryption_provider_config: Some(enc.clone()),
        ..testing::config()
    };
    let a = testing::start_with(config()).await;
    let b = testing::start_with(config()).await;
    let secrets_a: Api<Secret> = Api::namespaced(a.client(), "default");
    secrets_a
        .create(&PostParams::default(), &secret("db"))
        .await
        .expect("create on a");

    let (raw, _) = etcd
        .get("/registry/core/secrets/default/db", 0)
        .await
        .expect("read etcd")
        .expect("the key is in etcd");
    assert!(raw.starts_with(b"k8s:enc:aesgcm:v1:key1:"), "{raw:?}");
    assert!(!contains(&raw, &base64(PLAIN)));
    assert!(!contains(&raw, PLAIN));

    // b learns of it through its etcd watch, which hands it the encrypted value.
    let secrets_b: Api<Secret> = Api::namespaced(b.client(), "default");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let seen = loop {
        if let Ok(s) = secrets_b.get("db").await {
            break s;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "b does not see a's Secret within 30s: its watch likely fails to decrypt"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(password(&seen).as_deref(), Some(PLAIN));
    a.stop().await;
    b.stop().await;
}
