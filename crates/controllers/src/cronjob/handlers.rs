//! Informer notifications → queue keys (`addJob`, `updateJob`, `deleteJob`, `updateCronJob` of
//! kube's cronjob controller v2).

use std::sync::Arc;
use std::time::Duration;

use jiff::tz::TimeZone;
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use rkcm_runtime::controller_ref::controller_of;
use rkcm_runtime::events::EventType;
use rkcm_runtime::informer::{Deleted, Notification};
use rkcm_runtime::ObjectKey;

use super::schedule;
use super::CronJobController;

/// When an updated CronJob is synced again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum UpdateRequeue {
    /// Now: something other than the schedule changed.
    Now,
    /// At the new schedule's next start time.
    After(Duration),
    /// Not at all: the new schedule does not parse (an `UnParseableCronJobSchedule` warning).
    Unparseable,
}

/// `updateCronJob`'s decision: a changed schedule or time zone moves the requeue to the next
/// start time of the new schedule; any other change syncs at once.
pub(crate) fn requeue_on_update(
    old: &CronJob,
    new: &CronJob,
    now: Timestamp,
    local: &TimeZone,
) -> UpdateRequeue {
    let schedule_of = |cj: &CronJob| cj.spec.as_ref().map(|s| s.schedule.clone());
    if schedule_of(old) == schedule_of(new)
        && schedule::time_zone_of(old) == schedule::time_zone_of(new)
    {
        return UpdateRequeue::Now;
    }
    match schedule::parse(new, local) {
        Err(_) => UpdateRequeue::Unparseable,
        Ok(sched) => match schedule::next_schedule_time_duration(new, now, &sched) {
            Some(d) => UpdateRequeue::After(d),
            None => UpdateRequeue::Now,
        },
    }
}

impl CronJobController {
    /// Dispatches a notification of the CronJob informer.
    pub(crate) fn on_cron_job(&self, note: Notification<CronJob>) {
        match note {
            Notification::Add(cj) => self.queue.add(ObjectKey::from_obj(&*cj)),
            Notification::Update { old, new } => self.update_cron_job(&old, &new),
            Notification::Delete(deleted) => self.queue.add(match &deleted {
                Deleted::Known(cj) => ObjectKey::from_obj(&**cj),
                Deleted::FinalStateUnknown { key, .. } => key.clone(),
            }),
        }
    }

    /// Dispatches a notification of the Job informer.
    pub(crate) fn on_job(&self, note: Notification<Job>) {
        match note {
            Notification::Add(job) => self.add_job(&job),
            Notification::Update { old, new } => self.update_job(&old, &new),
            Notification::Delete(deleted) => self.delete_job_notification(deleted.object()),
        }
    }

    fn update_cron_job(&self, old: &CronJob, new: &CronJob) {
        let key = ObjectKey::from_obj(new);
        match requeue_on_update(old, new, self.config.clock.now(), &self.config.local_zone) {
            UpdateRequeue::Now => self.queue.add(key),
            UpdateRequeue::After(delay) => self.queue.add_after(key, delay),
            UpdateRequeue::Unparseable => {
                let schedule = new.spec.as_ref().map_or("", |s| s.schedule.as_str());
                tracing::info!(cronjob = %key, schedule, "unparseable schedule for cronjob");
                self.recorder.event_for(
                    new,
                    EventType::Warning,
                    "UnParseableCronJobSchedule",
                    format!("unparseable schedule for cronjob: {schedule}"),
                );
            }
        }
    }

    /// The CronJob `controller_ref` points to, if it is in the cache with the same UID.
    fn resolve_controller_ref(
        &self,
        namespace: &str,
        controller_ref: &OwnerReference,
    ) -> Option<Arc<CronJob>> {
        if controller_ref.kind != "CronJob" {
            return None;
        }
        let cj = self
            .cron_job_store
            .get(&ObjectKey::new(namespace, controller_ref.name.clone()))?;
        (cj.metadata.uid.as_deref() == Some(controller_ref.uid.as_str())).then_some(cj)
    }

    fn enqueue_controller_of(&self, job: &Job, controller_ref: Option<&OwnerReference>) {
        let namespace = job.metadata.namespace.as_deref().unwrap_or("");
        if let Some(cj) = controller_ref.and_then(|r| self.resolve_controller_ref(namespace, r)) {
            self.queue.add(ObjectKey::from_obj(&*cj));
        }
    }

