//! The admission framework, as `staging/src/k8s.io/apiserver/pkg/admission`: a request's
//! attributes, the plugin interfaces, the chain of plugins a request goes through, and the
//! configuration the plugins take.

pub mod attributes;
pub mod chain;
pub mod config;
pub mod metrics;
pub mod plugin;

pub use attributes::{forbidden, Attributes, Kind, Operation};
pub use chain::{Admission, Chain};
pub use config::{AdmissionConfig, DEFAULT_TOLERATION_SECONDS};
pub use plugin::{Plugin, PluginContext};
