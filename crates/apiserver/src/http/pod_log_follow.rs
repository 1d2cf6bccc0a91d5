//! `pods/log?follow=true` of a running container: what it printed so far, then each line the
//! simulated kubelet records for the same run, until the container stops running (or restarts),
//! the pod is deleted or the server shuts down, as a kubelet follows a container's log file
//! until the container exits.

use std::convert::Infallible;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{header, StatusCode};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::error::{ApiError, ApiResult};
use crate::http::pod_streams::{is_running, restart_count, run_log, select_log, LogOptions};
use crate::store::Store;
use crate::watch_cache::{EventType, Next};

/// Chunks buffered between the pod's events and a slow reader.
const CHUNKS_BUFFERED: usize = 16;

/// The run a follow reads and how far it has read.
#[derive(Clone, Debug)]
pub(crate) struct Followed {
    /// Storage key of the pod.
    pub key: String,
    /// Revision of the pod the log so far was read from.
    pub revision: i64,
    /// The container.
    pub container: String,
    /// Its `restartCount` when the follow began: only this run is followed.
    pub restart_count: i64,
    /// Lines of the run already read (sent, or skipped by `tailLines`/`since`).
    pub seen_lines: usize,
    /// `timestamps=true`: lines keep their time.
    pub timestamps: bool,
    /// What `limitBytes` still allows, if set.
    pub bytes_left: Option<usize>,
}

impl Followed {
    /// The lines `pod` records for the followed run beyond those already read, formatted as
    /// the request asked, within `limitBytes`.
    fn new_output(&mut self, pod: &Value) -> String {
        let log = run_log(pod, &self.container, self.restart_count).unwrap_or_default();
        let lines: Vec<&str> = log.split_inclusive('\n').collect();
        // The kubelet keeps the latest bytes of a run: if older lines were dropped, what is
        // left is all new to the reader only past the count it has seen.
        let fresh = lines.get(self.seen_lines..).unwrap_or_default().concat();
        self.seen_lines = lines.len();
        let mut out = select_log(
            &fresh,
            &LogOptions {
                timestamps: self.timestamps,
                ..LogOptions::default()
            },
        );
        if let Some(left) = self.bytes_left.as_mut() {
            let mut cut = (*left).min(out.len());
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            out.truncate(cut);
            *left -= out.len();
        }
        out
    }

    /// Whether `pod` still runs the followed run and more output may be sent.
    fn goes_on(&self, pod: &Value) -> bool {
        self.bytes_left != Some(0)
            && is_running(pod, &self.container)
            && restart_count(pod, &self.container) == self.restart_count
    }
}

/// Streams `so_far`, then what the followed run prints next, until it ends.
pub(crate) fn follow(
    store: &Store,
    shutdown: CancellationToken,
    so_far: String,
    mut followed: Followed,
) -> ApiResult<Response> {
    // Events after the revision `so_far` was read at; a revision already compacted away
    // leaves the log as it is (the follow then ends with what was read).
    let sub = store
        .cache()
        .watch(&followed.key, Some(followed.revision))
        .ok();
    let (tx, rx) = mpsc::channel::<Bytes>(CHUNKS_BUFFERED);
    tokio::spawn(async move {
        if !so_far.is_empty() && tx.send(Bytes::from(so_far)).await.is_err() {
            return;
        }
        let Some(mut sub) = sub else { return };
        if followed.bytes_left == Some(0) {
            return;
        }
        loop {
            let events = tokio::select! {
                next = sub.next() => match next {
                    Next::Events(events) => events,
                    Next::Expired(_) | Next::TooSlow | Next::Closed => return,
                },
                _ = shutdown.cancelled() => return,
                _ = tx.closed() => return,
            };
            // The watch is on a prefix: `pods/ns/web` also covers `pods/ns/web-2`.
            let key = followed.key.clone();
            for ev in events.iter().filter(|ev| ev.key == key) {
                if ev.kind == EventType::Deleted {
                    return;
                }
                let pod = ev.object.value();
                let out = followed.new_output(&pod);
                if !out.is_empty() && tx.send(Bytes::from(out)).await.is_err() {
                    return;
                }
                if !followed.goes_on(&pod) {
                    return;
                }
            }
        }
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, Infallible>(chunk), rx))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from_stream(stream))
        .map_err(|e| ApiError::internal("building the log response", e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::pod_streams::CONTAINER_LOGS_ANNOTATION;
    use serde_json::json;

    fn pod(log: &str, running: bool, restart_count: i64) -> Value {
        let logs = json!({"app": [{"restartCount": restart_count, "log": log}]});
        let state = if running {
            json!({"running": {}})
        } else {
            json!({"terminated": {"exitCode": 0}})
        };
        json!({
            "metadata": {"annotations": {CONTAINER_LOGS_ANNOTATION: logs.to_string()}},
            "status": {"containerStatuses": [
                {"name": "app", "restartCount": restart_count, "state": state}]},
        })
    }

    fn followed() -> Followed {
        Followed {
            key: "/pods/default/p".into(),
            revision: 1,
            container: "app".into(),
            restart_count: 0,
            seen_lines: 1,
            timestamps: false,
            bytes_left: None,
        }
    }

    #[test]
    fn a_follow_sends_the_lines_it_has_not_read_and_ends_with_the_run() {
        let mut f = followed();
        let printed = pod(
            "2026-01-01T00:00:00Z a\n2026-01-01T00:00:01Z b\n2026-01-01T00:00:02Z c\n",
            true,
            0,
        );
        assert_eq!(f.new_output(&printed), "b\nc\n");
        assert_eq!(f.new_output(&printed), "", "nothing new");
        assert!(f.goes_on(&printed));
        assert!(!f.goes_on(&pod("", false, 0)), "the container ended");
        assert!(!f.goes_on(&pod("", true, 1)), "the container restarted");
    }

    #[test]
    fn a_follow_keeps_timestamps_when_asked_and_stops_at_the_byte_limit() {
        let mut f = Followed {
            timestamps: true,
            seen_lines: 0,
            bytes_left: Some(25),
            ..followed()
        };
        let printed = pod("2026-01-01T00:00:00Z a\n2026-01-01T00:00:01Z b\n", true, 0);
        assert_eq!(f.new_output(&printed), "2026-01-01T00:00:00Z a\n20");
        assert!(!f.goes_on(&printed), "the limit is reached");
    }
}
