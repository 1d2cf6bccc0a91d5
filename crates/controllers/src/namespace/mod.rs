//! The namespace controller: empties terminating namespaces so that they can go.

pub mod conditions;
pub mod deleter;
