//! Informer notifications → queue keys and observed expectations (`addPod`, `updatePod`,
//! `deletePod`, `updateJob`, `deleteJob` of kube's job controller).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use rkcm_runtime::controller_ref::controller_of;
use rkcm_runtime::informer::{Deleted, Notification, CONTROLLER_UID_INDEX};
use rkcm_runtime::ObjectKey;

use super::conditions::is_finished;
use super::pods::has_tracking_finalizer;
use super::JobController;

impl JobController {
    /// Dispatches a notification of the Job informer.
    pub(crate) fn on_job(&self, note: Notification<Job>) {
        match note {
            Notification::Add(job) => self.queue.add(ObjectKey::from_obj(&*job)),
            Notification::Update { old, new } => self.update_job(&old, &new),
            Notification::Delete(deleted) => self.delete_job(&deleted),
        }
    }

    /// Dispatches a notification of the Pod informer.
    pub(crate) fn on_pod(&self, note: Notification<Pod>) {
        match note {
            Notification::Add(pod) => self.add_pod(&pod),
            Notification::Update { old, new } => self.update_pod(&old, &new),
            Notification::Delete(deleted) => self.delete_pod(deleted.object(), true),
        }
    }

    fn update_job(&self, old: &Arc<Job>, new: &Arc<Job>) {
        let key = ObjectKey::from_obj(&**new);
        if old.metadata.uid != new.metadata.uid {
            // Re-created under the same name: the old one is gone.
            self.delete_job(&Deleted::FinalStateUnknown {
                key: key.clone(),
                last: Arc::clone(old),
            });
        }
        if is_finished(new) {
            // A finished Job should hold no finalizers anymore; this is a backstop.
            self.cleanup_pod_finalizers(new);
        }
        if old.metadata.resource_version == new.metadata.resource_version {
            // A periodic resync still retries Jobs whose last sync failed.
            self.queue.add(key);
            return;
        }
        // A spec change (suspend, parallelism) acts at once; status echoes are batched.
        if old.metadata.generation != new.metadata.generation {
            self.queue.add(key.clone());
        } else {
            self.queue
                .add_after(key.clone(), self.config.sync_batch_period);
        }
        // activeDeadlineSeconds changed: sync again when the new deadline passes.
        let deadline = |j: &Job| j.spec.as_ref().and_then(|s| s.active_deadline_seconds);
        if let (Some(seconds), Some(start)) = (
            deadline(new),
            new.status.as_ref().and_then(|s| s.start_time.as_ref()),
        ) {
            if deadline(old) != Some(seconds) {
                let elapsed = self
                    .config
                    .clock
                    .now()
                    .duration_since(start.0)
                    .as_secs()
                    .max(0);
                let left = u64::try_from(seconds)
                    .unwrap_or(0)
                    .saturating_sub(u64::try_from(elapsed).unwrap_or(0));
                self.queue.add_after(key, Duration::from_secs(left));
            }
        }
    }

    fn delete_job(&self, deleted: &Deleted<Job>) {
        let (key, job) = match deleted {
            Deleted::Known(job) => (ObjectKey::from_obj(&**job), job),
            Deleted::FinalStateUnknown { key, last } => (key.clone(), last),
        };
        self.queue.add(key);
        // Its pods' finalizers must go even though the Job will not be synced again.
        self.cleanup_pod_finalizers(job);
    }

    /// Queues the Job's pods that still carry the tracking finalizer for its removal
    /// (`cleanupPodFinalizers`).
    fn cleanup_pod_finalizers(&self, job: &Job) {
        let uid = job.metadata.uid.clone().unwrap_or_default();
        for pod in self.pod_store.by_index(CONTROLLER_UID_INDEX, &uid) {
            if has_tracking_finalizer(&pod) {
                self.orphan_queue.add(ObjectKey::from_obj(&*pod));
            }
        }
    }

    /// The Job `controller_ref` points to, if it is in the cache with the same UID.
    pub(crate) fn resolve_controller_ref(
        &self,
        namespace: &str,
        controller_ref: &OwnerReference,
    ) -> Option<Arc<Job>> {
        if controller_ref.kind != "Job" || controller_ref.api_version != "batch/v1" {
            return None;
        }
        let job = self
            .job_store
            .get(&ObjectKey::new(namespace, controller_ref.name.clone()))?;
        (job.metadata.uid.as_deref() == Some(controller_ref.uid.as_str())).then_some(job)
    }

