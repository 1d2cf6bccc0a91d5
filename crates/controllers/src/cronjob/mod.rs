//! The CronJob controller: creates a Job for every start time of each batch/v1 CronJob
//! (k8s.io/kubernetes `pkg/controller/cronjob`, the v2 controller).
//!
//! Event handlers (`handlers.rs`) only enqueue keys; `sync.rs` reconciles a CronJob with its Jobs
//! and requeues it for its next start time (`add_after`, no polling). The decisions are pure
//! functions: when to run (`schedule.rs`) and which Jobs to make, track and remove (`jobs.rs`).
//! API calls go through the traits of `control.rs`.

pub mod control;
mod handlers;
pub mod jobs;
pub mod metrics;
pub mod schedule;
mod sync;

use std::sync::{Arc, Weak};

use jiff::tz::TimeZone;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::Client;
use rkcm_runtime::events::EventRecorder;
use rkcm_runtime::informer::{wait_for_cache_sync, InformerFactory, SharedInformer, Store};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{worker, Clock, ObjectKey, Shutdown, SystemClock};

use control::{CronJobControl, JobControl, RealControl};
pub use sync::SyncError;

/// Name of the controller (`--controllers` and its event source).
pub const CONTROLLER_NAME: &str = "cronjob-controller";
/// Default number of workers (`--concurrent-cron-job-syncs`).
pub const DEFAULT_WORKERS: usize = 5;

/// Settings of a [`CronJobController`].
#[derive(Clone)]
pub struct Config {
    /// Wall clock for start times, deadlines and status times.
    pub clock: Arc<dyn Clock>,
    /// The zone of schedules without `spec.timeZone` or a `TZ=` prefix: the controller's local
    /// zone, as kube reads them in `time.Local`.
    pub local_zone: TimeZone,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            local_zone: TimeZone::system(),
        }
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("local_zone", &self.local_zone.iana_name())
            .finish_non_exhaustive()
    }
}

/// Runs the Jobs of every CronJob on its schedule and reports them in its status.
///
/// Safe to share: handlers and workers run concurrently; a key is never synced by two workers at
/// once (the queue guarantees it).
pub struct CronJobController {
    job_control: Arc<dyn JobControl>,
    cron_job_control: Arc<dyn CronJobControl>,
    recorder: EventRecorder,
    job_informer: SharedInformer<Job>,
    cron_job_informer: SharedInformer<CronJob>,
    job_store: Store<Job>,
    cron_job_store: Store<CronJob>,
    queue: RateLimitingQueue<ObjectKey>,
    config: Config,
}

impl CronJobController {
    /// The controller on the factory's Job and CronJob informers, calling the API with `client`
    /// and recording events with `recorder` (source `cronjob-controller`).
    pub fn new(
        factory: &InformerFactory,
        client: Client,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let control = Arc::new(RealControl::new(client));
        Self::with_controls(factory, control.clone(), control, recorder, config)
    }

    /// The controller with injected API calls (tests use fakes).
    pub fn with_controls(
        factory: &InformerFactory,
        job_control: Arc<dyn JobControl>,
        cron_job_control: Arc<dyn CronJobControl>,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let _ = metrics::job_creation_skew();
        let job_informer = factory.informer::<Job>();
        let cron_job_informer = factory.informer::<CronJob>();
        Arc::new_cyclic(|weak: &Weak<Self>| {
            let on_job = weak.clone();
            job_informer.add_event_handler(move |note| {
                if let Some(this) = on_job.upgrade() {
                    this.on_job(note);
                }
            });
            let on_cron_job = weak.clone();
            cron_job_informer.add_event_handler(move |note| {
                if let Some(this) = on_cron_job.upgrade() {
                    this.on_cron_job(note);
                }
            });
            Self {
                job_control,
                cron_job_control,
                recorder,
                job_store: job_informer.store(),
                cron_job_store: cron_job_informer.store(),
                job_informer: job_informer.clone(),
                cron_job_informer: cron_job_informer.clone(),
                // kube's DefaultTypedControllerRateLimiter.
                queue: RateLimitingQueue::new("cronjob"),
                config,
            }
        })
    }

    /// Waits for the caches, then runs `workers` sync loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = CONTROLLER_NAME, "starting controller");
        let synced = wait_for_cache_sync(
            CONTROLLER_NAME,
            &[&self.job_informer, &self.cron_job_informer],
            &shutdown,
        )
        .await;
        if synced {
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                workers.max(1),
                shutdown,
                worker::ErrorPolicy::handle_error(),
                move |key: ObjectKey| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&key).await }
                },
            )
            .await;
        }
        self.queue.shutdown();
        tracing::info!(controller = CONTROLLER_NAME, "shutting down controller");
    }

    /// The work queue of CronJob keys (exposed for tests and metrics).
    pub fn queue(&self) -> &RateLimitingQueue<ObjectKey> {
        &self.queue
    }
}
