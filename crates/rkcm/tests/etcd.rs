//! Two `rkcm up --etcd-servers …` processes on one etcd, driven with the real kubectl: an object
//! created through one is read through the other; with etcd stopped a write fails at once with
//! a 503 naming etcd; with etcd back both serve and converge.

mod common;

use std::time::Duration;

use common::Cluster;
use rkcm_apiserver::storage::etcd::testing::EtcdProcess;

fn data_of(cluster: &Cluster, name: &str) -> Option<String> {
    let out = cluster.kubectl_output(&["get", "configmap", name, "-o", "jsonpath={.data.k}"]);
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn two_rkcm_up_on_one_etcd_share_objects_and_survive_an_etcd_restart() {
    let Some(mut etcd) = EtcdProcess::start_or_skip() else {
        return;
    };
    let servers = etcd.endpoints().join(",");
    let flags = [
        "--etcd-servers",
        servers.as_str(),
        "--controllers=",
        "--nodes",
        "0",
    ];
    let a = Cluster::start(&flags);
    let b = Cluster::start(&flags);

    a.kubectl(&["create", "configmap", "shared", "--from-literal=k=from-a"]);
    b.eventually("b serves a's ConfigMap", Duration::from_secs(30), || {
        data_of(&b, "shared").filter(|d| d == "from-a")
    });

    etcd.stop();
    let started = std::time::Instant::now();
    let out = a.kubectl_output(&["create", "configmap", "during", "--from-literal=k=v"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a write without etcd succeeded");
    assert!(
        stderr.contains("storage is unavailable: etcd at"),
        "kubectl shows why: {stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the write took {:?} to fail",
        started.elapsed()
    );
    // Reads keep being served from the cache.
    assert_eq!(data_of(&b, "shared").as_deref(), Some("from-a"));

    etcd.restart();
    b.eventually(
        "a write through b once etcd is back",
        Duration::from_secs(60),
        || {
            b.kubectl_output(&["create", "configmap", "after", "--from-literal=k=from-b"])
                .status
                .success()
                .then_some(())
        },
    );
    a.eventually("a serves b's ConfigMap", Duration::from_secs(30), || {
        data_of(&a, "after").filter(|d| d == "from-b")
    });
}
