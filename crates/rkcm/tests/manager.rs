//! `rkcm controller-manager` as an operator runs it: against a cluster (here an `rkcm up` without
//! controllers), with leader election, health, readiness, metrics and graceful shutdown.

mod common;

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{eventually, Cluster};

const DEADLINE: Duration = Duration::from_secs(60);

/// A free loopback port (bound, then released for the child to take).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

struct Manager {
    child: Child,
    port: u16,
}

impl Manager {
    fn start(cluster: &Cluster, extra: &[&str]) -> Self {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_rkcm"))
            .arg("controller-manager")
            .arg("--kubeconfig")
            .arg(&cluster.kubeconfig)
            .args(["--bind-address=127.0.0.1", &format!("--secure-port={port}")])
            // No delegation kubeconfig here: only always-allowed paths are served anonymously.
            .arg("--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics")
            .args([
                "--leader-elect-lease-duration=3s",
                "--leader-elect-renew-deadline=2s",
                "--leader-elect-retry-period=250ms",
            ])
            .args(extra)
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("controller manager starts");
        Self { child, port }
    }

    /// GET `path` on the secure port.
    fn get(&self, path: &str) -> Option<(u16, String)> {
        https_get(self.port, path)
    }

    fn is_leader(&self) -> bool {
        self.get("/metrics").is_some_and(|(_, body)| {
            body.lines().any(|l| {
                l.starts_with("leader_election_master_status{") && l.trim_end().ends_with(" 1")
            })
        })
    }

    fn terminate(&mut self) -> std::process::ExitStatus {
        common::terminate(&self.child);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "manager did not exit within 30s of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        self.kill();
    }
}

/// HTTPS GET accepting the manager's self-signed certificate; prints the status, then the body.
const PROBE: &str = r#"
import ssl, sys, urllib.request, urllib.error
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
try:
    r = urllib.request.urlopen(sys.argv[1], context=ctx, timeout=5)
    code, body = r.status, r.read()
except urllib.error.HTTPError as e:
    code, body = e.code, e.read()
print(code)
sys.stdout.write(body.decode())
"#;

fn https_get(port: u16, path: &str) -> Option<(u16, String)> {
    let out = Command::new("python3")
        .args(["-c", PROBE, &format!("https://127.0.0.1:{port}{path}")])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (code, body) = text.split_once('\n')?;
    Some((code.trim().parse().ok()?, body.to_string()))
}

fn pod_count(cluster: &Cluster, selector: &str) -> usize {
    cluster
        .kubectl(&["get", "pods", "-l", selector, "-o", "name"])
        .lines()
        .count()
}

fn replica_set(name: &str, replicas: i32) -> String {
    format!(
        r#"{{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{{"name":"{name}"}},
"spec":{{"replicas":{replicas},"selector":{{"matchLabels":{{"rs":"{name}"}}}},
"template":{{"metadata":{{"labels":{{"rs":"{name}"}}}},"spec":{{"containers":[{{"name":"c","image":"nginx"}}]}}}}}}}}"#
    )
}

fn apply_json(cluster: &Cluster, json: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("obj.json");
    std::fs::write(&path, json).expect("written");
    cluster.kubectl(&["apply", "-f", path.to_str().expect("utf-8")]);
}

