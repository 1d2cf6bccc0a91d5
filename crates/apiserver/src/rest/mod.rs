//! The generic registry: create, update, delete and subresource semantics over the [`Store`].
//!
//! Mirrors `staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go` together with
//! `registry/rest/{create,update,delete}.go`, with the per-kind behaviour taken from
//! [`crate::registry::Strategy`]. Bytes and HTTP live in the HTTP layer; this module works on
//! JSON values.
//!
//! One file per operation (create, get, update, delete, scale, binding) and per concern they
//! share (keys, names, request checks, system metadata, writes, namespaces).

mod binding;
mod create;
mod delete;
mod eviction;
mod get;
pub mod ip_addresses;
mod kubernetes_service;
mod namespaces;
pub mod node_ports;
mod priority_classes;
mod request_checks;
mod scale;
mod services;
mod system_metadata;
mod update;
mod write;

pub use binding::bind;
pub use create::create;
pub use delete::{delete, DeleteOptions, Deleted, FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
pub use eviction::{evict, Eviction};
pub use get::get;
pub use kubernetes_service::{
    ensure_kubernetes_service, Advertised, KUBERNETES_SERVICE_NAME, KUBERNETES_SERVICE_NAMESPACE,
};
pub use namespaces::{ensure_system_namespaces, NAMESPACE_FINALIZER, SYSTEM_NAMESPACES};
pub use priority_classes::ensure_system_priority_classes;
pub use request_checks::check_type;
pub use rkcm_server::rest::random_suffix;
pub use rkcm_server::rest::{key, prefix};
pub use scale::{scale_of, update_scale};
pub use update::{update, UpdateSource, UpdateTarget, Updated};
mod managed_fields;
pub(crate) use managed_fields::{field_manager, track_update};
pub use write::{storage_error, WriteOptions, UPDATE_ATTEMPTS};
