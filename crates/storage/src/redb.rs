//! Durable storage backend on redb with group commit.
//!
//! One writer thread owns all write transactions. It takes every write queued at that moment
//! (up to [`MAX_BATCH`]), checks and applies them in one transaction, commits it with
//! `Durability::Immediate` (fsync), and only then reports the events and acknowledges the
//! writers. Concurrent writers therefore share one fsync, and an acknowledged write survives a
//! crash. Each write keeps its own precondition check and its own result: a write that fails its
//! check takes no revision and leaves the others of its batch alone, and a transaction that fails
//! as a whole is retried one write at a time. Revisions are stored with each value and the last
//! one in a meta table, so a restart continues the sequence.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use tokio::sync::{mpsc, oneshot};

use super::{check, Backend, Error, EventSink, KeyValue, Result, StorageEvent, WriteOp};

/// Key → 8-byte little-endian mod revision followed by the JSON value.
const OBJECTS: TableDefinition<&str, &[u8]> = TableDefinition::new("objects");
/// `"revision"` → last committed revision.
const META: TableDefinition<&str, i64> = TableDefinition::new("meta");
const REVISION_KEY: &str = "revision";

/// Most writes committed in one transaction.
pub const MAX_BATCH: usize = 1024;

type Reply = oneshot::Sender<Result<(i64, Option<KeyValue>)>>;
/// One queued write: the op, its pre-decoded value, and where to answer.
type Queued = (WriteOp, Option<serde_json::Value>, Reply);

/// A [`Backend`] stored in one redb file; every acknowledged write is on disk.
pub struct RedbBackend {
    db: Arc<Database>,
    writes: mpsc::Sender<Queued>,
    revision: Arc<Mutex<i64>>,
    sink: Arc<Mutex<Option<EventSink>>>,
    commits: Arc<AtomicU64>,
}

fn backend_err(e: impl std::fmt::Display) -> Error {
    Error::Backend(e.to_string())
}

fn encode(revision: i64, value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + value.len());
    out.extend_from_slice(&revision.to_le_bytes());
    out.extend_from_slice(value);
    out
}

fn decode(key: &str, raw: &[u8]) -> Result<KeyValue> {
    if raw.len() < 8 {
        return Err(Error::Backend(format!("corrupt value under {key}")));
    }
    let (rev, value) = raw.split_at(8);
    let mut buf = [0u8; 8];
    buf.copy_from_slice(rev);
    Ok(KeyValue {
        key: key.to_string(),
        value: Bytes::copy_from_slice(value),
        mod_revision: i64::from_le_bytes(buf),
    })
}

/// redb's page cache. Reads are served by the watch cache, which holds every object; the store
/// is read back whole only at start and otherwise written, so redb's default (up to 1 GiB, which
/// held 85 MiB with 10,000 pods) only duplicated what the watch cache keeps. Pages it evicts are
/// read back through the operating system's file cache. Half of it at most holds a commit's
/// dirty pages before they are written out early (they still reach the disk before the commit's
/// sync); 4 MiB holds a batch of about 500 pod writes.
const CACHE_BYTES: usize = 4 * 1024 * 1024;

impl RedbBackend {
    /// Opens (or creates) the database file at `path` and starts the writer thread.
    pub fn open(path: &Path) -> Result<Self> {
        let db = Database::builder()
            .set_cache_size(CACHE_BYTES)
            .create(path)
            .map_err(backend_err)?;
        let revision = {
            let txn = db.begin_write().map_err(backend_err)?;
            let rev = {
                txn.open_table(OBJECTS).map_err(backend_err)?;
                let meta = txn.open_table(META).map_err(backend_err)?;
                let rev = meta
                    .get(REVISION_KEY)
                    .map_err(backend_err)?
                    .map(|g| g.value());
                rev.unwrap_or(0)
            };
            txn.commit().map_err(backend_err)?;
            rev
        };
        let db = Arc::new(db);
        let revision = Arc::new(Mutex::new(revision));
        let sink: Arc<Mutex<Option<EventSink>>> = Arc::new(Mutex::new(None));
        let (tx, rx) = mpsc::channel(MAX_BATCH * 4);
        let commits = Arc::new(AtomicU64::new(0));
        let writer = Writer {
            db: Arc::clone(&db),
            revision: Arc::clone(&revision),
            sink: Arc::clone(&sink),
            commits: Arc::clone(&commits),
        };
        std::thread::Builder::new()
            .name("redb-writer".into())
            .spawn(move || writer.run(rx))
            .map_err(backend_err)?;
        Ok(Self {
            db,
            writes: tx,
            revision,
            sink,
            commits,
        })
    }

    /// How many write transactions this backend committed: with concurrent writers, fewer than
    /// the writes, as each commit carries every write queued while the one before it was synced.
    pub fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }
}

struct Writer {
    db: Arc<Database>,
    revision: Arc<Mutex<i64>>,
    sink: Arc<Mutex<Option<EventSink>>>,
    commits: Arc<AtomicU64>,
}

/// A batch applied in one transaction: each op's result, the events of those that wrote (with
/// the index of their op in the batch), and the last revision given out.
struct Applied {
    results: Vec<Result<(i64, Option<KeyValue>)>>,
    events: Vec<(usize, StorageEvent)>,
    revision: i64,
}

