//! Admission: the plugins kube-apiserver runs on every write, in kube's order.
//!
//! Mirrors `staging/src/k8s.io/apiserver/pkg/admission` (attributes, the plugin interfaces and
//! the chain) and `pkg/kubeapiserver/options/plugins.go` (the recommended order and the plugins
//! that are on by default). A write first goes through every enabled plugin's mutating phase
//! ([`Plugin::admit`]), after the object was decoded and defaulted; the kind's own preparation
//! and validation follow, then every plugin's validating phase ([`Plugin::validate`]), then
//! storage. Dry-run writes are admitted the same way and store nothing.
//!
//! The plugins are in [`plugins`]; each lives in its own file named after kube's package.

mod cel_authorizer;
mod new_chain;
pub mod plugins;

mod always_admit;
mod always_deny;
pub mod default_storage_class;
pub mod default_toleration_seconds;
pub mod limitranger;
mod namespace_lifecycle;
pub mod node_restriction;
pub mod priority;
pub mod resource_quota;
pub mod serviceaccount;
pub mod storage_object_in_use_protection;
#[cfg(test)]
mod testing;
pub mod vap;
pub mod webhook;

pub use rkcm_server::admission::*;

pub use new_chain::{new_chain, new_plugin};
pub use plugins::Error;
