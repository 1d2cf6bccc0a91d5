//! A certificate authority that signs requests under the [`SigningPolicy`].
//!
//! Mirrors `CertificateAuthority.Sign` (`pkg/controller/certificates/authority/authority.go`):
//! the certificate has the request's subject (as Go re-encodes it, see [`Name`]), SANs and
//! public key, a random 128-bit serial number, the usages and validity of the policy,
//! `CA:FALSE` basic constraints and no other extension of the request.
//!
//! [`Name`]: crate::certificates::name::Name

use jiff::Timestamp;
use rcgen::string::Ia5String;
use rcgen::{
    CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType, SerialNumber, SigningKey, SubjectPublicKeyInfo,
};
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::prelude::FromDer;

use super::policy::{ExtKeyUsage, KeyUsage, PolicyError, Validity};
use crate::certificates::request::Request;

/// Why the CA could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The certificate is not a PEM X.509 certificate.
    #[error("error reading CA cert file: {0}")]
    Certificate(String),
    /// The key is not a PEM private key rcgen can sign with (PKCS#8 ECDSA, Ed25519 or RSA).
    #[error("error reading CA key file: {0}")]
    Key(String),
}

/// Why a request could not be signed.
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    /// The request does not parse.
    #[error("unable to parse certificate request: {0}")]
    Request(String),
    /// The request's signature does not verify.
    #[error("unable to verify certificate request signature: {0}")]
    Signature(String),
    /// The policy refuses to sign.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// Building or signing the certificate failed.
    #[error("failed to sign certificate: {0}")]
    Sign(String),
}

/// A loaded CA: its issuer name and key, and when it expires.
pub struct CertificateAuthority {
    issuer: Issuer<'static, KeyPair>,
    not_after: Timestamp,
}

impl std::fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertificateAuthority")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

impl CertificateAuthority {
    /// The CA of a PEM certificate and its PEM private key.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self, LoadError> {
        let (_, pem) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes())
            .map_err(|e| LoadError::Certificate(e.to_string()))?;
        if pem.label != "CERTIFICATE" {
            return Err(LoadError::Certificate(format!(
                "expected a CERTIFICATE PEM block, found {:?}",
                pem.label
            )));
        }
        let cert = pem
            .parse_x509()
            .map_err(|e| LoadError::Certificate(e.to_string()))?;
        let not_after = Timestamp::from_second(cert.validity().not_after.timestamp())
            .map_err(|e| LoadError::Certificate(e.to_string()))?;
        let pkcs8 = rkcm_apimachinery::keyutil::pkcs8_der(key_pem)
            .map_err(|e| LoadError::Key(e.to_string()))?;
        let key = KeyPair::try_from(pkcs8.as_slice()).map_err(|e| LoadError::Key(e.to_string()))?;
        let issuer = Issuer::from_ca_cert_der(&pem.contents.clone().into(), key)
            .map_err(|e| LoadError::Certificate(e.to_string()))?;
        Ok(Self { issuer, not_after })
    }

    /// When the CA expires.
    pub fn not_after(&self) -> Timestamp {
        self.not_after
    }

    /// Signs `request` for `validity` with the given usages; the certificate as PEM.
    pub fn sign(
        &self,
        request: &Request,
        usages: (&[KeyUsage], &[ExtKeyUsage]),
        validity: Validity,
        serial: [u8; 16],
    ) -> Result<String, SignError> {
        let (_, csr) = X509CertificationRequest::from_der(&request.der)
            .map_err(|e| SignError::Request(e.to_string()))?;
        csr.verify_signature()
            .map_err(|e| SignError::Signature(e.to_string()))?;
        let public_key =
            SubjectPublicKeyInfo::from_der(csr.certification_request_info.subject_pki.raw)
                .map_err(|e| SignError::Sign(e.to_string()))?;
        let mut params = CertificateParams::default();
        // rcgen keeps one value per attribute type, so it writes a stand-in that is empty
        // exactly when the request's subject is (the SAN extension is critical then), and
        // `with_subject` puts the subject Go writes in its place.
        params.distinguished_name = DistinguishedName::new();
        if !request.subject.is_empty() {
            params
                .distinguished_name
                .push(DnType::CommonName, "subject");
        }
        params.subject_alt_names = subject_alt_names(request)?;
        params.key_usages = usages.0.iter().map(|u| key_usage(*u)).collect();
        params.extended_key_usages = usages.1.iter().map(|u| ext_key_usage(*u)).collect();
        params.is_ca = IsCa::ExplicitNoCa;
        params.use_authority_key_identifier_extension = true;
        params.not_before = offset_date_time(validity.not_before)?;
        params.not_after = offset_date_time(validity.not_after)?;
        // A positive 128-bit serial number (`rand.Int(rand.Reader, 2^128)`).
        let mut serial = serial;
        serial[0] &= 0x7f;
        params.serial_number = Some(SerialNumber::from_slice(&serial));
        let cert = params
            .signed_by(&public_key, &self.issuer)
            .map_err(|e| SignError::Sign(e.to_string()))?;
        let der = with_subject(cert.der(), &request.subject.to_der(), self.issuer.key())?;
        Ok(pem_certificate(&der))
    }
}

