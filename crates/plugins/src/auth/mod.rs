//! The authorizers and what RBAC needs beside them, over the generic authentication and
//! authorization machinery of [`rkcm_server::auth`] (re-exported here).

pub use rkcm_server::auth::*;

pub mod authorization;
pub mod bootstrap_policy;
pub mod escalation;

pub use authorization::{Attributes, Authorizer, Decision};
