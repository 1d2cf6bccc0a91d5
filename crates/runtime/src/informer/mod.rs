//! Shared informers: list/watch into an indexed cache and fan notifications out to handlers.
//! Mirrors client-go `tools/cache`.
//!
//! Data flows one way: the reflector lists and watches the API server, the shared informer
//! applies each change to its [`Store`] and then hands a [`Notification`] to every handler, each on its
//! own task. The [`InformerFactory`] keeps one [`SharedInformer`] per type so that every controller
//! shares the same cache and the same watch.

mod compact;
mod encoded;
mod factory;
mod processor;
mod reflector;
mod shared_informer;
mod store;

use std::sync::Arc;

use crate::ObjectKey;

pub use factory::{
    trim_managed_fields, wait_for_cache_sync, HasSynced, InformerFactory, MetadataTransform,
};
pub use shared_informer::{AlreadyStarted, SharedInformer, Transform};
pub use store::{
    label_index, Store, CONTROLLER_UID_INDEX, LABEL_INDEX, NAMESPACE_INDEX, ORPHAN_INDEX,
};

/// How an object left the cache.
#[doc(alias = "DeletedFinalStateUnknown")]
#[derive(Debug)]
pub enum Deleted<K> {
    /// A watch DELETED event: the object as the server last had it.
    Known(Arc<K>),
    /// The object was missing from a relist: it was deleted while the watch was down, and `last` is
    /// the state this cache last saw, which may be stale.
    FinalStateUnknown {
        /// Key of the deleted object.
        key: ObjectKey,
        /// The last state the cache held.
        last: Arc<K>,
    },
}

impl<K> Deleted<K> {
    /// The deleted object (for a tombstone, its last known state).
    pub fn object(&self) -> &Arc<K> {
        match self {
            Deleted::Known(obj) => obj,
            Deleted::FinalStateUnknown { last, .. } => last,
        }
    }
}

impl<K> Clone for Deleted<K> {
    fn clone(&self) -> Self {
        match self {
            Deleted::Known(obj) => Deleted::Known(Arc::clone(obj)),
            Deleted::FinalStateUnknown { key, last } => Deleted::FinalStateUnknown {
                key: key.clone(),
                last: Arc::clone(last),
            },
        }
    }
}

/// A change delivered to an event handler, as client-go's `OnAdd` / `OnUpdate` / `OnDelete`.
///
/// Every update is delivered, including periodic resyncs (where `old` and `new` are the same
/// object) and relists; handlers decide what matters, for example by comparing `resourceVersion`.
#[derive(Debug)]
pub enum Notification<K> {
    /// The object entered the cache.
    Add(Arc<K>),
    /// The object changed (or was resynced or relisted).
    Update {
        /// The state before.
        old: Arc<K>,
        /// The state now in the cache.
        new: Arc<K>,
    },
    /// The object left the cache.
    Delete(Deleted<K>),
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Notification::Add(obj) => Notification::Add(Arc::clone(obj)),
            Notification::Update { old, new } => Notification::Update {
                old: Arc::clone(old),
                new: Arc::clone(new),
            },
            Notification::Delete(deleted) => Notification::Delete(deleted.clone()),
        }
    }
}
