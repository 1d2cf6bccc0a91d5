//! A storage backend whose values are transformed (encrypted) at rest, as kube's etcd3 store
//! applies its resource's transformer to every value it reads and writes.

use std::collections::HashSet;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::ResourceTransformers;
use crate::{Backend, Error, EventSink, KeyValue, Result, StorageEvent, WriteOp};

/// A [`Backend`] that stores the values of configured resources transformed: written with the
/// first provider of their resource, read with whichever provider's prefix they carry, both in
/// what it returns and in the events it passes to the sink (also those another API server
/// wrote to the same etcd).
///
/// A value read with another than the first provider is stale (an older key or provider); the
/// backend remembers those keys ([`Backend::stale`]) so that an update leaving the object as
/// it is still writes it again, with the first provider, as kube's `GuaranteedUpdate` does.
/// Resources without a transformer are stored as they are, and an encrypted value of one is an
/// error, as kube's identity transformer refuses it.
pub struct TransformingBackend {
    inner: Arc<dyn Backend>,
    transformers: Arc<ResourceTransformers>,
    /// Put before the key to make a value's authenticated data (aesgcm): the etcd key prefix,
    /// so that the data is the etcd key as kube's.
    context_prefix: String,
    stale: Arc<Mutex<HashSet<String>>>,
}

/// Why the value under `key` cannot be read or written.
fn transform_error(key: &str, what: &str, e: super::Error) -> Error {
    Error::Backend(format!("unable to transform {what} key {key:?}: {e}"))
}

/// How values of one backend are read, shared with its sink.
#[derive(Clone)]
struct Reader {
    transformers: Arc<ResourceTransformers>,
    context_prefix: String,
    stale: Arc<Mutex<HashSet<String>>>,
}

impl Reader {
    /// The stored `value` under `key` as it was written, noting whether it is stale.
    fn read(&self, key: &str, value: &Bytes) -> Result<Bytes> {
        let (out, stale) = match self.transformers.for_key(key) {
            Some(t) => {
                let context = [self.context_prefix.as_bytes(), key.as_bytes()].concat();
                let (out, stale) = t
                    .transform_from_storage(value, &context)
                    .map_err(|e| transform_error(key, "from storage", e))?;
                (Bytes::from(out), stale)
            }
            // Not configured: stored as is, and never read encrypted (kube's identity check).
            None if super::identity::is_encrypted(value) => {
                return Err(transform_error(
                    key,
                    "from storage",
                    super::Error::EncryptedData,
                ))
            }
            None => (value.clone(), false),
        };
        let mut keys = self.stale.lock();
        if stale {
            keys.insert(key.to_string());
        } else if !keys.is_empty() {
            keys.remove(key);
        }
        Ok(out)
    }

    fn read_kv(&self, kv: KeyValue) -> Result<KeyValue> {
        let value = self.read(&kv.key, &kv.value)?;
        Ok(KeyValue { value, ..kv })
    }
}

impl TransformingBackend {
    /// Transforms the values of `inner` with `transformers`; `context_prefix` goes before each
    /// key in the authenticated data of AEAD providers (the etcd prefix on etcd, nothing on the
    /// embedded store).
    pub fn new(
        inner: Arc<dyn Backend>,
        transformers: Arc<ResourceTransformers>,
        context_prefix: impl Into<String>,
    ) -> Self {
        Self {
            inner,
            transformers,
            context_prefix: context_prefix.into(),
            stale: Arc::default(),
        }
    }

    fn reader(&self) -> Reader {
        Reader {
            transformers: Arc::clone(&self.transformers),
            context_prefix: self.context_prefix.clone(),
            stale: Arc::clone(&self.stale),
        }
    }

    fn to_storage(&self, key: &str, value: Bytes) -> Result<Bytes> {
        match self.transformers.for_key(key) {
            Some(t) => {
                let context = [self.context_prefix.as_bytes(), key.as_bytes()].concat();
                t.transform_to_storage(&value, &context)
                    .map(Bytes::from)
                    .map_err(|e| transform_error(key, "to storage", e))
            }
            None => Ok(value),
        }
    }
}

