//! The cache of successful bearer-token authentications in front of the token authenticators,
//! as kube-apiserver wraps its union of them
//! (`staging/src/k8s.io/apiserver/pkg/authentication/token/cache/cached_token_authenticator.go`,
//! applied in `pkg/kubeapiserver/authenticator/config.go` with `TokenSuccessCacheTTL` 10 s and
//! `TokenFailureCacheTTL` 0).
//!
//! A success is kept for the TTL, so a token whose service account, Secret or Pod is deleted
//! keeps working until its entry expires, at most the TTL later: kube's moment. Failures are
//! never kept. Entries are keyed by an HMAC-SHA256, under a random per-process key, of the
//! token and the audiences asked for (kube's `keyFunc`): tokens are not held in memory, and a
//! token good for one audience is not taken for good for another.
//!
//! Time is the caller's `now`, so tests move it instead of sleeping. An entry stored "in the
//! future" (the wall clock stepped back) is not trusted.

use std::collections::HashMap;
use std::time::Duration;

use parking_lot::Mutex;
use ring::hmac;

use super::chain::TokenResult;

/// kube-apiserver's `TokenSuccessCacheTTL`.
pub const DEFAULT_SUCCESS_TTL: Duration = Duration::from_secs(10);

/// Entries below which no sweep of expired entries is made.
const MIN_SWEEP: usize = 64;

/// The key of an entry: the HMAC of the token and audiences.
type Key = [u8; 32];

struct Entry {
    result: TokenResult,
    stored: jiff::Timestamp,
}

struct Entries {
    map: HashMap<Key, Entry>,
    /// The size at which expired entries are swept next (twice the size after a sweep), so
    /// sweeping costs O(1) per insertion.
    sweep_at: usize,
}

/// Successful token authentications for a TTL. Shared by every request; each lookup holds
/// a lock for as long as a hash-map access takes.
pub struct TokenCache {
    ttl: jiff::SignedDuration,
    key: hmac::Key,
    entries: Mutex<Entries>,
}

impl std::fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCache")
            .field("ttl", &self.ttl)
            .field("entries", &self.entries.lock().map.len())
            .finish_non_exhaustive()
    }
}

impl TokenCache {
    /// A cache keeping successes for `ttl` (`None` for a zero TTL: kube does not cache then).
    pub fn new(ttl: Duration) -> Option<Self> {
        let ttl = jiff::SignedDuration::try_from(ttl)
            .unwrap_or(jiff::SignedDuration::MAX)
            .max(jiff::SignedDuration::ZERO);
        if ttl.is_zero() {
            return None;
        }
        let secret: [u8; 32] = rand::random();
        Some(Self {
            ttl,
            key: hmac::Key::new(hmac::HMAC_SHA256, &secret),
            entries: Mutex::new(Entries {
                map: HashMap::new(),
                sweep_at: MIN_SWEEP,
            }),
        })
    }

    /// The cached result of `token` for `requested` audiences at `now`, else what
    /// `authenticate` makes of it, kept when it is a success.
    pub fn authenticate(
        &self,
        token: &str,
        requested: Option<&[String]>,
        now: jiff::Timestamp,
        authenticate: impl FnOnce() -> TokenResult,
    ) -> TokenResult {
        let key = self.key_of(token, requested);
        if let Some(hit) = self.get(&key, now) {
            return hit;
        }
        let result = authenticate();
        if matches!(result, TokenResult::Authenticated { .. }) {
            self.insert(key, result.clone(), now);
        }
        result
    }

    /// kube's `keyFunc`: the token, then the audiences, each length-prefixed so that no two
    /// inputs hash alike. Whether audiences were asked for at all is part of the key too: the
    /// authenticators answer `None` with the API server's own.
    fn key_of(&self, token: &str, requested: Option<&[String]>) -> Key {
        let mut ctx = hmac::Context::with_key(&self.key);
        let mut write = |bytes: &[u8]| {
            ctx.update(&(bytes.len() as u64).to_be_bytes());
            ctx.update(bytes);
        };
        write(token.as_bytes());
        match requested {
            None => write(b"none"),
            Some(audiences) => {
                write(&(audiences.len() as u64).to_be_bytes());
                for a in audiences {
                    write(a.as_bytes());
                }
            }
        }
        let tag = ctx.sign();
        let mut key = [0; 32];
        key.copy_from_slice(tag.as_ref());
        key
    }

    fn fresh(&self, entry: &Entry, now: jiff::Timestamp) -> bool {
        entry.stored <= now && now.duration_since(entry.stored) < self.ttl
    }

