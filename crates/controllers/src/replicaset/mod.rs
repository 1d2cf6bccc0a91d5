//! The ReplicaSet controller, which also serves ReplicationControllers: keeps `spec.replicas`
//! active pods for every ReplicaSet (k8s.io/kubernetes `pkg/controller/replicaset`).

pub mod kind;
pub mod pod_state;
mod rc_adapter;
pub mod replicas;
pub mod status;

pub use kind::ReplicaSetKind;
pub use replicas::BURST_REPLICAS;