impl Writer {
    /// Runs until every sender is gone.
    fn run(self, mut rx: mpsc::Receiver<Queued>) {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        while let Some(first) = rx.blocking_recv() {
            batch.push(first);
            // Whatever queued up while the last commit was on its way to disk goes in this one.
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            self.commit_batch(&mut batch);
        }
    }

    /// Commits `batch` in one durable transaction, then publishes its events in revision order
    /// and answers each writer with its own result. When the transaction fails as a whole and
    /// holds more than one write, each write is retried in a transaction of its own, so that a
    /// write the store cannot take fails alone.
    fn commit_batch(&self, batch: &mut Vec<Queued>) {
        let start_rev = *self.revision.lock();
        match self.apply(batch, start_rev) {
            Ok(applied) => {
                self.commits.fetch_add(1, Ordering::Relaxed);
                *self.revision.lock() = applied.revision;
                let sink = self.sink.lock().clone();
                if let Some(sink) = sink {
                    for (index, mut ev) in applied.events {
                        if ev.value.is_some() {
                            ev.decoded = batch[index].1.take();
                        }
                        sink(ev);
                    }
                }
                for ((_, _, reply), result) in batch.drain(..).zip(applied.results) {
                    let _ = reply.send(result);
                }
            }
            Err(e) if batch.len() > 1 => {
                // Retried alone, each write gets its own answer.
                tracing::warn!(error = %e, writes = batch.len(), "storage batch commit failed");
                for queued in batch.drain(..) {
                    self.commit_batch(&mut vec![queued]);
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "storage commit failed");
                for (_, _, reply) in batch.drain(..) {
                    let _ = reply.send(Err(Error::Backend(e.to_string())));
                }
            }
        }
    }

    /// Checks and applies every op of `batch` in one write transaction and commits it with
    /// fsync. Each op is checked against the state the ops before it left; one that fails its
    /// precondition gets its error and takes no revision.
    fn apply(&self, batch: &[Queued], start_rev: i64) -> Result<Applied, redb::Error> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(Durability::Immediate)?;
        let mut results = Vec::with_capacity(batch.len());
        let mut events = Vec::with_capacity(batch.len());
        let mut rev = start_rev;
        {
            let mut table = txn.open_table(OBJECTS)?;
            for (index, (op, _, _)) in batch.iter().enumerate() {
                let key = op.key();
                let prev = match table.get(key)? {
                    Some(raw) => match decode(key, raw.value()) {
                        Ok(kv) => Some(kv),
                        Err(e) => {
                            results.push(Err(e));
                            continue;
                        }
                    },
                    None => None,
                };
                if let Err(e) = check(op, prev.as_ref().map(|kv| kv.mod_revision)) {
                    results.push(Err(e));
                    continue;
                }
                rev += 1;
                let value = match op {
                    WriteOp::Create { value, .. } | WriteOp::Update { value, .. } => {
                        table.insert(key, encode(rev, value).as_slice())?;
                        Some(value.clone())
                    }
                    WriteOp::Delete { .. } => {
                        table.remove(key)?;
                        None
                    }
                };
                events.push((
                    index,
                    StorageEvent {
                        key: key.to_string(),
                        revision: rev,
                        value,
                        decoded: None,
                    },
                ));
                results.push(Ok((rev, prev)));
            }
            let mut meta = txn.open_table(META)?;
            meta.insert(REVISION_KEY, rev)?;
        }
        txn.commit()?;
        Ok(Applied {
            results,
            events,
            revision: rev,
        })
    }
}

#[async_trait::async_trait]
impl Backend for RedbBackend {
    async fn load(&self) -> Result<(Vec<KeyValue>, i64)> {
        let db = Arc::clone(&self.db);
        tokio::task::spawn_blocking(move || -> Result<(Vec<KeyValue>, i64), redb::Error> {
            let txn = db.begin_read()?;
            let meta = txn.open_table(META)?;
            let rev = meta.get(REVISION_KEY)?.map(|g| g.value()).unwrap_or(0);
            let table = txn.open_table(OBJECTS)?;
            let mut items = Vec::new();
            for entry in table.iter()? {
                let (k, v) = entry?;
                match decode(k.value(), v.value()) {
                    Ok(kv) => items.push(kv),
                    Err(e) => tracing::error!(error = %e, "skipping unreadable stored value"),
                }
            }
            Ok((items, rev))
        })
        .await
        .map_err(backend_err)?
        .map_err(backend_err)
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        let txn = self.db.begin_read().map_err(backend_err)?;
        let table = txn.open_table(OBJECTS).map_err(backend_err)?;
        let raw = table.get(key).map_err(backend_err)?;
        raw.map(|raw| decode(key, raw.value())).transpose()
    }

    async fn write(
        &self,
        op: WriteOp,
        decoded: Option<serde_json::Value>,
    ) -> Result<(i64, Option<KeyValue>)> {
        let (tx, rx) = oneshot::channel();
        self.writes
            .send((op, decoded, tx))
            .await
            .map_err(|_| Error::Backend("storage writer stopped".into()))?;
        rx.await
            .map_err(|_| Error::Backend("storage writer stopped".into()))?
    }

    fn current_revision(&self) -> i64 {
        *self.revision.lock()
    }

    fn set_sink(&self, sink: EventSink) {
        *self.sink.lock() = Some(sink);
    }
}
