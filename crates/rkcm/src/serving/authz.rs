//! Delegated authorization of the secure port, as kube's `DelegatingAuthorizerConfig`: paths in
//! `--authorization-always-allow-paths` and members of `system:masters` are allowed without
//! asking; anyone else is asked about in a SubjectAccessReview (non-resource `path` and `verb`)
//! whose answer is cached (`--authorization-webhook-cache-authorized-ttl`, `-unauthorized-ttl`).
//! Without an authorization client, every request not allowed by path or group is forbidden.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;
use rkcm_apiserver::auth::user::{UserInfo, SYSTEM_MASTERS};
use rkcm_runtime::Clock;

use super::ttl_cache::TtlCache;

/// The outcome of authorizing a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead.
    Allow,
    /// Forbidden, with the reviewer's reason (may be empty).
    Deny(String),
    /// The review could not be made.
    Error(String),
}

/// Asks the API server whether a user may do a non-resource request.
pub trait AccessReviewer: Send + Sync {
    /// `Ok((allowed, reason))`, or `Err(text)` when the review failed.
    fn review(
        &self,
        user: &UserInfo,
        verb: &str,
        path: &str,
    ) -> futures::future::BoxFuture<'static, Result<(bool, String), String>>;
}

/// The SubjectAccessReview API of the cluster behind `--authorization-kubeconfig`.
pub struct ApiAccessReviewer(pub kube::Client);

impl AccessReviewer for ApiAccessReviewer {
    fn review(
        &self,
        user: &UserInfo,
        verb: &str,
        path: &str,
    ) -> futures::future::BoxFuture<'static, Result<(bool, String), String>> {
        let api: kube::Api<SubjectAccessReview> = kube::Api::all(self.0.clone());
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.name.clone()),
                uid: Some(user.uid.clone()).filter(|u| !u.is_empty()),
                groups: Some(user.groups.clone()).filter(|g| !g.is_empty()),
                extra: Some(user.extra.clone().into_iter().collect())
                    .filter(|e: &std::collections::BTreeMap<_, _>| !e.is_empty()),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(path.to_string()),
                    verb: Some(verb.to_string()),
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        Box::pin(async move {
            let answer = api
                .create(&PostParams::default(), &review)
                .await
                .map_err(|e| format!("SubjectAccessReview failed: {e}"))?;
            let status = answer.status.unwrap_or_default();
            if status.allowed {
                return Ok((true, String::new()));
            }
            if let Some(err) = status.evaluation_error.filter(|e| !e.is_empty()) {
                if status.reason.as_deref().unwrap_or("").is_empty() {
                    return Err(err);
                }
            }
            Ok((false, status.reason.unwrap_or_default()))
        })
    }
}

/// The delegating authorizer.
pub struct Authorizer {
    always_allow_paths: Vec<String>,
    always_allow_groups: Vec<String>,
    reviewer: Option<Arc<dyn AccessReviewer>>,
    allow_ttl: Duration,
    deny_ttl: Duration,
    cache: TtlCache<String, (bool, String)>,
}

impl Authorizer {
    /// An authorizer: `always_allow_paths` as the flag gives them (a trailing `*` matches a
    /// prefix), `system:masters` always allowed, others reviewed by `reviewer` when there is one.
    pub fn new(
        always_allow_paths: Vec<String>,
        reviewer: Option<Arc<dyn AccessReviewer>>,
        allow_ttl: Duration,
        deny_ttl: Duration,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            always_allow_paths,
            always_allow_groups: vec![SYSTEM_MASTERS.to_string()],
            reviewer,
            allow_ttl,
            deny_ttl,
            cache: TtlCache::new(clock),
        }
    }

    /// Whether `user` may `verb` (the request's method in lower case) `path`.
    pub async fn authorize(&self, user: &UserInfo, verb: &str, path: &str) -> Decision {
        if path_allowed(&self.always_allow_paths, path) {
            return Decision::Allow;
        }
        if user
            .groups
            .iter()
            .any(|g| self.always_allow_groups.contains(g))
        {
            return Decision::Allow;
        }
        let Some(reviewer) = &self.reviewer else {
            return Decision::Deny(String::new());
        };
        let key = serde_json::json!([user.to_json(), verb, path]).to_string();
        let (allowed, reason) = match self.cache.get(&key) {
            Some(cached) => cached,
            None => match reviewer.review(user, verb, path).await {
                Ok(answer) => {
                    let ttl = if answer.0 {
                        self.allow_ttl
                    } else {
                        self.deny_ttl
                    };
                    self.cache.insert(key, answer.clone(), ttl);
                    answer
                }
                Err(e) => return Decision::Error(e),
            },
        };
        if allowed {
            Decision::Allow
        } else {
            Decision::Deny(reason)
        }
    }
}

