//! The ReplicaSet controller, which also serves ReplicationControllers: keeps `spec.replicas`
//! active pods for every ReplicaSet (k8s.io/kubernetes `pkg/controller/replicaset`).

pub mod pod_state;
pub mod replicas;
pub mod status;