    fn get(&self, key: &Key, now: jiff::Timestamp) -> Option<TokenResult> {
        let entries = self.entries.lock();
        let entry = entries.map.get(key)?;
        self.fresh(entry, now).then(|| entry.result.clone())
    }

    fn insert(&self, key: Key, result: TokenResult, now: jiff::Timestamp) {
        let mut entries = self.entries.lock();
        if entries.map.len() >= entries.sweep_at {
            entries.map.retain(|_, e| self.fresh(e, now));
            entries.sweep_at = (entries.map.len() * 2).max(MIN_SWEEP);
        }
        entries.map.insert(
            key,
            Entry {
                result,
                stored: now,
            },
        );
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::UserInfo;
    use std::cell::Cell;

    fn ok(name: &str) -> TokenResult {
        TokenResult::Authenticated {
            user: UserInfo::new(name, &["system:authenticated"]),
            audiences: vec!["api".into()],
        }
    }

    fn refused() -> TokenResult {
        TokenResult::Unauthenticated {
            error: Some("nope".into()),
        }
    }

    fn at(seconds: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_700_000_000 + seconds).expect("in range")
    }

    fn millis(seconds: i64, millis: i64) -> jiff::Timestamp {
        at(seconds) + jiff::SignedDuration::from_millis(millis)
    }

    fn cache() -> TokenCache {
        TokenCache::new(DEFAULT_SUCCESS_TTL).expect("a non-zero TTL caches")
    }

    #[test]
    fn a_success_is_answered_from_the_cache_until_ten_seconds_later() {
        let cache = cache();
        let calls = Cell::new(0);
        let auth = |now| {
            cache.authenticate("tok", None, now, || {
                calls.set(calls.get() + 1);
                ok("jane")
            })
        };
        assert_eq!(auth(at(0)), ok("jane"));
        assert_eq!(auth(at(5)), ok("jane"));
        assert_eq!(auth(millis(9, 999)), ok("jane"));
        assert_eq!(calls.get(), 1, "hits within the TTL");
        assert_eq!(auth(at(10)), ok("jane"));
        assert_eq!(calls.get(), 2, "expired after 10 s");
        assert_eq!(auth(at(15)), ok("jane"));
        assert_eq!(calls.get(), 2, "the new success is kept from its own time");
        // A clock stepped back does not make an entry live longer.
        assert_eq!(auth(at(-60)), ok("jane"));
        assert_eq!(calls.get(), 3);
    }

    #[test]
    fn failures_are_not_cached() {
        let cache = cache();
        let calls = Cell::new(0);
        for _ in 0..3 {
            let r = cache.authenticate("bad", None, at(0), || {
                calls.set(calls.get() + 1);
                refused()
            });
            assert_eq!(r, refused());
        }
        assert_eq!(calls.get(), 3);
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn the_audiences_asked_for_are_part_of_the_key() {
        let cache = cache();
        let calls = Cell::new(0);
        let auth = |requested: Option<&[String]>| {
            cache.authenticate("tok", requested, at(0), || {
                calls.set(calls.get() + 1);
                ok("jane")
            })
        };
        let api = ["api".to_string()];
        let vault = ["vault".to_string()];
        let both = ["api".to_string(), "vault".to_string()];
        let joined = ["apivault".to_string()];
        for requested in [
            None,
            Some(&api[..]),
            Some(&vault[..]),
            Some(&both[..]),
            Some(&joined[..]),
        ] {
            auth(requested);
        }
        assert_eq!(
            calls.get(),
            5,
            "each set of audiences is authenticated once"
        );
        auth(Some(&api[..]));
        auth(None);
        assert_eq!(calls.get(), 5);
        cache.authenticate("tok2", None, at(0), || {
            calls.set(calls.get() + 1);
            ok("joe")
        });
        assert_eq!(calls.get(), 6, "another token is another key");
    }

    #[test]
    fn expired_entries_are_swept_as_the_cache_grows() {
        let cache = cache();
        for i in 0..MIN_SWEEP {
            cache.authenticate(&format!("t{i}"), None, at(0), || ok("x"));
        }
        assert_eq!(cache.len(), MIN_SWEEP);
        cache.authenticate("late", None, at(60), || ok("x"));
        assert_eq!(cache.len(), 1, "the expired entries are gone");
    }

    #[test]
    fn a_zero_ttl_caches_nothing() {
        assert!(TokenCache::new(Duration::ZERO).is_none());
    }
}
