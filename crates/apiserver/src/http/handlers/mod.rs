//! The handlers of resource requests, one file per verb (and per subresource with its own
//! rules): decode the request, call the registry ([`crate::rest`]), encode the answer.
//!
//! Mirrors `staging/src/k8s.io/apiserver/pkg/endpoints/handlers` (get.go, create.go, update.go,
//! patch.go, delete.go, watch.go). [`crate::http::resource`] routes a request to its handler.

pub mod access_reviews;
mod apply;
pub mod binding;
pub mod component_statuses;
pub mod create;
pub mod delete;
pub mod delete_collection;
pub mod eviction;
pub mod get;
pub mod list;
pub mod patch;
mod request;
pub mod reviews;
pub mod scale;
pub mod token_request;
pub mod update;
pub mod watch;

pub use request::ResourceRequest;
