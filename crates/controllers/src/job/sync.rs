//! `sync(key)`: read one Job and its pods, decide whether it failed, succeeded or is suspended,
//! and hand over to `manage.rs` and `status.rs` (`syncJob`, `getPodsForJob` and `syncOrphanPod`
//! of kube's job controller).

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::{Job, JobCondition, UncountedTerminatedPods};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, PostParams};
use rkcm_labels::Selector;
use rkcm_runtime::controller_ref::{
    self, controller_of, recheck_owner, ControllerRefManager, OwnerInfo, PodControlPatcher,
};
use rkcm_runtime::events::EventType;
use rkcm_runtime::pod_control::PodControlError;
use rkcm_runtime::ObjectKey;

use super::backoff::BackoffRecord;
use super::conditions::{self as cond, new_condition};
use super::indexed::{self, Intervals};
use super::metrics::{self, SyncAction};
use super::per_index;
use super::pod_failure_policy::{match_pod_failure_policy, REASON_POD_FAILURE_POLICY};
use super::pods::{
    count_ready, count_terminating, filter_active, has_tracking_finalizer, is_pod_failed,
    is_pod_succeeded, remove_tracking_finalizer_patch, JOB_TRACKING_FINALIZER,
};
use super::success_policy::{match_success_policy, REASON_SUCCESS_POLICY};
use super::JobController;

/// `backoffLimit` when the spec has none (the API server defaults it to 6).
const DEFAULT_BACKOFF_LIMIT: i32 = 6;

/// Why a sync failed; the key is retried with rate limiting.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The Job's selector cannot be parsed.
    #[error("invalid selector of job {job}")]
    Selector {
        /// The Job.
        job: ObjectKey,
        /// The parse error.
        #[source]
        source: rkcm_labels::Error,
    },
    /// Adopting or releasing pods failed.
    #[error("failed to claim pods for job {job}")]
    Claim {
        /// The Job.
        job: ObjectKey,
        /// The failure.
        #[source]
        source: controller_ref::Error,
    },
    /// Creating, deleting or patching pods failed.
    #[error("failed to manage pods of job {job}")]
    Pods {
        /// The Job.
        job: ObjectKey,
        /// The first failure.
        #[source]
        source: PodControlError,
    },
    /// Writing `/status` failed.
    #[error("failed to update status of job {job}")]
    Status {
        /// The Job.
        job: ObjectKey,
        /// The failure.
        #[source]
        source: kube::Error,
    },
}

/// What one sync knows about a Job (`syncJobCtx`).
pub(super) struct SyncCtx {
    pub(super) key: ObjectKey,
    /// The working copy whose status is written.
    pub(super) job: Job,
    pub(super) pods: Vec<Arc<Pod>>,
    pub(super) active_pods: Vec<Arc<Pod>>,
    pub(super) ready: i32,
    pub(super) terminating: i32,
    pub(super) succeeded: i32,
    pub(super) expected_removals: HashSet<String>,
    pub(super) finished_condition: Option<JobCondition>,
    pub(super) new_backoff: BackoffRecord,
    pub(super) prev_succeeded_indexes: Intervals,
    pub(super) succeeded_indexes: Intervals,
    /// Failed indexes, with `backoffLimitPerIndex`.
    pub(super) failed_indexes: Option<Intervals>,
    /// Per index, the failed pod kept until its replacement exists (`backoffLimitPerIndex`).
    pub(super) delayed: BTreeMap<usize, Arc<Pod>>,
    /// `status.succeeded` and `status.failed` before this sync, for the metrics.
    pub(super) initial_succeeded: i32,
    pub(super) initial_failed: i32,
}

/// What a sync reports to the metrics.
struct Outcome {
    /// Set once the Job is known to be synced (not deleted, not finished).
    completion_mode: Option<&'static str>,
    action: SyncAction,
}

/// The `completion_mode` label.
pub(super) fn completion_mode(job: &Job) -> &'static str {
    if indexed::is_indexed(job) {
        "Indexed"
    } else {
        "NonIndexed"
    }
}

/// Newly finished pods not yet in the status: succeeded and failed pods that still carry the
/// finalizer, are not in `uncountedTerminatedPods`, are not expected to lose their finalizer and,
/// for Indexed Jobs, have a valid index (`getNewFinishedPods`).
pub fn new_finished_pods(
    job: &Job,
    pods: &[Arc<Pod>],
    expected_removals: &HashSet<String>,
) -> (Vec<Arc<Pod>>, Vec<Arc<Pod>>) {
    let uncounted = job
        .status
        .as_ref()
        .and_then(|s| s.uncounted_terminated_pods.clone())
        .unwrap_or_default();
    let completions = completions(job).unwrap_or(0);
    let valid = |p: &Pod, uncounted: &Option<Vec<String>>| {
        let uid = p.metadata.uid.as_deref().unwrap_or("");
        has_tracking_finalizer(p)
            && !uncounted.iter().flatten().any(|u| u == uid)
            && !expected_removals.contains(uid)
            && (!indexed::is_indexed(job) || indexed::valid_index(p, completions).is_some())
    };
    let succeeded = pods
        .iter()
        .filter(|p| valid(p, &uncounted.succeeded) && is_pod_succeeded(p))
        .cloned()
        .collect();
    let failed = pods
        .iter()
        .filter(|p| valid(p, &uncounted.failed) && is_pod_failed(p, job))
        .cloned()
        .collect();
    (succeeded, failed)
}

/// The message of the first failed pod a `FailJob` rule matches (`getFailJobMessage`).
pub fn fail_job_message(job: &Job, pods: &[Arc<Pod>]) -> Option<String> {
    let policy = job.spec.as_ref()?.pod_failure_policy.as_ref()?;
    pods.iter()
        .filter(|p| is_pod_failed(p, job))
        .find_map(|p| match_pod_failure_policy(Some(policy), p).fail_job_message)
}

/// The value of `spec.managedBy` naming a controller other than this one
/// (`managedByExternalController`).
pub fn managed_by_external_controller(job: &Job) -> Option<&str> {
    job.spec
        .as_ref()?
        .managed_by
        .as_deref()
        .filter(|m| *m != JOB_CONTROLLER_MANAGER)
}

/// `spec.managedBy` of Jobs this controller manages (also the default when unset).
pub const JOB_CONTROLLER_MANAGER: &str = "kubernetes.io/job-controller";

/// `spec.backoffLimit`, defaulted as the API server does: 6, or unlimited when
/// `backoffLimitPerIndex` is set.
fn backoff_limit(job: &Job) -> i32 {
    let spec = job.spec.as_ref();
    match spec.and_then(|s| s.backoff_limit) {
        Some(limit) => limit,
        None if spec.is_some_and(|s| s.backoff_limit_per_index.is_some()) => i32::MAX,
        None => DEFAULT_BACKOFF_LIMIT,
    }
}

/// `spec.completions` as a count.
pub(super) fn completions(job: &Job) -> Option<usize> {
    job.spec
        .as_ref()?
        .completions
        .and_then(|c| usize::try_from(c).ok())
}

/// Whether the Job is suspended.
pub(super) fn is_suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend) == Some(true)
}

