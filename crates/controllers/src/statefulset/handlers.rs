//! Informer notifications → queue keys (`enqueueStatefulSet`, `addPod`, `updatePod`,
//! `deletePod` of kube's `stateful_set.go`).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use rkcm_runtime::controller_ref::controller_of;
use rkcm_runtime::informer::{Deleted, Notification};
use rkcm_runtime::labels::Selector;
use rkcm_runtime::ObjectKey;

use super::status::min_ready_seconds;
use super::StatefulSetController;
use crate::replicaset::pod_state::is_pod_ready;

impl StatefulSetController {
    /// Dispatches a notification of the StatefulSet informer: every add, update and delete
    /// enqueues the set.
    pub(crate) fn on_set(&self, note: Notification<StatefulSet>) {
        let key = match &note {
            Notification::Add(set) => ObjectKey::from_obj(&**set),
            Notification::Update { new, .. } => ObjectKey::from_obj(&**new),
            Notification::Delete(Deleted::Known(set)) => ObjectKey::from_obj(&**set),
            Notification::Delete(Deleted::FinalStateUnknown { key, .. }) => key.clone(),
        };
        self.queue.add(key);
    }

    /// Dispatches a notification of the Pod informer.
    pub(crate) fn on_pod(&self, note: Notification<Pod>) {
        match note {
            Notification::Add(pod) => self.add_pod(&pod),
            Notification::Update { old, new } => self.update_pod(&old, &new),
            Notification::Delete(deleted) => self.delete_pod(deleted.object()),
        }
    }

    fn add_pod(&self, pod: &Arc<Pod>) {
        if pod.metadata.deletion_timestamp.is_some() {
            self.delete_pod(pod);
            return;
        }
        if let Some(r) = controller_of(&pod.metadata) {
            if let Some(set) = self.resolve_controller_ref(pod, r) {
                self.queue.add(ObjectKey::from_obj(&*set));
            }
            return;
        }
        for set in self.sets_for_pod(pod) {
            self.queue.add(ObjectKey::from_obj(&*set));
        }
    }

    fn update_pod(&self, old: &Arc<Pod>, cur: &Arc<Pod>) {
        if old.metadata.resource_version == cur.metadata.resource_version {
            return;
        }
        let label_changed = old.metadata.labels != cur.metadata.labels;
        let cur_ref = controller_of(&cur.metadata);
        let old_ref = controller_of(&old.metadata);
        let ref_changed = cur_ref != old_ref;
        if ref_changed {
            if let Some(set) = old_ref.and_then(|r| self.resolve_controller_ref(old, r)) {
                self.queue.add(ObjectKey::from_obj(&*set));
            }
        }
        if let Some(r) = cur_ref {
            let Some(set) = self.resolve_controller_ref(cur, r) else {
                return;
            };
            let key = ObjectKey::from_obj(&*set);
            self.queue.add(key.clone());
            let min_ready = min_ready_seconds(&set);
            if !is_pod_ready(old) && is_pod_ready(cur) && min_ready > 0 {
                // A second more to avoid millisecond skew in add_after, as kube.
                self.queue
                    .add_after(key, Duration::from_secs(min_ready as u64 + 1));
            }
            return;
        }
        if label_changed || ref_changed {
            for set in self.sets_for_pod(cur) {
                self.queue.add(ObjectKey::from_obj(&*set));
            }
        }
    }

    fn delete_pod(&self, pod: &Arc<Pod>) {
        let Some(r) = controller_of(&pod.metadata) else {
            return;
        };
        if let Some(set) = self.resolve_controller_ref(pod, r) {
            self.queue.add(ObjectKey::from_obj(&*set));
        }
    }

    /// The set a controller reference names, if it is a StatefulSet with that UID.
    fn resolve_controller_ref(&self, pod: &Pod, r: &OwnerReference) -> Option<Arc<StatefulSet>> {
        if r.kind != "StatefulSet" {
            return None;
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        let set = self.set_store.get(&ObjectKey::new(namespace, &r.name))?;
        (set.metadata.uid.as_deref() == Some(r.uid.as_str())).then_some(set)
    }

    /// The sets whose selector matches the pod's labels (`GetPodStatefulSets`).
    fn sets_for_pod(&self, pod: &Pod) -> Vec<Arc<StatefulSet>> {
        let Some(labels) = pod.metadata.labels.as_ref() else {
            return Vec::new();
        };
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        let sets: Vec<_> = self
            .set_store
            .list_by_namespace(namespace)
            .into_iter()
            .filter(|set| {
                let Some(spec) = set.spec.as_ref() else {
                    return false;
                };
                match Selector::from_label_selector(&spec.selector) {
                    // An empty selector matches nothing here, as the lister.
                    Ok(sel) if !sel.is_empty() => sel.matches(labels),
                    _ => false,
                }
            })
            .collect();
        if sets.len() > 1 {
            let names: Vec<_> = sets
                .iter()
                .map(|s| s.metadata.name.clone().unwrap_or_default())
                .collect();
            tracing::error!(
                ?labels,
                sets = ?names,
                "user error: more than one StatefulSet is selecting pods with labels"
            );
        }
        sets
    }
}
