//! Calling a webhook: an HTTPS POST of the review, verified against the webhook's `caBundle`,
//! within its `timeoutSeconds` (kube's `webhook.ClientManager` and the rest client it builds).
//!
//! The server dials loopback addresses only ([`dial`]): an address outside 127.0.0.0/8 and ::1
//! is refused at once as an unroutable one (`dial tcp <ip>:<port>: connect: no route to host`),
//! so the webhook's `failurePolicy` decides. The only hostname resolved is `localhost`. Errors read
//! as Go's `net/http` client's (`Post "<url>": <cause>`), the way kube reports them.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};

use rkcm_storage::store::Store;

use super::{dial, service, Client};

/// The largest response read (kube's webhooks answer reviews, not payloads).
const MAX_RESPONSE_BYTES: usize = 10 << 20;

/// Where one call goes.
struct Target {
    /// The URL as errors name it (with kube's `?timeout=`).
    url: String,
    /// TLS server name: the URL's host, or the service's DNS name.
    server_name: String,
    /// Host header.
    authority: String,
    /// Request path and query.
    path_and_query: String,
    /// The address to dial.
    addr: SocketAddr,
}

/// Go's `time.Duration` spelling of whole seconds, as kube's `?timeout=` query parameter.
fn go_duration(d: Duration) -> String {
    format!("{}s", d.as_secs())
}

/// The host and port of an `https://host[:port]` authority; `[::1]` brackets removed.
fn split_authority(authority: &str) -> Option<(&str, u16)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if after.is_empty() => 443,
            None => return None,
        };
        return Some((host, port));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => Some((host, port.parse().ok()?)),
        None => Some((authority, 443)),
    }
}

/// The address of `host`: an IP literal, or `localhost`.
fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(SocketAddr::new(ip, port));
    }
    if host.eq_ignore_ascii_case("localhost") {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    Err(format!("dial tcp: lookup {host}: no such host"))
}

async fn target(client: &Client, store: &Store) -> Result<Target, String> {
    let timeout = go_duration(client.timeout);
    if let Some(url) = &client.config.url {
        let rest = url
            .strip_prefix("https://")
            .ok_or_else(|| format!("unsupported protocol scheme in {url:?}"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) =
            split_authority(authority).ok_or_else(|| format!("invalid URL {url:?}"))?;
        let path_and_query = format!("{path}?timeout={timeout}");
        let full = format!("https://{authority}{path_and_query}");
        let addr = resolve(host, port).map_err(|e| format!("Post {full:?}: {e}"))?;
        return Ok(Target {
            url: full,
            server_name: host.to_string(),
            authority: authority.to_string(),
            path_and_query,
            addr,
        });
    }
    let Some(svc) = &client.config.service else {
        return Err("webhook has no clientConfig url or service".to_string());
    };
    let host = format!("{}.{}.svc", svc.name, svc.namespace);
    let path = if svc.path.is_empty() { "/" } else { &svc.path };
    let path_and_query = format!("{path}?timeout={timeout}");
    let url = format!("https://{host}:{}{path_and_query}", svc.port);
    let addr = service::resolve(store, svc).map_err(|e| format!("Post {url:?}: {e}"))?;
    Ok(Target {
        url,
        server_name: host.clone(),
        authority: format!("{host}:{}", svc.port),
        path_and_query,
        addr,
    })
}

/// The TLS settings of `client`: its `caBundle` as the only roots, HTTP/1.1.
fn tls_config(client: &Client) -> Result<Arc<rustls::ClientConfig>, String> {
    client
        .tls
        .get_or_init(|| dial::tls_config(&client.config.ca_bundle, false))
        .clone()
}

async fn post(
    target: &Target,
    tls: Arc<rustls::ClientConfig>,
    body: Vec<u8>,
) -> Result<(u16, Bytes), String> {
    let mut sender = dial::connect(target.addr, &target.server_name, tls).await?;
    let request = http::Request::post(target.path_and_query.as_str())
        .header(http::header::HOST, target.authority.as_str())
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    // The connection ends once the sender and the body are gone.
    drop(sender);
    let status = response.status().as_u16();
    let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, body))
}

/// POSTs `body` through `client` and returns the response body of a 2xx answer; the error is
/// the cause kube reports after `failed to call webhook: `.
pub(super) async fn call(client: &Client, store: &Store, body: Vec<u8>) -> Result<Bytes, String> {
    let target = target(client, store).await?;
    let tls = tls_config(client).map_err(|e| format!("Post {:?}: {e}", target.url))?;
    let answer = tokio::time::timeout(client.timeout, post(&target, tls, body)).await;
    let (status, body) = match answer {
        Err(_) => return Err(format!("Post {:?}: context deadline exceeded", target.url)),
        Ok(Err(e)) => return Err(format!("Post {:?}: {e}", target.url)),
        Ok(Ok(answer)) => answer,
    };
    if !(200..300).contains(&status) {
        let text = String::from_utf8_lossy(&body);
        let text = text.trim();
        return Err(if text.is_empty() {
            format!("the server responded with the status code {status} but did not return more information")
        } else {
            format!("an error on the server ({text:?}) has prevented the request from succeeding")
        });
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(split_authority("127.0.0.1:8443"), Some(("127.0.0.1", 8443)));
        assert_eq!(split_authority("localhost"), Some(("localhost", 443)));
        assert_eq!(split_authority("[::1]:9"), Some(("::1", 9)));
        assert_eq!(split_authority("[::1]"), Some(("::1", 443)));
        assert_eq!(split_authority("h:x"), None);
    }

    #[test]
    fn only_ip_literals_and_localhost_resolve() {
        assert_eq!(
            resolve("localhost", 1).expect("loopback"),
            "127.0.0.1:1".parse().expect("addr")
        );
        assert_eq!(
            resolve("example.com", 443).expect_err("not resolved"),
            "dial tcp: lookup example.com: no such host"
        );
    }

    #[test]
    fn timeouts_read_as_go_durations() {
        assert_eq!(go_duration(Duration::from_secs(10)), "10s");
    }
}