/// kube's path authorizer (`authorizerfactory.NewPathAuthorizer`): exact paths, or prefixes
/// written with a trailing `*`.
pub fn path_allowed(paths: &[String], path: &str) -> bool {
    paths.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix),
        None => p == path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use parking_lot::Mutex;
    use rkcm_runtime::FakeClock;

    #[derive(Default)]
    struct FakeReviewer {
        calls: Mutex<Vec<String>>,
    }

    impl AccessReviewer for FakeReviewer {
        fn review(
            &self,
            user: &UserInfo,
            verb: &str,
            path: &str,
        ) -> futures::future::BoxFuture<'static, Result<(bool, String), String>> {
            self.calls
                .lock()
                .push(format!("{} {verb} {path}", user.name));
            let allowed = user.name == "prometheus" && path == "/metrics";
            Box::pin(async move { Ok((allowed, String::new())) })
        }
    }

    fn paths() -> Vec<String> {
        vec!["/healthz".into(), "/readyz".into(), "/livez".into()]
    }

    #[test]
    fn always_allowed_paths_are_exact_or_star_prefixes() {
        assert!(path_allowed(&paths(), "/healthz"));
        assert!(!path_allowed(&paths(), "/healthz/leaderElection"));
        assert!(path_allowed(
            &["/healthz*".to_string()],
            "/healthz/leaderElection"
        ));
        assert!(!path_allowed(&paths(), "/metrics"));
    }

    #[tokio::test]
    async fn paths_and_masters_skip_the_review_others_are_reviewed_and_cached() {
        let clock = FakeClock::default();
        let reviewer = Arc::new(FakeReviewer::default());
        let authz = Authorizer::new(
            paths(),
            Some(reviewer.clone()),
            Duration::from_secs(10),
            Duration::from_secs(10),
            Arc::new(clock.clone()),
        );
        let anon = UserInfo::anonymous();
        assert_eq!(
            authz.authorize(&anon, "get", "/healthz").await,
            Decision::Allow
        );
        let admin = UserInfo::new("kubernetes-admin", &["system:masters"]);
        assert_eq!(
            authz.authorize(&admin, "get", "/metrics").await,
            Decision::Allow
        );
        assert!(reviewer.calls.lock().is_empty());
        let prom = UserInfo::new("prometheus", &["system:authenticated"]);
        for _ in 0..2 {
            assert_eq!(
                authz.authorize(&prom, "get", "/metrics").await,
                Decision::Allow
            );
            assert_eq!(
                authz.authorize(&anon, "get", "/metrics").await,
                Decision::Deny(String::new())
            );
        }
        assert_eq!(reviewer.calls.lock().len(), 2, "answers are cached");
        clock.step(Duration::from_secs(10));
        authz.authorize(&anon, "get", "/metrics").await;
        assert_eq!(reviewer.calls.lock().len(), 3, "asked again after the TTL");
    }

    #[tokio::test]
    async fn without_a_reviewer_only_paths_and_masters_are_allowed() {
        let authz = Authorizer::new(
            paths(),
            None,
            Duration::from_secs(10),
            Duration::from_secs(10),
            Arc::new(FakeClock::default()),
        );
        let prom = UserInfo::new("prometheus", &["system:authenticated"]);
        assert_eq!(
            authz.authorize(&prom, "get", "/metrics").await,
            Decision::Deny(String::new())
        );
        assert_eq!(
            authz.authorize(&prom, "get", "/livez").await,
            Decision::Allow
        );
    }
}
