//! In-memory storage backend for tests: a sorted map and a revision counter behind one lock.

use std::collections::BTreeMap;

use bytes::Bytes;
use parking_lot::Mutex;

use super::{check, Backend, EventSink, KeyValue, Result, StorageEvent, WriteOp};

/// A [`Backend`] that keeps everything in memory; nothing survives the process.
#[derive(Default)]
pub struct MemoryBackend {
    inner: Mutex<Inner>,
    sink: Mutex<Option<EventSink>>,
}

#[derive(Default)]
struct Inner {
    revision: i64,
    data: BTreeMap<String, (i64, Bytes)>,
}

impl MemoryBackend {
    /// An empty store at revision 0.
    pub fn new() -> Self {
        Self::default()
    }
}

#[async_trait::async_trait]
impl Backend for MemoryBackend {
    async fn load(&self) -> Result<(Vec<KeyValue>, i64)> {
        let inner = self.inner.lock();
        let items = inner
            .data
            .iter()
            .map(|(k, (rev, v))| KeyValue {
                key: k.clone(),
                value: v.clone(),
                mod_revision: *rev,
            })
            .collect();
        Ok((items, inner.revision))
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        let inner = self.inner.lock();
        Ok(inner.data.get(key).map(|(rev, v)| KeyValue {
            key: key.to_string(),
            value: v.clone(),
            mod_revision: *rev,
        }))
    }

    async fn write(
        &self,
        op: WriteOp,
        decoded: Option<serde_json::Value>,
    ) -> Result<(i64, Option<KeyValue>)> {
        let sink = self.sink.lock().clone();
        // The lock is held while the sink runs so that events reach it in revision order.
        let mut inner = self.inner.lock();
        let current = inner.data.get(op.key()).map(|(rev, _)| *rev);
        check(&op, current)?;
        inner.revision += 1;
        let revision = inner.revision;
        let (key, value) = match op {
            WriteOp::Create { key, value } | WriteOp::Update { key, value, .. } => {
                (key, Some(value))
            }
            WriteOp::Delete { key, .. } => (key, None),
        };
        let prev = match &value {
            Some(v) => inner.data.insert(key.clone(), (revision, v.clone())),
            None => inner.data.remove(&key),
        };
        let prev = prev.map(|(rev, v)| KeyValue {
            key: key.clone(),
            value: v,
            mod_revision: rev,
        });
        if let Some(sink) = sink {
            let decoded = if value.is_some() { decoded } else { None };
            sink(StorageEvent {
                key,
                revision,
                value,
                decoded,
            });
        }
        Ok((revision, prev))
    }

    fn current_revision(&self) -> i64 {
        self.inner.lock().revision
    }

    fn set_sink(&self, sink: EventSink) {
        *self.sink.lock() = Some(sink);
    }
}
