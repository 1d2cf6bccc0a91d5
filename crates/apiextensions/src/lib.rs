//! CustomResourceDefinition schemas, as apiextensions-apiserver has them: structural schemas and their
//! invariants, validation of custom resources against a schema with kube's 422 causes, defaulting, pruning,
//! list-type and embedded-resource checks.
//!
//! A server serving a CRD version typically:
//! 1. converts and checks the version's schema once ([`Structural::from_props`], [`validate_structural`]);
//! 2. per request: [`pruning::prune`] unknown fields (answering with `unknown field` warnings), applies
//!    [`defaulting::default`], then collects errors from [`SchemaValidator::validate`],
//!    [`listtype::validate_list_sets_and_maps`] and [`objectmeta::validate_embedded_resources`], and returns
//!    them as a 422 `Status` whose `details.causes` are [`FieldError::cause`].

#![warn(missing_docs)]

pub mod crd;
pub mod defaulting;
pub mod field;
mod go_format;
pub mod listtype;
pub mod objectmeta;
pub mod pruning;
pub mod structural;
pub mod validation;

pub use field::{ErrorList, ErrorType, FieldError, Path};
pub use structural::{validate_structural, Structural};
pub use validation::SchemaValidator;
