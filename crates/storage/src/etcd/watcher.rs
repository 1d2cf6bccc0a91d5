//! Feeds the sink from one etcd watch on the prefix: resumes after a failure from the last
//! revision seen, and relists when etcd compacted that revision away.
//!
//! kube-apiserver's cacher does the same with its reflector over `etcd3/watcher.go`: one watch
//! per resource from the listed revision, a relist on `ErrCompacted`.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio_util::sync::CancellationToken;

use super::client::Client;
use super::{kv_from, EtcdConfig, Shared};
use crate::{Error, StorageEvent};
use rkcm_etcd_api::mvccpb::event::EventType;

/// Longest pause between two attempts to re-establish the watch.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
const MIN_BACKOFF: Duration = Duration::from_millis(50);

/// Why one watch ended.
#[derive(Debug)]
enum Stop {
    /// etcd no longer holds the revision after `last` (it compacted up to the given one).
    Compacted(i64),
    /// etcd canceled the watch for another reason.
    Canceled(String),
    /// The connection or the stream failed.
    Failed(tonic::Status),
}

/// Watches `prefix/` from the revision after `from` until `stop`, passing every event to the
/// sink in revision order.
pub(super) async fn run(
    client: Client,
    config: EtcdConfig,
    prefix: String,
    shared: Arc<Shared>,
    from: i64,
    stop: CancellationToken,
) {
    let mut last = from;
    let mut backoff = MIN_BACKOFF;
    let mut down_since: Option<tokio::time::Instant> = None;
    loop {
        let mut established = false;
        let outcome = tokio::select! {
            _ = stop.cancelled() => return,
            r = watch_once(&client, &prefix, &shared, &mut last, &mut established, &mut down_since) => r,
        };
        if established {
            backoff = MIN_BACKOFF;
        }
        match outcome {
            Ok(()) => tracing::debug!(revision = last, "the etcd watch stream ended"),
            Err(Stop::Compacted(compacted)) => {
                tracing::warn!(
                    revision = last,
                    compacted,
                    "etcd compacted the watch's revision; relisting"
                );
                let relisted = tokio::select! {
                    _ = stop.cancelled() => return,
                    r = relist(&client, &config, &prefix, &shared, &mut last) => r,
                };
                match relisted {
                    Ok(()) => continue,
                    Err(e) => tracing::warn!(error = %e, "relisting etcd failed"),
                }
            }
            Err(Stop::Canceled(reason)) => {
                tracing::warn!(revision = last, reason, "etcd canceled the watch")
            }
            Err(Stop::Failed(e)) => {
                let e = client.error(e);
                if down_since.is_none() {
                    down_since = Some(tokio::time::Instant::now());
                    tracing::warn!(
                        revision = last,
                        error = %e,
                        "the etcd watch failed; retrying"
                    );
                } else {
                    tracing::debug!(error = %e, "the etcd watch failed again");
                }
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(backoff) => {}
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// One watch from `last + 1`; advances `last` with every event delivered.
async fn watch_once(
    client: &Client,
    prefix: &str,
    shared: &Shared,
    last: &mut i64,
    established: &mut bool,
    down_since: &mut Option<tokio::time::Instant>,
) -> Result<(), Stop> {
    // No `prev_kv`: the watch cache keeps every object's previous state itself, so etcd need
    // not send it (kube's watcher needs it only to filter and to build DELETED objects).
    let mut stream = client
        .watch_prefix(&format!("{prefix}/"), *last + 1)
        .await
        .map_err(Stop::Failed)?;
    while let Some(resp) = stream.message().await.map_err(Stop::Failed)? {
        if resp.compact_revision > 0 {
            return Err(Stop::Compacted(resp.compact_revision));
        }
        if resp.canceled {
            return Err(Stop::Canceled(resp.cancel_reason));
        }
        if resp.created {
            *established = true;
            if let Some(since) = down_since.take() {
                tracing::info!(
                    revision = *last,
                    after = ?since.elapsed(),
                    "the etcd watch is back"
                );
            }
        }
        for ev in &resp.events {
            let Some(kv) = &ev.kv else { continue };
            let Some(stored) = kv_from(prefix, kv) else {
                continue;
            };
            let value = match ev.r#type() {
                EventType::Put => Some(stored.value),
                EventType::Delete => None,
            };
            deliver(
                shared,
                StorageEvent {
                    key: stored.key,
                    revision: stored.mod_revision,
                    value,
                    decoded: None,
                },
            );
            *last = stored.mod_revision;
        }
    }
    Ok(())
}

/// Passes one event to the sink (with the writer's decoded value when this server wrote it),
/// then lets writers waiting for its revision go.
pub(super) fn deliver(shared: &Shared, mut ev: StorageEvent) {
    let revision = ev.revision;
    if let Some(value) = &ev.value {
        ev.decoded = shared.take_decoded(&ev.key, value);
    }
    {
        let mut known = shared.known.lock();
        if ev.value.is_some() {
            known.insert(ev.key.clone(), revision);
        } else {
            known.remove(&ev.key);
        }
    }
    let sink = shared.sink.lock().clone();
    if let Some(sink) = sink {
        sink(ev);
    }
    mark_applied(shared, revision);
}

fn mark_applied(shared: &Shared, revision: i64) {
    shared.applied.send_if_modified(|applied| {
        if revision > *applied {
            *applied = revision;
            true
        } else {
            false
        }
    });
}

/// Reads the current state and passes the difference to what the sink holds as events: changed
/// and new keys at their own revisions (in order), removed keys at the listed revision.
///
/// A removed key's real delete revision is gone with the compacted history; the listed revision
/// is the first one at which the key is known to be absent.
async fn relist(
    client: &Client,
    config: &EtcdConfig,
    prefix: &str,
    shared: &Shared,
    last: &mut i64,
) -> Result<(), Error> {
    let (items, revision) = super::load(client, prefix, config, 0).await?;
    let known = shared.known.lock().clone();
    let present: HashSet<&str> = items.iter().map(|kv| kv.key.as_str()).collect();
    let gone: Vec<String> = known
        .keys()
        .filter(|k| !present.contains(k.as_str()))
        .cloned()
        .collect();
    let mut changed: Vec<_> = items
        .iter()
        .filter(|kv| known.get(&kv.key) != Some(&kv.mod_revision))
        .collect();
    changed.sort_by_key(|kv| kv.mod_revision);
    let (n_changed, n_gone) = (changed.len(), gone.len());
    for kv in changed {
        deliver(
            shared,
            StorageEvent {
                key: kv.key.clone(),
                revision: kv.mod_revision,
                value: Some(Bytes::clone(&kv.value)),
                decoded: None,
            },
        );
    }
    for key in gone {
        deliver(
            shared,
            StorageEvent {
                key,
                revision,
                value: None,
                decoded: None,
            },
        );
    }
    mark_applied(shared, revision);
    *last = revision;
    tracing::info!(
        revision,
        changed = n_changed,
        removed = n_gone,
        "relisted etcd"
    );
    Ok(())
}