/// The request's SANs in the order Go's `marshalSANs` writes them: DNS names, email
/// addresses, IP addresses, URIs.
fn subject_alt_names(request: &Request) -> Result<Vec<SanType>, SignError> {
    let ia5 =
        |s: &String| Ia5String::try_from(s.as_str()).map_err(|e| SignError::Sign(e.to_string()));
    let mut sans = Vec::new();
    for name in &request.dns_names {
        sans.push(SanType::DnsName(ia5(name)?));
    }
    for email in &request.email_addresses {
        sans.push(SanType::Rfc822Name(ia5(email)?));
    }
    sans.extend(
        request
            .ip_addresses
            .iter()
            .map(|ip| SanType::IpAddress(*ip)),
    );
    for uri in &request.uris {
        sans.push(SanType::URI(ia5(uri)?));
    }
    Ok(sans)
}

/// The certificate `cert` with `subject` (DER) as its subject, signed again by `key`.
///
/// Index 5 of a v3 `TBSCertificate` is the subject (RFC 5280 4.1: version, serialNumber,
/// signature, issuer, validity, subject, subjectPublicKeyInfo, extensions).
fn with_subject(cert: &[u8], subject: &[u8], key: &KeyPair) -> Result<Vec<u8>, SignError> {
    const SUBJECT: usize = 5;
    let malformed = |e: yasna::ASN1Error| SignError::Sign(format!("re-encoding the subject: {e}"));
    let (mut tbs, algorithm) = yasna::parse_der(cert, |r| {
        r.read_sequence(|r| {
            let tbs = r.next().read_sequence(|r| {
                let mut fields = Vec::new();
                while let Some(field) = r.read_optional(|r| r.read_der())? {
                    fields.push(field);
                }
                Ok(fields)
            })?;
            let algorithm = r.next().read_der()?;
            let _signature = r.next().read_der()?;
            Ok((tbs, algorithm))
        })
    })
    .map_err(malformed)?;
    let field = tbs
        .get_mut(SUBJECT)
        .ok_or_else(|| SignError::Sign("re-encoding the subject: short certificate".into()))?;
    *field = subject.to_vec();
    let tbs = yasna::construct_der(|w| {
        w.write_sequence(|w| {
            for field in &tbs {
                w.next().write_der(field);
            }
        })
    });
    let signature = key.sign(&tbs).map_err(|e| SignError::Sign(e.to_string()))?;
    Ok(yasna::construct_der(|w| {
        w.write_sequence(|w| {
            w.next().write_der(&tbs);
            w.next().write_der(&algorithm);
            w.next().write_bitvec_bytes(&signature, signature.len() * 8);
        })
    }))
}

/// `pem.EncodeToMemory` of a `CERTIFICATE` block: base64 in lines of 64 characters.
fn pem_certificate(der: &[u8]) -> String {
    use base64::Engine as _;
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in body.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
}

fn offset_date_time(t: Timestamp) -> Result<time::OffsetDateTime, SignError> {
    time::OffsetDateTime::from_unix_timestamp(t.as_second())
        .map_err(|e| SignError::Sign(e.to_string()))
}

fn key_usage(u: KeyUsage) -> KeyUsagePurpose {
    match u {
        KeyUsage::DigitalSignature => KeyUsagePurpose::DigitalSignature,
        KeyUsage::ContentCommitment => KeyUsagePurpose::ContentCommitment,
        KeyUsage::KeyEncipherment => KeyUsagePurpose::KeyEncipherment,
        KeyUsage::KeyAgreement => KeyUsagePurpose::KeyAgreement,
        KeyUsage::DataEncipherment => KeyUsagePurpose::DataEncipherment,
        KeyUsage::CertSign => KeyUsagePurpose::KeyCertSign,
        KeyUsage::CrlSign => KeyUsagePurpose::CrlSign,
        KeyUsage::EncipherOnly => KeyUsagePurpose::EncipherOnly,
        KeyUsage::DecipherOnly => KeyUsagePurpose::DecipherOnly,
    }
}

