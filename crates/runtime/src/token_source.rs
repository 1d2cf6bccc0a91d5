//! Bearer tokens fetched on demand, cached until they expire, and put on every request of a
//! client. Mirrors client-go `transport/token_source.go` (`NewCachedTokenSource`,
//! `ResettableTokenSourceWrapTransport`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use async_trait::async_trait;
use http::{HeaderValue, Request, Response};
use jiff::Timestamp;

use crate::Clock;

/// Errors of a token source, boxed as tower errors are.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A bearer token and the moment to stop using it (oauth2's `Token`).
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    /// The bearer token.
    pub access_token: String,
    /// When the token must be replaced; `None`: never.
    pub expiry: Option<Timestamp>,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token itself is a credential: never logged.
        f.debug_struct("Token")
            .field("expiry", &self.expiry)
            .finish_non_exhaustive()
    }
}

/// Where fresh tokens come from (oauth2's `TokenSource`).
#[async_trait]
pub trait TokenSource: Send + Sync + 'static {
    /// A new token.
    async fn token(&self) -> Result<Token, BoxError>;
}

/// Whether a cached `token` may still be used at `now` (client-go `cachingTokenSource`: its
/// expiry, less `leeway`, is still ahead).
pub fn still_valid(token: &Token, now: Timestamp, leeway: std::time::Duration) -> bool {
    match token.expiry {
        None => true,
        Some(expiry) => {
            let leeway =
                jiff::SignedDuration::try_from(leeway).unwrap_or(jiff::SignedDuration::MAX);
            expiry
                .checked_sub(leeway)
                .is_ok_and(|refresh_at| refresh_at > now)
        }
    }
}

#[derive(Default)]
struct Cached {
    token: Option<Token>,
    /// When `token` was fetched.
    fetched: Option<Timestamp>,
}

/// A token source that keeps the last token until it expires (client-go `cachingTokenSource`
/// built by `NewCachedTokenSource`: no leeway, the base source's expiry already has one).
///
/// Safe to share: callers wait for one fetch at a time. When a refresh fails and a token is
/// cached, the old token is used (and the failure logged), as client-go does.
pub struct CachedTokenSource {
    base: Arc<dyn TokenSource>,
    leeway: std::time::Duration,
    clock: Arc<dyn Clock>,
    cached: tokio::sync::Mutex<Cached>,
}

impl std::fmt::Debug for CachedTokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedTokenSource")
            .field("leeway", &self.leeway)
            .finish_non_exhaustive()
    }
}

impl CachedTokenSource {
    /// Caches the tokens of `base`, reading time from `clock`.
    pub fn new(base: Arc<dyn TokenSource>, clock: Arc<dyn Clock>) -> Self {
        Self {
            base,
            leeway: std::time::Duration::ZERO,
            clock,
            cached: tokio::sync::Mutex::new(Cached::default()),
        }
    }

    /// The cached token while it is valid, else a fresh one from the base source.
    pub async fn token(&self) -> Result<Token, BoxError> {
        let mut cached = self.cached.lock().await;
        if let Some(token) = cached
            .token
            .as_ref()
            .filter(|t| still_valid(t, self.clock.now(), self.leeway))
        {
            return Ok(token.clone());
        }
        match self.base.token().await {
            Ok(token) => {
                cached.token = Some(token.clone());
                cached.fetched = Some(self.clock.now());
                Ok(token)
            }
            Err(err) => match &cached.token {
                Some(old) => {
                    tracing::error!(error = %err, "Unable to rotate token");
                    Ok(old.clone())
                }
                None => Err(err),
            },
        }
    }

    /// Forgets the cached token if it was fetched before `t` (client-go `ResetTokenOlderThan`,
    /// called when a request that started at `t` was refused with 401).
    pub async fn reset_token_older_than(&self, t: Timestamp) {
        let mut cached = self.cached.lock().await;
        if cached.fetched.is_some_and(|fetched| fetched < t) {
            *cached = Cached::default();
        }
    }
}

/// A [`tower::Layer`] that authenticates every request with a bearer token from a
/// [`CachedTokenSource`], and drops that token when the server answers 401 (client-go
/// `ResettableTokenSourceWrapTransport`). A request that already carries an `Authorization`
/// header is sent as it is.
#[derive(Clone, Debug)]
pub struct BearerTokenLayer {
    source: Arc<CachedTokenSource>,
}

impl BearerTokenLayer {
    /// A layer taking its tokens from `source`.
    pub fn new(source: Arc<CachedTokenSource>) -> Self {
        Self { source }
    }
}

impl<S> tower::Layer<S> for BearerTokenLayer {
    type Service = BearerToken<S>;

    fn layer(&self, inner: S) -> Self::Service {
        BearerToken {
            inner,
            source: Arc::clone(&self.source),
        }
    }
}

/// The service of [`BearerTokenLayer`].
#[derive(Clone, Debug)]
pub struct BearerToken<S> {
    inner: S,
    source: Arc<CachedTokenSource>,
}

