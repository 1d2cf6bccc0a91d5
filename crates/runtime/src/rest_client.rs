//! Client-side throttling and request metrics for API calls, as client-go's `rest.Config{QPS, Burst}`.
//!
//! kube-controller-manager gives every controller its own clientset, and every clientset one token
//! bucket (`--kube-api-qps`, `--kube-api-burst`). `kube` has no such limiter, so this is a
//! [`tower::Layer`] put under the `kube::Client` of each controller. It also records client-go's
//! `rest_client_*` metrics.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Request, Response};
use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use tokio::time::Sleep;

use crate::retry_after::RetryAfter;
use crate::token_bucket::TokenBucket;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerbHost {
    verb: String,
    host: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeMethodHost {
    code: String,
    method: String,
    host: String,
}

struct Metrics {
    requests: Family<CodeMethodHost, Counter>,
    latency: Family<VerbHost, Histogram>,
    rate_limiter: Family<VerbHost, Histogram>,
}

fn latency_histogram() -> Histogram {
    Histogram::new([
        0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
    ])
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| Metrics {
    requests: Family::default(),
    latency: Family::new_with_constructor(latency_histogram),
    rate_limiter: Family::new_with_constructor(latency_histogram),
});

/// Registers client-go's `rest_client_*` metrics in `registry`.
pub fn register_metrics(registry: &mut Registry) {
    let m = &*METRICS;
    registry.register(
        "rest_client_requests",
        "Number of HTTP requests, partitioned by status code, method, and host.",
        m.requests.clone(),
    );
    registry.register(
        "rest_client_request_duration_seconds",
        "Request latency in seconds. Broken down by verb, and host.",
        m.latency.clone(),
    );
    registry.register(
        "rest_client_rate_limiter_duration_seconds",
        "Client side rate limiter latency in seconds. Broken down by verb, and host.",
        m.rate_limiter.clone(),
    );
}

/// client-go's QPS when `rest.Config.QPS` is zero (`DefaultQPS`, `rest/config.go`).
pub const DEFAULT_QPS: f32 = 5.0;
/// client-go's burst when `rest.Config.Burst` is zero (`DefaultBurst`, `rest/config.go`).
pub const DEFAULT_BURST: u32 = 10;

/// The token bucket client-go builds for `qps` and `burst` (`RESTClientFor`, `rest/config.go`):
/// a zero QPS or burst takes client-go's default (5 qps, burst 10), and a negative QPS means no
/// client-side rate limiting at all (`None`).
pub fn limits(qps: f32, burst: u32) -> Option<(f64, u32)> {
    let qps = if qps == 0.0 { DEFAULT_QPS } else { qps };
    let burst = if burst == 0 { DEFAULT_BURST } else { burst };
    (qps > 0.0).then_some((f64::from(qps), burst))
}

/// Builds a `kube::Client` for one controller: its own token bucket (`qps`, `burst`, see
/// [`limits`]) and metrics, and client-go's retry rule ([`crate::retry_after`]) in place of
/// kube's default retries, so that every attempt is throttled and counted.
pub fn client(mut config: kube::Config, qps: f32, burst: u32) -> Result<kube::Client, kube::Error> {
    config.default_retry = false;
    let layer = RateLimitLayer::new(&config, qps, burst);
    Ok(crate::transport::client_builder(config)?
        // A retry sends the request again through a clone of the stack under it.
        .with_layer(&tower::buffer::BufferLayer::new(1024))
        .with_layer(&layer)
        .with_layer(&tower::retry::RetryLayer::new(RetryAfter::default()))
        .build())
}

/// As [`client`], with every request authenticated by a bearer token from `tokens` (client-go's
/// `ResettableTokenSourceWrapTransport` under the clientset's rate limiter). `config` should carry
/// no credentials of its own (client-go's `AnonymousClientConfig`).
pub fn client_with_tokens(
    mut config: kube::Config,
    qps: f32,
    burst: u32,
    tokens: Arc<crate::token_source::CachedTokenSource>,
) -> Result<kube::Client, kube::Error> {
    config.default_retry = false;
    let layer = RateLimitLayer::new(&config, qps, burst);
    Ok(crate::transport::client_builder(config)?
        .with_layer(&tower::buffer::BufferLayer::new(1024))
        .with_layer(&crate::token_source::BearerTokenLayer::new(tokens))
        .with_layer(&layer)
        .with_layer(&tower::retry::RetryLayer::new(RetryAfter::default()))
        .build())
}

/// The layer that throttles and measures every request of one client.
#[derive(Clone)]
pub struct RateLimitLayer {
    /// `None`: not throttled.
    bucket: Option<Arc<Mutex<TokenBucket>>>,
    host: Arc<str>,
}

impl RateLimitLayer {
    /// A layer for clients of `config`'s server, at `qps` with `burst` (see [`limits`]).
    pub fn new(config: &kube::Config, qps: f32, burst: u32) -> Self {
        let host = config
            .cluster_url
            .authority()
            .map(|a| a.to_string())
            .unwrap_or_default();
        Self {
            bucket: limits(qps, burst)
                .map(|(qps, burst)| Arc::new(Mutex::new(TokenBucket::new(qps, burst)))),
            host: host.into(),
        }
    }
}

impl<S> tower::Layer<S> for RateLimitLayer {
    type Service = RateLimited<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RateLimited {
            inner,
            bucket: self.bucket.clone(),
            host: Arc::clone(&self.host),
            state: Permit::None,
        }
    }
}

