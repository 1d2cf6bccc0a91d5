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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statefulset::fixtures::{new_stateful_set, pod_of};
    use crate::statefulset::{Config, StatefulSetController};
    use rkcm_runtime::events::EventRecorder;
    use rkcm_runtime::informer::InformerFactory;
    use rkcm_runtime::testing::offline_client;

    fn controller() -> Arc<StatefulSetController> {
        let client = offline_client();
        let factory = InformerFactory::new(client.clone(), Duration::ZERO);
        let (recorder, _events) = EventRecorder::channel("statefulset-controller", 10);
        StatefulSetController::new(&factory, client, recorder, Config::default())
    }

    fn add_set(ctrl: &StatefulSetController, set: &StatefulSet) -> ObjectKey {
        ctrl.set_store.insert(Arc::new(set.clone()));
        ObjectKey::from_obj(set)
    }

    async fn drain(ctrl: &StatefulSetController) -> Vec<ObjectKey> {
        let mut keys = Vec::new();
        while !ctrl.queue.is_empty() {
            let key = ctrl.queue.get().await.expect("queue open");
            ctrl.queue.done(&key);
            keys.push(key);
        }
        keys
    }

    fn versioned(pod: &Pod, rv: &str) -> Arc<Pod> {
        let mut p = pod.clone();
        p.metadata.resource_version = Some(rv.into());
        Arc::new(p)
    }

    #[tokio::test]
    async fn pod_events_enqueue_their_controller() {
        // TestStatefulSetControllerAddPod, UpdatePod, DeletePod.
        let ctrl = controller();
        let set1 = new_stateful_set("foo", 3);
        let mut set2 = new_stateful_set("bar", 3);
        set2.spec.as_mut().unwrap().selector.match_labels =
            Some([("baz".to_string(), "qux".to_string())].into());
        let (k1, k2) = (add_set(&ctrl, &set1), add_set(&ctrl, &set2));
        let pod1 = pod_of(&set1, 0);
        let pod2 = pod_of(&set2, 0);
        ctrl.on_pod(Notification::Add(Arc::new(pod1.clone())));
        ctrl.on_pod(Notification::Add(Arc::new(pod2.clone())));
        assert_eq!(drain(&ctrl).await, [k1.clone(), k2.clone()]);

        // Same resource version: a resync, nothing to do.
        ctrl.on_pod(Notification::Update {
            old: versioned(&pod1, "1"),
            new: versioned(&pod1, "1"),
        });
        assert!(drain(&ctrl).await.is_empty());
        ctrl.on_pod(Notification::Update {
            old: versioned(&pod1, "1"),
            new: versioned(&pod1, "2"),
        });
        assert_eq!(drain(&ctrl).await, std::slice::from_ref(&k1));

        ctrl.on_pod(Notification::Delete(Deleted::Known(Arc::new(pod2.clone()))));
        assert_eq!(drain(&ctrl).await, std::slice::from_ref(&k2));
        ctrl.on_pod(Notification::Delete(Deleted::FinalStateUnknown {
            key: ObjectKey::from_obj(&pod1),
            last: Arc::new(pod1.clone()),
        }));
        assert_eq!(drain(&ctrl).await, [k1]);
    }

    #[tokio::test]
    async fn orphans_wake_every_matching_set_and_foreign_refs_none() {
        // TestStatefulSetControllerAddPodOrphan, AddPodNoSet, UpdatePodChangeControllerRef.
        let ctrl = controller();
        let set1 = new_stateful_set("foo", 3);
        let set2 = new_stateful_set("foo2", 3);
        let mut set3 = new_stateful_set("bar", 3);
        set3.spec.as_mut().unwrap().selector.match_labels =
            Some([("baz".to_string(), "qux".to_string())].into());
        let (k1, k2) = (add_set(&ctrl, &set1), add_set(&ctrl, &set2));
        add_set(&ctrl, &set3);
        let mut orphan = pod_of(&set1, 0);
        orphan.metadata.owner_references = None;
        ctrl.on_pod(Notification::Add(Arc::new(orphan.clone())));
        let mut keys = drain(&ctrl).await;
        keys.sort();
        assert_eq!(keys, [k1.clone(), k2.clone()]);

        // A controller ref to a set we do not know (wrong UID) wakes nothing.
        let mut foreign = pod_of(&set1, 1);
        foreign.metadata.owner_references.as_mut().unwrap()[0].uid = "other".into();
        ctrl.on_pod(Notification::Add(Arc::new(foreign)));
        assert!(drain(&ctrl).await.is_empty());

        // The controller ref moves from set1 to set2: both are synced.
        let old = versioned(&pod_of(&set1, 2), "1");
        let mut moved = pod_of(&set2, 2);
        moved.metadata.labels = old.metadata.labels.clone();
        let new = versioned(&moved, "2");
        ctrl.on_pod(Notification::Update { old, new });
        assert_eq!(drain(&ctrl).await, [k1, k2]);
    }

    #[tokio::test]
    async fn a_pod_added_while_terminating_counts_as_a_deletion() {
        let ctrl = controller();
        let set = new_stateful_set("foo", 3);
        let key = add_set(&ctrl, &set);
        let mut pod = pod_of(&set, 0);
        pod.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
        );
        ctrl.on_pod(Notification::Add(Arc::new(pod)));
        assert_eq!(drain(&ctrl).await, [key]);
    }
}
