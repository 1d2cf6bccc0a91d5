//! A highly available control plane on etcd, end to end: a three-member etcd on loopback (a real
//! quorum), two `rkcm up` processes on it (two API servers, two controller managers and two node
//! simulations, one of each active through leader election), driven with the real kubectl.
//!
//! A Deployment rolls out; losing one etcd member changes nothing; killing the leading `up`
//! hands the controller manager's and the scheduler's leases to the other, which scales the
//! Deployment without a pod created twice; losing a second member (no quorum) fails writes
//! clearly within the request timeout while reads keep being served from the watch cache; once
//! the members are back everything converges.

mod common;

use std::time::{Duration, Instant};

use common::Cluster;
use rkcm_apiserver::storage::etcd::testing::EtcdProcess;

/// The lease holder of `name` in `kube-system`, if any.
fn holder(cluster: &Cluster, name: &str) -> Option<String> {
    let out = cluster.kubectl_output(&[
        "get",
        "lease",
        "-n",
        "kube-system",
        name,
        "-o",
        "jsonpath={.spec.holderIdentity}",
    ]);
    let holder = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !holder.is_empty()).then_some(holder)
}

/// The names of the Deployment's pods.
fn pods(cluster: &Cluster) -> Option<Vec<String>> {
    let out = cluster.kubectl_output(&[
        "get",
        "pods",
        "-l",
        "app=web",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ]);
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .map(str::to_string)
            .collect()
    })
}

/// Waits until the Deployment has `n` ready replicas, then checks that exactly `n` pods exist
/// and that no surplus pod was ever deleted (two active managers would create pods twice and
/// then delete the extra ones).
fn rolled_out(cluster: &Cluster, n: usize, within: Duration) {
    cluster.eventually(
        &format!("the Deployment ready with {n} replicas"),
        within,
        || {
            let ready = cluster.kubectl_output(&[
                "get",
                "deployment",
                "web",
                "-o",
                "jsonpath={.status.readyReplicas}/{.status.replicas}",
            ]);
            (String::from_utf8_lossy(&ready.stdout) == format!("{n}/{n}")).then_some(())
        },
    );
    let names = pods(cluster).expect("pods listed");
    assert_eq!(names.len(), n, "exactly {n} pods: {names:?}");
    let deleted = cluster.kubectl(&[
        "get",
        "events",
        "--field-selector",
        "reason=SuccessfulDelete",
        "-o",
        "name",
    ]);
    assert!(
        deleted.trim().is_empty(),
        "no pod was created twice and deleted: {deleted}"
    );
}

fn scale(cluster: &Cluster, n: usize) {
    cluster.eventually(&format!("scaling to {n}"), Duration::from_secs(30), || {
        cluster
            .kubectl_output(&["scale", "deployment", "web", &format!("--replicas={n}")])
            .status
            .success()
            .then_some(())
    });
}

#[test]
fn two_rkcm_up_on_a_three_member_etcd_survive_a_member_a_leader_and_a_lost_quorum() {
    let Some(mut etcd) = EtcdProcess::cluster_or_skip(3) else {
        return;
    };
    let servers = etcd.endpoints().join(",");
    let flags = [
        "--etcd-servers",
        servers.as_str(),
        "--nodes",
        "2",
        "--pod-ready-delay",
        "100ms",
    ];
    // The first `up` takes both leases before the second starts.
    let mut a = Cluster::start(&flags);
    let leader = a.eventually(
        "the controller manager's lease taken",
        Duration::from_secs(30),
        || holder(&a, "kube-controller-manager"),
    );
    let scheduler = a.eventually(
        "the scheduler's lease taken",
        Duration::from_secs(30),
        || holder(&a, "kube-scheduler"),
    );
    let b = Cluster::start(&flags);

    a.kubectl(&[
        "create",
        "deployment",
        "web",
        "--image=registry.k8s.io/pause:3.10",
        "--replicas=3",
    ]);
    rolled_out(&b, 3, Duration::from_secs(60));
    assert_eq!(holder(&b, "kube-controller-manager"), Some(leader.clone()));

    // One member down: the quorum holds and both API servers keep working.
    etcd.kill(0);
    scale(&b, 4);
    rolled_out(&a, 4, Duration::from_secs(60));

    // The leading `up` dies without releasing its leases: the other takes them over once they
    // expire (15 s) and carries on.
    a.kill();
    b.eventually(
        "the controller manager's lease handed over",
        Duration::from_secs(45),
        || holder(&b, "kube-controller-manager").filter(|h| *h != leader),
    );
    b.eventually(
        "the scheduler's lease handed over",
        Duration::from_secs(45),
        || holder(&b, "kube-scheduler").filter(|h| *h != scheduler),
    );
    scale(&b, 5);
    rolled_out(&b, 5, Duration::from_secs(60));

    // Two members down: no quorum. A write fails with a clear 503/504 within the request
    // timeout; reads are served from the watch cache.
    etcd.kill(1);
    let started = Instant::now();
    // `-v=6` logs the response status of each request.
    let out = b.kubectl_output(&[
        "create",
        "configmap",
        "during",
        "--from-literal=k=v",
        "-v=6",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a write without a quorum succeeded");
    assert!(
        (stderr.contains("503 Service Unavailable")
            && stderr.contains("storage is unavailable: etcd at"))
            || (stderr.contains("504 Gateway Timeout")
                && stderr.contains("storage did not answer in time")),
        "kubectl shows a 503 or 504 naming etcd: {stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the write took {:?} to fail",
        started.elapsed()
    );
    assert_eq!(pods(&b).map(|p| p.len()), Some(5), "reads keep serving");

    // The members return: writes succeed again and the cluster converges.
    etcd.restart();
    b.eventually(
        "a write once the quorum is back",
        Duration::from_secs(60),
        || {
            b.kubectl_output(&["create", "configmap", "after", "--from-literal=k=v"])
                .status
                .success()
                .then_some(())
        },
    );
    scale(&b, 6);
    rolled_out(&b, 6, Duration::from_secs(90));
}
