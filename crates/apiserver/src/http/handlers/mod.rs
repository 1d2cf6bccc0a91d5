//! The handlers of the subresources and resources with rules of their own: pod bindings and
//! evictions, service-account token requests, token and access reviews, component statuses.
//! The verbs on every other resource are the generic handlers of
//! [`rkcm_server::http::handlers`], re-exported here.
//!
//! Mirrors the REST storages of `pkg/registry` that are not a generic store (`pod/storage`'s
//! `BindingREST` and `EvictionREST`, `serviceaccount/storage`'s `TokenREST`, the review
//! storages of `authentication` and `authorization`, `componentstatus`).

pub mod access_reviews;
pub mod binding;
pub mod component_statuses;
pub mod eviction;
pub mod reviews;
mod subresource_admission;
pub mod token_request;

pub use rkcm_server::http::handlers::{
    create, delete, delete_collection, get, list, patch, scale, update, watch, ResourceRequest,
    Scope,
};
