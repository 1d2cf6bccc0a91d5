//! List-then-watch loop that mirrors one resource into a sink. Mirrors client-go `reflector.go`.

use std::fmt::Debug;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::{Api, Resource, ResourceExt};
use rand::Rng;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use crate::Shutdown;

/// Page size of the initial list (client-go's pager default).
pub(crate) const LIST_PAGE_SIZE: u32 = 500;
/// Lower bound of the watch timeout; each watch asks for a random timeout in `[5m, 10m)`.
const MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(5 * 60);
/// A watch that outlives its server-side timeout by this much is presumed dead.
const WATCH_DEADLINE_GRACE: Duration = Duration::from_secs(30);

/// Where a reflector writes what it sees.
pub(crate) trait ReflectorSink<K>: Send + Sync {
    /// A complete list: replace the content with `objects`.
    fn replace(&self, objects: Vec<K>);
    /// A watch ADDED, MODIFIED or DELETED event.
    fn apply(&self, change: Change<K>);
}

/// A change seen on a watch.
#[derive(Debug)]
pub(crate) enum Change<K> {
    /// ADDED.
    Added(K),
    /// MODIFIED.
    Modified(K),
    /// DELETED, with the object's last state.
    Deleted(K),
}

/// Errors that end one list or watch attempt.
#[derive(Debug, thiserror::Error)]
enum AttemptError {
    /// The resource version is too old (410 Gone / Expired): relist.
    #[error("resource version expired: {0}")]
    Expired(String),
    /// Anything else: back off and retry.
    #[error("{}", crate::api_error::message(.0))]
    Api(#[from] kube::Error),
    /// The server sent an ERROR watch event that is not 410: back off and relist.
    #[error("watch error event: {0}")]
    WatchStatus(String),
    /// An event could not be decoded: back off and relist (rewatching would meet it again).
    #[error("undecodable watch event")]
    Undecodable(#[source] kube::Error),
}

fn is_expired(err: &kube::Error) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == 410 || status.reason == "Expired" || status.reason == "Gone")
}

/// Exponential backoff with jitter, reset after a quiet period (client-go's
/// `NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, 1.0)`).
#[derive(Debug)]
pub(crate) struct Backoff {
    initial: Duration,
    max: Duration,
    reset_after: Duration,
    next: Duration,
    last: Option<Instant>,
}

impl Backoff {
    /// The reflector's backoff: 800 ms doubling to 30 s, reset after 2 min without errors.
    pub(crate) fn reflector() -> Self {
        Self {
            initial: Duration::from_millis(800),
            max: Duration::from_secs(30),
            reset_after: Duration::from_secs(120),
            next: Duration::from_millis(800),
            last: None,
        }
    }

    /// The next delay: the current step plus up to 100 % jitter.
    pub(crate) fn delay(&mut self) -> Duration {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|last| now.duration_since(last) > self.reset_after)
        {
            self.next = self.initial;
        }
        self.last = Some(now);
        let base = self.next;
        self.next = (self.next * 2).min(self.max);
        base.mul_f64(1.0 + rand::rng().random_range(0.0..1.0))
    }
}

/// Lists and watches one resource, writing what it sees to a sink, until shut down.
///
/// The first list is paginated; the watch resumes from the last resource version seen (from an
/// object or a bookmark) when it ends; a 410 Gone relists, and the sink's `replace` turns objects
/// missing from the relist into tombstones. Errors back off with jitter.
pub(crate) struct Reflector<K: Resource + Clone> {
    api: Api<K>,
    name: String,
}

