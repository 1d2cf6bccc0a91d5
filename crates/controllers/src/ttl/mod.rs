//! The TTL controller (`pkg/controller/ttl`): keeps the `node.alpha.kubernetes.io/ttl`
//! annotation of every node at the TTL the cluster's size calls for ([`boundaries`]), which
//! kubelets use as how long they may cache Secrets and ConfigMaps.

pub mod boundaries;

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use kube::Client;
use parking_lot::Mutex;
use rkcm_runtime::informer::{wait_for_cache_sync, InformerFactory, Notification, SharedInformer};
use rkcm_runtime::worker::{self, ErrorPolicy};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{ObjectKey, Shutdown};
use serde_json::json;

use self::boundaries::ClusterSize;

/// The annotation (`v1.ObjectTTLAnnotationKey`).
pub const TTL_ANNOTATION: &str = "node.alpha.kubernetes.io/ttl";
/// Workers kube runs (`startTTLController`).
pub const WORKERS: usize = 5;

/// Errors writing the annotation.
#[derive(Debug, thiserror::Error)]
#[error("failed to change ttl annotation for node {node}")]
pub struct Error {
    /// The node.
    pub node: String,
    /// The API error.
    #[source]
    pub source: kube::Error,
}

/// The annotation's value, when it is an integer (`getIntFromAnnotation`).
pub fn current_ttl(node: &Node) -> Option<i64> {
    node.metadata
        .annotations
        .as_ref()?
        .get(TTL_ANNOTATION)?
        .parse()
        .ok()
}

/// The TTL controller.
pub struct TtlController {
    client: Client,
    nodes: SharedInformer<Node>,
    size: Mutex<ClusterSize>,
    queue: RateLimitingQueue<String>,
}

impl TtlController {
    /// The controller over the factory's Node informer.
    pub fn new(factory: &InformerFactory, client: Client) -> Arc<Self> {
        let this = Arc::new(Self {
            client,
            nodes: factory.informer::<Node>(),
            size: Mutex::new(ClusterSize::default()),
            queue: RateLimitingQueue::new("ttlcontroller"),
        });
        let weak = Arc::downgrade(&this);
        this.nodes.add_event_handler(move |note| {
            let Some(this) = weak.upgrade() else { return };
            match note {
                Notification::Add(n) => {
                    this.size.lock().add_node();
                    if let Some(name) = n.metadata.name.clone() {
                        this.queue.add(name);
                    }
                }
                Notification::Update { new, .. } => {
                    if let Some(name) = new.metadata.name.clone() {
                        this.queue.add(name);
                    }
                }
                Notification::Delete(_) => this.size.lock().delete_node(),
            }
        });
        this
    }

    /// Waits for the cache and runs `workers` loops until `shutdown`.
    pub async fn run(self: Arc<Self>, workers: usize, shutdown: Shutdown) {
        tracing::info!(controller = "ttl", "starting controller");
        if wait_for_cache_sync("TTL", &[&self.nodes], &shutdown).await {
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                workers,
                shutdown,
                ErrorPolicy::handle_error(),
                move |name: String| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&name).await }
                },
            )
            .await;
        }
        tracing::info!(controller = "ttl", "shutting down controller");
    }

    /// The TTL every node should carry now.
    pub fn desired_ttl_seconds(&self) -> i64 {
        self.size.lock().desired_ttl_seconds()
    }

    /// Sets the node's annotation to the desired TTL if it differs.
    pub async fn sync(&self, name: &str) -> Result<(), Error> {
        let Some(node) = self.nodes.store().get(&ObjectKey::cluster(name)) else {
            return Ok(());
        };
        let desired = self.desired_ttl_seconds();
        if current_ttl(&node) == Some(desired) {
            return Ok(());
        }
        let patch =
            json!({ "metadata": { "annotations": { TTL_ANNOTATION: desired.to_string() } } });
        let api: Api<Node> = Api::all(self.client.clone());
        api.patch(name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
            .map_err(|source| Error {
                node: name.into(),
                source,
            })?;
        tracing::debug!(node = name, ttl = desired, "changed ttl annotation");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    #[test]
    fn only_an_integer_annotation_counts() {
        let mut node = Node {
            metadata: ObjectMeta::default(),
            ..Node::default()
        };
        assert_eq!(current_ttl(&node), None);
        node.metadata.annotations = Some([(TTL_ANNOTATION.to_string(), "15".to_string())].into());
        assert_eq!(current_ttl(&node), Some(15));
        node.metadata.annotations = Some([(TTL_ANNOTATION.to_string(), "x".to_string())].into());
        assert_eq!(current_ttl(&node), None);
    }
}
