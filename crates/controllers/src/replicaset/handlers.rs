//! Informer notifications → queue keys and observed expectations (`addRS`, `updateRS`,
//! `deleteRS`, `addPod`, `updatePod`, `deletePod` of `replica_set.go`).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;
use rkcm_runtime::informer::{Deleted, Notification};
use rkcm_runtime::ObjectKey;

use super::pod_state::is_pod_ready;
use super::{ReplicaSetController, ReplicaSetKind};

/// The owner reference with `controller: true`, if any (`metav1.GetControllerOf`).
pub(crate) fn controller_of<R: Resource>(obj: &R) -> Option<&OwnerReference> {
    rkcm_runtime::controller_ref::controller_of(obj.meta())
}

impl<K: ReplicaSetKind> ReplicaSetController<K> {
    /// Dispatches a notification of the `K` informer.
    pub(crate) fn on_replica_set(&self, note: Notification<K>) {
        match note {
            Notification::Add(rs) => self.add_rs(&rs),
            Notification::Update { old, new } => self.update_rs(&old, &new),
            Notification::Delete(deleted) => self.delete_rs(&deleted),
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

    fn add_rs(&self, rs: &Arc<K>) {
        tracing::debug!(kind = %K::kind(&()), key = %ObjectKey::from_obj(&**rs), "adding");
        self.queue.add(ObjectKey::from_obj(&**rs));
    }

    fn update_rs(&self, old: &Arc<K>, new: &Arc<K>) {
        if old.meta().uid != new.meta().uid {
            // Re-created under the same name between two notifications: the old one is gone.
            self.delete_rs(&Deleted::FinalStateUnknown {
                key: ObjectKey::from_obj(&**old),
                last: Arc::clone(old),
            });
        }
        let (old_replicas, new_replicas) = (old.desired_replicas(), new.desired_replicas());
        if old_replicas != new_replicas {
            tracing::debug!(
                kind = %K::kind(&()),
                key = %ObjectKey::from_obj(&**new),
                old_replicas,
                new_replicas,
                "desired pod count changed"
            );
        }
        // Enqueue on every update, resyncs included: a resync retries objects whose last
        // creations failed (kube's comment in updateRS).
        self.queue.add(ObjectKey::from_obj(&**new));
    }

    fn delete_rs(&self, deleted: &Deleted<K>) {
        let key = match deleted {
            Deleted::Known(rs) => ObjectKey::from_obj(&**rs),
            Deleted::FinalStateUnknown { key, .. } => key.clone(),
        };
        tracing::debug!(kind = %K::kind(&()), %key, "deleting");
        // A new object with the same name starts clean.
        self.expectations.delete_expectations(&key);
        self.queue.add(key);
    }

    /// The `K` object `controller_ref` points to, if it is in the cache with the same UID.
    pub(crate) fn resolve_controller_ref(
        &self,
        namespace: &str,
        controller_ref: &OwnerReference,
    ) -> Option<Arc<K>> {
        // Look up by name only when the kind matches, then check the UID.
        if controller_ref.kind != K::kind(&()) {
            return None;
        }
        let rs = self
            .rs_store
            .get(&ObjectKey::new(namespace, controller_ref.name.clone()))?;
        (rs.meta().uid.as_deref() == Some(controller_ref.uid.as_str())).then_some(rs)
    }

    /// The `K` objects in the pod's namespace whose selector matches it; empty or invalid
    /// selectors match nothing here (`GetPodReplicaSets` / `GetPodControllers`).
    pub(crate) fn pod_replica_sets(&self, pod: &Pod) -> Vec<Arc<K>> {
        let labels = pod.metadata.labels.clone().unwrap_or_default();
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        let matching: Vec<_> = self
            .rs_store
            .list_by_namespace(namespace)
            .into_iter()
            .filter(|rs| match rs.selector() {
                Ok(selector) => !selector.is_empty() && selector.matches(&labels),
                Err(_) => false,
            })
            .collect();
        if matching.len() > 1 {
            // ControllerRef keeps this safe, but it is still a user error.
            tracing::warn!(
                kind = %K::kind(&()),
                pod = %ObjectKey::from_obj(pod),
                count = matching.len(),
                "user error: more than one controller selects this pod"
            );
        }
        matching
    }

    fn add_pod(&self, pod: &Arc<Pod>) {
        if pod.metadata.deletion_timestamp.is_some() {
            // After a restart a pod may first show up already being deleted: that is not a
            // creation to observe.
            self.delete_pod(pod);
            return;
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        if let Some(controller_ref) = controller_of(&**pod) {
            if let Some(rs) = self.resolve_controller_ref(namespace, controller_ref) {
                let rs_key = ObjectKey::from_obj(&*rs);
                tracing::debug!(pod = %ObjectKey::from_obj(&**pod), owner = %rs_key, "pod created");
                self.expectations.creation_observed(&rs_key);
                self.queue.add(rs_key);
            }
            return;
        }
        // An orphan: wake every matching controller so that one may adopt it. No controller
        // waits for an orphan, so no creation is observed.
        for rs in self.pod_replica_sets(pod) {
            self.queue.add(ObjectKey::from_obj(&*rs));
        }
    }

    fn update_pod(&self, old: &Arc<Pod>, cur: &Arc<Pod>) {
        if old.metadata.resource_version == cur.metadata.resource_version {
            // A periodic resync: two versions of a pod always differ in resourceVersion.
            return;
        }
        let label_changed = old.metadata.labels != cur.metadata.labels;
        if cur.metadata.deletion_timestamp.is_some() {
            // A graceful deletion started: replace the pod now rather than when the kubelet
            // finally removes it. The deletion timestamp cannot be unset, so the old pod's
            // owner only needs waking if the labels moved it.
            self.delete_pod(cur);
            if label_changed {
                self.delete_pod(old);
            }
            return;
        }
        let namespace = cur.metadata.namespace.as_deref().unwrap_or("");
        let cur_ref = controller_of(&**cur);
        let old_ref = controller_of(&**old);
        let ref_changed = cur_ref != old_ref;
        if ref_changed {
            if let Some(old_ref) = old_ref {
                if let Some(rs) = self.resolve_controller_ref(namespace, old_ref) {
                    self.queue.add(ObjectKey::from_obj(&*rs));
                }
            }
        }
        if let Some(cur_ref) = cur_ref {
            let Some(rs) = self.resolve_controller_ref(namespace, cur_ref) else {
                return;
            };
            let rs_key = ObjectKey::from_obj(&*rs);
            self.queue.add(rs_key.clone());
            let min_ready = rs.min_ready_seconds();
            if !is_pod_ready(old) && is_pod_ready(cur) && min_ready > 0 {
                // Check availability once minReadySeconds have passed; the extra second
                // avoids millisecond skew (kubernetes#39785).
                let after = Duration::from_secs(u64::try_from(min_ready).unwrap_or(0) + 1);
                tracing::debug!(pod = %ObjectKey::from_obj(&**cur), owner = %rs_key, ?after, "requeue for availability check");
                self.queue.add_after(rs_key, after);
            }
            return;
        }
        // An orphan: if anything changed, wake the matching controllers to adopt it.
        if label_changed || ref_changed {
            for rs in self.pod_replica_sets(cur) {
                self.queue.add(ObjectKey::from_obj(&*rs));
            }
        }
    }

    fn delete_pod(&self, pod: &Arc<Pod>) {
        // No controller cares about orphans being deleted.
        let Some(controller_ref) = controller_of(&**pod) else {
            return;
        };
        let namespace = pod.metadata.namespace.as_deref().unwrap_or("");
        let Some(rs) = self.resolve_controller_ref(namespace, controller_ref) else {
            return;
        };
        let rs_key = ObjectKey::from_obj(&*rs);
        let pod_key = ObjectKey::from_obj(&**pod);
        tracing::debug!(pod = %pod_key, owner = %rs_key, "pod deleted");
        self.expectations.deletion_observed(&rs_key, &pod_key);
        self.queue.add(rs_key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replicaset::fixtures::{label_map, new_pod, new_replica_set, Fixture};
    use k8s_openapi::api::apps::v1::ReplicaSet;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn ts() -> Time {
        Time(jiff::Timestamp::from_second(1_700_000_000).expect("valid"))
    }

    /// Ported from replica_set_test.go `TestPodControllerLookup`.
    #[tokio::test]
    async fn pods_are_matched_to_replica_sets_by_namespace_and_labels() {
        let f = Fixture::<ReplicaSet>::new(10);
        let foo_bar = label_map(&[("foo", "bar")]);
        let mut in_other_ns = new_replica_set(1, &foo_bar);
        in_other_ns.metadata.name = Some("foo".into());
        in_other_ns.metadata.namespace = Some("other".into());
        f.add_rs(in_other_ns);
        let mut bar = new_replica_set(1, &foo_bar);
        bar.metadata.name = Some("bar".into());
        bar.metadata.namespace = Some("ns".into());
        f.add_rs(bar);

        let mut unlabelled = new_pod("foo1", &new_replica_set(1, &foo_bar), "Pending", false);
        unlabelled.metadata.labels = None;
        unlabelled.metadata.namespace = Some("ns".into());
        assert!(f.ctrl.pod_replica_sets(&unlabelled).is_empty());

        let mut wrong_ns = new_pod("foo2", &new_replica_set(1, &foo_bar), "Pending", false);
        wrong_ns.metadata.namespace = Some("elsewhere".into());
        assert!(f.ctrl.pod_replica_sets(&wrong_ns).is_empty());

        let mut matching = wrong_ns.clone();
        matching.metadata.namespace = Some("ns".into());
        let found = f.ctrl.pod_replica_sets(&matching);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].metadata.name.as_deref(), Some("bar"));
    }

    /// Ported from replica_set_test.go `TestDeletionTimestamp`.
    #[tokio::test]
    async fn a_deletion_timestamp_counts_as_one_deletion() {
        let f = Fixture::<ReplicaSet>::new(10);
        let labels = label_map(&[("foo", "bar")]);
        let rs = new_replica_set(1, &labels);
        let rs_key = f.add_rs(rs.clone());
        let mut pod = new_pod("pod", &rs, "Pending", true);
        pod.metadata.deletion_timestamp = Some(ts());
        pod.metadata.resource_version = Some("1".into());
        let pod = Arc::new(pod);
        let pod_key = ObjectKey::from_obj(&*pod);

        // A pod added with a deletion timestamp observes a deletion, not a creation.
        f.ctrl
            .expectations()
            .expect_deletions(&rs_key, std::slice::from_ref(&pod_key));
        f.ctrl.on_pod(Notification::Add(Arc::clone(&pod)));
        assert_eq!(f.next_key().await, Some(rs_key.clone()));
        assert!(f.ctrl.expectations().satisfied_expectations(&rs_key));

        // An update that sets the deletion timestamp is a deletion.
        let mut old = new_pod("pod", &rs, "Pending", true);
        old.metadata.resource_version = Some("2".into());
        let old = Arc::new(old);
        f.ctrl
            .expectations()
            .expect_deletions(&rs_key, std::slice::from_ref(&pod_key));
        f.ctrl.on_pod(Notification::Update {
            old: Arc::clone(&old),
            new: Arc::clone(&pod),
        });
        assert_eq!(f.next_key().await, Some(rs_key.clone()));
        assert!(f.ctrl.expectations().satisfied_expectations(&rs_key));

        // Further updates of a deleting pod are not a second deletion.
        let second = new_pod("secondPod", &rs, "Pending", true);
        let second_key = ObjectKey::from_obj(&second);
        f.ctrl
            .expectations()
            .expect_deletions(&rs_key, &[second_key]);
        let mut old_deleting = (*old).clone();
        old_deleting.metadata.deletion_timestamp = Some(ts());
        f.ctrl.on_pod(Notification::Update {
            old: Arc::new(old_deleting),
            new: Arc::clone(&pod),
        });
        assert!(!f.ctrl.expectations().satisfied_expectations(&rs_key));

        // Nor is its final delete.
        f.ctrl
            .on_pod(Notification::Delete(Deleted::Known(Arc::clone(&pod))));
        assert!(!f.ctrl.expectations().satisfied_expectations(&rs_key));

        // Deleting the second pod clears the expectations.
        f.ctrl
            .on_pod(Notification::Delete(Deleted::Known(Arc::new(second))));
        assert!(f.ctrl.expectations().satisfied_expectations(&rs_key));
    }

    /// Ported from replica_set_test.go `TestDeleteFinalStateUnknown`.
    #[tokio::test]
    async fn a_tombstone_of_an_owned_pod_wakes_its_owner() {
        let f = Fixture::<ReplicaSet>::new(10);
        let rs = new_replica_set(1, &label_map(&[("foo", "bar")]));
        let key = f.add_rs(rs.clone());
        let pod = Arc::new(new_pod("pod0", &rs, "Running", true));
        f.ctrl
            .on_pod(Notification::Delete(Deleted::FinalStateUnknown {
                key: ObjectKey::new("default", "foo"),
                last: pod,
            }));
        assert_eq!(f.next_key().await, Some(key));
    }

    #[tokio::test]
    async fn the_rc_flavour_ignores_pods_controlled_by_a_replica_set_of_the_same_name() {
        use k8s_openapi::api::core::v1::{ReplicationController, ReplicationControllerSpec};
        let f = Fixture::<ReplicationController>::new(10);
        let labels = label_map(&[("foo", "bar")]);
        let rs = new_replica_set(1, &labels);
        let rc = ReplicationController {
            metadata: rs.metadata.clone(),
            spec: Some(ReplicationControllerSpec {
                replicas: Some(1),
                selector: Some(labels),
                ..Default::default()
            }),
            status: None,
        };
        let key = f.add_rs(rc);
        // Same name and uid, but the controller ref says ReplicaSet.
        f.ctrl.on_pod(Notification::Add(Arc::new(new_pod(
            "pod0", &rs, "Running", true,
        ))));
        assert_eq!(f.next_key().await, None);
        // An orphan with matching labels wakes the RC.
        f.ctrl.on_pod(Notification::Add(Arc::new(new_pod(
            "pod1", &rs, "Running", false,
        ))));
        assert_eq!(f.next_key().await, Some(key));
    }

    /// Ported from replica_set_test.go `TestOverlappingRSs`: a pod with a controller ref wakes
    /// only its owner.
    #[tokio::test]
    async fn an_owned_pod_wakes_only_its_owner_and_observes_a_creation() {
        let f = Fixture::<ReplicaSet>::new(10);
        let labels = label_map(&[("foo", "bar")]);
        let mut owner = None;
        for i in 1..10 {
            let mut rs = new_replica_set(1, &labels);
            rs.metadata.name = Some(format!("rs{i}"));
            rs.metadata.uid = Some(format!("uid-{i}"));
            if i == 4 {
                owner = Some(rs.clone());
            }
            f.add_rs(rs);
        }
        let owner = owner.expect("rs4");
        let owner_key = ObjectKey::from_obj(&owner);
        f.ctrl.expectations().expect_creations(&owner_key, 1);
        f.ctrl.on_pod(Notification::Add(Arc::new(new_pod(
            "pod", &owner, "Pending", true,
        ))));
        assert_eq!(f.next_key().await, Some(owner_key.clone()));
        assert_eq!(f.next_key().await, None);
        assert!(f.ctrl.expectations().satisfied_expectations(&owner_key));
    }

    #[tokio::test]
    async fn an_orphan_wakes_every_matching_replica_set_without_observing_anything() {
        let f = Fixture::<ReplicaSet>::new(10);
        let labels = label_map(&[("foo", "bar")]);
        let a = new_replica_set(1, &labels);
        let mut b = new_replica_set(1, &labels);
        b.metadata.name = Some("other".into());
        b.metadata.uid = Some("uid-other".into());
        let (ka, kb) = (f.add_rs(a.clone()), f.add_rs(b));
        f.ctrl.expectations().expect_creations(&ka, 1);
        f.ctrl.on_pod(Notification::Add(Arc::new(new_pod(
            "orphan", &a, "Pending", false,
        ))));
        let mut woken = vec![f.next_key().await, f.next_key().await];
        woken.sort();
        let mut expected = vec![Some(ka.clone()), Some(kb)];
        expected.sort();
        assert_eq!(woken, expected);
        assert!(!f.ctrl.expectations().satisfied_expectations(&ka));
    }

    /// Ported from replica_set_test.go `TestUpdatePods`: moving a pod between ReplicaSets
    /// wakes both.
    #[tokio::test]
    async fn a_pod_moving_between_owners_wakes_both() {
        let f = Fixture::<ReplicaSet>::new(10);
        let rs1 = new_replica_set(1, &label_map(&[("foo", "bar")]));
        let mut rs2 = new_replica_set(1, &label_map(&[("bar", "foo")]));
        rs2.metadata.name = Some("barfoo".into());
        rs2.metadata.uid = Some("uid-barfoo".into());
        let (k1, k2) = (f.add_rs(rs1.clone()), f.add_rs(rs2.clone()));

        let old = new_pod("pod", &rs1, "Running", true);
        let mut cur = new_pod("pod", &rs2, "Running", true);
        cur.metadata.resource_version = Some("2".into());
        f.ctrl.on_pod(Notification::Update {
            old: Arc::new(old.clone()),
            new: Arc::new(cur),
        });
        let mut woken = vec![f.next_key().await, f.next_key().await];
        woken.sort();
        let mut expected = vec![Some(k1.clone()), Some(k2)];
        expected.sort();
        assert_eq!(woken, expected);

        // A resync (same resourceVersion) is ignored.
        f.ctrl.on_pod(Notification::Update {
            old: Arc::new(old.clone()),
            new: Arc::new(old),
        });
        assert_eq!(f.next_key().await, None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_pod_turning_ready_requeues_its_owner_after_min_ready_seconds() {
        let f = Fixture::<ReplicaSet>::new(10);
        let mut rs = new_replica_set(1, &label_map(&[("foo", "bar")]));
        rs.spec.as_mut().expect("spec").min_ready_seconds = Some(10);
        let key = f.add_rs(rs.clone());
        let old = new_pod("pod", &rs, "Pending", true);
        let mut cur = new_pod("pod", &rs, "Running", true);
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

    #[tokio::test]
    async fn a_replica_set_recreated_under_the_same_name_starts_with_fresh_expectations() {
        let f = Fixture::<ReplicaSet>::new(10);
        let old = new_replica_set(1, &label_map(&[("foo", "bar")]));
        let key = f.add_rs(old.clone());
        f.ctrl.expectations().expect_creations(&key, 3);
        let mut new = old.clone();
        new.metadata.uid = Some("a-new-uid".into());
        f.ctrl.on_replica_set(Notification::Update {
            old: Arc::new(old),
            new: Arc::new(new),
        });
        assert!(f.ctrl.expectations().get_expectations(&key).is_none());
        assert_eq!(f.next_key().await, Some(key));
    }
}
