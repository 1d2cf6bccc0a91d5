//! kube-controller-manager 1.33 flags for features rkcm does not have: accepted with kube's name,
//! type and default so that kube's command lines (kubeadm's static pod) start unchanged, and
//! logged once each as ignored when given.
//!
//! A new flag is one entry of [`IGNORED`].

use clap::parser::ValueSource;
use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches};

/// The type of a flag's value, as pflag names it in `--help`; values are checked as pflag would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `true`/`false` (Go's `strconv.ParseBool`); `--flag` alone means true.
    Bool,
    /// A decimal integer (`int`, `int32`).
    Int,
    /// A Go duration (`10s`, `1m0s`).
    Duration,
    /// Any string.
    String,
    /// A comma-separated list (`strings`, `stringToString`, `namedCertKey`); may be repeated.
    Strings,
}

impl Kind {
    fn value_name(self) -> &'static str {
        match self {
            Kind::Bool => "bool",
            Kind::Int => "int",
            Kind::Duration => "duration",
            Kind::String => "string",
            Kind::Strings => "strings",
        }
    }

    /// Checks `raw` as pflag parses a value of this kind, with pflag's error text.
    pub fn check(self, raw: &str) -> Result<String, String> {
        let ok = match self {
            Kind::Bool => parse_go_bool(raw).is_some(),
            Kind::Int => raw.parse::<i64>().is_ok(),
            Kind::Duration => rkcm_apimachinery::duration::Duration::parse(raw).is_ok(),
            Kind::String | Kind::Strings => true,
        };
        if ok {
            Ok(raw.to_string())
        } else {
            Err(format!(
                "invalid argument {raw:?}: not a valid {}",
                self.value_name()
            ))
        }
    }
}

