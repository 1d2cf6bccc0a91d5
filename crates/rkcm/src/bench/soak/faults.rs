//! The soak's faults: a seeded schedule of moments, and the processes they hit — `rkcm up`
//! killed with SIGKILL and restarted on its data directory (embedded store), or one member of
//! a three-member etcd stopped and started again (etcd store, the quorum holding).

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rkcm_apiserver::storage::etcd::testing::EtcdProcess;
use serde::Serialize;

/// One planned fault: at `at` into the run, hit the process; bring it back after `down`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Planned {
    /// Time from the start of the load.
    pub at: Duration,
    /// How long the process stays down (before restarting it).
    pub down: Duration,
    /// The etcd member to stop (ignored for the embedded store).
    pub member: usize,
}

/// The faults of a run of `duration`, about one every `interval` (0.5 to 1.5 times it apart),
/// none in the first tenth nor the last fifth (so the run ends on a settled cluster), at least
/// one; each down for up to `max_down`. The same seed gives the same plan.
pub fn plan(
    seed: u64,
    duration: Duration,
    interval: Duration,
    max_down: Duration,
    members: usize,
) -> Vec<Planned> {
    let mut rng = StdRng::seed_from_u64(seed);
    let start = duration.mul_f64(0.1);
    let end = duration.mul_f64(0.8);
    let interval = interval.max(Duration::from_millis(100));
    let mut out = Vec::new();
    let mut at = start;
    loop {
        at += interval.mul_f64(rng.random_range(0.5..1.5));
        let down = max_down.mul_f64(rng.random_range(0.0..=1.0));
        if at + down > end {
            break;
        }
        out.push(Planned {
            at,
            down,
            member: rng.random_range(0..members.max(1)),
        });
    }
    if out.is_empty() {
        out.push(Planned {
            at: duration / 2,
            down: max_down
                .min(duration / 4)
                .mul_f64(rng.random_range(0.0..=1.0)),
            member: rng.random_range(0..members.max(1)),
        });
    }
    out
}

/// A fault as it happened.
#[derive(Debug, Clone, Serialize)]
pub struct Fault {
    /// What was done (`kill -9 rkcm up`, `stop etcd member 1`).
    pub what: String,
    /// Seconds from the start of the load to the kill.
    pub at_seconds: f64,
    /// Seconds from the start of the load until the process served again.
    pub back_at_seconds: f64,
}

/// A free loopback port, for an `rkcm up` that must come back on the same one.
fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// A child `rkcm up` on a fixed port and data directory, which can be killed and started again.
pub struct Up {
    child: Option<Child>,
    data_dir: PathBuf,
    port: u16,
    extra: Vec<String>,
    kubeconfig: PathBuf,
}

impl Up {
    /// Starts `rkcm up` on `data_dir` (no controllers, no nodes) with `extra` flags and waits
    /// for its kubeconfig line.
    pub fn start(data_dir: &Path, extra: &[String]) -> anyhow::Result<Self> {
        let port = free_port()?;
        let (child, kubeconfig) = spawn(data_dir, port, extra)?;
        Ok(Self {
            child: Some(child),
            data_dir: data_dir.to_path_buf(),
            port,
            extra: extra.to_vec(),
            kubeconfig,
        })
    }

    /// The kubeconfig `rkcm up` wrote.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Process id of the running `rkcm up`, if any.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// SIGKILL: no shutdown, no flush.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts `rkcm up` again on the same data directory and port (after [`kill`](Self::kill)).
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.kill();
        let (child, kubeconfig) = spawn(&self.data_dir, self.port, &self.extra)?;
        self.child = Some(child);
        self.kubeconfig = kubeconfig;
        Ok(())
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        self.kill();
    }
}

fn spawn(data_dir: &Path, port: u16, extra: &[String]) -> anyhow::Result<(Child, PathBuf)> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "--port".into(),
        port.to_string().into(),
        "--data-dir".into(),
        data_dir.as_os_str().to_owned(),
        "--nodes=0".into(),
        "--controllers=".into(),
        "--disable-admission-plugins=ServiceAccount".into(),
    ];
    args.extend(extra.iter().map(Into::into));
    crate::bench::spawn_up(args)
}

/// What the faults hit.
pub enum Target {
    /// The embedded store: the `up` process itself.
    Embedded(Up),
    /// etcd: the `up` process stays; one member at a time goes.
    Etcd {
        /// The `up` process on the cluster.
        up: Up,
        /// The three members.
        etcd: EtcdProcess,
    },
}

impl Target {
    /// The `up` process.
    pub fn up(&self) -> &Up {
        match self {
            Target::Embedded(up) | Target::Etcd { up, .. } => up,
        }
    }

    /// Hits the target as `fault` says (blocking: it waits for the process to serve again);
    /// returns what was done.
    pub fn hit(&mut self, fault: &Planned) -> anyhow::Result<String> {
        match self {
            Target::Embedded(up) => {
                up.kill();
                std::thread::sleep(fault.down);
                up.restart()?;
                Ok("kill -9 rkcm up".to_string())
            }
            Target::Etcd { etcd, .. } => {
                etcd.kill(fault.member);
                std::thread::sleep(fault.down);
                // Waits until the member answers its health endpoint again.
                etcd.restart();
                Ok(format!("stop etcd member m{}", fault.member))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_plans_the_same_faults_inside_the_run() {
        let d = Duration::from_secs(600);
        let i = Duration::from_secs(60);
        let down = Duration::from_secs(10);
        let a = plan(7, d, i, down, 3);
        assert_eq!(a, plan(7, d, i, down, 3));
        assert_ne!(a, plan(8, d, i, down, 3));
        assert!(a.len() >= 4, "{a:?}");
        for f in &a {
            assert!(f.at >= d / 10 && f.at + f.down <= d.mul_f64(0.8), "{f:?}");
            assert!(f.member < 3 && f.down <= down);
        }
    }

    #[test]
    fn a_short_run_gets_at_least_one_fault() {
        let plan = plan(
            1,
            Duration::from_secs(5),
            Duration::from_secs(60),
            Duration::from_secs(2),
            3,
        );
        assert_eq!(plan.len(), 1);
        assert_eq!(plan[0].at, Duration::from_millis(2500));
    }
}
