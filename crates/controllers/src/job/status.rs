//! Writing a Job's status as its pods finish: record them in `uncountedTerminatedPods`, remove
//! their finalizers, count them, then add the final condition and its event
//! (`trackJobStatusAndRemoveFinalizers` and what it calls in kube's job controller).

use std::collections::HashSet;
use std::sync::Arc;

use futures::future::join_all;
use k8s_openapi::api::core::v1::Pod;
use rkcm_runtime::events::EventType;
use rkcm_runtime::pod_control::PodControlError;

use super::conditions::{self as cond, new_condition};
use super::indexed::{self, Intervals};
use super::metrics::{self};
use super::pods::remove_tracking_finalizer_patch;
use super::sync::{completion_mode, count, omit_zero, SyncCtx, SyncError};
use super::tracking::{clean_uncounted, plan_tracking};
use super::JobController;

impl JobController {
    /// Records finished pods in `uncountedTerminatedPods`, removes their finalizers, moves them
    /// to the counters and, once nothing is uncounted or terminating, adds the final condition
    /// (`trackJobStatusAndRemoveFinalizers`).
    pub(super) async fn track_status_and_remove_finalizers(
        &self,
        ctx: &mut SyncCtx,
        mut needs_flush: bool,
    ) -> Result<(), SyncError> {
        let now = self.config.clock.now();
        let finishing = ctx.finished_condition.is_some();
        let failing = ctx
            .finished_condition
            .as_ref()
            .is_some_and(|c| c.type_ != cond::SUCCESS_CRITERIA_MET);
        let plan = plan_tracking(
            &mut ctx.job,
            &ctx.pods,
            &ctx.expected_removals,
            finishing,
            failing,
            &ctx.prev_succeeded_indexes,
            &ctx.delayed
                .values()
                .filter_map(|p| p.metadata.uid.clone())
                .collect(),
        );
        needs_flush |= plan.needs_flush;
        if indexed::is_indexed(&ctx.job) {
            ctx.succeeded_indexes = ctx
                .succeeded_indexes
                .with_ordered_indexes(&plan.new_succeeded_indexes);
            let completed = ctx.succeeded_indexes.to_string();
            let status = ctx.job.status.get_or_insert_with(Default::default);
            if status.completed_indexes.as_deref().unwrap_or("") != completed {
                needs_flush = true;
            }
            status.succeeded = omit_zero(count(ctx.succeeded_indexes.total()));
            status.completed_indexes = Some(completed);
            let failed = ctx.failed_indexes.as_ref().map(Intervals::to_string);
            if status.failed_indexes != failed {
                status.failed_indexes = failed;
                needs_flush = true;
            }
        }
        // The interim condition is written before finalizers go; the final one after.
        if let Some(finished) = ctx.finished_condition.take() {
            let conditions = ctx
                .job
                .status
                .get_or_insert_with(Default::default)
                .conditions
                .get_or_insert_with(Vec::new);
            let final_type = match finished.type_.as_str() {
                cond::FAILURE_TARGET => {
                    conditions.push(finished.clone());
                    needs_flush = true;
                    cond::FAILED
                }
                cond::SUCCESS_CRITERIA_MET => {
                    if cond::find(conditions, cond::SUCCESS_CRITERIA_MET).is_none() {
                        conditions.push(finished.clone());
                        needs_flush = true;
                    }
                    cond::COMPLETE
                }
                other => other,
            }
            .to_string();
            ctx.finished_condition = Some(new_condition(
                &final_type,
                "True",
                finished.reason.as_deref().unwrap_or(""),
                finished.message.as_deref().unwrap_or(""),
                now,
            ));
        }
        let remove_error = self
            .flush_and_remove_finalizers(
                ctx,
                plan.remove_finalizer,
                plan.with_finalizer,
                &mut needs_flush,
            )
            .await?;
        let finished = !plan.reached_max_uncounted && self.enact_job_finished(ctx);
        if finished {
            needs_flush = true;
        }
        if needs_flush {
            self.update_status(ctx).await?;
            if finished {
                self.record_job_finished(ctx);
            }
        }
        for action in &plan.policy_actions {
            metrics::record_failure_policy_action(action);
        }
        let now_counted = ctx.job.status.clone().unwrap_or_default();
        let newly =
            |now: Option<i32>, before: i32| u64::try_from(now.unwrap_or(0) - before).unwrap_or(0);
        metrics::record_pods_finished(
            completion_mode(&ctx.job),
            newly(now_counted.succeeded, ctx.initial_succeeded),
            newly(now_counted.failed, ctx.initial_failed),
        );
        match remove_error {
            Some(source) => Err(SyncError::Pods {
                job: ctx.key.clone(),
                source,
            }),
            None => Ok(()),
        }
    }

