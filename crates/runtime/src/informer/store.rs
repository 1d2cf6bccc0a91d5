//! Thread-safe, indexed object cache. Mirrors client-go `thread_safe_store.go` and `index.go`.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::Resource;
use parking_lot::RwLock;

use super::encoded::{Codec, Entry, Recent, RECENT_AGE, RECENT_WRITES};
use crate::ObjectKey;

/// Index of objects by namespace (cluster-scoped objects index under `""`).
pub const NAMESPACE_INDEX: &str = "namespace";

/// Index of objects by the uid of their controller owner reference (`controller: true`).
pub const CONTROLLER_UID_INDEX: &str = "controllerUID";

/// Index of the objects without a controller owner reference, by namespace: the orphans a
/// controller may adopt. With [`CONTROLLER_UID_INDEX`] it gives a controller every object it
/// can claim without scanning its namespace.
pub const ORPHAN_INDEX: &str = "orphanNamespace";

/// Index of objects by each of their labels, as `namespace/key=value` (see [`label_index`]): the
/// objects an equality-based selector picks in a namespace are among those of any one of its pairs.
/// Not built in: add it with `add_indexer(LABEL_INDEX, label_index)` where
/// [`Store::list_by_labels`] is read often, e.g. a Service's pods per sync.
pub const LABEL_INDEX: &str = "namespaceLabel";

/// Computes the index values of an object.
type IndexFunc<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// An object's key as the store holds it: allocated once per object and shared by the item map and
/// every index entry of the object (client-go keeps one key string per object too).
type SharedKey = Arc<ObjectKey>;

/// Index value → keys of the objects that have it.
type Index = HashMap<String, HashSet<SharedKey>>;

/// A thread-safe cache of objects keyed by [`ObjectKey`], with secondary indices.
///
/// Clones share the same cache. Reads never block writers for long: they copy `Arc`s out of the
/// lock, and decode after releasing it. Callers must not mutate cached objects (clone them first).
///
/// Pods are held as their JSON and decoded by each read (see the `encoded` module), except for the
/// latest inserts, whose object is kept beside the bytes for a while: an object read twice may
/// come back as two `Arc`s with equal content, and a read costs a decode per object returned that
/// was not written recently, so prefer `get`, `by_index` and `claimable` over whole lists. Other
/// types are held decoded unless the store is made with [`Store::encoded`]. Every store has [`NAMESPACE_INDEX`],
/// [`CONTROLLER_UID_INDEX`] and [`ORPHAN_INDEX`]; more indices can be added with [`Store::add_indexer`].
///
/// Writes come from the informer that owns the store. Tests may seed a store with
/// [`Store::insert`] and [`Store::remove`].
#[doc(alias = "Indexer")]
#[doc(alias = "ThreadSafeStore")]
pub struct Store<K> {
    inner: Arc<RwLock<Inner<K>>>,
}

struct Inner<K> {
    items: HashMap<SharedKey, Entry<K>>,
    indexers: HashMap<String, IndexFunc<K>>,
    /// Invariant: one index per indexer, and each index holds exactly the values its indexer
    /// computes for the objects in `items` (no empty sets).
    indices: HashMap<String, Index>,
    /// Set when the store holds its objects as bytes ([`Entry::Encoded`]), decoded on read.
    codec: Option<Codec<K>>,
    /// The inserts whose entries still hold the decoded object ([`Entry::Recent`]); every entry
    /// that does is the latest write of its key and is listed here under its sequence number.
    recent: Recent,
}

impl<K> Clone for Store<K> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> fmt::Debug for Store<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = self.inner.read();
        f.debug_struct("Store")
            .field("len", &inner.items.len())
            .field("indexers", &inner.indexers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl<K: Resource + Send + Sync + 'static> Default for Store<K> {
    fn default() -> Self {
        Self::new()
    }
}

/// The namespace index function (client-go `MetaNamespaceIndexFunc`).
fn namespace_index<K: Resource>(obj: &K) -> Vec<String> {
    vec![obj.meta().namespace.clone().unwrap_or_default()]
}

/// The controller-uid index function: the uid of the owner reference with `controller: true`.
fn controller_uid_index<K: Resource>(obj: &K) -> Vec<String> {
    obj.meta()
        .owner_references
        .iter()
        .flatten()
        .filter(|r| r.controller == Some(true))
        .map(|r| r.uid.clone())
        .take(1)
        .collect()
}

/// The [`LABEL_INDEX`] value of the label `key=value` in `namespace`. Namespaces hold no `/` and
/// label keys no `=`, so the value is unambiguous.
fn label_value(namespace: &str, key: &str, value: &str) -> String {
    format!("{namespace}/{key}={value}")
}

/// The index function of [`LABEL_INDEX`]: one value per label of the object.
pub fn label_index<K: Resource>(obj: &K) -> Vec<String> {
    let meta = obj.meta();
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    meta.labels
        .iter()
        .flatten()
        .map(|(k, v)| label_value(namespace, k, v))
        .collect()
}

fn orphan_index<K: Resource>(obj: &K) -> Vec<String> {
    let meta = obj.meta();
    let controlled = meta
        .owner_references
        .iter()
        .flatten()
        .any(|r| r.controller == Some(true));
    if controlled {
        Vec::new()
    } else {
        vec![meta.namespace.clone().unwrap_or_default()]
    }
}

