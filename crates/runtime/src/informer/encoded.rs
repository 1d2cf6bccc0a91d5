//! Cached objects held as their JSON bytes and decoded on read: the compact form of pods.
//!
//! A decoded `k8s_openapi` Pod takes about 10 KB, most of it the inline size of `Container` and
//! `Volume` (every optional part held in place, not behind a pointer), while its JSON without
//! managedFields is about 1.3 KB. A controller's cache holds every pod of the cluster for its whole
//! life and reads few of them at a time, so the [`Store`](super::Store) keeps each pod as the JSON
//! of the object the informer prepared (after its transform) and decodes it when read. Reads still
//! return an `Arc<K>`, as client-go's listers return pointers into the cache, so no consumer
//! changes: the decoded object lives as long as its callers hold it, and the store keeps no second
//! copy (nor a `Weak`, which would pin the object's inline size). Index values are computed when
//! an object is inserted, so indexed reads decode only the objects they return.
//!
//! Measured with `tests/memory.rs`, per cached pod of `rkcm up`'s bare-pod shape: 1.7 KB listed
//! and 1.4 to 2.0 KB watched (JSON, shared key, built-in indices), against 10.3 KB and 9.9 KB
//! decoded; a label index ([`LABEL_INDEX`](super::LABEL_INDEX)) adds about 30 bytes for two
//! labels. The price is a decode per object read: about 120 µs per such pod in a debug build, a
//! tenth of that or less in a release build.
//!
//! Objects are mostly read right after they are written: an event's handlers queue a sync that
//! reads the object, and the ReplicaSet (or node, or Service) it belongs to, within moments. So
//! an insert, which has the decoded object in hand, keeps it beside the bytes
//! ([`Entry::Recent`]) while the write is among the store's [`RECENT_WRITES`] latest inserts and
//! younger than [`RECENT_AGE`]; reads return that very `Arc` instead of decoding. The age is
//! checked on every insert and by the informer every [`RECENT_AGE`] (reads, the hot path, do not
//! look at the clock), so an idle store holds bytes only within twice that. Each write has a
//! sequence number: a write leaving the bounds drops the copy only if its key was not written
//! again since. A relist ([`Store::replace`](super::Store::replace)) keeps no copies: it writes
//! every object at once, in no order that says which will be read. The copies add up to the
//! decoded size of the objects they hold: about 12 MB per pod store at most (11.7 KB measured per
//! recent pod of the shape above, the prepared object is not shrunk, × 1,024), for the seconds
//! writes keep coming. So:
//! - `get`, `by_index`, `claimable` and `list_by_labels` (with the label index) decode only what
//!   they return that was not written recently; `index_keys` and `has_index_value` decode
//!   nothing. Syncs read through those: the claim of a ReplicaSet, Job, DaemonSet or
//!   StatefulSet, the pods of a Service or a PodDisruptionBudget, PodGC's candidates, a node's
//!   pods.
//! - `list` and `list_by_namespace` decode everything they return that was not written recently
//!   and hold it until dropped; keep them off per-object paths. A resync decodes every such
//!   object, as does a handler added late.
//! - An insert decodes the object it replaces, under the write lock, to move its index values and
//!   hand it to handlers as `old`, unless the entry still holds it as a recent write, or the bytes
//!   are unchanged (a relist, a resent event), when the new object stands for the old.
//! - Bytes (an `Arc<[u8]>`) or the recent copy are copied out of the lock, decoded after it is
//!   released; copies dropped by the bounds are freed after it too.
//! - An object read twice may come back as two `Arc`s with equal content (or as the same one,
//!   while recent); nothing in the controllers compares cached objects by pointer across reads.
//!
//! Small or rare types keep the decoded form, which costs nothing to read: only pods are encoded,
//! chosen by type id as [`super::compact::shrink`] does, unless a store asks for it
//! ([`Store::encoded`](super::Store::encoded)). Bytes the store wrote always decode; if they ever
//! do not, reads log and skip the object, and writes still keep the indices exact.
//!
//! Bytes are JSON rather than a binary format because `k8s_openapi` types skip absent fields and
//! need a self-describing format; serde_json is already at hand, and the figures above leave
//! little to gain.

use std::any::{Any, TypeId};
use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::ObjectKey;

