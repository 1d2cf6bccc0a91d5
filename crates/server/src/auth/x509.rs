//! Client certificates, as kube's x509 authenticator (`k8s.io/apiserver/pkg/authentication/
//! request/x509`): the TLS layer only checks that the client holds the certificate's key; here
//! the certificate is verified as signed by the cluster CA, within its validity and usable for
//! client authentication, and the user is its subject's common name with its organizations as
//! groups (`CommonNameUserConversion`). X.509 v1 certificates — what `openssl x509 -req` makes
//! without extensions — are accepted, as Go accepts them.

use x509_parser::prelude::{ASN1Time, FromDer, X509Certificate};

use super::user::UserInfo;

/// What a connection's client certificate established, put in each of its requests' extensions
/// by the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientCertificate {
    /// A valid certificate naming this user.
    User(UserInfo),
    /// A certificate that does not verify, and why (Go's x509 error text); a bearer token may
    /// still authenticate the request.
    Invalid(String),
}

/// Verifies the leaf certificate `leaf` against the CA certificate `ca` at `now` (Unix seconds):
/// `Ok(None)` for a valid certificate without a common name (it names nobody).
pub fn verify(leaf: &[u8], ca: &[u8], now: i64) -> Result<Option<UserInfo>, String> {
    let unknown = || "x509: certificate signed by unknown authority".to_string();
    let (_, cert) =
        X509Certificate::from_der(leaf).map_err(|e| format!("x509: malformed certificate: {e}"))?;
    let (_, ca) = X509Certificate::from_der(ca).map_err(|_| unknown())?;
    if cert.issuer().as_raw() != ca.subject().as_raw()
        || cert.verify_signature(Some(ca.public_key())).is_err()
    {
        return Err(unknown());
    }
    let at = ASN1Time::from_timestamp(now).map_err(|e| e.to_string())?;
    if !cert.validity().is_valid_at(at) {
        return Err("x509: certificate has expired or is not yet valid".into());
    }
    if let Ok(Some(eku)) = cert.extended_key_usage() {
        if !eku.value.any && !eku.value.client_auth {
            return Err("x509: certificate specifies an incompatible key usage".into());
        }
    }
    Ok(user_from_certificate(leaf))
}

