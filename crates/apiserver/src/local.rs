//! Clients in the same process as the server, served without TLS or a socket: the requests go
//! to the server's router as they come, with the client certificate of their config verified
//! once against the cluster CA, where the TLS listener verifies it once per connection.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::Router;
use base64::Engine as _;
use http::{Request, Response};
use http_body_util::BodyExt;
use kube::client::{Body, DynBody};
use tower::util::BoxCloneSyncService;
use tower::{BoxError, ServiceExt};

use crate::auth::{self, ClientCertificate};

/// The service one in-process client's requests go to.
pub type LocalService = BoxCloneSyncService<Request<Body>, Response<Box<DynBody>>, BoxError>;

/// Builds the in-process service of each client config given: what the TLS listener of
/// [`crate::ApiServer::serve_router`] would do for the same client, without the connection.
/// `ca_pem` is the CA client certificates must be signed by (`None`: certificates are not
/// accepted, as on a plain HTTP listener). Configs with a proxy are declined (`None`): they
/// dial.
pub fn connector(
    router: Router,
    ca_pem: Option<&str>,
) -> impl Fn(&kube::Config) -> Option<LocalService> + Send + Sync + 'static {
    let ca_der: Option<Arc<Vec<u8>>> = ca_pem.and_then(first_certificate).map(Arc::new);
    move |config: &kube::Config| {
        if config.proxy_url.is_some() {
            return None;
        }
        // A certificate that cannot be read: the client dials, and fails as it would.
        let pem = client_certificate_pem(config).ok()?;
        let certificate = pem.and_then(|pem| {
            let leaf = first_certificate(&pem)?;
            let ca = ca_der.as_deref()?;
            let now = jiff::Timestamp::now().as_second();
            match auth::x509::verify(&leaf, ca, now) {
                Ok(user) => user.map(ClientCertificate::User),
                Err(why) => Some(ClientCertificate::Invalid(why)),
            }
        });
        Some(service(router.clone(), certificate))
    }
}

fn service(router: Router, certificate: Option<ClientCertificate>) -> LocalService {
    BoxCloneSyncService::new(tower::service_fn(move |mut req: Request<Body>| {
        if let Some(certificate) = &certificate {
            req.extensions_mut().insert(certificate.clone());
        }
        // The peer a loopback connection would have had (the audit log's `sourceIPs`).
        req.extensions_mut()
            .insert(ConnectInfo(SocketAddr::from(([127, 0, 0, 1], 0))));
        let router = router.clone();
        async move {
            // Each request is served on a task of its own, as the server's connections are: a
            // client that awaits many requests from one task (a controller creating a batch of
            // pods) has them served in parallel, and a request the client stops waiting for is
            // still carried through.
            let resp = match tokio::spawn(router.oneshot(req)).await? {
                Ok(resp) => resp,
                Err(never) => match never {},
            };
            Ok::<_, BoxError>(
                resp.map(|body| -> Box<DynBody> { Box::new(body.map_err(BoxError::from)) }),
            )
        }
    }))
}

/// The PEM text of the client certificate `config` authenticates with, if any; `Err` when it
/// names one that cannot be read.
fn client_certificate_pem(config: &kube::Config) -> Result<Option<String>, ()> {
    let info = &config.auth_info;
    if let Some(data) = &info.client_certificate_data {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(drop)?;
        return String::from_utf8(bytes).map(Some).map_err(drop);
    }
    match &info.client_certificate {
        Some(path) => std::fs::read_to_string(path).map(Some).map_err(drop),
        None => Ok(None),
    }
}

/// The DER of the first certificate of `pem`.
fn first_certificate(pem: &str) -> Option<Vec<u8>> {
    use rustls::pki_types::pem::PemObject;
    rustls::pki_types::CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .and_then(Result::ok)
        .map(|c| c.to_vec())
}