    /// Writes the status if needed, removes the finalizers of `pods`, then moves the pods that
    /// lost them from `uncountedTerminatedPods` to the counters (`flushUncountedAndRemoveFinalizers`).
    async fn flush_and_remove_finalizers(
        &self,
        ctx: &mut SyncCtx,
        pods: Vec<Arc<Pod>>,
        mut with_finalizer: HashSet<String>,
        needs_flush: &mut bool,
    ) -> Result<Option<PodControlError>, SyncError> {
        if *needs_flush {
            self.update_status(ctx).await?;
            // Only now are the failures recorded: a failed write must not back off twice.
            self.backoff.set(&ctx.key, ctx.new_backoff.clone());
            *needs_flush = false;
        }
        let mut remove_error = None;
        if !pods.is_empty() {
            let uids: Vec<String> = pods
                .iter()
                .map(|p| p.metadata.uid.clone().unwrap_or_default())
                .collect();
            self.finalizer_expectations
                .expect_removed(&ctx.key, uids.iter().cloned());
            let job_key = &ctx.key;
            let results = join_all(pods.iter().zip(&uids).map(|(pod, uid)| async move {
                let Some(patch) = remove_tracking_finalizer_patch(pod) else {
                    return Ok(());
                };
                let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
                let name = pod.metadata.name.as_deref().unwrap_or("");
                match self.pod_control.patch_pod(namespace, name, &patch).await {
                    Ok(()) => Ok(()),
                    Err(e) => {
                        // No update will show the finalizer gone.
                        self.finalizer_expectations.removal_observed(job_key, uid);
                        if e.is_not_found() {
                            Ok(())
                        } else {
                            tracing::info!(pod = %name, job = %job_key, error = %e.message(), "failed to remove tracking finalizer");
                            Err(e)
                        }
                    }
                }
            }))
            .await;
            for (result, uid) in results.into_iter().zip(&uids) {
                match result {
                    Ok(()) => {
                        with_finalizer.remove(uid);
                    }
                    Err(e) => {
                        remove_error.get_or_insert(e);
                    }
                }
            }
        }
        let status = ctx.job.status.get_or_insert_with(Default::default);
        if clean_uncounted(status, &with_finalizer) {
            *needs_flush = true;
        }
        if remove_error.is_some() && *needs_flush {
            // Save the partial progress.
            self.update_status(ctx).await?;
            *needs_flush = false;
        }
        Ok(remove_error)
    }

    /// Adds the final `Complete` or `Failed` condition once no pod is uncounted or terminating
    /// (`enactJobFinished`). Returns whether the Job is now finished.
    fn enact_job_finished(&self, ctx: &mut SyncCtx) -> bool {
        let Some(finished) = ctx.finished_condition.clone() else {
            return false;
        };
        let status = ctx.job.status.get_or_insert_with(Default::default);
        let uncounted = status.uncounted_terminated_pods.clone().unwrap_or_default();
        let pending = uncounted.succeeded.as_ref().map_or(0, Vec::len)
            + uncounted.failed.as_ref().map_or(0, Vec::len);
        if pending > 0 {
            tracing::debug!(job = %ctx.key, pending, "delaying the final condition: uncounted pods");
            return false;
        }
        if ctx.terminating > 0 {
            tracing::debug!(job = %ctx.key, terminating = ctx.terminating, "delaying the final condition: terminating pods");
            return false;
        }
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        cond::ensure_status(
            conditions,
            &finished.type_,
            "True",
            finished.reason.as_deref().unwrap_or(""),
            finished.message.as_deref().unwrap_or(""),
            self.config.clock.now(),
        );
        if finished.type_ == cond::COMPLETE {
            status.completion_time = finished.last_transition_time.clone();
        }
        true
    }

    /// The events of a finished Job (`recordJobFinished`).
    fn record_job_finished(&self, ctx: &SyncCtx) {
        let Some(finished) = &ctx.finished_condition else {
            return;
        };
        let job = &ctx.job;
        if finished.type_ == cond::COMPLETE {
            let succeeded = job.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0);
            if job
                .spec
                .as_ref()
                .and_then(|s| s.completions)
                .is_some_and(|c| succeeded > c)
            {
                self.recorder.event_for(
                    job,
                    EventType::Warning,
                    "TooManySucceededPods",
                    "Too many succeeded pods running after completion count reached",
                );
            }
            self.recorder
                .event_for(job, EventType::Normal, "Completed", "Job completed");
            metrics::record_job_finished(completion_mode(job), None);
        } else {
            metrics::record_job_finished(completion_mode(job), finished.reason.as_deref());
            self.recorder.event_for(
                job,
                EventType::Warning,
                finished.reason.as_deref().unwrap_or(""),
                finished.message.clone().unwrap_or_default(),
            );
        }
    }
}
