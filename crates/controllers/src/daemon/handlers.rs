//! Informer notifications → queue keys and observed expectations (`addDaemonset`,
//! `updateDaemonset`, `deleteDaemonset`, `addHistory`, `updateHistory`, `deleteHistory`,
//! `addPod`, `updatePod`, `deletePod`, `addNode`, `updateNode` of `daemon_controller.go`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use rkcm_labels::Selector;
use rkcm_runtime::controller_ref::controller_of;
use rkcm_runtime::informer::{Deleted, Notification};
use rkcm_runtime::ObjectKey;

use crate::replicaset::pod_state::is_pod_ready;

use super::placement::node_should_run_daemon_pod;
use super::DaemonSetsController;

/// The DaemonSet's selector; an invalid one selects nothing.
pub(crate) fn selector_of(ds: &DaemonSet) -> Selector {
    ds.spec
        .as_ref()
        .map(|s| Selector::from_label_selector(&s.selector).unwrap_or_else(|_| Selector::nothing()))
        .unwrap_or_else(Selector::nothing)
}

/// Whether a node update can change where daemons run: only labels and taints matter
/// (`shouldIgnoreNodeUpdate`; nil and empty compare equal, as `Semantic.DeepEqual`).
pub fn should_ignore_node_update(old: &Node, cur: &Node) -> bool {
    let labels = |n: &Node| n.metadata.labels.clone().unwrap_or_default();
    let taints = |n: &Node| -> Vec<Taint> {
        n.spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default()
    };
    labels(old) == labels(cur) && taints(old) == taints(cur)
}

impl DaemonSetsController {
    /// Dispatches a notification of the DaemonSet informer.
    pub(crate) fn on_daemon_set(&self, note: Notification<DaemonSet>) {
        match note {
            Notification::Add(ds) => {
                tracing::debug!(daemonset = %ObjectKey::from_obj(&*ds), "adding daemon set");
                self.queue.add(ObjectKey::from_obj(&*ds));
            }
            Notification::Update { old, new } => {
                if old.metadata.uid != new.metadata.uid {
                    // Re-created under the same name between two notifications.
                    self.delete_daemon_set(&Deleted::FinalStateUnknown {
                        key: ObjectKey::from_obj(&*old),
                        last: Arc::clone(&old),
                    });
                }
                tracing::debug!(daemonset = %ObjectKey::from_obj(&*new), "updating daemon set");
                self.queue.add(ObjectKey::from_obj(&*new));
            }
            Notification::Delete(deleted) => self.delete_daemon_set(&deleted),
        }
    }

    fn delete_daemon_set(&self, deleted: &Deleted<DaemonSet>) {
        let key = match deleted {
            Deleted::Known(ds) => ObjectKey::from_obj(&**ds),
            Deleted::FinalStateUnknown { key, .. } => key.clone(),
        };
        tracing::debug!(daemonset = %key, "deleting daemon set");
        // A new DaemonSet with the same name starts clean.
        self.expectations.delete_expectations(&key);
        self.queue.add(key);
    }

    /// The DaemonSet `controller_ref` points to, if it is cached with the same UID.
    pub(crate) fn resolve_controller_ref(
        &self,
        namespace: &str,
        controller_ref: &OwnerReference,
    ) -> Option<Arc<DaemonSet>> {
        if controller_ref.kind != "DaemonSet" {
            return None;
        }
        let ds = self
            .ds_store
            .get(&ObjectKey::new(namespace, controller_ref.name.clone()))?;
        (ds.metadata.uid.as_deref() == Some(controller_ref.uid.as_str())).then_some(ds)
    }

