//! The workload control loops of kube-controller-manager: ReplicaSet (and ReplicationController),
//! Deployment, Job, PodGC, the garbage collector and the namespace controller.

pub mod deployment;
pub mod garbagecollector;
pub mod job;
pub mod namespace;
pub mod podgc;
pub mod registry;
pub mod replicaset;
pub mod rootcacertpublisher;
pub mod serviceaccount;
pub mod statefulset;
pub mod ttlafterfinished;