impl<K: Resource + Send + Sync + 'static> Store<K> {
    /// An empty store with the built-in indices, holding its objects in the form their type
    /// calls for: pods as their JSON, decoded on read (see the `encoded` module), everything else
    /// decoded.
    pub fn new() -> Self {
        Self::with_codec(Codec::default_for())
    }

    /// An empty store that holds its objects decoded, whatever their type: reads cost nothing.
    pub fn decoded() -> Self {
        Self::with_codec(None)
    }

    /// An empty store that holds its objects as their JSON and decodes them on read: about the
    /// size of the JSON per object instead of the decoded size, for a decode per object read.
    pub fn encoded() -> Self
    where
        K: serde::Serialize + serde::de::DeserializeOwned,
    {
        Self::with_codec(Some(Codec::json()))
    }

    pub(crate) fn with_codec(codec: Option<Codec<K>>) -> Self {
        let recent = if codec.is_some() { RECENT_WRITES } else { 0 };
        Self::with_recent(codec, recent, RECENT_AGE)
    }

    /// A store with `codec` whose latest `recent` inserts keep their decoded object for
    /// `max_age` at most.
    pub(crate) fn with_recent(codec: Option<Codec<K>>, recent: usize, max_age: Duration) -> Self {
        let store = Self {
            inner: Arc::new(RwLock::new(Inner {
                items: HashMap::new(),
                indexers: HashMap::new(),
                indices: HashMap::new(),
                codec,
                recent: Recent::new(recent, max_age),
            })),
        };
        store.add_indexer(NAMESPACE_INDEX, namespace_index::<K>);
        store.add_indexer(CONTROLLER_UID_INDEX, controller_uid_index::<K>);
        store.add_indexer(ORPHAN_INDEX, orphan_index::<K>);
        store
    }

    /// Whether the store holds its objects as bytes, decoded on read.
    pub fn is_encoded(&self) -> bool {
        self.inner.read().codec.is_some()
    }

    /// Adds (or replaces) the index `name`, computed by `f`, and indexes the objects already cached.
    pub fn add_indexer(&self, name: &str, f: impl Fn(&K) -> Vec<String> + Send + Sync + 'static) {
        let f: IndexFunc<K> = Arc::new(f);
        let mut inner = self.inner.write();
        let mut index = Index::new();
        for (key, entry) in &inner.items {
            let Some(obj) = read(inner.codec.as_ref(), key, entry.clone()) else {
                continue;
            };
            for value in f(&obj) {
                index.entry(value).or_default().insert(Arc::clone(key));
            }
        }
        inner.indices.insert(name.to_string(), index);
        inner.indexers.insert(name.to_string(), f);
    }

    /// The object with `key`, if cached.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let (found, codec) = {
            let inner = self.inner.read();
            let found = inner
                .items
                .get_key_value(key)
                .map(|(key, entry)| (Arc::clone(key), entry.clone()));
            (found, inner.codec)
        };
        let (key, entry) = found?;
        read(codec.as_ref(), &key, entry)
    }

    /// Every cached object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        let (entries, codec) = {
            let inner = self.inner.read();
            let entries = inner
                .items
                .iter()
                .map(|(k, e)| (Arc::clone(k), e.clone()))
                .collect();
            (entries, inner.codec)
        };
        materialize(entries, codec)
    }

    /// The keys of every cached object, in no particular order.
    pub fn list_keys(&self) -> Vec<ObjectKey> {
        self.inner
            .read()
            .items
            .keys()
            .map(|k| ObjectKey::clone(k))
            .collect()
    }

    /// The cached objects in `namespace`; `""` means every namespace, as client-go's `NamespaceAll`.
    pub fn list_by_namespace(&self, namespace: &str) -> Vec<Arc<K>> {
        if namespace.is_empty() {
            return self.list();
        }
        self.by_index(NAMESPACE_INDEX, namespace)
    }

    /// The cached objects whose index `index_name` has `value`; empty if there is no such index.
    pub fn by_index(&self, index_name: &str, value: &str) -> Vec<Arc<K>> {
        let (entries, codec) = {
            let inner = self.inner.read();
            let Some(keys) = inner.indices.get(index_name).and_then(|i| i.get(value)) else {
                return Vec::new();
            };
            let entries = keys
                .iter()
                .filter_map(|k| inner.items.get(&**k).map(|e| (Arc::clone(k), e.clone())))
                .collect();
            (entries, inner.codec)
        };
        materialize(entries, codec)
    }

    /// The cached objects of `namespace` whose labels include every pair of `selector`, as
    /// client-go's `Lister.List(labels.SelectorFromSet(selector))` on one namespace; an empty
    /// selector selects the whole namespace. With [`LABEL_INDEX`], only the objects carrying the
    /// selector's least common pair are read (decoded, in an encoded store); without it, every
    /// object of the namespace is.
    pub fn list_by_labels(
        &self,
        namespace: &str,
        selector: &std::collections::BTreeMap<String, String>,
    ) -> Vec<Arc<K>> {
        let selects = |obj: &Arc<K>| {
            let labels = obj.meta().labels.as_ref();
            selector
                .iter()
                .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
        };
        let indexed = {
            let inner = self.inner.read();
            match inner.indices.get(LABEL_INDEX) {
                Some(index) if !selector.is_empty() && !namespace.is_empty() => {
                    let empty = HashSet::new();
                    let fewest = selector
                        .iter()
                        .map(|(k, v)| index.get(&label_value(namespace, k, v)).unwrap_or(&empty))
                        .min_by_key(|keys| keys.len())
                        .unwrap_or(&empty);
                    let entries = fewest
                        .iter()
                        .filter_map(|k| inner.items.get(&**k).map(|e| (Arc::clone(k), e.clone())))
                        .collect();
                    Some((entries, inner.codec))
                }
                _ => None,
            }
        };
        let candidates = match indexed {
            Some((entries, codec)) => materialize(entries, codec),
            None => self.list_by_namespace(namespace),
        };
        candidates.into_iter().filter(selects).collect()
    }

    /// The keys of the cached objects whose index `index_name` has `value`, without reading the
    /// objects (client-go's `IndexKeys`); empty if there is no such index.
    #[doc(alias = "IndexKeys")]
    pub fn index_keys(&self, index_name: &str, value: &str) -> Vec<ObjectKey> {
        let inner = self.inner.read();
        inner
            .indices
            .get(index_name)
            .and_then(|i| i.get(value))
            .map(|keys| keys.iter().map(|k| ObjectKey::clone(k)).collect())
            .unwrap_or_default()
    }

    /// Whether some cached object has `value` in the index `index_name`, without reading any;
    /// `false` if there is no such index.
    pub fn has_index_value(&self, index_name: &str, value: &str) -> bool {
        self.inner
            .read()
            .indices
            .get(index_name)
            .is_some_and(|i| i.contains_key(value))
    }

    /// The objects of `namespace` a controller with uid `owner_uid` may claim: those whose
    /// controller reference names it (including ones that stopped matching its selector, to
    /// release them) and the namespace's orphans. kube's controllers list the whole namespace
    /// and skip the objects other controllers own; the two indices give the same candidates
    /// without the scan.
    pub fn claimable(&self, namespace: &str, owner_uid: &str) -> Vec<Arc<K>> {
        let (entries, codec) = {
            let inner = self.inner.read();
            let owned = inner
                .indices
                .get(CONTROLLER_UID_INDEX)
                .and_then(|i| i.get(owner_uid))
                .into_iter()
                .flatten()
                .filter(|k| k.namespace_str() == namespace);
            let orphans = inner
                .indices
                .get(ORPHAN_INDEX)
                .and_then(|i| i.get(namespace))
                .into_iter()
                .flatten();
            let entries = owned
                .chain(orphans)
                .filter_map(|k| inner.items.get(&**k).map(|e| (Arc::clone(k), e.clone())))
                .collect();
            (entries, inner.codec)
        };
        materialize(entries, codec)
    }

    /// The values that index `index_name` currently holds.
    pub fn index_values(&self, index_name: &str) -> Vec<String> {
        self.inner
            .read()
            .indices
            .get(index_name)
            .map(|i| i.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Number of cached objects.
    pub fn len(&self) -> usize {
        self.inner.read().items.len()
    }

    /// Whether the cache is empty.
    pub fn is_empty(&self) -> bool {
        self.inner.read().items.is_empty()
    }

    /// The form in which the store holds `obj`: its bytes if the store encodes (encoded before
    /// taking the lock), the object itself otherwise or if it does not encode.
    fn entry_of(&self, obj: &Arc<K>) -> Entry<K> {
        let codec = self.inner.read().codec;
        entry_of(codec.as_ref(), obj)
    }

    /// Adds or replaces `obj`, returning the object it replaced. An encoded store keeps `obj`
    /// beside its bytes while the insert is among its recent ones, for reads to return.
    pub fn insert(&self, obj: Arc<K>) -> Option<Arc<K>> {
        let key = ObjectKey::from_obj(&*obj);
        let entry = self.entry_of(&obj);
        let (old, expired) = {
            let mut inner = self.inner.write();
            let now = Instant::now();
            let old = insert(&mut inner, key, &obj, entry, Some(now)).1;
            (old, expire_recent(&mut inner, Some(now)))
        };
        // Copies the store no longer holds are freed out of the lock.
        drop(expired);
        old?.object()
    }

    /// Drops the decoded objects the store keeps of its recent inserts, leaving their bytes: what
    /// it holds once they have aged out. Reads decode again. Does nothing to a decoded store.
    pub fn forget_recent(&self) {
        let expired = expire_recent(&mut self.inner.write(), None);
        drop(expired);
    }

    /// Drops the decoded objects of the inserts that are no longer recent at `now`.
    pub(crate) fn expire_recent_at(&self, now: Instant) {
        if !self.inner.read().recent.has_expired(now) {
            return;
        }
        let expired = expire_recent(&mut self.inner.write(), Some(now));
        drop(expired);
    }

    /// Removes the object with `key`, returning it.
    pub fn remove(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let mut inner = self.inner.write();
        remove(&mut inner, key)?.object()
    }

    /// Removes the object with `key`; whether it was cached. Unlike [`Store::remove`], it says so
    /// even when the object's bytes no longer decode.
    pub(crate) fn delete(&self, key: &ObjectKey) -> bool {
        let mut inner = self.inner.write();
        remove(&mut inner, key).is_some()
    }

    /// Replaces the whole content with `objects`.
    ///
    /// Returns, for each new object, the object it replaced (if any), and the objects that are gone.
    pub fn replace(&self, objects: Vec<Arc<K>>) -> Replaced<K> {
        let codec = self.inner.read().codec;
        let entries: Vec<Entry<K>> = objects
            .iter()
            .map(|obj| entry_of(codec.as_ref(), obj))
            .collect();
        let mut inner = self.inner.write();
        let mut seen: HashSet<SharedKey> = HashSet::with_capacity(objects.len());
        let mut upserted = Vec::with_capacity(objects.len());
        for (obj, entry) in objects.into_iter().zip(entries) {
            let (key, old) = insert(&mut inner, ObjectKey::from_obj(&*obj), &obj, entry, None);
            seen.insert(key);
            upserted.push((obj, old.and_then(Prior::object)));
        }
        let gone_keys: Vec<SharedKey> = inner
            .items
            .keys()
            .filter(|k| !seen.contains(*k))
            .cloned()
            .collect();
        drop(seen);
        let mut removed = Vec::with_capacity(gone_keys.len());
        for key in gone_keys {
            if let Some(last) = remove(&mut inner, &key).and_then(Prior::object) {
                removed.push((ObjectKey::clone(&key), last));
            }
        }
        shrink_after_removals(&mut inner);
        Replaced { upserted, removed }
    }
}

/// What [`Store::replace`] changed.
#[derive(Debug)]
pub struct Replaced<K> {
    /// Each object now cached, with the object it replaced.
    pub upserted: Vec<(Arc<K>, Option<Arc<K>>)>,
    /// The objects no longer present, with their last cached state.
    pub removed: Vec<(ObjectKey, Arc<K>)>,
}

/// The object an insert replaced or a removal took out.
enum Prior<K> {
    Object(Arc<K>),
    /// Its bytes did not decode (logged); it is gone all the same.
    Undecodable,
}

impl<K> Prior<K> {
    fn object(self) -> Option<Arc<K>> {
        match self {
            Prior::Object(obj) => Some(obj),
            Prior::Undecodable => None,
        }
    }
}

/// Decodes `entries`, read under the lock, after releasing it. Objects whose bytes do not decode
/// are logged and left out.
fn materialize<K>(entries: Vec<(SharedKey, Entry<K>)>, codec: Option<Codec<K>>) -> Vec<Arc<K>> {
    entries
        .into_iter()
        .filter_map(|(key, entry)| read(codec.as_ref(), &key, entry))
        .collect()
}

/// `obj` as a store with `codec` holds it. An object that does not encode is kept decoded.
fn entry_of<K: Resource>(codec: Option<&Codec<K>>, obj: &Arc<K>) -> Entry<K> {
    let Some(codec) = codec else {
        return Entry::Decoded(Arc::clone(obj));
    };
    match codec.encode(obj) {
        Ok(bytes) => Entry::Encoded(bytes),
        Err(err) => {
            tracing::warn!(key = %ObjectKey::from_obj(&**obj), error = %crate::api_error::Chain(&err), "cannot encode object for the cache; caching it decoded");
            Entry::Decoded(Arc::clone(obj))
        }
    }
}

/// The object `entry` holds, decoded if need be; `None`, logged, if its bytes do not decode.
fn read<K>(codec: Option<&Codec<K>>, key: &ObjectKey, entry: Entry<K>) -> Option<Arc<K>> {
    match entry {
        Entry::Decoded(obj) | Entry::Recent { obj, .. } => Some(obj),
        Entry::Encoded(bytes) => {
            let Some(codec) = codec else {
                tracing::error!(%key, "cached object is encoded but the store has no codec");
                return None;
            };
            match codec.decode(&bytes) {
                Ok(obj) => Some(obj),
                Err(err) => {
                    tracing::error!(%key, error = %crate::api_error::Chain(&err), "cached object does not decode; skipping it");
                    None
                }
            }
        }
    }
}

/// Adds or replaces `obj`, held as `entry`, under `key`; returns the shared key (the one already
/// held when the object was cached before) and what it replaced. With `recent`, the time of the
/// write, an encoded entry keeps `obj` beside its bytes as one of the store's recent inserts (the
/// caller then expires those beyond the bounds).
///
/// The replaced object is decoded, under the lock, to move the key between index values, unless
/// the entry still holds it as a recent insert; when its bytes equal the new ones it is not: the
/// object is unchanged (a relist or a resent event), its index values too, and the new object
/// stands for the old.
fn insert<K>(
    inner: &mut Inner<K>,
    key: ObjectKey,
    obj: &Arc<K>,
    entry: Entry<K>,
    recent: Option<Instant>,
) -> (SharedKey, Option<Prior<K>>) {
    let key = match inner.items.get_key_value(&key) {
        Some((shared, _)) => Arc::clone(shared),
        None => Arc::new(key),
    };
    let entry = match (entry, recent) {
        (Entry::Encoded(bytes), Some(at)) if inner.recent.enabled() => Entry::Recent {
            bytes,
            obj: Arc::clone(obj),
            seq: inner.recent.push(Arc::clone(&key), at),
        },
        (entry, _) => entry,
    };
    let old = inner.items.insert(Arc::clone(&key), entry);
    let Some(old) = old else {
        update_indices(inner, &key, None, Some(&**obj));
        return (key, None);
    };
    let unchanged = match (old.bytes(), inner.items.get(&*key).and_then(Entry::bytes)) {
        (Some(old), Some(new)) => old == new,
        _ => false,
    };
    if unchanged {
        return (key, Some(Prior::Object(Arc::clone(obj))));
    }
    let prior = match read(inner.codec.as_ref(), &key, old) {
        Some(old) => {
            update_indices(inner, &key, Some(&*old), Some(&**obj));
            Prior::Object(old)
        }
        None => {
            unindex(inner, &key);
            update_indices(inner, &key, None, Some(&**obj));
            Prior::Undecodable
        }
    };
    (key, Some(prior))
}

fn remove<K>(inner: &mut Inner<K>, key: &ObjectKey) -> Option<Prior<K>> {
    let (key, old) = inner.items.remove_entry(key)?;
    let prior = match read(inner.codec.as_ref(), &key, old) {
        Some(old) => {
            update_indices(inner, &key, Some(&*old), None);
            Prior::Object(old)
        }
        None => {
            unindex(inner, &key);
            Prior::Undecodable
        }
    };
    shrink_after_removals(inner);
    Some(prior)
}

/// Makes the entries of the inserts beyond the store's bounds at `now` (every recent insert when
/// `now` is `None`) hold bytes only, unless their key was written again since. Returns the
/// decoded objects they let go, for the caller to drop once it has released the lock.
fn expire_recent<K>(inner: &mut Inner<K>, now: Option<Instant>) -> Vec<Arc<K>> {
    let Inner { items, recent, .. } = inner;
    let mut released = Vec::new();
    for (key, seq) in recent.expire(now) {
        let Some(entry) = items.get_mut(&*key) else {
            continue;
        };
        let Entry::Recent {
            bytes,
            obj,
            seq: held,
        } = entry
        else {
            continue;
        };
        if *held != seq {
            continue;
        }
        let (bytes, obj) = (Arc::clone(bytes), Arc::clone(obj));
        *entry = Entry::Encoded(bytes);
        released.push(obj);
    }
    released
}

/// Takes `key` out of every index, for an object whose values cannot be computed again (its
/// bytes do not decode): a scan of every index value, which only that case pays.
fn unindex<K>(inner: &mut Inner<K>, key: &SharedKey) {
    for index in inner.indices.values_mut() {
        index.retain(|_, set| {
            set.remove(&**key);
            !set.is_empty()
        });
    }
}

/// Fewest slots a table is shrunk to: below that, shrinking saves nothing worth the rehash.
const MIN_SHRINK: usize = 64;

/// Whether a hash table with `capacity` slots holding `len` entries should give memory back: it
/// holds less than a quarter of its room (hash tables never shrink on their own). Shrinking then
/// costs O(len) once per three quarters of the entries removed, so removals stay O(1) amortized.
fn worth_shrinking(capacity: usize, len: usize) -> bool {
    capacity > 4 * len.max(MIN_SHRINK)
}

/// Gives memory back once the store holds far fewer objects than its tables have room for (a
/// relist that found most objects gone, or a mass deletion).
fn shrink_after_removals<K>(inner: &mut Inner<K>) {
    if worth_shrinking(inner.items.capacity(), inner.items.len()) {
        inner.items.shrink_to_fit();
        for index in inner.indices.values_mut() {
            index.shrink_to_fit();
        }
    }
}

/// Moves `key` from the index values of `old` to those of `new`.
fn update_indices<K>(inner: &mut Inner<K>, key: &SharedKey, old: Option<&K>, new: Option<&K>) {
    let Inner {
        indexers, indices, ..
    } = inner;
    for (name, f) in indexers.iter() {
        let old_values = old.map(|o| f(o)).unwrap_or_default();
        let new_values = new.map(|n| f(n)).unwrap_or_default();
        if old_values == new_values {
            continue;
        }
        let index = indices.entry(name.clone()).or_default();
        for value in &old_values {
            if new_values.contains(value) {
                continue;
            }
            if let Some(set) = index.get_mut(value) {
                set.remove(&**key);
                if set.is_empty() {
                    index.remove(value);
                } else if worth_shrinking(set.capacity(), set.len()) {
                    set.shrink_to_fit();
                }
            }
        }
        for value in new_values {
            index.entry(value).or_default().insert(Arc::clone(key));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::encoded::CodecError;
    use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use kube::api::ObjectMeta;

    fn pod(ns: &str, name: &str, owner_uid: Option<&str>) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                namespace: Some(ns.into()),
                name: Some(name.into()),
                labels: Some([("app".to_string(), name.to_string())].into()),
                owner_references: owner_uid.map(|uid| {
                    vec![OwnerReference {
                        api_version: "apps/v1".into(),
                        kind: "ReplicaSet".into(),
                        name: "rs".into(),
                        uid: uid.into(),
                        controller: Some(true),
                        block_owner_deletion: Some(true),
                    }]
                }),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    image: Some("registry.k8s.io/pause:3.10".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        })
    }

    fn names(mut objs: Vec<Arc<Pod>>) -> Vec<String> {
        objs.sort_by_key(|p| p.metadata.name.clone());
        objs.iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    /// A store of each form: every test below runs on both and must see the same results.
    fn stores() -> [Store<Pod>; 2] {
        let (decoded, encoded) = (Store::decoded(), Store::new());
        assert!(!decoded.is_encoded());
        assert!(encoded.is_encoded(), "pods are encoded by default");
        [decoded, encoded]
    }

    #[test]
    fn namespace_and_controller_uid_indices_follow_updates_and_deletes() {
        for store in stores() {
            store.insert(pod("a", "p1", Some("u1")));
            store.insert(pod("a", "p2", Some("u1")));
            store.insert(pod("b", "p3", None));
            assert_eq!(names(store.list_by_namespace("a")), ["p1", "p2"]);
            assert_eq!(names(store.list_by_namespace("")), ["p1", "p2", "p3"]);
            assert_eq!(
                names(store.by_index(CONTROLLER_UID_INDEX, "u1")),
                ["p1", "p2"]
            );
            let mut keys = store.index_keys(CONTROLLER_UID_INDEX, "u1");
            keys.sort_by(|a, b| a.name.cmp(&b.name));
            assert_eq!(keys, [ObjectKey::new("a", "p1"), ObjectKey::new("a", "p2")]);

            // Re-owned: moves between index values.
            let old = store.insert(pod("a", "p2", Some("u2")));
            assert_eq!(old, Some(pod("a", "p2", Some("u1"))), "the state replaced");
            assert_eq!(names(store.by_index(CONTROLLER_UID_INDEX, "u1")), ["p1"]);
            assert_eq!(names(store.by_index(CONTROLLER_UID_INDEX, "u2")), ["p2"]);

            assert_eq!(
                store.remove(&ObjectKey::new("a", "p1")),
                Some(pod("a", "p1", Some("u1")))
            );
            assert_eq!(store.remove(&ObjectKey::new("a", "p1")), None);
            assert!(store.by_index(CONTROLLER_UID_INDEX, "u1").is_empty());
            let mut values = store.index_values(CONTROLLER_UID_INDEX);
            values.sort();
            assert_eq!(values, ["u2"], "empty index values are dropped");
            assert_eq!(store.len(), 2);
            assert!(store.by_index("no-such-index", "x").is_empty());
            assert!(store.index_keys("no-such-index", "x").is_empty());
            assert!(store.has_index_value(CONTROLLER_UID_INDEX, "u2"));
            assert!(!store.has_index_value(CONTROLLER_UID_INDEX, "u1"));
            assert!(!store.has_index_value("no-such-index", "u2"));
        }
    }

    #[test]
    fn get_returns_the_object_as_inserted() {
        for store in stores() {
            let p = pod("a", "p1", Some("u1"));
            assert_eq!(store.insert(Arc::clone(&p)), None);
            assert_eq!(store.get(&ObjectKey::new("a", "p1")), Some(p));
            assert_eq!(store.get(&ObjectKey::new("a", "p2")), None);
        }
    }

    #[test]
    fn claimable_objects_are_the_owners_and_the_namespaces_orphans() {
        for store in stores() {
            store.insert(pod("a", "mine", Some("u1")));
            store.insert(pod("b", "mine-elsewhere", Some("u1")));
            store.insert(pod("a", "theirs", Some("u2")));
            store.insert(pod("a", "orphan", None));
            store.insert(pod("b", "other-orphan", None));
            assert_eq!(names(store.claimable("a", "u1")), ["mine", "orphan"]);
            assert_eq!(names(store.by_index(ORPHAN_INDEX, "b")), ["other-orphan"]);
            // Adopted: no longer an orphan.
            store.insert(pod("a", "orphan", Some("u2")));
            assert_eq!(names(store.claimable("a", "u1")), ["mine"]);
        }
    }

    #[test]
    fn custom_indexer_indexes_objects_already_cached() {
        for store in stores() {
            store.insert(pod("a", "web", None));
            store.insert(pod("a", "db", None));
            store.add_indexer("app", |p: &Pod| {
                p.metadata
                    .labels
                    .iter()
                    .flatten()
                    .filter(|(k, _)| *k == "app")
                    .map(|(_, v)| v.clone())
                    .collect()
            });
            assert_eq!(names(store.by_index("app", "web")), ["web"]);
            store.insert(pod("b", "web", None));
            assert_eq!(store.by_index("app", "web").len(), 2);
        }
    }

    #[test]
    fn replace_reports_upserts_with_their_old_state_and_removals() {
        for store in stores() {
            store.insert(pod("a", "keep", None));
            store.insert(pod("a", "change", None));
            store.insert(pod("a", "gone", Some("u1")));
            let replaced = store.replace(vec![
                pod("a", "keep", None),
                pod("a", "change", Some("u2")),
                pod("a", "new", None),
            ]);
            let mut upserted: Vec<(String, Option<Arc<Pod>>)> = replaced
                .upserted
                .into_iter()
                .map(|(n, o)| (n.metadata.name.clone().unwrap_or_default(), o))
                .collect();
            upserted.sort_by(|a, b| a.0.cmp(&b.0));
            assert_eq!(
                upserted,
                [
                    ("change".to_string(), Some(pod("a", "change", None))),
                    ("keep".to_string(), Some(pod("a", "keep", None))),
                    ("new".to_string(), None),
                ]
            );
            assert_eq!(replaced.removed.len(), 1);
            assert_eq!(replaced.removed[0].0, ObjectKey::new("a", "gone"));
            assert_eq!(replaced.removed[0].1, pod("a", "gone", Some("u1")));
            assert!(store.by_index(CONTROLLER_UID_INDEX, "u1").is_empty());
            assert_eq!(
                names(store.by_index(CONTROLLER_UID_INDEX, "u2")),
                ["change"]
            );
            assert_eq!(names(store.by_index(ORPHAN_INDEX, "a")), ["keep", "new"]);
            assert_eq!(names(store.list()), ["change", "keep", "new"]);
        }
    }

    #[test]
    fn list_by_labels_reads_the_least_common_pair_when_labels_are_indexed() {
        fn labelled(ns: &str, name: &str, labels: &[(&str, &str)]) -> Arc<Pod> {
            let mut p = (*pod(ns, name, None)).clone();
            p.metadata.labels = Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            );
            Arc::new(p)
        }
        let selector = |pairs: &[(&str, &str)]| -> std::collections::BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        for indexed in [false, true] {
            for store in stores() {
                if indexed {
                    store.add_indexer(LABEL_INDEX, label_index::<Pod>);
                }
                store.insert(labelled("a", "web-1", &[("app", "web"), ("tier", "front")]));
                store.insert(labelled("a", "web-2", &[("app", "web"), ("tier", "back")]));
                store.insert(labelled("a", "db", &[("app", "db"), ("tier", "back")]));
                store.insert(labelled("b", "web-3", &[("app", "web"), ("tier", "front")]));
                let web = selector(&[("app", "web")]);
                assert_eq!(names(store.list_by_labels("a", &web)), ["web-1", "web-2"]);
                let front_web = selector(&[("app", "web"), ("tier", "front")]);
                assert_eq!(names(store.list_by_labels("a", &front_web)), ["web-1"]);
                assert_eq!(
                    names(store.list_by_labels("", &front_web)),
                    ["web-1", "web-3"]
                );
                assert!(store
                    .list_by_labels("a", &selector(&[("app", "x")]))
                    .is_empty());
                assert_eq!(store.list_by_labels("a", &selector(&[])).len(), 3);
                // Relabelled: leaves its old values.
                store.insert(labelled("a", "web-2", &[("app", "db")]));
                assert_eq!(names(store.list_by_labels("a", &web)), ["web-1"]);
                if indexed {
                    let mut keys = store.index_keys(LABEL_INDEX, "a/app=db");
                    keys.sort_by(|a, b| a.name.cmp(&b.name));
                    assert_eq!(
                        keys,
                        [ObjectKey::new("a", "db"), ObjectKey::new("a", "web-2")]
                    );
                }
            }
        }
    }

    #[test]
    fn an_encoded_store_holds_bytes_and_decodes_a_fresh_object_per_read() {
        let store = Store::new();
        let p = pod("a", "p1", None);
        store.insert(Arc::clone(&p));
        store.forget_recent();
        let inner = store.inner.read();
        let entry = inner.items.get(&ObjectKey::new("a", "p1"));
        assert!(matches!(entry, Some(Entry::Encoded(_))), "{entry:?}");
        drop(inner);
        let (first, second) = (store.get(&ObjectKey::new("a", "p1")), store.list());
        let first = first.expect("cached");
        assert!(!Arc::ptr_eq(&first, &p) && !Arc::ptr_eq(&first, &second[0]));
        assert_eq!((&*first, &*second[0]), (&*p, &*p));

        // Reinserting the same content is found unchanged without decoding: the new object
        // stands for the old one.
        let again = pod("a", "p1", None);
        let old = store.insert(Arc::clone(&again)).expect("replaced");
        assert!(Arc::ptr_eq(&old, &again));
    }

    #[test]
    fn other_types_are_held_decoded_unless_asked() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let cm = Arc::new(ConfigMap {
            metadata: ObjectMeta {
                namespace: Some("a".into()),
                name: Some("c".into()),
                ..Default::default()
            },
            ..Default::default()
        });
        let decoded = Store::<ConfigMap>::new();
        assert!(!decoded.is_encoded());
        decoded.insert(Arc::clone(&cm));
        let read = decoded.get(&ObjectKey::new("a", "c")).expect("cached");
        assert!(Arc::ptr_eq(&read, &cm), "the cached object itself");

        let encoded = Store::<ConfigMap>::encoded();
        assert!(encoded.is_encoded());
        encoded.insert(Arc::clone(&cm));
        assert_eq!(encoded.get(&ObjectKey::new("a", "c")), Some(cm));
    }

    /// Bytes that do not decode (which the store's own bytes never are) are logged and skipped:
    /// reads leave the object out, and writes still keep the indices exact.
    #[test]
    fn objects_whose_bytes_do_not_decode_are_skipped_and_unindexed() {
        fn undecodable(_: &[u8]) -> Result<Arc<Pod>, CodecError> {
            Err(CodecError::Type)
        }
        let codec = Codec::<Pod>::default_for()
            .expect("pods are encoded")
            .with_decode(undecodable);
        // Without recent copies, which would stand for the bytes.
        let store = Store::with_recent(Some(codec), 0, RECENT_AGE);
        store.insert(pod("a", "p1", Some("u1")));
        store.insert(pod("a", "p2", None));
        assert_eq!(store.len(), 2);
        assert_eq!(store.get(&ObjectKey::new("a", "p1")), None);
        assert!(store.list().is_empty());
        assert!(store.claimable("a", "u1").is_empty());
        assert_eq!(store.index_keys(CONTROLLER_UID_INDEX, "u1").len(), 1);

        // The replaced state cannot be returned, but its index values go.
        assert_eq!(store.insert(pod("a", "p1", Some("u2"))), None);
        assert!(store.index_keys(CONTROLLER_UID_INDEX, "u1").is_empty());
        assert_eq!(
            store.index_keys(CONTROLLER_UID_INDEX, "u2"),
            [ObjectKey::new("a", "p1")]
        );

        // A removal says the object was there even though it cannot return it.
        assert!(store.delete(&ObjectKey::new("a", "p1")));
        assert!(!store.delete(&ObjectKey::new("a", "p1")));
        assert_eq!(store.remove(&ObjectKey::new("a", "p2")), None);
        assert!(store.is_empty());
        for index in [NAMESPACE_INDEX, CONTROLLER_UID_INDEX, ORPHAN_INDEX] {
            assert!(store.index_values(index).is_empty(), "{index}");
        }

        // A relist removes what it no longer finds, without a tombstone it cannot build.
        store.insert(pod("a", "p3", None));
        let replaced = store.replace(vec![pod("a", "p4", None)]);
        assert!(replaced.removed.is_empty());
        assert_eq!(store.list_keys(), [ObjectKey::new("a", "p4")]);
        assert_eq!(
            store.index_keys(ORPHAN_INDEX, "a"),
            [ObjectKey::new("a", "p4")]
        );
    }

    /// An encoded store whose latest `recent` inserts keep their object for an hour (no test
    /// waits that long).
    fn recent_store(recent: usize) -> Store<Pod> {
        let codec = Codec::<Pod>::default_for().expect("pods are encoded");
        Store::with_recent(Some(codec), recent, Duration::from_secs(3600))
    }

    /// Whether the entry of `ns/name` keeps its decoded object.
    fn is_recent(store: &Store<Pod>, ns: &str, name: &str) -> bool {
        let inner = store.inner.read();
        matches!(
            inner.items.get(&ObjectKey::new(ns, name)),
            Some(Entry::Recent { .. })
        )
    }

    /// Whether a read of `ns/name` returns `obj` itself, not a decoded copy (which must be equal).
    fn reads_same(store: &Store<Pod>, obj: &Arc<Pod>) -> bool {
        let key = ObjectKey::from_obj(&**obj);
        let read = store.get(&key).expect("cached");
        assert_eq!(read, *obj, "a read returns what was inserted last");
        Arc::ptr_eq(&read, obj)
    }

    #[test]
    fn reads_after_an_insert_return_the_inserted_object_while_it_is_recent() {
        let store = Store::new();
        store.add_indexer(LABEL_INDEX, label_index::<Pod>);
        let p = pod("a", "p1", Some("u1"));
        store.insert(Arc::clone(&p));
        assert!(is_recent(&store, "a", "p1"));
        assert!(reads_same(&store, &p));
        let same = |objs: Vec<Arc<Pod>>| objs.len() == 1 && Arc::ptr_eq(&objs[0], &p);
        assert!(same(store.list()));
        assert!(same(store.by_index(CONTROLLER_UID_INDEX, "u1")));
        assert!(same(store.claimable("a", "u1")));
        let selector = [("app".to_string(), "p1".to_string())].into();
        assert!(same(store.list_by_labels("a", &selector)));

        // The next insert gets it back as the replaced object, without decoding.
        let changed = pod("a", "p1", Some("u2"));
        let old = store.insert(Arc::clone(&changed)).expect("replaced");
        assert!(Arc::ptr_eq(&old, &p));
        assert!(reads_same(&store, &changed));

        // Dropped on demand: reads decode again, to an equal object.
        store.forget_recent();
        assert!(!is_recent(&store, "a", "p1"));
        assert!(!reads_same(&store, &changed));
        assert_eq!(names(store.by_index(CONTROLLER_UID_INDEX, "u2")), ["p1"]);
    }

    #[test]
    fn objects_past_the_count_bound_are_decoded_again() {
        let store = recent_store(2);
        let (a, b, c) = (
            pod("a", "a", None),
            pod("a", "b", None),
            pod("a", "c", None),
        );
        for p in [&a, &b, &c] {
            store.insert(Arc::clone(p));
        }
        assert!(!is_recent(&store, "a", "a"));
        assert!(!reads_same(&store, &a));
        assert!(reads_same(&store, &b) && reads_same(&store, &c));
        assert_eq!(store.inner.read().recent.len(), 2);
    }

    #[test]
    fn objects_past_the_age_bound_are_decoded_again() {
        let codec = Codec::<Pod>::default_for().expect("pods are encoded");
        let store = Store::with_recent(Some(codec), 16, Duration::from_secs(10));
        let written = Instant::now();
        let p = pod("a", "p1", None);
        store.insert(Arc::clone(&p));
        store.expire_recent_at(written + Duration::from_secs(5));
        assert!(reads_same(&store, &p), "younger than the bound");
        store.expire_recent_at(Instant::now() + Duration::from_secs(10));
        assert!(!is_recent(&store, "a", "p1"));
        assert!(!reads_same(&store, &p));

        // Inserts expire what is too old, their own write included when the bound is zero.
        let store = Store::with_recent(Some(codec), 16, Duration::ZERO);
        store.insert(Arc::clone(&p));
        assert!(!is_recent(&store, "a", "p1"));
        assert!(!reads_same(&store, &p));
    }

    #[test]
    fn a_rewritten_key_keeps_its_copy_when_its_earlier_write_expires() {
        let store = recent_store(2);
        let (v1, v2) = (pod("a", "a", None), pod("a", "a", Some("u1")));
        store.insert(Arc::clone(&v1));
        store.insert(Arc::clone(&v2));
        // The first write of `a` leaves the recent ones; the entry holds the second's object.
        store.insert(pod("a", "b", None));
        assert!(reads_same(&store, &v2));
        store.insert(pod("a", "c", None));
        assert!(!reads_same(&store, &v2));
    }

    #[test]
    fn removals_and_relists_keep_recent_copies_consistent() {
        let store = recent_store(2);
        let (a1, a2) = (pod("a", "a", None), pod("a", "a", Some("u1")));
        store.insert(Arc::clone(&a1));
        let removed = store.remove(&ObjectKey::new("a", "a")).expect("cached");
        assert!(Arc::ptr_eq(&removed, &a1));
        assert_eq!(store.get(&ObjectKey::new("a", "a")), None);
        // Inserted again: the removed write's slot expires without touching the new entry.
        store.insert(Arc::clone(&a2));
        let b = pod("a", "b", None);
        store.insert(Arc::clone(&b));
        assert!(reads_same(&store, &a2) && reads_same(&store, &b));

        // A relist keeps bytes only, and hands back the recent copies as the replaced objects.
        let a3 = pod("a", "a", Some("u2"));
        let replaced = store.replace(vec![Arc::clone(&a3), pod("a", "c", None)]);
        let old_a = replaced
            .upserted
            .iter()
            .find(|(new, _)| Arc::ptr_eq(new, &a3))
            .and_then(|(_, old)| old.clone())
            .expect("a was cached");
        assert!(Arc::ptr_eq(&old_a, &a2));
        assert_eq!(replaced.removed.len(), 1);
        assert!(Arc::ptr_eq(&replaced.removed[0].1, &b));
        assert!(!is_recent(&store, "a", "a") && !reads_same(&store, &a3));
        assert_eq!(names(store.by_index(CONTROLLER_UID_INDEX, "u2")), ["a"]);
        assert!(store.by_index(CONTROLLER_UID_INDEX, "u1").is_empty());

        // Later inserts expire the slots of replaced and removed writes harmlessly.
        let (d, e) = (pod("a", "d", None), pod("a", "e", None));
        store.insert(Arc::clone(&d));
        store.insert(Arc::clone(&e));
        assert!(reads_same(&store, &d) && reads_same(&store, &e));
        assert_eq!(names(store.list()), ["a", "c", "d", "e"]);
        assert_eq!(store.inner.read().recent.len(), 2);
    }
}
