//! Which signers run, with which CA files: `--cluster-signing-cert-file`/`-key-file` for all of
//! them, or the per-signer `--cluster-signing-<signer>-cert-file`/`-key-file`.
//!
//! Mirrors `startCSRSigningController` and `getKubeletServingSignerFiles` & co. of
//! `cmd/kube-controller-manager/app/certificates.go`.

use std::path::PathBuf;
use std::time::Duration;

use super::signers::Signer;

/// The certificate and key files of one signer (or of all of them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SignerFiles {
    /// PEM CA certificate.
    pub cert_file: Option<PathBuf>,
    /// PEM private key of the CA.
    pub key_file: Option<PathBuf>,
}

impl SignerFiles {
    /// Both files of `dir`'s `cert` and `key`.
    pub fn new(cert_file: impl Into<PathBuf>, key_file: impl Into<PathBuf>) -> Self {
        Self {
            cert_file: Some(cert_file.into()),
            key_file: Some(key_file.into()),
        }
    }

    fn any_set(&self) -> bool {
        self.cert_file.is_some() || self.key_file.is_some()
    }

    fn both_set(&self) -> bool {
        self.cert_file.is_some() && self.key_file.is_some()
    }
}

/// The settings of the signing controller (`CSRSigningControllerConfiguration`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SigningConfig {
    /// `--cluster-signing-cert-file` / `--cluster-signing-key-file`.
    pub cluster_signing: SignerFiles,
    /// `--cluster-signing-kubelet-serving-cert-file` / `-key-file`.
    pub kubelet_serving: SignerFiles,
    /// `--cluster-signing-kubelet-client-cert-file` / `-key-file`.
    pub kubelet_client: SignerFiles,
    /// `--cluster-signing-kube-apiserver-client-cert-file` / `-key-file`.
    pub kube_apiserver_client: SignerFiles,
    /// `--cluster-signing-legacy-unknown-cert-file` / `-key-file`.
    pub legacy_unknown: SignerFiles,
    /// `--cluster-signing-duration`: the longest validity a certificate gets.
    pub duration: Duration,
}

/// kube's default `--cluster-signing-duration`, one year.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

impl Default for SigningConfig {
    fn default() -> Self {
        Self {
            cluster_signing: SignerFiles::default(),
            kubelet_serving: SignerFiles::default(),
            kubelet_client: SignerFiles::default(),
            kube_apiserver_client: SignerFiles::default(),
            legacy_unknown: SignerFiles::default(),
            duration: DEFAULT_DURATION,
        }
    }
}

/// The flags contradict each other.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot specify default and per controller certs at the same time")]
pub struct ConflictingFiles;

/// What to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// No CA given: the controller does not start.
    Skip,
    /// Each signer with its files, or `None` when only other signers have files.
    Signers(Vec<(Signer, Option<(PathBuf, PathBuf)>)>),
}

impl SigningConfig {
    fn specific(&self, signer: Signer) -> &SignerFiles {
        match signer {
            Signer::KubeletServing => &self.kubelet_serving,
            Signer::KubeletClient => &self.kubelet_client,
            Signer::KubeApiserverClient => &self.kube_apiserver_client,
            Signer::LegacyUnknown => &self.legacy_unknown,
        }
    }

    fn any_specific_files_set(&self) -> bool {
        Signer::ALL.iter().any(|s| self.specific(*s).any_set())
    }

    /// Which signers run with which files. A signer with only one of its two files set still
    /// runs, and fails to read the other (an empty path), as kube's does.
    pub fn plan(&self) -> Result<Plan, ConflictingFiles> {
        let single = self.cluster_signing.both_set();
        let specific = self.any_specific_files_set();
        if !single && !specific {
            return Ok(Plan::Skip);
        }
        if single && specific {
            return Err(ConflictingFiles);
        }
        Ok(Plan::Signers(
            Signer::ALL
                .iter()
                .map(|s| {
                    let files = if specific {
                        self.specific(*s)
                    } else {
                        &self.cluster_signing
                    };
                    let pair = files.any_set().then(|| {
                        (
                            files.cert_file.clone().unwrap_or_default(),
                            files.key_file.clone().unwrap_or_default(),
                        )
                    });
                    (*s, pair)
                })
                .collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_files_nothing_runs() {
        assert_eq!(SigningConfig::default().plan(), Ok(Plan::Skip));
        let half = SigningConfig {
            cluster_signing: SignerFiles {
                cert_file: Some("ca.crt".into()),
                key_file: None,
            },
            ..SigningConfig::default()
        };
        assert_eq!(half.plan(), Ok(Plan::Skip));
    }

    #[test]
    fn the_cluster_files_serve_every_signer() {
        let config = SigningConfig {
            cluster_signing: SignerFiles::new("ca.crt", "ca.key"),
            ..SigningConfig::default()
        };
        let Ok(Plan::Signers(signers)) = config.plan() else {
            panic!("signers expected");
        };
        assert_eq!(signers.len(), 4);
        assert!(signers
            .iter()
            .all(|(_, f)| f == &Some(("ca.crt".into(), "ca.key".into()))));
    }

    #[test]
    fn specific_files_run_only_their_signers_and_exclude_the_cluster_files() {
        let config = SigningConfig {
            kube_apiserver_client: SignerFiles::new("c.crt", "c.key"),
            ..SigningConfig::default()
        };
        let Ok(Plan::Signers(signers)) = config.plan() else {
            panic!("signers expected");
        };
        let running: Vec<Signer> = signers
            .iter()
            .filter(|(_, f)| f.is_some())
            .map(|(s, _)| *s)
            .collect();
        assert_eq!(running, [Signer::KubeApiserverClient]);
        let both = SigningConfig {
            cluster_signing: SignerFiles::new("ca.crt", "ca.key"),
            ..config
        };
        assert_eq!(
            both.plan().unwrap_err().to_string(),
            "cannot specify default and per controller certs at the same time"
        );
    }
}
