//! The TTL-after-finished controller: deletes finished Jobs `ttlSecondsAfterFinished` after they
//! finished, their pods with them.
//!
//! Mirrors `pkg/controller/ttlafterfinished/ttlafterfinished_controller.go`: Jobs that are added
//! or updated, finished and carry a TTL are queued; a sync whose TTL has not run out requeues the
//! Job for when it will; one whose TTL has run out checks again on a fresh GET (the TTL may have
//! been changed since the cache saw it) and deletes the Job with foreground propagation and a UID
//! precondition.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DeleteParams, Preconditions, PropagationPolicy};
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{api_error, worker, Clock, ObjectKey, Shutdown};

/// Why a Job could not be cleaned up; it is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Job is finished but says nowhere when.
    #[error("unable to find the time when the Job {0} finished")]
    NoFinishTime(ObjectKey),
    /// Reading or deleting the Job failed.
    #[error("error cleaning up Job {key}")]
    Api {
        /// The Job.
        key: ObjectKey,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// When a Job is to go, as `timeLeft` computes it.
#[derive(Debug, PartialEq, Eq)]
pub enum Ttl {
    /// Not finished, no TTL, or being deleted: nothing to do.
    NotApplicable,
    /// The TTL runs out after this long.
    Remaining(Duration),
    /// The TTL ran out at this time.
    Expired(Timestamp),
}

/// Whether `job` has finished: a `Complete` or `Failed` condition that is `True` (`IsJobFinished`).
fn finish_time(job: &Job) -> Option<Option<Timestamp>> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        .map(|c| c.last_transition_time.as_ref().map(|t| t.0))
}

/// The TTL state of `job` at `now` (`needsCleanup`, `getFinishAndExpireTime`, `timeLeft`).
pub fn ttl(job: &Job, now: Timestamp) -> Result<Ttl, Error> {
    let ttl = job.spec.as_ref().and_then(|s| s.ttl_seconds_after_finished);
    let (Some(ttl), Some(finished), None) =
        (ttl, finish_time(job), &job.metadata.deletion_timestamp)
    else {
        return Ok(Ttl::NotApplicable);
    };
    let finished_at = finished.ok_or_else(|| Error::NoFinishTime(ObjectKey::from_obj(job)))?;
    let expire_at = finished_at
        .checked_add(jiff::SignedDuration::from_secs(i64::from(ttl)))
        .unwrap_or(finished_at);
    if expire_at <= now {
        return Ok(Ttl::Expired(expire_at));
    }
    let remaining = now.duration_until(expire_at);
    Ok(Ttl::Remaining(
        Duration::try_from(remaining).unwrap_or(Duration::ZERO),
    ))
}

/// `ttl_after_finished_controller_job_deletion_duration_seconds`: from a Job's expiry to its
/// deletion.
fn deletion_duration() -> &'static Histogram {
    static METRIC: OnceLock<Histogram> = OnceLock::new();
    METRIC.get_or_init(|| {
        rkcm_runtime::metrics::register(
            "ttl_after_finished_controller_job_deletion_duration_seconds",
            "The time it took to delete the job since it became eligible for deletion",
            Histogram::new(exponential_buckets(0.1, 2.0, 14)),
        )
    })
}

/// Deletes finished Jobs whose TTL ran out.
pub struct TtlAfterFinishedController {
    client: kube::Client,
    queue: RateLimitingQueue<ObjectKey>,
    jobs: SharedInformer<Job>,
    clock: Arc<dyn Clock>,
}

fn wants_cleanup(job: &Job) -> bool {
    job.metadata.deletion_timestamp.is_none()
        && job
            .spec
            .as_ref()
            .is_some_and(|s| s.ttl_seconds_after_finished.is_some())
        && finish_time(job).is_some()
}

impl TtlAfterFinishedController {
    /// Registers the controller's handlers on the factory's Job informer.
    pub fn new(
        factory: &InformerFactory,
        client: kube::Client,
        clock: Arc<dyn Clock>,
    ) -> Arc<Self> {
        let _ = deletion_duration();
        let queue = RateLimitingQueue::new("ttl_jobs_to_delete");
        let jobs = factory.informer::<Job>();
        let q = queue.clone();
        jobs.add_event_handler(move |note: Notification<Job>| match note {
            Notification::Add(job) | Notification::Update { new: job, .. } => {
                if wants_cleanup(&job) {
                    q.add(ObjectKey::from_obj(&*job));
                }
            }
            Notification::Delete(_) => {}
        });
        Arc::new(Self {
            client,
            queue,
            jobs,
            clock,
        })
    }

    /// Whether the Job cache has synced.
    pub fn has_synced(&self) -> bool {
        self.jobs.has_synced()
    }