    /// DaemonSets in the object's namespace whose selector matches its labels; empty selectors
    /// match nothing here (`GetPodDaemonSets`, `GetHistoryDaemonSets`).
    fn daemon_sets_selecting(&self, meta: &ObjectMeta, what: &str) -> Vec<Arc<DaemonSet>> {
        let labels: BTreeMap<String, String> = meta.labels.clone().unwrap_or_default();
        let namespace = meta.namespace.as_deref().unwrap_or("");
        let sets: Vec<_> = self
            .ds_store
            .list_by_namespace(namespace)
            .into_iter()
            .filter(|ds| {
                let selector = selector_of(ds);
                !selector.is_empty() && selector.matches(&labels)
            })
            .collect();
        if sets.len() > 1 {
            // ControllerRef keeps this safe, but it is still a user error.
            tracing::warn!(
                name = meta.name.as_deref().unwrap_or(""),
                kind = what,
                count = sets.len(),
                "user error: more than one daemon set selects this object"
            );
        }
        sets
    }

    /// Dispatches a notification of the ControllerRevision informer.
    pub(crate) fn on_history(&self, note: Notification<ControllerRevision>) {
        match note {
            Notification::Add(history) => {
                if history.metadata.deletion_timestamp.is_some() {
                    self.delete_history(&history);
                    return;
                }
                if controller_of(&history.metadata).is_some() {
                    // A revision with an owner: nothing to wake (kube only logs it).
                    return;
                }
                for ds in self.daemon_sets_selecting(&history.metadata, "ControllerRevision") {
                    self.queue.add(ObjectKey::from_obj(&*ds));
                }
            }
            Notification::Update { old, new } => {
                if old.metadata.resource_version == new.metadata.resource_version {
                    return;
                }
                let namespace = new.metadata.namespace.as_deref().unwrap_or("");
                let cur_ref = controller_of(&new.metadata);
                let old_ref = controller_of(&old.metadata);
                let ref_changed = cur_ref != old_ref;
                if ref_changed {
                    if let Some(ds) =
                        old_ref.and_then(|r| self.resolve_controller_ref(namespace, r))
                    {
                        self.queue.add(ObjectKey::from_obj(&*ds));
                    }
                }
                if let Some(cur_ref) = cur_ref {
                    if let Some(ds) = self.resolve_controller_ref(namespace, cur_ref) {
                        self.queue.add(ObjectKey::from_obj(&*ds));
                    }
                    return;
                }
                let label_changed = old.metadata.labels != new.metadata.labels;
                if label_changed || ref_changed {
                    for ds in self.daemon_sets_selecting(&new.metadata, "ControllerRevision") {
                        self.queue.add(ObjectKey::from_obj(&*ds));
                    }
                }
            }
            Notification::Delete(deleted) => self.delete_history(deleted.object()),
        }
    }

    fn delete_history(&self, history: &ControllerRevision) {
        let Some(controller_ref) = controller_of(&history.metadata) else {
            return;
        };
        let namespace = history.metadata.namespace.as_deref().unwrap_or("");
        if let Some(ds) = self.resolve_controller_ref(namespace, controller_ref) {
            self.queue.add(ObjectKey::from_obj(&*ds));
        }
    }

    /// Dispatches a notification of the Pod informer.
    pub(crate) fn on_pod(&self, note: Notification<Pod>) {
        match note {
            Notification::Add(pod) => self.add_pod(&pod),
            Notification::Update { old, new } => self.update_pod(&old, &new),
            // A tombstone's pod may be stale; if its labels changed, the new owner only wakes
            // up at the next resync, as in kube.
            Notification::Delete(deleted) => self.delete_pod(deleted.object()),
        }
    }

