//! End to end: encryption at rest on `rkcm up` with the real kubectl, and a key rotation as
//! kube documents it: a Secret written with key1; key2 added first and key1 kept, restart;
//! `kubectl get secrets -A -o json | kubectl replace -f -`; key1 removed, restart; the Secret
//! reads, and the embedded store's file never held its value in plain text.

mod common;

use std::path::Path;

use common::Cluster;

/// Two 32-byte AES keys, base64 encoded.
const KEY1: &str = "dGhpcyBpcyB0aGUgZmlyc3Qga2V5IG9mIDMyIGJ5dGU=";
const KEY2: &str = "YW5kIHRoaXMgaXMgdGhlIHNlY29uZCBrZXkgb2YgMzI=";
const PLAIN: &str = "correct-horse-battery-staple";

/// Writes the configuration of Secrets with aescbc and `keys` (name, secret) to `path`.
fn write_config(path: &Path, keys: &[(&str, &str)]) {
    let mut text = String::from(
        "apiVersion: apiserver.config.k8s.io/v1\n\
         kind: EncryptionConfiguration\n\
         resources:\n\
         - resources: [secrets]\n  providers:\n  - aescbc:\n      keys:\n",
    );
    for (name, secret) in keys {
        text.push_str(&format!("      - name: {name}\n        secret: {secret}\n"));
    }
    std::fs::write(path, text).expect("write the encryption config");
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[test]
fn secrets_survive_a_key_rotation_through_kubectl_replace() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("encryption.yaml");
    write_config(&config, &[("key1", KEY1)]);
    let config_arg = config.to_str().expect("utf-8 path");
    let mut cluster = Cluster::start(&["--nodes", "0", "--encryption-provider-config", config_arg]);
    cluster.kubectl(&[
        "create",
        "secret",
        "generic",
        "db",
        &format!("--from-literal=password={PLAIN}"),
    ]);
    let encoded = cluster.jsonpath(&["get", "secret", "db"], "{.data.password}");
    let rv_before = cluster.jsonpath(&["get", "secret", "db"], "{.metadata.resourceVersion}");

    // key2 first, key1 still read; restart.
    write_config(&config, &[("key2", KEY2), ("key1", KEY1)]);
    cluster.restart();
    let all = cluster.kubectl(&["get", "secrets", "-A", "-o", "json"]);
    let listed = dir.path().join("secrets.json");
    std::fs::write(&listed, all).expect("write the list");
    let replaced = cluster.kubectl(&["replace", "-f", listed.to_str().expect("utf-8 path")]);
    assert!(replaced.contains("secret/db replaced"), "{replaced}");
    let rv_after = cluster.jsonpath(&["get", "secret", "db"], "{.metadata.resourceVersion}");
    assert_ne!(
        rv_after, rv_before,
        "the replace wrote the Secret again with key2"
    );

    // key1 removed; restart: the Secret reads.
    write_config(&config, &[("key2", KEY2)]);
    cluster.restart();
    assert_eq!(
        cluster.jsonpath(&["get", "secret", "db"], "{.data.password}"),
        encoded
    );
    assert!(cluster.stop(), "rkcm up exits cleanly");

    let raw = std::fs::read(cluster.data_dir.join("rkcm.redb")).expect("read the redb file");
    assert!(contains(&raw, "k8s:enc:aescbc:v1:key2:"));
    assert!(
        !contains(&raw, &encoded),
        "the Secret's value is in the file in plain text"
    );
    assert!(!contains(&raw, PLAIN));
}
