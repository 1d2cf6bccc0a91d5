//! The kinds the ReplicaSet controller serves, seen through one adapter trait: ReplicaSet itself
//! here, ReplicationController in `rc_adapter.rs` (kube converts RCs as if they were an older
//! version of ReplicaSet, `pkg/controller/replication/conversion.go`).

use std::fmt::Debug;

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetStatus};
use k8s_openapi::NamespaceResourceScope;
use kube::Resource;
use rkcm_labels::Selector;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// A kind whose objects keep `spec.replicas` pods running: ReplicaSet or ReplicationController.
///
/// The controller reads every object as a [`ReplicaSet`] (through [`ReplicaSetKind::to_replica_set`])
/// and writes status back in the kind's own shape (through [`ReplicaSetKind::set_status`]), so
/// one implementation serves both kinds.
pub trait ReplicaSetKind:
    Resource<DynamicType = (), Scope = NamespaceResourceScope>
    + Clone
    + DeserializeOwned
    + Serialize
    + Debug
    + Send
    + Sync
    + 'static
{
    /// Name of the work queue (the `name` label of the workqueue metrics).
    const QUEUE_NAME: &'static str;
    /// Name of the controller in logs and cache-sync messages.
    const CONTROLLER_NAME: &'static str;
    /// Event source component (`replicaset-controller`, `replication-controller`).
    const EVENT_SOURCE: &'static str;

    /// The object as a ReplicaSet (RC: map selector → `matchLabels`, optional template).
    fn to_replica_set(&self) -> ReplicaSet;

    /// Replaces the object's status with `status`, converted to the kind's own status type.
    fn set_status(&mut self, status: ReplicaSetStatus);

    /// The pod selector; `Err` if it cannot be parsed. An empty selector selects everything.
    fn selector(&self) -> Result<Selector, rkcm_labels::Error>;

    /// `spec.replicas`, defaulting to 1 as the API does.
    fn desired_replicas(&self) -> i32;

    /// `spec.minReadySeconds`, 0 when unset.
    fn min_ready_seconds(&self) -> i32;
}

impl ReplicaSetKind for ReplicaSet {
    const QUEUE_NAME: &'static str = "replicaset";
    const CONTROLLER_NAME: &'static str = "replicaset";
    const EVENT_SOURCE: &'static str = "replicaset-controller";

    fn to_replica_set(&self) -> ReplicaSet {
        self.clone()
    }

    fn set_status(&mut self, status: ReplicaSetStatus) {
        self.status = Some(status);
    }

    fn selector(&self) -> Result<Selector, rkcm_labels::Error> {
        match &self.spec {
            Some(spec) => Selector::from_label_selector(&spec.selector),
            // LabelSelectorAsSelector(nil) selects nothing.
            None => Ok(Selector::nothing()),
        }
    }

    fn desired_replicas(&self) -> i32 {
        self.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1)
    }

    fn min_ready_seconds(&self) -> i32 {
        self.spec
            .as_ref()
            .and_then(|s| s.min_ready_seconds)
            .unwrap_or(0)
    }
}
