//! Cluster CA, serving certificate and admin token: generated on first start, reused from the data
//! dir after. The CA's key is kept (`ca.key`) so that client certificates can be signed with it;
//! the server verifies the client certificates it is offered against the CA.

use std::path::Path;

use rand::RngCore;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// PEM-encoded CA and serving certificate with its key.
#[derive(Clone, Debug)]
pub struct TlsMaterial {
    /// CA certificate clients trust.
    pub ca_pem: String,
    /// Serving certificate, signed by the CA.
    pub cert_pem: String,
    /// Serving key.
    pub key_pem: String,
    /// The CA's key, to sign client certificates with.
    pub ca_key_pem: String,
}

/// Errors while preparing TLS material or the token.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing the data dir failed.
    #[error("{path}: {source}")]
    Io {
        /// File concerned.
        path: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// Certificate generation failed.
    #[error("generating certificates: {0}")]
    Generate(#[from] rcgen::Error),
    /// Stored PEM could not be used.
    #[error("invalid TLS material: {0}")]
    Invalid(String),
}

fn read_opt(path: &Path) -> Result<Option<String>, Error> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::Io {
            path: path.display().to_string(),
            source: e,
        }),
    }
}

pub(crate) fn write_private(path: &Path, contents: &str) -> Result<(), Error> {
    let io = |e| Error::Io {
        path: path.display().to_string(),
        source: e,
    };
    let tmp = path.with_extension("tmp");
    {
        use std::io::Write;
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        let mut f = opts.open(&tmp).map_err(io)?;
        f.write_all(contents.as_bytes()).map_err(io)?;
        f.sync_all().map_err(io)?;
    }
    std::fs::rename(&tmp, path).map_err(io)
}

/// Common name of the cluster CA.
const CA_COMMON_NAME: &str = "rkcm-ca";

/// Generates a CA and a serving certificate for localhost, 127.0.0.1, ::1 and `extra_sans`.
pub fn generate(extra_sans: &[String]) -> Result<TlsMaterial, Error> {
    let ca_key = KeyPair::generate()?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, CA_COMMON_NAME);
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let ca_key_pem = ca_key.serialize_pem();
    let issuer = Issuer::new(ca_params, ca_key);

    let mut sans = vec![
        "localhost".to_string(),
        "127.0.0.1".to_string(),
        "::1".to_string(),
        "kubernetes".to_string(),
        "kubernetes.default".to_string(),
    ];
    for s in extra_sans {
        if !sans.contains(s) {
            sans.push(s.clone());
        }
    }
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(sans)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "rkcm-apiserver");
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let cert = params.signed_by(&key, &issuer)?;
    Ok(TlsMaterial {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        ca_key_pem,
    })
}

/// The TLS material in `dir` (`ca.crt`, `ca.key`, `apiserver.crt`, `apiserver.key`), generated
/// there on first use (and again when one of them is missing); freshly generated when `dir` is
/// `None`.
pub fn load_or_generate(dir: Option<&Path>, extra_sans: &[String]) -> Result<TlsMaterial, Error> {
    let Some(dir) = dir else {
        return generate(extra_sans);
    };
    let (ca, ca_key, cert, key) = (
        dir.join("ca.crt"),
        dir.join("ca.key"),
        dir.join("apiserver.crt"),
        dir.join("apiserver.key"),
    );
    if let (Some(ca_pem), Some(ca_key_pem), Some(cert_pem), Some(key_pem)) = (
        read_opt(&ca)?,
        read_opt(&ca_key)?,
        read_opt(&cert)?,
        read_opt(&key)?,
    ) {
        return Ok(TlsMaterial {
            ca_pem,
            cert_pem,
            key_pem,
            ca_key_pem,
        });
    }
    let m = generate(extra_sans)?;
    write_private(&ca_key, &m.ca_key_pem)?;
    write_private(&ca, &m.ca_pem)?;
    write_private(&key, &m.key_pem)?;
    write_private(&cert, &m.cert_pem)?;
    Ok(m)
}

/// A new admin token: 32 random bytes, hex.
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The admin token stored in `dir/admin-token`, generated on first use; a fresh one when `dir`
/// is `None`.
pub fn load_or_generate_token(dir: Option<&Path>) -> Result<String, Error> {
    let Some(dir) = dir else {
        return Ok(new_token());
    };
    let path = dir.join("admin-token");
    if let Some(t) = read_opt(&path)? {
        let t = t.trim().to_string();
        if !t.is_empty() {
            return Ok(t);
        }
    }
    let t = new_token();
    write_private(&path, &t)?;
    Ok(t)
}

