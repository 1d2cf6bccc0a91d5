//! A certificate authority and a server certificate for test servers on 127.0.0.1 (webhooks,
//! aggregated API servers), made with rcgen.

use std::sync::Arc;

/// A TLS acceptor for `names` (DNS names or IP addresses), and the PEM of the CA that signed
/// its certificate.
pub fn acceptor(names: &[&str]) -> (tokio_rustls::TlsAcceptor, String) {
    let ca_key = rcgen::KeyPair::generate().expect("CA key");
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("CA");
    let leaf_key = rcgen::KeyPair::generate().expect("key");
    let leaf =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .expect("params")
            .signed_by(&leaf_key, &ca)
            .expect("certificate");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocols")
        .with_no_client_auth()
        .with_single_cert(
            vec![leaf.der().clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
        )
        .expect("server TLS");
    (tokio_rustls::TlsAcceptor::from(Arc::new(tls)), ca.pem())
}