fn ext_key_usage(u: ExtKeyUsage) -> ExtendedKeyUsagePurpose {
    match u {
        ExtKeyUsage::Any => ExtendedKeyUsagePurpose::Any,
        ExtKeyUsage::ServerAuth => ExtendedKeyUsagePurpose::ServerAuth,
        ExtKeyUsage::ClientAuth => ExtendedKeyUsagePurpose::ClientAuth,
        ExtKeyUsage::CodeSigning => ExtendedKeyUsagePurpose::CodeSigning,
        ExtKeyUsage::EmailProtection => ExtendedKeyUsagePurpose::EmailProtection,
        ExtKeyUsage::TimeStamping => ExtendedKeyUsagePurpose::TimeStamping,
        ExtKeyUsage::OcspSigning => ExtendedKeyUsagePurpose::OcspSigning,
        other => ExtendedKeyUsagePurpose::Other(other.oid().to_vec()),
    }
}

/// Test helpers: a CA made with rcgen.
#[cfg(test)]
pub(crate) mod testing {
    /// A CA certificate and key (PEM) valid until `not_after`.
    pub(crate) fn ca(not_after: jiff::Timestamp) -> (String, String) {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "test-ca");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        params.not_before =
            time::OffsetDateTime::from_unix_timestamp(not_after.as_second() - 48 * 3600)
                .expect("time");
        params.not_after =
            time::OffsetDateTime::from_unix_timestamp(not_after.as_second()).expect("time");
        let cert = params.self_signed(&key).expect("self-signed");
        (cert.pem(), key.serialize_pem())
    }
}

#[cfg(test)]
mod tests {
    use super::testing::ca;
    use super::*;
    use crate::certificates::request::{parse, testing::request_pem};
    use crate::certificates::signer::policy::{key_usages, SigningPolicy};
    use std::time::Duration;
    use x509_parser::extensions::{GeneralName, ParsedExtension};

    fn now() -> Timestamp {
        "2026-01-01T12:00:00Z".parse().unwrap()
    }

