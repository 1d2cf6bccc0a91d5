//! Creating and deleting a Job's pods: how many should run, which go first, slow-start
//! creation with expectations (`manageJob`, `activePodsForRemoval`, `deleteJobPods` and
//! `deleteActivePods` of kube's job controller).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use rkcm_runtime::pod_control::PodControlError;
use rkcm_runtime::slow_start::{slow_start_batch, SLOW_START_INITIAL_BATCH_SIZE};
use rkcm_runtime::ObjectKey;

use super::indexed;
use super::metrics::SyncAction;
use super::per_index;
use super::pods::{
    is_terminating, only_replace_failed_pods, rank_for_removal, remove_tracking_finalizer_patch,
    JOB_TRACKING_FINALIZER,
};
use super::sync::{completions, count, is_suspended, SyncCtx};
use super::{JobController, MAX_POD_CREATE_DELETE_PER_SYNC};
use crate::replicaset::pod_state::is_pod_ready;

/// How many pods should be active (`manageJob`): with completions, no more than remain;
/// without, `parallelism` until the first success, then whatever still runs.
pub fn want_active(job: &Job, active: i32, succeeded: i32) -> i32 {
    let spec = job.spec.as_ref();
    let parallelism = spec.and_then(|s| s.parallelism).unwrap_or(1);
    match spec.and_then(|s| s.completions) {
        None if succeeded > 0 => active,
        None => parallelism,
        Some(completions) => (completions - succeeded).min(parallelism).max(0),
    }
}

/// The active pods to delete so that at least `rm_at_least` go: for Indexed Jobs first the pods
/// without a valid index and the duplicates of an index, then by rank (`activePodsForRemoval`).
pub fn active_pods_for_removal(job: &Job, pods: &[Arc<Pod>], rm_at_least: usize) -> Vec<Arc<Pod>> {
    let (mut rm, left) = if indexed::is_indexed(job) {
        indexed::duplicated_index_pods_for_removal(pods, completions(job).unwrap_or(0))
    } else {
        (Vec::new(), pods.to_vec())
    };
    if rm.len() < rm_at_least {
        rm.extend(rank_for_removal(&left, rm_at_least - rm.len()));
    }
    rm
}

