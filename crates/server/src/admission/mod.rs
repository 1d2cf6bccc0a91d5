//! The admission framework, as `staging/src/k8s.io/apiserver/pkg/admission`: a request's
//! attributes, the plugin interfaces, and the configuration the plugins take.

pub mod attributes;
pub mod config;
pub mod plugin;

pub use attributes::{forbidden, Attributes, Kind, Operation};
pub use config::{AdmissionConfig, DEFAULT_TOLERATION_SECONDS};
pub use plugin::{Plugin, PluginContext};
