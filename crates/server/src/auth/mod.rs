//! Authentication: who sent a request, as kube-apiserver's authenticator chain decides it.
//!
//! In kube's order: a client certificate verified against the cluster CA ([`x509`]), then the
//! bearer token — the admin token of `rkcm up`, the static token file ([`token_file`]), and
//! service-account tokens ([`serviceaccount`]) signed with the key in the data dir
//! ([`signing_key`]), their successes cached for 10 s ([`token_cache`]). A request without
//! credentials is the anonymous user; a request with bad credentials is refused (kube's
//! `union.NewFailOnError`), never treated as anonymous. Every user recognised gets the
//! `system:authenticated` group.
//!
//! The user travels with the request as a [`UserInfo`] extension, for the authorizer
//! ([`authorization`]); the anonymous user may read the public paths only (what kube's default
//! RBAC gives it).

pub mod authorization;
pub mod bootstrap_token;
pub mod chain;
pub mod impersonation;
pub mod jwt;
pub mod node_identity;
pub mod oidc;
pub mod request_user;
pub mod serviceaccount;
pub mod signing_key;
mod store_lookup;
pub mod token_cache;
pub mod token_file;
pub mod user;
pub mod x509;

pub use authorization::{Attributes, Decision};
pub use chain::{Authenticator, TokenResult};
pub use serviceaccount::{ObjectLookup, ServiceAccountTokens};
pub use signing_key::SigningKey;
pub use token_file::TokenFile;
pub use user::UserInfo;
pub use x509::ClientCertificate;