#[test]
fn two_managers_elect_one_leader_which_hands_over_when_killed() {
    let cluster = Cluster::start(&["--nodes=0", "--controllers="]);
    let mut a = Manager::start(&cluster, &[]);
    let mut b = Manager::start(&cluster, &[]);

    // Both are live and ready: one leads (caches synced), the other stands by.
    for m in [&a, &b] {
        eventually("/healthz answers ok", DEADLINE, &mut || {
            m.get("/healthz")
                .filter(|(code, body)| *code == 200 && body.trim() == "ok")
        });
        eventually("/readyz answers ok", DEADLINE, &mut || {
            m.get("/readyz").filter(|(code, _)| *code == 200)
        });
    }
    eventually("exactly one leader", DEADLINE, &mut || {
        (a.is_leader() != b.is_leader()).then_some(())
    });
    let holder = cluster.jsonpath(
        &[
            "get",
            "lease",
            "-n",
            "kube-system",
            "kube-controller-manager",
        ],
        "{.spec.holderIdentity}",
    );
    assert!(!holder.is_empty(), "the lease names its holder");
    let leader = if a.is_leader() { &a } else { &b };
    let metrics = leader.get("/metrics").expect("metrics").1;
    assert!(
        metrics.contains("workqueue_depth"),
        "workqueue metrics exported"
    );
    assert!(
        metrics.contains("rest_client_requests_total"),
        "REST client metrics exported"
    );

    apply_json(&cluster, &replica_set("ha", 5));
    eventually("five pods", DEADLINE, &mut || {
        (pod_count(&cluster, "rs=ha") == 5).then_some(())
    });

    // Kill the leader without letting it release the lease: the standby takes over after the
    // lease expires, and never creates a pod twice.
    let (leader, standby) = if a.is_leader() {
        (&mut a, &mut b)
    } else {
        (&mut b, &mut a)
    };
    leader.kill();
    cluster.kubectl(&["scale", "rs/ha", "--replicas=8"]);
    let started = Instant::now();
    let mut max_seen = 0;
    eventually(
        "the standby takes over and scales to eight",
        DEADLINE,
        &mut || {
            let n = pod_count(&cluster, "rs=ha");
            max_seen = max_seen.max(n);
            (n == 8 && standby.is_leader()).then_some(())
        },
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "handover within the lease duration"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(pod_count(&cluster, "rs=ha"), 8);
    assert!(
        max_seen <= 8,
        "never more pods than replicas (saw {max_seen})"
    );

    // SIGTERM: finish in-flight work, release the lease, exit 0.
    let status = standby.terminate();
    assert!(status.success(), "graceful shutdown exits 0: {status}");
    let holder = cluster.jsonpath(
        &[
            "get",
            "lease",
            "-n",
            "kube-system",
            "kube-controller-manager",
        ],
        "{.spec.holderIdentity}",
    );
    assert!(
        holder.is_empty(),
        "the lease is released on shutdown (holder {holder:?})"
    );
}

/// `rkcm controller-manager --controllers=<list>` against a missing kubeconfig: its stderr and
/// whether it failed.
fn controllers_flag(list: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rkcm"))
        .args([
            "controller-manager",
            "--kubeconfig",
            "/nonexistent",
            &format!("--controllers={list}"),
        ])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn unknown_controllers_are_refused_as_kube_refuses_them() {
    let stderr = controllers_flag("*,-cronjobs");
    assert!(
        stderr.contains("\"cronjobs\" is not in the list of known controllers"),
        "{stderr}"
    );
    // Names kube knows pass validation, implemented or not: kubeadm's line fails only on the
    // missing kubeconfig.
    let stderr = controllers_flag("*,bootstrapsigner,tokencleaner,-cronjob");
    assert!(!stderr.contains("known controllers"), "{stderr}");
    assert!(stderr.contains("/nonexistent"), "{stderr}");
}

/// kube-controller-manager's `--controllers` usage names every controller and those `*` leaves
/// off; rkcm's prints the same text from its registry.
#[test]
fn help_lists_every_controller_under_controllers_as_kube_does() {
    let out = Command::new(env!("CARGO_BIN_EXE_rkcm"))
        .args(["controller-manager", "--help"])
        .output()
        .expect("runs");
    let help = String::from_utf8_lossy(&out.stdout);
    let usage: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("--controllers "))
        .skip(1)
        .take(3)
        .map(str::trim)
        .collect();
    let want = format!(
        "{} [default: *]",
        rkcm_controllers::registry::controllers_flag_usage()
    );
    assert_eq!(usage.join("\n"), want, "in:\n{help}");
    assert!(usage[1].starts_with(
        "All controllers: bootstrap-signer-controller, certificatesigningrequest-approving-controller,"
    ));
    assert_eq!(
        usage[2],
        "Disabled-by-default controllers: bootstrap-signer-controller, selinux-warning-controller, \
         token-cleaner-controller [default: *]"
    );
}

#[test]
fn help_groups_flags_as_kube_controller_manager_does() {
    let out = Command::new(env!("CARGO_BIN_EXE_rkcm"))
        .args(["controller-manager", "--help"])
        .output()
        .expect("runs");
    let help = String::from_utf8_lossy(&out.stdout);
    for heading in [
        "Generic flags:",
        "Secure serving flags:",
        "Deployment controller flags:",
        "Replicaset controller flags:",
        "Podgc controller flags:",
        "Garbagecollector controller flags:",
        "Namespace controller flags:",
        "Job controller flags:",
        "Cronjob controller flags:",
        "Ttl-after-finished controller flags:",
        "Horizontalpodautoscaling controller flags:",
        "Daemonset controller flags:",
        "Endpoint controller flags:",
        "Endpointslice controller flags:",
        "Endpointslicemirroring controller flags:",
        "Serviceaccount controller flags:",
        "Replicationcontroller flags:",
        "Resourcequota controller flags:",
        "Persistentvolume-binder controller flags:",
        "Ephemeralvolume controller flags:",
    ] {
        assert!(help.contains(heading), "--help lacks {heading}:\n{help}");
    }
}
