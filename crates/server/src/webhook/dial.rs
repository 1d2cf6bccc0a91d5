//! Reaching a resolved address: loopback only, then TLS verified against a `caBundle` (or not
//! verified, for an APIService's `insecureSkipTLSVerify`), then one HTTP/1.1 connection. Webhook
//! calls and the aggregator's proxy share it.
//!
//! An address outside 127.0.0.0/8 and ::1 is refused at once as an unroutable one, in the words
//! of Go's dialer (`dial tcp <ip>:<port>: connect: no route to host`): `rkcm up` has no cluster
//! network, and nothing else is ever dialed.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper::body::{Body, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::net::TcpStream;

/// A boxed error, as hyper takes body errors.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// TLS settings for HTTP/1.1: the certificates of `ca_bundle` (PEM) as the only roots, or no
/// verification at all when `insecure` (the handshake's signatures are still checked).
pub fn tls_config(ca_bundle: &[u8], insecure: bool) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let mut config = if insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_bundle) {
            let cert = cert.map_err(|e| format!("unable to load root certificates: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("unable to load root certificates: {e}"))?;
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Accepts any server certificate (Go's `InsecureSkipVerify`).
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Go's words for a failed handshake.
pub(super) fn tls_error(e: &std::io::Error) -> String {
    let Some(err) = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    else {
        return e.to_string();
    };
    match err {
        rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer | rustls::CertificateError::BadSignature,
        ) => "tls: failed to verify certificate: x509: certificate signed by unknown authority"
            .to_string(),
        rustls::Error::InvalidCertificate(why) => {
            format!("tls: failed to verify certificate: x509: {why:?}")
        }
        rustls::Error::AlertReceived(alert) => format!("remote error: tls: {alert:?}"),
        other => format!("tls: {other}"),
    }
}

/// Go's words for a failed dial.
fn dial_error(addr: SocketAddr, e: &std::io::Error) -> String {
    let why = match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
        std::io::ErrorKind::HostUnreachable | std::io::ErrorKind::NetworkUnreachable => {
            "no route to host".to_string()
        }
        _ => e.to_string(),
    };
    format!("dial tcp {addr}: connect: {why}")
}

/// Dials `addr` (loopback only), completes the TLS handshake for `server_name` and returns the
/// sender of a new HTTP/1.1 connection; the connection is driven by a task of its own and
/// ends when the sender and the last response body are dropped.
pub async fn connect<B>(
    addr: SocketAddr,
    server_name: &str,
    tls: Arc<rustls::ClientConfig>,
) -> Result<SendRequest<B>, String>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    if !addr.ip().is_loopback() {
        return Err(format!("dial tcp {addr}: connect: no route to host"));
    }
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|e| dial_error(addr, &e))?;
    let _ = tcp.set_nodelay(true);
    let name = ServerName::try_from(server_name.to_string())
        .map_err(|e| format!("tls: invalid server name {server_name:?}: {e}"))?;
    let stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(|e| tls_error(&e))?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = conn.await {
            tracing::debug!(%addr, error = %e, "outgoing connection ended with an error");
        }
    });
    Ok(sender)
}

/// Sends `request` (its URI a path and query, its Host header set) over a new connection to
/// `addr` and returns the response once its head arrived: the body streams as the server
/// writes it, nothing is buffered.
pub async fn send<B>(
    addr: SocketAddr,
    server_name: &str,
    tls: Arc<rustls::ClientConfig>,
    request: http::Request<B>,
) -> Result<http::Response<Incoming>, String>
where
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    let mut sender = connect(addr, server_name, tls).await?;
    sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn addresses_outside_loopback_are_not_dialed() {
        let tls = tls_config(b"", true).expect("insecure TLS");
        let e = send::<http_body_util::Empty<bytes::Bytes>>(
            "10.96.0.10:443".parse().expect("addr"),
            "x.default.svc",
            tls,
            http::Request::new(http_body_util::Empty::new()),
        )
        .await
        .expect_err("refused");
        assert_eq!(e, "dial tcp 10.96.0.10:443: connect: no route to host");
    }

    #[test]
    fn bad_ca_bundles_are_refused_and_insecure_needs_none() {
        let e = tls_config(
            b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n",
            false,
        )
        .expect_err("bad PEM");
        assert!(e.starts_with("unable to load root certificates"), "{e}");
        assert!(tls_config(b"", true).is_ok());
    }
}
