//! API Priority and Fairness, as kube-apiserver enforces it
//! (`staging/src/k8s.io/apiserver/pkg/util/flowcontrol`): requests are classified by flow
//! schemas into priority levels, each with its share of the server's seats, and wait for a seat
//! in shuffle-sharded, fairly dispatched queues.
//!
//! This module names no kind: the crate that stores FlowSchemas and PriorityLevelConfigurations
//! decodes them into a [`Config`] and serves it through a [`ConfigSource`].

pub mod config;
pub mod controller;
pub mod dump;
pub mod estimate;
pub mod filter;
pub mod metrics;
pub mod queueset;
pub mod retry_after;
pub mod shuffle_sharding;

pub use config::{
    Config, ConfigSource, Distinguisher, Level, LevelKind, NonResourceRule, PolicyRules,
    ResourceRule, Schema, Subject,
};
pub use controller::{Clock, FlowControl, SystemClock, FLOW_SCHEMA_UID, PRIORITY_LEVEL_UID};
pub use estimate::ObjectCounts;
pub use filter::priority_and_fairness;
pub use queueset::Queuing;
