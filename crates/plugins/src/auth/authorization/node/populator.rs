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

use k8s_openapi::api::core::v1::{
    Container, EnvFromSource, EnvVar, EphemeralContainer, LocalObjectReference, PersistentVolume,
    Pod, PodResourceClaim, PodResourceClaimStatus, PodSpec, PodStatus, Volume,
};
use k8s_openapi::api::storage::v1::VolumeAttachment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::Resource;
use parking_lot::Mutex;
use serde::Deserialize;

use rkcm_apimachinery::catalog;

use super::graph::Graph;
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
                add(graph, feed.source, obj.json());
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

fn add(graph: &mut Graph, source: Source, json: &[u8]) {
    // Stored objects passed validation; one that does not decode adds nothing.
    match source {
        Source::Pods => {
            if let Some(pod) = decode_pod(json) {
                graph.add_pod(&pod);
            }
        }
        Source::PersistentVolumes => {
            if let Ok(pv) = serde_json::from_slice::<PersistentVolume>(json) {
                graph.add_pv(&pv);
            }
        }
        Source::VolumeAttachments => {
            if let Ok(va) = serde_json::from_slice::<VolumeAttachment>(json) {
                graph.add_volume_attachment(&va);
            }
        }
    }
}

fn apply(graph: &mut Graph, source: Source, event: &WatchEvent) {
    let object = &event.object;
    match event.kind {
        EventType::Added | EventType::Modified => add(graph, source, object.json()),
        EventType::Deleted => {
            let name = object.name();
            match source {
                Source::Pods => graph.delete_pod(object.namespace(), name),
                Source::PersistentVolumes => graph.delete_pv(name),
                Source::VolumeAttachments => graph.delete_volume_attachment(name),
            }
        }
    }
}

