//! client-go's retry rule: a request is sent again only when the server asked for it.
//!
//! `rest.Request` retries a response with status 429 or 5xx that carries an integer `Retry-After`
//! header, after waiting that many seconds, at most 10 times (`withRetry.IsNextRetry`,
//! `checkWait`); every attempt goes through the client's rate limiter again and is counted in its
//! metrics. Nothing else is retried: a 503 or 504 without `Retry-After` is the caller's to handle,
//! so a timed-out create is never sent twice behind the controller's back. kube's default retry
//! layer (up to 15 attempts on 429/503/504 without the server's consent, outside the limiter) is
//! turned off for controller clients and replaced by this [`tower::retry::Policy`].

use std::time::Duration;

use http::{HeaderMap, Request, Response, StatusCode};
use kube::client::Body;

/// Most retries of one request (`rest.Request.maxRetries`, `DefaultMaxRetries`).
pub const MAX_RETRIES: u32 = 10;

/// The retry policy of one request: client-go's Retry-After rule.
#[derive(Clone, Debug, Default)]
pub struct RetryAfter {
    attempts: u32,
}

/// How long the server asked the client to wait before sending `status` again, if it did
/// (`checkWait`): only 429 and 5xx answers with an integer `Retry-After` count.
pub fn server_wait(status: StatusCode, headers: &HeaderMap) -> Option<Duration> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let seconds: u64 = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds))
}

impl<Res, E> tower::retry::Policy<Request<Body>, Response<Res>, E> for RetryAfter {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _req: &mut Request<Body>,
        result: &mut Result<Response<Res>, E>,
    ) -> Option<Self::Future> {
        let response = result.as_ref().ok()?;
        let wait = server_wait(response.status(), response.headers())?;
        if self.attempts >= MAX_RETRIES {
            return None;
        }
        self.attempts += 1;
        tracing::debug!(
            status = response.status().as_u16(),
            attempt = self.attempts,
            ?wait,
            "the server asked to retry the request"
        );
        Some(tokio::time::sleep(wait))
    }

    fn clone_request(&mut self, req: &Request<Body>) -> Option<Request<Body>> {
        // A streamed body cannot be sent twice (client-go: "we have an opaque reader").
        let body = req.body().try_clone()?;
        let mut clone = Request::builder()
            .method(req.method().clone())
            .uri(req.uri().clone())
            .version(req.version())
            .body(body)
            .ok()?;
        *clone.headers_mut() = req.headers().clone();
        *clone.extensions_mut() = req.extensions().clone();
        Some(clone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    use tower::{Service, ServiceExt};

    fn headers(retry_after: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(v) = retry_after {
            h.insert(http::header::RETRY_AFTER, v.parse().expect("header value"));
        }
        h
    }

    #[test]
    fn only_429_and_5xx_with_an_integer_retry_after_are_retried() {
        let cases = [
            (429, Some("1"), Some(1)),
            (500, Some("2"), Some(2)),
            (503, Some("0"), Some(0)),
            (504, Some(" 3 "), Some(3)),
            (503, None, None),
            (504, None, None),
            (429, None, None),
            (429, Some("Wed, 21 Oct 2015 07:28:00 GMT"), None),
            (429, Some("-1"), None),
            (409, Some("1"), None),
            (200, Some("1"), None),
        ];
        for (status, header, want) in cases {
            let status = StatusCode::from_u16(status).expect("status");
            assert_eq!(
                server_wait(status, &headers(header)),
                want.map(Duration::from_secs),
                "{status} Retry-After {header:?}"
            );
        }
    }

    /// A server that answers `failures` times with `status` (and `retry_after`), then 201; it
    /// counts the requests and checks that every one carries the same body.
    fn flaky(
        failures: u32,
        status: u16,
        retry_after: Option<&'static str>,
    ) -> (
        Arc<AtomicU32>,
        impl Service<
                Request<Body>,
                Response = Response<Body>,
                Error = std::convert::Infallible,
                Future = impl Send,
            > + Clone,
    ) {
        let calls = Arc::new(AtomicU32::new(0));
        let counted = Arc::clone(&calls);
        let svc = tower::service_fn(move |req: Request<Body>| {
            let calls = Arc::clone(&counted);
            async move {
                let body = http_body_util::BodyExt::collect(req.into_body())
                    .await
                    .expect("body")
                    .to_bytes();
                assert_eq!(&body[..], b"{\"kind\":\"Pod\"}");
                let n = calls.fetch_add(1, Ordering::SeqCst);
                let mut resp = Response::new(Body::empty());
                if n < failures {
                    *resp.status_mut() = StatusCode::from_u16(status).expect("status");
                    if let Some(v) = retry_after {
                        resp.headers_mut()
                            .insert(http::header::RETRY_AFTER, v.parse().expect("value"));
                    }
                } else {
                    *resp.status_mut() = StatusCode::CREATED;
                }
                Ok::<_, std::convert::Infallible>(resp)
            }
        });
        (calls, svc)
    }

    fn post() -> Request<Body> {
        Request::post("/api/v1/namespaces/default/pods")
            .body(Body::from(b"{\"kind\":\"Pod\"}".to_vec()))
            .expect("request")
    }

    #[tokio::test(start_paused = true)]
    async fn a_post_is_sent_again_after_the_servers_retry_after() {
        let (calls, svc) = flaky(2, 429, Some("1"));
        let mut retrying = tower::retry::Retry::new(RetryAfter::default(), svc);
        let start = tokio::time::Instant::now();
        let resp = retrying
            .ready()
            .await
            .expect("ready")
            .call(post())
            .await
            .expect("answered");
        assert_eq!(resp.status(), StatusCode::CREATED);
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(start.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn a_timeout_without_retry_after_is_not_sent_twice() {
        for status in [503, 504, 429] {
            let (calls, svc) = flaky(1, status, None);
            let mut retrying = tower::retry::Retry::new(RetryAfter::default(), svc);
            let resp = retrying
                .ready()
                .await
                .expect("ready")
                .call(post())
                .await
                .expect("answered");
            assert_eq!(resp.status().as_u16(), status);
            assert_eq!(calls.load(Ordering::SeqCst), 1, "{status}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn retries_stop_after_ten() {
        let (calls, svc) = flaky(u32::MAX, 503, Some("1"));
        let mut retrying = tower::retry::Retry::new(RetryAfter::default(), svc);
        let resp = retrying
            .ready()
            .await
            .expect("ready")
            .call(post())
            .await
            .expect("answered");
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(calls.load(Ordering::SeqCst), 1 + MAX_RETRIES);
    }
}
