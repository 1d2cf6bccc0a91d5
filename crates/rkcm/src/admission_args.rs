//! kube-apiserver's admission flags, as `rkcm up` takes them.

use clap::Args;
use rkcm_apiserver::admission::{AdmissionConfig, DEFAULT_TOLERATION_SECONDS};

/// `--enable-admission-plugins`, `--disable-admission-plugins` and the flags of the plugins
/// that have some.
#[derive(Debug, Clone, Args)]
pub struct AdmissionArgs {
    /// Admission plugins that should be enabled in addition to default enabled ones
    /// (NamespaceLifecycle, LimitRanger, ServiceAccount, DefaultStorageClass,
    /// DefaultTolerationSeconds, ResourceQuota, StorageObjectInUseProtection, Priority, …).
    /// The order of plugins in this flag does not matter. `rkcm up` enables NodeRestriction,
    /// as kubeadm does.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "NodeRestriction",
        value_name = "PLUGINS"
    )]
    pub enable_admission_plugins: Vec<String>,

    /// Admission plugins that should be disabled although they are in the default enabled
    /// plugins list. The order of plugins in this flag does not matter.
    #[arg(long, value_delimiter = ',', value_name = "PLUGINS")]
    pub disable_admission_plugins: Vec<String>,

    /// Indicates the tolerationSeconds of the toleration for notReady:NoExecute that is added by
    /// default to every pod that does not already have such a toleration.
    #[arg(long, default_value_t = DEFAULT_TOLERATION_SECONDS, value_name = "SECONDS")]
    pub default_not_ready_toleration_seconds: i64,

    /// Indicates the tolerationSeconds of the toleration for unreachable:NoExecute that is
    /// added by default to every pod that does not already have such a toleration.
    #[arg(long, default_value_t = DEFAULT_TOLERATION_SECONDS, value_name = "SECONDS")]
    pub default_unreachable_toleration_seconds: i64,
}

impl AdmissionArgs {
    /// The API server's admission settings.
    pub fn config(&self) -> AdmissionConfig {
        let names = |v: &[String]| {
            v.iter()
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        };
        AdmissionConfig {
            enable_plugins: names(&self.enable_admission_plugins),
            disable_plugins: names(&self.disable_admission_plugins),
            default_not_ready_toleration_seconds: self.default_not_ready_toleration_seconds,
            default_unreachable_toleration_seconds: self.default_unreachable_toleration_seconds,
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
        admission: AdmissionArgs,
    }

    #[test]
    fn flags_are_comma_separated_lists_with_kubes_defaults() {
        let cli = Cli::parse_from([
            "rkcm",
            "--enable-admission-plugins=AlwaysPullImages, AlwaysDeny",
            "--disable-admission-plugins",
            "ServiceAccount",
        ]);
        let config = cli.admission.config();
        assert_eq!(config.enable_plugins, ["AlwaysPullImages", "AlwaysDeny"]);
        assert_eq!(config.disable_plugins, ["ServiceAccount"]);
        assert_eq!(config.default_not_ready_toleration_seconds, 300);
        assert_eq!(config.default_unreachable_toleration_seconds, 300);
        let cli = Cli::parse_from(["rkcm", "--default-unreachable-toleration-seconds=60"]);
        assert_eq!(
            cli.admission
                .config()
                .default_unreachable_toleration_seconds,
            60
        );
        assert_eq!(
            cli.admission.config(),
            AdmissionConfig {
                enable_plugins: vec!["NodeRestriction".to_string()],
                default_unreachable_toleration_seconds: 60,
                ..AdmissionConfig::default()
            }
        );
    }
}
