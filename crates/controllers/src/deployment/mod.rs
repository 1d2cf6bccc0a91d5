//! The Deployment controller: rolling updates, recreate, rollback, pause, proportional scaling,
//! progress deadlines and revision history. Mirrors kube's `pkg/controller/deployment`.
//!
//! Decisions are pure functions over plain values, in one file per concept: `fenceposts`
//! (maxSurge / maxUnavailable), `annotations` (revisions, replicas annotations), `conditions`
//! (status conditions and progress checks), `hash` (pod-template-hash), `replica_sets` (new / old /
//! active ReplicaSets), `replicas` (counts and proportions).

pub mod annotations;
pub mod conditions;
pub mod fenceposts;
pub mod hash;
pub mod replica_sets;
pub mod replicas;
pub mod spec;

#[cfg(test)]
mod fixtures;
