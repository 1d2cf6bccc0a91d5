//! The scheduler's cache: per-node requested resources and pod counts, kept from pod events.
//!
//! Mirrors kube-scheduler's `backend/cache`: every pod the cache holds contributes its requests
//! to its node's [`NodeUsage`], and an update replaces its old contribution, so reading a node's
//! usage costs nothing per pod. A pod enters the cache when an event shows it bound (`AddPod`,
//! `UpdatePod`) or when this scheduler binds it (`AssumePod`): the *assumed* pod counts on its node
//! until the event showing the binding replaces it, the binding fails (`ForgetPod`) or the pod is
//! deleted. As in kube 1.33 (`durationToExpireAssumedPod` is 0), assumed pods do not expire.
//!
//! kube-scheduler's pod informer selects `status.phase!=Succeeded,status.phase!=Failed`, so a pod
//! that finishes leaves its cache as if deleted; the shared informer here has no field selector,
//! and the cache drops terminal pods itself.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use rkcm_runtime::ObjectKey;

use super::predicates::{is_terminal, NodeUsage};
use super::resources::{pod_requests, Resources};
use crate::kubelet::node_name_index;

/// What one pod adds to its node.
#[derive(Debug)]
struct PodState {
    node: String,
    requests: Resources,
    /// The pod as this scheduler bound it, while no event has shown the binding yet.
    assumed: Option<Arc<Pod>>,
}

/// Per-node usage of the pods bound or assumed on each node.
#[derive(Debug, Default)]
pub struct Cache {
    pods: HashMap<ObjectKey, PodState>,
    nodes: HashMap<String, NodeUsage>,
}

