//! What the audit filter shares between requests: the policy's evaluator and the backend.

use super::backend::LogBackend;
use super::checker::PolicyRuleEvaluator;

/// The server's auditing, present only when `--audit-policy-file` and `--audit-log-path` are
/// set. Immutable and shared by every request.
#[derive(Debug)]
pub struct Auditor {
    /// Which level and stages a request gets.
    pub evaluator: PolicyRuleEvaluator,
    /// Where events go.
    pub backend: LogBackend,
}
