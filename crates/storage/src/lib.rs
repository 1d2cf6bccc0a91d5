//! Backend-agnostic object storage: keys, revisions, compare-and-swap writes and ordered events.
//!
//! Mirrors `staging/src/k8s.io/apiserver/pkg/storage` (the `storage.Interface` that etcd3 implements):
//! objects are JSON bytes under keys `/<group or core>/<plural>/<namespace>/<name>`, every write gets
//! the next value of one global monotonic revision, and that revision is the object's
//! `resourceVersion`. Backends report every committed write, in revision order, to an [`EventSink`]
//! before acknowledging it, so a cache fed by the sink reflects each write its writer has seen.

pub mod cached_object;
pub mod conformance;
pub mod etcd;
mod etcd_config;
pub use etcd_config::{
    EtcdConfig, DEFAULT_COMPACTION_INTERVAL, DEFAULT_PREFIX, DEFAULT_REQUEST_TIMEOUT,
};
pub mod memory;
pub mod metrics;
pub mod object;
pub mod redb;
pub mod store;
pub mod value;
pub mod watch_cache;

use std::sync::Arc;

use bytes::Bytes;

/// Errors from a storage backend.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A create found the key taken.
    #[error("key {0} already exists")]
    AlreadyExists(String),
    /// The key does not exist.
    #[error("key {0} not found")]
    NotFound(String),
    /// A compare-and-swap found another revision than expected.
    #[error("key {key} is at revision {actual}, expected {expected}")]
    Conflict {
        /// Key written.
        key: String,
        /// Revision the writer expected.
        expected: i64,
        /// Revision found.
        actual: i64,
    },
    /// The backend failed (disk, database); the write may not have happened.
    #[error("storage backend failed: {0}")]
    Backend(String),
    /// The backend cannot be reached (etcd down or partitioned); the write may not have happened.
    #[error("storage is unavailable: {0}")]
    Unavailable(String),
    /// The backend did not answer in time; the write may or may not have happened.
    #[error("storage did not answer in time: {0}")]
    Timeout(String),
}

/// Result of storage calls.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One stored value with the revision that last modified it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    /// Storage key.
    pub key: String,
    /// Stored JSON bytes.
    pub value: Bytes,
    /// Revision of the last write to this key.
    pub mod_revision: i64,
}

/// One write, checked and applied atomically.
#[derive(Clone, Debug)]
pub enum WriteOp {
    /// Store `value` under `key`; fails with [`Error::AlreadyExists`] if the key exists.
    Create {
        /// Key to create.
        key: String,
        /// Value to store.
        value: Bytes,
    },
    /// Replace the value of `key` if its revision is `expected_revision`.
    Update {
        /// Key to update.
        key: String,
        /// New value.
        value: Bytes,
        /// Revision the key must be at ([`Error::Conflict`] otherwise).
        expected_revision: i64,
    },
    /// Remove `key`, if its revision is `expected_revision` when given.
    Delete {
        /// Key to remove.
        key: String,
        /// Revision the key must be at, if any.
        expected_revision: Option<i64>,
    },
}

impl WriteOp {
    /// The key this op writes.
    pub fn key(&self) -> &str {
        match self {
            WriteOp::Create { key, .. }
            | WriteOp::Update { key, .. }
            | WriteOp::Delete { key, .. } => key,
        }
    }
}

/// A committed change, as reported to the [`EventSink`].
#[derive(Clone, Debug)]
pub struct StorageEvent {
    /// Key written.
    pub key: String,
    /// Revision of the write.
    pub revision: i64,
    /// New value, or `None` for a delete.
    pub value: Option<Bytes>,
    /// The new value already decoded by the writer, when it passed one to [`Backend::write`]
    /// (saves the receiver a parse; always equal to `value`).
    pub decoded: Option<serde_json::Value>,
}

/// Receives every committed write in revision order, before the writer is acknowledged.
///
/// Called from the backend's write path: it must be quick and must not call back into the backend.
pub type EventSink = Arc<dyn Fn(StorageEvent) + Send + Sync>;

/// A storage backend (`storage.Interface` in kube-apiserver).
///
/// Contract: revisions are global, strictly increasing and never reused, also across restarts;
/// every committed write is passed to the sink exactly once, in revision order, before the
/// write's future resolves.
#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Every stored value and the current revision, read at one revision (used to fill caches).
    async fn load(&self) -> Result<(Vec<KeyValue>, i64)>;
    /// The value of `key`.
    async fn get(&self, key: &str) -> Result<Option<KeyValue>>;
    /// Applies one write; returns its revision and, for updates and deletes, the previous value.
    /// `decoded` is the value of a create or update already decoded as JSON, handed to the sink
    /// with the event.
    async fn write(
        &self,
        op: WriteOp,
        decoded: Option<serde_json::Value>,
    ) -> Result<(i64, Option<KeyValue>)>;
    /// The revision of the last committed write.
    fn current_revision(&self) -> i64;
    /// Installs the sink that receives committed writes; call once, before the first write.
    fn set_sink(&self, sink: EventSink);
    /// Whether the value under `key` was last read in a form that should be written again even
    /// if unchanged (encrypted with a key or provider that no longer writes; see
    /// [`value::TransformingBackend`]).
    fn stale(&self, _key: &str) -> bool {
        false
    }
}

/// Checks `op` against the current value of its key (shared by backends that apply writes
/// themselves).
pub(crate) fn check(op: &WriteOp, current: Option<i64>) -> Result<()> {
    match (op, current) {
        (WriteOp::Create { key, .. }, Some(_)) => Err(Error::AlreadyExists(key.clone())),
        (WriteOp::Create { .. }, None) => Ok(()),
        (WriteOp::Update { key, .. }, None) | (WriteOp::Delete { key, .. }, None) => {
            Err(Error::NotFound(key.clone()))
        }
        (
            WriteOp::Update {
                key,
                expected_revision,
                ..
            },
            Some(actual),
        )
        | (
            WriteOp::Delete {
                key,
                expected_revision: Some(expected_revision),
            },
            Some(actual),
        ) if *expected_revision != actual => Err(Error::Conflict {
            key: key.clone(),
            expected: *expected_revision,
            actual,
        }),
        _ => Ok(()),
    }
}
