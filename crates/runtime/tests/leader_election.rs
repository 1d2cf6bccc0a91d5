//! Two candidates on one Lease: one leader at a time, handover on release, step-down on a
//! failed renewal.

mod support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rkcm_runtime::leader_election::{LeaderElectionConfig, LeaderElector};
use rkcm_runtime::Shutdown;
use support::eventually;
use support::fake_leases::FakeLeases;

fn config(identity: &str) -> LeaderElectionConfig {
    let mut c = LeaderElectionConfig::new("kube-system", "rkcm", identity);
    c.lease_duration = Duration::from_secs(2);
    c.renew_deadline = Duration::from_millis(1000);
    c.retry_period = Duration::from_millis(100);
    c
}

/// A running candidate and what its callbacks saw.
struct Candidate {
    elector: LeaderElector,
    shutdown: Shutdown,
    leading: Arc<AtomicBool>,
    started: Arc<AtomicUsize>,
    stopped: Arc<AtomicBool>,
    done: tokio::task::JoinHandle<()>,
}

fn spawn(server: &FakeLeases, identity: &str) -> Candidate {
    let elector = LeaderElector::new(server.client(), config(identity)).expect("valid config");
    let shutdown = Shutdown::new();
    let leading = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicUsize::new(0));
    let stopped = Arc::new(AtomicBool::new(false));
    let (l, st, sp) = (leading.clone(), started.clone(), stopped.clone());
    let done = tokio::spawn(elector.clone().run(
        shutdown.clone(),
        move |token| async move {
            st.fetch_add(1, Ordering::SeqCst);
            l.store(true, Ordering::SeqCst);
            token.cancelled().await;
            l.store(false, Ordering::SeqCst);
        },
        move || sp.store(true, Ordering::SeqCst),
    ));
    Candidate {
        elector,
        shutdown,
        leading,
        started,
        stopped,
        done,
    }
}

#[tokio::test]
async fn one_leader_at_a_time_and_handover_after_release() {
    let server = FakeLeases::start().await;
    let a = spawn(&server, "a");
    eventually("a leads", || a.leading.load(Ordering::SeqCst)).await;
    assert!(a.elector.is_leader());
    let spec = server.spec("kube-system", "rkcm").expect("lease created");
    assert_eq!(spec["holderIdentity"], "a");
    assert_eq!(spec["leaseDurationSeconds"], 2);

    let b = spawn(&server, "b");
    // b observes a as leader and keeps waiting while a renews (well past one lease duration).
    eventually("b observes a", || {
        b.elector.leader().as_deref() == Some("a")
    })
    .await;
    // 25 renewals at a 100 ms retry period span more than the 2 s lease duration.
    let renewed_from = server.state.lock().rv;
    eventually("a renews past one lease duration", || {
        server.state.lock().rv >= renewed_from + 25
    })
    .await;
    assert!(!b.elector.is_leader());
    assert!(!b.leading.load(Ordering::SeqCst));
    assert!(a.leading.load(Ordering::SeqCst));

    // a shuts down: it releases the lease and b takes over without waiting for expiry.
    a.shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(5), a.done)
        .await
        .expect("a's run returns after shutdown")
        .expect("a's run did not panic");
    assert!(a.stopped.load(Ordering::SeqCst));
    assert!(
        !a.leading.load(Ordering::SeqCst),
        "a's leading token was cancelled"
    );
    assert!(!a.elector.is_leader());
    eventually("b leads", || b.leading.load(Ordering::SeqCst)).await;
    let spec = server.spec("kube-system", "rkcm").expect("lease");
    assert_eq!(spec["holderIdentity"], "b");
    assert_eq!(spec["leaseTransitions"], 1);
    assert_eq!(b.started.load(Ordering::SeqCst), 1);

    b.shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(5), b.done)
        .await
        .expect("b's run returns")
        .expect("no panic");
    let spec = server.spec("kube-system", "rkcm").expect("lease");
    assert_eq!(spec["holderIdentity"], "");
    assert_eq!(spec["leaseDurationSeconds"], 1);
}

#[tokio::test]
async fn leader_steps_down_when_it_cannot_renew_within_the_deadline() {
    let server = FakeLeases::start().await;
    let a = spawn(&server, "a");
    eventually("a leads", || a.leading.load(Ordering::SeqCst)).await;
    server.state.lock().outage = true;
    tokio::time::timeout(Duration::from_secs(10), a.done)
        .await
        .expect("run returns once leadership is lost")
        .expect("no panic");
    assert!(a.stopped.load(Ordering::SeqCst));
    assert!(!a.leading.load(Ordering::SeqCst));
    assert!(!a.elector.is_leader());
}

#[tokio::test]
async fn a_candidate_takes_over_an_expired_lease_held_by_a_dead_leader() {
    let server = FakeLeases::start().await;
    let a = spawn(&server, "a");
    eventually("a leads", || a.leading.load(Ordering::SeqCst)).await;
    // a dies without releasing: abort its task.
    a.done.abort();
    let b = spawn(&server, "b");
    eventually("b observes a", || {
        b.elector.leader().as_deref() == Some("a")
    })
    .await;
    assert!(!b.elector.is_leader());
    // After lease_duration (2 s) without changes, b takes over.
    eventually("b leads after expiry", || b.leading.load(Ordering::SeqCst)).await;
    assert_eq!(
        server.spec("kube-system", "rkcm").expect("lease")["holderIdentity"],
        "b"
    );
    b.shutdown.cancel();
}