/// A stored pod with only what [`Graph::add_pod`] reads: its name, node, service account, the
/// secrets, configmaps and claims its containers and volumes name, and the resource claims of
/// its status. Every pod write reaches the graph, and most of a pod (container images, probes,
/// resources, the status's conditions and container states, managed fields) is skipped
/// unread instead of decoded into a whole [`Pod`].
///
/// `None` when it does not decode, as a [`Pod`] would not: a value of the wrong type in a field
/// read, or another `apiVersion` or `kind`.
fn decode_pod(json: &[u8]) -> Option<Pod> {
    let pod: SlimPod = serde_json::from_slice(json).ok()?;
    let wrong = |field: Option<String>, expected: &str| field.is_some_and(|f| f != expected);
    if wrong(pod.api_version, Pod::API_VERSION) || wrong(pod.kind, Pod::KIND) {
        return None;
    }
    let meta = pod.metadata.unwrap_or_default();
    Some(Pod {
        metadata: ObjectMeta {
            name: meta.name,
            namespace: meta.namespace,
            ..ObjectMeta::default()
        },
        spec: pod.spec.map(|spec| PodSpec {
            node_name: spec.node_name,
            service_account_name: spec.service_account_name,
            image_pull_secrets: spec.image_pull_secrets,
            containers: spec
                .containers
                .unwrap_or_default()
                .into_iter()
                .map(SlimContainer::container)
                .collect(),
            init_containers: spec
                .init_containers
                .map(|c| c.into_iter().map(SlimContainer::container).collect()),
            ephemeral_containers: spec.ephemeral_containers.map(|c| {
                c.into_iter()
                    .map(|c| EphemeralContainer {
                        env: c.env,
                        env_from: c.env_from,
                        ..EphemeralContainer::default()
                    })
                    .collect()
            }),
            volumes: spec.volumes,
            resource_claims: spec.resource_claims,
            ..PodSpec::default()
        }),
        status: pod.status.map(|status| PodStatus {
            resource_claim_statuses: status.resource_claim_statuses,
            ..PodStatus::default()
        }),
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SlimPod {
    api_version: Option<String>,
    kind: Option<String>,
    metadata: Option<SlimMeta>,
    spec: Option<SlimSpec>,
    status: Option<SlimStatus>,
}

#[derive(Default, Deserialize)]
struct SlimMeta {
    name: Option<String>,
    namespace: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SlimSpec {
    node_name: Option<String>,
    service_account_name: Option<String>,
    image_pull_secrets: Option<Vec<LocalObjectReference>>,
    containers: Option<Vec<SlimContainer>>,
    init_containers: Option<Vec<SlimContainer>>,
    ephemeral_containers: Option<Vec<SlimContainer>>,
    volumes: Option<Vec<Volume>>,
    resource_claims: Option<Vec<PodResourceClaim>>,
}

/// A container's (or an ephemeral container's) references: its environment.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SlimContainer {
    env: Option<Vec<EnvVar>>,
    env_from: Option<Vec<EnvFromSource>>,
}

impl SlimContainer {
    fn container(self) -> Container {
        Container {
            env: self.env,
            env_from: self.env_from,
            ..Container::default()
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SlimStatus {
    resource_claim_statuses: Option<Vec<PodResourceClaimStatus>>,
}

#[cfg(test)]
mod tests {
    use super::super::graph::tests::pod;
    use super::super::graph::VertexType;
    use super::*;
    use rkcm_storage::memory::MemoryBackend;
    use serde_json::json;

    fn key(kind: &str, gv: &str, ns: Option<&str>, name: &str) -> String {
        rkcm_server::rest::key(catalog::by_kind(gv, kind).expect("kind"), ns, name)
    }

    /// A pod bound to `node0` that names a secret, configmap, claim, resource claim and service
    /// account in every place the graph looks, among fields it does not read.
    fn pod_with_every_reference() -> serde_json::Value {
        let secret = |name: &str| json!({"name": name});
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": "ns0", "name": "p", "uid": "u", "labels": {"a": "b"},
                "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]},
            "spec": {
                "nodeName": "node0",
                "serviceAccountName": "sa",
                "imagePullSecrets": [{"name": "pull"}],
                "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}},
                    "readinessProbe": {"httpGet": {"port": 80}},
                    "envFrom": [{"secretRef": {"name": "env-from-secret"}},
                        {"configMapRef": {"name": "env-from-cm"}}],
                    "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "k"}}},
                        {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "k"}}},
                        {"name": "C", "value": "plain"}]}],
                "initContainers": [{"name": "i",
                    "env": [{"name": "D", "valueFrom": {"secretKeyRef": {"name": "init-secret", "key": "k"}}}]}],
                "ephemeralContainers": [{"name": "e",
                    "envFrom": [{"configMapRef": {"name": "ephemeral-cm"}}],
                    "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "ephemeral-secret", "key": "k"}}}]}],
                "volumes": [
                    {"name": "s", "secret": {"secretName": "volume-secret"}},
                    {"name": "cm", "configMap": {"name": "volume-cm"}},
                    {"name": "p", "projected": {"sources": [{"secret": {"name": "projected-secret"}},
                        {"configMap": {"name": "projected-cm"}}, {"serviceAccountToken": {"path": "t"}}]}},
                    {"name": "pvc", "persistentVolumeClaim": {"claimName": "claim"}},
                    {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
                    {"name": "af", "azureFile": {"secretName": "azure-secret", "shareName": "s"}},
                    {"name": "ceph", "cephfs": {"monitors": ["m"], "secretRef": secret("cephfs-secret")}},
                    {"name": "cinder", "cinder": {"volumeID": "v", "secretRef": secret("cinder-secret")}},
                    {"name": "flex", "flexVolume": {"driver": "d", "secretRef": secret("flex-secret")}},
                    {"name": "rbd", "rbd": {"monitors": ["m"], "image": "i", "secretRef": secret("rbd-secret")}},
                    {"name": "sio", "scaleIO": {"gateway": "g", "system": "s", "secretRef": secret("scaleio-secret")}},
                    {"name": "iscsi", "iscsi": {"targetPortal": "t", "iqn": "q", "lun": 0, "secretRef": secret("iscsi-secret")}},
                    {"name": "sos", "storageos": {"secretRef": secret("storageos-secret")}},
                    {"name": "csi", "csi": {"driver": "d", "nodePublishSecretRef": secret("csi-secret")}}
                ],
                "resourceClaims": [{"name": "rc", "resourceClaimName": "resource-claim"},
                    {"name": "tc", "resourceClaimTemplateName": "template"}]
            },
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": true, "restartCount": 0}],
                "resourceClaimStatuses": [{"name": "tc", "resourceClaimName": "templated-claim"}]}
        })
    }

    fn graph_of(pod: &Pod) -> Graph {
        let mut graph = Graph::new();
        graph.add_pod(pod);
        graph
    }

    #[test]
    fn the_slim_decode_of_a_pod_gives_the_edges_of_the_whole_pod() {
        let json = serde_json::to_vec(&pod_with_every_reference()).expect("json");
        let whole: Pod = serde_json::from_slice(&json).expect("pod");
        let slim = decode_pod(&json).expect("slim pod");
        let graph = graph_of(&slim);
        assert_eq!(graph, graph_of(&whole));
        let reaches = |ty: VertexType, name: &str| graph.has_path("node0", ty, "ns0", name).is_ok();
        for secret in [
            "pull",
            "env-from-secret",
            "env-secret",
            "init-secret",
            "ephemeral-secret",
            "volume-secret",
            "projected-secret",
            "azure-secret",
            "cephfs-secret",
            "cinder-secret",
            "flex-secret",
            "rbd-secret",
            "scaleio-secret",
            "iscsi-secret",
            "storageos-secret",
            "csi-secret",
        ] {
            assert!(reaches(VertexType::Secret, secret), "{secret}");
        }
        for cm in [
            "env-from-cm",
            "env-cm",
            "ephemeral-cm",
            "volume-cm",
            "projected-cm",
        ] {
            assert!(reaches(VertexType::ConfigMap, cm), "{cm}");
        }
        for claim in ["claim", "p-eph"] {
            assert!(reaches(VertexType::PersistentVolumeClaim, claim), "{claim}");
        }
        for claim in ["resource-claim", "templated-claim"] {
            assert!(reaches(VertexType::ResourceClaim, claim), "{claim}");
        }
        assert!(reaches(VertexType::ServiceAccount, "sa"));
        assert!(!reaches(VertexType::Secret, "other"));
    }

    #[test]
    fn the_slim_decode_refuses_what_the_whole_decode_refuses() {
        let mut unbound = pod_with_every_reference();
        unbound["spec"]["nodeName"] = json!(null);
        let json = serde_json::to_vec(&unbound).expect("json");
        let whole: Pod = serde_json::from_slice(&json).expect("pod");
        assert_eq!(
            graph_of(&decode_pod(&json).expect("slim")),
            graph_of(&whole)
        );
        assert_eq!(graph_of(&whole), Graph::new());
        for (field, value) in [
            ("kind", json!("Secret")),
            ("apiVersion", json!("v2")),
            ("spec", json!({"volumes": "none"})),
        ] {
            let mut bad = pod_with_every_reference();
            bad[field] = value;
            let json = serde_json::to_vec(&bad).expect("json");
            assert!(serde_json::from_slice::<Pod>(&json).is_err(), "{field}");
            assert!(decode_pod(&json).is_none(), "{field}");
        }
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