/// Why an object could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CodecError {
    /// The JSON could not be written or read.
    #[error("invalid object JSON")]
    Json(#[from] serde_json::Error),
    /// The codec was built for another type (a bug: codecs are chosen by type id).
    #[error("codec used on an object of another type")]
    Type,
}

/// Turns cached objects into bytes and back.
pub(crate) struct Codec<K> {
    encode: fn(&K) -> Result<Arc<[u8]>, CodecError>,
    decode: fn(&[u8]) -> Result<Arc<K>, CodecError>,
}

impl<K> Clone for Codec<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Codec<K> {}

impl<K> fmt::Debug for Codec<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Codec")
    }
}

impl<K: Any + Send + Sync> Codec<K> {
    /// The JSON codec of a type that has one.
    pub(crate) fn json() -> Self
    where
        K: Serialize + DeserializeOwned,
    {
        Self {
            encode: encode_as::<K, K>,
            decode: decode_as::<K, K>,
        }
    }

    /// The codec a store of `K` uses by default: JSON for pods, none (decoded objects) for the
    /// rest, chosen by type id as [`super::compact::shrink`] does.
    pub(crate) fn default_for() -> Option<Self> {
        (TypeId::of::<K>() == TypeId::of::<Pod>()).then_some(Self {
            encode: encode_as::<K, Pod>,
            decode: decode_as::<K, Pod>,
        })
    }

    /// A codec whose `decode` is `decode`, for tests of what the store does with bad bytes.
    #[cfg(test)]
    pub(crate) fn with_decode(self, decode: fn(&[u8]) -> Result<Arc<K>, CodecError>) -> Self {
        Self { decode, ..self }
    }
}

impl<K> Codec<K> {
    /// The bytes of `obj`.
    pub(crate) fn encode(&self, obj: &K) -> Result<Arc<[u8]>, CodecError> {
        (self.encode)(obj)
    }

    /// The object `bytes` hold.
    pub(crate) fn decode(&self, bytes: &[u8]) -> Result<Arc<K>, CodecError> {
        (self.decode)(bytes)
    }
}

/// Encodes `obj`, a `T` under the name `K`.
fn encode_as<K: Any, T: Serialize + Any>(obj: &K) -> Result<Arc<[u8]>, CodecError> {
    let obj = (obj as &dyn Any)
        .downcast_ref::<T>()
        .ok_or(CodecError::Type)?;
    Ok(serde_json::to_vec(obj)?.into())
}

/// Decodes a `T` and hands it out as the `K` it is.
fn decode_as<K: Any + Send + Sync, T: DeserializeOwned + Any + Send + Sync>(
    bytes: &[u8],
) -> Result<Arc<K>, CodecError> {
    let obj: Arc<dyn Any + Send + Sync> = Arc::new(serde_json::from_slice::<T>(bytes)?);
    obj.downcast::<K>().map_err(|_| CodecError::Type)
}

/// How the store holds one object.
pub(crate) enum Entry<K> {
    /// The object itself, shared with every reader.
    Decoded(Arc<K>),
    /// Its JSON, decoded by every read. Shared so that a read copies it out of the lock cheaply
    /// and decodes after releasing it.
    Encoded(Arc<[u8]>),
    /// Its JSON and the object inserted, kept while the insert is among the store's recent ones
    /// ([`Recent`]): reads return `obj` without decoding. Becomes [`Entry::Encoded`] when the
    /// write with sequence number `seq` leaves the recent ones.
    Recent {
        /// The object's bytes, as in [`Entry::Encoded`].
        bytes: Arc<[u8]>,
        /// The object they encode, as inserted.
        obj: Arc<K>,
        /// The sequence number of the write that left `obj` (see [`Recent::push`]).
        seq: u64,
    },
}

impl<K> Entry<K> {
    /// The object's bytes, if the entry holds them.
    pub(crate) fn bytes(&self) -> Option<&Arc<[u8]>> {
        match self {
            Entry::Decoded(_) => None,
            Entry::Encoded(bytes) | Entry::Recent { bytes, .. } => Some(bytes),
        }
    }
}

impl<K> Clone for Entry<K> {
    fn clone(&self) -> Self {
        match self {
            Entry::Decoded(obj) => Entry::Decoded(Arc::clone(obj)),
            Entry::Encoded(bytes) => Entry::Encoded(Arc::clone(bytes)),
            Entry::Recent { bytes, obj, seq } => Entry::Recent {
                bytes: Arc::clone(bytes),
                obj: Arc::clone(obj),
                seq: *seq,
            },
        }
    }
}

