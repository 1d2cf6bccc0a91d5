//! Resource quota: how much of each quota-able resource an object uses, which quotas it falls
//! under, and the arithmetic on resource lists. One home for the ResourceQuota admission plugin
//! of the API server and the resourcequota controller, as `k8s.io/apiserver/pkg/quota/v1` and
//! `pkg/quota/v1/evaluator/core` are for kube.

pub mod evaluator;
pub mod persistent_volume_claims;
pub mod pods;
pub mod resources;
pub mod scopes;
pub mod services;

pub use evaluator::{calculate_usage, evaluators_for, Evaluator, GroupResource, Item, Operation};
pub use resources::ResourceList;

use crate::quantity::QuantityError;

/// Why usage could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A quantity of the object does not parse.
    #[error("invalid quantity in {field}")]
    Quantity {
        /// The field holding it.
        field: String,
        /// The parse error.
        #[source]
        source: QuantityError,
    },
    /// A scope selector cannot be evaluated.
    #[error("failed to parse and convert selector: {0}")]
    Selector(String),
    /// The evaluator was given an object of another kind.
    #[error("{0}")]
    WrongKind(&'static str),
}
