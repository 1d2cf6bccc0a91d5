//! A CertificateSigningRequest's PKCS#10 request, parsed: what signers and approvers decide on.
//!
//! Mirrors `certificates.ParseCSR` (`pkg/apis/certificates/helpers.go`) and the fields of Go's
//! `x509.CertificateRequest` that kube's signers and recognizers read.

use std::net::IpAddr;

use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer;

use super::name::Name;

/// Why a request could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The data is not a PEM `CERTIFICATE REQUEST` block.
    #[error("PEM block type must be CERTIFICATE REQUEST")]
    NotPem,
    /// The DER inside is not a PKCS#10 request.
    #[error("x509: malformed certificate request: {0}")]
    Malformed(String),
}

/// The parts of a PKCS#10 request kube reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    /// The DER of the request.
    pub der: Vec<u8>,
    /// The subject, as Go's `pkix.Name` holds it.
    pub subject: Name,
    /// DNS subject alternative names.
    pub dns_names: Vec<String>,
    /// IP subject alternative names.
    pub ip_addresses: Vec<IpAddr>,
    /// Email subject alternative names.
    pub email_addresses: Vec<String>,
    /// URI subject alternative names.
    pub uris: Vec<String>,
}

/// Parses the first PEM block of `pem` as a certificate request (`ParseCSR`).
pub fn parse(pem: &[u8]) -> Result<Request, ParseError> {
    let block = x509_parser::pem::Pem::iter_from_buffer(pem)
        .next()
        .and_then(Result::ok)
        .filter(|b| b.label == "CERTIFICATE REQUEST")
        .ok_or(ParseError::NotPem)?;
    let (_, csr) = X509CertificationRequest::from_der(&block.contents)
        .map_err(|e| ParseError::Malformed(e.to_string()))?;
    let mut request = Request {
        subject: Name::from_x509(&csr.certification_request_info.subject),
        ..Request::default()
    };
    for ext in csr.requested_extensions().into_iter().flatten() {
        let ParsedExtension::SubjectAlternativeName(san) = ext else {
            continue;
        };
        for name in &san.general_names {
            match name {
                GeneralName::DNSName(n) => request.dns_names.push(n.to_string()),
                GeneralName::RFC822Name(n) => request.email_addresses.push(n.to_string()),
                GeneralName::URI(n) => request.uris.push(n.to_string()),
                GeneralName::IPAddress(bytes) => {
                    if let Some(ip) = ip_from_bytes(bytes) {
                        request.ip_addresses.push(ip);
                    }
                }
                _ => {}
            }
        }
    }
    request.der = block.contents;
    Ok(request)
}

fn ip_from_bytes(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => <[u8; 4]>::try_from(bytes).ok().map(IpAddr::from),
        16 => <[u8; 16]>::try_from(bytes).ok().map(IpAddr::from),
        _ => None,
    }
}

/// Test helpers: PEM requests made with rcgen.
#[cfg(test)]
pub(crate) mod testing {
    /// A PEM request for `cn` in `orgs`, with `sans` (DNS names, or IPs when they parse as one).
    pub(crate) fn request_pem(cn: &str, orgs: &[&str], sans: &[&str]) -> String {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params =
            rcgen::CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .expect("params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        if !cn.is_empty() {
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, cn);
        }
        for o in orgs {
            params
                .distinguished_name
                .push(rcgen::DnType::OrganizationName, *o);
        }
        params
            .serialize_request(&key)
            .expect("request")
            .pem()
            .expect("pem")
    }
}

#[cfg(test)]
mod tests {
    use super::testing::request_pem;
    use super::*;

    #[test]
    fn subjects_and_alternative_names_are_read() {
        let pem = request_pem(
            "system:node:n1",
            &["system:nodes"],
            &["n1.example.com", "10.0.0.1"],
        );
        let r = parse(pem.as_bytes()).expect("parsed");
        assert_eq!(r.subject.common_name, "system:node:n1");
        assert_eq!(r.subject.organization, ["system:nodes"]);
        assert_eq!(r.dns_names, ["n1.example.com"]);
        assert_eq!(r.ip_addresses, ["10.0.0.1".parse::<IpAddr>().unwrap()]);
        assert!(r.email_addresses.is_empty() && r.uris.is_empty());
    }

    #[test]
    fn only_pem_certificate_requests_parse() {
        assert_eq!(parse(b"junk"), Err(ParseError::NotPem));
        let cert = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        assert_eq!(parse(cert.as_bytes()), Err(ParseError::NotPem));
        let bad = "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n";
        assert!(matches!(
            parse(bad.as_bytes()),
            Err(ParseError::Malformed(_))
        ));
    }
}
