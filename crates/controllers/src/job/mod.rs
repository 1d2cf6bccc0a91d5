//! The Job controller: runs pods to completion for every batch/v1 Job
//! (k8s.io/kubernetes `pkg/controller/job`).
//!
//! Event handlers (`handlers.rs`) only enqueue keys and observe expectations; `sync.rs` reads the
//! caches and decides the Job's fate, `manage.rs` creates and deletes pods and `status.rs` writes
//! `/status`. Every pod the controller creates carries the `batch.kubernetes.io/job-tracking`
//! finalizer, removed only once the pod is recorded in `status.uncountedTerminatedPods`
//! (`tracking.rs`), so no finished pod goes uncounted. The decisions are pure functions: pod state (`pods.rs`), backoff (`backoff.rs`), indexes
//! (`indexed.rs`), conditions (`conditions.rs`), the pod failure policy
//! (`pod_failure_policy.rs`), the success policy (`success_policy.rs`) and
//! `backoffLimitPerIndex` (`per_index.rs`).

pub mod backoff;
pub mod conditions;
#[cfg(test)]
mod fixtures;
mod handlers;
pub mod indexed;
mod manage;
pub mod metrics;
pub mod per_index;
pub mod pod_failure_policy;
pub mod pods;
mod status;
pub mod success_policy;
mod sync;
pub mod tracking;

use std::sync::{Arc, Weak};
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use rkcm_runtime::events::EventRecorder;
use rkcm_runtime::expectations::ControllerExpectations;
use rkcm_runtime::informer::{wait_for_cache_sync, InformerFactory, SharedInformer, Store};
use rkcm_runtime::pod_control::{PodControl, RealPodControl};
use rkcm_runtime::workqueue::{ItemExponentialFailureRateLimiter, RateLimitingQueue};
use rkcm_runtime::{worker, Clock, ObjectKey, Shutdown, SystemClock};

pub use sync::SyncError;

/// Name of the controller (`--controllers` and its event source).
pub const CONTROLLER_NAME: &str = "job-controller";
/// Default number of workers (`--concurrent-job-syncs`).
pub const DEFAULT_WORKERS: usize = 5;
/// Most pods one sync creates or deletes (`MaxPodCreateDeletePerSync`).
pub const MAX_POD_CREATE_DELETE_PER_SYNC: usize = 500;
/// How long pod updates are batched before the Job is synced (`syncJobBatchPeriod`).
pub const SYNC_JOB_BATCH_PERIOD: Duration = Duration::from_secs(1);

/// Settings of a [`JobController`].
#[derive(Clone)]
pub struct Config {
    /// Concurrent syncs; a hint for the caller of [`JobController::run`] (default 5).
    pub workers: usize,
    /// Delay that batches the syncs triggered by pod updates (default 1 s).
    pub sync_batch_period: Duration,
    /// First delay of the Job-level backoff after a pod failure (default 10 s).
    pub pod_failure_backoff: Duration,
    /// Longest delay of that backoff (default 6 min).
    pub max_pod_failure_backoff: Duration,
    /// Wall clock for start and completion times, deadlines, backoff and expectations.
    pub clock: Arc<dyn Clock>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            workers: DEFAULT_WORKERS,
            sync_batch_period: SYNC_JOB_BATCH_PERIOD,
            pod_failure_backoff: backoff::DEFAULT_JOB_POD_FAILURE_BACKOFF,
            max_pod_failure_backoff: backoff::MAX_JOB_POD_FAILURE_BACKOFF,
            clock: Arc::new(SystemClock),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("workers", &self.workers)
            .field("sync_batch_period", &self.sync_batch_period)
            .field("pod_failure_backoff", &self.pod_failure_backoff)
            .field("max_pod_failure_backoff", &self.max_pod_failure_backoff)
            .finish_non_exhaustive()
    }
}

