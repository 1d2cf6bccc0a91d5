//! The node IPAM controller with kube's range allocator (`pkg/controller/nodeipam`): with
//! `--allocate-node-cidrs`, every node without `spec.podCIDR` gets the next free
//! `/--node-cidr-mask-size` block of `--cluster-cidr` (one per family when dual-stack), the
//! service range excluded; the CIDRs of existing nodes are taken at start and freed when a node
//! goes. A full range is reported as a `CIDRNotAvailable` event on the node.

pub mod cidr;
pub mod cidr_set;
pub mod range_allocator;

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use kube::Client;
use parking_lot::Mutex;
use rkcm_runtime::events::{EventRecorder, EventType};
use rkcm_runtime::informer::{wait_for_cache_sync, InformerFactory, Notification, SharedInformer};
use rkcm_runtime::worker::{self, ErrorPolicy};
use rkcm_runtime::workqueue::RateLimitingQueue;
use rkcm_runtime::{ObjectKey, Shutdown};
use serde_json::json;

use self::cidr::Cidr;
use self::range_allocator::{node_pod_cidrs, AllocatorError, RangeAllocator};
use crate::node_options::NodeOptions;

/// Workers updating node CIDRs (`cidrUpdateWorkers`).
pub const CIDR_UPDATE_WORKERS: usize = 30;

/// Invalid IPAM flags.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// `--cluster-cidr` is empty.
    #[error("--cluster-cidr must be specified when --allocate-node-cidrs=true")]
    NoClusterCidr,
    /// A CIDR does not parse.
    #[error(transparent)]
    Parse(#[from] cidr::ParseCidrError),
    /// More than one CIDR per family, or more than two.
    #[error("clusterCIDRs: must contain at most one CIDR per IP family and at most two")]
    TooMany,
    /// The node mask does not fit the cluster CIDR.
    #[error(transparent)]
    Set(#[from] cidr_set::CidrSetError),
}

/// The allocator's settings.
#[derive(Clone, Debug)]
pub struct Config {
    /// `--cluster-cidr`, parsed.
    pub cluster_cidrs: Vec<Cidr>,
    /// `--service-cluster-ip-range`, parsed.
    pub service_range: Option<Cidr>,
    /// `--node-cidr-mask-size-ipv4`.
    pub mask_v4: u8,
    /// `--node-cidr-mask-size-ipv6`.
    pub mask_v6: u8,
}

impl Config {
    /// Parses and checks the flags.
    pub fn from_options(o: &NodeOptions) -> Result<Self, ConfigError> {
        let cluster_cidrs: Vec<Cidr> = o
            .cluster_cidr
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::parse)
            .collect::<Result<_, _>>()?;
        if cluster_cidrs.is_empty() {
            return Err(ConfigError::NoClusterCidr);
        }
        if cluster_cidrs.len() > 2
            || (cluster_cidrs.len() == 2 && cluster_cidrs[0].v6 == cluster_cidrs[1].v6)
        {
            return Err(ConfigError::TooMany);
        }
        let service_range = o
            .service_cluster_ip_range
            .split(',')
            .map(str::trim)
            .find(|s| !s.is_empty())
            .map(str::parse)
            .transpose()?;
        let config = Self {
            cluster_cidrs,
            service_range,
            mask_v4: o.node_cidr_mask_size_ipv4,
            mask_v6: o.node_cidr_mask_size_ipv6,
        };
        config.allocator()?;
        Ok(config)
    }

    fn allocator(&self) -> Result<RangeAllocator, cidr_set::CidrSetError> {
        RangeAllocator::new(
            &self.cluster_cidrs,
            self.mask_v4,
            self.mask_v6,
            self.service_range,
        )
    }
}

/// Errors assigning a node its CIDRs.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No CIDR could be allocated or occupied.
    #[error(transparent)]
    Allocator(#[from] AllocatorError),
    /// The node could not be patched.
    #[error("failed to patch node CIDR of node {node}")]
    Patch {
        /// The node.
        node: String,
        /// The API error.
        #[source]
        source: kube::Error,
    },
}

/// The node IPAM controller.
pub struct NodeIpamController {
    client: Client,
    nodes: SharedInformer<Node>,
    recorder: EventRecorder,
    allocator: Mutex<RangeAllocator>,
    queue: RateLimitingQueue<String>,
}

impl NodeIpamController {
    /// The controller over the factory's Node informer.
    pub fn new(
        factory: &InformerFactory,
        client: Client,
        recorder: EventRecorder,
        config: Config,
    ) -> Arc<Self> {
        let allocator = config
            .allocator()
            .expect("Config::from_options checked the allocator");
        let this = Arc::new(Self {
            client,
            nodes: factory.informer::<Node>(),
            recorder,
            allocator: Mutex::new(allocator),
            queue: RateLimitingQueue::new("cidrallocator_node"),
        });
        let weak = Arc::downgrade(&this);
        this.nodes.add_event_handler(move |note| {
            let Some(this) = weak.upgrade() else { return };
            match note {
                Notification::Add(n) => {
                    if let Some(name) = n.metadata.name.clone() {
                        this.queue.add(name);
                    }
                }
                Notification::Update { new, .. } => {
                    if node_pod_cidrs(&new).is_empty() {
                        if let Some(name) = new.metadata.name.clone() {
                            this.queue.add(name);
                        }
                    }
                }
                Notification::Delete(d) => this.allocator.lock().release(d.object()),
            }
        });
        this
    }

