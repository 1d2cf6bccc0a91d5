//! Keeps the node-authorizer [`Graph`] from the server's own watch cache, as kube's
//! `graph_populator.go` keeps it from informers of pods, persistent volumes and volume
//! attachments.
//!
//! The populator subscribes to the three resources when it is built and applies what they
//! published each time a node's request is decided ([`GraphPopulator::with_graph`]), under one
//! lock: no task to run or stop, and a node reads its pods' objects as soon as the write that
//! bound them returned (the cache publishes an event before the write answers). A subscription
//! that fell too far behind starts over from the cache's current objects.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{PersistentVolume, Pod};
use k8s_openapi::api::storage::v1::VolumeAttachment;
use parking_lot::Mutex;
use serde_json::Value;

use rkcm_apimachinery::catalog;

use super::graph::Graph;
use rkcm_storage::object;
use rkcm_storage::store::Store;
use rkcm_storage::watch_cache::{EventType, Next, Subscription, WatchEvent, WatchStart};

/// The resources the graph is built from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    Pods,
    PersistentVolumes,
    VolumeAttachments,
}

impl Source {
    const ALL: [Source; 3] = [
        Source::Pods,
        Source::PersistentVolumes,
        Source::VolumeAttachments,
    ];

    fn group_version_kind(self) -> (&'static str, &'static str) {
        match self {
            Source::Pods => ("v1", "Pod"),
            Source::PersistentVolumes => ("v1", "PersistentVolume"),
            Source::VolumeAttachments => ("storage.k8s.io/v1", "VolumeAttachment"),
        }
    }
}

struct Feed {
    source: Source,
    prefix: String,
    subscription: Option<Subscription>,
    revision: i64,
}

struct State {
    graph: Graph,
    feeds: Vec<Feed>,
}

/// The graph and the watches that keep it. Shared by every request; [`Self::with_graph`]
/// serialises them for as long as one decision takes.
pub struct GraphPopulator {
    store: Store,
    state: Mutex<State>,
}

impl GraphPopulator {
    /// A graph of the objects in `store` now, kept up to date from its watch cache.
    pub fn new(store: Store) -> Arc<Self> {
        let feeds = Source::ALL
            .iter()
            .filter_map(|&source| {
                let (gv, kind) = source.group_version_kind();
                let info = catalog::by_kind(gv, kind)?;
                Some(Feed {
                    source,
                    prefix: rkcm_server::rest::prefix(info, None),
                    subscription: None,
                    revision: 0,
                })
            })
            .collect();
        let populator = Arc::new(Self {
            store,
            state: Mutex::new(State {
                graph: Graph::new(),
                feeds,
            }),
        });
        populator.with_graph(|_| ());
        populator
    }

    /// Brings the graph up to date with every write published so far, then calls `f` on it.
    pub fn with_graph<T>(&self, f: impl FnOnce(&Graph) -> T) -> T {
        let mut state = self.state.lock();
        let State { graph, feeds } = &mut *state;
        for feed in feeds.iter_mut() {
            self.drain(graph, feed);
        }
        f(graph)
    }

    fn drain(&self, graph: &mut Graph, feed: &mut Feed) {
        loop {
            let Some(subscription) = feed.subscription.as_mut() else {
                self.resubscribe(graph, feed);
                continue;
            };
            match subscription.try_next(feed.revision) {
                None => return,
                Some(Next::Events(events)) => {
                    for event in events {
                        feed.revision = feed.revision.max(event.revision());
                        apply(graph, feed.source, &event);
                    }
                }
                Some(Next::Expired(_)) | Some(Next::TooSlow) | Some(Next::Closed) => {
                    tracing::debug!(source = ?feed.source, "node authorizer graph rebuilt");
                    feed.subscription = None;
                    forget_all(graph, feed.source);
                }
            }
        }
    }

