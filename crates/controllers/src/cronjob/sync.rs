//! `sync(key)`: reconciles one CronJob with its Jobs — history cleanup, `status.active`, the Job
//! of the most recent unmet start time — and requeues it for its next start time (`sync`,
//! `syncCronJob`, `cleanupFinishedJobs` of kube's `cronjob_controllerv2.go`).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use rkcm_runtime::api_error;
use rkcm_runtime::controller_ref::controller_of;
use rkcm_runtime::events::EventType;
use rkcm_runtime::ObjectKey;

use super::jobs::{
    add_to_active_list, delete_from_active_list, finished_condition, in_active_list,
    in_active_list_by_name, is_job_finished, is_job_succeeded, job_from_template, job_reference,
    jobs_to_be_removed, owned_by,
};
use super::schedule::{self, job_name, rfc1123z};
use super::{metrics, CronJobController};

/// Errors syncing a CronJob; the key is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// Reading the CronJob from the API server failed.
    #[error("failed to get cronjob {key}")]
    GetCronJob {
        /// The CronJob.
        key: ObjectKey,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// Reading one of its Jobs from the API server failed.
    #[error("failed to get job {key}")]
    GetJob {
        /// The Job.
        key: ObjectKey,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// Concurrency policy Replace could not delete the running Job.
    #[error("could not replace job {0}")]
    Replace(ObjectKey),
    /// Creating the Job failed.
    #[error("failed to create job {key}")]
    CreateJob {
        /// The Job.
        key: ObjectKey,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// Writing the CronJob's status failed.
    #[error("failed to update status of cronjob {key}")]
    UpdateStatus {
        /// The CronJob.
        key: ObjectKey,
        /// The cause.
        #[source]
        source: kube::Error,
    },
}

/// What [`CronJobController::sync_cron_job`] decided.
#[derive(Debug, Default)]
pub(crate) struct Synced {
    /// When to sync again, if at all.
    pub(crate) requeue_after: Option<Duration>,
    /// Whether the CronJob's status changed and must be written.
    pub(crate) update_status: bool,
    /// What failed, if anything.
    pub(crate) error: Option<SyncError>,
}

impl Synced {
    fn done(update_status: bool) -> Self {
        Self {
            update_status,
            ..Self::default()
        }
    }

    fn failed(update_status: bool, error: SyncError) -> Self {
        Self {
            update_status,
            error: Some(error),
            requeue_after: None,
        }
    }

    fn requeue(update_status: bool, after: Option<Duration>) -> Self {
        Self {
            requeue_after: after,
            update_status,
            error: None,
        }
    }
}

fn key_of(namespace: Option<&str>, name: Option<&str>) -> ObjectKey {
    ObjectKey::new(namespace.unwrap_or(""), name.unwrap_or(""))
}

impl CronJobController {
    /// Reconciles the CronJob `key` (`sync`): cleans up finished Jobs beyond the history
    /// limits, runs [`Self::sync_cron_job`], writes the status once if anything changed, and
    /// queues the key again for the next start time.
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let Some(cached) = self.cron_job_store.get(key) else {
            tracing::debug!(cronjob = %key, "cronjob not found, may be it is deleted");
            return Ok(());
        };
        let jobs = self.jobs_to_be_reconciled(&cached);
        // Every change to the CronJob goes to one copy, written once.
        let mut cj = (*cached).clone();
        let cleaned = self.cleanup_finished_jobs(&mut cj, &jobs).await;
        let synced = self.sync_cron_job(&mut cj, &jobs).await;
        if let Some(err) = &synced.error {
            tracing::debug!(cronjob = %key, error = %api_error::chain(err), "error reconciling cronjob");
        }
        if cleaned || synced.update_status {
            self.cron_job_control
                .update_status(&cj)
                .await
                .map_err(|source| SyncError::UpdateStatus {
                    key: key.clone(),
                    source,
                })?;
        }
        if let Some(after) = synced.requeue_after {
            tracing::trace!(cronjob = %key, ?after, "re-queuing cronjob");
            self.queue.add_after(key.clone(), after);
            return Ok(());
        }
        synced.error.map_or(Ok(()), Err)
    }

    /// `getJobsToBeReconciled`: the Jobs in the CronJob's namespace whose controller reference
    /// names it, whatever their labels.
    fn jobs_to_be_reconciled(&self, cj: &CronJob) -> Vec<Arc<Job>> {
        let namespace = cj.metadata.namespace.as_deref().unwrap_or("");
        let name = cj.metadata.name.as_deref().unwrap_or("");
        let all = self.job_store.list_by_namespace(namespace);
        owned_by(name, all.iter()).into_iter().cloned().collect()
    }

    /// `cleanupFinishedJobs`: deletes the oldest finished Jobs beyond the history limits;
    /// whether the status changed.
    pub(crate) async fn cleanup_finished_jobs(&self, cj: &mut CronJob, jobs: &[Arc<Job>]) -> bool {
        let refs: Vec<&Job> = jobs.iter().map(|j| &**j).collect();
        let mut update_status = false;
        for job in jobs_to_be_removed(cj, &refs) {
            if self.delete_job(cj, job).await {
                update_status = true;
            }
        }
        update_status
    }

    /// `deleteJob`: deletes `job` and drops it from `status.active`; whether it was deleted.
    async fn delete_job(&self, cj: &mut CronJob, job: &Job) -> bool {
        let namespace = job.metadata.namespace.as_deref().unwrap_or("");
        let name = job.metadata.name.as_deref().unwrap_or("");
        if let Err(err) = self.job_control.delete_job(namespace, name).await {
            let message = api_error::message(&err);
            self.recorder.event_for(
                &*cj,
                EventType::Warning,
                "FailedDelete",
                format!("Deleted job: {message}"),
            );
            tracing::error!(job = %key_of(Some(namespace), Some(name)), error = %message, "error deleting job from cronjob");
            return false;
        }
        delete_from_active_list(cj, job.metadata.uid.as_deref().unwrap_or(""));
        self.recorder.event_for(
            &*cj,
            EventType::Normal,
            "SuccessfulDelete",
            format!("Deleted job {name}"),
        );
        true
    }

    /// `syncCronJob`: updates `status.active`, `lastSuccessfulTime` and `lastScheduleTime` in
    /// `cj` and creates the Job of the most recent unmet start time if the schedule, deadline,
    /// suspension and concurrency policy allow it.
    pub(crate) async fn sync_cron_job(&self, cj: &mut CronJob, jobs: &[Arc<Job>]) -> Synced {
        let now = self.config.clock.now();
        let mut update_status = false;
        let namespace = cj.metadata.namespace.clone().unwrap_or_default();
        let name = cj.metadata.name.clone().unwrap_or_default();
        let cj_key = ObjectKey::new(namespace.clone(), name.clone());

        let mut children = HashSet::new();
        for job in jobs {
            let uid = job.metadata.uid.clone().unwrap_or_default();
            children.insert(uid.clone());
            let found = in_active_list(cj, &uid);
            let job_name = job.metadata.name.as_deref().unwrap_or("");
            if !found && !is_job_finished(job) {
                // The cached CronJob may predate the status update that listed this Job.
                let fresh = match self.cron_job_control.get_cron_job(&namespace, &name).await {
                    Ok(fresh) => fresh,
                    Err(source) => {
                        return Synced::failed(
                            update_status,
                            SyncError::GetCronJob {
                                key: cj_key,
                                source,
                            },
                        )
                    }
                };
                if in_active_list(&fresh, &uid) {
                    // kube carries on with the fresh CronJob; so does this sync.
                    *cj = fresh;
                    continue;
                }
                // Created just before a crash and before the status update, or by someone
                // who wants it adopted.
                self.recorder.event_for(
                    &*cj,
                    EventType::Warning,
                    "UnexpectedJob",
                    format!("Saw a job that the controller did not create or forgot: {job_name}"),
                );
            } else if is_job_finished(job) {
                if found {
                    let condition = finished_condition(job).unwrap_or_default().to_string();
                    delete_from_active_list(cj, &uid);
                    self.recorder.event_for(
                        &*cj,
                        EventType::Normal,
                        "SawCompletedJob",
                        format!("Saw completed job: {job_name}, condition: {condition}"),
                    );
                    update_status = true;
                }
                if is_job_succeeded(job) {
                    let completion = job.status.as_ref().and_then(|s| s.completion_time.clone());
                    let status = cj.status.get_or_insert_with(Default::default);
                    if status.last_successful_time.is_none() {
                        status.last_successful_time = completion.clone();
                        update_status = true;
                    }
                    if let (Some(done), Some(last)) = (&completion, &status.last_successful_time) {
                        if done.0 > last.0 {
                            status.last_successful_time = completion.clone();
                            update_status = true;
                        }
                    }
                }
            }
        }

        // Drop Jobs that no longer exist from the active list, or the CronJob could stay active
        // forever. Ask the API server: the cache may just be slow.
        let active = cj
            .status
            .as_ref()
            .and_then(|s| s.active.clone())
            .unwrap_or_default();
        for reference in active {
            let uid = reference.uid.clone().unwrap_or_default();
            if children.contains(&uid) {
                continue;
            }
            let job_ns = reference.namespace.as_deref().unwrap_or("");
            let job_name = reference.name.as_deref().unwrap_or("");
            match self.job_control.get_job(job_ns, job_name).await {
                Err(err) if api_error::is_not_found(&err) => {
                    self.recorder.event_for(
                        &*cj,
                        EventType::Normal,
                        "MissingJob",
                        format!("Active job went missing: {job_name}"),
                    );
                    delete_from_active_list(cj, &uid);
                    update_status = true;
                }
                Err(source) => {
                    return Synced::failed(
                        update_status,
                        SyncError::GetJob {
                            key: key_of(Some(job_ns), Some(job_name)),
                            source,
                        },
                    )
                }
                // Missing from the cache but present in the API server.
                Ok(_) => {}
            }
        }

        if cj.metadata.deletion_timestamp.is_some() {
            // Being deleted: nothing but the status update.
            return Synced::done(update_status);
        }

        let time_zone = schedule::time_zone_of(cj).map(str::to_string);
        let annotation_zone = match schedule::load_location(time_zone.as_deref().unwrap_or("")) {
            Ok(zone) => zone,
            Err(err) => {
                let tz = time_zone.unwrap_or_default();
                tracing::debug!(cronjob = %cj_key, time_zone = tz, "not starting job because timeZone is invalid");
                self.recorder.event_for(
                    &*cj,
                    EventType::Warning,
                    "UnknownTimeZone",
                    format!("invalid timeZone: {tz:?}: {err}"),
                );
                return Synced::done(update_status);
            }
        };

        if cj.spec.as_ref().and_then(|s| s.suspend) == Some(true) {
            tracing::debug!(cronjob = %cj_key, "not starting job because the cron is suspended");
            return Synced::done(update_status);
        }

        let schedule_text = cj
            .spec
            .as_ref()
            .map(|s| s.schedule.clone())
            .unwrap_or_default();
        if schedule::has_tz_prefix(cj) {
            self.recorder.event_for(
                &*cj,
                EventType::Warning,
                "UnsupportedSchedule",
                format!(
                    "CRON_TZ or TZ used in schedule {schedule_text:?} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details"
                ),
            );
        }
        let sched = match schedule::parse(cj, &self.config.local_zone) {
            Ok(sched) => sched,
            Err(err) => {
                tracing::info!(cronjob = %cj_key, schedule = schedule_text, error = %err, "unparseable schedule");
                self.recorder.event_for(
                    &*cj,
                    EventType::Warning,
                    "UnparseableSchedule",
                    format!("unparseable schedule: {schedule_text:?} : {err}"),
                );
                return Synced::done(update_status);
            }
        };
        let requeue = |cj: &CronJob| schedule::next_schedule_time_duration(cj, now, &sched);

        let unmet = match schedule::next_schedule_time(cj, now, &sched) {
            Ok(unmet) => unmet,
            Err(err) => {
                tracing::info!(cronjob = %cj_key, schedule = schedule_text, error = %err, "invalid schedule");
                self.recorder.event_for(
                    &*cj,
                    EventType::Warning,
                    "InvalidSchedule",
                    format!("invalid schedule: {schedule_text} : {err}"),
                );
                return Synced::done(update_status);
            }
        };
        if unmet.too_many_missed {
            self.recorder.event_for(
                &*cj,
                EventType::Warning,
                "TooManyMissedTimes",
                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew",
            );
            tracing::info!(cronjob = %cj_key, "too many missed times");
        }
        let Some(scheduled) = unmet.scheduled else {
            // Only after a restart: otherwise the queue wakes the CronJob at a start time.
            tracing::debug!(cronjob = %cj_key, "no unmet start times");
            return Synced::requeue(update_status, requeue(cj));
        };

        let deadline = cj.spec.as_ref().and_then(|s| s.starting_deadline_seconds);
        if let Some(seconds) = deadline {
            let latest = schedule::shift(scheduled, seconds);
            if latest < now {
                tracing::debug!(cronjob = %cj_key, "missed starting window");
                self.recorder.event_for(
                    &*cj,
                    EventType::Warning,
                    "MissSchedule",
                    format!(
                        "Missed scheduled time to start a job: {}",
                        rfc1123z(scheduled)
                    ),
                );
                return Synced::requeue(update_status, requeue(cj));
            }
        }

        let last_schedule = cj
            .status
            .as_ref()
            .and_then(|s| s.last_schedule_time.as_ref())
            .map(|t| t.0);
        if in_active_list_by_name(cj, &namespace, &job_name(&name, scheduled))
            || last_schedule == Some(scheduled)
        {
            tracing::debug!(cronjob = %cj_key, %scheduled, "not starting job because the scheduled time is already processed");
            return Synced::requeue(update_status, requeue(cj));
        }

        let policy = cj
            .spec
            .as_ref()
            .and_then(|s| s.concurrency_policy.clone())
            .unwrap_or_default();
        let active = cj
            .status
            .as_ref()
            .and_then(|s| s.active.clone())
            .unwrap_or_default();
        if policy == "Forbid" && !active.is_empty() {
            // The cache may miss a running Job, so Forbid is best effort, as in kube.
            tracing::debug!(cronjob = %cj_key, "not starting job because prior execution is still running and concurrency policy is Forbid");
            self.recorder.event_for(
                &*cj,
                EventType::Normal,
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid",
            );
            return Synced::requeue(update_status, requeue(cj));
        }
        if policy == "Replace" {
            for reference in &active {
                let job_ns = reference.namespace.as_deref().unwrap_or("");
                let job_name = reference.name.as_deref().unwrap_or("");
                let key = key_of(Some(job_ns), Some(job_name));
                tracing::debug!(job = %key, "deleting job that was still running at next scheduled start time");
                let job = match self.job_control.get_job(job_ns, job_name).await {
                    Ok(job) => job,
                    Err(source) => {
                        self.recorder.event_for(
                            &*cj,
                            EventType::Warning,
                            "FailedGet",
                            format!("Get job: {}", api_error::message(&source)),
                        );
                        return Synced::failed(update_status, SyncError::GetJob { key, source });
                    }
                };
                if !self.delete_job(cj, &job).await {
                    return Synced::failed(update_status, SyncError::Replace(key));
                }
                update_status = true;
            }
        }

        let request = job_from_template(cj, scheduled, &annotation_zone);
        let request_name = request.metadata.name.clone().unwrap_or_default();
        let request_key = ObjectKey::new(namespace.clone(), request_name.clone());
        let (created, already_existed) =
            match self.job_control.create_job(&namespace, &request).await {
                Ok(job) => (job, false),
                Err(err) if api_error::is_namespace_terminating(&err) => {
                    // Every create in a namespace being deleted fails: nothing to do.
                    return Synced::failed(
                        update_status,
                        SyncError::CreateJob {
                            key: request_key,
                            source: err,
                        },
                    );
                }
                Err(err) if api_error::is_already_exists(&err) => {
                    // Made by someone else (who then keeps the status), or by this controller
                    // before a status update that failed: then list it as active now.
                    let job = match self.job_control.get_job(&namespace, &request_name).await {
                        Ok(job) => job,
                        Err(source) => {
                            return Synced::failed(
                                update_status,
                                SyncError::GetJob {
                                    key: request_key,
                                    source,
                                },
                            )
                        }
                    };
                    let controlled = controller_of(&job.metadata)
                        .is_some_and(|r| Some(r.uid.as_str()) == cj.metadata.uid.as_deref());
                    if !controlled || in_active_list(cj, job.metadata.uid.as_deref().unwrap_or(""))
                    {
                        return Synced::done(update_status);
                    }
                    (job, true)
                }
                Err(source) => {
                    self.recorder.event_for(
                        &*cj,
                        EventType::Warning,
                        "FailedCreate",
                        format!("Error creating job: {}", api_error::message(&source)),
                    );
                    return Synced::failed(
                        update_status,
                        SyncError::CreateJob {
                            key: request_key,
                            source,
                        },
                    );
                }
            };

        let created_name = created.metadata.name.clone().unwrap_or_default();
        if already_existed {
            tracing::info!(cronjob = %cj_key, job = %request_key, "job already exists");
        } else {
            let created_at = created
                .metadata
                .creation_timestamp
                .as_ref()
                .map_or(now, |t| t.0);
            let skew = created_at.duration_since(scheduled).as_secs_f64();
            metrics::job_creation_skew().observe(skew);
            tracing::debug!(cronjob = %cj_key, job = %request_key, "created job");
            self.recorder.event_for(
                &*cj,
                EventType::Normal,
                "SuccessfulCreate",
                format!("Created job {created_name}"),
            );
        }

        // The Job's name is the lock: should this process stop before the status update, the
        // next sync finds the Job by name instead of creating it again.
        add_to_active_list(cj, job_reference(&created));
        cj.status
            .get_or_insert_with(Default::default)
            .last_schedule_time = Some(Time(scheduled));
        update_status = true;
        Synced::requeue(update_status, requeue(cj))
    }
}

#[cfg(test)]
mod tests;
