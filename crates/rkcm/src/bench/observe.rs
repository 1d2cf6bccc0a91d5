//! What `rkcm bench all` watches while a scenario runs: pods Ready over time and the moment each
//! Deployment generation became Available (through the project's own informers), the `rkcm up`
//! child's CPU and memory, the server's request counters between two points, and a progress line
//! on stderr.

use std::collections::{BTreeMap, HashMap};
use std::io::{IsTerminal as _, Write as _};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use parking_lot::Mutex;
use rkcm_runtime::informer::{trim_managed_fields, Notification, SharedInformer, Store};
use rkcm_runtime::{process, Shutdown};

use super::metrics::{requests_between, server_requests, ServerSeries};
use super::report::Scenario;

/// Whether the pod's `Ready` condition is `True`.
pub(super) fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Whether the Deployment's controller has seen its current generation and every desired replica
/// is updated and available, with the `Available` condition `True`: what `kubectl rollout status`
/// waits for.
pub(super) fn deployment_complete(d: &Deployment) -> bool {
    let desired = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
    let Some(s) = d.status.as_ref() else {
        return false;
    };
    s.observed_generation.is_some()
        && s.observed_generation == d.metadata.generation
        && s.replicas == Some(desired)
        && s.updated_replicas == Some(desired)
        && s.available_replicas == Some(desired)
        && s.conditions.as_ref().is_some_and(|cs| {
            cs.iter()
                .any(|c| c.type_ == "Available" && c.status == "True")
        })
}

#[derive(Default)]
struct State {
    ready: u64,
    /// Pods Ready after each change, with when it was seen.
    ready_samples: Vec<(Instant, u64)>,
    /// When each (Deployment, generation) was first seen complete.
    completed: HashMap<(String, i64), Instant>,
}

/// Pod and Deployment informers on one namespace, timestamping what the scenarios wait for.
pub(super) struct Observer {
    state: Arc<Mutex<State>>,
    pods: Store<Pod>,
    shutdown: Shutdown,
}

