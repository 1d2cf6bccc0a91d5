//! Kubernetes-compatible API server.

pub mod registry;
