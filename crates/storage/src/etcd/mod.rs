//! etcd v3 storage backend, as kube-apiserver's `storage/etcd3` store.
//!
//! Objects live under `<prefix><key>` (`/registry/<group or core>/<plural>/<namespace>/<name>`
//! with the default `--etcd-prefix`); an object's `resourceVersion` is its etcd `mod_revision`.
//! Writes are etcd transactions that compare the key's revision (create: `create_revision == 0`;
//! update and delete: `mod_revision == expected`), as `etcd3/store.go` does.
//!
//! The sink is fed by one etcd watch on the prefix ([`watcher`]), not by the write path, so writes
//! made by another API server on the same etcd reach this server's cache too. A write resolves only
//! once the watch has passed its revision to the sink, which keeps read-your-writes. A compactor
//! ([`compact`]) trims etcd's history every `--etcd-compaction-interval`.

use rkcm_etcd_api as api;
mod client;
mod compact;
pub mod testing;
mod watcher;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use api::etcdserverpb::compare::{CompareResult, TargetUnion};
use api::etcdserverpb::TxnRequest;
use bytes::Bytes;
use client::Client;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

pub use super::etcd_config::{
    EtcdConfig, DEFAULT_COMPACTION_INTERVAL, DEFAULT_PREFIX, DEFAULT_REQUEST_TIMEOUT,
};
use super::{Backend, Error, EventSink, KeyValue, Result, WriteOp};

/// Objects read per range request when loading (kube lists etcd in pages too).
const LOAD_PAGE: i64 = 500;

/// State shared by the backend, its watcher and its waiters.
struct Shared {
    sink: Mutex<Option<EventSink>>,
    /// The last revision passed to the sink; writers wait on it.
    applied: tokio::sync::watch::Sender<i64>,
    /// Every key the sink holds, with its mod revision: what a relist after a compacted watch
    /// compares against (keys and numbers only, not values).
    known: Mutex<HashMap<String, i64>>,
    /// Values this server is writing, already decoded by the writer: the watch hands the decoded
    /// value to the sink with the event whose bytes match, which saves the cache a parse.
    pending: Mutex<HashMap<String, (Bytes, serde_json::Value)>>,
}