/// Whether the restarts of containers of pods still running reach `backoffLimit`, for
/// `restartPolicy: OnFailure` (`pastBackoffLimitOnFailure`).
pub fn past_backoff_limit_on_failure(job: &Job, pods: &[Arc<Pod>]) -> bool {
    let Some(spec) = job.spec.as_ref() else {
        return false;
    };
    let restart_policy = spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref());
    if restart_policy != Some("OnFailure") {
        return false;
    }
    let restarts: i32 = pods
        .iter()
        .filter(|p| {
            matches!(
                crate::replicaset::pod_state::phase(p),
                "Running" | "Pending"
            )
        })
        .filter_map(|p| p.status.as_ref())
        .flat_map(|s| {
            s.init_container_statuses
                .iter()
                .flatten()
                .chain(s.container_statuses.iter().flatten())
        })
        .map(|c| c.restart_count)
        .sum();
    let limit = backoff_limit(job);
    if limit == 0 {
        restarts > 0
    } else {
        restarts >= limit
    }
}

/// The time left before `activeDeadlineSeconds` passes; `None` without a deadline, a start time,
/// or while suspended. Zero once past (`pastActiveDeadline`).
pub fn active_deadline_remaining(job: &Job, now: jiff::Timestamp) -> Option<Duration> {
    if is_suspended(job) {
        return None;
    }
    let seconds = job.spec.as_ref()?.active_deadline_seconds?;
    let start = job.status.as_ref()?.start_time.as_ref()?.0;
    let allowed = jiff::SignedDuration::from_secs(seconds);
    let left = allowed - now.duration_since(start);
    Some(left.try_into().unwrap_or(Duration::ZERO))
}

pub(super) fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

/// kube omits zero counters (`omitempty`).
pub(super) fn omit_zero(n: i32) -> Option<i32> {
    (n != 0).then_some(n)
}

