//! The generic machinery of the API server, as `k8s.io/apiserver`: API errors as kube's
//! `Status`, deprecation warnings, authentication (client certificates, static and bootstrap
//! tokens, service-account tokens) and the authorization framework, the admission framework,
//! audit logging, the request metrics, TLS and kubeconfigs, and the generic registry (create, get, update,
//! delete and scale over the store, driven by a resource's strategy and hooks).
//!
//! It names no kind: Kubernetes' own API (the strategies of `pkg/registry` and the hooks of its
//! storages), the admission plugins and the authorizers live in the crates above it.

pub mod admission;
pub mod audit;
pub mod auth;
pub mod crd_conversion_metrics;
pub mod deprecation;
pub mod encryptionconfig;
pub mod error;
pub mod flowcontrol;
pub mod http;
pub mod kubeconfig;
pub mod metrics;
pub mod rest;
pub mod tls;
pub mod warning;
pub mod webhook;

pub use error::ApiError;
