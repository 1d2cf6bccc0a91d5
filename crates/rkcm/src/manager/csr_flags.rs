//! The signing controller's flags (kube's "Csrsigning controller flags"), named and defaulted as
//! kube-controller-manager's `CSRSigningControllerOptions`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use rkcm_controllers::certificates::signer::config::{SignerFiles, SigningConfig};

/// `--cluster-signing-*` flags.
#[derive(Debug, Clone, Args)]
pub struct CsrSigningArgs {
    /// Filename containing a PEM-encoded X509 CA certificate used to issue cluster-scoped
    /// certificates.  If specified, no more specific --cluster-signing-* flag may be specified.
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Csrsigning controller flags"
    )]
    pub cluster_signing_cert_file: Option<PathBuf>,

    /// Filename containing a PEM-encoded RSA or ECDSA private key used to sign cluster-scoped
    /// certificates.  If specified, no more specific --cluster-signing-* flag may be specified.
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Csrsigning controller flags"
    )]
    pub cluster_signing_key_file: Option<PathBuf>,

    /// Filename containing a PEM-encoded X509 CA certificate used to issue certificates for the
    /// kubernetes.io/kubelet-serving signer.  If specified, --cluster-signing-{cert,key}-file
    /// must not be set.
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Csrsigning controller flags"
    )]
    pub cluster_signing_kubelet_serving_cert_file: Option<PathBuf>,

    /// Filename containing a PEM-encoded RSA or ECDSA private key used to sign certificates for
    /// the kubernetes.io/kubelet-serving signer.  If specified, --cluster-signing-{cert,key}-file
    /// must not be set.
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Csrsigning controller flags"
    )]
    pub cluster_signing_kubelet_serving_key_file: Option<PathBuf>,

    /// Filename containing a PEM-encoded X509 CA certificate used to issue certificates for the
    /// kubernetes.io/kube-apiserver-client-kubelet signer.  If specified,
    /// --cluster-signing-{cert,key}-file must not be set.
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Csrsigning controller flags"
    )]
    pub cluster_signing_kubelet_client_cert_file: Option<PathBuf>,

    /// Filename containing a PEM-encoded RSA or ECDSA private key used to sign certificates for
    /// the kubernetes.io/kube-apiserver-client-kubelet signer.  If specified,
    /// --cluster-signing-{cert,key}-file must not be set.
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Csrsigning controller flags"
    )]
    pub cluster_signing_kubelet_client_key_file: Option<PathBuf>,

    /// Filename containing a PEM-encoded X509 CA certificate used to issue certificates for the
    /// kubernetes.io/kube-apiserver-client signer.  If specified,
    /// --cluster-signing-{cert,key}-file must not be set.
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Csrsigning controller flags"
    )]
    pub cluster_signing_kube_apiserver_client_cert_file: Option<PathBuf>,

    /// Filename containing a PEM-encoded RSA or ECDSA private key used to sign certificates for
    /// the kubernetes.io/kube-apiserver-client signer.  If specified,
    /// --cluster-signing-{cert,key}-file must not be set.
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Csrsigning controller flags"
    )]
    pub cluster_signing_kube_apiserver_client_key_file: Option<PathBuf>,

    /// Filename containing a PEM-encoded X509 CA certificate used to issue certificates for the
    /// kubernetes.io/legacy-unknown signer.  If specified, --cluster-signing-{cert,key}-file
    /// must not be set.
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Csrsigning controller flags"
    )]
    pub cluster_signing_legacy_unknown_cert_file: Option<PathBuf>,

    /// Filename containing a PEM-encoded RSA or ECDSA private key used to sign certificates for
    /// the kubernetes.io/legacy-unknown signer.  If specified, --cluster-signing-{cert,key}-file
    /// must not be set.
    #[arg(
        long,
        value_name = "PATH",
        help_heading = "Csrsigning controller flags"
    )]
    pub cluster_signing_legacy_unknown_key_file: Option<PathBuf>,

    /// The max length of duration signed certificates will be given.  Individual CSRs may request
    /// shorter certs by setting spec.expirationSeconds.
    #[arg(long, default_value = "8760h0m0s", value_parser = rkcm_apimachinery::duration::parse_non_negative, value_name = "DURATION", help_heading = "Csrsigning controller flags")]
    pub cluster_signing_duration: Duration,
}

fn files(cert: &Option<PathBuf>, key: &Option<PathBuf>) -> SignerFiles {
    SignerFiles {
        cert_file: cert.clone(),
        key_file: key.clone(),
    }
}

impl CsrSigningArgs {
    /// The signing controller's settings.
    pub fn config(&self) -> SigningConfig {
        SigningConfig {
            cluster_signing: files(
                &self.cluster_signing_cert_file,
                &self.cluster_signing_key_file,
            ),
            kubelet_serving: files(
                &self.cluster_signing_kubelet_serving_cert_file,
                &self.cluster_signing_kubelet_serving_key_file,
            ),
            kubelet_client: files(
                &self.cluster_signing_kubelet_client_cert_file,
                &self.cluster_signing_kubelet_client_key_file,
            ),
            kube_apiserver_client: files(
                &self.cluster_signing_kube_apiserver_client_cert_file,
                &self.cluster_signing_kube_apiserver_client_key_file,
            ),
            legacy_unknown: files(
                &self.cluster_signing_legacy_unknown_cert_file,
                &self.cluster_signing_legacy_unknown_key_file,
            ),
            duration: self.cluster_signing_duration,
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
        args: CsrSigningArgs,
    }

    #[test]
    fn kubes_defaults_and_names() {
        let cli = Cli::parse_from(["rkcm"]);
        assert_eq!(cli.args.config(), SigningConfig::default());
        let cli = Cli::parse_from([
            "rkcm",
            "--cluster-signing-kube-apiserver-client-cert-file=/ca.crt",
            "--cluster-signing-kube-apiserver-client-key-file=/ca.key",
            "--cluster-signing-duration=2h",
        ]);
        let config = cli.args.config();
        assert_eq!(
            config.kube_apiserver_client,
            SignerFiles::new("/ca.crt", "/ca.key")
        );
        assert_eq!(config.duration, Duration::from_secs(7200));
    }
}
