//! The request filters every request goes through before it is served, as kube-apiserver's
//! `staging/src/k8s.io/apiserver/pkg/endpoints/filters`: the audit id, authentication, audit,
//! impersonation and authorization (in that order from the outside in; the audit filters only
//! when auditing is on).

pub mod audit;
mod authentication;
mod authorization;
mod impersonation;

pub use audit::{audit, audit_init};
pub use authentication::{authenticate, is_public, AuthenticationFailed};
pub use authorization::authorize;
pub use impersonation::impersonate;
