//! CustomResourceDefinitions as apiextensions-apiserver (Kubernetes 1.33) has them: structural schemas and their
//! invariants, validation of custom resources against a schema with kube's 422 causes, defaulting, pruning,
//! list-type and embedded-resource checks, `x-kubernetes-validations` CEL rules, validation of CRD objects and
//! the NamesAccepted check.
//!
//! A server serving CRDs:
//! 1. on CRD create and update, applies [`crd::set_defaults`] and refuses the CRD with the errors of
//!    [`crd::validate_custom_resource_definition`] (or `…_update`), and publishes the names
//!    [`crd::accepted_names`] decides;
//! 2. prepares each served version's schema once as a [`VersionSchema`];
//! 3. per custom-resource request: [`VersionSchema::prune`] (answering `unknown field` warnings),
//!    [`VersionSchema::coerce`], [`VersionSchema::apply_defaults`], then [`VersionSchema::validate`] (on update
//!    [`VersionSchema::validate_update`], which ratchets; both evaluate the `x-kubernetes-validations` CEL
//!    rules, see [`cel`]), and turns the errors into a 422 `Status` whose `details.causes` are
//!    [`FieldError::cause`].

#![warn(missing_docs)]

pub mod cel;
pub mod coerce;
pub mod crd;
pub mod defaulting;
pub mod field;
mod go_format;
pub mod listtype;
pub mod objectmeta;
pub mod pruning;
pub mod structural;
pub mod validation;
mod version_schema;

pub use field::{ErrorList, ErrorType, FieldError, Path};
pub use structural::{validate_structural, Structural};
pub use validation::SchemaValidator;
pub use version_schema::VersionSchema;
