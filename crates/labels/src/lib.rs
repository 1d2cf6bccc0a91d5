//! Label and field selectors: parsing, matching and canonical printing, as apimachinery `pkg/labels` and
//! `pkg/fields` have them. Shared by the API server (list/watch filtering) and the controller runtime.

#![warn(missing_docs)]

mod error;
pub mod fields;
mod parser;
mod selector;
mod set;
pub mod validation;

pub use error::Error;
pub use fields::{FieldOperator, FieldRequirement, FieldSelector};
pub use selector::{selects_everything, Operator, Requirement, Selector};
pub use set::set;
