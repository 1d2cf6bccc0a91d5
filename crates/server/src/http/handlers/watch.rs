//! Watch: a chunked stream of `{"type":…,"object":…}` lines served from the watch cache.
//!
//! Mirrors `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/watch.go` and the cacher's
//! `cacheWatcher`: synthetic ADDED events for the current state when no resourceVersion is given
//! (or "0"), exact resume otherwise, an ERROR event with 410 Expired when the requested revision
//! is older than the cache holds, selector transitions turned into ADDED/DELETED, bookmarks when
//! `allowWatchBookmarks=true`, and the `sendInitialEvents` streaming list. A watcher that does not
//! keep up is closed, as the cacher closes an unresponsive `cacheWatcher`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::StatusCode;
use serde_json::{json, Value};
use tokio::sync::mpsc;

use rkcm_apimachinery::catalog::ResourceInfo;

use crate::error::{ApiError, ApiResult};
use crate::http::filter::Filter;
use crate::http::handlers::Scope;
use crate::http::negotiate::Output;
use crate::http::params::Params;
use crate::http::table;
use crate::rest;
use crate::rest::Resources;
use rkcm_storage::watch_cache::{
    CachedObject, EventType, Next, RevisionError, WatchError, WatchEvent, WatchStart,
};

/// Encoded lines buffered per watcher before the writer waits for the client.
const LINES_BUFFERED: usize = 64;

struct Encoder {
    resources: Arc<dyn Resources>,
    info: &'static ResourceInfo,
    out: Output,
}

impl Encoder {
    fn line(&self, kind: &str, obj: &CachedObject) -> Bytes {
        let mut buf = Vec::with_capacity(obj.json().len() + 32);
        buf.extend_from_slice(b"{\"type\":\"");
        buf.extend_from_slice(kind.as_bytes());
        buf.extend_from_slice(b"\",\"object\":");
        match self.out {
            Output::Object => buf.extend_from_slice(obj.json()),
            Output::Table(include) => {
                let t = table::table(
                    self.resources.as_ref(),
                    self.info,
                    &[&obj.value()],
                    include,
                    json!({"resourceVersion": obj.revision.to_string()}),
                );
                buf.extend_from_slice(t.to_string().as_bytes());
            }
            Output::Metadata => buf.extend_from_slice(
                table::partial_metadata(&obj.metadata_only())
                    .to_string()
                    .as_bytes(),
            ),
        }
        buf.extend_from_slice(b"}\n");
        Bytes::from(buf)
    }

    fn value_line(kind: &str, value: &Value) -> Bytes {
        let mut s = json!({"type": kind, "object": value}).to_string();
        s.push('\n');
        Bytes::from(s)
    }

    fn bookmark(&self, revision: i64, initial_end: bool) -> Bytes {
        let mut meta = json!({"resourceVersion": revision.to_string()});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        Self::value_line(
            "BOOKMARK",
            &json!({"kind": self.info.kind, "apiVersion": self.info.api_version(), "metadata": meta}),
        )
    }

    fn error(err: &ApiError) -> Bytes {
        Self::value_line("ERROR", &err.status())
    }
}

/// What one cache event means to a watcher with `filter` on `prefix`.
fn transform(
    ev: &WatchEvent,
    prefix: &str,
    filter: &Filter,
) -> Option<(&'static str, Arc<CachedObject>)> {
    if !ev.key.starts_with(prefix) {
        return None;
    }
    if filter.is_everything() {
        return Some((ev.kind.as_str(), Arc::clone(&ev.object)));
    }
    let prev = ev.prev.as_ref().is_some_and(|p| filter.matches(p));
    match ev.kind {
        EventType::Deleted => prev.then(|| ("DELETED", Arc::clone(&ev.object))),
        EventType::Added | EventType::Modified => {
            let cur = filter.matches(&ev.object);
            match (prev, cur) {
                (true, true) => Some(("MODIFIED", Arc::clone(&ev.object))),
                (false, true) => Some(("ADDED", Arc::clone(&ev.object))),
                (true, false) => Some(("DELETED", Arc::clone(&ev.object))),
                (false, false) => None,
            }
        }
    }
}

fn expired(e: &WatchError) -> ApiError {
    ApiError::expired(e.to_string())
}

