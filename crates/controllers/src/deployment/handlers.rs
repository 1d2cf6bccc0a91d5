//! Informer notifications → Deployment keys: which Deployments a Deployment, ReplicaSet or Pod
//! change concerns.
//!
//! Mirrors the event handlers of `pkg/controller/deployment/deployment_controller.go`. Handlers only
//! read the caches and enqueue; they never call the API.

use std::sync::Arc;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use rkcm_labels::Selector;
use rkcm_runtime::informer::{Notification, Store};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::ObjectKey;

use super::spec::{strategy_type, RECREATE};

/// The controller reference (`controller: true` owner) of an object.
pub(crate) fn controller_of(owners: Option<&Vec<OwnerReference>>) -> Option<&OwnerReference> {
    owners?.iter().find(|o| o.controller == Some(true))
}

/// The caches and queue the handlers work with.
pub(crate) struct Handlers {
    pub(crate) queue: RateLimitingQueue<ObjectKey>,
    pub(crate) deployments: Store<Deployment>,
    pub(crate) replica_sets: Store<ReplicaSet>,
    pub(crate) pods: Store<Pod>,
}

impl Handlers {
    fn enqueue(&self, d: &Deployment) {
        self.queue.add(ObjectKey::from_obj(d));
    }

    /// Every Deployment change is synced; a deleted one syncs to a no-op.
    pub(crate) fn on_deployment(&self, note: Notification<Deployment>) {
        match note {
            Notification::Add(d) => self.enqueue(&d),
            Notification::Update { new, .. } => self.enqueue(&new),
            Notification::Delete(deleted) => self.enqueue(deleted.object()),
        }
    }

    /// The Deployment a controller reference points to, if cached with the same UID.
    fn resolve_controller_ref(
        &self,
        namespace: &str,
        controller_ref: &OwnerReference,
    ) -> Option<Arc<Deployment>> {
        if controller_ref.kind != "Deployment" {
            return None;
        }
        let d = self
            .deployments
            .get(&ObjectKey::new(namespace, controller_ref.name.clone()))?;
        (d.metadata.uid.as_deref() == Some(controller_ref.uid.as_str())).then_some(d)
    }

    /// Deployments in the ReplicaSet's namespace whose selector matches its labels (candidates to
    /// adopt an orphan). More than one is a user error that controller references keep harmless.
    fn deployments_for_replica_set(&self, rs: &ReplicaSet) -> Vec<Arc<Deployment>> {
        let Some(labels) = rs.metadata.labels.as_ref() else {
            return Vec::new();
        };
        let namespace = rs.metadata.namespace.as_deref().unwrap_or_default();
        let matching: Vec<Arc<Deployment>> = self
            .deployments
            .list_by_namespace(namespace)
            .into_iter()
            .filter(|d| {
                let Some(spec) = d.spec.as_ref() else {
                    return false;
                };
                match Selector::from_label_selector(&spec.selector) {
                    // An empty selector matches nothing here (kube's GetDeploymentsForReplicaSet).
                    Ok(selector) => !selector.is_empty() && selector.matches(labels),
                    Err(_) => false,
                }
            })
            .collect();
        if matching.len() > 1 {
            tracing::debug!(replica_set = %ObjectKey::from_obj(rs), "more than one deployment selects the replica set");
        }
        matching
    }

    /// ReplicaSet changes wake the owning Deployment, or for orphans every matching Deployment.
    pub(crate) fn on_replica_set(&self, note: Notification<ReplicaSet>) {
        match note {
            Notification::Add(rs) => {
                if rs.metadata.deletion_timestamp.is_some() {
                    // Seen for the first time while already being deleted (e.g. after a restart).
                    self.replica_set_deleted(&rs);
                    return;
                }
                let namespace = rs.metadata.namespace.as_deref().unwrap_or_default();
                if let Some(controller_ref) = controller_of(rs.metadata.owner_references.as_ref()) {
                    if let Some(d) = self.resolve_controller_ref(namespace, controller_ref) {
                        self.enqueue(&d);
                    }
                    return;
                }
                for d in self.deployments_for_replica_set(&rs) {
                    self.enqueue(&d);
                }
            }
            Notification::Update { old, new } => {
                if old.metadata.resource_version == new.metadata.resource_version {
                    // A resync: nothing changed.
                    return;
                }
                let namespace = new.metadata.namespace.as_deref().unwrap_or_default();
                let cur_ref = controller_of(new.metadata.owner_references.as_ref());
                let old_ref = controller_of(old.metadata.owner_references.as_ref());
                let ref_changed = cur_ref != old_ref;
                if ref_changed {
                    if let Some(d) = old_ref.and_then(|r| self.resolve_controller_ref(namespace, r))
                    {
                        self.enqueue(&d);
                    }
                }
                if let Some(cur_ref) = cur_ref {
                    if let Some(d) = self.resolve_controller_ref(namespace, cur_ref) {
                        self.enqueue(&d);
                    }
                    return;
                }
                // An orphan: if its labels or owner changed, a Deployment may want to adopt it now.
                if ref_changed || old.metadata.labels != new.metadata.labels {
                    for d in self.deployments_for_replica_set(&new) {
                        self.enqueue(&d);
                    }
                }
            }
            Notification::Delete(deleted) => self.replica_set_deleted(deleted.object()),
        }
    }

