//! The secure port's delegated authentication and authorization flags, and `--profiling`, named
//! and defaulted as kube-controller-manager's (`k8s.io/apiserver/pkg/server/options`
//! `DelegatingAuthenticationOptions`, `DelegatingAuthorizationOptions`, component-base's
//! `DebuggingOptions`).

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args};

/// Who may call the secure port, and whether profiling is served there.
#[derive(Debug, Clone, Args)]
pub struct DelegationArgs {
    /// Enable profiling via web interface host:port/debug/pprof/
    #[arg(long, default_value_t = true, action = ArgAction::Set, num_args = 0..=1,
          require_equals = true, default_missing_value = "true", help_heading = "Debugging flags")]
    pub profiling: bool,

    /// kubeconfig file pointing at the 'core' kubernetes server with enough rights to create
    /// tokenreviews.authentication.k8s.io. This is optional. If empty, all token requests are
    /// considered to be anonymous and no client CA is looked up in the cluster.
    #[arg(long, value_name = "string", help_heading = "Authentication flags")]
    pub authentication_kubeconfig: Option<PathBuf>,

    /// If false, the authentication-kubeconfig will be used to lookup missing authentication
    /// configuration from the cluster.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1,
          require_equals = true, default_missing_value = "true", help_heading = "Authentication flags")]
    pub authentication_skip_lookup: bool,

    /// The duration to cache responses from the webhook token authenticator.
    #[arg(long, default_value = "10s", value_parser = rkcm_apimachinery::duration::parse_non_negative,
          value_name = "duration", help_heading = "Authentication flags")]
    pub authentication_token_webhook_cache_ttl: Duration,

    /// If true, failures to look up missing authentication configuration from the cluster are
    /// not considered fatal. Note that this can result in authentication that treats all
    /// requests as anonymous.
    #[arg(long, default_value_t = false, action = ArgAction::Set, num_args = 0..=1,
          require_equals = true, default_missing_value = "true", help_heading = "Authentication flags")]
    pub authentication_tolerate_lookup_failure: bool,

    /// If set, any request presenting a client certificate signed by one of the authorities in
    /// the client-ca-file is authenticated with an identity corresponding to the CommonName of
    /// the client certificate.
    #[arg(long, value_name = "string", help_heading = "Authentication flags")]
    pub client_ca_file: Option<PathBuf>,

    /// List of client certificate common names to allow to provide usernames in headers
    /// specified by --requestheader-username-headers. If empty, any client certificate
    /// validated by the authorities in --requestheader-client-ca-file is allowed.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, value_name = "strings",
          help_heading = "Authentication flags")]
    pub requestheader_allowed_names: Vec<String>,

    /// Root certificate bundle to use to verify client certificates on incoming requests before
    /// trusting usernames in headers specified by --requestheader-username-headers. WARNING:
    /// generally do not depend on authorization being already done for incoming requests.
    #[arg(long, value_name = "string", help_heading = "Authentication flags")]
    pub requestheader_client_ca_file: Option<PathBuf>,

    /// List of request header prefixes to inspect. X-Remote-Extra- is suggested.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, default_value = "x-remote-extra-",
          value_name = "strings", help_heading = "Authentication flags")]
    pub requestheader_extra_headers_prefix: Vec<String>,

    /// List of request headers to inspect for groups. X-Remote-Group is suggested.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, default_value = "x-remote-group",
          value_name = "strings", help_heading = "Authentication flags")]
    pub requestheader_group_headers: Vec<String>,

    /// List of request headers to inspect for UIDs. X-Remote-Uid is suggested. Requires the
    /// RemoteRequestHeaderUID feature to be enabled.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, value_name = "strings",
          help_heading = "Authentication flags")]
    pub requestheader_uid_headers: Vec<String>,

    /// List of request headers to inspect for usernames. X-Remote-User is common.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, default_value = "x-remote-user",
          value_name = "strings", help_heading = "Authentication flags")]
    pub requestheader_username_headers: Vec<String>,

    /// A list of HTTP paths to skip during authorization, i.e. these are authorized without
    /// contacting the 'core' kubernetes server.
    #[arg(long, value_delimiter = ',', action = ArgAction::Append, default_value = "/healthz,/readyz,/livez",
          value_name = "strings", help_heading = "Authorization flags")]
    pub authorization_always_allow_paths: Vec<String>,

    /// kubeconfig file pointing at the 'core' kubernetes server with enough rights to create
    /// subjectaccessreviews.authorization.k8s.io. This is optional. If empty, all requests not
    /// skipped by authorization are forbidden.
    #[arg(long, value_name = "string", help_heading = "Authorization flags")]
    pub authorization_kubeconfig: Option<PathBuf>,

    /// The duration to cache 'authorized' responses from the webhook authorizer.
    #[arg(long, default_value = "10s", value_parser = rkcm_apimachinery::duration::parse_non_negative,
          value_name = "duration", help_heading = "Authorization flags")]
    pub authorization_webhook_cache_authorized_ttl: Duration,

    /// The duration to cache 'unauthorized' responses from the webhook authorizer.
    #[arg(long, default_value = "10s", value_parser = rkcm_apimachinery::duration::parse_non_negative,
          value_name = "duration", help_heading = "Authorization flags")]
    pub authorization_webhook_cache_unauthorized_ttl: Duration,
}

