//! `x-kubernetes-validations`: CEL rules on CRD schemas, compiled when a CRD is written
//! ([`compile_rules`], reported by CRD validation) and evaluated on custom resources
//! ([`Validator`]), as apiextensions-apiserver's `pkg/apiserver/schema/cel`.
//!
//! rkcm-cel parses and type-checks each rule (cel-go's messages); the `cel` crate evaluates it,
//! with kube's libraries declared in [`library`].

pub mod authz;
mod compile;
mod decl;
pub mod field_path;
pub mod library;
mod schema_rules;
mod types;
mod validator;
mod values;

pub use compile::{compile_rules, CompileError, CompiledRule};
pub use decl::decl_type;
pub use schema_rules::validate_schema_rules;
pub use validator::{Outcome, Validator};
pub use values::to_value;

#[cfg(test)]
mod tests;
