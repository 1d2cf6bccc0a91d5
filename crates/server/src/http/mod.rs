//! The generic HTTP layer (`staging/src/k8s.io/apiserver/pkg/endpoints` and `server/filters`):
//! the request filters (authentication, impersonation, authorization, in-flight limits), request
//! bodies, query parameters, content negotiation, the field manager options, and the parsing of
//! resource paths.

pub mod body;
pub mod field_manager;
pub mod filters;
pub mod inflight;
pub mod negotiate;
pub mod params;
pub mod path;
