//! Authentication and authorization as kube-apiserver assembles them: the generic machinery of
//! [`rkcm_server::auth`] (re-exported here), the authorizer chain with its RBAC and Node modes
//! ([`authorization`]), RBAC's escalation checks, the bootstrap policy and the legacy token
//! tracking.

pub use rkcm_server::auth::*;

pub mod authorization;
pub mod bootstrap_policy;
pub mod escalation;
pub mod legacy_token_tracking;

pub use authorization::{Attributes, Authorizer, Decision};
