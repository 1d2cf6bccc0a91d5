//! PodGC: force-deletes terminated pods above a threshold, orphaned pods, and terminating pods
//! that will never finish (k8s.io/kubernetes `pkg/controller/podgc`).

pub mod rules;