impl<K> Reflector<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// A reflector over `api`; `name` appears in logs.
    pub(crate) fn new(api: Api<K>, name: impl Into<String>) -> Self {
        Self {
            api,
            name: name.into(),
        }
    }

    /// Runs until `shutdown`.
    pub(crate) async fn run(self, sink: &dyn ReflectorSink<K>, shutdown: Shutdown) {
        let mut backoff = Backoff::reflector();
        // `None` until a list succeeds, and again after a 410.
        let mut resource_version: Option<String> = None;
        loop {
            if shutdown.is_cancelled() {
                return;
            }
            let rv = match resource_version.clone() {
                Some(rv) => rv,
                None => {
                    let listed = tokio::select! {
                        _ = shutdown.cancelled() => return,
                        listed = self.list() => listed,
                    };
                    match listed {
                        Ok((objects, rv)) => {
                            tracing::debug!(reflector = %self.name, count = objects.len(), %rv, "listed");
                            sink.replace(objects);
                            resource_version = Some(rv.clone());
                            rv
                        }
                        Err(err) => {
                            tracing::warn!(reflector = %self.name, error = %crate::api_error::Chain(&err), "list failed");
                            if sleep_or_shutdown(backoff.delay(), &shutdown).await {
                                return;
                            }
                            continue;
                        }
                    }
                }
            };
            match self
                .watch(&rv, sink, &mut resource_version, &shutdown)
                .await
            {
                Ok(()) => {}
                Err(AttemptError::Expired(msg)) => {
                    tracing::info!(reflector = %self.name, %msg, "watch expired; relisting");
                    resource_version = None;
                }
                Err(err @ (AttemptError::WatchStatus(_) | AttemptError::Undecodable(_))) => {
                    tracing::warn!(reflector = %self.name, error = %crate::api_error::Chain(&err), "watch failed; relisting");
                    resource_version = None;
                    if sleep_or_shutdown(backoff.delay(), &shutdown).await {
                        return;
                    }
                }
                Err(err) => {
                    tracing::warn!(reflector = %self.name, error = %crate::api_error::Chain(&err), "watch failed; retrying from last resource version");
                    if sleep_or_shutdown(backoff.delay(), &shutdown).await {
                        return;
                    }
                }
            }
        }
    }

    /// Lists every object in pages; returns them with the list's resource version.
    async fn list(&self) -> Result<(Vec<K>, String), kube::Error> {
        let mut objects = Vec::new();
        let mut params = ListParams::default().limit(LIST_PAGE_SIZE);
        loop {
            let page = match self.api.list(&params).await {
                Ok(page) => page,
                // An expired continue token: fall back to one unpaginated list, as client-go's pager.
                Err(err) if params.continue_token.is_some() && is_expired(&err) => {
                    let list = self.api.list(&ListParams::default()).await?;
                    let rv = list.metadata.resource_version.unwrap_or_default();
                    return Ok((list.items, rv));
                }
                Err(err) => return Err(err),
            };
            objects.extend(page.items);
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => params = params.continue_token(&token),
                None => {
                    let rv = page.metadata.resource_version.unwrap_or_default();
                    return Ok((objects, rv));
                }
            }
        }
    }

    /// Watches from `rv` until the stream ends. `Ok` means "rewatch from the last resource version".
    async fn watch(
        &self,
        rv: &str,
        sink: &dyn ReflectorSink<K>,
        resource_version: &mut Option<String>,
        shutdown: &Shutdown,
    ) -> Result<(), AttemptError> {
        let timeout = MIN_WATCH_TIMEOUT.mul_f64(1.0 + rand::rng().random_range(0.0..1.0));
        let params = WatchParams::default().timeout(timeout.as_secs() as u32);
        let stream = tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            stream = self.api.watch(&params, rv) => stream,
        };
        let stream = match stream {
            Ok(stream) => stream,
            Err(err) if is_expired(&err) => return Err(AttemptError::Expired(err.to_string())),
            Err(err) => return Err(err.into()),
        };
        let mut stream = std::pin::pin!(stream.into_stream());
        let deadline = tokio::time::sleep(timeout + WATCH_DEADLINE_GRACE);
        tokio::pin!(deadline);
        loop {
            let event = tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                _ = &mut deadline => {
                    tracing::debug!(reflector = %self.name, "watch outlived its timeout; rewatching");
                    return Ok(());
                }
                event = stream.next() => event,
            };
            let event = match event {
                None => return Ok(()),
                Some(Ok(event)) => event,
                // kube reports an undecodable line as a Status parsed from it when that
                // succeeds (any JSON object does, with code 0), else as a serde error.
                Some(Err(err @ kube::Error::SerdeError(_))) => {
                    return Err(AttemptError::Undecodable(err))
                }
                Some(Err(kube::Error::Api(status))) if status.code == 0 => {
                    let err = kube::Error::Api(status);
                    return Err(AttemptError::Undecodable(err));
                }
                Some(Err(err)) if is_expired(&err) => {
                    return Err(AttemptError::Expired(err.to_string()))
                }
                Some(Err(err)) => return Err(err.into()),
            };
            let (change, new_rv) = match event {
                WatchEvent::Added(obj) => {
                    let rv = obj.resource_version();
                    (Change::Added(obj), rv)
                }
                WatchEvent::Modified(obj) => {
                    let rv = obj.resource_version();
                    (Change::Modified(obj), rv)
                }
                WatchEvent::Deleted(obj) => {
                    let rv = obj.resource_version();
                    (Change::Deleted(obj), rv)
                }
                WatchEvent::Bookmark(bookmark) => {
                    *resource_version = Some(bookmark.metadata.resource_version);
                    continue;
                }
                WatchEvent::Error(status) => {
                    if status.code == 410 || status.reason == "Expired" || status.reason == "Gone" {
                        return Err(AttemptError::Expired(status.message));
                    }
                    return Err(AttemptError::WatchStatus(format!(
                        "{} ({}, code {})",
                        status.message, status.reason, status.code
                    )));
                }
            };
            sink.apply(change);
            if let Some(new_rv) = new_rv.filter(|rv| !rv.is_empty()) {
                *resource_version = Some(new_rv);
            }
        }
    }
}

/// Sleeps for `d`; returns `true` if shut down first.
async fn sleep_or_shutdown(d: Duration, shutdown: &Shutdown) -> bool {
    tokio::select! {
        _ = shutdown.cancelled() => true,
        _ = tokio::time::sleep(d) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn backoff_doubles_with_jitter_caps_at_30s_and_resets_after_two_quiet_minutes() {
        let mut b = Backoff::reflector();
        let first = b.delay();
        assert!(first >= Duration::from_millis(800) && first < Duration::from_millis(1600));
        let second = b.delay();
        assert!(second >= Duration::from_millis(1600) && second < Duration::from_millis(3200));
        for _ in 0..10 {
            let d = b.delay();
            assert!(d < Duration::from_secs(60));
        }
        let capped = b.delay();
        assert!(capped >= Duration::from_secs(30));
        tokio::time::advance(Duration::from_secs(121)).await;
        let reset = b.delay();
        assert!(reset < Duration::from_millis(1600), "{reset:?}");
    }
}
