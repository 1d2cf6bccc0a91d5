//! Validation of custom resources against a CRD's OpenAPI schema, with kube's 422 causes.
//!
//! kube validates with kube-openapi's `validate.SchemaValidator` and turns its results into field errors
//! (apiextensions-apiserver `pkg/apiserver/validation/validation.go`, `kubeOpenAPIResultToFieldErrors`). This module
//! walks the schema the same way, in the same validator order, and words every error as kube does. On update it
//! ratchets as kube does: errors in parts of the object the update did not change are not reported.

pub(crate) mod formats;
pub(crate) mod pattern;
mod ratcheting;
mod schema;

pub use schema::SchemaValidator;