#[async_trait::async_trait]
impl Backend for TransformingBackend {
    async fn load(&self) -> Result<(Vec<KeyValue>, i64)> {
        let (items, revision) = self.inner.load().await?;
        let reader = self.reader();
        let items = items
            .into_iter()
            .map(|kv| reader.read_kv(kv))
            .collect::<Result<Vec<_>>>()?;
        Ok((items, revision))
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        let reader = self.reader();
        self.inner
            .get(key)
            .await?
            .map(|kv| reader.read_kv(kv))
            .transpose()
    }

    async fn write(
        &self,
        op: WriteOp,
        decoded: Option<serde_json::Value>,
    ) -> Result<(i64, Option<KeyValue>)> {
        let op = match op {
            WriteOp::Create { key, value } => {
                let value = self.to_storage(&key, value)?;
                WriteOp::Create { key, value }
            }
            WriteOp::Update {
                key,
                value,
                expected_revision,
            } => {
                let value = self.to_storage(&key, value)?;
                WriteOp::Update {
                    key,
                    value,
                    expected_revision,
                }
            }
            delete @ WriteOp::Delete { .. } => delete,
        };
        let key = op.key().to_string();
        let (revision, prev) = self.inner.write(op, decoded).await?;
        // The write happened: a previous value that no longer reads is not a reason to fail it.
        let prev = prev.and_then(|kv| match self.reader().read_kv(kv) {
            Ok(kv) => Some(kv),
            Err(e) => {
                tracing::warn!(error = %e, "the value a write replaced cannot be read");
                None
            }
        });
        self.stale.lock().remove(&key);
        Ok((revision, prev))
    }

    fn current_revision(&self) -> i64 {
        self.inner.current_revision()
    }

    fn set_sink(&self, sink: EventSink) {
        let reader = self.reader();
        self.inner.set_sink(Arc::new(move |ev: StorageEvent| {
            let value = match ev.value {
                Some(value) => match reader.read(&ev.key, &value) {
                    Ok(plain) => Some(plain),
                    Err(e) => {
                        // Written by a server whose providers this one lacks; the cache skips
                        // a value that is not JSON, as it skips any other unreadable one.
                        tracing::error!(error = %e, revision = ev.revision, "an event's value cannot be read");
                        Some(value)
                    }
                },
                None => {
                    reader.stale.lock().remove(&ev.key);
                    None
                }
            };
            sink(StorageEvent { value, ..ev });
        }));
    }

    fn stale(&self, key: &str) -> bool {
        self.stale.lock().contains(key)
    }
}

#[cfg(test)]
mod tests {
    use super::super::aes::Cbc;
    use super::super::{GroupResource, PrefixTransformer, PrefixTransformers, Transformer};
    use super::*;
    use crate::memory::MemoryBackend;
    use crate::value::TransformationMetrics;

    fn aescbc(keys: &[(&str, u8)]) -> Arc<ResourceTransformers> {
        let m = TransformationMetrics::default();
        let keys = keys
            .iter()
            .map(|(name, byte)| PrefixTransformer {
                prefix: format!("{name}:").into_bytes(),
                transformer: Arc::new(Cbc::new(&[*byte; 32]).unwrap()),
            })
            .collect();
        let provider = PrefixTransformer {
            prefix: b"k8s:enc:aescbc:v1:".to_vec(),
            transformer: Arc::new(PrefixTransformers::new(keys, "no matching key", m.clone())),
        };
        let t: Arc<dyn Transformer> = Arc::new(PrefixTransformers::new(
            vec![provider],
            "no matching prefix found",
            m,
        ));
        Arc::new(ResourceTransformers::new(vec![(
            GroupResource::parse("secrets"),
            t,
        )]))
    }

    fn create(key: &str, value: &'static str) -> WriteOp {
        WriteOp::Create {
            key: key.into(),
            value: Bytes::from_static(value.as_bytes()),
        }
    }