    fn resubscribe(&self, graph: &mut Graph, feed: &mut Feed) {
        // A watch from the current state cannot be too old.
        let Ok(subscription) = self.store.cache().watch(&feed.prefix, None) else {
            return;
        };
        feed.revision = subscription.revision;
        if let WatchStart::Current(objects) = &subscription.start {
            for obj in objects {
                add(graph, feed.source, &obj.value());
            }
        }
        feed.subscription = Some(subscription);
    }
}

fn forget_all(graph: &mut Graph, source: Source) {
    match source {
        Source::Pods => graph.clear_pods(),
        Source::PersistentVolumes => graph.clear_pvs(),
        Source::VolumeAttachments => graph.clear_volume_attachments(),
    }
}

fn add(graph: &mut Graph, source: Source, value: &Value) {
    // Stored objects passed validation; one that does not decode adds nothing.
    match source {
        Source::Pods => {
            if let Ok(pod) = serde_json::from_value::<Pod>(value.clone()) {
                graph.add_pod(&pod);
            }
        }
        Source::PersistentVolumes => {
            if let Ok(pv) = serde_json::from_value::<PersistentVolume>(value.clone()) {
                graph.add_pv(&pv);
            }
        }
        Source::VolumeAttachments => {
            if let Ok(va) = serde_json::from_value::<VolumeAttachment>(value.clone()) {
                graph.add_volume_attachment(&va);
            }
        }
    }
}

fn apply(graph: &mut Graph, source: Source, event: &WatchEvent) {
    let value = &event.object.value();
    match event.kind {
        EventType::Added | EventType::Modified => add(graph, source, value),
        EventType::Deleted => {
            let name = object::name(value);
            match source {
                Source::Pods => graph.delete_pod(object::namespace(value), name),
                Source::PersistentVolumes => graph.delete_pv(name),
                Source::VolumeAttachments => graph.delete_volume_attachment(name),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::graph::tests::pod;
    use super::super::graph::VertexType;
    use super::*;
    use rkcm_storage::memory::MemoryBackend;

    fn key(kind: &str, gv: &str, ns: Option<&str>, name: &str) -> String {
        rkcm_server::rest::key(catalog::by_kind(gv, kind).expect("kind"), ns, name)
    }

    #[tokio::test]
    async fn the_graph_follows_the_stores_writes_from_before_and_after_it_was_built() {
        let store = Store::new(Arc::new(MemoryBackend::new()), 100)
            .await
            .expect("store");
        let pod_key = |name: &str| key("Pod", "v1", Some("ns0"), name);
        let value =
            |name: &str, node: &str| serde_json::to_value(pod("ns0", name, node)).expect("pod");
        store
            .create(&pod_key("before"), value("before", "node0"))
            .await
            .expect("create");
        let populator = GraphPopulator::new(store.clone());
        let reaches = |node: &str, secret: &str| {
            populator.with_graph(|g| g.has_path(node, VertexType::Secret, "ns0", secret).is_ok())
        };
        assert!(reaches("node0", "s-before"));
        let created = store
            .create(&pod_key("after"), value("after", "node1"))
            .await
            .expect("create");
        assert!(
            reaches("node1", "s-after"),
            "a write is seen as soon as it returned"
        );
        store
            .update(&pod_key("after"), value("after", "node0"), created.revision)
            .await
            .expect("update");
        assert!(!reaches("node1", "s-after"));
        assert!(reaches("node0", "s-after"));
        store
            .delete(&pod_key("before"), None)
            .await
            .expect("delete");
        assert!(!reaches("node0", "s-before"));
        let pv = serde_json::to_value(super::super::graph::tests::pv("pv0", "ns0", "pvc-after"))
            .expect("pv");
        store
            .create(&key("PersistentVolume", "v1", None, "pv0"), pv)
            .await
            .expect("create pv");
        assert!(populator.with_graph(|g| g
            .has_path("node0", VertexType::PersistentVolume, "", "pv0")
            .is_ok()));
    }
}
