//! kube-apiserver's audit flags (`staging/src/k8s.io/apiserver/pkg/server/options/audit.go`,
//! the policy file and the log backend's) and the [`Auditor`] they make.

use std::path::PathBuf;
use std::str::FromStr;

use super::auditor::Auditor;
use super::backend::{LogBackend, LogTarget, DEFAULT_BUFFER_SIZE};
use super::checker::PolicyRuleEvaluator;
use super::policy::{Policy, PolicyError};
use super::rotation::Rotation;

/// `--audit-log-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// One `audit.k8s.io/v1` `Event` as JSON per line.
    #[default]
    Json,
}

impl FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "json" => Ok(LogFormat::Json),
            "legacy" => Err("--audit-log-format=legacy is not supported; use json".to_string()),
            other => Err(format!(
                "invalid --audit-log-format {other:?}: the only supported format is json"
            )),
        }
    }
}

/// The audit flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditOptions {
    /// `--audit-policy-file`: the `audit.k8s.io/v1` `Policy`; no auditing without one.
    pub policy_file: Option<PathBuf>,
    /// `--audit-log-path`: where events are written, `-` for stdout; no auditing without it.
    pub log_path: Option<String>,
    /// `--audit-log-maxage`: days rotated logs are kept (0: forever).
    pub max_age_days: u64,
    /// `--audit-log-maxbackup`: rotated logs kept (0: all).
    pub max_backups: usize,
    /// `--audit-log-maxsize`: megabytes a log grows to before it is rotated (0: 100).
    pub max_size_mb: u64,
    /// `--audit-log-format`.
    pub format: LogFormat,
}

/// Why auditing could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The policy file is unusable.
    #[error("--audit-policy-file")]
    Policy(#[from] PolicyError),
    /// The writer thread could not start.
    #[error("unable to start the audit log writer")]
    Writer(#[source] std::io::Error),
}

impl AuditOptions {
    /// kube's `--audit-log-maxsize` default.
    pub const DEFAULT_MAX_SIZE_MB: u64 = 100;

    /// The auditor these flags describe: `None` without a policy file or a log path (as kube,
    /// which has no backend then), an error when the policy is unusable.
    pub fn auditor(&self) -> Result<Option<Auditor>, AuditError> {
        let Some(policy_file) = &self.policy_file else {
            return Ok(None);
        };
        let policy = Policy::load(policy_file)?;
        let Some(log_path) = self.log_path.as_deref().filter(|p| !p.is_empty()) else {
            tracing::warn!(
                "--audit-policy-file is set without --audit-log-path: no audit events are written"
            );
            return Ok(None);
        };
        let target = if log_path == "-" {
            LogTarget::Stdout
        } else {
            LogTarget::File {
                path: PathBuf::from(log_path),
                rotation: Rotation {
                    max_size_mb: self.max_size_mb,
                    max_backups: self.max_backups,
                    max_age_days: self.max_age_days,
                },
            }
        };
        let backend = LogBackend::start(target, DEFAULT_BUFFER_SIZE).map_err(AuditError::Writer)?;
        Ok(Some(Auditor {
            evaluator: PolicyRuleEvaluator::new(policy),
            backend,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_json_format_is_accepted() {
        assert_eq!("json".parse::<LogFormat>(), Ok(LogFormat::Json));
        assert!("legacy"
            .parse::<LogFormat>()
            .expect_err("legacy")
            .contains("not supported"));
        assert!("yaml".parse::<LogFormat>().is_err());
    }

    #[test]
    fn without_a_policy_file_there_is_no_auditing() {
        let options = AuditOptions {
            log_path: Some("-".into()),
            ..AuditOptions::default()
        };
        assert!(options.auditor().expect("no error").is_none());
    }

    #[test]
    fn a_bad_policy_file_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("policy.yaml");
        std::fs::write(
            &file,
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: All\n",
        )
        .expect("write");
        let options = AuditOptions {
            policy_file: Some(file),
            log_path: Some("-".into()),
            ..AuditOptions::default()
        };
        let err = options.auditor().expect_err("bad level");
        let AuditError::Policy(source) = err else {
            panic!("want a policy error");
        };
        assert!(source.to_string().contains("rules[0].level"), "{source}");
    }
}