    /// Waits for the cache, takes the CIDRs of the nodes that have them, and runs the workers.
    pub async fn run(self: Arc<Self>, shutdown: Shutdown) {
        tracing::info!(
            controller = "node-ipam-controller",
            "starting range CIDR allocator"
        );
        if wait_for_cache_sync("cidrallocator", &[&self.nodes], &shutdown).await {
            {
                let mut allocator = self.allocator.lock();
                for node in self.nodes.store().list() {
                    if let Err(e) = allocator.occupy(&node) {
                        tracing::error!(error = %e, "failed to occupy node CIDRs");
                    }
                }
            }
            let this = Arc::clone(&self);
            worker::run(
                self.queue.clone(),
                CIDR_UPDATE_WORKERS,
                shutdown,
                ErrorPolicy::handle_error(),
                move |name: String| {
                    let this = Arc::clone(&this);
                    async move { this.sync(&name).await }
                },
            )
            .await;
        }
        tracing::info!(
            controller = "node-ipam-controller",
            "shutting down range CIDR allocator"
        );
    }

    /// Occupies the node's CIDRs, or allocates and writes new ones (`AllocateOrOccupyCIDR`,
    /// `updateCIDRsAllocation`).
    pub async fn sync(&self, name: &str) -> Result<(), Error> {
        let Some(node) = self.nodes.store().get(&ObjectKey::cluster(name)) else {
            return Ok(());
        };
        if !node_pod_cidrs(&node).is_empty() {
            self.allocator.lock().occupy(&node)?;
            return Ok(());
        }
        let allocated = self.allocator.lock().allocate();
        let allocated = match allocated {
            Ok(a) => a,
            Err(e) => {
                self.recorder.event_for(
                    &*node,
                    EventType::Normal,
                    "CIDRNotAvailable",
                    format!("Node {name} status is now: CIDRNotAvailable"),
                );
                return Err(e.into());
            }
        };
        let cidrs: Vec<String> = allocated.iter().map(Cidr::to_string).collect();
        let api: Api<Node> = Api::all(self.client.clone());
        // The cache may be behind: a node that got its CIDRs meanwhile keeps them.
        match api.get(name).await {
            Ok(fresh) if !node_pod_cidrs(&fresh).is_empty() => {
                let mut allocator = self.allocator.lock();
                allocator.release_cidrs(&allocated);
                if node_pod_cidrs(&fresh) != cidrs {
                    tracing::info!(
                        node = name,
                        "node already has a CIDR allocated; releasing the new one"
                    );
                    allocator.occupy(&fresh)?;
                }
                return Ok(());
            }
            Ok(_) => {}
            Err(source) => {
                self.allocator.lock().release_cidrs(&allocated);
                return Err(Error::Patch {
                    node: name.into(),
                    source,
                });
            }
        }
        let patch = json!({
            "metadata": { "uid": node.metadata.uid },
            "spec": { "podCIDR": cidrs[0], "podCIDRs": cidrs },
        });
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                tracing::info!(node = name, cidrs = ?cidrs, "set node PodCIDR");
                Ok(())
            }
            Err(source) => {
                self.recorder.event_for(
                    &*node,
                    EventType::Normal,
                    "CIDRAssignmentFailed",
                    format!("Node {name} status is now: CIDRAssignmentFailed"),
                );
                self.allocator.lock().release_cidrs(&allocated);
                Err(Error::Patch {
                    node: name.into(),
                    source,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_checked() {
        let mut o = NodeOptions {
            allocate_node_cidrs: true,
            ..NodeOptions::default()
        };
        assert_eq!(
            Config::from_options(&o).unwrap_err(),
            ConfigError::NoClusterCidr
        );
        o.cluster_cidr = "10.244.0.0/16,10.245.0.0/16".into();
        assert_eq!(Config::from_options(&o).unwrap_err(), ConfigError::TooMany);
        o.cluster_cidr = "10.244.0.0/16,fd00::/48".into();
        o.service_cluster_ip_range = "10.96.0.0/12".into();
        let c = Config::from_options(&o).unwrap();
        assert_eq!(c.cluster_cidrs.len(), 2);
        assert_eq!(c.service_range.unwrap().to_string(), "10.96.0.0/12");
        o.cluster_cidr = "10.0.0.0/8".into();
        o.node_cidr_mask_size_ipv4 = 25;
        assert!(Config::from_options(&o).is_err());
    }
}