impl Observer {
    /// Starts the informers on `namespace` and waits for their first list.
    pub async fn start(client: kube::Client, namespace: &str) -> anyhow::Result<Self> {
        let shutdown = Shutdown::new();
        let state = Arc::new(Mutex::new(State::default()));
        let pods =
            SharedInformer::<Pod>::new(Api::namespaced(client.clone(), namespace), Duration::ZERO);
        // Only readiness is read: the rest of each pod is dropped before it is cached.
        let _ = pods.set_transform(|pod: &mut Pod| {
            trim_managed_fields(&mut pod.metadata);
            pod.spec = None;
            if let Some(status) = pod.status.as_mut() {
                let conditions = status.conditions.take();
                *status = Default::default();
                status.conditions = conditions;
            }
        });
        let s = Arc::clone(&state);
        pods.add_event_handler(move |n: Notification<Pod>| {
            let delta: i64 = match &n {
                Notification::Add(p) => pod_ready(p) as i64,
                Notification::Update { old, new } => pod_ready(new) as i64 - pod_ready(old) as i64,
                Notification::Delete(d) => -(pod_ready(d.object()) as i64),
            };
            if delta != 0 {
                let mut s = s.lock();
                s.ready = s.ready.saturating_add_signed(delta);
                let ready = s.ready;
                s.ready_samples.push((Instant::now(), ready));
            }
        });
        let deployments =
            SharedInformer::<Deployment>::new(Api::namespaced(client, namespace), Duration::ZERO);
        let _ = deployments.set_transform(|d: &mut Deployment| {
            trim_managed_fields(&mut d.metadata);
            if let Some(spec) = d.spec.as_mut() {
                spec.template = Default::default();
            }
        });
        let s = Arc::clone(&state);
        deployments.add_event_handler(move |n: Notification<Deployment>| {
            let d = match &n {
                Notification::Add(d) | Notification::Update { new: d, .. } => d,
                Notification::Delete(_) => return,
            };
            if deployment_complete(d) {
                let key = (
                    d.metadata.name.clone().unwrap_or_default(),
                    d.metadata.generation.unwrap_or_default(),
                );
                s.lock().completed.entry(key).or_insert_with(Instant::now);
            }
        });
        pods.start(shutdown.clone());
        deployments.start(shutdown.clone());
        let deadline = Instant::now() + Duration::from_secs(60);
        while !(pods.has_synced() && deployments.has_synced()) {
            anyhow::ensure!(
                Instant::now() < deadline,
                "the bench's informers did not sync within a minute"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(Self {
            state,
            pods: pods.store(),
            shutdown,
        })
    }

    /// Pods Ready now.
    pub fn ready(&self) -> u64 {
        self.state.lock().ready
    }

    /// Pods in the namespace now (terminating ones included).
    pub fn pods(&self) -> u64 {
        self.pods.len() as u64
    }

    /// Names of the pods in the namespace now.
    pub fn pod_names(&self) -> Vec<String> {
        self.pods
            .list()
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect()
    }

    /// When each of `targets` (name, generation) was first seen complete; `None` for those not yet.
    pub fn completed(&self, targets: &[(String, i64)]) -> Vec<Option<Instant>> {
        let s = self.state.lock();
        targets
            .iter()
            .map(|k| s.completed.get(k).copied())
            .collect()
    }

    /// Pods Ready over `[from, to]`, as (seconds since `from`, pods), thinned to about `points`.
    pub fn ready_between(&self, from: Instant, to: Instant, points: usize) -> Vec<(f64, u64)> {
        let s = self.state.lock();
        let before = s
            .ready_samples
            .iter()
            .take_while(|(t, _)| *t < from)
            .last()
            .map_or(0, |(_, n)| *n);
        let inside: Vec<(f64, u64)> = s
            .ready_samples
            .iter()
            .filter(|(t, _)| *t >= from && *t <= to)
            .map(|(t, n)| (t.duration_since(from).as_secs_f64(), *n))
            .collect();
        let mut out = vec![(0.0, before)];
        out.extend(thin(&inside, points));
        let last = inside.last().map_or(before, |(_, n)| *n);
        out.push((to.duration_since(from).as_secs_f64(), last));
        out
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// At most about `points` of `samples`, evenly spaced by index, the last one always kept.
pub(super) fn thin<T: Copy>(samples: &[T], points: usize) -> Vec<T> {
    if samples.len() <= points.max(1) {
        return samples.to_vec();
    }
    let step = samples.len().div_ceil(points.max(1));
    let mut out: Vec<T> = samples.iter().step_by(step).copied().collect();
    if !(samples.len() - 1).is_multiple_of(step) {
        out.extend(samples.last().copied());
    }
    out
}

/// The `rkcm up` child's counters at the start of a scenario.
pub(super) struct Probe {
    pid: u32,
    requests: BTreeMap<ServerSeries, f64>,
    cpu: f64,
    recorder: Option<super::profile::Recorder>,
}

impl Probe {
    /// Reads the server's request counters and the process's CPU time now, and starts
    /// recording a profile of the process into `profile` (a directory and the scenario's name)
    /// when one is asked for.
    pub async fn start(
        pid: u32,
        client: &kube::Client,
        profile: Option<(&std::path::Path, &str)>,
    ) -> anyhow::Result<Self> {
        let recorder = profile
            .map(|(dir, scenario)| super::profile::Recorder::attach(dir, scenario, pid))
            .transpose()?;
        Ok(Self {
            pid,
            requests: server_requests(client).await?,
            cpu: process::cpu_seconds_of(pid),
            recorder,
        })
    }

    /// Fills `scenario`'s requests and CPU seconds since [`Probe::start`].
    pub async fn finish(
        self,
        client: &kube::Client,
        scenario: &mut Scenario,
    ) -> anyhow::Result<()> {
        scenario.cpu_seconds = process::cpu_seconds_of(self.pid) - self.cpu;
        if let Some(recorder) = self.recorder {
            scenario.profile = Some(recorder.finish()?);
        }
        let after = server_requests(client).await?;
        scenario.requests = requests_between(&after, &self.requests)
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        Ok(())
    }
}

/// A line of progress on stderr, redrawn every 200 ms while it lives, only when stderr is a
/// terminal.
pub(super) struct Progress {
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Progress {
    /// Shows `label: done/total unit, seconds` with `done` read from `count`.
    pub fn new(
        label: String,
        unit: &'static str,
        total: u64,
        count: Arc<dyn Fn() -> u64 + Send + Sync>,
    ) -> Self {
        if !std::io::stderr().is_terminal() {
            return Self { task: None };
        }
        let started = Instant::now();
        let task = tokio::spawn(async move {
            loop {
                let done = count();
                let line = progress_line(&label, done, total, unit, started.elapsed());
                {
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r\x1b[2K{line}");
                    let _ = err.flush();
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        Self { task: Some(task) }
    }

    /// Progress of `counter`.
    pub fn counting(
        label: String,
        unit: &'static str,
        total: u64,
        counter: Arc<AtomicU64>,
    ) -> Self {
        Self::new(
            label,
            unit,
            total,
            Arc::new(move || counter.load(Ordering::Relaxed)),
        )
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}

/// `density  4210/10000 pods [########------------]  12.3 s`.
pub(super) fn progress_line(
    label: &str,
    done: u64,
    total: u64,
    unit: &str,
    elapsed: Duration,
) -> String {
    const BAR: usize = 20;
    let filled = if total == 0 {
        BAR
    } else {
        ((done.min(total) as f64 / total as f64) * BAR as f64).round() as usize
    };
    format!(
        "{label:<10} {done}/{total} {unit} [{}{}] {:.1} s",
        "#".repeat(filled),
        "-".repeat(BAR - filled),
        elapsed.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(generation: i64, observed: i64, available: i32, condition: &str) -> Deployment {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "generation": generation},
            "spec": {"replicas": 3, "selector": {}, "template": {}},
            "status": {
                "observedGeneration": observed,
                "replicas": 3, "updatedReplicas": 3, "availableReplicas": available,
                "conditions": [{"type": "Available", "status": condition}],
            },
        }))
        .expect("a Deployment")
    }

    #[test]
    fn a_deployment_is_complete_once_its_generation_is_observed_and_available() {
        assert!(deployment_complete(&deployment(2, 2, 3, "True")));
        assert!(
            !deployment_complete(&deployment(2, 1, 3, "True")),
            "stale status"
        );
        assert!(
            !deployment_complete(&deployment(2, 2, 2, "True")),
            "one unavailable"
        );
        assert!(!deployment_complete(&deployment(2, 2, 3, "False")));
        let mut no_status = deployment(1, 1, 3, "True");
        no_status.status = None;
        assert!(!deployment_complete(&no_status));
    }

    #[test]
    fn pods_are_ready_by_their_condition() {
        let pod = |status: &str| -> Pod {
            serde_json::from_value(serde_json::json!({
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": status}]}
            }))
            .expect("a pod")
        };
        assert!(pod_ready(&pod("True")));
        assert!(!pod_ready(&pod("False")));
        assert!(!pod_ready(&Pod::default()));
    }

    #[test]
    fn thinning_keeps_the_ends_and_bounds_the_points() {
        let v: Vec<u32> = (0..1000).collect();
        let t = thin(&v, 100);
        assert!(t.len() <= 101, "{}", t.len());
        assert_eq!(t.first(), Some(&0));
        assert_eq!(t.last(), Some(&999));
        assert_eq!(thin(&[1, 2, 3], 10), vec![1, 2, 3]);
        assert!(thin::<u32>(&[], 10).is_empty());
    }

    #[test]
    fn the_progress_line_fills_its_bar() {
        assert_eq!(
            progress_line(
                "density",
                50,
                100,
                "pods Ready",
                Duration::from_millis(1500)
            ),
            "density    50/100 pods Ready [##########----------] 1.5 s"
        );
        assert!(progress_line("hold", 200, 100, "pods", Duration::ZERO).contains(&"#".repeat(20)));
        assert!(progress_line("x", 0, 0, "pods", Duration::ZERO).contains(&"#".repeat(20)));
    }
}
