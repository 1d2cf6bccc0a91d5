//! The workload control loops of kube-controller-manager: ReplicaSet (and ReplicationController),
//! Deployment, Job, CronJob, PodGC, the garbage collector and the namespace controller.

pub mod bootstrap;
pub mod certificates;
pub mod client_names;
pub mod clusterroleaggregation;
pub mod cronjob;
pub mod daemon;
pub mod deployment;
pub mod disruption;
pub mod endpoint;
pub mod endpointslice;
pub mod endpointslicemirroring;
pub mod featuregate;
pub mod garbagecollector;
pub mod job;
pub mod namespace;
pub mod node_options;
pub mod nodeipam;
pub mod nodelifecycle;
pub mod podautoscaler;
pub mod podendpoints;
pub mod podgc;
pub mod registry;
pub mod replicaset;
pub mod resourcequota;
pub mod rootcacertpublisher;
pub mod serviceaccount;
pub mod servicecidrs;
pub mod statefulset;
pub mod tainteviction;
pub mod ttl;
pub mod ttlafterfinished;
pub mod validatingadmissionpolicystatus;
pub mod volume;
