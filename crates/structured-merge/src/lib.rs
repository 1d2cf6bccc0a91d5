//! Structured merge and field ownership: the server-side apply engine.
//!
//! A Rust rendering of `sigs.k8s.io/structured-merge-diff`: [`Path`]s and [`Set`]s of fields
//! with kube's `FieldsV1` encoding ([`fields_v1`]), a [`Schema`] of element relationships
//! (atomic, set and map lists; atomic and granular maps; structs), the value operations that
//! follow those relationships ([`typed`]: field sets, compare, merge, remove; leaves compare
//! as [`value::equals`], numbers by numeric value) and the
//! [`Updater`] that merges an applied configuration for one manager, tracks which manager owns
//! which field and reports [`Conflicts`].

pub mod conflict;
pub mod fields_v1;
pub mod path;
pub mod schema;
pub mod set;
pub mod typed;
pub mod update;
pub mod value;

pub use conflict::{Conflict, Conflicts};
pub use path::{Path, PathElement};
pub use schema::{Atom, ListType, Schema, TypeRef};
pub use set::Set;
pub use typed::Comparison;
pub use update::{ManagedFields, UpdateError, Updater, VersionedSet};

/// Why a value could not be walked with its schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A list item cannot be named: a map-list item without its keys, a set item that is a
    /// map, or a duplicate entry in an applied list.
    #[error("{path}: {message}")]
    ListItem {
        /// Where the list is.
        path: String,
        /// What is wrong with the item.
        message: String,
    },
    /// Managed fields that are not a valid `FieldsV1` document.
    #[error("invalid FieldsV1: {0}")]
    FieldsV1(String),
}
