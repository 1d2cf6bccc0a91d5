//! Replicated workloads (Deployments, ReplicaSets, ReplicationControllers, StatefulSets): one
//! strategy for all of them, parameterised by a [`Workload`] entry that
//! names the kind's own defaulting and validation functions.
//!
//! What every workload kind shares — `spec.replicas` defaults, the spec/status split,
//! `metadata.generation`, replica-count status checks and the `/scale` subresource — is here
//! once; a kind's file holds only what kube's `strategy.go` and validation do for that kind.

mod defaults;
mod scale;
mod strategy;
mod validation;

pub(crate) use defaults::{default_replicas, default_template};
pub(crate) use scale::SelectorForm;
pub(crate) use strategy::{Workload, WorkloadStrategy};
pub(crate) use validation::{
    int_or_percent_value, percent, validate_apps_selector_and_template, validate_collision_count,
    validate_counts, validate_int_or_percent, validate_not_over_100_percent, validate_template,
};
