//! The request filters every request goes through before it is served, as kube-apiserver's
//! `staging/src/k8s.io/apiserver/pkg/endpoints/filters`: authentication, impersonation and
//! authorization (in that order from the outside in).

mod authentication;
mod authorization;
mod impersonation;

pub use authentication::{authenticate, is_public};
pub use authorization::authorize;
pub use impersonation::impersonate;