impl JobController {
    /// Creates or deletes pods towards the wanted number of active pods, at most
    /// [`MAX_POD_CREATE_DELETE_PER_SYNC`] per sync and never both in one sync; deletes every
    /// active pod of a suspended Job (`manageJob`). Returns the active count afterwards.
    pub(super) async fn manage_job(
        &self,
        ctx: &mut SyncCtx,
    ) -> (i32, SyncAction, Option<PodControlError>) {
        let key = ctx.key.clone();
        let active = count(ctx.active_pods.len());
        if is_suspended(&ctx.job) {
            tracing::debug!(%key, active, "deleting all active pods in suspended job");
            let victims =
                active_pods_for_removal(&ctx.job, &ctx.active_pods, ctx.active_pods.len());
            let (ready, removed, error) = self.delete_job_pods(&ctx.job, &key, &victims).await;
            ctx.terminating += removed;
            ctx.ready -= ready;
            return (active - removed, SyncAction::PodsDeleted, error);
        }
        let want = want_active(&ctx.job, active, ctx.succeeded);
        let rm_at_least = usize::try_from(active - want).unwrap_or(0);
        let mut victims = active_pods_for_removal(&ctx.job, &ctx.active_pods, rm_at_least);
        victims.truncate(MAX_POD_CREATE_DELETE_PER_SYNC);
        if !victims.is_empty() {
            tracing::debug!(%key, deleting = victims.len(), target = want, "too many pods running for job");
            let (ready, removed, error) = self.delete_job_pods(&ctx.job, &key, &victims).await;
            ctx.terminating += removed;
            ctx.ready -= ready;
            // Deletion takes precedence; creations wait for the next sync.
            return (active - removed, SyncAction::PodsDeleted, error);
        }
        // With podReplacementPolicy Failed, a terminating pod is replaced once it has failed.
        let terminating = if only_replace_failed_pods(&ctx.job) {
            ctx.terminating
        } else {
            0
        };
        let diff = want - terminating - active;
        if diff <= 0 {
            return (active, SyncAction::Tracking, None);
        }
        let per_index = per_index::has_backoff_limit_per_index(&ctx.job);
        let remaining = if per_index {
            // Each index backs off on its own, below.
            Duration::ZERO
        } else {
            ctx.new_backoff.remaining_time(
                self.config.clock.now(),
                self.config.pod_failure_backoff,
                self.config.max_pod_failure_backoff,
            )
        };
        if !remaining.is_zero() {
            // kube reports 0 active here; the pods that run are still active, so report them.
            tracing::debug!(%key, ?remaining, "backing off before creating pods");
            self.queue.add_after(key, remaining);
            return (active, SyncAction::PodsCreated, None);
        }
        let mut diff = usize::try_from(diff)
            .unwrap_or(0)
            .min(MAX_POD_CREATE_DELETE_PER_SYNC);
        let mut template = ctx.job.spec.clone().unwrap_or_default().template;
        let job_name = ctx.job.metadata.name.clone().unwrap_or_default();
        let indexes = if indexed::is_indexed(&ctx.job) {
            let completions = completions(&ctx.job).unwrap_or(0);
            let mut taken = ctx.active_pods.clone();
            if only_replace_failed_pods(&ctx.job) {
                // A terminating pod still holds its index until it has failed.
                taken.extend(ctx.pods.iter().filter(|p| is_terminating(p)).cloned());
            }
            let not_pending = match &ctx.failed_indexes {
                Some(failed) => ctx.succeeded_indexes.merge(failed),
                None => ctx.succeeded_indexes.clone(),
            };
            let mut indexes =
                indexed::first_pending_indexes(&taken, &not_pending, diff, completions);
            if per_index {
                // Only indexes whose own backoff has passed; else wait for the nearest.
                let now = self.config.clock.now();
                let wait = |ix: &usize| {
                    per_index::remaining_time_for_index(
                        ctx.delayed.get(ix).map(|p| &**p),
                        now,
                        self.config.pod_failure_backoff,
                        self.config.max_pod_failure_backoff,
                    )
                };
                let soonest = indexes.iter().map(wait).min();
                indexes.retain(|ix| wait(ix).is_zero());
                if indexes.is_empty() {
                    if let Some(after) = soonest {
                        self.queue.add_after(key, after);
                        return (active, SyncAction::PodsCreated, None);
                    }
                }
            }
            diff = indexes.len();
            indexed::add_completion_index_env(&mut template);
            Some(indexes)
        } else {
            None
        };
        if diff == 0 {
            return (active, SyncAction::Tracking, None);
        }
        let meta = template.metadata.get_or_insert_with(Default::default);
        let finalizers = meta.finalizers.get_or_insert_with(Vec::new);
        if !finalizers.iter().any(|f| f == JOB_TRACKING_FINALIZER) {
            finalizers.push(JOB_TRACKING_FINALIZER.into());
        }
        // Expect every creation up front: the informer may see a pod before the call returns.
        self.expectations.expect_creations(&key, diff);
        tracing::debug!(%key, need = want, creating = diff, "too few pods running");
        let owner = object_reference(&ctx.job);
        let controller_ref = controller_ref(&ctx.job);
        let namespace = key.namespace_str();
        let next = AtomicUsize::new(0);
        let (successes, error) = slow_start_batch(diff, SLOW_START_INITIAL_BATCH_SIZE, || {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let template = match &indexes {
                Some(indexes) => {
                    let ix = indexes[i];
                    let mut t = indexed::template_for_index(&template, &job_name, ix);
                    if per_index {
                        let replaced = ctx.delayed.get(&ix).map(|p| &**p);
                        per_index::add_index_failure_count_annotations(&mut t, &ctx.job, replaced);
                    }
                    t
                }
                None => template.clone(),
            };
            let (owner, controller_ref) = (&owner, &controller_ref);
            async move {
                match self
                    .pod_control
                    .create_pods(namespace, &template, owner, controller_ref)
                    .await
                {
                    // Every further creation fails the same way; nothing to retry.
                    Err(PodControlError::NamespaceTerminating(_)) => Ok(()),
                    other => other,
                }
            }
        })
        .await;
        let not_created = diff - successes;
        if not_created > 0 {
            // Failed and skipped creations will not be observed; the next sync retries them.
            tracing::debug!(%key, not_created, "failed or skipped pod creations, decrementing expectations");
            for _ in 0..not_created {
                self.expectations.creation_observed(&key);
            }
        }
        (active + count(successes), SyncAction::PodsCreated, error)
    }

