//! The token cleaner: bootstrap token Secrets are deleted when they expire.
//!
//! Mirrors `pkg/controller/bootstrap/tokencleaner.go`: each bootstrap token Secret of
//! `kube-system` is evaluated when it is added or updated; an expired one (or one whose
//! `expiration` cannot be parsed) is deleted with its UID as precondition, one that expires later
//! is evaluated again at its expiration.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Preconditions};
use rkcm_runtime::informer::{
    wait_for_cache_sync, HasSynced, InformerFactory, Notification, SharedInformer,
};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{api_error, worker, Clock, ObjectKey, Shutdown};

use super::token::{expiration, SECRET_TYPE, TOKEN_NAMESPACE};

/// Canonical name of the controller.
pub const NAME: &str = "token-cleaner-controller";

/// What to do with a bootstrap token Secret now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Expired: delete it.
    Delete,
    /// Look again after this long.
    RecheckAfter(Duration),
    /// It never expires.
    Keep,
}

/// `evalSecret`'s decision at `now`.
pub fn verdict(secret: &Secret, now: jiff::Timestamp) -> Verdict {
    match expiration(secret, now) {
        None => Verdict::Delete,
        Some(Some(left)) => Verdict::RecheckAfter(left),
        Some(None) => Verdict::Keep,
    }
}

/// Deleting an expired token failed.
#[derive(Debug, thiserror::Error)]
#[error("failed to delete expired bootstrap token secret {key}")]
pub struct Error {
    /// The Secret.
    pub key: ObjectKey,
    /// The API error.
    #[source]
    pub source: kube::Error,
}

fn is_token_secret(s: &Secret) -> bool {
    s.metadata.namespace.as_deref() == Some(TOKEN_NAMESPACE)
        && s.type_.as_deref() == Some(SECRET_TYPE)
}

/// Deletes expired bootstrap tokens.
pub struct TokenCleaner {
    client: kube::Client,
    queue: RateLimitingQueue<ObjectKey>,
    secrets: SharedInformer<Secret>,
    clock: Arc<dyn Clock>,
}

impl TokenCleaner {
    /// Registers handlers on the Secret informer.
    pub fn new(
        factory: &InformerFactory,
        client: kube::Client,
        clock: Arc<dyn Clock>,
    ) -> Arc<Self> {
        let queue = RateLimitingQueue::new("token_cleaner");
        let secrets = factory.informer::<Secret>();
        // `DefaultTokenCleanerOptions` has no `SecretResync`: never resynced; expiry is
        // watched through the queue instead.
        let q = queue.clone();
        secrets.add_event_handler_with_resync_period(
            move |note: Notification<Secret>| match note {
                Notification::Add(s) | Notification::Update { new: s, .. }
                    if is_token_secret(&s) =>
                {
                    q.add(ObjectKey::from_obj(&*s));
                }
                _ => {}
            },
            Duration::ZERO,
        );
        Arc::new(Self {
            client,
            queue,
            secrets,
            clock,
        })
    }

    /// Runs the single worker until `shutdown`.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        tracing::info!(controller = NAME, "Starting token cleaner controller");
        let synced: [&dyn HasSynced; 1] = [&self.secrets];
        if wait_for_cache_sync("token_cleaner", &synced, &shutdown).await {
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                1,
                shutdown,
                worker::ErrorPolicy::handle_error(),
                move |key| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&key).await }
                },
            )
            .await;
        }
        tracing::info!(controller = NAME, "Shutting down token cleaner controller");
    }

    /// `syncFunc` + `evalSecret`.
    pub async fn sync(&self, key: &ObjectKey) -> Result<(), Error> {
        let Some(secret) = self.secrets.store().get(key) else {
            return Ok(());
        };
        match verdict(&secret, self.clock.now()) {
            Verdict::Keep => Ok(()),
            Verdict::RecheckAfter(left) => {
                self.queue.add_after(key.clone(), left);
                Ok(())
            }
            Verdict::Delete => {
                tracing::debug!(secret = %key, "Deleting expired secret");
                let params = DeleteParams {
                    preconditions: secret.metadata.uid.clone().map(|uid| Preconditions {
                        uid: Some(uid),
                        resource_version: None,
                    }),
                    ..DeleteParams::default()
                };
                let api: Api<Secret> = Api::namespaced(
                    self.client.clone(),
                    key.namespace.as_deref().unwrap_or(TOKEN_NAMESPACE),
                );
                match api.delete(&key.name, &params).await {
                    Ok(_) => Ok(()),
                    // Already gone, or the UID precondition failed.
                    Err(e) if api_error::is_conflict(&e) || api_error::is_not_found(&e) => Ok(()),
                    Err(source) => Err(Error {
                        key: key.clone(),
                        source,
                    }),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::token::fixtures::*;
    use super::*;

    fn now() -> jiff::Timestamp {
        "2024-06-01T12:00:00Z".parse().expect("a time")
    }

    // tokencleaner_test.go: TestCleanerNoExpiration, TestCleanerExpired, TestCleanerNotExpired,
    // TestCleanerExpiredAt.
    #[test]
    fn tokens_are_deleted_once_expired_and_rechecked_at_expiry_before() {
        let s = token_secret("abc123", "tokensecret");
        assert_eq!(verdict(&s, now()), Verdict::Keep);
        let expired = expiring(s.clone(), "2024-06-01T11:00:00Z");
        assert_eq!(verdict(&expired, now()), Verdict::Delete);
        let later = expiring(s.clone(), "2024-06-01T13:00:00Z");
        assert_eq!(
            verdict(&later, now()),
            Verdict::RecheckAfter(Duration::from_secs(3600))
        );
        assert_eq!(
            verdict(&later, "2024-06-01T13:00:00Z".parse().unwrap()),
            Verdict::Delete
        );
        let garbage = expiring(s, "not a time");
        assert_eq!(verdict(&garbage, now()), Verdict::Delete);
    }
}
