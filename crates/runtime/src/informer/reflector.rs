//! List-then-watch loop that mirrors one resource into a sink. Mirrors client-go `reflector.go`.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::api::{ListParams, ObjectList, WatchEvent, WatchParams};
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
    /// `obj` as it will be cached (transformed, shared). The reflector calls it on each object as
    /// soon as it is decoded, so that a list never holds a page's objects in two forms.
    fn prepare(&self, obj: K) -> Arc<K>;
    /// A complete list: replace the content with `objects`.
    fn replace(&self, objects: Vec<Arc<K>>);
    /// A watch ADDED, MODIFIED or DELETED event.
    fn apply(&self, change: Change<K>);
}

/// A change seen on a watch, with the object as [`ReflectorSink::prepare`] made it.
#[derive(Debug)]
pub(crate) enum Change<K> {
    /// ADDED.
    Added(Arc<K>),
    /// MODIFIED.
    Modified(Arc<K>),
    /// DELETED, with the object's last state.
    Deleted(Arc<K>),
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

/// The server has not reached the resource version asked for (client-go
/// `isTooLargeResourceVersionError`): a `ResourceVersionTooLarge` cause, or a timeout saying so.
fn is_too_large_resource_version(err: &kube::Error) -> bool {
    crate::api_error::has_status_cause(err, "ResourceVersionTooLarge")
        || matches!(err, kube::Error::Api(status)
            if (status.code == 504 || status.reason == "Timeout")
                && status.message.contains("Too large resource version"))
}

/// A watch that could not be opened for a reason worth waiting out rather than relisting
/// (client-go `isWatchErrorRetriable`): too many requests, or the server refusing connections.
fn is_retriable_watch_error(err: &kube::Error) -> bool {
    match err {
        kube::Error::Api(status) => status.code == 429,
        other => {
            let mut source: Option<&dyn std::error::Error> = Some(other);
            while let Some(e) = source {
                if let Some(io) = e.downcast_ref::<std::io::Error>() {
                    if io.kind() == std::io::ErrorKind::ConnectionRefused {
                        return true;
                    }
                }
                source = e.source();
            }
            false
        }
    }
}

/// A watch that ends within this long without an event is suspect: relist (client-go
/// `handleWatch`'s "very short watch").
const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);

/// What the reflector remembers between lists (client-go's `lastSyncResourceVersion`,
/// `isLastSyncResourceVersionUnavailable`, `paginatedResult`).
#[derive(Debug, Default)]
struct Relist {
    /// The resource version of the last list, event or bookmark; empty before the first list.
    last_sync_resource_version: String,
    /// The last list failed because that resource version is gone or not reached.
    last_sync_unavailable: bool,
    /// The server paginated an answer to resourceVersion=0.
    paginated_result: bool,
}

impl Relist {
    /// The resource version to list at (`relistResourceVersion`): "0" (any, from the watch
    /// cache) the first time, the last one seen after that, and "" (the latest, consistent) when
    /// that one is unavailable.
    fn resource_version(&self) -> String {
        if self.last_sync_unavailable {
            String::new()
        } else if self.last_sync_resource_version.is_empty() {
            "0".to_string()
        } else {
            self.last_sync_resource_version.clone()
        }
    }

    /// Page size of a list at `rv`: paged by 500 unless it is a list at a specific resource
    /// version from a server that does not page answers to resourceVersion=0.
    fn page_size(&self, rv: &str) -> u32 {
        if self.paginated_result || rv.is_empty() || rv == "0" {
            LIST_PAGE_SIZE
        } else {
            0
        }
    }
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
    /// Ask the server for `PartialObjectMetadata` only (client-go's metadata informers).
    metadata_only: bool,
}

/// What a metadata-only list asks for (client-go's metadata client).
const ACCEPT_METADATA_LIST: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
/// What a metadata-only watch asks for.
const ACCEPT_METADATA: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";

