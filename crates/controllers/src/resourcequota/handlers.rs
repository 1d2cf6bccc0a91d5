//! Notifications → queue keys: quotas to the priority or the normal queue (`addQuota`), and
//! replenishment (`replenishQuota`): when a counted object is deleted, or changes in a way that
//! frees quota (a pod turning terminal, a Service leaving NodePort/LoadBalancer, a claim's
//! allocated storage changing), every quota of its namespace that limits one of its resources
//! is queued.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, ResourceQuota, Service};
use kube::Resource;
use rkcm_apimachinery::quota::evaluator::{spec_hard, status_hard};
use rkcm_apimachinery::quota::resources::{equals, resource_names};
use rkcm_apimachinery::quota::{persistent_volume_claims, pods, services, Evaluator};
use rkcm_runtime::informer::Notification;
use rkcm_runtime::ObjectKey;

use super::priority::needs_priority;
use super::ResourceQuotaController;

/// Whether `spec.hard` differs between two versions of a quota (numerically; an unparsable
/// list counts as changed, so that the sync reports it).
pub fn spec_hard_changed(old: &ResourceQuota, new: &ResourceQuota) -> bool {
    match (spec_hard(old), spec_hard(new)) {
        (Ok(a), Ok(b)) => !equals(&a, &b),
        _ => true,
    }
}

impl ResourceQuotaController {
    /// `addQuota` for adds, and for updates that change `spec.hard`: status updates (the
    /// controller's own and the admission plugin's charges) are not recalculated, since the
    /// caches may not have the charged object yet; the periodic resync covers them.
    pub(crate) fn on_quota(&self, note: Notification<ResourceQuota>) {
        let quota = match note {
            Notification::Add(q) => q,
            Notification::Update { old, new } => {
                if !spec_hard_changed(&old, &new) {
                    return;
                }
                new
            }
            Notification::Delete(_) => return,
        };
        self.enqueue_quota(&quota);
    }

    /// Queues `quota` where `addQuota` would.
    pub(crate) fn enqueue_quota(&self, quota: &ResourceQuota) {
        let key = ObjectKey::from_obj(quota);
        if needs_priority(quota) {
            self.missing_usage_queue.add(key);
        } else {
            self.queue.add(key);
        }
    }

    /// Queues every quota of `namespace` that limits something `evaluator` measures.
    pub(crate) fn replenish(&self, evaluator: &Evaluator, namespace: &str) {
        for quota in self.quotas.store().list_by_namespace(namespace) {
            // A quota whose status does not parse is queued: its sync reports why.
            let limits = status_hard(&quota)
                .map(|hard| {
                    !evaluator
                        .matching_resources(&resource_names(&hard))
                        .is_empty()
                })
                .unwrap_or(true);
            if limits {
                self.queue.add(ObjectKey::from_obj(&*quota));
            }
        }
    }

    /// Replenishment for objects of a kind without update rules: deletes only.
    pub(crate) fn on_counted<K: Resource>(&self, evaluator: &Evaluator, note: Notification<K>) {
        if let Notification::Delete(deleted) = note {
            if let Some(ns) = deleted.object().meta().namespace.as_deref() {
                self.replenish(evaluator, ns);
            }
        }
    }

    /// Replenishment for pods: deletes, and pods that stop being charged.
    pub(crate) fn on_pod(&self, note: Notification<Pod>) {
        let now = self.clock.now();
        let changed = |old: &Arc<Pod>, new: &Arc<Pod>| {
            pods::quota_v1_pod(old, now) && !pods::quota_v1_pod(new, now)
        };
        self.on_changed(&Evaluator::Pods, note, changed);
    }

    /// Replenishment for Services: deletes, and a change of quota-relevant type.
    pub(crate) fn on_service(&self, note: Notification<Service>) {
        let changed = |old: &Arc<Service>, new: &Arc<Service>| {
            services::quota_service_type(old) != services::quota_service_type(new)
        };
        self.on_changed(&Evaluator::Services, note, changed);
    }

    /// Replenishment for claims: deletes, and a change of allocated storage.
    pub(crate) fn on_claim(&self, note: Notification<PersistentVolumeClaim>) {
        let changed = |old: &Arc<PersistentVolumeClaim>, new: &Arc<PersistentVolumeClaim>| {
            persistent_volume_claims::requires_quota_replenish(new, old)
        };
        self.on_changed(&Evaluator::PersistentVolumeClaims, note, changed);
    }

    fn on_changed<K: Resource>(
        &self,
        evaluator: &Evaluator,
        note: Notification<K>,
        changed: impl Fn(&Arc<K>, &Arc<K>) -> bool,
    ) {
        match note {
            Notification::Update { old, new } if changed(&old, &new) => {
                if let Some(ns) = new.meta().namespace.as_deref() {
                    self.replenish(evaluator, ns);
                }
            }
            Notification::Delete(deleted) => {
                if let Some(ns) = deleted.object().meta().namespace.as_deref() {
                    self.replenish(evaluator, ns);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resourcequota::fixtures::quota;

    // The quota informer's UpdateFunc: only spec.hard changes queue a recalculation.
    #[test]
    fn only_changes_of_hard_limits_queue_an_update() {
        let old = quota(
            "rq",
            &[("pods", "2")],
            Some((&[("pods", "2")], &[("pods", "0")])),
        );
        let charged = quota(
            "rq",
            &[("pods", "2")],
            Some((&[("pods", "2")], &[("pods", "1")])),
        );
        assert!(!spec_hard_changed(&old, &charged));
        let same_value = quota("rq", &[("pods", "2000m")], None);
        assert!(!spec_hard_changed(&old, &same_value));
        let raised = quota("rq", &[("pods", "3")], None);
        assert!(spec_hard_changed(&old, &raised));
    }
}
