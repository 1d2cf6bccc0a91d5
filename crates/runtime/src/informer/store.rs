//! Thread-safe, indexed object cache. Mirrors client-go `thread_safe_store.go` and `index.go`.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use kube::Resource;
use parking_lot::RwLock;

use crate::ObjectKey;

/// Index of objects by namespace (cluster-scoped objects index under `""`).
pub const NAMESPACE_INDEX: &str = "namespace";

/// Index of objects by the uid of their controller owner reference (`controller: true`).
pub const CONTROLLER_UID_INDEX: &str = "controllerUID";

/// Index of the objects without a controller owner reference, by namespace: the orphans a
/// controller may adopt. With [`CONTROLLER_UID_INDEX`] it gives a controller every object it
/// can claim without scanning its namespace.
pub const ORPHAN_INDEX: &str = "orphanNamespace";

/// Computes the index values of an object.
type IndexFunc<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// An object's key as the store holds it: allocated once per object and shared by the item map and
/// every index entry of the object (client-go keeps one key string per object too).
type SharedKey = Arc<ObjectKey>;

/// Index value → keys of the objects that have it.
type Index = HashMap<String, HashSet<SharedKey>>;

/// A thread-safe cache of objects keyed by [`ObjectKey`], with secondary indices.
///
/// Clones share the same cache. Reads clone `Arc`s and never block for long; callers must not
/// mutate cached objects (clone them first). Every store has [`NAMESPACE_INDEX`],
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
    items: HashMap<SharedKey, Arc<K>>,
    indexers: HashMap<String, IndexFunc<K>>,
    /// Invariant: one index per indexer, and each index holds exactly the values its indexer
    /// computes for the objects in `items` (no empty sets).
    indices: HashMap<String, Index>,
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
    /// An empty store with the built-in indices.
    pub fn new() -> Self {
        let store = Self {
            inner: Arc::new(RwLock::new(Inner {
                items: HashMap::new(),
                indexers: HashMap::new(),
                indices: HashMap::new(),
            })),
        };
        store.add_indexer(NAMESPACE_INDEX, namespace_index::<K>);
        store.add_indexer(CONTROLLER_UID_INDEX, controller_uid_index::<K>);
        store.add_indexer(ORPHAN_INDEX, orphan_index::<K>);
        store
    }

    /// Adds (or replaces) the index `name`, computed by `f`, and indexes the objects already cached.
    pub fn add_indexer(&self, name: &str, f: impl Fn(&K) -> Vec<String> + Send + Sync + 'static) {
        let f: IndexFunc<K> = Arc::new(f);
        let mut inner = self.inner.write();
        let mut index = Index::new();
        for (key, obj) in &inner.items {
            for value in f(obj) {
                index.entry(value).or_default().insert(Arc::clone(key));
            }
        }
        inner.indices.insert(name.to_string(), index);
        inner.indexers.insert(name.to_string(), f);
    }

    /// The object with `key`, if cached.
    pub fn get(&self, key: &ObjectKey) -> Option<Arc<K>> {
        self.inner.read().items.get(key).cloned()
    }

    /// Every cached object, in no particular order.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.inner.read().items.values().cloned().collect()
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
        let inner = self.inner.read();
        let Some(keys) = inner.indices.get(index_name).and_then(|i| i.get(value)) else {
            return Vec::new();
        };
        keys.iter()
            .filter_map(|k| inner.items.get(&**k).cloned())
            .collect()
    }

    /// The objects of `namespace` a controller with uid `owner_uid` may claim: those whose
    /// controller reference names it (including ones that stopped matching its selector, to
    /// release them) and the namespace's orphans. kube's controllers list the whole namespace
    /// and skip the objects other controllers own; the two indices give the same candidates
    /// without the scan.
    pub fn claimable(&self, namespace: &str, owner_uid: &str) -> Vec<Arc<K>> {
        let mut objects: Vec<Arc<K>> = self
            .by_index(CONTROLLER_UID_INDEX, owner_uid)
            .into_iter()
            .filter(|o| o.meta().namespace.as_deref().unwrap_or_default() == namespace)
            .collect();
        objects.extend(self.by_index(ORPHAN_INDEX, namespace));
        objects
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

    /// Adds or replaces `obj`, returning the object it replaced.
    pub fn insert(&self, obj: Arc<K>) -> Option<Arc<K>> {
        let key = ObjectKey::from_obj(&*obj);
        let mut inner = self.inner.write();
        insert(&mut inner, key, obj)
    }

    /// Removes the object with `key`, returning it.
    pub fn remove(&self, key: &ObjectKey) -> Option<Arc<K>> {
        let mut inner = self.inner.write();
        remove(&mut inner, key)
    }

    /// Replaces the whole content with `objects`.
    ///
    /// Returns, for each new object, the object it replaced (if any), and the objects that are gone.
    pub fn replace(&self, objects: Vec<Arc<K>>) -> Replaced<K> {
        let mut inner = self.inner.write();
        let mut seen: HashSet<SharedKey> = HashSet::with_capacity(objects.len());
        let mut upserted = Vec::with_capacity(objects.len());
        for obj in objects {
            let key = insert_shared(&mut inner, ObjectKey::from_obj(&*obj), &obj);
            seen.insert(key.0);
            upserted.push((obj, key.1));
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
            if let Some(last) = remove(&mut inner, &key) {
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

fn insert<K>(inner: &mut Inner<K>, key: ObjectKey, obj: Arc<K>) -> Option<Arc<K>> {
    insert_shared(inner, key, &obj).1
}

/// Adds or replaces `obj` under `key`; returns the shared key (the one already held when the
/// object was cached before) and the object replaced.
fn insert_shared<K>(
    inner: &mut Inner<K>,
    key: ObjectKey,
    obj: &Arc<K>,
) -> (SharedKey, Option<Arc<K>>) {
    let (key, old) = match inner.items.get_mut(&key) {
        Some(cached) => {
            let old = std::mem::replace(cached, Arc::clone(obj));
            let key = inner
                .items
                .get_key_value(&key)
                .map(|(k, _)| Arc::clone(k))
                .unwrap_or_else(|| Arc::new(key));
            (key, Some(old))
        }
        None => {
            let key = Arc::new(key);
            inner.items.insert(Arc::clone(&key), Arc::clone(obj));
            (key, None)
        }
    };
    update_indices(inner, &key, old.as_deref(), Some(&**obj));
    (key, old)
}

fn remove<K>(inner: &mut Inner<K>, key: &ObjectKey) -> Option<Arc<K>> {
    let (key, old) = inner.items.remove_entry(key)?;
    update_indices(inner, &key, Some(&*old), None);
    shrink_after_removals(inner);
    Some(old)
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
    use k8s_openapi::api::core::v1::Pod;
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
            ..Default::default()
        })
    }

    fn names(mut objs: Vec<Arc<Pod>>) -> Vec<String> {
        objs.sort_by_key(|p| p.metadata.name.clone());
        objs.iter()
            .map(|p| p.metadata.name.clone().unwrap_or_default())
            .collect()
    }

    #[test]
    fn namespace_and_controller_uid_indices_follow_updates_and_deletes() {
        let store = Store::new();
        store.insert(pod("a", "p1", Some("u1")));
        store.insert(pod("a", "p2", Some("u1")));
        store.insert(pod("b", "p3", None));
        assert_eq!(names(store.list_by_namespace("a")), ["p1", "p2"]);
        assert_eq!(names(store.list_by_namespace("")), ["p1", "p2", "p3"]);
        assert_eq!(
            names(store.by_index(CONTROLLER_UID_INDEX, "u1")),
            ["p1", "p2"]
        );

        // Re-owned: moves between index values.
        store.insert(pod("a", "p2", Some("u2")));
        assert_eq!(names(store.by_index(CONTROLLER_UID_INDEX, "u1")), ["p1"]);
        assert_eq!(names(store.by_index(CONTROLLER_UID_INDEX, "u2")), ["p2"]);

        store.remove(&ObjectKey::new("a", "p1"));
        assert!(store.by_index(CONTROLLER_UID_INDEX, "u1").is_empty());
        let mut values = store.index_values(CONTROLLER_UID_INDEX);
        values.sort();
        assert_eq!(values, ["u2"], "empty index values are dropped");
        assert_eq!(store.len(), 2);
        assert!(store.by_index("no-such-index", "x").is_empty());
    }

    #[test]
    fn claimable_objects_are_the_owners_and_the_namespaces_orphans() {
        let store = Store::new();
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

    #[test]
    fn custom_indexer_indexes_objects_already_cached() {
        let store = Store::new();
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

    #[test]
    fn replace_reports_upserts_with_their_old_state_and_removals() {
        let store = Store::new();
        store.insert(pod("a", "keep", None));
        store.insert(pod("a", "gone", Some("u1")));
        let replaced = store.replace(vec![pod("a", "keep", None), pod("a", "new", None)]);
        let mut upserted: Vec<(String, bool)> = replaced
            .upserted
            .iter()
            .map(|(n, o)| (n.metadata.name.clone().unwrap_or_default(), o.is_some()))
            .collect();
        upserted.sort();
        assert_eq!(
            upserted,
            [("keep".to_string(), true), ("new".to_string(), false)]
        );
        assert_eq!(replaced.removed.len(), 1);
        assert_eq!(replaced.removed[0].0, ObjectKey::new("a", "gone"));
        assert!(store.by_index(CONTROLLER_UID_INDEX, "u1").is_empty());
        assert_eq!(names(store.list()), ["keep", "new"]);
    }
}