impl<K> fmt::Debug for Entry<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Entry::Decoded(_) => f.write_str("Decoded"),
            Entry::Encoded(bytes) => write!(f, "Encoded({} bytes)", bytes.len()),
            Entry::Recent { bytes, seq, .. } => {
                write!(f, "Recent({} bytes, write {seq})", bytes.len())
            }
        }
    }
}

/// How many of an encoded store's latest inserts keep their decoded object beside the bytes
/// ([`Entry::Recent`]). A pod's writes come in a burst (created, bound, started, its IP and
/// conditions reported) and are read by the syncs they trigger within moments; 1,024 writes are
/// those of about 250 pods in flight, 25 ReplicaSets of 10, while costing at most about 12 MB
/// (a recent pod holds about 12 KB decoded) per pod store, a few stores per process.
pub(crate) const RECENT_WRITES: usize = 1024;

/// How long a write keeps its decoded object at most: past it, an idle store holds bytes only.
/// A sync reads what the write it follows changed well within it.
pub(crate) const RECENT_AGE: Duration = Duration::from_secs(10);

/// The latest inserts of an encoded store whose entries still hold the decoded object, oldest
/// first, bounded by count and by age.
///
/// Each such write has a sequence number, kept in its entry: when a write leaves the recent ones,
/// its key's entry drops the object only if it still holds that write's (the key may have been
/// written again since, or removed).
pub(crate) struct Recent {
    writes: VecDeque<RecentWrite>,
    next_seq: u64,
    capacity: usize,
    max_age: Duration,
}

/// One insert in [`Recent`].
struct RecentWrite {
    seq: u64,
    key: Arc<ObjectKey>,
    at: Instant,
}

impl Recent {
    /// Keeps the decoded objects of the latest `capacity` inserts, for `max_age` at most; a
    /// capacity of 0 keeps none.
    pub(crate) fn new(capacity: usize, max_age: Duration) -> Self {
        Self {
            writes: VecDeque::new(),
            next_seq: 0,
            capacity,
            max_age,
        }
    }

    /// Whether inserts keep their decoded object at all.
    pub(crate) fn enabled(&self) -> bool {
        self.capacity > 0
    }

    /// Records a write of `key` at `at` and returns its sequence number, to keep in the entry.
    pub(crate) fn push(&mut self, key: Arc<ObjectKey>, at: Instant) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.writes.push_back(RecentWrite { seq, key, at });
        seq
    }

    /// Whether the oldest write is past the age bound at `now` (a read lock suffices to ask).
    pub(crate) fn has_expired(&self, now: Instant) -> bool {
        self.writes
            .front()
            .is_some_and(|w| now.saturating_duration_since(w.at) >= self.max_age)
    }

    /// How many writes count as recent (some may have been written over or removed since).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.writes.len()
    }

    /// Takes out the writes beyond the count bound or older than the age bound at `now` (every
    /// write when `now` is `None`), oldest first, as (key, sequence number).
    pub(crate) fn expire(
        &mut self,
        now: Option<Instant>,
    ) -> impl Iterator<Item = (Arc<ObjectKey>, u64)> + '_ {
        std::iter::from_fn(move || {
            let oldest = self.writes.front()?;
            let expired = self.writes.len() > self.capacity
                || now.is_none_or(|now| now.saturating_duration_since(oldest.at) >= self.max_age);
            if !expired {
                return None;
            }
            let write = self.writes.pop_front()?;
            Some((write.key, write.seq))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn pods_get_a_json_codec_and_other_types_none() {
        assert!(Codec::<Pod>::default_for().is_some());
        assert!(Codec::<ConfigMap>::default_for().is_none());
    }

    #[test]
    fn a_pod_decodes_to_what_was_encoded() {
        let mut pod = Pod::default();
        pod.metadata.name = Some("p".into());
        pod.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
        let codec = Codec::<Pod>::default_for().expect("pods are encoded");
        let bytes = codec.encode(&pod).expect("a pod encodes");
        assert_eq!(*codec.decode(&bytes).expect("its bytes decode"), pod);
        assert!(matches!(codec.decode(b"{"), Err(CodecError::Json(_))));
    }
}
