//! Authentication and authorization as kube-apiserver assembles them: the generic machinery of
//! [`rkcm_server::auth`] and the authorizers of [`rkcm_plugins::auth`] (both re-exported here),
//! with what the server writes at start: the bootstrap RBAC policy and the legacy token
//! tracking.

pub use rkcm_plugins::auth::*;

pub mod bootstrap_policy;
pub mod legacy_token_tracking;
