//! Calling an aggregated server's discovery document, `/apis/<group>/<version>`: the
//! availability check (five attempts at once, TLS not verified, 5 s each, as kube's remote
//! availability controller does) and the fetch of its resources for discovery (TLS as the
//! proxy's).
//!
//! Both call as `system:kube-aggregator` in `system:masters`, so the aggregated server's
//! authorizer lets the check through.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use serde_json::Value;

use rkcm_server::webhook::{dial, service, ServiceRef};

use crate::auth::user::SYSTEM_MASTERS;
use crate::auth::UserInfo;
use crate::store::Store;

/// The user checks and discovery calls are made as.
pub const AGGREGATOR_USER: &str = "system:kube-aggregator";
/// Attempts of one check; one success is enough.
const ATTEMPTS: usize = 5;
/// The discovery client's `Timeout`.
const TIMEOUT: Duration = Duration::from_secs(5);
/// The largest discovery document read.
const MAX_DOCUMENT_BYTES: usize = 10 << 20;

/// The path of the discovery document of `group`/`version` (`/api/v1` for the legacy group).
pub fn discovery_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// One GET of `path` at `addr`, within [`TIMEOUT`]: the status and body, or Go's words for
/// the failure (after `Get "<url>": `).
async fn get(
    addr: SocketAddr,
    server_name: &str,
    tls: Arc<rustls::ClientConfig>,
    path: &str,
) -> Result<(u16, Bytes), String> {
    let url = format!("https://{addr}{path}");
    let user = UserInfo::new(AGGREGATOR_USER, &[SYSTEM_MASTERS]);
    let mut request = http::Request::get(path)
        .header(http::header::HOST, addr.to_string())
        .header(http::header::ACCEPT, "application/json, */*")
        .body(Empty::<Bytes>::new())
        .map_err(|e| format!("Get {url:?}: {e}"))?;
    super::headers::set_remote_user(request.headers_mut(), &user);
    let call = async {
        let response = dial::send(addr, server_name, tls, request).await?;
        let status = response.status().as_u16();
        let body = Limited::new(response.into_body(), MAX_DOCUMENT_BYTES)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok::<_, String>((status, body))
    };
    match tokio::time::timeout(TIMEOUT, call).await {
        Err(_) => Err(format!(
            "Get {url:?}: context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )),
        Ok(Err(e)) => Err(format!("Get {url:?}: {e}")),
        Ok(Ok(answer)) => Ok(answer),
    }
}

/// One attempt of the availability check: the error is the condition's message.
async fn attempt(
    store: &Store,
    svc: &ServiceRef,
    tls: Arc<rustls::ClientConfig>,
    path: &str,
) -> Result<(), String> {
    let addr = service::resolve(store, svc)?;
    let url = format!("https://{addr}{path}");
    let (status, _) = get(addr, &svc.host(), tls, path)
        .await
        .map_err(|e| format!("failing or missing response from {url}: {e}"))?;
    // Redirects are not followed and count as answers.
    if !(200..400).contains(&status) {
        return Err(format!(
            "failing or missing response from {url}: bad status from {url}: {status}"
        ));
    }
    Ok(())
}

/// The availability check of `group`/`version` served by `svc`.
pub async fn available(
    store: &Store,
    svc: &ServiceRef,
    group: &str,
    version: &str,
) -> Result<(), String> {
    let tls = dial::tls_config(b"", true)?;
    let path = discovery_path(group, version);
    let attempts = (0..ATTEMPTS).map(|_| attempt(store, svc, Arc::clone(&tls), &path));
    let results = futures::future::join_all(attempts).await;
    let mut last = Ok(());
    for r in results {
        if r.is_ok() {
            return Ok(());
        }
        last = r;
    }
    last
}

/// The `APIResourceList` `svc` serves for `group`/`version`, fetched as the proxy would.
pub async fn resources(
    store: &Store,
    svc: &ServiceRef,
    tls: Arc<rustls::ClientConfig>,
    group: &str,
    version: &str,
) -> Result<Value, String> {
    let addr = service::resolve(store, svc)?;
    let (status, body) = get(addr, &svc.host(), tls, &discovery_path(group, version)).await?;
    if !(200..300).contains(&status) {
        return Err(format!("the discovery document answered {status}"));
    }
    let list: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    if list.get("resources").is_some_and(Value::is_array) {
        Ok(list)
    } else {
        Err("the discovery document is not an APIResourceList".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_legacy_group_is_checked_under_api() {
        assert_eq!(discovery_path("", "v1"), "/api/v1");
        assert_eq!(
            discovery_path("metrics.k8s.io", "v1beta1"),
            "/apis/metrics.k8s.io/v1beta1"
        );
    }
}