    /// Jobs in the pod's namespace whose selector matches it (`getPodJobs`).
    fn pod_jobs(&self, pod: &Pod) -> Vec<Arc<Job>> {
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        self.job_store
            .list_by_namespace(namespace)
            .into_iter()
            .filter(|job| {
                let selector = job.spec.as_ref().and_then(|s| s.selector.as_ref());
                match selector.map(rkcm_labels::Selector::from_label_selector) {
                    Some(Ok(selector)) => !selector.is_empty() && selector.matches(&labels),
                    _ => false,
                }
            })
            .collect()
    }

    fn add_pod(&self, pod: &Arc<Pod>) {
        if pod.metadata.deletion_timestamp.is_some() {
            // After a restart a pod may first show up already being deleted: that is not a
            // creation to observe.
            self.delete_pod(pod, false);
            return;
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        if let Some(controller_ref) = controller_of(&pod.metadata) {
            match self.resolve_controller_ref(namespace, controller_ref) {
                Some(job) => {
                    let key = ObjectKey::from_obj(&*job);
                    self.expectations.creation_observed(&key);
                    self.queue.add_after(key, self.config.sync_batch_period);
                }
                None if has_tracking_finalizer(pod) => {
                    self.orphan_queue.add(ObjectKey::from_obj(&**pod));
                }
                None => {}
            }
            return;
        }
        if has_tracking_finalizer(pod) {
            self.orphan_queue.add(ObjectKey::from_obj(&**pod));
        }
        // An orphan: wake every matching Job so that one may adopt it.
        for job in self.pod_jobs(pod) {
            self.queue
                .add_after(ObjectKey::from_obj(&*job), self.config.sync_batch_period);
        }
    }

    fn update_pod(&self, old: &Arc<Pod>, cur: &Arc<Pod>) {
        if old.metadata.resource_version == cur.metadata.resource_version {
            // A periodic resync.
            return;
        }
        if cur.metadata.deletion_timestamp.is_some() {
            // A graceful deletion started: count it now rather than when the pod is gone.
            self.delete_pod(cur, false);
            // The finalizer may also have gone in the same update.
        }
        let namespace = cur.metadata.namespace.as_deref().unwrap_or("");
        // Do not look at the old pod's finalizer: updates may collapse, and the latest state is
        // what matters.
        let finalizer_removed = !has_tracking_finalizer(cur);
        let uid = cur.metadata.uid.clone().unwrap_or_default();
        let cur_ref = controller_of(&cur.metadata);
        let old_ref = controller_of(&old.metadata);
        if cur_ref != old_ref {
            if let Some(job) = old_ref.and_then(|r| self.resolve_controller_ref(namespace, r)) {
                let key = ObjectKey::from_obj(&*job);
                if finalizer_removed {
                    self.finalizer_expectations.removal_observed(&key, &uid);
                }
                self.queue.add_after(key, self.config.sync_batch_period);
            }
        }
        if let Some(cur_ref) = cur_ref {
            let Some(job) = self.resolve_controller_ref(namespace, cur_ref) else {
                if has_tracking_finalizer(cur) {
                    self.orphan_queue.add(ObjectKey::from_obj(&**cur));
                }
                return;
            };
            let key = ObjectKey::from_obj(&*job);
            if finalizer_removed {
                self.finalizer_expectations.removal_observed(&key, &uid);
            }
            self.queue.add_after(key, self.config.sync_batch_period);
            return;
        }
        if has_tracking_finalizer(cur) {
            self.orphan_queue.add(ObjectKey::from_obj(&**cur));
        }
        if old.metadata.labels != cur.metadata.labels || cur_ref != old_ref {
            for job in self.pod_jobs(cur) {
                self.queue
                    .add_after(ObjectKey::from_obj(&*job), self.config.sync_batch_period);
            }
        }
    }

    /// A pod left (`gone`) or started terminating.
    fn delete_pod(&self, pod: &Arc<Pod>, gone: bool) {
        let Some(controller_ref) = controller_of(&pod.metadata) else {
            return;
        };
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        let Some(job) = self.resolve_controller_ref(namespace, controller_ref) else {
            if has_tracking_finalizer(pod) && !gone {
                self.orphan_queue.add(ObjectKey::from_obj(&**pod));
            }
            return;
        };
        let key = ObjectKey::from_obj(&*job);
        self.expectations
            .deletion_observed(&key, &ObjectKey::from_obj(&**pod));
        // A pod that is gone has no finalizer left to wait for.
        if gone || !has_tracking_finalizer(pod) {
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            self.finalizer_expectations.removal_observed(&key, &uid);
        }
        self.queue.add_after(key, self.config.sync_batch_period);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::fixtures::{job, pod, ts};
    use crate::job::sync::tests::Fixture;

    #[tokio::test]
    async fn an_owned_pod_observes_a_creation_and_wakes_its_job() {
        let f = Fixture::new();
        let j = job("j", Some(1), Some(1));
        let key = f.add_job(j.clone());
        f.ctrl.expectations().expect_creations(&key, 1);
        f.ctrl
            .on_pod(Notification::Add(Arc::new(pod(&j, "p", "Pending"))));
        assert!(f.ctrl.expectations().satisfied_expectations(&key));
        assert_eq!(f.next_key().await, Some(key));
    }

    #[tokio::test]
    async fn a_deletion_timestamp_counts_as_the_expected_deletion_once() {
        let f = Fixture::new();
        let j = job("j", Some(1), Some(1));
        let key = f.add_job(j.clone());
        let old = pod(&j, "p", "Running");
        let mut cur = old.clone();
        cur.metadata.resource_version = Some("2".into());
        cur.metadata.deletion_timestamp = Some(ts(0));
        f.ctrl
            .expectations()
            .expect_deletions(&key, &[ObjectKey::from_obj(&cur)]);
        f.ctrl.on_pod(Notification::Update {
            old: Arc::new(old),
            new: Arc::new(cur),
        });
        assert!(f.ctrl.expectations().satisfied_expectations(&key));
    }

    #[tokio::test]
    async fn a_removed_finalizer_is_observed() {
        let f = Fixture::new();
        let j = job("j", Some(1), Some(1));
        let key = f.add_job(j.clone());
        let old = pod(&j, "p", "Succeeded");
        let mut cur = old.clone();
        cur.metadata.resource_version = Some("2".into());
        cur.metadata.finalizers = None;
        f.ctrl
            .finalizer_expectations
            .expect_removed(&key, ["uid-p".to_string()]);
        f.ctrl.on_pod(Notification::Update {
            old: Arc::new(old),
            new: Arc::new(cur),
        });
        assert!(f.ctrl.finalizer_expectations.expected_uids(&key).is_empty());
        assert_eq!(f.next_key().await, Some(key));
    }

    #[tokio::test]
    async fn a_finished_job_queues_its_pods_still_holding_the_finalizer() {
        use crate::job::conditions::{new_condition, COMPLETE};
        let f = Fixture::new();
        let j = job("j", Some(1), Some(1));
        f.add_job(j.clone());
        f.add_pod(pod(&j, "p", "Succeeded"));
        let mut done = j.clone();
        done.metadata.resource_version = Some("2".into());
        done.status.get_or_insert_with(Default::default).conditions =
            Some(vec![new_condition(COMPLETE, "True", "", "", ts(0).0)]);
        f.ctrl.on_job(Notification::Update {
            old: Arc::new(j),
            new: Arc::new(done),
        });
        assert_eq!(f.ctrl.orphan_queue.len(), 1);
    }

    #[tokio::test]
    async fn a_pod_of_an_unknown_job_with_the_finalizer_goes_to_the_orphan_queue() {
        let f = Fixture::new();
        let j = job("gone", Some(1), Some(1));
        let p = pod(&j, "p", "Succeeded");
        f.ctrl.on_pod(Notification::Add(Arc::new(p.clone())));
        assert_eq!(f.ctrl.orphan_queue.len(), 1);
        assert_eq!(f.next_key().await, None);
    }
}
