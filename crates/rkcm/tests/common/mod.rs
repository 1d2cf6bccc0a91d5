//! End-to-end harness: runs `rkcm up` as a child process on a free port with a temporary data
//! directory, and drives it with the real `kubectl`.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The kubectl the tests use: `$KUBECTL`, else `/usr/bin/kubectl`, else `kubectl` on PATH.
pub fn default_kubectl() -> PathBuf {
    if let Some(k) = std::env::var_os("KUBECTL") {
        return PathBuf::from(k);
    }
    let usr = PathBuf::from("/usr/bin/kubectl");
    if usr.exists() {
        usr
    } else {
        PathBuf::from("kubectl")
    }
}

/// Another kubectl version from the Google Cloud SDK, when installed.
pub fn older_kubectl(version: &str) -> Option<PathBuf> {
    let p = PathBuf::from(format!("/usr/lib/google-cloud-sdk/bin/kubectl.{version}"));
    p.exists().then_some(p)
}

/// A running `rkcm up`.
pub struct Cluster {
    child: Option<Child>,
    pub data_dir: PathBuf,
    _tmp: Option<tempfile::TempDir>,
    pub kubeconfig: PathBuf,
    cache_dir: tempfile::TempDir,
    pub kubectl: PathBuf,
    extra_args: Vec<String>,
    port: u16,
}

impl Cluster {
    /// Starts `rkcm up` with `extra` flags on a fresh data directory.
    pub fn start(extra: &[&str]) -> Self {
        let tmp = tempfile::tempdir().expect("temp dir");
        let data_dir = tmp.path().join("data");
        let mut cluster = Self::start_in(&data_dir, extra, 0);
        cluster._tmp = Some(tmp);
        // Pods are admitted only once their namespace's `default` ServiceAccount exists; a
        // cluster running its serviceaccount controller makes it just after starting.
        if !extra.iter().any(|a| a.starts_with("--controllers")) {
            cluster.wait_for_default_service_account("default");
        }
        cluster
    }

    /// Waits until `namespace` has its `default` ServiceAccount, which the ServiceAccount
    /// admission plugin requires of every pod created there (kube's e2e framework waits for it
    /// in each test namespace too).
    pub fn wait_for_default_service_account(&self, namespace: &str) {
        self.eventually(
            &format!("the default ServiceAccount of {namespace}"),
            Duration::from_secs(60),
            || {
                self.kubectl_output(&["get", "serviceaccount", "default", "-n", namespace])
                    .status
                    .success()
                    .then_some(())
            },
        );
    }

    /// Starts `rkcm up` with `extra` flags on `data_dir`, which may already hold the cluster's
    /// CA, serving certificate and service-account key (`ca.crt`, `ca.key`, `apiserver.crt`,
    /// `apiserver.key`, `sa.key`) for it to use.
    pub fn start_on(data_dir: &Path, extra: &[&str]) -> Self {
        Self::start_in(data_dir, extra, 0)
    }

    fn start_in(data_dir: &Path, extra: &[&str], port: u16) -> Self {
        let extra_args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let (child, kubeconfig, port) = spawn(data_dir, &extra_args, port);
        Self {
            child: Some(child),
            data_dir: data_dir.to_path_buf(),
            _tmp: None,
            kubeconfig,
            cache_dir: tempfile::tempdir().expect("temp dir"),
            kubectl: default_kubectl(),
            extra_args,
            port,
        }
    }

    /// Stops the process with SIGTERM and waits for it to exit; returns whether it exited cleanly.
    pub fn stop(&mut self) -> bool {
        let Some(mut child) = self.child.take() else {
            return true;
        };
        terminate(&child);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return status.success(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return false;
                }
            }
        }
    }

    /// Kills the process with SIGKILL (no cleanup at all).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts `rkcm up` again on the same data directory and port.
    pub fn restart(&mut self) {
        self.stop();
        let (child, kubeconfig, port) = spawn(&self.data_dir, &self.extra_args, self.port);
        self.child = Some(child);
        self.kubeconfig = kubeconfig;
        self.port = port;
    }

    /// A `kubectl` command pointed at this cluster.
    pub fn kubectl_cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.kubectl);
        cmd.env("KUBECONFIG", &self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.cache_dir.path())
            .args(args)
            .stdin(Stdio::null());
        cmd
    }

    /// Runs kubectl; returns its output whatever the exit status.
    pub fn kubectl_output(&self, args: &[&str]) -> Output {
        self.kubectl_cmd(args).output().expect("kubectl runs")
    }

    /// Runs kubectl and asserts success; returns stdout.
    pub fn kubectl(&self, args: &[&str]) -> String {
        let out = self.kubectl_output(args);
        assert!(
            out.status.success(),
            "kubectl {} failed ({}):\nstdout: {}\nstderr: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl get … -o jsonpath=…`.
    pub fn jsonpath(&self, args: &[&str], path: &str) -> String {
        let jp = format!("jsonpath={path}");
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["-o", &jp]);
        self.kubectl(&all)
    }

    /// Polls `f` until it returns `Some`, or panics with `what` after `timeout`.
    pub fn eventually<T>(
        &self,
        what: &str,
        timeout: Duration,
        mut f: impl FnMut() -> Option<T>,
    ) -> T {
        eventually(what, timeout, &mut f)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Polls `f` until it returns `Some`, or panics with `what` after `timeout`.
pub fn eventually<T>(what: &str, timeout: Duration, f: &mut dyn FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    let mut wait = Duration::from_millis(20);
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for: {what}");
        }
        std::thread::sleep(wait);
        wait = (wait * 2).min(Duration::from_millis(250));
    }
}

/// Sends SIGTERM, as Ctrl-C or a service manager would.
pub fn terminate(child: &Child) {
    let Ok(pid) = libc::pid_t::try_from(child.id()) else {
        return;
    };
    // SAFETY: `kill` has no memory effects; `pid` is our own child, not yet reaped.
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
}

/// Spawns `rkcm up` and waits for its `export KUBECONFIG=` line.
fn spawn(data_dir: &Path, extra: &[String], port: u16) -> (Child, PathBuf, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rkcm"))
        .arg("up")
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--port")
        .arg(port.to_string())
        .args(extra)
        .env(
            "RUST_LOG",
            std::env::var("RUST_LOG").unwrap_or_else(|_| "error".into()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("rkcm up starts");
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(path) = line.strip_prefix("export KUBECONFIG=") {
                let _ = tx.send(PathBuf::from(path));
            }
        }
    });
    let kubeconfig = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(path) => path,
        Err(_) => {
            let _ = child.kill();
            panic!("rkcm up did not print its kubeconfig line within 60s");
        }
    };
    let text = std::fs::read_to_string(&kubeconfig).expect("kubeconfig readable");
    let port = text
        .split("https://")
        .nth(1)
        .and_then(|rest| rest.split(':').nth(1))
        .and_then(|p| {
            p.chars()
                .take_while(|c| c.is_ascii_digit())
                .collect::<String>()
                .parse()
                .ok()
        })
        .expect("kubeconfig names the server port");
    (child, kubeconfig, port)
}
