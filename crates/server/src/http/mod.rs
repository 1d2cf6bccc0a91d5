//! The generic HTTP layer (`staging/src/k8s.io/apiserver/pkg/endpoints` and `server/filters`):
//! the request filters (authentication, impersonation, authorization, in-flight limits), request
//! bodies, query parameters, content negotiation, the field manager options, the parsing of
//! resource paths, the decoding of bodies (strict field validation included) and the encoding
//! of answers (objects, tables, metadata, `Status`, warnings), label and field selection, and
//! the handlers of the verbs on resources ([`handlers`]).

pub mod body;
pub mod decode;
pub mod encode;
pub mod field_manager;
pub mod field_validation;
pub mod filter;
pub mod filters;
#[cfg(test)]
pub(crate) mod gate;
pub mod handlers;
pub mod held;
pub mod inflight;
pub mod negotiate;
pub mod params;
pub mod path;
pub mod table;