/// Drops the empty entries a flag such as `--requestheader-allowed-names=` leaves, as pflag's
/// string slices do not hold them.
pub fn non_empty(values: &[String]) -> Vec<String> {
    values
        .iter()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::manager::ManagerArgs;

    /// kubeadm 1.33's static-pod command line for kube-controller-manager.
    pub(crate) const KUBEADM: &[&str] = &[
        "--allocate-node-cidrs=true",
        "--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
        "--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf",
        "--bind-address=127.0.0.1",
        "--client-ca-file=/etc/kubernetes/pki/ca.crt",
        "--cluster-cidr=10.244.0.0/16",
        "--cluster-name=kubernetes",
        "--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
        "--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
        "--controllers=*,bootstrapsigner,tokencleaner",
        "--kubeconfig=/etc/kubernetes/controller-manager.conf",
        "--leader-elect=true",
        "--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
        "--root-ca-file=/etc/kubernetes/pki/ca.crt",
        "--service-account-private-key-file=/etc/kubernetes/pki/sa.key",
        "--service-cluster-ip-range=10.96.0.0/12",
        "--use-service-account-credentials=true",
    ];

    fn manager(args: &[&str]) -> ManagerArgs {
        use clap::Parser;
        let mut argv = vec!["rkcm", "controller-manager"];
        argv.extend_from_slice(args);
        match crate::cli::Cli::try_parse_from(argv)
            .expect("flags parse")
            .command
        {
            crate::cli::Command::ControllerManager(m) => *m,
            other => panic!("unexpected command {other:?}"),
        }
    }

    /// The delegation defaults of kube's `TestAddFlags`/`TestApplyTo` expectations
    /// (`NewDelegatingAuthenticationOptions`, `NewDelegatingAuthorizationOptions`,
    /// `RecommendedDebuggingOptions`).
    #[test]
    fn defaults_are_kubes_delegating_options() {
        let d = manager(&[]).delegation;
        assert!(d.profiling);
        assert_eq!(d.authentication_kubeconfig, None);
        assert!(!d.authentication_skip_lookup);
        assert!(!d.authentication_tolerate_lookup_failure);
        assert_eq!(
            d.authentication_token_webhook_cache_ttl,
            Duration::from_secs(10)
        );
        assert_eq!(d.requestheader_username_headers, ["x-remote-user"]);
        assert_eq!(d.requestheader_group_headers, ["x-remote-group"]);
        assert_eq!(d.requestheader_extra_headers_prefix, ["x-remote-extra-"]);
        assert!(d.requestheader_allowed_names.is_empty());
        assert_eq!(
            d.authorization_always_allow_paths,
            ["/healthz", "/readyz", "/livez"]
        );
        assert_eq!(
            d.authorization_webhook_cache_authorized_ttl,
            Duration::from_secs(10)
        );
        assert_eq!(
            d.authorization_webhook_cache_unauthorized_ttl,
            Duration::from_secs(10)
        );
    }

    /// kube's `TestAddFlags` style: every value given on the command line lands in its field.
    #[test]
    fn given_values_are_parsed() {
        let d = manager(&[
            "--profiling=false",
            "--authentication-skip-lookup",
            "--authentication-tolerate-lookup-failure=true",
            "--authentication-token-webhook-cache-ttl=30s",
            "--requestheader-allowed-names=front-proxy-client,other",
            "--requestheader-username-headers=X-User",
            "--authorization-always-allow-paths=/healthz,/metrics*",
            "--authorization-webhook-cache-unauthorized-ttl=5s",
        ])
        .delegation;
        assert!(!d.profiling);
        assert!(d.authentication_skip_lookup && d.authentication_tolerate_lookup_failure);
        assert_eq!(
            d.authentication_token_webhook_cache_ttl,
            Duration::from_secs(30)
        );
        assert_eq!(
            d.requestheader_allowed_names,
            ["front-proxy-client", "other"]
        );
        assert_eq!(d.requestheader_username_headers, ["X-User"]);
        assert_eq!(
            d.authorization_always_allow_paths,
            ["/healthz", "/metrics*"]
        );
        assert_eq!(
            d.authorization_webhook_cache_unauthorized_ttl,
            Duration::from_secs(5)
        );
        assert_eq!(
            non_empty(
                &manager(&["--requestheader-allowed-names="])
                    .delegation
                    .requestheader_allowed_names
            ),
            Vec::<String>::new()
        );
    }

    #[test]
    fn the_kubeadm_command_line_parses_unchanged() {
        let m = manager(KUBEADM);
        assert_eq!(m.controllers, ["*", "bootstrapsigner", "tokencleaner"]);
        assert_eq!(
            m.delegation.client_ca_file.as_deref(),
            Some(Path::new("/etc/kubernetes/pki/ca.crt"))
        );
        assert_eq!(
            m.delegation.requestheader_client_ca_file.as_deref(),
            Some(Path::new("/etc/kubernetes/pki/front-proxy-ca.crt"))
        );
        assert_eq!(
            m.delegation.authentication_kubeconfig.as_deref(),
            Some(Path::new("/etc/kubernetes/controller-manager.conf"))
        );
        assert_eq!(m.bind_address.to_string(), "127.0.0.1");
        let ignored = m.ignored.names();
        assert!(ignored.contains(&"cluster-name"), "{ignored:?}");
        assert!(
            ignored
                .iter()
                .all(|f| KUBEADM.iter().any(|a| a.starts_with(&format!("--{f}=")))),
            "{ignored:?}"
        );
        let enabled =
            rkcm_controllers::registry::resolve(&m.controllers).expect("kube's names resolve");
        assert!(
            enabled.contains(&"bootstrap-signer-controller"),
            "{enabled:?}"
        );
    }
}