/// Runs the pods of every Job to completion and reports them in its status.
///
/// Safe to share: handlers and workers run concurrently; a key is never synced by two workers at
/// once (the queue guarantees it).
pub struct JobController {
    client: Client,
    pod_control: Arc<dyn PodControl>,
    recorder: EventRecorder,
    /// Pod creations and deletions each Job waits to observe.
    expectations: ControllerExpectations,
    /// Finalizer removals each Job waits to observe.
    finalizer_expectations: tracking::FinalizerExpectations,
    backoff: backoff::BackoffStore,
    job_informer: SharedInformer<Job>,
    pod_informer: SharedInformer<Pod>,
    job_store: Store<Job>,
    pod_store: Store<Pod>,
    queue: RateLimitingQueue<ObjectKey>,
    /// Pods whose tracking finalizer may be left behind by a deleted or finished Job.
    orphan_queue: RateLimitingQueue<ObjectKey>,
    config: Config,
}

impl JobController {
    /// The Job controller on the factory's Job and Pod informers; pods are created and deleted
    /// through a [`RealPodControl`] and events recorded with `recorder` (source `job-controller`).
    pub fn new(
        factory: &InformerFactory,
        client: Client,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let pod_control = Arc::new(RealPodControl::new(client.clone(), recorder.clone()));
        Self::with_pod_control(factory, client, pod_control, recorder, config)
    }

    /// The controller with an injected [`PodControl`] (tests use `FakePodControl`).
    pub fn with_pod_control(
        factory: &InformerFactory,
        client: Client,
        pod_control: Arc<dyn PodControl>,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let job_informer = factory.informer::<Job>();
        let pod_informer = factory.informer::<Pod>();
        Arc::new_cyclic(|weak: &Weak<Self>| {
            let on_job = weak.clone();
            job_informer.add_event_handler(move |note| {
                if let Some(this) = on_job.upgrade() {
                    this.on_job(note);
                }
            });
            let on_pod = weak.clone();
            pod_informer.add_event_handler(move |note| {
                if let Some(this) = on_pod.upgrade() {
                    this.on_pod(note);
                }
            });
            // kube's Job queue backs off from 1 s up to 6 min (DefaultJobApiBackOff,
            // MaxJobApiBackOff).
            let limiter = || {
                Box::new(ItemExponentialFailureRateLimiter::new(
                    Duration::from_secs(1),
                    Duration::from_secs(360),
                ))
            };
            Self {
                client,
                pod_control,
                recorder,
                expectations: ControllerExpectations::new(Arc::clone(&config.clock)),
                finalizer_expectations: tracking::FinalizerExpectations::default(),
                backoff: backoff::BackoffStore::default(),
                job_store: job_informer.store(),
                pod_store: pod_informer.store(),
                job_informer: job_informer.clone(),
                pod_informer: pod_informer.clone(),
                queue: RateLimitingQueue::with_rate_limiter("job", limiter()),
                orphan_queue: RateLimitingQueue::with_rate_limiter("job_orphan_pod", limiter()),
                config,
            }
        })
    }

    /// Waits for the caches, then runs `workers` sync loops (and one loop for orphan pods)
    /// until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = CONTROLLER_NAME, "starting controller");
        let synced = wait_for_cache_sync(
            CONTROLLER_NAME,
            &[&self.job_informer, &self.pod_informer],
            &shutdown,
        )
        .await;
        if synced {
            let this = Arc::clone(&self);
            let jobs = worker::run(
                self.queue.clone(),
                workers.max(1),
                shutdown.clone(),
                worker::ErrorPolicy::handle_error(),
                move |key: ObjectKey| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&key).await }
                },
            );
            let this = Arc::clone(&self);
            let orphans = worker::run(
                self.orphan_queue.clone(),
                1,
                shutdown,
                worker::ErrorPolicy::handle_error(),
                move |key: ObjectKey| {
                    let this = Arc::clone(&this);
                    async move { this.sync_orphan_pod(&key).await }
                },
            );
            futures::future::join(jobs, orphans).await;
        }
        self.queue.shutdown();
        self.orphan_queue.shutdown();
        tracing::info!(controller = CONTROLLER_NAME, "shutting down controller");
    }

    /// The work queue of Job keys (exposed for tests and metrics).
    pub fn queue(&self) -> &RateLimitingQueue<ObjectKey> {
        &self.queue
    }

    /// The pod-creation and deletion expectations of every Job (exposed for tests).
    pub fn expectations(&self) -> &ControllerExpectations {
        &self.expectations
    }
}