    /// `TestCertificateAuthority` "ca info", "key usage", "ext key usage", and `TestSigner`.
    #[test]
    fn certificates_carry_the_subject_sans_usages_and_validity() {
        let ca_not_after: Timestamp = "2026-01-02T12:00:00Z".parse().unwrap();
        let (cert_pem, key_pem) = ca(ca_not_after);
        let authority = CertificateAuthority::from_pem(&cert_pem, &key_pem).expect("CA");
        assert_eq!(authority.not_after(), ca_not_after);
        let request = parse(
            request_pem(
                "system:node:k-a-node-s36b",
                &["system:nodes"],
                &["node.example.com"],
            )
            .as_bytes(),
        )
        .expect("request");
        let usages: Vec<String> = ["signing", "key encipherment", "server auth", "client auth"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let (ku, eku) = key_usages(&usages).expect("usages");
        let validity = SigningPolicy {
            ttl: Duration::from_secs(3600),
            backdate: Duration::from_secs(300),
            short: Duration::from_secs(8 * 3600),
        }
        .validity(now(), ca_not_after)
        .expect("validity");
        let pem = authority
            .sign(&request, (&ku, &eku), validity, [0xff; 16])
            .expect("signed");
        let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).expect("pem");
        let cert = block.parse_x509().expect("certificate");
        let (_, ca_block) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes()).expect("pem");
        let ca_cert = ca_block.parse_x509().expect("CA");
        assert_eq!(cert.issuer(), ca_cert.subject());
        assert!(cert.verify_signature(Some(ca_cert.public_key())).is_ok());
        assert_eq!(
            cert.subject()
                .iter_common_name()
                .next()
                .and_then(|a| a.as_str().ok()),
            Some("system:node:k-a-node-s36b")
        );
        assert_eq!(
            cert.subject()
                .iter_organization()
                .next()
                .and_then(|a| a.as_str().ok()),
            Some("system:nodes")
        );
        assert_eq!(
            cert.validity().not_before.timestamp(),
            now().as_second() - 300
        );
        assert_eq!(
            cert.validity().not_after.timestamp(),
            now().as_second() + 3600
        );
        assert!(cert.raw_serial()[0] < 0x80);
        let mut saw = (false, false, false, false);
        for ext in cert.extensions() {
            match ext.parsed_extension() {
                ParsedExtension::KeyUsage(k) => {
                    saw.0 = k.digital_signature() && k.key_encipherment() && !k.key_cert_sign();
                }
                ParsedExtension::ExtendedKeyUsage(e) => saw.1 = e.server_auth && e.client_auth,
                ParsedExtension::BasicConstraints(b) => saw.2 = !b.ca,
                ParsedExtension::SubjectAlternativeName(s) => {
                    saw.3 = s.general_names == [GeneralName::DNSName("node.example.com")];
                }
                _ => {}
            }
        }
        assert_eq!(saw, (true, true, true, true));
    }

    /// `openssl req -subj "/O=g1/O=g2/CN=u"`: one attribute per RDN.
    const REPEATED_O: &str = "-----BEGIN CERTIFICATE REQUEST-----\nMIHiMIGIAgEAMCYxCzAJBgNVBAoMAmcxMQswCQYDVQQKDAJnMjEKMAgGA1UEAwwB\ndTBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABCLwzNwQm+xUluhuhrOmzefp4uFq\noqm7y5kOr0VSAhYw99PFE403OjDP+lsGlNbiCEzg01gKchB7e264JRdeGx+gADAK\nBggqhkjOPQQDAgNJADBGAiEA72QHQSKRwpn+avoAqfQKXdewkR1NZurjfrCSTzcS\n68UCIQD4zjcXO9ANzk2CQ5+ywQFFg8D45YzW8uW/lsemDCOuGw==\n-----END CERTIFICATE REQUEST-----\n";
    /// `openssl req -multivalue-rdn -subj "/O=g1+O=g2/CN=u"`: both organizations in one RDN,
    /// as Go's `x509.CreateCertificateRequest` writes them.
    const MULTI_VALUED_O: &str = "-----BEGIN CERTIFICATE REQUEST-----\nMIHgMIGGAgEAMCQxFjAJBgNVBAoMAmcxMAkGA1UECgwCZzIxCjAIBgNVBAMMAXUw\nWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQi8MzcEJvsVJboboazps3n6eLhaqKp\nu8uZDq9FUgIWMPfTxRONNzowz/pbBpTW4ghM4NNYCnIQe3tuuCUXXhsfoAAwCgYI\nKoZIzj0EAwIDSQAwRgIhALYyK5tCYOQtdFLoXQyfE9Dyquq7KoY9PbIvHCSp1fO8\nAiEAmTXGeNRkYhfIE7kkDUQXRMIhvze9CEXXwjcH6VILxUg=\n-----END CERTIFICATE REQUEST-----\n";

    /// Go copies the parsed subject (`Subject: cr.Subject`) and writes every organization, in
    /// one RDN, before the common name.
    #[test]
    fn every_organization_of_the_request_is_in_the_certificate() {
        let (cert_pem, key_pem) = ca("2026-01-02T12:00:00Z".parse().unwrap());
        let authority = CertificateAuthority::from_pem(&cert_pem, &key_pem).expect("CA");
        let (ku, eku) = key_usages(&["client auth".to_string()]).expect("usages");
        let validity = Validity {
            not_before: now(),
            not_after: "2026-01-01T13:00:00Z".parse().unwrap(),
        };
        for request in [REPEATED_O, MULTI_VALUED_O] {
            let request = parse(request.as_bytes()).expect("request");
            let pem = authority
                .sign(&request, (&ku, &eku), validity, [1; 16])
                .expect("signed");
            let (_, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).expect("pem");
            let cert = block.parse_x509().expect("certificate");
            let (_, ca_block) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes()).expect("pem");
            let ca_cert = ca_block.parse_x509().expect("CA");
            assert!(cert.verify_signature(Some(ca_cert.public_key())).is_ok());
            assert_eq!(cert.subject().to_string(), "O=g1 + O=g2, CN=u");
            let organizations: Vec<&str> = cert
                .subject()
                .iter_organization()
                .filter_map(|o| o.as_str().ok())
                .collect();
            assert_eq!(organizations, ["g1", "g2"]);
            assert_eq!(
                cert.validity().not_after.timestamp(),
                validity.not_after.as_second()
            );
        }
    }

    #[test]
    fn bad_ca_material_is_an_error_naming_the_file() {
        let (cert_pem, key_pem) = ca(now());
        assert!(CertificateAuthority::from_pem("junk", &key_pem)
            .unwrap_err()
            .to_string()
            .starts_with("error reading CA cert file"));
        assert!(CertificateAuthority::from_pem(&cert_pem, "junk")
            .unwrap_err()
            .to_string()
            .starts_with("error reading CA key file"));
    }
}
