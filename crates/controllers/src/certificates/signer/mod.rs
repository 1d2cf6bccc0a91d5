//! The signing controller: approved requests for kube's four signers get a certificate from the
//! cluster CA; a request a signer must refuse gets a `Failed` condition.
//!
//! Mirrors `pkg/controller/certificates/signer/signer.go`: one [`CertificateController`] loop
//! per signer (`csrsigning-kubelet-serving`, `-kubelet-client`, `-kube-apiserver-client`,
//! `-legacy-unknown`), each ignoring requests that are not approved, failed or for another
//! signer; [`signers`] decides what each signer accepts, [`policy`] the validity (5 minutes of
//! backdating, `expirationSeconds` bounded by `--cluster-signing-duration`), [`authority`]
//! signs, [`ca`] keeps the CA files current and [`config`] picks the files of each signer.

pub mod authority;
pub mod ca;
pub mod config;
pub mod policy;
pub mod signers;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::ByteString;
use kube::api::{Api, PostParams};
use rkcm_runtime::informer::InformerFactory;
use rkcm_runtime::{Clock, Shutdown};

use self::authority::SignError;
use self::ca::{CaError, CaProvider};
use self::config::{ConflictingFiles, Plan, SigningConfig};
use self::policy::{key_usages, SigningPolicy, BACKDATE, SHORT};
use self::signers::Signer;
use super::conditions::{has_true_condition, is_approved, FAILED};
use super::controller::{CertificateController, Handler};
use super::request::{self, ParseError};

/// Name of the controller (`--controllers`).
pub const CONTROLLER_NAME: &str = "certificatesigningrequest-signing-controller";
/// Workers of each signer's loop (`startCSRSigningController`: `Run(ctx, 5)`).
pub const WORKERS: usize = 5;
/// Reason of the `Failed` condition of a request its signer refuses.
pub const SIGNER_VALIDATION_FAILURE: &str = "SignerValidationFailure";