/// Go's `strconv.ParseBool`.
pub fn parse_go_bool(raw: &str) -> Option<bool> {
    match raw {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// One accepted-but-ignored flag.
#[derive(Clone, Copy, Debug)]
pub struct IgnoredFlag {
    /// The long name, without `--`.
    pub name: &'static str,
    /// The value's type.
    pub kind: Kind,
    /// kube's default, as `--help` shows it (empty: none).
    pub default: &'static str,
    /// The `--help` section, as kube-controller-manager groups its flags.
    pub heading: &'static str,
    /// kube's help text.
    pub help: &'static str,
    /// Why rkcm ignores it.
    pub why: &'static str,
}

const fn flag(
    name: &'static str,
    kind: Kind,
    default: &'static str,
    heading: &'static str,
    help: &'static str,
    why: &'static str,
) -> IgnoredFlag {
    IgnoredFlag {
        name,
        kind,
        default,
        heading,
        help,
        why,
    }
}

use Kind::{Bool, Duration, Int, String as Str, Strings};

const DEBUG: &str = "Debugging flags";
const GENERIC: &str = "Generic flags";
const SERVICE: &str = "Service controller flags";
const SERVING: &str = "Secure serving flags";
const PV: &str = "Persistentvolume-binder controller flags";
const METRICS: &str = "Metrics flags";
const LOGS: &str = "Logs flags";
const MIGRATION: &str = "Leader-migration flags";

const NO_CLOUD: &str = "rkcm runs no cloud provider";

/// Every kube-controller-manager 1.33 flag rkcm accepts without acting on it.
pub const IGNORED: &[IgnoredFlag] = &[
    flag("contention-profiling", Bool, "false", DEBUG,
        "Enable block profiling, if profiling is enabled",
        "rkcm has no Go block profiler"),
    flag("cidr-allocator-type", Str, "RangeAllocator", GENERIC,
        "Type of CIDR allocator to use",
        "rkcm always allocates node CIDRs with the RangeAllocator"),
    flag("cloud-config", Str, "", GENERIC,
        "The path to the cloud provider configuration file. Empty string for no configuration file.",
        NO_CLOUD),
    flag("cloud-provider", Str, "", GENERIC,
        "The provider for cloud services. Empty string for no provider.",
        NO_CLOUD),
    flag("cluster-name", Str, "kubernetes", GENERIC,
        "The instance prefix for the cluster.",
        "only cloud providers name their resources after the cluster"),
    flag("configure-cloud-routes", Bool, "true", GENERIC,
        "Should CIDRs allocated by allocate-node-cidrs be configured on the cloud provider.",
        NO_CLOUD),
    flag("controller-start-interval", Duration, "0s", GENERIC,
        "Interval between starting controller managers.",
        "rkcm starts its controllers together"),
    flag("emulated-version", Strings, "", GENERIC,
        "The versions different components emulate their capabilities (APIs, features, ...) of.\nIf set, the component will emulate the behavior of this version instead of the underlying binary version.\nVersion format could only be major.minor, for example: '--emulated-version=wardle=1.2,kube=1.31'.",
        "rkcm behaves as kube-controller-manager 1.33 only"),
    flag("external-cloud-volume-plugin", Str, "", GENERIC,
        "The plugin to use when cloud provider is set to external. Can be empty, should only be set when cloud-provider is external. Currently used to allow node-ipam-controller, persistentvolume-binder-controller, persistentvolume-expander-controller and attach-detach-controller to work for in tree cloud providers.",
        NO_CLOUD),
    flag("kube-api-content-type", Str, "application/vnd.kubernetes.protobuf", GENERIC,
        "Content type of requests sent to apiserver.",
        "rkcm's clients always speak JSON"),
    flag("route-reconciliation-period", Duration, "10s", GENERIC,
        "The period for reconciling routes created for Nodes by cloud provider.",
        NO_CLOUD),
    flag("concurrent-service-syncs", Int, "1", SERVICE,
        "The number of services that are allowed to sync concurrently. Larger number = more responsive service management, but more CPU (and network) load",
        NO_CLOUD),
    flag("cert-dir", Str, "", SERVING,
        "The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored.",
        "the self-signed serving certificate is kept in memory"),
    flag("disable-http2-serving", Bool, "false", SERVING,
        "If true, HTTP2 serving will be disabled [default=false]",
        "the secure port always offers HTTP/2 and HTTP/1.1"),
    flag("http2-max-streams-per-connection", Int, "0", SERVING,
        "The limit that the server gives to clients for the maximum number of streams in an HTTP/2 connection. Zero means to use golang's default.",
        "the HTTP/2 stream limit is hyper's default"),
    flag("permit-address-sharing", Bool, "false", SERVING,
        "If true, SO_REUSEADDR will be used when binding the port. This allows binding to wildcard IPs like 0.0.0.0 and specific IPs in parallel, and it avoids waiting for the kernel to release sockets in TIME_WAIT state. [default=false]",
        "the port is bound with the platform's defaults"),
    flag("permit-port-sharing", Bool, "false", SERVING,
        "If true, SO_REUSEPORT will be used when binding the port, which allows more than one instance to bind on the same address and port. [default=false]",
        "the port is bound with the platform's defaults"),
    flag("tls-cipher-suites", Strings, "", SERVING,
        "Comma-separated list of cipher suites for the server. If omitted, the default Go cipher suites will be used.",
        "rustls' safe default cipher suites are used"),
    flag("tls-min-version", Str, "", SERVING,
        "Minimum TLS version supported. Possible values: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13",
        "rustls serves TLS 1.2 and 1.3 only"),
    flag("tls-sni-cert-key", Strings, "", SERVING,
        "A pair of x509 certificate and private key file paths, optionally suffixed with a list of domain patterns which are fully qualified domain names, possibly with prefixed wildcard segments.",
        "one serving certificate is used for every name"),
    flag("enable-hostpath-provisioner", Bool, "false", PV,
        "Enable HostPath PV provisioning when running without a cloud provider. This allows testing and development of provisioning features.  HostPath provisioning is not supported in any way, won't work in a multi-node cluster, and should not be used for anything other than testing or development.",
        "rkcm has no in-tree volume plugins"),
    flag("flex-volume-plugin-dir", Str, "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/", PV,
        "Full path of the directory in which the flex volume plugin should search for additional third party volume plugins.",
        "rkcm has no in-tree volume plugins"),
    flag("pv-recycler-increment-timeout-nfs", Int, "30", PV,
        "the increment of time added per Gi to ActiveDeadlineSeconds for an NFS scrubber pod",
        "rkcm does not recycle volumes"),
    flag("pv-recycler-minimum-timeout-hostpath", Int, "60", PV,
        "The minimum ActiveDeadlineSeconds to use for a HostPath Recycler pod.  This is for development and testing only and will not work in a multi-node cluster.",
        "rkcm does not recycle volumes"),
    flag("pv-recycler-minimum-timeout-nfs", Int, "300", PV,
        "The minimum ActiveDeadlineSeconds to use for an NFS Recycler pod",
        "rkcm does not recycle volumes"),
    flag("pv-recycler-pod-template-filepath-hostpath", Str, "", PV,
        "The file path to a pod definition used as a template for HostPath persistent volume recycling. This is for development and testing only and will not work in a multi-node cluster.",
        "rkcm does not recycle volumes"),
    flag("pv-recycler-pod-template-filepath-nfs", Str, "", PV,
        "The file path to a pod definition used as a template for NFS persistent volume recycling",
        "rkcm does not recycle volumes"),
    flag("pv-recycler-timeout-increment-hostpath", Int, "30", PV,
        "the increment of time added per Gi to ActiveDeadlineSeconds for a HostPath scrubber pod.  This is for development and testing only and will not work in a multi-node cluster.",
        "rkcm does not recycle volumes"),
    flag("volume-host-allow-local-loopback", Bool, "true", PV,
        "If false, deny local loopback IPs in addition to any CIDR ranges in --volume-host-cidr-denylist",
        "rkcm has no in-tree volume plugins"),
    flag("volume-host-cidr-denylist", Strings, "", PV,
        "A comma-separated list of CIDR ranges to avoid from volume plugins.",
        "rkcm has no in-tree volume plugins"),
    flag("allow-metric-labels", Strings, "", METRICS,
        "The map from metric-label to value allow-list of this label. The key's format is <MetricName>,<LabelName>. The value's format is <allowed_value>,<allowed_value>...e.g. metric1,label1='v1,v2,v3', metric1,label2='v1,v2,v3' metric2,label1='v1,v2,v3'.",
        "metric labels are not filtered"),
    flag("allow-metric-labels-manifest", Str, "", METRICS,
        "The path to the manifest file that contains the allow-list mapping. The format of the file is the same as the flag --allow-metric-labels. Note that the flag --allow-metric-labels will override the manifest file.",
        "metric labels are not filtered"),
    flag("disabled-metrics", Strings, "", METRICS,
        "This flag provides an escape hatch for misbehaving metrics. You must provide the fully qualified metric name in order to disable it. Disclaimer: disabling metrics is higher in precedence than showing hidden metrics.",
        "every metric is served"),
    flag("show-hidden-metrics-for-version", Str, "", METRICS,
        "The previous version for which you want to show hidden metrics. Only the previous minor version is meaningful, other values will not be allowed. The format is <major>.<minor>, e.g.: '1.16'. The purpose of this format is make sure you have the opportunity to notice if the next release hides additional metrics, rather than being surprised when they are permanently removed in the release after that.",
        "rkcm hides no metrics"),
    flag("log-flush-frequency", Duration, "5s", LOGS,
        "Maximum number of seconds between log flushes",
        "log lines are written as they come"),
    flag("log-json-info-buffer-size", Str, "0", LOGS,
        "[Alpha] In JSON format with split output streams, the info messages can be buffered for a while to increase performance. The default value of zero bytes disables buffering. The size can be specified as number of bytes (512), multiples of 1000 (1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi). Enable the LoggingAlphaOptions feature gate to use this.",
        "rkcm logs text only"),
    flag("log-json-split-stream", Bool, "false", LOGS,
        "[Alpha] In JSON format, write error messages to stderr and info messages to stdout. The default is to write a single stream to stdout. Enable the LoggingAlphaOptions feature gate to use this.",
        "rkcm logs text only"),
    flag("log-text-info-buffer-size", Str, "0", LOGS,
        "[Alpha] In text format with split output streams, the info messages can be buffered for a while to increase performance. The default value of zero bytes disables buffering. The size can be specified as number of bytes (512), multiples of 1000 (1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi). Enable the LoggingAlphaOptions feature gate to use this.",
        "log lines are written as they come"),
    flag("log-text-split-stream", Bool, "false", LOGS,
        "[Alpha] In text format, write error messages to stderr and info messages to stdout. The default is to write a single stream to stdout. Enable the LoggingAlphaOptions feature gate to use this.",
        "every log line goes to stderr"),
    flag("logging-format", Str, "text", LOGS,
        "Sets the log format. Permitted formats: \"text\".",
        "rkcm logs text only"),
    flag("vmodule", Strings, "", LOGS,
        "comma-separated list of pattern=N settings for file-filtered logging (only works for text log format)",
        "-v applies to every module"),
    flag("enable-leader-migration", Bool, "false", MIGRATION,
        "Whether to enable controller leader migration.",
        "rkcm runs no cloud-controller-manager to migrate leadership to"),
    flag("leader-migration-config", Str, "", MIGRATION,
        "Path to the config file for controller leader migration, or empty to use the value that reflects default configuration of the controller manager. The config file should be of type LeaderMigrationConfiguration, group controllermanager.config.k8s.io, version v1alpha1.",
        "rkcm runs no cloud-controller-manager to migrate leadership to"),
];

/// The ignored flags given on a command line, with their values.
#[derive(Clone, Debug, Default)]
pub struct IgnoredFlags {
    /// `(flag, value)` in [`IGNORED`]'s order; each flag once (its last value).
    pub given: Vec<(&'static IgnoredFlag, String)>,
}

impl IgnoredFlags {
    /// Logs one line per given flag, naming it.
    pub fn log(&self) {
        for (flag, value) in &self.given {
            tracing::warn!(
                flag = format!("--{}", flag.name),
                value = value.as_str(),
                reason = flag.why,
                "flag is accepted for compatibility with kube-controller-manager and ignored"
            );
        }
    }

    /// The names of the given flags.
    pub fn names(&self) -> Vec<&'static str> {
        self.given.iter().map(|(f, _)| f.name).collect()
    }
}

fn arg(flag: &'static IgnoredFlag) -> Arg {
    let kind = flag.kind;
    let mut arg = Arg::new(flag.name)
        .long(flag.name)
        .help(flag.help)
        .help_heading(flag.heading)
        .value_name(kind.value_name())
        .value_parser(move |raw: &str| kind.check(raw));
    arg = match kind {
        Kind::Bool => arg
            .num_args(0..=1)
            .require_equals(true)
            .default_missing_value("true")
            .action(ArgAction::Set),
        Kind::Strings => arg.action(ArgAction::Append),
        _ => arg.action(ArgAction::Set),
    };
    if !flag.default.is_empty() {
        arg = arg.default_value(flag.default);
    }
    arg
}

impl Args for IgnoredFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        IGNORED.iter().fold(cmd, |cmd, flag| cmd.arg(arg(flag)))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for IgnoredFlags {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let given = IGNORED
            .iter()
            .filter(|f| matches.value_source(f.name) == Some(ValueSource::CommandLine))
            .map(|f| {
                let values: Vec<String> = matches
                    .get_many::<String>(f.name)
                    .map(|v| v.cloned().collect())
                    .unwrap_or_default();
                (f, values.join(","))
            })
            .collect();
        Ok(Self { given })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, clap::Parser)]
    struct Cmd {
        #[command(flatten)]
        ignored: IgnoredFlags,
    }

    fn parse(args: &[&str]) -> Result<IgnoredFlags, clap::Error> {
        use clap::Parser;
        let mut argv = vec!["cmd"];
        argv.extend_from_slice(args);
        Cmd::try_parse_from(argv).map(|c| c.ignored)
    }

    #[test]
    fn only_flags_given_on_the_command_line_are_reported() {
        assert!(parse(&[]).expect("defaults").given.is_empty());
        let given = parse(&[
            "--cluster-name=kubernetes",
            "--cloud-provider",
            "external",
            "--tls-cipher-suites=a,b",
            "--tls-cipher-suites=c",
            "--disable-http2-serving",
        ])
        .expect("parses");
        assert_eq!(
            given.names(),
            [
                "cloud-provider",
                "cluster-name",
                "disable-http2-serving",
                "tls-cipher-suites"
            ]
        );
        let values: Vec<&str> = given.given.iter().map(|(_, v)| v.as_str()).collect();
        assert_eq!(values, ["external", "kubernetes", "true", "a,b,c"]);
    }

    #[test]
    fn values_are_checked_as_pflag_checks_them() {
        assert!(parse(&["--profiling-is-not-here=1"]).is_err());
        let err = parse(&["--configure-cloud-routes=maybe"]).expect_err("not a bool");
        assert!(
            err.to_string().contains("--configure-cloud-routes"),
            "{err}"
        );
        assert!(parse(&["--configure-cloud-routes=F"]).is_ok());
        assert!(parse(&["--concurrent-service-syncs=x"]).is_err());
        assert!(parse(&["--route-reconciliation-period=10"]).is_err());
        assert!(parse(&["--route-reconciliation-period=1m30s"]).is_ok());
    }

    #[test]
    fn go_bools_are_strconv_parse_bool() {
        for t in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_go_bool(t), Some(true), "{t}");
        }
        for f in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_go_bool(f), Some(false), "{f}");
        }
        assert_eq!(parse_go_bool("yes"), None);
    }

    #[test]
    fn every_entry_is_named_once_with_a_reason() {
        let mut names: Vec<&str> = IGNORED.iter().map(|f| f.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "a flag is listed twice");
        assert!(IGNORED
            .iter()
            .all(|f| !f.why.is_empty() && !f.help.is_empty()));
        for f in IGNORED.iter().filter(|f| !f.default.is_empty()) {
            assert!(f.kind.check(f.default).is_ok(), "{}", f.name);
        }
    }
}
