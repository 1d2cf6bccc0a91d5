//! Delegated authentication of the secure port, as kube's `DelegatingAuthenticatorConfig`: a
//! request-header authenticator (front proxy certificates), client certificates verified
//! against `--client-ca-file`, and bearer tokens sent to the API server in a TokenReview (cached
//! for `--authentication-token-webhook-cache-ttl`); a request with no credentials is anonymous,
//! one with credentials none of them accepts is refused (401).

use std::sync::Arc;
use std::time::Duration;

use http::HeaderMap;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use kube::api::PostParams;
use rkcm_apiserver::auth::user::UserInfo;
use rkcm_apiserver::auth::x509;
use rkcm_runtime::Clock;

use super::ttl_cache::TtlCache;

/// Why a request's credentials were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthnError {
    /// A bearer token the API server did not accept.
    #[error("invalid bearer token")]
    InvalidToken,
    /// A TokenReview reported an error.
    #[error("{0}")]
    Review(String),
    /// A client certificate that does not verify (Go's x509 error text).
    #[error("{0}")]
    Certificate(String),
    /// A request-header certificate whose common name is not allowed.
    #[error("x509: subject with cn={0} is not in the allowed list")]
    NotAllowed(String),
}

/// `--requestheader-*`: who may assert a user in headers, and which headers.
#[derive(Debug, Clone, Default)]
pub struct RequestHeaderConfig {
    /// The CA bundle (DER certificates) front-proxy client certificates must chain to.
    pub client_ca: Vec<Vec<u8>>,
    /// Common names allowed to assert users; empty allows any verified certificate.
    pub allowed_names: Vec<String>,
    /// Headers holding the user name, the first non-empty one wins.
    pub username_headers: Vec<String>,
    /// Headers holding the user's uid.
    pub uid_headers: Vec<String>,
    /// Headers holding groups, every value counts.
    pub group_headers: Vec<String>,
    /// Header prefixes whose suffix names an extra attribute.
    pub extra_headers_prefix: Vec<String>,
}

/// Sends a token to the API server for review.
pub trait TokenReviewer: Send + Sync {
    /// `Ok(Some(user))` when authenticated, `Ok(None)` when refused, `Err(text)` when the review
    /// itself reported an error or failed.
    fn review(
        &self,
        token: String,
    ) -> futures::future::BoxFuture<'static, Result<Option<UserInfo>, String>>;
}

/// The TokenReview API of the cluster behind `--authentication-kubeconfig`.
pub struct ApiTokenReviewer(pub kube::Client);

impl TokenReviewer for ApiTokenReviewer {
    fn review(
        &self,
        token: String,
    ) -> futures::future::BoxFuture<'static, Result<Option<UserInfo>, String>> {
        let api: kube::Api<TokenReview> = kube::Api::all(self.0.clone());
        Box::pin(async move {
            let review = TokenReview {
                spec: TokenReviewSpec {
                    token: Some(token),
                    ..Default::default()
                },
                ..Default::default()
            };
            let answer = api
                .create(&PostParams::default(), &review)
                .await
                .map_err(|e| format!("TokenReview failed: {e}"))?;
            let status = answer.status.unwrap_or_default();
            if status.authenticated != Some(true) {
                return match status.error.filter(|e| !e.is_empty()) {
                    Some(e) => Err(e),
                    None => Ok(None),
                };
            }
            let user = status.user.unwrap_or_default();
            Ok(Some(UserInfo {
                name: user.username.unwrap_or_default(),
                uid: user.uid.unwrap_or_default(),
                groups: user.groups.unwrap_or_default(),
                extra: user.extra.unwrap_or_default().into_iter().collect(),
            }))
        })
    }
}

/// The delegating authenticator.
pub struct Authenticator {
    /// `--client-ca-file`, DER certificates; empty: client certificates are not authenticated.
    pub client_ca: Vec<Vec<u8>>,
    /// `--requestheader-*`, when configured.
    pub request_header: Option<RequestHeaderConfig>,
    /// TokenReview, when `--authentication-kubeconfig` (or the in-cluster config) gives a client.
    pub tokens: Option<Arc<dyn TokenReviewer>>,
    /// `--authentication-token-webhook-cache-ttl`.
    pub cache_ttl: Duration,
    cache: TtlCache<String, Result<Option<UserInfo>, String>>,
    clock: Arc<dyn Clock>,
}

