//! What the filters inside the audit filter add to a request's events: annotations (the
//! authorizer's decision and reason) and the impersonated user (kube's `AuditContext`,
//! `staging/src/k8s.io/apiserver/pkg/audit/context.go`).

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::auth::UserInfo;

/// The request's `Audit-Id` (the client's `Audit-ID` header, else a fresh UUID) and when the
/// request arrived, set by the outermost filter (`WithAuditInit`, `WithRequestReceivedTimestamp`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditId {
    /// The id.
    pub id: String,
    /// When the request arrived, before authentication.
    pub received: jiff::Timestamp,
}

/// Annotation key of the authorizer's decision (`allow` or `forbid`).
pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
/// Annotation key of the authorizer's reason.
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// The part of an audited request's events that inner filters fill in. In the request's
/// extensions only when the policy audits the request, so the filters pay nothing otherwise.
/// Clones share the same record; the lock is held only to copy a value in or out.
#[derive(Clone, Debug, Default)]
pub struct AuditContext {
    inner: Arc<Mutex<Recorded>>,
}

#[derive(Debug, Default)]
struct Recorded {
    annotations: BTreeMap<String, String>,
    impersonated_user: Option<UserInfo>,
}

impl AuditContext {
    /// Adds an annotation; the first value of a key stays, as kube's `AddAuditAnnotation`
    /// keeps it and logs the conflict.
    pub fn add_annotation(&self, key: &str, value: impl Into<String>) {
        let mut inner = self.inner.lock();
        if !inner.annotations.contains_key(key) {
            inner.annotations.insert(key.to_string(), value.into());
        }
    }

    /// Records the authorizer's decision as kube's authorization filter does.
    pub fn record_authorization(&self, allowed: bool, reason: &str) {
        self.add_annotation(
            DECISION_ANNOTATION,
            if allowed { "allow" } else { "forbid" },
        );
        self.add_annotation(REASON_ANNOTATION, reason);
    }

    /// Records who the request impersonates (`LogImpersonatedUser`).
    pub fn set_impersonated_user(&self, user: UserInfo) {
        self.inner.lock().impersonated_user = Some(user);
    }

    /// The annotations so far.
    pub fn annotations(&self) -> BTreeMap<String, String> {
        self.inner.lock().annotations.clone()
    }

    /// The impersonated user, if any.
    pub fn impersonated_user(&self) -> Option<UserInfo> {
        self.inner.lock().impersonated_user.clone()
    }
}