    fn add_job(&self, job: &Arc<Job>) {
        if job.metadata.deletion_timestamp.is_some() {
            // After a restart a Job may first show up already being deleted.
            self.delete_job_notification(job);
            return;
        }
        self.enqueue_controller_of(job, controller_of(&job.metadata));
    }

    fn update_job(&self, old: &Arc<Job>, cur: &Arc<Job>) {
        if old.metadata.resource_version == cur.metadata.resource_version {
            // A periodic resync.
            return;
        }
        let cur_ref = controller_of(&cur.metadata);
        let old_ref = controller_of(&old.metadata);
        if cur_ref != old_ref && old_ref.is_some() {
            self.enqueue_controller_of(old, old_ref);
        }
        self.enqueue_controller_of(cur, cur_ref);
    }

    fn delete_job_notification(&self, job: &Arc<Job>) {
        self.enqueue_controller_of(job, controller_of(&job.metadata));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cronjob::schedule::tests::{after_top, top_of_the_hour};
    use crate::cronjob::schedule::NEXT_SCHEDULE_DELTA;
    use jiff::SignedDuration;
    use k8s_openapi::api::batch::v1::{CronJobSpec, CronJobStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn cj(schedule: &str, tz: Option<&str>, label: &str) -> CronJob {
        let mut cj = CronJob {
            spec: Some(CronJobSpec {
                schedule: schedule.into(),
                time_zone: tz.map(Into::into),
                ..CronJobSpec::default()
            }),
            status: Some(CronJobStatus {
                // justBeforeTheHour
                last_schedule_time: Some(Time(
                    top_of_the_hour()
                        .checked_sub(SignedDuration::from_mins(1))
                        .unwrap(),
                )),
                ..CronJobStatus::default()
            }),
            ..CronJob::default()
        };
        cj.spec.as_mut().unwrap().job_template.metadata = Some(Default::default());
        cj.spec
            .as_mut()
            .unwrap()
            .job_template
            .metadata
            .as_mut()
            .unwrap()
            .labels = Some([("a".to_string(), label.to_string())].into());
        cj
    }

    /// Ported from cronjob_controllerv2_test.go `TestControllerV2UpdateCronJob`.
    #[test]
    fn a_changed_schedule_requeues_for_the_new_next_start_time() {
        // justASecondBeforeTheHour
        let now = after_top(Duration::ZERO)
            .checked_sub(SignedDuration::from_secs(1))
            .unwrap();
        let utc = TimeZone::UTC;
        let at = |old: &CronJob, new: &CronJob| requeue_on_update(old, new, now, &utc);
        assert_eq!(
            at(&cj("", None, "b"), &cj("", None, "foo")),
            UpdateRequeue::Now,
            "spec.template changed"
        );
        assert_eq!(
            at(
                &cj("30 * * * *", None, "b"),
                &cj("*/1 * * * *", None, "foo")
            ),
            UpdateRequeue::After(Duration::from_secs(1) + NEXT_SCHEDULE_DELTA),
            "spec.schedule changed"
        );
        assert_eq!(
            at(&cj("@every 1m", None, "b"), &cj("@every 3m", None, "foo")),
            UpdateRequeue::After(Duration::from_secs(121) + NEXT_SCHEDULE_DELTA),
            "spec.schedule with @every changed - cadence decrease"
        );
        assert_eq!(
            at(&cj("@every 3m", None, "b"), &cj("@every 1m", None, "foo")),
            UpdateRequeue::After(Duration::from_secs(1) + NEXT_SCHEDULE_DELTA),
            "spec.schedule with @every changed - cadence increase"
        );
        let ny = Some("America/New_York");
        assert_eq!(
            at(&cj("", ny, "b"), &cj("", ny, "foo")),
            UpdateRequeue::Now,
            "spec.timeZone not changed"
        );
        // kube's case has no schedule at all: the new one does not parse, nothing is queued.
        assert_eq!(
            at(&cj("", ny, "b"), &cj("", None, "foo")),
            UpdateRequeue::Unparseable,
            "spec.timeZone changed"
        );
    }
}
