//! The object store the handlers use: a storage backend behind the watch cache.
//!
//! Reads (get, list, watch) are served from the [`WatchCache`]; writes go to the backend, which
//! feeds every committed write back into the cache before acknowledging it, so a client reads its
//! own writes.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use crate as storage;
use crate::metrics::StorageRequestMetrics;
use crate::object;
use crate::watch_cache::{CachedObject, FieldsLookup, WatchCache};
use crate::{Backend, WriteOp};

/// Storage backend + watch cache.
#[derive(Clone)]
pub struct Store {
    backend: Arc<dyn Backend>,
    cache: Arc<WatchCache>,
    requests: StorageRequestMetrics,
}

impl Store {
    /// Loads everything from `backend` into a new cache and connects the two.
    pub async fn new(backend: Arc<dyn Backend>, ring_capacity: usize) -> storage::Result<Self> {
        Self::with_fields(backend, ring_capacity, None).await
    }

    /// As [`Store::new`], with a cache that keeps each kind's selectable fields (see
    /// [`WatchCache::with_fields`]).
    pub async fn with_fields(
        backend: Arc<dyn Backend>,
        ring_capacity: usize,
        fields: Option<FieldsLookup>,
    ) -> storage::Result<Self> {
        let (items, revision) = backend.load().await?;
        let cache = Arc::new(WatchCache::with_fields(
            items,
            revision,
            ring_capacity,
            fields,
        ));
        let sink_cache = Arc::clone(&cache);
        backend.set_sink(Arc::new(move |ev| sink_cache.apply(ev)));
        Ok(Self {
            backend,
            cache,
            requests: StorageRequestMetrics::default(),
        })
    }

    /// The requests this store made to its backend (`etcd_request_duration_seconds`).
    pub fn request_metrics(&self) -> &StorageRequestMetrics {
        &self.requests
    }

    /// Runs one backend request of `operation` on `key`, recording it.
    async fn timed<T>(
        &self,
        operation: &'static str,
        key: &str,
        request: impl std::future::Future<Output = storage::Result<T>>,
    ) -> storage::Result<T> {
        let started = std::time::Instant::now();
        let result = request.await;
        self.requests
            .record(operation, key, started.elapsed(), result.is_err());
        result
    }

    /// The watch cache (reads, watches).
    pub fn cache(&self) -> &WatchCache {
        &self.cache
    }

    /// Whether the durable store answers a read (the `etcd-0` component status).
    pub async fn check_health(&self) -> storage::Result<()> {
        self.backend.get("/healthz").await.map(|_| ())
    }

    /// Whether the object under `key` is stored in a form that an update should write again
    /// even when it changes nothing (encrypted with a key that is being rotated away from).
    pub fn is_stale(&self, key: &str) -> bool {
        self.backend.stale(key)
    }

    /// The object under `key`.
    pub fn get(&self, key: &str) -> Option<Arc<CachedObject>> {
        self.cache.get(key)
    }

    /// The object under `key` as the backend holds it now, with its revision: what a guaranteed
    /// update reads after a conflict, when the cache may not have caught up with another API
    /// server's write yet.
    pub async fn read_through(&self, key: &str) -> storage::Result<Option<(Value, i64)>> {
        let Some(kv) = self.timed("get", key, self.backend.get(key)).await? else {
            return Ok(None);
        };
        let value = serde_json::from_slice(&kv.value)
            .map_err(|e| storage::Error::Backend(format!("decode {key}: {e}")))?;
        Ok(Some((value, kv.mod_revision)))
    }

    fn encode(obj: &mut Value) -> storage::Result<Bytes> {
        // The revision is the resourceVersion; it is not part of the stored bytes.
        object::remove_meta(obj, "resourceVersion");
        serde_json::to_vec(obj)
            .map(Bytes::from)
            .map_err(|e| storage::Error::Backend(format!("encode: {e}")))
    }

    /// The cached object written at `revision` under `key` (decoded from `bytes` if a later
    /// write already replaced it in the cache).
    fn written(
        &self,
        key: &str,
        revision: i64,
        bytes: &Bytes,
    ) -> storage::Result<Arc<CachedObject>> {
        if let Some(obj) = self.cache.get(key).filter(|o| o.revision == revision) {
            return Ok(obj);
        }
        let value = serde_json::from_slice(bytes)
            .map_err(|e| storage::Error::Backend(format!("decode: {e}")))?;
        Ok(Arc::new(self.cache.object(key, value, revision)))
    }

    /// Creates `obj` under `key`; returns it with its resourceVersion.
    pub async fn create(&self, key: &str, mut obj: Value) -> storage::Result<Arc<CachedObject>> {
        let value = Self::encode(&mut obj)?;
        let write = self.backend.write(
            WriteOp::Create {
                key: key.to_string(),
                value: value.clone(),
            },
            Some(obj),
        );
        let (rev, _) = self.timed("create", key, write).await?;
        self.written(key, rev, &value)
    }

    /// Replaces the object under `key` if it is still at `expected_revision`.
    pub async fn update(
        &self,
        key: &str,
        mut obj: Value,
        expected_revision: i64,
    ) -> storage::Result<Arc<CachedObject>> {
        let value = Self::encode(&mut obj)?;
        let write = self.backend.write(
            WriteOp::Update {
                key: key.to_string(),
                value: value.clone(),
                expected_revision,
            },
            Some(obj),
        );
        let (rev, _) = self.timed("update", key, write).await?;
        self.written(key, rev, &value)
    }

    /// Removes the object under `key` (if still at `expected_revision`, when given); returns its
    /// last state with the delete's resourceVersion.
    pub async fn delete(
        &self,
        key: &str,
        expected_revision: Option<i64>,
    ) -> storage::Result<Value> {
        let write = self.backend.write(
            WriteOp::Delete {
                key: key.to_string(),
                expected_revision,
            },
            None,
        );
        let (rev, prev) = self.timed("delete", key, write).await?;
        let mut last = prev
            .and_then(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
            .unwrap_or(Value::Null);
        if last.is_object() {
            object::set_resource_version(&mut last, rev);
        }
        Ok(last)
    }
}