impl Authenticator {
    /// An authenticator from its parts, caching token reviews by `clock`.
    pub fn new(
        client_ca: Vec<Vec<u8>>,
        request_header: Option<RequestHeaderConfig>,
        tokens: Option<Arc<dyn TokenReviewer>>,
        cache_ttl: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            client_ca,
            request_header,
            tokens,
            cache_ttl,
            cache: TtlCache::new(Arc::clone(&clock)),
            clock,
        }
    }

    /// The user of a request with `headers` and the client certificate chain `peer` (leaf
    /// first): the first authenticator that recognises it wins, with `system:authenticated`
    /// added; anonymous when none applies; an error when credentials were given but none was
    /// accepted.
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: &[Vec<u8>],
    ) -> Result<UserInfo, AuthnError> {
        let mut first_error = None;
        let now = self.clock.now().as_second();
        if let (Some(rh), Some(leaf)) = (&self.request_header, peer.first()) {
            match request_header_user(rh, headers, leaf, now) {
                Ok(Some(user)) => return Ok(user.with_authenticated_group()),
                Ok(None) => {}
                Err(e) => first_error = first_error.or(Some(e)),
            }
        }
        if let (false, Some(leaf)) = (self.client_ca.is_empty(), peer.first()) {
            match verify_any(leaf, &self.client_ca, now) {
                Ok(Some(user)) => return Ok(user.with_authenticated_group()),
                Ok(None) => {}
                Err(e) => first_error = first_error.or(Some(AuthnError::Certificate(e))),
            }
        }
        if let Some(tokens) = &self.tokens {
            match bearer_token(headers) {
                Some(Ok(token)) => match self.review(tokens.as_ref(), token).await {
                    Ok(user) => return Ok(user.with_authenticated_group()),
                    Err(e) => first_error = first_error.or(Some(e)),
                },
                Some(Err(e)) => first_error = first_error.or(Some(e)),
                None => {}
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(UserInfo::anonymous()),
        }
    }

    async fn review(
        &self,
        tokens: &dyn TokenReviewer,
        token: String,
    ) -> Result<UserInfo, AuthnError> {
        let result = match self.cache.get(&token) {
            Some(cached) => cached,
            None => {
                let result = tokens.review(token.clone()).await;
                self.cache.insert(token, result.clone(), self.cache_ttl);
                result
            }
        };
        match result {
            Ok(Some(user)) => Ok(user),
            Ok(None) => Err(AuthnError::InvalidToken),
            Err(e) => Err(AuthnError::Review(e)),
        }
    }
}

/// kube's `bearertoken` authenticator: `Authorization: Bearer <token>`; `None` when the header
/// holds no bearer token, an error when the token is empty.
pub fn bearer_token(headers: &HeaderMap) -> Option<Result<String, AuthnError>> {
    let raw = headers
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .trim();
    let mut parts = raw.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    if token.is_empty() {
        return Some(Err(AuthnError::InvalidToken));
    }
    Some(Ok(token.to_string()))
}

