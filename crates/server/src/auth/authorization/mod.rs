//! The authorization framework, as `staging/src/k8s.io/apiserver/pkg/authorization`: a request's
//! attributes, an authorizer's decision, policy rules and how one set covers another, and kube's
//! forbidden message. The authorizers themselves (RBAC, Node) and their chain live above.

pub mod attributes;
pub mod covers;
pub mod forbidden;
pub mod rules;

pub use attributes::Attributes;
pub use forbidden::forbidden;

/// An authorizer (`authorizer.Authorizer`): decides whether a request's user may do what it
/// asks. Implementations are shared by every request and called concurrently.
pub trait Authorize: Send + Sync {
    /// The decision on `attrs`.
    fn authorize(&self, attrs: &Attributes) -> Decision;
}

/// An authorizer's answer (`authorizer.Decision` with its reason).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Allowed, and why.
    Allow(String),
    /// Denied outright, and why (no later authorizer is asked).
    Deny(String),
    /// No opinion; the next authorizer decides. The reason says what was missing, if anything.
    NoOpinion(String),
}

impl Decision {
    /// Whether the request may go on.
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }

    /// The reason given.
    pub fn reason(&self) -> &str {
        match self {
            Decision::Allow(r) | Decision::Deny(r) | Decision::NoOpinion(r) => r,
        }
    }
}
