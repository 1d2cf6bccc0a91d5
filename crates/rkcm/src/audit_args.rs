//! kube-apiserver's audit flags, as `rkcm up` takes them.

use std::path::PathBuf;

use clap::Args;
use rkcm_apiserver::audit::{AuditOptions, LogFormat};

/// `--audit-policy-file` and the log backend's `--audit-log-*` flags.
#[derive(Debug, Clone, Args)]
pub struct AuditArgs {
    /// Path to the file that defines the audit policy configuration (an `audit.k8s.io/v1`
    /// `Policy`). Without it nothing is audited.
    #[arg(long, value_name = "FILE")]
    pub audit_policy_file: Option<PathBuf>,

    /// If set, all requests coming to the apiserver will be logged to this file. '-' means
    /// standard out.
    #[arg(long, value_name = "PATH")]
    pub audit_log_path: Option<String>,

    /// The maximum number of days to retain old audit log files based on the timestamp encoded
    /// in their filename (0: forever).
    #[arg(long, default_value_t = 0, value_name = "DAYS")]
    pub audit_log_maxage: u64,

    /// The maximum number of old audit log files to retain (0: all).
    #[arg(long, default_value_t = 0, value_name = "COUNT")]
    pub audit_log_maxbackup: usize,

    /// The maximum size in megabytes of the audit log file before it gets rotated.
    #[arg(long, default_value_t = AuditOptions::DEFAULT_MAX_SIZE_MB, value_name = "MB")]
    pub audit_log_maxsize: u64,

    /// Format of saved audits: only "json" (one `audit.k8s.io/v1` `Event` per line);
    /// kube's "legacy" text format is not supported.
    #[arg(long, default_value = "json", value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<LogFormat>()), value_name = "FORMAT")]
    pub audit_log_format: LogFormat,
}

impl AuditArgs {
    /// The API server's audit settings.
    pub fn options(&self) -> AuditOptions {
        AuditOptions {
            policy_file: self.audit_policy_file.clone(),
            log_path: self.audit_log_path.clone(),
            max_age_days: self.audit_log_maxage,
            max_backups: self.audit_log_maxbackup,
            max_size_mb: self.audit_log_maxsize,
            format: self.audit_log_format,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        audit: AuditArgs,
    }

    #[test]
    fn flags_default_to_kubes_and_auditing_off() {
        let options = Cli::parse_from(["rkcm"]).audit.options();
        assert_eq!(options.policy_file, None);
        assert_eq!(options.log_path, None);
        assert_eq!(options.max_size_mb, 100);
        assert_eq!(options.max_backups, 0);
        assert_eq!(options.max_age_days, 0);
        assert_eq!(options.format, LogFormat::Json);
    }

    #[test]
    fn flags_are_read_and_legacy_format_refused() {
        let cli = Cli::parse_from([
            "rkcm",
            "--audit-policy-file=/etc/rkcm/audit.yaml",
            "--audit-log-path",
            "-",
            "--audit-log-maxage=7",
            "--audit-log-maxbackup=3",
            "--audit-log-maxsize=10",
        ]);
        let options = cli.audit.options();
        assert_eq!(
            options.policy_file,
            Some(PathBuf::from("/etc/rkcm/audit.yaml"))
        );
        assert_eq!(options.log_path.as_deref(), Some("-"));
        assert_eq!(
            (
                options.max_age_days,
                options.max_backups,
                options.max_size_mb
            ),
            (7, 3, 10)
        );
        let err = Cli::try_parse_from(["rkcm", "--audit-log-format=legacy"])
            .err()
            .expect("legacy refused");
        assert!(err.to_string().contains("not supported"), "{err}");
    }
}