    fn add_pod(&self, pod: &Pod) {
        if pod.metadata.deletion_timestamp.is_some() {
            // After a restart a pod may first show up already being deleted: not a creation.
            self.delete_pod(pod);
            return;
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        if let Some(controller_ref) = controller_of(&pod.metadata) {
            if let Some(ds) = self.resolve_controller_ref(namespace, controller_ref) {
                let key = ObjectKey::from_obj(&*ds);
                tracing::debug!(pod = %ObjectKey::from_obj(pod), daemonset = %key, "pod added");
                self.expectations.creation_observed(&key);
                self.queue.add(key);
            }
            return;
        }
        // An orphan: wake the matching sets so one may adopt it; nobody waits for it.
        for ds in self.daemon_sets_selecting(&pod.metadata, "Pod") {
            self.queue.add(ObjectKey::from_obj(&*ds));
        }
    }

    fn update_pod(&self, old: &Pod, cur: &Pod) {
        if old.metadata.resource_version == cur.metadata.resource_version {
            // A periodic resync.
            return;
        }
        if cur.metadata.deletion_timestamp.is_some() {
            // A graceful deletion started: count it now rather than when the kubelet is done.
            self.delete_pod(cur);
            return;
        }
        let namespace = cur.metadata.namespace.as_deref().unwrap_or("");
        let cur_ref = controller_of(&cur.metadata);
        let old_ref = controller_of(&old.metadata);
        let ref_changed = cur_ref != old_ref;
        if ref_changed {
            if let Some(ds) = old_ref.and_then(|r| self.resolve_controller_ref(namespace, r)) {
                self.queue.add(ObjectKey::from_obj(&*ds));
            }
        }
        if let Some(cur_ref) = cur_ref {
            let Some(ds) = self.resolve_controller_ref(namespace, cur_ref) else {
                return;
            };
            let key = ObjectKey::from_obj(&*ds);
            self.queue.add(key.clone());
            let min_ready = ds
                .spec
                .as_ref()
                .and_then(|s| s.min_ready_seconds)
                .unwrap_or(0);
            if !is_pod_ready(old) && is_pod_ready(cur) && min_ready > 0 {
                // Check availability after minReadySeconds; the extra second avoids
                // millisecond skew (kubernetes#39785).
                let after = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0) + 1);
                self.queue.add_after(key, after);
            }
            return;
        }
        let sets = self.daemon_sets_selecting(&cur.metadata, "Pod");
        let label_changed = old.metadata.labels != cur.metadata.labels;
        if label_changed || ref_changed {
            for ds in sets {
                self.queue.add(ObjectKey::from_obj(&*ds));
            }
        }
    }

    fn delete_pod(&self, pod: &Pod) {
        let Some(controller_ref) = controller_of(&pod.metadata) else {
            return;
        };
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        let Some(ds) = self.resolve_controller_ref(namespace, controller_ref) else {
            return;
        };
        let key = ObjectKey::from_obj(&*ds);
        tracing::debug!(pod = %ObjectKey::from_obj(pod), daemonset = %key, "pod deleted");
        // kube's DaemonSet expectations count deletions; they do not track which pod.
        self.expectations.lower_expectations(&key, 0, 1);
        self.queue.add(key);
    }

    /// Dispatches a notification of the Node informer (deletions need nothing: the pods of a
    /// deleted node are PodGC's).
    pub(crate) fn on_node(&self, note: Notification<Node>) {
        match note {
            Notification::Add(node) => {
                for ds in self.ds_store.list() {
                    if node_should_run_daemon_pod(&node, &ds).should_run {
                        self.queue.add(ObjectKey::from_obj(&*ds));
                    }
                }
            }
            Notification::Update { old, new } => {
                if should_ignore_node_update(&old, &new) {
                    return;
                }
                for ds in self.ds_store.list() {
                    if node_should_run_daemon_pod(&old, &ds)
                        != node_should_run_daemon_pod(&new, &ds)
                    {
                        self.queue.add(ObjectKey::from_obj(&*ds));
                    }
                }
            }
            Notification::Delete(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::fixtures::{new_daemon_set, new_node, new_pod, taint, Fixture};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    /// Ported from daemon_controller_test.go `TestAddNode`: only sets that should run on the new
    /// node wake up.
    #[tokio::test]
    async fn an_added_node_wakes_the_sets_that_should_run_on_it() {
        let f = Fixture::new();
        let mut selective = new_daemon_set("selective");
        selective
            .spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap()
            .node_selector = Some(BTreeMap::from([("role".to_string(), "gpu".to_string())]));
        f.add_ds(selective);
        f.ctrl
            .on_node(Notification::Add(Arc::new(new_node("n1", None))));
        assert_eq!(f.next_key().await, None);
        f.ctrl.on_node(Notification::Add(Arc::new(new_node(
            "n2",
            Some(&[("role", "gpu")]),
        ))));
        assert_eq!(
            f.next_key().await,
            Some(ObjectKey::new("default", "selective"))
        );
    }

    /// Ported from daemon_controller_test.go `TestUpdateNode`: label and taint changes that
    /// change the placement wake the set; other changes do not.
    #[tokio::test]
    async fn node_updates_wake_sets_whose_placement_changes() {
        let f = Fixture::new();
        let mut selective = new_daemon_set("ds");
        selective
            .spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap()
            .node_selector = Some(BTreeMap::from([("role".to_string(), "gpu".to_string())]));
        let key = f.add_ds(selective);
        let plain = new_node("n1", None);
        let labelled = new_node("n1", Some(&[("role", "gpu")]));
        // Gains the label.
        f.ctrl.on_node(Notification::Update {
            old: Arc::new(plain.clone()),
            new: Arc::new(labelled.clone()),
        });
        assert_eq!(f.next_key().await, Some(key.clone()));
        // Loses it.
        f.ctrl.on_node(Notification::Update {
            old: Arc::new(labelled.clone()),
            new: Arc::new(plain.clone()),
        });
        assert_eq!(f.next_key().await, Some(key.clone()));
        // Only the status changes: ignored.
        let mut not_ready = labelled.clone();
        not_ready.status = None;
        f.ctrl.on_node(Notification::Update {
            old: Arc::new(labelled.clone()),
            new: Arc::new(not_ready),
        });
        assert_eq!(f.next_key().await, None);
        // Gains a NoExecute taint: shouldContinueRunning changes.
        let mut tainted = labelled.clone();
        tainted.spec.get_or_insert_with(Default::default).taints =
            Some(vec![taint("evict", "", "NoExecute")]);
        f.ctrl.on_node(Notification::Update {
            old: Arc::new(labelled.clone()),
            new: Arc::new(tainted),
        });
        assert_eq!(f.next_key().await, Some(key));
        // A label the set does not care about: ignored though not ignorable.
        let mut other_label = labelled.clone();
        other_label
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("x".into(), "y".into());
        f.ctrl.on_node(Notification::Update {
            old: Arc::new(labelled),
            new: Arc::new(other_label),
        });
        assert_eq!(f.next_key().await, None);
    }

    #[test]
    fn nil_and_empty_labels_and_taints_compare_equal() {
        let a = new_node("n", None);
        let mut b = new_node("n", Some(&[]));
        b.spec.get_or_insert_with(Default::default).taints = Some(vec![]);
        assert!(should_ignore_node_update(&a, &b));
    }

    /// Ported from daemon_controller_test.go `TestAddPod`, `TestDeletePod` and
    /// `TestDeleteFinalStateUnknown`: pods observe creations and deletions of their owner.
    #[tokio::test]
    async fn owned_pods_observe_creations_and_deletions() {
        let f = Fixture::new();
        let ds = new_daemon_set("ds");
        let key = f.add_ds(ds.clone());
        f.ctrl.expectations().set_expectations(&key, 1, 2);
        f.ctrl
            .on_pod(Notification::Add(Arc::new(new_pod("p1", Some("n"), &ds))));
        assert_eq!(f.next_key().await, Some(key.clone()));
        assert_eq!(f.ctrl.expectations().get_expectations(&key), Some((0, 2)));
        let mut deleting = new_pod("p2", Some("n"), &ds);
        deleting.metadata.deletion_timestamp = Some(Time(crate::daemon::fixtures::ts(0)));
        deleting.metadata.resource_version = Some("2".into());
        f.ctrl.on_pod(Notification::Update {
            old: Arc::new(new_pod("p2", Some("n"), &ds)),
            new: Arc::new(deleting),
        });
        assert_eq!(f.ctrl.expectations().get_expectations(&key), Some((0, 1)));
        f.ctrl
            .on_pod(Notification::Delete(Deleted::FinalStateUnknown {
                key: ObjectKey::new("default", "p3"),
                last: Arc::new(new_pod("p3", Some("n"), &ds)),
            }));
        assert!(f.ctrl.expectations().satisfied_expectations(&key));
        assert_eq!(f.next_key().await, Some(key));
    }

    /// Ported from daemon_controller_test.go `TestAddPodOrphan` / `TestUpdatePodOrphan...`:
    /// orphans wake the matching sets without observing anything.
    #[tokio::test]
    async fn orphans_wake_matching_sets() {
        let f = Fixture::new();
        let ds = new_daemon_set("ds");
        let key = f.add_ds(ds.clone());
        let mut other = new_daemon_set("other");
        other.spec.as_mut().unwrap().selector.match_labels =
            Some(BTreeMap::from([("no".to_string(), "match".to_string())]));
        f.add_ds(other);
        f.ctrl.expectations().set_expectations(&key, 1, 0);
        let mut orphan = new_pod("orphan", Some("n"), &ds);
        orphan.metadata.owner_references = None;
        f.ctrl.on_pod(Notification::Add(Arc::new(orphan.clone())));
        assert_eq!(f.next_key().await, Some(key.clone()));
        assert_eq!(f.next_key().await, None);
        assert!(!f.ctrl.expectations().satisfied_expectations(&key));
        // An orphan update that changes nothing relevant wakes nobody.
        let mut touched = orphan.clone();
        touched.metadata.resource_version = Some("2".into());
        f.ctrl.on_pod(Notification::Update {
            old: Arc::new(orphan),
            new: Arc::new(touched),
        });
        assert_eq!(f.next_key().await, None);
    }

    /// Ported from daemon_controller_test.go `TestUpdatePodChangeControllerRef`.
    #[tokio::test]
    async fn a_pod_moving_between_owners_wakes_both() {
        let f = Fixture::new();
        let ds1 = new_daemon_set("ds1");
        let ds2 = new_daemon_set("ds2");
        let (k1, k2) = (f.add_ds(ds1.clone()), f.add_ds(ds2.clone()));
        let old = new_pod("p", Some("n"), &ds1);
        let mut cur = new_pod("p", Some("n"), &ds2);
        cur.metadata.resource_version = Some("2".into());
        f.ctrl.on_pod(Notification::Update {
            old: Arc::new(old),
            new: Arc::new(cur),
        });
        let mut woken = vec![f.next_key().await, f.next_key().await];
        woken.sort();
        assert_eq!(woken, vec![Some(k1), Some(k2)]);
    }

    /// Ported from daemon_controller_test.go `TestDeleteDaemonSet`... a re-created set starts with
    /// fresh expectations.
    #[tokio::test]
    async fn a_recreated_set_starts_with_fresh_expectations() {
        let f = Fixture::new();
        let old = new_daemon_set("ds");
        let key = f.add_ds(old.clone());
        f.ctrl.expectations().set_expectations(&key, 3, 0);
        let mut new = old.clone();
        new.metadata.uid = Some("another".into());
        f.ctrl.on_daemon_set(Notification::Update {
            old: Arc::new(old),
            new: Arc::new(new),
        });
        assert!(f.ctrl.expectations().get_expectations(&key).is_none());
        assert_eq!(f.next_key().await, Some(key));
    }

    /// Ported from daemon_controller_test.go `TestUpdatePodChangedToReady...`: a pod turning
    /// Ready requeues its set after minReadySeconds and a second.
    #[tokio::test(start_paused = true)]
    async fn a_pod_turning_ready_requeues_its_set_after_min_ready_seconds() {
        let f = Fixture::new();
        let mut ds = new_daemon_set("ds");
        ds.spec.as_mut().unwrap().min_ready_seconds = Some(10);
        let key = f.add_ds(ds.clone());
        let mut old = new_pod("p", Some("n"), &ds);
        old.status.as_mut().unwrap().conditions = None;
        let mut cur = new_pod("p", Some("n"), &ds);
        cur.metadata.resource_version = Some("2".into());
        f.ctrl.on_pod(Notification::Update {
            old: Arc::new(old),
            new: Arc::new(cur),
        });
        assert_eq!(f.next_key().await, Some(key.clone()));
        assert_eq!(f.next_key().await, None);
        tokio::time::advance(Duration::from_secs(12)).await;
        tokio::task::yield_now().await;
        assert_eq!(f.next_key().await, Some(key));
    }
}