    fn replica_set_deleted(&self, rs: &ReplicaSet) {
        // Nobody cares about orphans being deleted.
        let Some(controller_ref) = controller_of(rs.metadata.owner_references.as_ref()) else {
            return;
        };
        let namespace = rs.metadata.namespace.as_deref().unwrap_or_default();
        if let Some(d) = self.resolve_controller_ref(namespace, controller_ref) {
            self.enqueue(&d);
        }
    }

    /// A deleted pod wakes its Recreate Deployment once that Deployment has no pods left, so that the
    /// new ReplicaSet is scaled up without waiting for a resync.
    pub(crate) fn on_pod(&self, note: Notification<Pod>) {
        let Notification::Delete(deleted) = note else {
            return;
        };
        let pod = deleted.object();
        let Some(d) = self.deployment_for_pod(pod) else {
            return;
        };
        if strategy_type(&d) != RECREATE {
            return;
        }
        // The pods of the ReplicaSets this Deployment controls (kube lists them through the API;
        // the cache holds the same ReplicaSets).
        let uid = d.metadata.uid.clone().unwrap_or_default();
        let remaining: usize = self
            .replica_sets
            .by_index(rkcm_runtime::informer::CONTROLLER_UID_INDEX, &uid)
            .iter()
            .filter_map(|rs| rs.metadata.uid.clone())
            .map(|rs_uid| {
                self.pods
                    .by_index(rkcm_runtime::informer::CONTROLLER_UID_INDEX, &rs_uid)
                    .len()
            })
            .sum();
        if remaining == 0 {
            self.enqueue(&d);
        }
    }