/// Serves a watch on `info` in `ns` (all namespaces when `None`), optionally on one object.
pub async fn serve(
    scope: &Arc<Scope>,
    info: &'static ResourceInfo,
    ns: Option<&str>,
    name: Option<&str>,
    params: &Params,
    out: Output,
) -> ApiResult<Response> {
    let filter = Filter::from_params(scope.resources.as_ref(), info, params, name)?;
    let prefix = rest::prefix(info, ns);
    let bookmarks = params.flag("allowWatchBookmarks");
    let send_initial = params
        .get("sendInitialEvents")
        .map(|v| v == "true" || v == "1");
    let timeout = params
        .int("timeoutSeconds")?
        .filter(|t| *t > 0)
        .map(|t| Duration::from_secs(t as u64));
    let requested_rv = params.non_empty("resourceVersion");
    let from = match requested_rv {
        None | Some("0") => None,
        Some(s) => Some(
            s.parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {s}")))?,
        ),
    };
    if send_initial == Some(true) && !bookmarks {
        return Err(ApiError::new(
            422,
            "Invalid",
            "ListOptions.meta.k8s.io \"\" is invalid: allowWatchBookmarks: Required value: allowWatchBookmarks required when sendInitialEvents is true",
        ));
    }
    // sendInitialEvents=true replays the current state even when a resourceVersion is given
    // (NotOlderThan); sendInitialEvents=false with no resourceVersion starts at "now".
    let (from, synthetic) = match (send_initial, from) {
        (Some(true), _) => (None, true),
        (Some(false), None) => (Some(scope.store.cache().revision()), false),
        (_, from) => (from, from.is_none()),
    };
    // A streaming list from a revision the cache has not reached waits for it, then fails with
    // an ERROR event (`waitUntilWatchCacheFreshAndForceAllEvents`; past validation, the cacher
    // reports errors in the stream, not as the response's status).
    let mut stale = None;
    if let (Some(true), Some(Ok(rv))) = (send_initial, requested_rv.map(|s| s.parse::<i64>())) {
        if rv > scope.store.cache().revision() {
            if let Err(RevisionError::TooLarge { requested, current }) =
                scope.store.cache().wait_until_fresh(rv).await
            {
                stale = Some(ApiError::too_large_resource_version(requested, current));
            }
        }
    }
    let enc = Encoder {
        resources: Arc::clone(&scope.resources),
        info,
        out,
    };
    let (tx, rx) = mpsc::channel::<Bytes>(LINES_BUFFERED);
    let sub = match stale {
        None => Ok(scope.store.cache().watch(&prefix, from)),
        Some(e) => Err(e),
    };
    let shutdown = scope.shutdown.clone();
    let bookmark_interval = scope.bookmark_interval;
    let cache_state = Arc::clone(scope);
    tokio::spawn(async move {
        let mut sub = match sub {
            Ok(Ok(sub)) => sub,
            Ok(Err(e)) => {
                let _ = tx.send(Encoder::error(&expired(&e))).await;
                return;
            }
            Err(e) => {
                let _ = tx.send(Encoder::error(&e)).await;
                return;
            }
        };
        let mut last = sub.revision;
        let start = std::mem::replace(&mut sub.start, WatchStart::Replay(Vec::new()));
        match start {
            WatchStart::Current(objs) => {
                if synthetic {
                    for o in objs.iter().filter(|o| filter.matches(o)) {
                        cache_state.metrics.watch_event(info);
                        if tx.send(enc.line("ADDED", o)).await.is_err() {
                            return;
                        }
                    }
                }
            }
            WatchStart::Replay(events) => {
                for ev in events {
                    last = last.max(ev.revision());
                    if let Some((kind, obj)) = transform(&ev, &prefix, &filter) {
                        cache_state.metrics.watch_event(info);
                        if tx.send(enc.line(kind, &obj)).await.is_err() {
                            return;
                        }
                    }
                }
            }
        }
        if send_initial == Some(true) {
            cache_state.metrics.watch_event(info);
            if tx.send(enc.bookmark(last, true)).await.is_err() {
                return;
            }
        }
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut ticker = tokio::time::interval_at(
            tokio::time::Instant::now() + bookmark_interval,
            bookmark_interval,
        );
        loop {
            let line = tokio::select! {
                next = sub.next() => match next {
                    Next::Events(events) => {
                        let mut lines = Vec::new();
                        for ev in events {
                            if ev.revision() <= last {
                                continue;
                            }
                            last = ev.revision();
                            if let Some((kind, obj)) = transform(&ev, &prefix, &filter) {
                                lines.push(enc.line(kind, &obj));
                            }
                        }
                        lines
                    }
                    Next::Expired(e) => vec![Encoder::error(&expired(&e))],
                    Next::TooSlow => {
                        tracing::info!(resource = info.plural, revision = last, "closing a watcher that does not keep up");
                        return;
                    }
                    Next::Closed => return,
                },
                _ = ticker.tick(), if bookmarks => {
                    // Only claim the cache revision when nothing for this watcher is in flight.
                    let global = cache_state.store.cache().revision();
                    if sub.is_caught_up() {
                        last = last.max(global);
                    }
                    vec![enc.bookmark(last, false)]
                }
                _ = async { match deadline { Some(d) => tokio::time::sleep_until(d).await, None => std::future::pending().await } } => return,
                _ = shutdown.cancelled() => return,
                _ = tx.closed() => return,
            };
            let is_error = line
                .first()
                .is_some_and(|l| l.starts_with(b"{\"type\":\"ERROR\""));
            for l in line {
                // As kube, every event sent counts, bookmarks included; an error ends the watch.
                if !is_error {
                    cache_state.metrics.watch_event(info);
                }
                if tx.send(l).await.is_err() {
                    return;
                }
            }
            if is_error {
                return;
            }
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|line| (Ok::<_, Infallible>(line), rx))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::CACHE_CONTROL, "no-cache, private")
        .body(Body::from_stream(stream))
        .map_err(|e| ApiError::internal("building the watch response", e))
}
