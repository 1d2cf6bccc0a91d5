//! The chain of authenticators a request goes through (`pkg/kubeapiserver/authenticator/config.go`).
//!
//! As there, the token authenticators form one union behind a cache of its successes
//! ([`TokenCache`], 10 s by default); client certificates are checked before and outside it.

use http::HeaderMap;

use std::time::Duration;

use super::serviceaccount::{Outcome, ServiceAccountTokens};
use super::token_cache::{TokenCache, DEFAULT_SUCCESS_TTL};
use super::token_file::TokenFile;
use super::user::{constant_time_eq, UserInfo, ADMIN_USER, SYSTEM_MASTERS};
use super::x509::ClientCertificate;

/// What the token authenticators made of a bearer token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenResult {
    /// A user, and the audiences the token is good for.
    Authenticated {
        /// The user, `system:authenticated` included.
        user: UserInfo,
        /// Audiences among those requested.
        audiences: Vec<String>,
    },
    /// Nobody; `error` says why when an authenticator recognised the token and refused it.
    Unauthenticated {
        /// kube's aggregated error text, if any.
        error: Option<String>,
    },
}

/// The authenticators of the API server.
pub struct Authenticator {
    admin_token: String,
    token_file: TokenFile,
    service_accounts: ServiceAccountTokens,
    bootstrap_tokens: Option<std::sync::Arc<dyn super::serviceaccount::ObjectLookup>>,
    token_cache: Option<TokenCache>,
}

impl Authenticator {
    /// A chain accepting `admin_token` (as `kubernetes-admin` in `system:masters`), the users
    /// of `token_file` and the tokens of `service_accounts`, caching successes for kube's
    /// default 10 s.
    pub fn new(
        admin_token: String,
        token_file: TokenFile,
        service_accounts: ServiceAccountTokens,
    ) -> Self {
        Self {
            admin_token,
            token_file,
            service_accounts,
            bootstrap_tokens: None,
            token_cache: TokenCache::new(DEFAULT_SUCCESS_TTL),
        }
    }

    /// Caches successful token authentications for `ttl` instead (`TokenSuccessCacheTTL`);
    /// zero caches nothing, as kube's integration tests that watch a revoked token stop
    /// working at once run.
    pub fn with_token_success_cache_ttl(mut self, ttl: Duration) -> Self {
        self.token_cache = TokenCache::new(ttl);
        self
    }

    /// Also accepts bootstrap tokens whose Secrets `lookup` finds (`--enable-bootstrap-token-auth`).
    pub fn with_bootstrap_tokens(
        mut self,
        lookup: std::sync::Arc<dyn super::serviceaccount::ObjectLookup>,
    ) -> Self {
        self.bootstrap_tokens = Some(lookup);
        self
    }

    /// The service-account token issuer and validator.
    pub fn service_accounts(&self) -> &ServiceAccountTokens {
        &self.service_accounts
    }

    /// The admin token.
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// The user of a request: its client certificate's, else its bearer token's, else the
    /// anonymous user. `Err` carries why presented credentials were refused (to be logged; the
    /// client gets a plain 401); an invalid certificate alone is refused, but a valid bearer
    /// token still authenticates the request (kube's union of authenticators).
    pub fn authenticate(
        &self,
        headers: &HeaderMap,
        certificate: Option<&ClientCertificate>,
        now: jiff::Timestamp,
    ) -> Result<UserInfo, String> {
        let cert_error = match certificate {
            Some(ClientCertificate::User(user)) => {
                return Ok(user.clone().with_authenticated_group())
            }
            Some(ClientCertificate::Invalid(why)) => Some(why.clone()),
            None => None,
        };
        let Some(token) = bearer_token(headers) else {
            return match cert_error {
                Some(why) => Err(why),
                None => Ok(UserInfo::anonymous()),
            };
        };
        match self.authenticate_token(token, None, now) {
            TokenResult::Authenticated { user, .. } => Ok(user),
            TokenResult::Unauthenticated { error } => {
                let token_error = error.unwrap_or_else(|| "invalid bearer token".to_string());
                Err(match cert_error {
                    Some(why) => format!("[{why}, {token_error}]"),
                    None => token_error,
                })
            }
        }
    }