impl JobController {
    /// Syncs the Job with `key`: counts its finished pods, decides whether it failed or
    /// completed, creates or deletes pods unless it waits on expectations, and writes the status.
    /// Not called concurrently for one key.
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let started = std::time::Instant::now();
        let mut outcome = Outcome {
            completion_mode: None,
            action: SyncAction::Reconciling,
        };
        let result = self.sync_job(key, &mut outcome).await;
        if let Err(e) = &result {
            tracing::debug!(%key, error = %e, "sync failed");
        }
        let elapsed = started.elapsed();
        if let Some(mode) = outcome.completion_mode {
            metrics::record_sync(mode, result.is_ok(), outcome.action, elapsed.as_secs_f64());
        }
        tracing::debug!(%key, ?elapsed, "finished syncing job");
        result
    }

    async fn sync_job(&self, key: &ObjectKey, outcome: &mut Outcome) -> Result<(), SyncError> {
        let Some(shared) = self.job_store.get(key) else {
            tracing::debug!(%key, "job has been deleted");
            self.expectations.delete_expectations(key);
            self.finalizer_expectations.delete(key);
            self.backoff.remove(key);
            return Ok(());
        };
        // A Job another controller manages is theirs, even if it was queued before the field
        // was set.
        if let Some(manager) = managed_by_external_controller(&shared) {
            tracing::debug!(%key, manager, "skipping job managed by an external controller");
            return Ok(());
        }
        // A finished Job is never acted on again.
        if cond::is_finished(&shared) {
            self.backoff.remove(key);
            return Ok(());
        }
        let mode = shared
            .spec
            .as_ref()
            .and_then(|s| s.completion_mode.as_deref());
        if !matches!(mode, None | Some("NonIndexed") | Some("Indexed")) {
            self.recorder.event_for(
                &*shared,
                EventType::Warning,
                "UnknownCompletionMode",
                "Skipped Job sync because completion mode is unknown",
            );
            return Ok(());
        }
        outcome.completion_mode = Some(completion_mode(&shared));
        let mut job = (*shared).clone();
        job.status
            .get_or_insert_with(Default::default)
            .uncounted_terminated_pods
            .get_or_insert_with(UncountedTerminatedPods::default);

        // Check expectations before listing pods: a pod that enters the cache afterwards defers
        // the sync to the next event rather than being missed.
        let satisfied = self.expectations.satisfied_expectations(key);
        let pods = self.pods_for_job(&job, key).await?;
        let now = self.config.clock.now();
        let active_pods = filter_active(&pods);
        let expected_removals = self.finalizer_expectations.expected_uids(key);
        let (new_succeeded, new_failed) = new_finished_pods(&job, &pods, &expected_removals);
        let status = job.status.clone().unwrap_or_default();
        let uncounted = status.uncounted_terminated_pods.clone().unwrap_or_default();
        let succeeded = status.succeeded.unwrap_or(0)
            + count(new_succeeded.len())
            + count(uncounted.succeeded.as_ref().map_or(0, Vec::len));
        let policy = job.spec.as_ref().and_then(|s| s.pod_failure_policy.clone());
        let counted_failures = new_failed
            .iter()
            .filter(|p| match_pod_failure_policy(policy.as_ref(), p).count_failed)
            .count();
        let failed = status.failed.unwrap_or(0)
            + count(counted_failures)
            + count(uncounted.failed.as_ref().map_or(0, Vec::len));

        // First start; a Job created suspended starts when resumed.
        if status.start_time.is_none() && !is_suspended(&job) {
            job.status.get_or_insert_with(Default::default).start_time = Some(Time(now));
        }
        let new_backoff = self.backoff.get(key).next(&new_succeeded, &new_failed);
        let mut ctx = SyncCtx {
            key: key.clone(),
            ready: count_ready(&active_pods),
            terminating: count_terminating(&pods),
            active_pods,
            pods,
            succeeded,
            expected_removals,
            finished_condition: None,
            new_backoff,
            prev_succeeded_indexes: Intervals::default(),
            succeeded_indexes: Intervals::default(),
            failed_indexes: None,
            delayed: BTreeMap::new(),
            initial_succeeded: status.succeeded.unwrap_or(0),
            initial_failed: status.failed.unwrap_or(0),
            job,
        };

        let backoff_limit = backoff_limit(&ctx.job);
        // Once success criteria were met the Job can only complete; a FailureTarget can only
        // turn into Failed.
        ctx.finished_condition = cond::find_true(&ctx.job, cond::SUCCESS_CRITERIA_MET).cloned();
        if ctx.finished_condition.is_none() {
            if let Some(target) = cond::find_true(&ctx.job, cond::FAILURE_TARGET) {
                ctx.finished_condition = Some(new_condition(
                    cond::FAILED,
                    "True",
                    target.reason.as_deref().unwrap_or(""),
                    target.message.as_deref().unwrap_or(""),
                    now,
                ));
            } else if let Some(message) = fail_job_message(&ctx.job, &ctx.pods) {
                // Record why before the finalizers (and so the failed pods) go.
                ctx.finished_condition = Some(new_condition(
                    cond::FAILURE_TARGET,
                    "True",
                    REASON_POD_FAILURE_POLICY,
                    &message,
                    now,
                ));
            }
        }
        if ctx.finished_condition.is_none() {
            let remaining_deadline = active_deadline_remaining(&ctx.job, now);
            if failed > backoff_limit || past_backoff_limit_on_failure(&ctx.job, &ctx.pods) {
                ctx.finished_condition = Some(new_condition(
                    cond::FAILURE_TARGET,
                    "True",
                    cond::REASON_BACKOFF_LIMIT_EXCEEDED,
                    cond::MESSAGE_BACKOFF_LIMIT_EXCEEDED,
                    now,
                ));
            } else if remaining_deadline == Some(Duration::ZERO) {
                ctx.finished_condition = Some(new_condition(
                    cond::FAILURE_TARGET,
                    "True",
                    cond::REASON_DEADLINE_EXCEEDED,
                    cond::MESSAGE_DEADLINE_EXCEEDED,
                    now,
                ));
            } else if let Some(left) = remaining_deadline {
                tracing::debug!(%key, next_sync_in = ?left, "job has activeDeadlineSeconds, will sync again");
                self.queue.add_after(key.clone(), left);
            }
        }
        if indexed::is_indexed(&ctx.job) {
            let completions = completions(&ctx.job).unwrap_or(0);
            let (prev, all) = indexed::succeeded_indexes(&ctx.job, &ctx.pods, completions);
            ctx.succeeded = count(all.total());
            if per_index::has_backoff_limit_per_index(&ctx.job) {
                let failed = per_index::failed_indexes(&ctx.job, &ctx.pods, completions);
                if ctx.finished_condition.is_none() {
                    let max_failed = ctx
                        .job
                        .spec
                        .as_ref()
                        .and_then(|s| s.max_failed_indexes)
                        .and_then(|m| usize::try_from(m).ok());
                    let reason = if max_failed.is_some_and(|m| failed.total() > m) {
                        Some((
                            per_index::REASON_MAX_FAILED_INDEXES_EXCEEDED,
                            per_index::MESSAGE_MAX_FAILED_INDEXES_EXCEEDED,
                        ))
                    } else if failed.total() > 0 && failed.total() + all.total() >= completions {
                        Some((
                            per_index::REASON_FAILED_INDEXES,
                            per_index::MESSAGE_FAILED_INDEXES,
                        ))
                    } else {
                        None
                    };
                    ctx.finished_condition = reason.map(|(reason, message)| {
                        new_condition(cond::FAILURE_TARGET, "True", reason, message, now)
                    });
                }
                ctx.delayed = per_index::pods_with_delayed_deletion(
                    &ctx.job,
                    &ctx.pods,
                    &ctx.active_pods,
                    &all,
                    &failed,
                    &ctx.expected_removals,
                    completions,
                );
                ctx.failed_indexes = Some(failed);
            }
            if ctx.finished_condition.is_none() {
                let policy = ctx
                    .job
                    .spec
                    .as_ref()
                    .and_then(|s| s.success_policy.as_ref());
                if let Some(message) = match_success_policy(policy, completions, &all) {
                    ctx.finished_condition = Some(new_condition(
                        cond::SUCCESS_CRITERIA_MET,
                        "True",
                        REASON_SUCCESS_POLICY,
                        &message,
                        now,
                    ));
                }
            }
            ctx.prev_succeeded_indexes = prev;
            ctx.succeeded_indexes = all;
        }

        let mut active = count(ctx.active_pods.len());
        let mut manage_error = None;
        let mut suspend_changed = false;
        if ctx.finished_condition.is_some() {
            // The Job failed (or met its success criteria): its remaining pods must go.
            let pods = ctx.active_pods.clone();
            let (deleted_ready, deleted, error) = self.delete_active_pods(&ctx.job, &pods).await;
            if deleted != active || !satisfied {
                // Pods may still be in flight or keep their finalizers: not finished yet.
                ctx.finished_condition = None;
            }
            active -= deleted;
            ctx.terminating += deleted;
            ctx.ready -= deleted_ready;
            manage_error = error;
        } else {
            let mut manage_called = false;
            if satisfied && ctx.job.metadata.deletion_timestamp.is_none() {
                let (now_active, action, error) = self.manage_job(&mut ctx).await;
                active = now_active;
                outcome.action = action;
                manage_error = error;
                manage_called = true;
            }
            let complete = match ctx.job.spec.as_ref().and_then(|s| s.completions) {
                // Without completions, any success completes the Job once nothing runs.
                None => ctx.succeeded > 0 && active == 0,
                Some(completions) => ctx.succeeded >= completions && active == 0,
            };
            if complete {
                ctx.finished_condition = Some(new_condition(
                    cond::SUCCESS_CRITERIA_MET,
                    "True",
                    cond::REASON_COMPLETIONS_REACHED,
                    cond::MESSAGE_COMPLETIONS_REACHED,
                    now,
                ));
            } else if manage_called {
                suspend_changed = self.update_suspended_condition(&mut ctx.job, now);
            }
        }

        let status = ctx.job.status.get_or_insert_with(Default::default);
        let needs_update = suspend_changed
            || status.active.unwrap_or(0) != active
            || status.ready != Some(ctx.ready)
            || status.terminating != Some(ctx.terminating);
        status.active = omit_zero(active);
        status.ready = Some(ctx.ready);
        status.terminating = Some(ctx.terminating);
        self.track_status_and_remove_finalizers(&mut ctx, needs_update)
            .await?;
        match manage_error {
            Some(source) => Err(SyncError::Pods {
                job: key.clone(),
                source,
            }),
            None => Ok(()),
        }
    }

    /// Sets `Suspended` to match `spec.suspend`, with its event; resuming restarts the
    /// `activeDeadlineSeconds` clock. Returns whether the condition changed.
    fn update_suspended_condition(&self, job: &mut Job, now: jiff::Timestamp) -> bool {
        let suspended = is_suspended(job);
        let (status, reason, message, event) = if suspended {
            ("True", "JobSuspended", "Job suspended", "Suspended")
        } else {
            ("False", "JobResumed", "Job resumed", "Resumed")
        };
        let job_status = job.status.get_or_insert_with(Default::default);
        let conditions = job_status.conditions.get_or_insert_with(Vec::new);
        let changed =
            cond::ensure_status(conditions, cond::SUSPENDED, status, reason, message, now);
        if job_status.conditions.as_ref().is_some_and(Vec::is_empty) {
            job_status.conditions = None;
        }
        if changed {
            if !suspended {
                // activeDeadlineSeconds counts the time the Job is continuously active.
                job_status.start_time = Some(Time(now));
            }
            self.recorder
                .event_for(&*job, EventType::Normal, event, message);
        }
        changed
    }

    /// The pods this Job owns after adopting matching orphans and releasing pods that stopped
    /// matching (`getPodsForJob`). Adopted pods are treated as carrying the tracking finalizer.
    async fn pods_for_job(&self, job: &Job, key: &ObjectKey) -> Result<Vec<Arc<Pod>>, SyncError> {
        let label_selector = job
            .spec
            .as_ref()
            .and_then(|s| s.selector.clone())
            .unwrap_or_default();
        let selector = Selector::from_label_selector(&label_selector).map_err(|source| {
            SyncError::Selector {
                job: key.clone(),
                source,
            }
        })?;
        // The pods this Job may claim: its own and the namespace's orphans. kube lists the whole
        // namespace and the claim skips pods other controllers own; the indices give the same
        // candidates without decoding the namespace.
        let uid = job.metadata.uid.as_deref().unwrap_or("");
        let mut pods = self.pod_store.claimable(key.namespace_str(), uid);
        pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let owner = OwnerInfo::from_resource(job);
        let api: Api<Job> = Api::namespaced(self.client.clone(), key.namespace_str());
        let recheck = owner.clone();
        let can_adopt = move || {
            let (api, info) = (api.clone(), recheck.clone());
            async move { recheck_owner(&api, &info).await }
        };
        let patcher = Arc::new(PodControlPatcher(Arc::clone(&self.pod_control)));
        let claimed =
            ControllerRefManager::<Pod>::with_patcher(patcher, owner, &selector, can_adopt)
                .claim(&pods)
                .await
                .map_err(|source| SyncError::Claim {
                    job: key.clone(),
                    source,
                })?;
        Ok(claimed
            .into_iter()
            .map(|pod| {
                let adopted = !pod
                    .metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|r| r.uid == uid);
                if adopted && !has_tracking_finalizer(&pod) {
                    let mut copy = (*pod).clone();
                    copy.metadata
                        .finalizers
                        .get_or_insert_with(Vec::new)
                        .push(JOB_TRACKING_FINALIZER.into());
                    Arc::new(copy)
                } else {
                    pod
                }
            })
            .collect())
    }

    /// Writes the working copy's status to `/status`; the working copy becomes what the server
    /// returned.
    pub(super) async fn update_status(&self, ctx: &mut SyncCtx) -> Result<(), SyncError> {
        let api: Api<Job> = Api::namespaced(self.client.clone(), ctx.key.namespace_str());
        match api
            .replace_status(&ctx.key.name, &PostParams::default(), &ctx.job)
            .await
        {
            Ok(updated) => {
                ctx.job = updated;
                Ok(())
            }
            Err(source) => {
                tracing::info!(job = %ctx.key, error = %rkcm_runtime::api_error::message(&source), "failed to update job status");
                Err(SyncError::Status {
                    job: ctx.key.clone(),
                    source,
                })
            }
        }
    }

    /// Removes the tracking finalizer from a pod whose Job is gone or finished, or that no Job
    /// controls (`syncOrphanPod`).
    pub(crate) async fn sync_orphan_pod(&self, key: &ObjectKey) -> Result<(), SyncError> {
        let Some(pod) = self.pod_store.get(key) else {
            return Ok(());
        };
        if let Some(controller_ref) = controller_of(&pod.metadata) {
            if controller_ref.kind != "Job" || controller_ref.api_version != "batch/v1" {
                // Not a Job's pod: not ours to touch.
                return Ok(());
            }
            let namespace = key.namespace_str();
            if let Some(job) = self.resolve_controller_ref(namespace, controller_ref) {
                if !cond::is_finished(&job) {
                    // The Job still tracks it.
                    return Ok(());
                }
            }
        }
        let Some(patch) = remove_tracking_finalizer_patch(&pod) else {
            return Ok(());
        };
        let name = pod.metadata.name.as_deref().unwrap_or("");
        match self
            .pod_control
            .patch_pod(key.namespace_str(), name, &patch)
            .await
        {
            Err(e) if !e.is_not_found() => Err(SyncError::Pods {
                job: key.clone(),
                source: e,
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::job::fixtures::{failed_at, indexed_pod, job, pod, ts};
    use crate::job::manage::want_active;
    use crate::job::Config;
    use k8s_openapi::api::batch::v1::JobStatus;
    use k8s_openapi::api::core::v1::{Event, PodCondition};
    use parking_lot::Mutex;
    use rkcm_runtime::events::EventRecorder;
    use rkcm_runtime::informer::InformerFactory;
    use rkcm_runtime::testing::{offline_client, ApiResponse, FakeApi, FakePodControl};
    use rkcm_runtime::FakeClock;
    use tokio::sync::mpsc;

    /// A controller over caches the test seeds: pod calls go to a [`FakePodControl`], status
    /// writes to a [`FakeApi`] that accepts them as sent, time to a [`FakeClock`].
    pub(crate) struct Fixture {
        pub(crate) ctrl: Arc<JobController>,
        pub(crate) pod_control: Arc<FakePodControl>,
        pub(crate) api: FakeApi,
        pub(crate) clock: FakeClock,
        events: Mutex<mpsc::Receiver<Event>>,
    }

    impl Fixture {
        pub(crate) fn new() -> Self {
            let api = FakeApi::new(|req| {
                if req.method == http::Method::PUT && req.path.ends_with("/status") {
                    ApiResponse {
                        status: http::StatusCode::OK,
                        body: req.body.clone(),
                    }
                } else {
                    ApiResponse::not_found("jobs", "unexpected")
                }
            });
            let clock = FakeClock::new(ts(0).0);
            let factory = InformerFactory::new(offline_client(), Duration::ZERO);
            let pod_control = Arc::new(FakePodControl::new());
            let (recorder, events) = EventRecorder::channel("job-controller", 100);
            let ctrl = JobController::with_pod_control(
                &factory,
                api.client(),
                pod_control.clone(),
                recorder,
                Config {
                    sync_batch_period: Duration::ZERO,
                    clock: Arc::new(clock.clone()),
                    ..Config::default()
                },
            );
            Self {
                ctrl,
                pod_control,
                api,
                clock,
                events: Mutex::new(events),
            }
        }

        pub(crate) fn add_job(&self, job: Job) -> ObjectKey {
            let key = ObjectKey::from_obj(&job);
            self.ctrl.job_store.insert(Arc::new(job));
            key
        }

        pub(crate) fn add_pod(&self, pod: Pod) {
            self.ctrl.pod_store.insert(Arc::new(pod));
        }

        /// Takes the next key from the queue, or `None` if nothing is queued right now.
        pub(crate) async fn next_key(&self) -> Option<ObjectKey> {
            if self.ctrl.queue().is_empty() {
                return None;
            }
            let key = tokio::time::timeout(Duration::from_secs(5), self.ctrl.queue().get())
                .await
                .expect("queue get likely deadlocked")?;
            self.ctrl.queue().done(&key);
            Some(key)
        }

        /// Every status written, in order.
        fn statuses(&self) -> Vec<Job> {
            self.api
                .requests()
                .into_iter()
                .filter(|r| r.method == http::Method::PUT && r.path.ends_with("/status"))
                .map(|r| serde_json::from_value(r.body).expect("a Job was written"))
                .collect()
        }

        /// The last status written.
        fn status(&self) -> JobStatus {
            self.statuses()
                .pop()
                .and_then(|j| j.status)
                .expect("a status was written")
        }

        /// Puts the last written Job back in the cache, as the informer would.
        fn observe_written_job(&self) {
            let written = self.statuses().pop().expect("a status was written");
            self.ctrl.job_store.insert(Arc::new(written));
        }

        /// Events recorded so far, as `(reason, message)`.
        fn events(&self) -> Vec<(String, String)> {
            let mut rx = self.events.lock();
            let mut out = Vec::new();
            while let Ok(e) = rx.try_recv() {
                out.push((e.reason.unwrap_or_default(), e.message.unwrap_or_default()));
            }
            out
        }
    }

    fn ready(mut p: Pod) -> Pod {
        p.status.get_or_insert_with(Default::default).conditions = Some(vec![PodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            ..Default::default()
        }]);
        p
    }

    fn condition_types(status: &JobStatus) -> Vec<(String, String)> {
        status
            .conditions
            .iter()
            .flatten()
            .map(|c| (c.type_.clone(), c.reason.clone().unwrap_or_default()))
            .collect()
    }

    fn pair(a: &str, b: &str) -> (String, String) {
        (a.to_string(), b.to_string())
    }

    /// TestControllerSyncJob "job start".
    #[tokio::test]
    async fn a_new_job_creates_parallelism_pods_with_the_tracking_finalizer() {
        let f = Fixture::new();
        let key = f.add_job(job("j", Some(2), Some(5)));
        f.ctrl.sync(&key).await.expect("sync");
        let creates = f.pod_control.creates();
        assert_eq!(creates.len(), 2);
        for c in &creates {
            let finalizers = c.template.metadata.clone().and_then(|m| m.finalizers);
            assert_eq!(finalizers, Some(vec![JOB_TRACKING_FINALIZER.to_string()]));
            assert_eq!(c.controller_ref.kind, "Job");
        }
        let status = f.status();
        assert_eq!(status.active, Some(2));
        assert_eq!(status.ready, Some(0));
        assert_eq!(status.terminating, Some(0));
        assert_eq!(status.start_time, Some(ts(0)));
        // Expectations hold the next sync until the pods are observed.
        assert!(!f.ctrl.expectations().satisfied_expectations(&key));
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 2);
    }

    /// TestControllerSyncJob "WQ job start" and "remaining completions below parallelism".
    #[tokio::test]
    async fn active_pods_are_bounded_by_remaining_completions() {
        let f = Fixture::new();
        let key = f.add_job(job("wq", Some(3), None));
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 3);

        let f = Fixture::new();
        let mut j = job("j", Some(4), Some(3));
        j.status = Some(JobStatus {
            succeeded: Some(2),
            ..Default::default()
        });
        let key = f.add_job(j);
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 1);
    }

    /// TestControllerSyncJob "correct # of pods" and "pending pods".
    #[tokio::test]
    async fn enough_active_pods_means_nothing_to_do_but_counting_ready_ones() {
        let f = Fixture::new();
        let j = job("j", Some(2), Some(5));
        let key = f.add_job(j.clone());
        f.add_pod(ready(pod(&j, "a", "Running")));
        f.add_pod(pod(&j, "b", "Pending"));
        f.ctrl.sync(&key).await.expect("sync");
        assert!(f.pod_control.creates().is_empty());
        assert!(f.pod_control.deletes().is_empty());
        let status = f.status();
        assert_eq!((status.active, status.ready), (Some(2), Some(1)));
    }

    /// TestControllerSyncJob "too few active pods": a success is recorded, then counted once its
    /// finalizer is gone, and a replacement is created.
    #[tokio::test]
    async fn a_succeeded_pod_is_counted_through_uncounted_terminated_pods() {
        let f = Fixture::new();
        let j = job("j", Some(2), Some(5));
        let key = f.add_job(j.clone());
        f.add_pod(pod(&j, "a", "Running"));
        f.add_pod(pod(&j, "b", "Succeeded"));
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 1);
        let statuses = f.statuses();
        // First write records the UID, the second counts it after the finalizer went.
        let first = statuses[0].status.clone().expect("status");
        let uncounted = first.uncounted_terminated_pods.expect("uncounted");
        assert_eq!(uncounted.succeeded, Some(vec!["uid-b".to_string()]));
        assert_eq!(first.succeeded, None);
        let patches = f.pod_control.patches();
        assert_eq!(patches.len(), 1);
        assert_eq!(patches[0].1, "b");
        assert_eq!(
            patches[0].2,
            serde_json::json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}})
        );
        let last = f.status();
        assert_eq!(last.succeeded, Some(1));
        assert_eq!(last.active, Some(2));
        assert!(last
            .uncounted_terminated_pods
            .is_none_or(|u| u.succeeded.is_none() && u.failed.is_none()));
    }

    /// TestControllerSyncJob "too many active pods" (after parallelism was lowered).
    #[tokio::test]
    async fn excess_active_pods_are_deleted_not_ready_first_without_being_counted() {
        let f = Fixture::new();
        let j = job("j", Some(2), Some(5));
        let key = f.add_job(j.clone());
        f.add_pod(ready(pod(&j, "a", "Running")));
        f.add_pod(pod(&j, "b", "Running"));
        f.add_pod(ready(pod(&j, "c", "Running")));
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.deleted_names(), ["b"]);
        // Its finalizer goes first: a pod deleted for scaling down is not a failure.
        assert_eq!(f.pod_control.patches()[0].1, "b");
        let status = f.status();
        assert_eq!((status.active, status.terminating), (Some(2), Some(1)));
        assert_eq!(status.failed, None);
    }

    /// TestControllerSyncJob "job finish": SuccessCriteriaMet, then Complete with
    /// completionTime and the `Completed` event.
    #[tokio::test]
    async fn reaching_completions_completes_the_job() {
        let f = Fixture::new();
        let j = job("j", Some(2), Some(2));
        let key = f.add_job(j.clone());
        f.add_pod(pod(&j, "a", "Succeeded"));
        f.add_pod(pod(&j, "b", "Succeeded"));
        f.clock.step(Duration::from_secs(7));
        f.ctrl.sync(&key).await.expect("sync");
        assert!(f.pod_control.creates().is_empty());
        let status = f.status();
        assert_eq!(status.succeeded, Some(2));
        assert_eq!(
            condition_types(&status),
            [
                pair("SuccessCriteriaMet", "CompletionsReached"),
                pair("Complete", "CompletionsReached")
            ]
        );
        assert_eq!(status.completion_time, Some(ts(7)));
        assert_eq!(f.events(), [pair("Completed", "Job completed")]);
        // A finished Job is left alone.
        f.observe_written_job();
        let writes = f.statuses().len();
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.statuses().len(), writes);
    }

    /// TestControllerSyncJob "WQ job finishing" and "WQ job all finished".
    #[tokio::test]
    async fn a_work_queue_job_completes_once_a_pod_succeeded_and_none_runs() {
        let f = Fixture::new();
        let j = job("wq", Some(2), None);
        let key = f.add_job(j.clone());
        f.add_pod(pod(&j, "a", "Running"));
        f.add_pod(pod(&j, "b", "Succeeded"));
        f.ctrl.sync(&key).await.expect("sync");
        assert!(f.pod_control.creates().is_empty());
        assert!(condition_types(&f.status()).is_empty());

        let f = Fixture::new();
        let key = f.add_job(j.clone());
        f.add_pod(pod(&j, "b", "Succeeded"));
        f.ctrl.sync(&key).await.expect("sync");
        assert!(condition_types(&f.status()).contains(&pair("Complete", "CompletionsReached")));
    }

    /// TestControllerSyncJob "too many job failures": FailureTarget while pods terminate,
    /// Failed once none is left, with the `BackoffLimitExceeded` event.
    #[tokio::test]
    async fn exceeding_the_backoff_limit_fails_the_job_after_its_pods_terminate() {
        let f = Fixture::new();
        let mut j = job("j", Some(2), Some(5));
        j.spec.as_mut().expect("spec").backoff_limit = Some(0);
        let key = f.add_job(j.clone());
        f.add_pod(pod(&j, "running", "Running"));
        f.add_pod(failed_at(&j, "failed", "Failed", -5));
        f.ctrl.sync(&key).await.expect("sync");
        // The running pod is deleted with its finalizer kept, so it is counted as failed.
        assert_eq!(f.pod_control.deleted_names(), ["running"]);
        let status = f.status();
        assert_eq!(
            condition_types(&status),
            [pair("FailureTarget", "BackoffLimitExceeded")]
        );
        assert_eq!(status.failed, Some(2));
        assert_eq!(status.terminating, Some(1));
        assert!(f.events().is_empty());

        // The pod is gone: the Job fails.
        f.observe_written_job();
        f.ctrl
            .pod_store
            .remove(&ObjectKey::new("default", "running"));
        f.ctrl
            .pod_store
            .remove(&ObjectKey::new("default", "failed"));
        f.ctrl.sync(&key).await.expect("sync");
        let status = f.status();
        assert_eq!(
            condition_types(&status),
            [
                pair("FailureTarget", "BackoffLimitExceeded"),
                pair("Failed", "BackoffLimitExceeded")
            ]
        );
        assert_eq!(status.completion_time, None);
        assert_eq!(
            f.events(),
            [pair(
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit"
            )]
        );
    }

    /// TestSyncJobPastDeadline.
    #[tokio::test]
    async fn a_job_past_its_active_deadline_fails() {
        let f = Fixture::new();
        let mut j = job("j", Some(1), Some(1));
        j.spec.as_mut().expect("spec").active_deadline_seconds = Some(10);
        j.status = Some(JobStatus {
            start_time: Some(ts(0)),
            ..Default::default()
        });
        let key = f.add_job(j.clone());
        f.add_pod(pod(&j, "a", "Running"));
        f.clock.step(Duration::from_secs(9));
        f.ctrl.sync(&key).await.expect("sync");
        assert!(f.pod_control.deletes().is_empty());
        f.clock.step(Duration::from_secs(1));
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.deleted_names(), ["a"]);
        assert_eq!(
            condition_types(&f.status()),
            [pair("FailureTarget", "DeadlineExceeded")]
        );
        f.observe_written_job();
        f.ctrl.pod_store.remove(&ObjectKey::new("default", "a"));
        f.ctrl.sync(&key).await.expect("sync");
        assert!(condition_types(&f.status()).contains(&pair("Failed", "DeadlineExceeded")));
        assert_eq!(
            f.events(),
            [pair(
                "DeadlineExceeded",
                "Job was active longer than specified deadline"
            )]
        );
    }

    /// TestControllerSyncJob "suspending a job with satisfied expectations" and "resuming a
    /// suspended job".
    #[tokio::test]
    async fn suspending_deletes_active_pods_and_resuming_restarts_the_clock() {
        let f = Fixture::new();
        let mut j = job("j", Some(2), Some(4));
        j.spec.as_mut().expect("spec").suspend = Some(true);
        j.status = Some(JobStatus {
            start_time: Some(ts(-100)),
            ..Default::default()
        });
        let key = f.add_job(j.clone());
        f.add_pod(ready(pod(&j, "a", "Running")));
        f.add_pod(pod(&j, "b", "Running"));
        f.ctrl.sync(&key).await.expect("sync");
        let mut deleted = f.pod_control.deleted_names();
        deleted.sort();
        assert_eq!(deleted, ["a", "b"]);
        let status = f.status();
        assert_eq!(
            condition_types(&status),
            [pair("Suspended", "JobSuspended")]
        );
        assert_eq!(
            (status.active, status.ready, status.terminating),
            (None, Some(0), Some(2))
        );
        assert_eq!(f.events(), [pair("Suspended", "Job suspended")]);

        // Resume, with the pods gone.
        f.observe_written_job();
        let mut resumed = (*f.ctrl.job_store.get(&key).expect("job")).clone();
        resumed.spec.as_mut().expect("spec").suspend = Some(false);
        f.add_job(resumed);
        for name in ["a", "b"] {
            f.ctrl.pod_store.remove(&ObjectKey::new("default", name));
            f.ctrl
                .expectations()
                .deletion_observed(&key, &ObjectKey::new("default", name));
        }
        f.clock.step(Duration::from_secs(30));
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 2);
        let status = f.status();
        let suspended = status.conditions.clone().expect("conditions");
        assert_eq!(suspended[0].status, "False");
        assert_eq!(suspended[0].reason.as_deref(), Some("JobResumed"));
        assert_eq!(status.start_time, Some(ts(30)));
        assert_eq!(f.events(), [pair("Resumed", "Job resumed")]);
    }

    /// TestJobBackoff / TestSyncJobWithJobBackoffLimit: a failed pod delays its replacement by
    /// 10 s, then the next by 20 s.
    #[tokio::test(start_paused = true)]
    async fn a_failed_pod_is_replaced_after_the_backoff() {
        let f = Fixture::new();
        let j = job("j", Some(1), Some(1));
        let key = f.add_job(j.clone());
        f.add_pod(failed_at(&j, "a", "Failed", -2));
        f.ctrl.sync(&key).await.expect("sync");
        assert!(f.pod_control.creates().is_empty(), "backing off");
        assert_eq!(f.status().failed, Some(1));
        // Requeued for when the backoff ends (8 s).
        tokio::time::advance(Duration::from_secs(7)).await;
        assert_eq!(f.next_key().await, None);
        tokio::time::advance(Duration::from_secs(2)).await;
        tokio::task::yield_now().await;
        assert_eq!(f.next_key().await, Some(key.clone()));

        f.observe_written_job();
        f.ctrl.pod_store.remove(&ObjectKey::new("default", "a"));
        f.clock.step(Duration::from_secs(8));
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 1);
    }

    #[tokio::test]
    async fn a_stale_cache_never_creates_twice() {
        let f = Fixture::new();
        let key = f.add_job(job("j", Some(3), Some(3)));
        f.pod_control
            .fail_creates_from(2, || PodControlError::Conflict);
        let err = f.ctrl.sync(&key).await.expect_err("creation failed");
        assert!(matches!(err, SyncError::Pods { .. }));
        // One pod created, one failed, one skipped: only the created one is awaited.
        assert_eq!(f.pod_control.creates().len(), 1);
        assert!(!f.ctrl.expectations().satisfied_expectations(&key));
        assert_eq!(f.ctrl.expectations().get_expectations(&key), Some((1, 0)));
        f.pod_control.clear();
        f.ctrl.sync(&key).await.expect("sync");
        assert!(f.pod_control.creates().is_empty());
        f.ctrl.expectations().creation_observed(&key);
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(
            f.pod_control.creates().len(),
            3,
            "the cache still shows no pod"
        );
    }

    /// TestControllerSyncJob "indexed job start" and "indexed job completed".
    #[tokio::test]
    async fn an_indexed_job_creates_pending_indexes_and_records_completed_ones() {
        let f = Fixture::new();
        let mut j = job("pi", Some(2), Some(4));
        j.spec.as_mut().expect("spec").completion_mode = Some("Indexed".into());
        let key = f.add_job(j.clone());
        f.add_pod(indexed_pod(&j, "pi-0-x", "Succeeded", 0));
        f.add_pod(indexed_pod(&j, "pi-2-x", "Running", 2));
        f.ctrl.sync(&key).await.expect("sync");
        let creates = f.pod_control.creates();
        assert_eq!(creates.len(), 1);
        let meta = creates[0].template.metadata.clone().expect("meta");
        assert_eq!(meta.generate_name.as_deref(), Some("pi-1-"));
        assert_eq!(
            meta.annotations.expect("annotations")[indexed::JOB_COMPLETION_INDEX_ANNOTATION],
            "1"
        );
        assert_eq!(
            creates[0]
                .template
                .spec
                .as_ref()
                .and_then(|s| s.hostname.as_deref()),
            Some("pi-1")
        );
        let status = f.status();
        assert_eq!(status.completed_indexes.as_deref(), Some("0"));
        assert_eq!(status.succeeded, Some(1));
        assert_eq!(status.active, Some(2));
    }

    fn exit_code_policy(action: &str, code: i32) -> k8s_openapi::api::batch::v1::PodFailurePolicy {
        use k8s_openapi::api::batch::v1::{
            PodFailurePolicy, PodFailurePolicyOnExitCodesRequirement, PodFailurePolicyRule,
        };
        PodFailurePolicy {
            rules: vec![PodFailurePolicyRule {
                action: action.into(),
                on_exit_codes: Some(PodFailurePolicyOnExitCodesRequirement {
                    container_name: None,
                    operator: "In".into(),
                    values: vec![code],
                }),
                on_pod_conditions: None,
            }],
        }
    }

    fn exited(mut p: Pod, code: i32) -> Pod {
        use k8s_openapi::api::core::v1::ContainerStatus;
        p.status
            .get_or_insert_with(Default::default)
            .container_statuses = Some(vec![ContainerStatus {
            name: "main".into(),
            ..rkcm_runtime::testing::terminated_container_status(code)
        }]);
        p
    }

    /// TestSyncJobWithJobPodFailurePolicy "job marked already as failure target with FailJob".
    #[tokio::test]
    async fn a_fail_job_rule_fails_the_job_with_the_pod_failure_policy_reason() {
        let f = Fixture::new();
        let mut j = job("j", Some(2), Some(2));
        j.spec.as_mut().expect("spec").pod_failure_policy = Some(exit_code_policy("FailJob", 42));
        let key = f.add_job(j.clone());
        f.add_pod(exited(failed_at(&j, "a", "Failed", -1), 42));
        f.add_pod(pod(&j, "b", "Running"));
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.deleted_names(), ["b"]);
        let status = f.status();
        assert_eq!(
            condition_types(&status),
            [pair("FailureTarget", "PodFailurePolicy")]
        );
        let message = status.conditions.expect("conditions")[0].message.clone();
        assert_eq!(
            message.as_deref(),
            Some("Container main for pod default/a failed with exit code 42 matching FailJob rule at index 0")
        );
    }

    /// TestSyncJobWithJobPodFailurePolicy "Ignore rule": the failure neither counts nor backs off
    /// the limit.
    #[tokio::test]
    async fn an_ignored_failure_is_not_counted_against_the_backoff_limit() {
        let f = Fixture::new();
        let mut j = job("j", Some(1), Some(1));
        let spec = j.spec.as_mut().expect("spec");
        spec.pod_failure_policy = Some(exit_code_policy("Ignore", 137));
        spec.backoff_limit = Some(0);
        let key = f.add_job(j.clone());
        f.add_pod(exited(failed_at(&j, "a", "Failed", -100), 137));
        f.ctrl.sync(&key).await.expect("sync");
        let status = f.status();
        assert!(condition_types(&status).is_empty());
        assert_eq!(status.failed, None);
        assert_eq!(f.pod_control.patches().len(), 1, "its finalizer still goes");
        assert_eq!(f.pod_control.creates().len(), 1, "and it is replaced");
    }

    /// TestSyncJobWithJobSuccessPolicy "job with successPolicy; job has SuccessCriteriaMet
    /// condition": the remaining pods go and the Job completes with reason SuccessPolicy.
    #[tokio::test]
    async fn meeting_the_success_policy_completes_the_job_early() {
        use k8s_openapi::api::batch::v1::{SuccessPolicy, SuccessPolicyRule};
        let f = Fixture::new();
        let mut j = job("j", Some(3), Some(3));
        let spec = j.spec.as_mut().expect("spec");
        spec.completion_mode = Some("Indexed".into());
        spec.success_policy = Some(SuccessPolicy {
            rules: vec![SuccessPolicyRule {
                succeeded_indexes: Some("0".into()),
                succeeded_count: None,
            }],
        });
        let key = f.add_job(j.clone());
        f.add_pod(indexed_pod(&j, "j-0", "Succeeded", 0));
        f.add_pod(indexed_pod(&j, "j-1", "Running", 1));
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.deleted_names(), ["j-1"]);
        let status = f.status();
        assert_eq!(
            condition_types(&status),
            [pair("SuccessCriteriaMet", "SuccessPolicy")]
        );
        assert_eq!(status.completed_indexes.as_deref(), Some("0"));
        assert_eq!(
            status.failed, None,
            "pods of a successful Job are not failures"
        );

        f.observe_written_job();
        f.ctrl.pod_store.remove(&ObjectKey::new("default", "j-1"));
        f.ctrl.pod_store.remove(&ObjectKey::new("default", "j-0"));
        f.ctrl.sync(&key).await.expect("sync");
        let status = f.status();
        assert_eq!(
            condition_types(&status),
            [
                pair("SuccessCriteriaMet", "SuccessPolicy"),
                pair("Complete", "SuccessPolicy")
            ]
        );
        assert_eq!(f.events(), [pair("Completed", "Job completed")]);
    }

    /// TestSyncJobWithJobManagedBy.
    #[tokio::test]
    async fn a_job_managed_by_another_controller_is_left_alone() {
        let f = Fixture::new();
        let mut j = job("j", Some(2), Some(2));
        j.spec.as_mut().expect("spec").managed_by = Some("example.com/other".into());
        let key = f.add_job(j.clone());
        f.ctrl.sync(&key).await.expect("sync");
        assert!(f.pod_control.creates().is_empty());
        assert!(f.statuses().is_empty());
        j.spec.as_mut().expect("spec").managed_by = Some(JOB_CONTROLLER_MANAGER.into());
        f.add_job(j);
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.pod_control.creates().len(), 2);
    }

    /// TestControllerSyncJob "indexed job with podReplacementPolicy Failed": a terminating pod
    /// keeps its index until it has failed, so the replacement waits.
    #[tokio::test]
    async fn with_replacement_policy_failed_a_terminating_pod_is_not_replaced_yet() {
        let f = Fixture::new();
        let mut j = job("pi", Some(2), Some(2));
        let spec = j.spec.as_mut().expect("spec");
        spec.completion_mode = Some("Indexed".into());
        spec.pod_replacement_policy = Some("Failed".into());
        let key = f.add_job(j.clone());
        let mut terminating = indexed_pod(&j, "pi-0-a", "Running", 0);
        terminating.metadata.deletion_timestamp = Some(ts(0));
        f.add_pod(terminating);
        f.ctrl.sync(&key).await.expect("sync");
        let creates = f.pod_control.creates();
        assert_eq!(creates.len(), 1);
        let meta = creates[0].template.metadata.clone().expect("meta");
        assert_eq!(meta.generate_name.as_deref(), Some("pi-1-"));
        let status = f.status();
        assert_eq!((status.terminating, status.failed), (Some(1), None));

        // Without the policy, the deleted pod counts as failed and its index is replaced.
        let f = Fixture::new();
        let mut j = job("pi", Some(2), Some(2));
        j.spec.as_mut().expect("spec").completion_mode = Some("Indexed".into());
        let key = f.add_job(j.clone());
        let mut terminating = indexed_pod(&j, "pi-0-a", "Running", 0);
        terminating.metadata.deletion_timestamp = Some(ts(0));
        terminating.metadata.creation_timestamp = Some(ts(-100));
        f.add_pod(terminating);
        f.ctrl.sync(&key).await.expect("sync");
        assert_eq!(f.status().failed, Some(1));
    }

    fn per_index_pod(j: &Job, name: &str, phase: &str, index: usize, failures: u32) -> Pod {
        let mut p = if phase == "Failed" {
            let mut p = failed_at(j, name, phase, -100);
            p.metadata.annotations = indexed_pod(j, name, phase, index).metadata.annotations;
            p
        } else {
            indexed_pod(j, name, phase, index)
        };
        p.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(
                per_index::JOB_INDEX_FAILURE_COUNT_ANNOTATION.into(),
                failures.to_string(),
            );
        p
    }

    /// TestBackoffLimitPerIndex: a failed pod is kept until its replacement carries the
    /// index's failure count; an index out of retries fails, and once every index is done the
    /// Job fails with FailedIndexes.
    #[tokio::test]
    async fn with_backoff_limit_per_index_each_index_fails_on_its_own() {
        let mut j = job("pi", Some(2), Some(2));
        let spec = j.spec.as_mut().expect("spec");
        spec.completion_mode = Some("Indexed".into());
        spec.backoff_limit_per_index = Some(1);
        spec.backoff_limit = None;

        // First failure of index 0: replaced with failure count 1, the failed pod kept.
        let f = Fixture::new();
        let key = f.add_job(j.clone());
        f.add_pod(per_index_pod(&j, "pi-0-a", "Failed", 0, 0));
        f.add_pod(per_index_pod(&j, "pi-1-a", "Running", 1, 0));
        f.ctrl.sync(&key).await.expect("sync");
        let creates = f.pod_control.creates();
        assert_eq!(creates.len(), 1);
        let annotations = creates[0]
            .template
            .metadata
            .clone()
            .and_then(|m| m.annotations)
            .expect("annotations");
        assert_eq!(annotations[indexed::JOB_COMPLETION_INDEX_ANNOTATION], "0");
        assert_eq!(
            annotations[per_index::JOB_INDEX_FAILURE_COUNT_ANNOTATION],
            "1"
        );
        assert!(
            f.pod_control.patches().is_empty(),
            "the failed pod keeps its finalizer"
        );
        assert_eq!(f.status().failed_indexes.as_deref(), Some(""));

        // Its replacement failed too: index 0 is out of retries and not replaced.
        let f = Fixture::new();
        let key = f.add_job(j.clone());
        f.add_pod(per_index_pod(&j, "pi-0-b", "Failed", 0, 1));
        f.add_pod(per_index_pod(&j, "pi-1-a", "Running", 1, 0));
        f.ctrl.sync(&key).await.expect("sync");
        assert!(f.pod_control.creates().is_empty());
        let status = f.status();
        assert_eq!(status.failed_indexes.as_deref(), Some("0"));
        assert_eq!(status.failed, Some(1));
        assert!(condition_types(&status).is_empty());

        // Index 1 succeeds: every index is done, one failed.
        f.observe_written_job();
        f.ctrl
            .pod_store
            .remove(&ObjectKey::new("default", "pi-0-b"));
        f.add_pod(per_index_pod(&j, "pi-1-a", "Succeeded", 1, 0));
        f.ctrl.sync(&key).await.expect("sync");
        let status = f.status();
        assert_eq!(
            condition_types(&status)[0],
            pair("FailureTarget", "FailedIndexes")
        );
    }

    #[test]
    fn want_active_follows_kube() {
        let with = |p, c| job("j", p, c);
        assert_eq!(want_active(&with(Some(2), Some(5)), 0, 0), 2);
        assert_eq!(want_active(&with(Some(2), Some(5)), 0, 4), 1);
        assert_eq!(want_active(&with(Some(2), Some(5)), 0, 7), 0);
        assert_eq!(want_active(&with(Some(2), None), 1, 0), 2);
        assert_eq!(want_active(&with(Some(2), None), 1, 1), 1);
        assert_eq!(want_active(&with(Some(0), Some(5)), 3, 0), 0);
    }

    /// Ported from job_controller_test.go `TestGetNewFinishedPods`.
    #[test]
    fn new_finished_pods_skip_counted_uncounted_and_expected_ones() {
        let mut j = job("j", Some(3), Some(3));
        j.status = Some(JobStatus {
            uncounted_terminated_pods: Some(UncountedTerminatedPods {
                succeeded: Some(vec!["uid-b".into()]),
                failed: Some(vec!["uid-e".into()]),
            }),
            ..Default::default()
        });
        let mut counted = pod(&j, "c", "Succeeded");
        counted.metadata.finalizers = None;
        let mut deleted = pod(&j, "g", "Running");
        deleted.metadata.deletion_timestamp = Some(ts(0));
        let pods: Vec<Arc<Pod>> = [
            pod(&j, "a", "Succeeded"),
            pod(&j, "b", "Succeeded"),
            counted,
            pod(&j, "d", "Failed"),
            pod(&j, "e", "Failed"),
            pod(&j, "f", "Failed"),
            deleted,
            pod(&j, "h", "Running"),
        ]
        .into_iter()
        .map(Arc::new)
        .collect();
        let expected: HashSet<String> = ["uid-f".to_string()].into();
        let (succeeded, failed) = new_finished_pods(&j, &pods, &expected);
        let names = |v: &[Arc<Pod>]| -> Vec<String> {
            v.iter()
                .map(|p| p.metadata.name.clone().unwrap_or_default())
                .collect()
        };
        assert_eq!(names(&succeeded), ["a"]);
        assert_eq!(names(&failed), ["d", "g"]);
    }

    /// TestPastDeadlineJobFinished and the suspended case of TestSyncJobPastDeadline.
    #[test]
    fn the_deadline_counts_from_start_and_not_while_suspended() {
        let mut j = job("j", Some(1), Some(1));
        assert_eq!(active_deadline_remaining(&j, ts(0).0), None);
        j.spec.as_mut().expect("spec").active_deadline_seconds = Some(10);
        j.status = Some(JobStatus {
            start_time: Some(ts(0)),
            ..Default::default()
        });
        assert_eq!(
            active_deadline_remaining(&j, ts(4).0),
            Some(Duration::from_secs(6))
        );
        assert_eq!(
            active_deadline_remaining(&j, ts(15).0),
            Some(Duration::ZERO)
        );
        j.spec.as_mut().expect("spec").suspend = Some(true);
        assert_eq!(active_deadline_remaining(&j, ts(15).0), None);
    }

    /// TestPastBackoffLimitOnFailure.
    #[test]
    fn container_restarts_count_against_the_backoff_limit_with_restart_on_failure() {
        use k8s_openapi::api::core::v1::ContainerStatus;
        let mut j = job("j", Some(1), Some(1));
        j.spec.as_mut().expect("spec").backoff_limit = Some(2);
        let mut p = pod(&j, "a", "Running");
        p.status
            .get_or_insert_with(Default::default)
            .container_statuses = Some(vec![ContainerStatus {
            restart_count: 2,
            ..Default::default()
        }]);
        let pods = [Arc::new(p)];
        assert!(
            !past_backoff_limit_on_failure(&j, &pods),
            "restartPolicy Never"
        );
        let template = &mut j.spec.as_mut().expect("spec").template;
        template.spec.as_mut().expect("spec").restart_policy = Some("OnFailure".into());
        assert!(past_backoff_limit_on_failure(&j, &pods));
        j.spec.as_mut().expect("spec").backoff_limit = Some(3);
        assert!(!past_backoff_limit_on_failure(&j, &pods));
    }

    #[tokio::test]
    async fn an_orphan_pod_loses_its_finalizer_but_a_tracked_one_keeps_it() {
        let f = Fixture::new();
        let j = job("j", Some(1), Some(1));
        let p = pod(&j, "p", "Succeeded");
        let pod_key = ObjectKey::from_obj(&p);
        f.add_pod(p);
        f.ctrl.sync_orphan_pod(&pod_key).await.expect("sync");
        assert_eq!(f.pod_control.patches().len(), 1, "its Job is gone");

        f.pod_control.clear();
        f.add_job(j);
        f.ctrl.sync_orphan_pod(&pod_key).await.expect("sync");
        assert!(
            f.pod_control.patches().is_empty(),
            "its Job still tracks it"
        );
    }
}