impl Cache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes in `pod` as an informer event shows it (an add, or the new state of an update).
    /// A bound, unfinished pod replaces whatever its key contributed before, an assumed pod
    /// included; a finished one leaves. An unbound pod leaves an assumed entry alone: the event
    /// showing the binding has not come yet.
    pub fn observe(&mut self, key: &ObjectKey, pod: &Pod) {
        if is_terminal(pod) {
            self.remove(key);
            return;
        }
        let Some(node) = node_name_index(pod).pop() else {
            if self.pods.get(key).is_some_and(|s| s.assumed.is_none()) {
                // Bound before and unbound now cannot happen (`spec.nodeName` is immutable once
                // set); a pod deleted and re-created under the same name could look like it.
                self.remove(key);
            }
            return;
        };
        self.insert(
            key.clone(),
            PodState {
                node,
                requests: pod_requests(pod),
                assumed: None,
            },
        );
    }

    /// The pod under `key` left the informer's cache (kube's `RemovePod`, and `ForgetPod` of an
    /// assumed pod that was deleted).
    pub fn remove(&mut self, key: &ObjectKey) {
        if let Some(old) = self.pods.remove(key) {
            self.subtract(&old);
        }
    }

    /// Counts `pod` on `node` from now on, before any event shows it bound (kube's `AssumePod`).
    pub fn assume(&mut self, key: ObjectKey, pod: Arc<Pod>, node: &str) {
        let state = PodState {
            node: node.to_string(),
            requests: pod_requests(&pod),
            assumed: Some(pod),
        };
        self.insert(key, state);
    }

    /// Undoes [`Cache::assume`] after a failed binding (kube's `ForgetPod`). A pod an event has
    /// shown bound meanwhile stays.
    pub fn forget(&mut self, key: &ObjectKey) {
        if self.is_assumed(key) {
            self.remove(key);
        }
    }

    /// True when `key` was bound by this scheduler and no event has shown the binding yet.
    pub fn is_assumed(&self, key: &ObjectKey) -> bool {
        self.pods.get(key).is_some_and(|s| s.assumed.is_some())
    }

    /// The assumed pods with the nodes they were bound to.
    pub fn assumed(&self) -> Vec<(Arc<Pod>, String)> {
        self.pods
            .values()
            .filter_map(|s| s.assumed.as_ref().map(|p| (Arc::clone(p), s.node.clone())))
            .collect()
    }

    /// What the pods bound or assumed on `node` use.
    pub fn usage(&self, node: &str) -> NodeUsage {
        self.nodes.get(node).cloned().unwrap_or_default()
    }

    /// How many pods the cache holds, assumed ones included.
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    /// True when the cache holds no pod.
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    fn insert(&mut self, key: ObjectKey, state: PodState) {
        let usage = self.nodes.entry(state.node.clone()).or_default();
        usage.requested.add(&state.requests);
        usage.pods += 1;
        if let Some(old) = self.pods.insert(key, state) {
            self.subtract(&old);
        }
    }

    fn subtract(&mut self, old: &PodState) {
        let Some(usage) = self.nodes.get_mut(&old.node) else {
            return;
        };
        usage.requested.sub(&old.requests);
        usage.pods = usage.pods.saturating_sub(1);
        if usage.pods == 0 {
            self.nodes.remove(&old.node);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSpec, PodStatus, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    const NODES: [&str; 4] = ["n0", "n1", "n2", "n3"];

    /// SplitMix64: a fixed seed gives the same event sequence on every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    fn random_pod(rng: &mut Rng, name: &str, node: Option<&str>) -> Pod {
        let mut requests = std::collections::BTreeMap::new();
        if rng.below(4) > 0 {
            requests.insert(
                "cpu".to_string(),
                Quantity(format!("{}m", rng.below(4) * 250)),
            );
        }
        if rng.below(2) > 0 {
            requests.insert(
                "memory".to_string(),
                Quantity(format!("{}Mi", rng.below(512))),
            );
        }
        if rng.below(8) == 0 {
            requests.insert("example.com/gpu".to_string(), Quantity("1".into()));
        }
        let phase = match rng.below(10) {
            0 => Some("Succeeded"),
            1 => Some("Failed"),
            2..=5 => Some("Running"),
            _ => None,
        };
        Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: node.map(str::to_string),
                containers: vec![Container {
                    name: "c".into(),
                    resources: Some(ResourceRequirements {
                        requests: Some(requests),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: phase.map(str::to_string),
                ..Default::default()
            }),
        }
    }

    /// The scheduler's view recounted from scratch: the informer's bound, unfinished pods on
    /// `node` plus the pods assumed there.
    fn recount(
        store: &HashMap<ObjectKey, Pod>,
        assumed: &HashMap<ObjectKey, (Arc<Pod>, String)>,
        node: &str,
    ) -> NodeUsage {
        let bound = store
            .values()
            .filter(|p| node_name_index(p).first().map(String::as_str) == Some(node));
        let mut usage = NodeUsage::of(bound);
        for (pod, _) in assumed.values().filter(|(_, n)| n == node) {
            usage.add_pod(pod);
        }
        usage
    }

    /// Usage with zero amounts dropped: a missing resource and a zero one are the same.
    fn normalized(mut usage: NodeUsage) -> NodeUsage {
        usage.requested.0.retain(|_, amount| *amount != 0);
        usage
    }

    #[test]
    fn incremental_accounting_equals_a_recount_after_random_pod_events() {
        let mut rng = Rng(0x5eed_2027);
        let mut cache = Cache::new();
        let mut store: HashMap<ObjectKey, Pod> = HashMap::new();
        let mut assumed: HashMap<ObjectKey, (Arc<Pod>, String)> = HashMap::new();
        let mut counts = [0usize; 5];
        for step in 0..5_000 {
            let key = ObjectKey::new("default", format!("p{}", rng.below(32)));
            let event = rng.below(10);
            match event {
                // Add or update, as the informer shows it.
                0..=3 => {
                    // `spec.nodeName` stays once set, but re-created pods may differ.
                    let node = match store.get(&key).and_then(|p| node_name_index(p).pop()) {
                        Some(node) if rng.below(8) > 0 => Some(node),
                        _ => (rng.below(4) == 0).then(|| NODES[rng.below(NODES.len())].into()),
                    };
                    let pod = random_pod(&mut rng, &key.name, node.as_deref());
                    if is_terminal(&pod) || node.is_some() {
                        assumed.remove(&key);
                    }
                    cache.observe(&key, &pod);
                    store.insert(key.clone(), pod);
                    counts[0] += 1;
                }
                // Delete.
                4 => {
                    store.remove(&key);
                    assumed.remove(&key);
                    cache.remove(&key);
                    counts[1] += 1;
                }
                // Assume: the scheduler binds a pending pod.
                5..=7 => {
                    let pending = store.get(&key).filter(|p| {
                        node_name_index(p).is_empty()
                            && !is_terminal(p)
                            && !assumed.contains_key(&key)
                    });
                    if let Some(pod) = pending {
                        let node = NODES[rng.below(NODES.len())];
                        let pod = Arc::new(pod.clone());
                        assumed.insert(key.clone(), (Arc::clone(&pod), node.into()));
                        cache.assume(key.clone(), pod, node);
                        counts[2] += 1;
                    }
                }
                // Forget: the binding failed (or names a pod that is not assumed).
                _ => {
                    if assumed.remove(&key).is_some() {
                        counts[3] += 1;
                    } else {
                        counts[4] += 1;
                    }
                    cache.forget(&key);
                }
            }
            for node in NODES {
                assert_eq!(
                    normalized(cache.usage(node)),
                    normalized(recount(&store, &assumed, node)),
                    "node {node} after step {step} (event {event} on {key})"
                );
            }
            let live = store
                .values()
                .filter(|p| !node_name_index(p).is_empty() && !is_terminal(p))
                .count();
            assert_eq!(cache.len(), live + assumed.len(), "pods after step {step}");
            assert_eq!(cache.assumed().len(), assumed.len());
        }
        // Every kind of event happened many times.
        assert!(counts.iter().all(|&c| c > 100), "event counts {counts:?}");
    }

    #[test]
    fn an_event_showing_the_binding_replaces_the_assumed_pod_and_forget_then_keeps_it() {
        let mut rng = Rng(1);
        let key = ObjectKey::new("default", "p");
        let mut cache = Cache::new();
        let mut pending = random_pod(&mut rng, "p", None);
        pending.status = None;
        cache.observe(&key, &pending);
        assert!(cache.is_empty());
        cache.assume(key.clone(), Arc::new(pending.clone()), "n1");
        assert!(cache.is_assumed(&key));
        assert_eq!(cache.usage("n1").pods, 1);
        // A status update of the still unbound pod leaves the assumption.
        cache.observe(&key, &pending);
        assert!(cache.is_assumed(&key));
        let mut bound = pending.clone();
        bound.spec.as_mut().expect("spec").node_name = Some("n1".into());
        cache.observe(&key, &bound);
        assert!(!cache.is_assumed(&key));
        cache.forget(&key);
        assert_eq!(cache.usage("n1").pods, 1);
        bound.status = Some(PodStatus {
            phase: Some("Succeeded".into()),
            ..Default::default()
        });
        cache.observe(&key, &bound);
        assert_eq!(cache.usage("n1"), NodeUsage::default());
        assert!(cache.is_empty());
    }
}