    /// Runs `token` through the token authenticators for `requested` audiences (the API
    /// server's when `None`), as a bearer token or a TokenReview: a success of the last
    /// [`TokenCache`] TTL before `now` is answered from the cache.
    pub fn authenticate_token(
        &self,
        token: &str,
        requested: Option<&[String]>,
        now: jiff::Timestamp,
    ) -> TokenResult {
        match &self.token_cache {
            Some(cache) => cache.authenticate(token, requested, now, || {
                self.token_union(token, requested, now)
            }),
            None => self.token_union(token, requested, now),
        }
    }

    /// The token authenticators in kube's order (`tokenunion.New`): the first to recognise the
    /// token decides.
    fn token_union(
        &self,
        token: &str,
        requested: Option<&[String]>,
        now: jiff::Timestamp,
    ) -> TokenResult {
        let api_audiences = self.service_accounts.audiences();
        // The admin token and the token file know no audiences: they answer only for the API
        // server's own (kube's `WrapAudienceAgnosticToken`).
        let agnostic = |user: UserInfo| {
            let audiences: Vec<String> = match requested {
                None => api_audiences.to_vec(),
                Some(r) => api_audiences
                    .iter()
                    .filter(|a| r.contains(a))
                    .cloned()
                    .collect(),
            };
            if requested.is_some() && audiences.is_empty() {
                return TokenResult::Unauthenticated { error: None };
            }
            TokenResult::Authenticated {
                user: user.with_authenticated_group(),
                audiences,
            }
        };
        if constant_time_eq(token.as_bytes(), self.admin_token.as_bytes()) {
            return agnostic(UserInfo::new(ADMIN_USER, &[SYSTEM_MASTERS]));
        }
        if let Some(user) = self.token_file.authenticate(token) {
            return agnostic(user);
        }
        if let Some(user) = self
            .bootstrap_tokens
            .as_deref()
            .and_then(|lookup| super::bootstrap_token::authenticate(lookup, token, now.as_second()))
        {
            return agnostic(user);
        }
        match self
            .service_accounts
            .authenticate(token, requested, now.as_second())
        {
            Outcome::Authenticated { user, audiences } => TokenResult::Authenticated {
                user: user.with_authenticated_group(),
                audiences,
            },
            Outcome::Invalid(why) => TokenResult::Unauthenticated { error: Some(why) },
            Outcome::NotMine => TokenResult::Unauthenticated { error: None },
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive); `None`
/// without one or with an empty token, as kube's `bearertoken` authenticator.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let mut parts = value.trim().splitn(2, ' ');
    let scheme = parts.next()?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    Some(parts.next()?.trim()).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::serviceaccount::{ObjectLookup, ObjectRef, TokenClaims, DEFAULT_ISSUER};
    use crate::auth::signing_key::SigningKey;
    use crate::auth::user::ALL_AUTHENTICATED;
    use serde_json::{json, Value};
    use std::sync::Arc;

    struct OneAccount;
    impl ObjectLookup for OneAccount {
        fn get(&self, plural: &str, ns: &str, name: &str) -> Option<Value> {
            (plural == "serviceaccounts" && ns == "default" && name == "bot")
                .then(|| json!({"metadata": {"name": "bot", "uid": "u1"}}))
        }
    }

    fn chain() -> Authenticator {
        let file = TokenFile::parse("t.csv", "filetoken,alice,a1,\"dev,ops\"\n").expect("parses");
        let sa = ServiceAccountTokens::new(
            Arc::new(SigningKey::generate()),
            DEFAULT_ISSUER,
            vec![DEFAULT_ISSUER.into()],
            Arc::new(OneAccount),
        );
        Authenticator::new("admintoken".into(), file, sa)
    }

    fn bearer(token: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::AUTHORIZATION,
            format!("Bearer {token}").parse().expect("header"),
        );
        h
    }