impl<K> Reflector<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    /// A reflector over `api`; `name` appears in logs.
    pub(crate) fn new(api: Api<K>, name: impl Into<String>, metadata_only: bool) -> Self {
        Self {
            api,
            name: name.into(),
            metadata_only,
        }
    }

    /// Runs until `shutdown`: client-go's `ListAndWatch` under `BackoffUntil`.
    ///
    /// A list is followed by watches, each resumed from the last resource version seen, for as
    /// long as they end normally (their timeout, a dropped connection). A watch that ends with an
    /// error, or closes within a second without an event, sends the reflector back to a list,
    /// after the backoff.
    pub(crate) async fn run(self, sink: &dyn ReflectorSink<K>, shutdown: Shutdown) {
        let mut backoff = Backoff::reflector();
        let mut relist = Relist::default();
        loop {
            if shutdown.is_cancelled() {
                return;
            }
            let listed = tokio::select! {
                _ = shutdown.cancelled() => return,
                listed = self.list(&mut relist, sink) => listed,
            };
            match listed {
                Ok((objects, rv)) => {
                    tracing::debug!(reflector = %self.name, count = objects.len(), %rv, "listed");
                    sink.replace(objects);
                    relist.last_sync_resource_version = rv;
                    self.watch_until_relist(sink, &mut relist, &mut backoff, &shutdown)
                        .await;
                }
                Err(err) => {
                    tracing::warn!(reflector = %self.name, error = %crate::api_error::Chain(&err), "list failed");
                }
            }
            if sleep_or_shutdown(backoff.delay(), &shutdown).await {
                return;
            }
        }
    }

    /// Watches again and again from the last resource version seen, until a watch ends in a way
    /// that calls for a relist (or shutdown).
    async fn watch_until_relist(
        &self,
        sink: &dyn ReflectorSink<K>,
        relist: &mut Relist,
        backoff: &mut Backoff,
        shutdown: &Shutdown,
    ) {
        loop {
            if shutdown.is_cancelled() {
                return;
            }
            let started = Instant::now();
            let rv = relist.last_sync_resource_version.clone();
            let mut events = 0usize;
            let result = self.watch(&rv, sink, relist, &mut events, shutdown).await;
            if shutdown.is_cancelled() {
                return;
            }
            match result {
                Ok(()) if events == 0 && started.elapsed() < VERY_SHORT_WATCH => {
                    tracing::warn!(reflector = %self.name, "very short watch: unexpected watch close - watch lasted less than a second and no items received");
                    return;
                }
                Ok(()) => {}
                Err(AttemptError::Expired(msg)) => {
                    // Not "unavailable" yet: a list at the last resource version returns data at
                    // least that fresh, and says so itself if it cannot.
                    tracing::info!(reflector = %self.name, %msg, "watch closed with: too old resource version");
                    return;
                }
                Err(AttemptError::Api(err)) if is_retriable_watch_error(&err) => {
                    tracing::debug!(reflector = %self.name, error = %crate::api_error::Chain(&err), "watch failed; backing off");
                    if sleep_or_shutdown(backoff.delay(), shutdown).await {
                        return;
                    }
                }
                Err(err) => {
                    tracing::warn!(reflector = %self.name, error = %crate::api_error::Chain(&err), "watch ended with an error; relisting");
                    return;
                }
            }
        }
    }

    /// Lists every object at the resource version client-go's `relistResourceVersion` picks, in
    /// pages where it pages; returns them with the list's resource version.
    async fn list(
        &self,
        relist: &mut Relist,
        sink: &dyn ReflectorSink<K>,
    ) -> Result<(Vec<Arc<K>>, String), kube::Error> {
        let rv = relist.resource_version();
        let result = match self.list_pages(&rv, relist.page_size(&rv), sink).await {
            Err(err) if is_expired(&err) || is_too_large_resource_version(&err) => {
                // The resource version is gone or not there yet: list the latest at once.
                relist.last_sync_unavailable = true;
                let rv = relist.resource_version();
                self.list_pages(&rv, relist.page_size(&rv), sink).await
            }
            other => other,
        };
        let (objects, list_rv, paginated) = result?;
        if rv == "0" && paginated {
            // A paginated answer to resourceVersion=0 means the server has no watch cache
            // for this resource: keep paging from now on.
            relist.paginated_result = true;
        }
        relist.last_sync_unavailable = false;
        Ok((objects, list_rv))
    }

    /// One list at `rv` (empty: the latest), in pages of `page_size` (0: one page), as client-go's
    /// pager: continue requests carry no resource version, and an expired continue token falls
    /// back to one full list at `rv`. Also says whether the answer came in several pages. Each
    /// page's objects go through `sink`'s [`ReflectorSink::prepare`] and the page is dropped
    /// before the next one is asked for.
    async fn list_pages(
        &self,
        rv: &str,
        page_size: u32,
        sink: &dyn ReflectorSink<K>,
    ) -> Result<(Vec<Arc<K>>, String, bool), kube::Error> {
        let at_rv = ListParams {
            resource_version: (!rv.is_empty()).then(|| rv.to_string()),
            ..ListParams::default()
        };
        let mut params = ListParams {
            limit: (page_size > 0).then_some(page_size),
            ..at_rv.clone()
        };
        let mut objects = Vec::new();
        let mut paginated = false;
        loop {
            let page = match self.list_page(&params).await {
                Ok(page) => page,
                Err(err) if params.continue_token.is_some() && is_expired(&err) => {
                    let list = self.list_page(&at_rv).await?;
                    let rv = list.metadata.resource_version.unwrap_or_default();
                    drop(objects);
                    let objects = list.items.into_iter().map(|o| sink.prepare(o)).collect();
                    return Ok((objects, rv, paginated));
                }
                Err(err) => return Err(err),
            };
            objects.extend(page.items.into_iter().map(|o| sink.prepare(o)));
            match page.metadata.continue_.filter(|c| !c.is_empty()) {
                Some(token) => {
                    paginated = true;
                    params = ListParams {
                        limit: params.limit,
                        continue_token: Some(token),
                        ..ListParams::default()
                    };
                }
                None => {
                    let rv = page.metadata.resource_version.unwrap_or_default();
                    return Ok((objects, rv, paginated));
                }
            }
        }
    }

    /// One list request with `params`, sent as client-go sends it: kube's `ListParams` leave
    /// `resourceVersion=0` out when a limit is set, client-go sends both (the watch cache
    /// answers it whole; a server without one pages it).
    async fn list_page(&self, params: &ListParams) -> Result<ObjectList<K>, kube::Error> {
        let rv0_with_limit = params.limit.is_some()
            && params.continue_token.is_none()
            && params.resource_version.as_deref() == Some("0");
        if !rv0_with_limit && !self.metadata_only {
            return self.api.list(params).await;
        }
        let mut req = kube::core::Request::new(self.api.resource_url())
            .list(params)
            .map_err(kube::Error::BuildRequest)?;
        if rv0_with_limit {
            let uri = format!("{}&resourceVersion=0", req.uri());
            *req.uri_mut() = uri
                .parse()
                .map_err(|e: http::uri::InvalidUri| kube::Error::HttpError(e.into()))?;
        }
        if self.metadata_only {
            req.headers_mut().insert(
                http::header::ACCEPT,
                http::HeaderValue::from_static(ACCEPT_METADATA_LIST),
            );
        }
        self.api.clone().into_client().request(req).await
    }

    /// Starts a watch from `rv`, metadata-only when the reflector is.
    async fn start_watch(
        &self,
        params: &WatchParams,
        rv: &str,
    ) -> Result<futures::stream::BoxStream<'static, Result<WatchEvent<K>, kube::Error>>, kube::Error>
    {
        if !self.metadata_only {
            return self.api.watch(params, rv).await.map(StreamExt::boxed);
        }
        let mut req = kube::core::Request::new(self.api.resource_url())
            .watch(params, rv)
            .map_err(kube::Error::BuildRequest)?;
        req.headers_mut().insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static(ACCEPT_METADATA),
        );
        self.api
            .clone()
            .into_client()
            .request_events::<K>(req)
            .await
            .map(StreamExt::boxed)
    }

    /// Watches from `rv` until the stream ends. `Ok` means "rewatch from the last resource version".
    async fn watch(
        &self,
        rv: &str,
        sink: &dyn ReflectorSink<K>,
        relist: &mut Relist,
        events: &mut usize,
        shutdown: &Shutdown,
    ) -> Result<(), AttemptError> {
        let timeout = MIN_WATCH_TIMEOUT.mul_f64(1.0 + rand::rng().random_range(0.0..1.0));
        let params = WatchParams::default().timeout(timeout.as_secs() as u32);
        let stream = tokio::select! {
            _ = shutdown.cancelled() => return Ok(()),
            stream = self.start_watch(&params, rv) => stream,
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
                    (Change::Added(sink.prepare(obj)), rv)
                }
                WatchEvent::Modified(obj) => {
                    let rv = obj.resource_version();
                    (Change::Modified(sink.prepare(obj)), rv)
                }
                WatchEvent::Deleted(obj) => {
                    let rv = obj.resource_version();
                    (Change::Deleted(sink.prepare(obj)), rv)
                }
                WatchEvent::Bookmark(bookmark) => {
                    *events += 1;
                    relist.last_sync_resource_version = bookmark.metadata.resource_version;
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
            *events += 1;
            sink.apply(change);
            if let Some(new_rv) = new_rv.filter(|rv| !rv.is_empty()) {
                relist.last_sync_resource_version = new_rv;
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

    #[test]
    fn relists_ask_for_the_resource_version_client_go_asks_for() {
        let mut r = Relist::default();
        // First list: anything (the watch cache), paged.
        assert_eq!(r.resource_version(), "0");
        assert_eq!(r.page_size("0"), LIST_PAGE_SIZE);
        // Later: at least as fresh as the last seen, whole unless the server pages.
        r.last_sync_resource_version = "42".into();
        assert_eq!(r.resource_version(), "42");
        assert_eq!(r.page_size("42"), 0);
        r.paginated_result = true;
        assert_eq!(r.page_size("42"), LIST_PAGE_SIZE);
        // That version is gone: the latest, consistent list, paged.
        r.last_sync_unavailable = true;
        assert_eq!(r.resource_version(), "");
        assert_eq!(r.page_size(""), LIST_PAGE_SIZE);
    }

    #[test]
    fn too_large_resource_versions_and_retriable_watch_errors_are_recognised() {
        let status = |code: u16, reason: &str, message: &str, cause: Option<&str>| {
            let causes: Vec<serde_json::Value> = cause
                .map(|c| serde_json::json!({"reason": c}))
                .into_iter()
                .collect();
            let status: kube::core::Status = serde_json::from_value(serde_json::json!({
                "status": "Failure", "code": code, "reason": reason, "message": message,
                "details": {"causes": causes},
            }))
            .expect("a Status");
            kube::Error::Api(Box::new(status))
        };
        assert!(is_too_large_resource_version(&status(
            504,
            "Timeout",
            "Too large resource version: 9, current: 5",
            Some("ResourceVersionTooLarge")
        )));
        assert!(is_too_large_resource_version(&status(
            504,
            "Timeout",
            "Too large resource version: 9, current: 5",
            None
        )));
        assert!(!is_too_large_resource_version(&status(
            504, "Timeout", "timeout", None
        )));
        assert!(is_retriable_watch_error(&status(
            429,
            "TooManyRequests",
            "slow down",
            None
        )));
        assert!(!is_retriable_watch_error(&status(
            500,
            "InternalError",
            "boom",
            None
        )));
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert!(is_retriable_watch_error(&kube::Error::Service(Box::new(
            refused
        ))));
    }

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
