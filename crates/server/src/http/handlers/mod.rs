//! The handlers of resource requests, one file per verb: decode the request, call the generic
//! registry ([`crate::rest`]), encode the answer. What they share is a [`Scope`] (kube's
//! `RequestScope`); the resource and the request itself are a [`ResourceRequest`].
//!
//! Mirrors `staging/src/k8s.io/apiserver/pkg/endpoints/handlers` (get.go, create.go, update.go,
//! patch.go, delete.go, watch.go). The server assembled above this crate routes each request to
//! its handler, and serves the subresources with rules of their own (bindings, evictions,
//! token requests, reviews) with handlers of its own.

mod apply;
pub mod create;
pub mod delete;
pub mod delete_collection;
pub mod get;
pub mod list;
pub mod patch;
mod request;
pub mod scale;
pub mod update;
pub mod watch;

pub use request::{ResourceRequest, Scope, WriteCheck};
