//! Simulated nodes for rkcm, in the spirit of kwok.
//!
//! Everything goes through the Kubernetes API with a `kube::Client`, so the simulation works
//! against any cluster.

pub mod duration;
pub mod kubelet;
pub mod quantity;
pub mod scheduler;