    /// The Deployment owning the ReplicaSet that owns the pod.
    fn deployment_for_pod(&self, pod: &Pod) -> Option<Arc<Deployment>> {
        let controller_ref = controller_of(pod.metadata.owner_references.as_ref())?;
        if controller_ref.kind != "ReplicaSet" {
            return None;
        }
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        let rs = self
            .replica_sets
            .get(&ObjectKey::new(namespace, controller_ref.name.clone()))?;
        if rs.metadata.uid.as_deref() != Some(controller_ref.uid.as_str()) {
            return None;
        }
        let d_ref = controller_of(rs.metadata.owner_references.as_ref())?;
        self.resolve_controller_ref(namespace, d_ref)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deployment::fixtures::{new_deployment, rs};
    use crate::deployment::spec::RECREATE;
    use k8s_openapi::api::apps::v1::DeploymentStrategy;
    use kube::api::ObjectMeta;
    use rkcm_runtime::informer::Deleted;

    fn handlers() -> Handlers {
        Handlers {
            queue: RateLimitingQueue::new("deployment-handlers-test"),
            deployments: Store::new(),
            replica_sets: Store::new(),
            pods: Store::new(),
        }
    }

    fn owner(kind: &str, name: &str, uid: &str) -> OwnerReference {
        OwnerReference {
            api_version: "apps/v1".into(),
            kind: kind.into(),
            name: name.into(),
            uid: uid.into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    fn owned_rs(name: &str, d: &str, labels: &[(&str, &str)]) -> ReplicaSet {
        let mut r = rs(name, 1, labels, None);
        r.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        r.metadata.owner_references = Some(vec![owner("Deployment", d, &format!("uid-{d}"))]);
        r.metadata.resource_version = Some("1".into());
        r
    }

    async fn drain(h: &Handlers) -> Vec<String> {
        let mut keys = Vec::new();
        while !h.queue.is_empty() {
            let key = h.queue.get().await.expect("queue is not shut down");
            h.queue.done(&key);
            keys.push(key.name.clone());
        }
        keys.sort();
        keys
    }

    #[tokio::test]
    async fn a_replica_set_wakes_its_controller_or_every_matching_deployment_when_orphaned() {
        // TestAddReplicaSet and TestAddReplicaSetOrphan.
        let h = handlers();
        h.deployments.insert(Arc::new(new_deployment(
            "foo",
            1,
            None,
            None,
            None,
            &[("app", "web")],
        )));
        h.deployments.insert(Arc::new(new_deployment(
            "bar",
            1,
            None,
            None,
            None,
            &[("app", "web")],
        )));
        h.deployments.insert(Arc::new(new_deployment(
            "baz",
            1,
            None,
            None,
            None,
            &[("app", "db")],
        )));
        h.on_replica_set(Notification::Add(Arc::new(owned_rs(
            "foo-1",
            "foo",
            &[("app", "web")],
        ))));
        assert_eq!(drain(&h).await, ["foo"]);
        let mut orphan = owned_rs("orphan", "foo", &[("app", "web")]);
        orphan.metadata.owner_references = None;
        h.on_replica_set(Notification::Add(Arc::new(orphan)));
        assert_eq!(drain(&h).await, ["bar", "foo"]);
        // A controller reference to another kind or UID resolves to nothing.
        let mut foreign = owned_rs("foreign", "foo", &[("app", "web")]);
        foreign.metadata.owner_references = Some(vec![owner("Deployment", "foo", "other-uid")]);
        h.on_replica_set(Notification::Add(Arc::new(foreign)));
        assert!(drain(&h).await.is_empty());
    }

    #[tokio::test]
    async fn a_controller_reference_change_wakes_the_old_and_the_new_owner() {
        // TestUpdateReplicaSetChangeControllerRef.
        let h = handlers();
        h.deployments.insert(Arc::new(new_deployment(
            "foo",
            1,
            None,
            None,
            None,
            &[("app", "web")],
        )));
        h.deployments.insert(Arc::new(new_deployment(
            "bar",
            1,
            None,
            None,
            None,
            &[("app", "web")],
        )));
        let old = owned_rs("rs", "foo", &[("app", "web")]);
        let mut new = owned_rs("rs", "bar", &[("app", "web")]);
        new.metadata.resource_version = Some("2".into());
        h.on_replica_set(Notification::Update {
            old: Arc::new(old.clone()),
            new: Arc::new(new),
        });
        assert_eq!(drain(&h).await, ["bar", "foo"]);
        // A resync (same resourceVersion) is ignored.
        h.on_replica_set(Notification::Update {
            old: Arc::new(old.clone()),
            new: Arc::new(old),
        });
        assert!(drain(&h).await.is_empty());
    }

    #[tokio::test]
    async fn deleting_the_last_pod_wakes_a_recreate_deployment_only() {
        // TestPodDeletionEnqueuesRecreateDeployment / TestPodDeletionDoesntEnqueueRecreateDeployment.
        let h = handlers();
        let mut d = new_deployment("foo", 1, None, None, None, &[("app", "web")]);
        d.spec.as_mut().unwrap().strategy = Some(DeploymentStrategy {
            type_: Some(RECREATE.into()),
            rolling_update: None,
        });
        h.deployments.insert(Arc::new(d));
        let rs1 = owned_rs("foo-1", "foo", &[("app", "web")]);
        h.replica_sets.insert(Arc::new(rs1));
        let pod = |name: &str| {
            Arc::new(Pod {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    namespace: Some("default".into()),
                    owner_references: Some(vec![owner("ReplicaSet", "foo-1", "uid-foo-1")]),
                    ..Default::default()
                },
                ..Default::default()
            })
        };
        // Another pod remains: no sync.
        h.pods.insert(pod("p2"));
        h.on_pod(Notification::Delete(Deleted::Known(pod("p1"))));
        assert!(drain(&h).await.is_empty());
        // The last one is gone: sync.
        h.pods.remove(&ObjectKey::new("default", "p2"));
        h.on_pod(Notification::Delete(Deleted::FinalStateUnknown {
            key: ObjectKey::new("default", "p2"),
            last: pod("p2"),
        }));
        assert_eq!(drain(&h).await, ["foo"]);
        // A rolling Deployment is not woken by pod deletions.
        h.deployments.insert(Arc::new(new_deployment(
            "foo",
            1,
            None,
            None,
            None,
            &[("app", "web")],
        )));
        h.on_pod(Notification::Delete(Deleted::Known(pod("p3"))));
        assert!(drain(&h).await.is_empty());
    }

    #[tokio::test]
    async fn a_replica_set_seen_while_being_deleted_counts_as_deleted() {
        let h = handlers();
        h.deployments.insert(Arc::new(new_deployment(
            "foo",
            1,
            None,
            None,
            None,
            &[("app", "web")],
        )));
        let mut dying = owned_rs("foo-1", "foo", &[("app", "web")]);
        dying.metadata.deletion_timestamp = Some(crate::deployment::fixtures::ts(0));
        h.on_replica_set(Notification::Add(Arc::new(dying)));
        assert_eq!(drain(&h).await, ["foo"]);
        // Deleting an orphan wakes nobody.
        let mut orphan = owned_rs("orphan", "foo", &[("app", "web")]);
        orphan.metadata.owner_references = None;
        h.on_replica_set(Notification::Delete(Deleted::Known(Arc::new(orphan))));
        assert!(drain(&h).await.is_empty());
    }
}
