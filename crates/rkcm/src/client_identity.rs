//! Client certificates for the components of `rkcm up`, signed in memory by the cluster CA: a
//! component authenticates as kube's would under kubeadm (CN = user, O = groups).

use base64::Engine as _;
use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair, KeyUsagePurpose};

/// The user kube-controller-manager authenticates as (`user.KubeControllerManager`).
pub const KUBE_CONTROLLER_MANAGER: &str = "system:kube-controller-manager";

/// Errors making a client certificate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The CA certificate or key does not parse, or signing failed.
    #[error("signing a client certificate for {user}")]
    Sign {
        /// The certificate's user.
        user: String,
        /// The cause.
        #[source]
        source: rcgen::Error,
    },
    /// The configuration with the certificate does not load.
    #[error("loading the client configuration of {user}")]
    Config {
        /// The certificate's user.
        user: String,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
}

/// A client certificate and its key, both PEM.
pub struct ClientCertificate {
    /// The certificate.
    pub cert_pem: String,
    /// Its private key.
    pub key_pem: String,
}

/// A client certificate for `user` in `groups`, valid from today for a year (kubeadm's
/// validity), signed by the CA of `ca_cert_pem` and `ca_key_pem`.
pub fn issue(
    ca_cert_pem: &str,
    ca_key_pem: &str,
    user: &str,
    groups: &[&str],
) -> Result<ClientCertificate, Error> {
    let sign = |source| Error::Sign {
        user: user.to_string(),
        source,
    };
    let pkcs8 = rkcm_apimachinery::keyutil::pkcs8_der(ca_key_pem)
        .map_err(|_| sign(rcgen::Error::CouldNotParseKeyPair))?;
    let ca_key = KeyPair::try_from(pkcs8.as_slice()).map_err(sign)?;
    let issuer = Issuer::from_ca_cert_pem(ca_cert_pem, ca_key).map_err(sign)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(sign)?;
    params.distinguished_name.push(DnType::CommonName, user);
    for group in groups {
        params
            .distinguished_name
            .push(DnType::OrganizationName, *group);
    }
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let today = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date();
    let month = u8::try_from(today.month()).unwrap_or(1);
    let day = u8::try_from(today.day()).unwrap_or(1);
    params.not_before = rcgen::date_time_ymd(i32::from(today.year()), month, day);
    params.not_after = rcgen::date_time_ymd(i32::from(today.year()) + 1, month, day.min(28));
    let key = KeyPair::generate().map_err(sign)?;
    let cert = params.signed_by(&key, &issuer).map_err(sign)?;
    Ok(ClientCertificate {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// `base` (its server and trust) authenticating with `cert` instead of its own credentials.
pub fn with_certificate(
    base: &kube::Config,
    user: &str,
    cert: &ClientCertificate,
) -> Result<kube::Config, Error> {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let auth_info = serde_json::from_value(serde_json::json!({
        "client-certificate-data": b64(&cert.cert_pem),
        "client-key-data": b64(&cert.key_pem),
    }))
    .map_err(|source| Error::Config {
        user: user.to_string(),
        source,
    })?;
    let mut config = base.clone();
    config.auth_info = auth_info;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn der(pem: &str) -> Vec<u8> {
        pem::parse(pem).expect("PEM").into_contents()
    }

    // The API server's own x509 authenticator reads the user and groups from it.
    #[test]
    fn the_api_server_authenticates_the_certificate_as_its_user_and_groups() {
        let ca = rkcm_apiserver::tls::generate(&[]).expect("a CA");
        let cert = issue(
            &ca.ca_pem,
            &ca.ca_key_pem,
            KUBE_CONTROLLER_MANAGER,
            &["some-group"],
        )
        .expect("signed");
        let now = jiff::Timestamp::now().as_second();
        let user = rkcm_apiserver::auth::x509::verify(&der(&cert.cert_pem), &der(&ca.ca_pem), now)
            .expect("valid for client use")
            .expect("names a user");
        assert_eq!(user.name, KUBE_CONTROLLER_MANAGER);
        assert!(
            user.groups.contains(&"some-group".to_string()),
            "{:?}",
            user.groups
        );
        let other = rkcm_apiserver::tls::generate(&[]).expect("another CA");
        assert!(
            rkcm_apiserver::auth::x509::verify(&der(&cert.cert_pem), &der(&other.ca_pem), now)
                .is_err()
        );
    }

    // kubeadm's CA is named `kubernetes`; the issuer of the certificate is the CA's subject,
    // whatever it is, or the API server would not chain it.
    #[test]
    fn a_ca_made_elsewhere_signs_certificates_that_chain_to_it() {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params
            .distinguished_name
            .push(DnType::CommonName, "kubernetes");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_pem = params.self_signed(&key).expect("CA").pem();
        let cert = issue(
            &ca_pem,
            &key.serialize_pem(),
            "system:node:n1",
            &["system:nodes"],
        )
        .expect("signed");
        let now = jiff::Timestamp::now().as_second();
        let user = rkcm_apiserver::auth::x509::verify(&der(&cert.cert_pem), &der(&ca_pem), now)
            .expect("chains to the CA")
            .expect("names a user");
        assert_eq!(user.name, "system:node:n1");
    }

    #[test]
    fn a_broken_ca_key_is_an_error_not_a_panic() {
        let ca = rkcm_apiserver::tls::generate(&[]).expect("a CA");
        let err = issue(&ca.ca_pem, "not a key", KUBE_CONTROLLER_MANAGER, &[])
            .err()
            .expect("refused");
        assert!(err.to_string().contains(KUBE_CONTROLLER_MANAGER));
    }

    #[test]
    fn the_configuration_carries_only_the_certificate() {
        let ca = rkcm_apiserver::tls::generate(&[]).expect("a CA");
        let cert = issue(&ca.ca_pem, &ca.ca_key_pem, KUBE_CONTROLLER_MANAGER, &[]).expect("signed");
        let base = kube::Config::new("https://127.0.0.1:6443".parse().expect("uri"));
        let config = with_certificate(&base, KUBE_CONTROLLER_MANAGER, &cert).expect("config");
        assert!(config.auth_info.token.is_none());
        assert!(config.auth_info.client_certificate_data.is_some());
        assert_eq!(config.cluster_url, base.cluster_url);
    }
}