/// Verifies `leaf` against each CA of `bundle`, the first that signed it decides.
pub fn verify_any(leaf: &[u8], bundle: &[Vec<u8>], now: i64) -> Result<Option<UserInfo>, String> {
    let mut last = "x509: certificate signed by unknown authority".to_string();
    for ca in bundle {
        match x509::verify(leaf, ca, now) {
            Ok(user) => return Ok(user),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// kube's request-header authenticator behind its certificate check: the user the front proxy
/// names in `headers`, once `leaf` verifies against the request-header CA and its common name is
/// allowed; `Ok(None)` when no user header is set.
pub fn request_header_user(
    config: &RequestHeaderConfig,
    headers: &HeaderMap,
    leaf: &[u8],
    now: i64,
) -> Result<Option<UserInfo>, AuthnError> {
    let proxy = verify_any(leaf, &config.client_ca, now).map_err(AuthnError::Certificate)?;
    if !config.allowed_names.is_empty() {
        let cn = proxy.map(|u| u.name).unwrap_or_default();
        if !config.allowed_names.contains(&cn) {
            return Err(AuthnError::NotAllowed(cn));
        }
    }
    let first = |names: &[String]| {
        names.iter().find_map(|h| {
            headers
                .get_all(h.as_str())
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(str::trim)
                .find(|v| !v.is_empty())
                .map(str::to_string)
        })
    };
    let Some(name) = first(&config.username_headers) else {
        return Ok(None);
    };
    let groups = config
        .group_headers
        .iter()
        .flat_map(|h| headers.get_all(h.as_str()).iter())
        .filter_map(|v| v.to_str().ok())
        .map(str::to_string)
        .collect();
    let mut extra = std::collections::BTreeMap::<String, Vec<String>>::new();
    for (header, value) in headers {
        let header = header.as_str();
        for prefix in &config.extra_headers_prefix {
            let prefix = prefix.to_ascii_lowercase();
            if let Some(key) = header.strip_prefix(prefix.as_str()) {
                if let Ok(v) = value.to_str() {
                    extra.entry(unescape(key)).or_default().push(v.to_string());
                }
            }
        }
    }
    Ok(Some(UserInfo {
        name,
        uid: first(&config.uid_headers).unwrap_or_default(),
        groups,
        extra,
    }))
}

/// Extra keys are percent-encoded in header names (`unescapeExtraKey`); lower case.
fn unescape(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
            if let Ok(b) = u8::from_str_radix(hex, 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    use rkcm_runtime::FakeClock;

    struct Ca {
        issuer: Issuer<'static, KeyPair>,
        der: Vec<u8>,
    }

    fn ca(name: &str) -> Ca {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).expect("ca");
        Ca {
            der: cert.der().to_vec(),
            issuer: Issuer::new(params, key),
        }
    }

    fn client(ca: &Ca, cn: &str, orgs: &[&str]) -> Vec<u8> {
        let key = KeyPair::generate().expect("key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, cn);
        for o in orgs {
            params.distinguished_name.push(DnType::OrganizationName, *o);
        }
        params
            .signed_by(&key, &ca.issuer)
            .expect("client")
            .der()
            .to_vec()
    }

    #[derive(Default)]
    struct FakeReviewer {
        calls: Mutex<Vec<String>>,
    }

    impl TokenReviewer for FakeReviewer {
        fn review(
            &self,
            token: String,
        ) -> futures::future::BoxFuture<'static, Result<Option<UserInfo>, String>> {
            self.calls.lock().push(token.clone());
            Box::pin(
                async move { Ok((token == "good").then(|| UserInfo::new("alice", &["devs"]))) },
            )
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        h
    }

    fn clock() -> FakeClock {
        FakeClock::new(jiff::Timestamp::now())
    }

    #[tokio::test]
    async fn no_credentials_is_anonymous_and_a_bad_token_is_refused() {
        let reviewer = Arc::new(FakeReviewer::default());
        let authn = Authenticator::new(
            vec![],
            None,
            Some(reviewer.clone()),
            Duration::from_secs(10),
            Arc::new(clock()),
        );
        let anon = authn
            .authenticate(&headers(&[]), &[])
            .await
            .expect("anonymous");
        assert_eq!(anon, UserInfo::anonymous());
        let err = authn
            .authenticate(&headers(&[("authorization", "Bearer bad")]), &[])
            .await
            .expect_err("refused");
        assert_eq!(err, AuthnError::InvalidToken);
        let alice = authn
            .authenticate(&headers(&[("authorization", "bearer good")]), &[])
            .await
            .expect("alice");
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.groups, ["devs", "system:authenticated"]);
        // Basic credentials are not a bearer token: anonymous, as kube.
        let basic = authn
            .authenticate(&headers(&[("authorization", "Basic abc")]), &[])
            .await
            .expect("anonymous");
        assert!(basic.is_anonymous());
    }

    #[tokio::test]
    async fn token_reviews_are_cached_for_the_ttl() {
        let clock = clock();
        let reviewer = Arc::new(FakeReviewer::default());
        let authn = Authenticator::new(
            vec![],
            None,
            Some(reviewer.clone()),
            Duration::from_secs(10),
            Arc::new(clock.clone()),
        );
        let good = headers(&[("authorization", "Bearer good")]);
        let bad = headers(&[("authorization", "Bearer bad")]);
        for _ in 0..3 {
            authn.authenticate(&good, &[]).await.expect("good");
            authn.authenticate(&bad, &[]).await.expect_err("bad");
        }
        assert_eq!(reviewer.calls.lock().len(), 2, "one review per token");
        clock.step(Duration::from_secs(10));
        authn.authenticate(&good, &[]).await.expect("good");
        assert_eq!(
            reviewer.calls.lock().len(),
            3,
            "reviewed again after the TTL"
        );
    }

    #[tokio::test]
    async fn client_certificates_are_verified_against_the_client_ca() {
        let cluster = ca("cluster-ca");
        let other = ca("other-ca");
        let authn = Authenticator::new(
            vec![cluster.der.clone()],
            None,
            None,
            Duration::from_secs(10),
            Arc::new(clock()),
        );
        let kcm = client(&cluster, "system:kube-controller-manager", &[]);
        let user = authn
            .authenticate(&headers(&[]), &[kcm])
            .await
            .expect("verified");
        assert_eq!(user.name, "system:kube-controller-manager");
        assert_eq!(user.groups, ["system:authenticated"]);
        let admin = client(&cluster, "kubernetes-admin", &["system:masters"]);
        let user = authn
            .authenticate(&headers(&[]), &[admin])
            .await
            .expect("verified");
        assert_eq!(user.groups, ["system:masters", "system:authenticated"]);
        let stranger = client(&other, "mallory", &["system:masters"]);
        let err = authn
            .authenticate(&headers(&[]), &[stranger])
            .await
            .expect_err("unknown authority");
        assert_eq!(
            err.to_string(),
            "x509: certificate signed by unknown authority"
        );
    }

    #[tokio::test]
    async fn request_headers_count_only_from_an_allowed_front_proxy() {
        let cluster = ca("cluster-ca");
        let proxy_ca = ca("front-proxy-ca");
        let rh = RequestHeaderConfig {
            client_ca: vec![proxy_ca.der.clone()],
            allowed_names: vec!["front-proxy-client".into()],
            username_headers: vec!["x-remote-user".into()],
            uid_headers: vec![],
            group_headers: vec!["x-remote-group".into()],
            extra_headers_prefix: vec!["x-remote-extra-".into()],
        };
        let authn = Authenticator::new(
            vec![cluster.der.clone()],
            Some(rh),
            None,
            Duration::from_secs(10),
            Arc::new(clock()),
        );
        let asserted = headers(&[
            ("x-remote-user", "bob"),
            ("x-remote-group", "g1"),
            ("x-remote-group", "g2"),
            ("x-remote-extra-scopes%2fa", "s"),
        ]);
        let proxy = client(&proxy_ca, "front-proxy-client", &[]);
        let bob = authn
            .authenticate(&asserted, std::slice::from_ref(&proxy))
            .await
            .expect("bob");
        assert_eq!(bob.name, "bob");
        assert_eq!(bob.groups, ["g1", "g2", "system:authenticated"]);
        assert_eq!(bob.extra.get("scopes/a"), Some(&vec!["s".to_string()]));
        // The proxy's own identity when it names nobody.
        let err = authn
            .authenticate(&headers(&[]), &[proxy])
            .await
            .expect_err("the proxy CA is not the client CA");
        assert_eq!(
            err.to_string(),
            "x509: certificate signed by unknown authority"
        );
        let not_allowed = client(&proxy_ca, "someone-else", &[]);
        let err = authn
            .authenticate(&asserted, &[not_allowed])
            .await
            .expect_err("not allowed");
        assert_eq!(
            err.to_string(),
            "x509: subject with cn=someone-else is not in the allowed list"
        );
        // A cluster client certificate cannot assert users in headers.
        let carol = client(&cluster, "carol", &[]);
        let user = authn
            .authenticate(&asserted, &[carol])
            .await
            .expect("carol");
        assert_eq!(user.name, "carol");
    }
}
