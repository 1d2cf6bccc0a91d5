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

mod compact;
pub mod testing;
mod watcher;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, DeleteOptions, GetOptions, Identity,
    KvClient, PutOptions, TlsOptions, Txn, TxnOp, TxnOpResponse, TxnResponse,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

pub use super::etcd_config::{
    EtcdConfig, DEFAULT_COMPACTION_INTERVAL, DEFAULT_PREFIX, DEFAULT_REQUEST_TIMEOUT,
};
use super::{Backend, Error, EventSink, KeyValue, Result, WriteOp};

/// Objects read per range request when loading (kube lists etcd in pages too).
const LOAD_PAGE: i64 = 500;
/// Largest gRPC message accepted: a page of large objects (etcd's own limit is 1.5 MiB a value).
const MAX_MESSAGE: usize = 64 * 1024 * 1024;

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

fn read(path: &PathBuf, what: &str) -> Result<Vec<u8>> {
    std::fs::read(path)
        .map_err(|e| Error::Backend(format!("reading {what} {}: {e}", path.display())))
}

/// `message` followed by the causes from `source` that add something, `: `-separated
/// ("tcp connect error: Connection refused (os error 111)").
fn with_causes(message: String, mut source: Option<&(dyn std::error::Error + 'static)>) -> String {
    let mut out = message;
    while let Some(e) = source {
        let s = e.to_string();
        // tonic wraps causes in "transport error", which says nothing more.
        if !out.contains(&s) && s != "transport error" {
            out.push_str(": ");
            out.push_str(&s);
        }
        source = e.source();
    }
    out
}

/// Maps an etcd client error: an unreachable cluster is [`Error::Unavailable`].
fn etcd_error(servers: &[String], err: etcd_client::Error) -> Error {
    use etcd_client::Error as E;
    let servers = servers.join(",");
    match err {
        E::GRpcStatus(status) => {
            let cause = with_causes(
                status.message().to_string(),
                std::error::Error::source(&status),
            );
            let message = format!("etcd at {servers}: {cause}");
            match status.code() {
                tonic::Code::Unavailable | tonic::Code::Cancelled | tonic::Code::Unknown => {
                    Error::Unavailable(message)
                }
                tonic::Code::DeadlineExceeded => Error::Timeout(message),
                _ => Error::Backend(message),
            }
        }
        E::TransportError(e) => Error::Unavailable(format!(
            "etcd at {servers}: {}",
            with_causes(e.to_string(), std::error::Error::source(&e))
        )),
        E::IoError(e) => Error::Unavailable(format!(
            "etcd at {servers}: {}",
            with_causes(e.to_string(), std::error::Error::source(&e))
        )),
        other => Error::Backend(format!("etcd at {servers}: {other}")),
    }
}

impl EtcdBackend {
    /// Connects to `config.servers` (lazily: an unreachable cluster fails the first call, not
    /// this one, so a server can start while etcd comes up).
    pub async fn connect(config: EtcdConfig) -> Result<Self> {
        if config.servers.is_empty() {
            return Err(Error::Backend("no etcd servers given".into()));
        }
        let mut options = ConnectOptions::new()
            .with_connect_timeout(config.request_timeout.min(Duration::from_secs(5)))
            .with_timeout(config.request_timeout)
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
            .with_keep_alive_while_idle(true);
        let https = config.servers.iter().any(|s| s.starts_with("https://"));
        if https || config.ca_file.is_some() || config.cert_file.is_some() {
            let mut tls = TlsOptions::new();
            if let Some(ca) = &config.ca_file {
                tls = tls.ca_certificate(Certificate::from_pem(read(ca, "--etcd-cafile")?));
            }
            match (&config.cert_file, &config.key_file) {
                (Some(cert), Some(key)) => {
                    tls = tls.identity(Identity::from_pem(
                        read(cert, "--etcd-certfile")?,
                        read(key, "--etcd-keyfile")?,
                    ));
                }
                (None, None) => {}
                _ => {
                    return Err(Error::Backend(
                        "--etcd-certfile and --etcd-keyfile go together".into(),
                    ))
                }
            }
            options = options.with_tls(tls);
        }
        let client = Client::connect(&config.servers, Some(options))
            .await
            .map_err(|e| etcd_error(&config.servers, e))?;
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

    fn kv(&self) -> KvClient {
        self.client
            .kv_client()
            .max_decoding_message_size(MAX_MESSAGE)
    }

    fn etcd_key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// Runs one etcd call with the request timeout.
    async fn call<T>(
        &self,
        what: &str,
        fut: impl Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T> {
        match tokio::time::timeout(self.config.request_timeout, fut).await {
            Ok(r) => r.map_err(|e| etcd_error(&self.config.servers, e)),
            Err(_) => Err(Error::Timeout(format!(
                "etcd at {} did not answer {what} within {:?}",
                self.config.servers.join(","),
                self.config.request_timeout
            ))),
        }
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

    fn kv_of(&self, kv: &etcd_client::KeyValue) -> Option<KeyValue> {
        kv_from(&self.prefix, kv)
    }

    /// The key's current revision from the `else` branch of a failed transaction.
    fn current_in_else(resp: &TxnResponse) -> Option<i64> {
        resp.op_responses().into_iter().find_map(|r| match r {
            TxnOpResponse::Get(g) => g.kvs().first().map(|kv| kv.mod_revision()),
            _ => None,
        })
    }

    async fn txn(&self, op: &WriteOp) -> Result<(i64, Option<KeyValue>)> {
        let key = self.etcd_key(op.key());
        let txn = match op {
            WriteOp::Create { value, .. } => Txn::new()
                .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(key.clone(), value.to_vec(), None)])
                .or_else([TxnOp::get(key.clone(), None)]),
            WriteOp::Update {
                value,
                expected_revision,
                ..
            } => Txn::new()
                .when([Compare::mod_revision(
                    key.clone(),
                    CompareOp::Equal,
                    *expected_revision,
                )])
                .and_then([TxnOp::put(
                    key.clone(),
                    value.to_vec(),
                    Some(PutOptions::new().with_prev_key()),
                )])
                .or_else([TxnOp::get(key.clone(), None)]),
            WriteOp::Delete {
                expected_revision, ..
            } => {
                let cmp = match expected_revision {
                    Some(rev) => Compare::mod_revision(key.clone(), CompareOp::Equal, *rev),
                    None => Compare::create_revision(key.clone(), CompareOp::Greater, 0),
                };
                Txn::new()
                    .when([cmp])
                    .and_then([TxnOp::delete(
                        key.clone(),
                        Some(DeleteOptions::new().with_prev_key()),
                    )])
                    .or_else([TxnOp::get(key.clone(), None)])
            }
        };
        let mut kv = self.kv();
        let resp = self.call("a write", kv.txn(txn)).await?;
        let revision = resp
            .header()
            .map(|h| h.revision())
            .ok_or_else(|| Error::Backend("etcd answered without a header".into()))?;
        if !resp.succeeded() {
            let current = Self::current_in_else(&resp);
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
        let prev = resp.op_responses().into_iter().find_map(|r| match r {
            TxnOpResponse::Put(p) => p.prev_key().and_then(|kv| self.kv_of(kv)),
            TxnOpResponse::Delete(d) => d.prev_kvs().first().and_then(|kv| self.kv_of(kv)),
            _ => None,
        });
        Ok((revision, prev))
    }

    /// Every value under the prefix, read at one revision in pages, and that revision.
    async fn range_all(&self) -> Result<(Vec<KeyValue>, i64)> {
        load(&self.kv(), &self.prefix, &self.config, 0).await
    }
}

/// Our key and value of an etcd key-value under `prefix`; `None` (logged) for a foreign key.
fn kv_from(prefix: &str, kv: &etcd_client::KeyValue) -> Option<KeyValue> {
    let key = match kv.key_str() {
        Ok(k) => k,
        Err(e) => {
            tracing::error!(error = %e, "skipping an etcd key that is not UTF-8");
            return None;
        }
    };
    let key = key.strip_prefix(prefix)?;
    Some(KeyValue {
        key: key.to_string(),
        value: Bytes::copy_from_slice(kv.value()),
        mod_revision: kv.mod_revision(),
    })
}

/// The first key after every key that starts with `prefix` (etcd's `GetPrefixRangeEnd`).
fn range_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// Reads everything under `prefix/` at `revision` (0: the current one), in pages of
/// [`LOAD_PAGE`]; returns the values and the revision read at.
async fn load(
    kv: &KvClient,
    prefix: &str,
    config: &EtcdConfig,
    revision: i64,
) -> Result<(Vec<KeyValue>, i64)> {
    let start = format!("{prefix}/").into_bytes();
    let end = range_end(&start);
    let mut from = start;
    let mut revision = revision;
    let mut items = Vec::new();
    loop {
        let mut options = GetOptions::new()
            .with_range(end.clone())
            .with_limit(LOAD_PAGE);
        if revision > 0 {
            options = options.with_revision(revision);
        }
        let mut kv = kv.clone();
        let resp =
            match tokio::time::timeout(config.request_timeout, kv.get(from.clone(), Some(options)))
                .await
            {
                Ok(r) => r.map_err(|e| etcd_error(&config.servers, e))?,
                Err(_) => {
                    return Err(Error::Timeout(format!(
                        "etcd at {} did not answer a range read within {:?}",
                        config.servers.join(","),
                        config.request_timeout
                    )))
                }
            };
        if revision == 0 {
            revision = resp.header().map(|h| h.revision()).unwrap_or_default();
        }
        let kvs = resp.kvs();
        items.extend(kvs.iter().filter_map(|kv| kv_from(prefix, kv)));
        match kvs.last() {
            Some(last) if resp.more() => {
                from = last.key().to_vec();
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
        let (items, revision) = self.range_all().await?;
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
        let mut kv = self.kv();
        let resp = self
            .call("a read", kv.get(self.etcd_key(key), None))
            .await?;
        Ok(resp.kvs().first().and_then(|kv| self.kv_of(kv)))
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
    fn range_end_is_the_next_prefix() {
        assert_eq!(range_end(b"/registry/"), b"/registry0".to_vec());
        assert_eq!(range_end(b"a\xff"), b"b".to_vec());
        assert_eq!(range_end(b"\xff"), vec![0]);
    }

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
