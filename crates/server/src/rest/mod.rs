//! The generic registry: create, get, update, delete and scale over the [`Store`], with the
//! per-resource behaviour taken from a [`Strategy`] and the [`WriteHooks`] of [`Resources`].
//!
//! Mirrors `staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go` together with
//! `registry/rest/{create,update,delete}.go`. Bytes and HTTP live in the HTTP layer; this module
//! works on JSON values. It names no kind: the API served is handed in as [`Resources`].
//!
//! One file per operation (create, get, update, delete, scale) and per concern they share
//! (storage keys, names, request checks, system metadata, writes, field ownership).
//!
//! [`Store`]: rkcm_storage::store::Store

mod create;
mod delete;
mod get;
mod keys;
mod managed_fields;
pub mod names;
mod request_checks;
mod resources;
mod scale;
mod strategy;
mod system_metadata;
mod update;
mod write;

pub use create::create;
pub use delete::{delete, DeleteOptions, Deleted, FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
pub use get::get;
pub use keys::{key, prefix, UPDATE_ATTEMPTS};
pub use managed_fields::track_update;
pub use request_checks::{check_namespace, check_type, check_uid_precondition};
pub use resources::{PendingWrite, Resources, WriteHooks};
pub use scale::{scale_of, update_scale};
pub use strategy::{GracefulDelete, Strategy};
pub use system_metadata::{keep_system_metadata, same_content};
pub use update::{update, update_from, Parsed, UpdateSource, UpdateTarget, Updated};
pub use write::{storage_error, WriteOptions};

pub use names::random_suffix;
