//! The admission flags of kube-apiserver: which plugins run, and the settings of those that
//! have flags.

/// Default of `--default-not-ready-toleration-seconds` and
/// `--default-unreachable-toleration-seconds` (`defaulttolerationseconds`).
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// Admission settings (`AdmissionOptions` and the plugins' own flags).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionConfig {
    /// `--enable-admission-plugins`: plugins to run besides those on by default.
    pub enable_plugins: Vec<String>,
    /// `--disable-admission-plugins`: plugins not to run, even when on by default.
    pub disable_plugins: Vec<String>,
    /// `--default-not-ready-toleration-seconds`.
    pub default_not_ready_toleration_seconds: i64,
    /// `--default-unreachable-toleration-seconds`.
    pub default_unreachable_toleration_seconds: i64,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        Self {
            enable_plugins: Vec::new(),
            disable_plugins: Vec::new(),
            default_not_ready_toleration_seconds: DEFAULT_TOLERATION_SECONDS,
            default_unreachable_toleration_seconds: DEFAULT_TOLERATION_SECONDS,
        }
    }
}

impl AdmissionConfig {
    /// kube's defaults with `plugins` disabled, as kube's integration tests start their
    /// servers (`--disable-admission-plugins=ServiceAccount`).
    pub fn disabling(plugins: &[&str]) -> Self {
        Self {
            disable_plugins: plugins.iter().map(|p| p.to_string()).collect(),
            ..Self::default()
        }
    }
}
