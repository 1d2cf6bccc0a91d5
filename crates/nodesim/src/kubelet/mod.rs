//! A kubelet stand-in: moves pods bound to the simulated nodes through their lifecycle.

pub mod behaviour;
pub mod containers;
pub mod lifecycle;
pub mod pod_status;
pub mod time;

pub use lifecycle::{plan, Action, PlanInput};