/// A rustls server config for `m` (HTTP/2 and HTTP/1.1 via ALPN) that asks for a client
/// certificate without requiring one (see [`RequestClientCert`]).
pub fn server_config(m: &TlsMaterial) -> Result<rustls::ServerConfig, Error> {
    let certs = CertificateDer::pem_slice_iter(m.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Invalid(format!("serving certificate: {e}")))?;
    if certs.is_empty() {
        return Err(Error::Invalid("no certificate in apiserver.crt".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(m.key_pem.as_bytes()).map_err(|e| match e {
        pem::Error::NoItemsFound => Error::Invalid("no private key in apiserver.key".into()),
        e => Error::Invalid(format!("serving key: {e}")),
    })?;
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let client_verifier = std::sync::Arc::new(RequestClientCert::new(&m.ca_pem)?);
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Invalid(e.to_string()))?
        .with_client_cert_verifier(client_verifier)
        .with_single_cert(certs, key)
        .map_err(|e| Error::Invalid(e.to_string()))?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(cfg)
}

/// Go's `tls.RequestClientCert`: asks for a client certificate (hinting the cluster CA), does not
/// require one, and checks only that the client holds the certificate's private key. Whether the
/// certificate is signed by the CA is for the authenticator to decide
/// ([`crate::auth::x509::verify`]), so that a bad certificate is a 401 as on kube rather than a
/// failed handshake, and so that X.509 v1 certificates, which webpki refuses, work as with Go.
#[derive(Debug)]
pub struct RequestClientCert {
    hints: Vec<rustls::DistinguishedName>,
}

impl RequestClientCert {
    /// A verifier hinting the subjects of the CA certificates in `ca_pem`.
    pub fn new(ca_pem: &str) -> Result<Self, Error> {
        use x509_parser::prelude::{FromDer, X509Certificate};
        let mut hints = Vec::new();
        for ca in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            let ca = ca.map_err(|e| Error::Invalid(format!("CA certificate: {e}")))?;
            let (_, cert) = X509Certificate::from_der(&ca)
                .map_err(|e| Error::Invalid(format!("CA certificate: {e}")))?;
            hints.push(rustls::DistinguishedName::from(
                cert.subject().as_raw().to_vec(),
            ));
        }
        Ok(Self { hints })
    }

    /// Checks that `cert`'s key made `signature` over `message` with `scheme`.
    fn verify_signature(
        message: &[u8],
        cert: &CertificateDer<'_>,
        scheme: rustls::SignatureScheme,
        signature: &[u8],
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        use ring::signature as sig;
        use rustls::SignatureScheme as S;
        use x509_parser::prelude::{FromDer, X509Certificate};
        let algorithm: &'static dyn sig::VerificationAlgorithm = match scheme {
            S::ECDSA_NISTP256_SHA256 => &sig::ECDSA_P256_SHA256_ASN1,
            S::ECDSA_NISTP384_SHA384 => &sig::ECDSA_P384_SHA384_ASN1,
            S::ED25519 => &sig::ED25519,
            S::RSA_PSS_SHA256 => &sig::RSA_PSS_2048_8192_SHA256,
            S::RSA_PSS_SHA384 => &sig::RSA_PSS_2048_8192_SHA384,
            S::RSA_PSS_SHA512 => &sig::RSA_PSS_2048_8192_SHA512,
            S::RSA_PKCS1_SHA256 => &sig::RSA_PKCS1_2048_8192_SHA256,
            S::RSA_PKCS1_SHA384 => &sig::RSA_PKCS1_2048_8192_SHA384,
            S::RSA_PKCS1_SHA512 => &sig::RSA_PKCS1_2048_8192_SHA512,
            _ => {
                return Err(rustls::Error::PeerMisbehaved(
                    rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme,
                ))
            }
        };
        let (_, parsed) = X509Certificate::from_der(cert).map_err(|_| {
            rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding)
        })?;
        let key = &parsed.public_key().subject_public_key.data;
        sig::UnparsedPublicKey::new(algorithm, key.as_ref())
            .verify(message, signature)
            .map(|()| rustls::client::danger::HandshakeSignatureValid::assertion())
            .map_err(|_| rustls::Error::InvalidCertificate(rustls::CertificateError::BadSignature))
    }
}

impl rustls::server::danger::ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        Ok(rustls::server::danger::ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Self::verify_signature(message, cert, dss.scheme, dss.signature())
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        Self::verify_signature(message, cert, dss.scheme, dss.signature())
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        use rustls::SignatureScheme as S;
        vec![
            S::ECDSA_NISTP256_SHA256,
            S::ECDSA_NISTP384_SHA384,
            S::ED25519,
            S::RSA_PSS_SHA256,
            S::RSA_PSS_SHA384,
            S::RSA_PSS_SHA512,
            S::RSA_PKCS1_SHA256,
            S::RSA_PKCS1_SHA384,
            S::RSA_PKCS1_SHA512,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn material_is_reused_from_the_data_dir() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = load_or_generate(Some(dir.path()), &[]).expect("generate");
        let b = load_or_generate(Some(dir.path()), &[]).expect("load");
        assert_eq!(a.ca_pem, b.ca_pem);
        server_config(&b).expect("usable");
        let no_key = TlsMaterial {
            key_pem: String::new(),
            ..b.clone()
        };
        assert_eq!(
            server_config(&no_key).expect_err("no key").to_string(),
            "invalid TLS material: no private key in apiserver.key"
        );
        let no_cert = TlsMaterial {
            cert_pem: b.key_pem.clone(),
            ..b.clone()
        };
        assert_eq!(
            server_config(&no_cert)
                .expect_err("no certificate")
                .to_string(),
            "invalid TLS material: no certificate in apiserver.crt"
        );
        let t1 = load_or_generate_token(Some(dir.path())).expect("token");
        assert_eq!(t1.len(), 64);
        assert_eq!(t1, load_or_generate_token(Some(dir.path())).expect("token"));
    }
}
