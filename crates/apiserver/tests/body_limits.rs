//! Request bodies over kube's 3 MiB limit get a 413 `Status`, whatever the verb.

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Bytes of a body that is over the limit (kube refuses more than 3 MiB).
const TOO_LARGE: usize = 4 << 20;

/// Sends one HTTP/1.1 request with a `len`-byte body as a simple client does: headers and the
/// whole body first (no `Expect: 100-continue`), then it reads the response.
async fn send_h1(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    token: &str,
    len: usize,
) -> (u16, Value) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: {content_type}\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
    );
    let mut request = head.into_bytes();
    request.resize(request.len() + len, b' ');
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        stream
            .write_all(&request)
            .await
            .expect("the server reads the whole body before answering");
        stream
            .read_to_end(&mut response)
            .await
            .expect("the server answers before closing the connection");
    })
    .await
    .expect("the server answers within 30s");
    let text = String::from_utf8_lossy(&response);
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (code, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// A plain-HTTP server (so that the test speaks HTTP/1.1 and HTTP/2 itself) and its address.
async fn server() -> (rkcm_apiserver::testing::TestServer, std::net::SocketAddr) {
    let config = rkcm_apiserver::Config {
        tls: false,
        ..rkcm_apiserver::testing::config()
    };
    let server = rkcm_apiserver::testing::start_with(config).await;
    let addr = server
        .url()
        .trim_start_matches("http://")
        .parse()
        .expect("server address");
    (server, addr)
}

fn assert_too_large(code: u16, status: &Value, what: &str) {
    assert_eq!(code, 413, "{what}: {status}");
    assert_eq!(status["kind"], "Status", "{what}");
    assert_eq!(status["reason"], "RequestEntityTooLarge", "{what}");
    assert_eq!(status["code"], 413, "{what}");
    assert_eq!(
        status["message"], "Request entity too large: limit is 3145728",
        "{what}"
    );
}

/// Sends one HTTP/2 request (cleartext, prior knowledge) with a `len`-byte body.
async fn send_h2(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    token: &str,
    len: usize,
) -> (u16, Value) {
    use http_body_util::{BodyExt, Full};
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut sender, conn) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(stream),
    )
    .await
    .expect("HTTP/2 handshake");
    tokio::spawn(conn);
    let req = http::Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"))
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", content_type)
        .body(Full::new(bytes::Bytes::from(vec![b' '; len])))
        .expect("request");
    let resp = tokio::time::timeout(Duration::from_secs(30), sender.send_request(req))
        .await
        .expect("the server answers within 30s")
        .expect("the server answers before resetting the stream");
    let code = resp.status().as_u16();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (code, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

/// The HTTP version a test request goes with.
#[derive(Clone, Copy, Debug)]
enum Version {
    Http1,
    Http2,
}

#[tokio::test]
async fn every_body_over_the_limit_gets_413() {
    let (server, addr) = server().await;
    let token = server.admin_token();
    for (version, method, path, content_type) in [
        (
            Version::Http1,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            "application/json",
        ),
        (
            Version::Http1,
            "PATCH",
            "/api/v1/namespaces/default/configmaps/x",
            "application/merge-patch+json",
        ),
        (
            Version::Http2,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            "application/json",
        ),
        (
            Version::Http2,
            "PATCH",
            "/api/v1/namespaces/default/configmaps/x",
            "application/strategic-merge-patch+json",
        ),
        (
            Version::Http1,
            "POST",
            "/api/v1/namespaces/default/pods",
            "application/vnd.kubernetes.protobuf",
        ),
        (
            Version::Http1,
            "PUT",
            "/api/v1/namespaces/default/pods/x/status",
            "application/json",
        ),
        (
            Version::Http1,
            "PUT",
            "/apis/apps/v1/namespaces/default/deployments/x/scale",
            "application/json",
        ),
        (
            Version::Http1,
            "DELETE",
            "/api/v1/namespaces/default/configmaps",
            "application/json",
        ),
    ] {
        let (code, status) = match version {
            Version::Http1 => send_h1(addr, method, path, content_type, token, TOO_LARGE).await,
            Version::Http2 => send_h2(addr, method, path, content_type, token, TOO_LARGE).await,
        };
        assert_too_large(code, &status, &format!("{method} {path} over {version:?}"));
    }
}