impl Shared {
    /// The writer's decoded value for a put of `value` under `key`, if this server wrote it.
    fn take_decoded(&self, key: &str, value: &Bytes) -> Option<serde_json::Value> {
        let mut pending = self.pending.lock();
        match pending.get(key) {
            Some((bytes, _)) if bytes == value => pending.remove(key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// A [`Backend`] on an etcd v3 cluster.
pub struct EtcdBackend {
    client: Client,
    config: EtcdConfig,
    prefix: String,
    shared: Arc<Shared>,
    /// Revision of the last [`Backend::load`]: where the watch starts.
    loaded: Mutex<i64>,
    stop: CancellationToken,
}

impl Drop for EtcdBackend {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// Runs one etcd call with the request timeout; `what` names it in the timeout's message. A
/// call that never reached etcd (a member refused the connection: it is down, and the channel
/// has not noticed yet) is sent again, to another member when one answers, as etcd's client
/// fails over between endpoints.
async fn call<T, Fut>(
    client: &Client,
    timeout: std::time::Duration,
    what: &str,
    mut op: impl FnMut() -> Fut,
) -> Result<T>
where
    Fut: Future<Output = std::result::Result<T, tonic::Status>>,
{
    let attempts = client.endpoints() * 3;
    let calls = async {
        let mut attempt = 1;
        loop {
            match op().await {
                Err(status) if attempt < attempts && client::not_sent(&status) => attempt += 1,
                other => return other,
            }
        }
    };
    match tokio::time::timeout(timeout, calls).await {
        Ok(r) => r.map_err(|e| client.error(e)),
        Err(_) => Err(Error::Timeout(format!(
            "etcd at {} did not answer {what} within {timeout:?}",
            client.servers()
        ))),
    }
}

impl EtcdBackend {
    /// Connects to `config.servers` (lazily: an unreachable cluster fails the first call, not
    /// this one, so a server can start while etcd comes up).
    pub async fn connect(config: EtcdConfig) -> Result<Self> {
        if config.servers.is_empty() {
            return Err(Error::Backend("no etcd servers given".into()));
        }
        let client = Client::new(&config)?;
        let (applied, _) = tokio::sync::watch::channel(0);
        Ok(Self {
            client,
            prefix: config.key_prefix(),
            config,
            shared: Arc::new(Shared {
                sink: Mutex::new(None),
                applied,
                known: Mutex::new(HashMap::new()),
                pending: Mutex::new(HashMap::new()),
            }),
            loaded: Mutex::new(0),
            stop: CancellationToken::new(),
        })
    }

    fn etcd_key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// Waits until the watch has passed `revision` to the sink.
    async fn wait_applied(&self, revision: i64) -> Result<()> {
        let mut rx = self.shared.applied.subscribe();
        let waited = tokio::time::timeout(self.config.request_timeout, async {
            rx.wait_for(|r| *r >= revision).await.map(|_| ())
        })
        .await;
        match waited {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(Error::Backend("the etcd watch stopped".into())),
            Err(_) => Err(Error::Timeout(format!(
                "the write was committed at revision {revision}, but the watch on etcd at {} \
                 has not delivered it within {:?}",
                self.config.servers.join(","),
                self.config.request_timeout
            ))),
        }
    }

    fn kv_of(&self, kv: &api::mvccpb::KeyValue) -> Option<KeyValue> {
        kv_from(&self.prefix, kv)
    }

    async fn txn(&self, op: &WriteOp) -> Result<(i64, Option<KeyValue>)> {
        let key = self.etcd_key(op.key());
        let (when, then) = match op {
            WriteOp::Create { value, .. } => (
                client::compare(&key, CompareResult::Equal, TargetUnion::CreateRevision(0)),
                client::put(&key, value.clone(), false),
            ),
            WriteOp::Update {
                value,
                expected_revision,
                ..
            } => (
                client::compare(
                    &key,
                    CompareResult::Equal,
                    TargetUnion::ModRevision(*expected_revision),
                ),
                client::put(&key, value.clone(), true),
            ),
            WriteOp::Delete {
                expected_revision, ..
            } => (
                match expected_revision {
                    Some(rev) => {
                        client::compare(&key, CompareResult::Equal, TargetUnion::ModRevision(*rev))
                    }
                    None => client::compare(
                        &key,
                        CompareResult::Greater,
                        TargetUnion::CreateRevision(0),
                    ),
                },
                client::delete(&key),
            ),
        };
        let txn = TxnRequest {
            compare: vec![when],
            success: vec![then],
            failure: vec![client::get(&key)],
        };
        let resp = call(&self.client, self.config.request_timeout, "a write", || {
            self.client.txn(txn.clone())
        })
        .await?;
        let revision = resp
            .header
            .map(|h| h.revision)
            .ok_or_else(|| Error::Backend("etcd answered without a header".into()))?;
        if !resp.succeeded {
            let current = client::txn_got(&resp.responses).map(|kv| kv.mod_revision);
            return Err(match (op, current) {
                (WriteOp::Create { key, .. }, _) => Error::AlreadyExists(key.clone()),
                (_, None) => Error::NotFound(op.key().to_string()),
                (
                    WriteOp::Update {
                        key,
                        expected_revision,
                        ..
                    },
                    Some(actual),
                ) => Error::Conflict {
                    key: key.clone(),
                    expected: *expected_revision,
                    actual,
                },
                (
                    WriteOp::Delete {
                        key,
                        expected_revision,
                    },
                    Some(actual),
                ) => Error::Conflict {
                    key: key.clone(),
                    expected: expected_revision.unwrap_or_default(),
                    actual,
                },
            });
        }
        let prev = client::txn_prev(&resp.responses).and_then(|kv| self.kv_of(kv));
        Ok((revision, prev))
    }
}

/// Our key and value of an etcd key-value under `prefix`; `None` (logged) for a foreign key.
fn kv_from(prefix: &str, kv: &api::mvccpb::KeyValue) -> Option<KeyValue> {
    let key = match std::str::from_utf8(&kv.key) {
        Ok(k) => k,
        Err(e) => {
            tracing::error!(error = %e, "skipping an etcd key that is not UTF-8");
            return None;
        }
    };
    let key = key.strip_prefix(prefix)?;
    Some(KeyValue {
        key: key.to_string(),
        value: kv.value.clone(),
        mod_revision: kv.mod_revision,
    })
}

/// Reads everything under `prefix/` at `revision` (0: the current one), in pages of
/// [`LOAD_PAGE`]; returns the values and the revision read at.
async fn load(
    client: &Client,
    prefix: &str,
    config: &EtcdConfig,
    revision: i64,
) -> Result<(Vec<KeyValue>, i64)> {
    let start = format!("{prefix}/").into_bytes();
    let end = Bytes::from(client::range_end(&start));
    let mut from = start;
    let mut revision = revision;
    let mut items = Vec::new();
    loop {
        let resp = call(client, config.request_timeout, "a range read", || {
            client.range(from.clone(), end.clone(), revision, LOAD_PAGE)
        })
        .await?;
        if revision == 0 {
            revision = resp.header.map(|h| h.revision).unwrap_or_default();
        }
        items.extend(resp.kvs.iter().filter_map(|kv| kv_from(prefix, kv)));
        match resp.kvs.last() {
            Some(last) if resp.more => {
                from = last.key.to_vec();
                from.push(0);
            }
            _ => break,
        }
    }
    Ok((items, revision))
}

#[async_trait::async_trait]
impl Backend for EtcdBackend {
    async fn load(&self) -> Result<(Vec<KeyValue>, i64)> {
        let (items, revision) = load(&self.client, &self.prefix, &self.config, 0).await?;
        // Once the watch runs, it alone tells what the sink holds; a later load only reads.
        if self.shared.sink.lock().is_none() {
            *self.loaded.lock() = revision;
            *self.shared.known.lock() = items
                .iter()
                .map(|kv| (kv.key.clone(), kv.mod_revision))
                .collect();
            self.shared.applied.send_replace(revision);
        }
        Ok((items, revision))
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        let resp = call(&self.client, self.config.request_timeout, "a read", || {
            self.client.range(self.etcd_key(key), Bytes::new(), 0, 0)
        })
        .await?;
        Ok(resp.kvs.first().and_then(|kv| self.kv_of(kv)))
    }

    async fn write(
        &self,
        op: WriteOp,
        decoded: Option<serde_json::Value>,
    ) -> Result<(i64, Option<KeyValue>)> {
        // Without a sink nothing reads through this backend, so there is nothing to wait for.
        let has_sink = self.shared.sink.lock().is_some();
        let written = match (&op, decoded) {
            (WriteOp::Create { key, value } | WriteOp::Update { key, value, .. }, Some(v))
                if has_sink =>
            {
                self.shared
                    .pending
                    .lock()
                    .insert(key.clone(), (value.clone(), v));
                Some((key.as_str(), value))
            }
            _ => None,
        };
        let result = async {
            let (revision, prev) = self.txn(&op).await?;
            if has_sink {
                self.wait_applied(revision).await?;
            }
            Ok((revision, prev))
        }
        .await;
        // Normally the watch took it; after a failure it must not linger.
        if let Some((key, value)) = written {
            self.shared.take_decoded(key, value);
        }
        result
    }

    fn current_revision(&self) -> i64 {
        *self.shared.applied.borrow()
    }

    fn set_sink(&self, sink: EventSink) {
        if self.shared.sink.lock().replace(sink).is_some() {
            // The watch and the compactor already run; they use the new sink from now on.
            return;
        }
        let from = *self.loaded.lock();
        tokio::spawn(watcher::run(
            self.client.clone(),
            self.config.clone(),
            self.prefix.clone(),
            Arc::clone(&self.shared),
            from,
            self.stop.clone(),
        ));
        if !self.config.compaction_interval.is_zero() {
            tokio::spawn(compact::run(
                self.client.clone(),
                self.config.compaction_interval,
                self.stop.clone(),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_loses_its_trailing_slash_and_gains_a_leading_one() {
        let prefix = |p: &str| {
            let mut c = EtcdConfig::new(vec![]);
            c.prefix = p.into();
            c.key_prefix()
        };
        assert_eq!(prefix("/registry"), "/registry");
        assert_eq!(prefix("/registry/"), "/registry");
        assert_eq!(prefix("registry"), "/registry");
        assert_eq!(prefix("/"), "");
    }
}