    #[test]
    fn each_authenticator_of_the_chain_names_its_user() {
        let chain = chain();
        let now = jiff::Timestamp::now();
        let admin = chain
            .authenticate(&bearer("admintoken"), None, now)
            .expect("admin");
        assert_eq!(admin.name, "kubernetes-admin");
        assert_eq!(admin.groups, ["system:masters", ALL_AUTHENTICATED]);
        let alice = chain
            .authenticate(&bearer("filetoken"), None, now)
            .expect("alice");
        assert_eq!((alice.name.as_str(), alice.uid.as_str()), ("alice", "a1"));
        assert_eq!(alice.groups, ["dev", "ops", ALL_AUTHENTICATED]);
        let claims = TokenClaims {
            namespace: "default".into(),
            service_account: ObjectRef {
                name: "bot".into(),
                uid: "u1".into(),
            },
            audiences: vec![DEFAULT_ISSUER.into()],
            issued_at: now.as_second(),
            expires_at: now.as_second() + 600,
            id: "j".into(),
            ..TokenClaims::default()
        };
        let token = chain.service_accounts().issue(&claims);
        let bot = chain.authenticate(&bearer(&token), None, now).expect("bot");
        assert_eq!(bot.name, "system:serviceaccount:default:bot");
        assert_eq!(
            bot.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:default",
                ALL_AUTHENTICATED
            ]
        );
        let cert = ClientCertificate::User(UserInfo::new("carol", &["qa"]));
        let carol = chain
            .authenticate(&bearer("wrong"), Some(&cert), now)
            .expect("carol");
        assert_eq!(carol.groups, ["qa", ALL_AUTHENTICATED]);
        // A certificate that does not verify: refused alone, but a good token still counts.
        let bad =
            ClientCertificate::Invalid("x509: certificate signed by unknown authority".into());
        assert_eq!(
            chain.authenticate(&HeaderMap::new(), Some(&bad), now),
            Err("x509: certificate signed by unknown authority".into())
        );
        let admin = chain
            .authenticate(&bearer("admintoken"), Some(&bad), now)
            .expect("admin despite the certificate");
        assert_eq!(admin.name, "kubernetes-admin");
    }

    #[test]
    fn no_credentials_is_anonymous_and_bad_credentials_are_refused() {
        let chain = chain();
        let now = jiff::Timestamp::now();
        assert!(chain
            .authenticate(&HeaderMap::new(), None, now)
            .expect("anonymous")
            .is_anonymous());
        assert!(chain
            .authenticate(&bearer(""), None, now)
            .expect("empty token is no token")
            .is_anonymous());
        assert_eq!(
            chain.authenticate(&bearer("nope"), None, now),
            Err("invalid bearer token".to_string())
        );
        let mut basic = HeaderMap::new();
        basic.insert(
            http::header::AUTHORIZATION,
            "Basic YTpi".parse().expect("header"),
        );
        assert!(chain
            .authenticate(&basic, None, now)
            .expect("anonymous")
            .is_anonymous());
    }

    /// A service account `default/bot` that can be deleted.
    struct Revocable(std::sync::atomic::AtomicBool);
    impl ObjectLookup for Revocable {
        fn get(&self, plural: &str, ns: &str, name: &str) -> Option<Value> {
            let exists = self.0.load(std::sync::atomic::Ordering::SeqCst);
            (exists && plural == "serviceaccounts" && ns == "default" && name == "bot")
                .then(|| json!({"metadata": {"name": "bot", "uid": "u1"}}))
        }
    }

    #[test]
    fn a_deleted_service_account_stops_authenticating_when_its_cached_success_expires() {
        let key = Arc::new(SigningKey::generate());
        let chain_over = |account: &Arc<Revocable>| {
            let sa = ServiceAccountTokens::new(
                Arc::clone(&key),
                DEFAULT_ISSUER,
                vec![DEFAULT_ISSUER.into()],
                Arc::clone(account) as Arc<dyn ObjectLookup>,
            );
            Authenticator::new("admintoken".into(), TokenFile::default(), sa)
        };
        let account = Arc::new(Revocable(true.into()));
        let cached = chain_over(&account);
        let t0 = jiff::Timestamp::now();
        let claims = TokenClaims {
            namespace: "default".into(),
            service_account: ObjectRef {
                name: "bot".into(),
                uid: "u1".into(),
            },
            audiences: vec![DEFAULT_ISSUER.into()],
            issued_at: t0.as_second(),
            expires_at: t0.as_second() + 3600,
            id: "j".into(),
            ..TokenClaims::default()
        };
        let token = cached.service_accounts().issue(&claims);
        let at = |s: i64| t0 + jiff::SignedDuration::from_secs(s);
        let who = |now| {
            cached
                .authenticate(&bearer(&token), None, now)
                .map(|u| u.name)
        };
        assert_eq!(who(at(0)), Ok("system:serviceaccount:default:bot".into()));
        account.0.store(false, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            who(at(9)),
            Ok("system:serviceaccount:default:bot".into()),
            "kube answers from its cache for 10 s"
        );
        assert_eq!(who(at(10)), Err("serviceaccount \"bot\" not found".into()));
        assert_eq!(
            who(at(11)),
            Err("serviceaccount \"bot\" not found".into()),
            "the failure is not cached either way"
        );
        // Without a cache, as kube's tests that watch revocation run, it stops at once.
        let account = Arc::new(Revocable(true.into()));
        let uncached = chain_over(&account).with_token_success_cache_ttl(Duration::ZERO);
        assert!(uncached.authenticate(&bearer(&token), None, at(0)).is_ok());
        account.0.store(false, std::sync::atomic::Ordering::SeqCst);
        assert!(uncached.authenticate(&bearer(&token), None, at(0)).is_err());
    }

    /// The cost of authenticating one service-account token request without and with the
    /// cache. Prints the figures; asserts nothing about time. Run with
    /// `cargo test -p rkcm-server --release --lib token_authentication_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "benchmark: run explicitly"]
    fn token_authentication_cost_without_and_with_the_cache() {
        let cached = chain();
        let uncached = chain().with_token_success_cache_ttl(Duration::ZERO);
        let now = jiff::Timestamp::now();
        let claims = TokenClaims {
            namespace: "default".into(),
            service_account: ObjectRef {
                name: "bot".into(),
                uid: "u1".into(),
            },
            audiences: vec![DEFAULT_ISSUER.into()],
            issued_at: now.as_second(),
            expires_at: now.as_second() + 3600,
            id: "j".into(),
            ..TokenClaims::default()
        };
        let headers = bearer(&cached.service_accounts().issue(&claims));
        let uncached_headers = bearer(&uncached.service_accounts().issue(&claims));
        let time = |chain: &Authenticator, headers: &HeaderMap, calls: u32| {
            let started = std::time::Instant::now();
            for _ in 0..calls {
                assert!(chain.authenticate(headers, None, now).is_ok());
            }
            started.elapsed().as_nanos() as f64 / f64::from(calls)
        };
        let without = time(&uncached, &uncached_headers, 2_000);
        let with = time(&cached, &headers, 100_000);
        println!(
            "service-account token authentication: {:.1} µs uncached, {:.2} µs cached per request ({:.0}x)",
            without / 1000.0,
            with / 1000.0,
            without / with
        );
    }

    #[test]
    fn audience_agnostic_tokens_answer_only_for_the_api_servers_audiences() {
        let chain = chain();
        let now = jiff::Timestamp::now();
        assert_eq!(
            chain.authenticate_token("filetoken", Some(&["vault".into()]), now),
            TokenResult::Unauthenticated { error: None }
        );
        let TokenResult::Authenticated { audiences, .. } =
            chain.authenticate_token("filetoken", Some(&[DEFAULT_ISSUER.into()]), now)
        else {
            panic!("api audience");
        };
        assert_eq!(audiences, [DEFAULT_ISSUER]);
    }
}
