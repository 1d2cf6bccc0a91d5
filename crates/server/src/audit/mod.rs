//! Audit logging, as `staging/src/k8s.io/apiserver/pkg/audit` and its log backend: a policy
//! (`--audit-policy-file`) decides how much of each request is recorded, and events
//! (`audit.k8s.io/v1` `Event`) are written as JSON lines to `--audit-log-path` without holding up
//! requests. The filter that generates the events is [`crate::http::filters::audit`].

pub mod auditor;
pub mod backend;
pub mod checker;
pub mod context;
pub mod event;
pub mod metrics;
pub mod options;
pub mod policy;
pub mod rotation;

pub use auditor::Auditor;
pub use backend::{LogBackend, LogTarget};
pub use checker::{PolicyRuleEvaluator, RequestAuditConfig};
pub use context::{AuditContext, AuditId};
pub use event::{Event, ObjectReference, ResponseStatus};
pub use options::{AuditError, AuditOptions, LogFormat};
pub use policy::{GroupResources, Level, Policy, PolicyError, PolicyRule, Stage};
pub use rotation::{RotatingFile, Rotation};