    /// Runs `workers` sync loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = "ttl-after-finished", "starting controller");
        let synced: [&dyn HasSynced; 1] = [&self.jobs];
        if wait_for_cache_sync("TTL after finished", &synced, &shutdown).await {
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                workers,
                shutdown,
                worker::ErrorPolicy::handle_error(),
                move |key| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&key).await }
                },
            )
            .await;
        }
        tracing::info!(
            controller = "ttl-after-finished",
            "shutting down controller"
        );
    }

    /// Requeues `job` for when its TTL runs out, or tells when it ran out.
    fn process_ttl(&self, key: &ObjectKey, job: &Job) -> Result<Option<Timestamp>, Error> {
        match ttl(job, self.clock.now())? {
            Ttl::NotApplicable => Ok(None),
            Ttl::Remaining(left) => {
                self.queue.add_after(key.clone(), left);
                Ok(None)
            }
            Ttl::Expired(at) => Ok(Some(at)),
        }
    }

    /// Deletes the Job `key` if its TTL ran out (`processJob`).
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), Error> {
        let Some(cached) = self.jobs.store().get(key) else {
            return Ok(());
        };
        if self.process_ttl(key, &cached)?.is_none() {
            return Ok(());
        }
        let api: Api<Job> = Api::namespaced(self.client.clone(), key.namespace_str());
        let api_err = |source| Error::Api {
            key: key.clone(),
            source,
        };
        // The cached TTL may be stale: decide again on the Job as it is now.
        let Some(fresh) = api.get_opt(&key.name).await.map_err(api_err)? else {
            return Ok(());
        };
        let Some(expired_at) = self.process_ttl(key, &fresh)? else {
            return Ok(());
        };
        let params = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Foreground),
            preconditions: Some(Preconditions {
                uid: fresh.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        tracing::debug!(job = %key, "cleaning up job");
        match api.delete(&key.name, &params).await {
            Ok(_) => {}
            Err(e) if api_error::is_not_found(&e) => return Ok(()),
            Err(e) => return Err(api_err(e)),
        }
        let late = expired_at.duration_until(self.clock.now());
        deletion_duration().observe(late.as_secs_f64().max(0.0));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::batch::v1::{JobCondition, JobSpec, JobStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("a timestamp")
    }

    fn job(ttl: Option<i32>, condition: Option<(&str, &str, Option<&str>)>) -> Job {
        let mut job = Job::default();
        job.metadata.name = Some("j".into());
        job.metadata.namespace = Some("ns".into());
        job.spec = Some(JobSpec {
            ttl_seconds_after_finished: ttl,
            ..JobSpec::default()
        });
        job.status = Some(JobStatus {
            conditions: condition.map(|(type_, status, at)| {
                vec![JobCondition {
                    type_: type_.into(),
                    status: status.into(),
                    last_transition_time: at.map(|t| Time(ts(t))),
                    ..JobCondition::default()
                }]
            }),
            ..JobStatus::default()
        });
        job
    }

    const FINISHED: Option<(&str, &str, Option<&str>)> =
        Some(("Complete", "True", Some("2025-01-01T00:00:00Z")));

    /// Ported from ttlafterfinished_controller_test.go `TestTimeLeft`.
    #[test]
    fn time_left_counts_from_the_finish_condition() {
        let now = ts("2025-01-01T00:00:05Z");
        assert_eq!(ttl(&job(None, FINISHED), now).unwrap(), Ttl::NotApplicable);
        assert_eq!(ttl(&job(Some(10), None), now).unwrap(), Ttl::NotApplicable);
        assert_eq!(
            ttl(&job(Some(10), Some(("Complete", "False", None))), now).unwrap(),
            Ttl::NotApplicable
        );
        assert_eq!(
            ttl(&job(Some(10), FINISHED), now).unwrap(),
            Ttl::Remaining(Duration::from_secs(5))
        );
        let failed = Some(("Failed", "True", Some("2025-01-01T00:00:00Z")));
        assert_eq!(
            ttl(&job(Some(5), failed), now).unwrap(),
            Ttl::Expired(ts("2025-01-01T00:00:05Z"))
        );
        assert_eq!(
            ttl(&job(Some(0), FINISHED), now).unwrap(),
            Ttl::Expired(ts("2025-01-01T00:00:00Z"))
        );
    }

    #[test]
    fn a_finished_job_without_a_finish_time_is_an_error_and_a_deleted_one_is_left_alone() {
        let now = ts("2025-01-01T00:00:05Z");
        let no_time = job(Some(10), Some(("Complete", "True", None)));
        assert!(matches!(ttl(&no_time, now), Err(Error::NoFinishTime(_))));
        let mut deleting = job(Some(0), FINISHED);
        deleting.metadata.deletion_timestamp = Some(Time(now));
        assert_eq!(ttl(&deleting, now).unwrap(), Ttl::NotApplicable);
        assert!(!wants_cleanup(&deleting));
        assert!(wants_cleanup(&job(Some(0), FINISHED)));
    }
}