enum Permit {
    None,
    Waiting {
        sleep: Pin<Box<Sleep>>,
        since: Instant,
    },
    Granted {
        waited: Duration,
    },
}

/// A service that takes a token before each request (see [`RateLimitLayer`]).
pub struct RateLimited<S> {
    inner: S,
    bucket: Option<Arc<Mutex<TokenBucket>>>,
    host: Arc<str>,
    state: Permit,
}

/// A clone shares the bucket but holds no token: it reserves its own before its next request.
impl<S: Clone> Clone for RateLimited<S> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            bucket: self.bucket.clone(),
            host: Arc::clone(&self.host),
            state: Permit::None,
        }
    }
}

impl<S, B, RB> tower::Service<Request<B>> for RateLimited<S>
where
    S: tower::Service<Request<B>, Response = Response<RB>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        loop {
            match &mut self.state {
                Permit::None => {
                    let now = Instant::now();
                    let wait = self.bucket.as_ref().map_or(Duration::ZERO, |b| {
                        b.lock().reserve(tokio::time::Instant::now())
                    });
                    self.state = if wait.is_zero() {
                        Permit::Granted {
                            waited: Duration::ZERO,
                        }
                    } else {
                        Permit::Waiting {
                            sleep: Box::pin(tokio::time::sleep(wait)),
                            since: now,
                        }
                    };
                }
                Permit::Waiting { sleep, since } => {
                    if sleep.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    self.state = Permit::Granted {
                        waited: since.elapsed(),
                    };
                }
                Permit::Granted { .. } => return self.inner.poll_ready(cx),
            }
        }
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let waited = match std::mem::replace(&mut self.state, Permit::None) {
            Permit::Granted { waited } => waited,
            // `call` without `poll_ready` breaks the tower contract; don't throttle twice.
            _ => Duration::ZERO,
        };
        let verb = req.method().as_str().to_string();
        let host = self.host.to_string();
        let labels = VerbHost { verb, host };
        METRICS
            .rate_limiter
            .get_or_create(&labels)
            .observe(waited.as_secs_f64());
        let started = Instant::now();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let result = fut.await;
            METRICS
                .latency
                .get_or_create(&labels)
                .observe(started.elapsed().as_secs_f64());
            let code = match &result {
                Ok(resp) => resp.status().as_u16().to_string(),
                Err(_) => "<error>".to_string(),
            };
            METRICS
                .requests
                .get_or_create(&CodeMethodHost {
                    code,
                    method: labels.verb,
                    host: labels.host,
                })
                .inc();
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use tower::{Layer, Service, ServiceExt};

    #[tokio::test(start_paused = true)]
    async fn requests_beyond_the_burst_wait_for_the_bucket() {
        let config = kube::Config::new("http://127.0.0.1:1".parse().expect("valid url"));
        let layer = RateLimitLayer::new(&config, 10.0, 2);
        let mut service = layer.layer(tower::service_fn(|_req: Request<()>| async {
            Ok::<_, Infallible>(Response::new(()))
        }));
        let start = tokio::time::Instant::now();
        let mut sent_at = Vec::new();
        for _ in 0..4 {
            service
                .ready()
                .await
                .expect("ready")
                .call(Request::new(()))
                .await
                .expect("answered");
            sent_at.push(start.elapsed());
        }
        // The burst of two goes at once, then one request every 100 ms (10 qps).
        assert_eq!(sent_at[0], Duration::ZERO);
        assert_eq!(sent_at[1], Duration::ZERO);
        assert!(sent_at[2] >= Duration::from_millis(100), "{sent_at:?}");
        assert!(sent_at[3] >= Duration::from_millis(200), "{sent_at:?}");
        assert!(sent_at[3] < Duration::from_millis(250), "{sent_at:?}");
    }

    /// When each of `n` requests through a layer at `qps`/`burst` was sent, from the first.
    async fn send_times(qps: f32, burst: u32, n: usize) -> Vec<Duration> {
        let config = kube::Config::new("http://127.0.0.1:1".parse().expect("valid url"));
        let mut service = RateLimitLayer::new(&config, qps, burst).layer(tower::service_fn(
            |_req: Request<()>| async { Ok::<_, Infallible>(Response::new(())) },
        ));
        let start = tokio::time::Instant::now();
        let mut sent_at = Vec::new();
        for _ in 0..n {
            service
                .ready()
                .await
                .expect("ready")
                .call(Request::new(()))
                .await
                .expect("answered");
            sent_at.push(start.elapsed());
        }
        sent_at
    }

    #[test]
    fn zero_qps_and_burst_take_client_gos_defaults_and_negative_qps_turns_limiting_off() {
        assert_eq!(limits(0.0, 0), Some((5.0, 10)));
        assert_eq!(limits(0.0, 30), Some((5.0, 30)));
        assert_eq!(limits(20.0, 0), Some((20.0, 10)));
        assert_eq!(limits(20.0, 30), Some((20.0, 30)));
        assert_eq!(limits(-1.0, 30), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_zero_qps_client_is_throttled_at_client_gos_default() {
        let sent_at = send_times(0.0, 0, 12).await;
        // Burst 10 at once, then 5 qps: one request every 200 ms.
        assert_eq!(sent_at[9], Duration::ZERO, "{sent_at:?}");
        assert!(sent_at[10] >= Duration::from_millis(200), "{sent_at:?}");
        assert!(sent_at[11] >= Duration::from_millis(400), "{sent_at:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_negative_qps_client_is_not_throttled() {
        let sent_at = send_times(-1.0, 1, 50).await;
        assert_eq!(sent_at[49], Duration::ZERO, "{sent_at:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn clients_of_different_controllers_have_their_own_buckets() {
        let config = kube::Config::new("http://127.0.0.1:1".parse().expect("valid url"));
        let ok = || {
            tower::service_fn(|_req: Request<()>| async { Ok::<_, Infallible>(Response::new(())) })
        };
        let mut a = RateLimitLayer::new(&config, 1.0, 1).layer(ok());
        let mut b = RateLimitLayer::new(&config, 1.0, 1).layer(ok());
        let start = tokio::time::Instant::now();
        a.ready()
            .await
            .expect("ready")
            .call(Request::new(()))
            .await
            .expect("answered");
        b.ready()
            .await
            .expect("ready")
            .call(Request::new(()))
            .await
            .expect("answered");
        assert_eq!(
            start.elapsed(),
            Duration::ZERO,
            "b did not wait for a's token"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_retry_the_server_asked_for_takes_a_token_again() {
        use std::sync::atomic::{AtomicU32, Ordering};
        let config = kube::Config::new("http://127.0.0.1:1".parse().expect("valid url"));
        let calls = Arc::new(AtomicU32::new(0));
        let counted = Arc::clone(&calls);
        let server = tower::service_fn(move |_req: Request<kube::client::Body>| {
            let n = counted.fetch_add(1, Ordering::SeqCst);
            async move {
                let mut resp = Response::new(kube::client::Body::empty());
                if n == 0 {
                    *resp.status_mut() = http::StatusCode::TOO_MANY_REQUESTS;
                    resp.headers_mut()
                        .insert(http::header::RETRY_AFTER, "0".parse().expect("value"));
                }
                Ok::<_, Infallible>(resp)
            }
        });
        let limited = RateLimitLayer::new(&config, 10.0, 1).layer(server);
        let mut client = tower::retry::Retry::new(RetryAfter::default(), limited);
        let start = tokio::time::Instant::now();
        let resp = client
            .ready()
            .await
            .expect("ready")
            .call(Request::new(kube::client::Body::empty()))
            .await
            .expect("answered");
        assert_eq!(resp.status(), http::StatusCode::OK);
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        // The burst of one went to the first attempt; the retry waited for the next token.
        assert!(
            start.elapsed() >= Duration::from_millis(100),
            "{:?}",
            start.elapsed()
        );
    }
}