/// Why a request could not be signed; it is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The request's PKCS#10 data does not parse.
    #[error("unable to parse csr {name:?}")]
    Parse {
        /// The request.
        name: String,
        /// Why.
        #[source]
        source: ParseError,
    },
    /// The CA files could not be used.
    #[error("error auto signing csr")]
    Ca(#[source] CaError),
    /// Signing failed.
    #[error("error auto signing csr")]
    Sign(#[source] SignError),
    /// Writing the `Failed` condition failed.
    #[error("error adding failure condition for csr")]
    AddFailure(#[source] kube::Error),
    /// Writing the certificate failed.
    #[error("error updating signature for csr")]
    UpdateSignature(#[source] kube::Error),
}

/// Why the controller could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Cluster and per-signer files were both given.
    #[error(transparent)]
    Conflict(#[from] ConflictingFiles),
    /// A signer's CA files are not usable.
    #[error("failed to start {signer} certificate controller")]
    Ca {
        /// The signer's name.
        signer: &'static str,
        /// Why.
        #[source]
        source: CaError,
    },
}

/// One signer: what it signs for, with which CA, for how long at most.
pub struct CsrSigner {
    signer: Signer,
    ca: CaProvider,
    client: kube::Client,
    cert_ttl: Duration,
    clock: Arc<dyn Clock>,
}

impl CsrSigner {
    /// The signer `signer` with the CA of `ca`.
    pub fn new(
        signer: Signer,
        ca: CaProvider,
        client: kube::Client,
        cert_ttl: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            signer,
            ca,
            client,
            cert_ttl,
            clock,
        }
    }

    /// Signs `request` with `usages` for the duration it asks (`signer.sign`); the PEM
    /// certificate.
    pub fn sign(
        &self,
        request: &request::Request,
        usages: &[String],
        expiration_seconds: Option<i32>,
    ) -> Result<String, Error> {
        let ca = self.ca.current_ca().map_err(Error::Ca)?;
        let policy = SigningPolicy {
            ttl: policy::duration(self.cert_ttl, expiration_seconds),
            backdate: BACKDATE,
            short: SHORT,
        };
        let (ku, eku) = key_usages(usages).map_err(|e| Error::Sign(e.into()))?;
        let validity = policy
            .validity(self.clock.now(), ca.not_after())
            .map_err(|e| Error::Sign(e.into()))?;
        ca.sign(request, (&ku, &eku), validity, rand::random())
            .map_err(Error::Sign)
    }

    async fn update_status(&self, csr: &CertificateSigningRequest) -> Result<(), kube::Error> {
        let api: Api<CertificateSigningRequest> = Api::all(self.client.clone());
        let name = csr.metadata.name.as_deref().unwrap_or_default();
        api.replace_status(name, &PostParams::default(), csr)
            .await
            .map(|_| ())
    }
}

impl Handler for CsrSigner {
    type Error = Error;

    /// `signer.handle`.
    async fn handle(&self, mut csr: CertificateSigningRequest) -> Result<(), Error> {
        if !is_approved(&csr) || has_true_condition(&csr, FAILED) {
            return Ok(());
        }
        if csr.spec.signer_name != self.signer.name() {
            return Ok(());
        }
        let name = csr.metadata.name.clone().unwrap_or_default();
        let request =
            request::parse(&csr.spec.request.0).map_err(|source| Error::Parse { name, source })?;
        let usages = csr.spec.usages.clone().unwrap_or_default();
        let status = csr.status.get_or_insert_with(Default::default);
        if let Err(message) = self.signer.validate(&request, &usages) {
            status.conditions.get_or_insert_with(Vec::new).push(
                CertificateSigningRequestCondition {
                    type_: FAILED.to_string(),
                    status: "True".to_string(),
                    reason: Some(SIGNER_VALIDATION_FAILURE.to_string()),
                    message: Some(message),
                    last_update_time: Some(Time(self.clock.now())),
                    ..CertificateSigningRequestCondition::default()
                },
            );
            return self.update_status(&csr).await.map_err(Error::AddFailure);
        }
        let pem = self.sign(&request, &usages, csr.spec.expiration_seconds)?;
        status.certificate = Some(ByteString(pem.into_bytes()));
        self.update_status(&csr)
            .await
            .map_err(Error::UpdateSignature)
    }
}

/// The signing controller: one loop per signer that has CA files.
pub struct CsrSigningController {
    loops: Vec<Arc<CertificateController<CsrSigner>>>,
}

impl CsrSigningController {
    /// Builds the loops `config` asks for; `None` when no CA files were given
    /// ("Skipping CSR signer controller because no csr cert/key was specified").
    pub fn new(
        factory: &InformerFactory,
        client: kube::Client,
        config: &SigningConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<Option<Self>, StartError> {
        let Plan::Signers(signers) = config.plan()? else {
            return Ok(None);
        };
        let mut loops = Vec::new();
        for (signer, files) in signers {
            let Some((cert, key)) = files else {
                tracing::info!(
                    controller = signer.name(),
                    "Skipping CSR signer controller because specific files were specified for other signers and not this one"
                );
                continue;
            };
            let ca = CaProvider::new(cert, key).map_err(|source| StartError::Ca {
                signer: signer.name(),
                source,
            })?;
            let handler = CsrSigner::new(
                signer,
                ca,
                client.clone(),
                config.duration,
                Arc::clone(&clock),
            );
            loops.push(CertificateController::new(
                signer.controller_name(),
                factory,
                handler,
            ));
        }
        Ok(Some(Self { loops }))
    }

    /// Runs every signer's loop with `workers` workers until `shutdown`.
    pub async fn run(self, workers: usize, shutdown: Shutdown) {
        let runs = self
            .loops
            .into_iter()
            .map(|l| l.run(workers, shutdown.clone()));
        futures::future::join_all(runs).await;
    }
}

#[cfg(test)]
mod tests {
    use super::authority::testing::ca;
    use super::*;
    use crate::certificates::request::testing::request_pem;
    use rkcm_runtime::FakeClock;

    /// `TestSigner`: a request asking for more than the TTL gets the TTL, backdated 5 minutes at
    /// the start only (short-lived).
    #[tokio::test]
    async fn a_signature_gets_the_policy_validity() {
        let dir = tempfile::tempdir().expect("dir");
        let (cert, key) = (dir.path().join("ca.crt"), dir.path().join("ca.key"));
        let (c, k) = ca("2030-01-01T00:00:00Z".parse().unwrap());
        std::fs::write(&cert, c).unwrap();
        std::fs::write(&key, k).unwrap();
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let clock = FakeClock::new(now);
        let client = kube::Client::try_from(kube::Config::new(
            "http://127.0.0.1:1".parse().expect("url"),
        ))
        .expect("client");
        let signer = CsrSigner::new(
            Signer::LegacyUnknown,
            CaProvider::new(cert, key).expect("CA"),
            client,
            Duration::from_secs(3600),
            Arc::new(clock),
        );
        let request = request::parse(
            request_pem("system:node:k-a-node-s36b", &["system:nodes"], &[]).as_bytes(),
        )
        .expect("request");
        let usages: Vec<String> = ["signing", "key encipherment", "server auth", "client auth"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let pem = signer
            .sign(&request, &usages, Some(3 * 3600))
            .expect("signed");
        let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).expect("pem");
        let cert = block.parse_x509().expect("cert");
        assert_eq!(
            cert.validity().not_before.timestamp(),
            now.as_second() - 300
        );
        assert_eq!(
            cert.validity().not_after.timestamp(),
            now.as_second() + 3600
        );
        let bad: Vec<String> = vec!["bogus".into()];
        assert!(signer.sign(&request, &bad, None).is_err());
    }
}