    #[tokio::test]
    async fn secrets_are_stored_encrypted_and_read_back_plain() {
        let raw = Arc::new(MemoryBackend::new());
        let backend = TransformingBackend::new(raw.clone(), aescbc(&[("key1", 1)]), "");
        let events = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&events);
        backend.set_sink(Arc::new(move |ev| seen.lock().push(ev)));
        backend
            .write(
                create("/core/secrets/ns/s", "{\"data\":\"c2VjcmV0\"}"),
                None,
            )
            .await
            .unwrap();
        backend
            .write(create("/core/configmaps/ns/c", "{\"data\":1}"), None)
            .await
            .unwrap();
        let stored = raw.get("/core/secrets/ns/s").await.unwrap().unwrap();
        assert!(stored.value.starts_with(b"k8s:enc:aescbc:v1:key1:"));
        assert!(!String::from_utf8_lossy(&stored.value).contains("c2VjcmV0"));
        let plain = raw.get("/core/configmaps/ns/c").await.unwrap().unwrap();
        assert_eq!(plain.value, "{\"data\":1}");

        let got = backend.get("/core/secrets/ns/s").await.unwrap().unwrap();
        assert_eq!(got.value, "{\"data\":\"c2VjcmV0\"}");
        let (items, _) = backend.load().await.unwrap();
        assert!(items.iter().all(|kv| kv.value.starts_with(b"{")));
        assert_eq!(
            events.lock()[0].value.as_deref(),
            Some(&b"{\"data\":\"c2VjcmV0\"}"[..])
        );

        let (_, prev) = backend
            .write(
                WriteOp::Delete {
                    key: "/core/secrets/ns/s".into(),
                    expected_revision: Some(got.mod_revision),
                },
                None,
            )
            .await
            .unwrap();
        assert_eq!(prev.unwrap().value, "{\"data\":\"c2VjcmV0\"}");
    }

    #[tokio::test]
    async fn values_of_an_older_key_are_stale_until_written_again() {
        let raw: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let old = TransformingBackend::new(Arc::clone(&raw), aescbc(&[("key1", 1)]), "");
        old.write(create("/core/secrets/ns/s", "{}"), None)
            .await
            .unwrap();
        let rotated =
            TransformingBackend::new(Arc::clone(&raw), aescbc(&[("key2", 2), ("key1", 1)]), "");
        let (items, _) = rotated.load().await.unwrap();
        assert_eq!(items[0].value, "{}");
        assert!(rotated.stale("/core/secrets/ns/s"));
        rotated
            .write(
                WriteOp::Update {
                    key: "/core/secrets/ns/s".into(),
                    value: Bytes::from_static(b"{}"),
                    expected_revision: items[0].mod_revision,
                },
                None,
            )
            .await
            .unwrap();
        assert!(!rotated.stale("/core/secrets/ns/s"));

        let new = TransformingBackend::new(Arc::clone(&raw), aescbc(&[("key2", 2)]), "");
        assert_eq!(new.load().await.unwrap().0[0].value, "{}");
        // A value no provider reads is an error naming its key.
        let gone = TransformingBackend::new(raw, aescbc(&[("key3", 3)]), "");
        let err = gone.load().await.unwrap_err().to_string();
        assert!(
            err.contains("/core/secrets/ns/s") && err.contains("no matching key"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn an_encrypted_value_of_a_resource_without_a_provider_is_refused() {
        let raw: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        raw.write(
            create("/core/configmaps/ns/c", "k8s:enc:aescbc:v1:key1:xyz"),
            None,
        )
        .await
        .unwrap();
        let backend = TransformingBackend::new(raw, aescbc(&[("key1", 1)]), "");
        let err = backend.get("/core/configmaps/ns/c").await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "storage backend failed: unable to transform from storage key \"/core/configmaps/ns/c\": identity transformer tried to read encrypted data"
        );
    }

    #[tokio::test]
    async fn an_event_another_server_encrypted_with_an_unknown_key_reaches_the_sink_unread() {
        let raw: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let other = TransformingBackend::new(Arc::clone(&raw), aescbc(&[("key9", 9)]), "");
        let backend = TransformingBackend::new(Arc::clone(&raw), aescbc(&[("key1", 1)]), "");
        let events = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&events);
        backend.set_sink(Arc::new(move |ev| seen.lock().push(ev)));
        other
            .write(create("/core/secrets/ns/s", "{}"), None)
            .await
            .unwrap();
        // Not JSON: the watch cache logs and skips it rather than serving garbage.
        let value = events.lock()[0].value.clone().unwrap();
        assert!(value.starts_with(b"k8s:enc:aescbc:v1:key9:"));
    }
}