impl<S, B, RB> tower::Service<Request<B>> for BearerToken<S>
where
    S: tower::Service<Request<B>, Response = Response<RB>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Send + 'static,
    RB: Send + 'static,
{
    type Response = Response<RB>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        // The service that was polled ready goes with this request; a clone stays for the next.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let source = Arc::clone(&self.source);
        Box::pin(async move {
            if req.headers().contains_key(http::header::AUTHORIZATION) {
                return inner.call(req).await.map_err(Into::into);
            }
            // Taken before the token, as client-go does: a token fetched for this very request is
            // not dropped on its 401; the next request's 401 drops it.
            let start = source.clock.now();
            let token = source.token().await?;
            let mut value = HeaderValue::try_from(format!("Bearer {}", token.access_token))?;
            value.set_sensitive(true);
            req.headers_mut().insert(http::header::AUTHORIZATION, value);
            let resp = inner.call(req).await.map_err(Into::into)?;
            if resp.status() == http::StatusCode::UNAUTHORIZED {
                source.reset_token_older_than(start).await;
            }
            Ok(resp)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::FakeClock;

    struct Counting {
        calls: AtomicUsize,
        clock: FakeClock,
        lifetime: Duration,
        fail_after: usize,
    }

    #[async_trait]
    impl TokenSource for Counting {
        async fn token(&self) -> Result<Token, BoxError> {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            if n >= self.fail_after {
                return Err("token request refused".into());
            }
            Ok(Token {
                access_token: format!("t{n}"),
                expiry: Some(self.clock.now() + self.lifetime),
            })
        }
    }

    fn source(clock: &FakeClock, fail_after: usize) -> (Arc<Counting>, CachedTokenSource) {
        let base = Arc::new(Counting {
            calls: AtomicUsize::new(0),
            clock: clock.clone(),
            lifetime: Duration::from_secs(60),
            fail_after,
        });
        let cached = CachedTokenSource::new(base.clone(), Arc::new(clock.clone()));
        (base, cached)
    }

    // client-go TestCachingTokenSource: a token is reused until its expiry, then replaced.
    #[tokio::test]
    async fn a_token_is_reused_until_it_expires_then_fetched_again() {
        let clock = FakeClock::default();
        let (base, cached) = source(&clock, usize::MAX);
        assert_eq!(cached.token().await.unwrap().access_token, "t0");
        clock.step(Duration::from_secs(59));
        assert_eq!(cached.token().await.unwrap().access_token, "t0");
        clock.step(Duration::from_secs(1));
        assert_eq!(cached.token().await.unwrap().access_token, "t1");
        assert_eq!(base.calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_failed_refresh_keeps_the_old_token_and_a_first_failure_is_an_error() {
        let clock = FakeClock::default();
        let (_, cached) = source(&clock, 1);
        assert_eq!(cached.token().await.unwrap().access_token, "t0");
        clock.step(Duration::from_secs(120));
        assert_eq!(cached.token().await.unwrap().access_token, "t0");
        let (_, never) = source(&clock, 0);
        assert!(never.token().await.is_err());
    }

    // client-go TestCachingTokenSourceReset: only a token older than the failed request goes.
    #[tokio::test]
    async fn a_401_drops_only_a_token_fetched_before_the_request() {
        let clock = FakeClock::default();
        let (_, cached) = source(&clock, usize::MAX);
        assert_eq!(cached.token().await.unwrap().access_token, "t0");
        let before_fetch = clock.now() - Duration::from_secs(1);
        cached.reset_token_older_than(before_fetch).await;
        assert_eq!(cached.token().await.unwrap().access_token, "t0");
        clock.step(Duration::from_secs(1));
        cached.reset_token_older_than(clock.now()).await;
        assert_eq!(cached.token().await.unwrap().access_token, "t1");
    }

    #[test]
    fn validity_honours_the_leeway_and_tokens_without_expiry_never_expire() {
        let now = Timestamp::from_second(1_000_000).unwrap();
        let token = |secs: i64| Token {
            access_token: "t".into(),
            expiry: Some(now + jiff::SignedDuration::from_secs(secs)),
        };
        assert!(still_valid(&token(11), now, Duration::from_secs(10)));
        assert!(!still_valid(&token(10), now, Duration::from_secs(10)));
        assert!(!still_valid(&token(0), now, Duration::ZERO));
        assert!(still_valid(
            &Token {
                access_token: "t".into(),
                expiry: None
            },
            now,
            Duration::from_secs(10)
        ));
    }

    #[tokio::test]
    async fn the_layer_sets_the_bearer_token_and_resets_it_on_401() {
        use tower::{Layer, Service, ServiceExt};
        let clock = FakeClock::default();
        let (base, cached) = source(&clock, usize::MAX);
        let layer = BearerTokenLayer::new(Arc::new(cached));
        let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let inner = tower::service_fn(move |req: Request<()>| {
            let record = Arc::clone(&record);
            async move {
                let auth = req
                    .headers()
                    .get(http::header::AUTHORIZATION)
                    .map(|v| v.to_str().unwrap().to_string());
                let status = if auth.as_deref() == Some("Bearer t0") {
                    401
                } else {
                    200
                };
                record.lock().push(auth);
                Ok::<_, std::convert::Infallible>(
                    Response::builder().status(status).body(()).unwrap(),
                )
            }
        });
        let mut svc = layer.layer(inner);
        let send = async |svc: &mut BearerToken<_>| {
            let resp = svc.ready().await.unwrap().call(Request::new(())).await;
            resp.unwrap().status().as_u16()
        };
        // The token fetched for the request is kept after its 401 ...
        assert_eq!(send(&mut svc).await, 401);
        clock.step(Duration::from_secs(1));
        // ... and dropped after the 401 of a later request.
        assert_eq!(send(&mut svc).await, 401);
        assert_eq!(send(&mut svc).await, 200);
        // A request with its own credentials is left alone.
        let own = Request::builder()
            .header(http::header::AUTHORIZATION, "Bearer mine")
            .body(())
            .unwrap();
        svc.ready().await.unwrap().call(own).await.unwrap();
        assert_eq!(
            *seen.lock(),
            [
                Some("Bearer t0".to_string()),
                Some("Bearer t0".to_string()),
                Some("Bearer t1".to_string()),
                Some("Bearer mine".to_string())
            ]
        );
        assert_eq!(base.calls.load(Ordering::SeqCst), 2);
    }
}