    /// Deletes `pods` of a running Job after removing their finalizer (they are not counted),
    /// with deletion expectations (`deleteJobPods`). Returns the deleted ready pods, the deleted
    /// pods and the first error.
    async fn delete_job_pods(
        &self,
        job: &Job,
        key: &ObjectKey,
        pods: &[Arc<Pod>],
    ) -> (i32, i32, Option<PodControlError>) {
        let pod_keys: Vec<ObjectKey> = pods.iter().map(|p| ObjectKey::from_obj(&**p)).collect();
        self.expectations.expect_deletions(key, &pod_keys);
        let owner = object_reference(job);
        let namespace = key.namespace_str();
        let results = join_all(pods.iter().zip(&pod_keys).map(|(pod, pod_key)| {
            let owner = &owner;
            async move {
                let name = pod.metadata.name.as_deref().unwrap_or("");
                let mut result = Ok(());
                if let Some(patch) = remove_tracking_finalizer_patch(pod) {
                    result = self.pod_control.patch_pod(namespace, name, &patch).await;
                }
                if result.is_ok() {
                    result = self.pod_control.delete_pod(namespace, name, owner).await;
                }
                match result {
                    Ok(()) => Ok(is_pod_ready(pod)),
                    Err(e) => {
                        // The informer will not observe this deletion.
                        self.expectations.deletion_observed(key, pod_key);
                        if e.is_not_found() {
                            Ok(is_pod_ready(pod))
                        } else {
                            tracing::info!(pod = %pod_key, job = %key, error = %e.message(), "failed to delete pod");
                            Err(e)
                        }
                    }
                }
            }
        }))
        .await;
        tally(results)
    }

    /// Deletes the active pods of a finished Job, keeping their finalizers so that they are
    /// counted as failed (`deleteActivePods`).
    pub(super) async fn delete_active_pods(
        &self,
        job: &Job,
        pods: &[Arc<Pod>],
    ) -> (i32, i32, Option<PodControlError>) {
        let owner = object_reference(job);
        let namespace = job.metadata.namespace.as_deref().unwrap_or("");
        let results = join_all(pods.iter().map(|pod| {
            let owner = &owner;
            async move {
                let name = pod.metadata.name.as_deref().unwrap_or("");
                match self.pod_control.delete_pod(namespace, name, owner).await {
                    Err(e) if !e.is_not_found() => Err(e),
                    _ => Ok(is_pod_ready(pod)),
                }
            }
        }))
        .await;
        tally(results)
    }
}

/// Counts `Ok(ready)` results and keeps the first error.
fn tally(results: Vec<Result<bool, PodControlError>>) -> (i32, i32, Option<PodControlError>) {
    let (mut ready, mut done, mut error) = (0, 0, None);
    for result in results {
        match result {
            Ok(was_ready) => {
                done += 1;
                ready += i32::from(was_ready);
            }
            Err(e) => {
                error.get_or_insert(e);
            }
        }
    }
    (ready, done, error)
}

/// The controller reference the Job's pods carry.
fn controller_ref(job: &Job) -> OwnerReference {
    OwnerReference {
        api_version: Job::api_version(&()).to_string(),
        kind: Job::kind(&()).to_string(),
        name: job.metadata.name.clone().unwrap_or_default(),
        uid: job.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// A reference to the Job, for the events pod control records.
fn object_reference(job: &Job) -> ObjectReference {
    ObjectReference {
        api_version: Some(Job::api_version(&()).to_string()),
        kind: Some(Job::kind(&()).to_string()),
        name: job.metadata.name.clone(),
        namespace: job.metadata.namespace.clone(),
        uid: job.metadata.uid.clone(),
        resource_version: job.metadata.resource_version.clone(),
        field_path: None,
    }
}