/// The user of the verified leaf certificate `der`; `None` when it has no common name (kube
/// then lets the other authenticators try) or cannot be parsed.
pub fn user_from_certificate(der: &[u8]) -> Option<UserInfo> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .filter(|cn| !cn.is_empty())?
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_string)
        .collect();
    Some(UserInfo {
        name,
        groups,
        ..UserInfo::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair};

    fn certificate(cn: Option<&str>, orgs: &[&str]) -> Vec<u8> {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        if let Some(cn) = cn {
            params.distinguished_name.push(DnType::CommonName, cn);
        }
        for o in orgs {
            params.distinguished_name.push(DnType::OrganizationName, *o);
        }
        let key = KeyPair::generate().expect("key");
        params.self_signed(&key).expect("cert").der().to_vec()
    }

    #[test]
    fn the_common_name_is_the_user_and_organizations_the_groups() {
        let user = user_from_certificate(&certificate(Some("alice"), &["dev"])).expect("user");
        assert_eq!(
            (user.name.as_str(), user.groups.as_slice()),
            ("alice", &["dev".to_string()][..])
        );
        assert_eq!(user.uid, "");
    }

    /// `openssl req -x509 -multivalue-rdn -subj "/O=g1+O=g2/O=g3/CN=u"`: organizations in a
    /// multi-valued RDN, as Go writes several, and in an RDN of their own.
    const THREE_ORGANIZATIONS: &str = "-----BEGIN CERTIFICATE-----\nMIIBujCCAV+gAwIBAgIUIgVfqE4lkK5gXxnPiqnGApiYp5EwCgYIKoZIzj0EAwIw\nMTEWMAkGA1UECgwCZzEwCQYDVQQKDAJnMjELMAkGA1UECgwCZzMxCjAIBgNVBAMM\nAXUwIBcNMjYxMTI5MDU0OTMwWhgPMjEyNjExMDUwNTQ5MzBaMDExFjAJBgNVBAoM\nAmcxMAkGA1UECgwCZzIxCzAJBgNVBAoMAmczMQowCAYDVQQDDAF1MFkwEwYHKoZI\nzj0CAQYIKoZIzj0DAQcDQgAEIvDM3BCb7FSW6G6Gs6bN5+ni4WqiqbvLmQ6vRVIC\nFjD308UTjTc6MM/6WwaU1uIITODTWApyEHt7brglF14bH6NTMFEwHQYDVR0OBBYE\nFBNKDf9Jg6ufbMNd4kj09aO9TDXGMB8GA1UdIwQYMBaAFBNKDf9Jg6ufbMNd4kj0\n9aO9TDXGMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhAPwuk/rK\n18Y4NRn93YH1fD90MiHHccBrBSSF3rZJn+GqAiEA0pSmzglcro0XljrMlVqZXPfx\nOGZUdqmEXMW9KuWSY1U=\n-----END CERTIFICATE-----\n";

    /// Go's `CommonNameUserConversion` takes `Subject.Organization`: every `O`, in order.
    #[test]
    fn every_organization_is_a_group() {
        let (_, pem) =
            x509_parser::pem::parse_x509_pem(THREE_ORGANIZATIONS.as_bytes()).expect("pem");
        let user = user_from_certificate(&pem.contents).expect("user");
        assert_eq!(user.name, "u");
        assert_eq!(user.groups, ["g1", "g2", "g3"]);
    }

    fn ca() -> (rcgen::Issuer<'static, KeyPair>, Vec<u8>) {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name.push(DnType::CommonName, "ca");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let key = KeyPair::generate().expect("key");
        let der = params.self_signed(&key).expect("ca").der().to_vec();
        (rcgen::Issuer::new(params, key), der)
    }

    fn signed(
        issuer: &rcgen::Issuer<'static, KeyPair>,
        cn: &str,
        eku: Vec<rcgen::ExtendedKeyUsagePurpose>,
    ) -> Vec<u8> {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = eku;
        params.not_before = rcgen::date_time_ymd(2020, 1, 1);
        params.not_after = rcgen::date_time_ymd(2100, 1, 1);
        let key = KeyPair::generate().expect("key");
        params.signed_by(&key, issuer).expect("cert").der().to_vec()
    }

    #[test]
    fn certificates_verify_only_against_their_ca_for_client_use_within_validity() {
        let now = jiff::Timestamp::now().as_second();
        let (issuer, ca_der) = ca();
        let (_, other_ca) = ca();
        let client = signed(
            &issuer,
            "alice",
            vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth],
        );
        let user = verify(&client, &ca_der, now)
            .expect("valid")
            .expect("named");
        assert_eq!(user.name, "alice");
        assert_eq!(
            verify(&client, &other_ca, now),
            Err("x509: certificate signed by unknown authority".into())
        );
        for outside in [1_500_000_000, 4_200_000_000] {
            assert_eq!(
                verify(&client, &ca_der, outside),
                Err("x509: certificate has expired or is not yet valid".into())
            );
        }
        let server_only = signed(
            &issuer,
            "web",
            vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth],
        );
        assert_eq!(
            verify(&server_only, &ca_der, now),
            Err("x509: certificate specifies an incompatible key usage".into())
        );
        let no_eku = signed(&issuer, "bob", vec![]);
        assert!(verify(&no_eku, &ca_der, now).is_ok());
    }

    #[test]
    fn a_certificate_without_common_name_authenticates_nobody() {
        assert_eq!(user_from_certificate(&certificate(None, &["dev"])), None);
        assert_eq!(user_from_certificate(b"garbage"), None);
    }
}
