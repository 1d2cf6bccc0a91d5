//! What each node may reach, as kube's node-authorizer graph holds it
//! (`plugin/pkg/auth/authorizer/node/graph.go`): pods bound to a node and the secrets,
//! configmaps, claims, service account and resource claims they use; volumes bound to those
//! claims and the secrets the volumes name; volume attachments to the node.
//!
//! kube keeps a general graph of vertices and edges and walks it; the paths it allows are few
//! and short (`node ← pod ← secret`, `node ← pod ← pvc ← pv ← secret`, ...), so this keeps each
//! relation in a map and answers [`Graph::has_path`] by following them. Pods are indexed by node,
//! so a question costs the pods of one node.

use std::collections::{BTreeSet, HashMap};

use k8s_openapi::api::core::v1::{
    Container, PersistentVolume, PersistentVolumeSpec, Pod, PodSpec, SecretReference,
};
use k8s_openapi::api::storage::v1::VolumeAttachment;

/// The kinds of objects a node's access is decided by the graph for (kube's `vertexType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VertexType {
    /// `configmap`.
    ConfigMap,
    /// `pod`.
    Pod,
    /// `pvc`.
    PersistentVolumeClaim,
    /// `pv`.
    PersistentVolume,
    /// `resourceclaim`.
    ResourceClaim,
    /// `secret`.
    Secret,
    /// `serviceAccount`.
    ServiceAccount,
    /// `volumeattachment`.
    VolumeAttachment,
}

impl VertexType {
    /// kube's name of the type (`vertexTypes`), as its log lines print it.
    pub fn as_str(self) -> &'static str {
        match self {
            VertexType::ConfigMap => "configmap",
            VertexType::Pod => "pod",
            VertexType::PersistentVolumeClaim => "pvc",
            VertexType::PersistentVolume => "pv",
            VertexType::ResourceClaim => "resourceclaim",
            VertexType::Secret => "secret",
            VertexType::ServiceAccount => "serviceAccount",
            VertexType::VolumeAttachment => "volumeattachment",
        }
    }
}

/// A namespaced name.
type NsName = (String, String);

/// What one pod bound to a node refers to (the edges kube's `AddPod` records).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct PodEdges {
    node: String,
    service_account: String,
    secrets: BTreeSet<String>,
    config_maps: BTreeSet<String>,
    claims: BTreeSet<String>,
    resource_claims: BTreeSet<String>,
}

/// What one volume bound to a claim refers to (kube's `AddPV`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct VolumeEdges {
    claim: NsName,
    secrets: BTreeSet<NsName>,
}

/// The relations between nodes and the objects they may read. Not synchronised: the populator
/// ([`super::populator`]) owns it behind a lock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Graph {
    pods: HashMap<NsName, PodEdges>,
    pods_by_node: HashMap<String, BTreeSet<NsName>>,
    volumes: HashMap<String, VolumeEdges>,
    volume_by_claim: HashMap<NsName, String>,
    attachments: HashMap<String, String>,
}

fn ns_name(namespace: &str, name: &str) -> NsName {
    (namespace.to_string(), name.to_string())
}

impl Graph {
    /// An empty graph.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `pod` (kube's `AddPod`): nothing for a pod not bound to a node; otherwise its
    /// edges replace those it had.
    pub fn add_pod(&mut self, pod: &Pod) {
        let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
        let name = pod.metadata.name.as_deref().unwrap_or_default();
        let key = ns_name(namespace, name);
        self.delete_pod(namespace, name);
        let Some(edges) = pod_edges(pod) else {
            return;
        };
        self.pods_by_node
            .entry(edges.node.clone())
            .or_default()
            .insert(key.clone());
        self.pods.insert(key, edges);
    }

    /// Forgets the pod `namespace/name` (kube's `DeletePod`).
    pub fn delete_pod(&mut self, namespace: &str, name: &str) {
        let key = ns_name(namespace, name);
        if let Some(old) = self.pods.remove(&key) {
            if let Some(set) = self.pods_by_node.get_mut(&old.node) {
                set.remove(&key);
                if set.is_empty() {
                    self.pods_by_node.remove(&old.node);
                }
            }
        }
    }

    /// Records `pv` (kube's `AddPV`): only a volume bound to a claim (`spec.claimRef`) counts.
    pub fn add_pv(&mut self, pv: &PersistentVolume) {
        let name = pv.metadata.name.as_deref().unwrap_or_default();
        self.delete_pv(name);
        let Some(spec) = &pv.spec else { return };
        let Some(claim) = &spec.claim_ref else { return };
        let claim = ns_name(
            claim.namespace.as_deref().unwrap_or_default(),
            claim.name.as_deref().unwrap_or_default(),
        );
        if claim.1.is_empty() {
            return;
        }
        let secrets = pv_secret_names(spec, &claim.0);
        self.volume_by_claim.insert(claim.clone(), name.to_string());
        self.volumes
            .insert(name.to_string(), VolumeEdges { claim, secrets });
    }

    /// Forgets the volume `name` (kube's `DeletePV`).
    pub fn delete_pv(&mut self, name: &str) {
        if let Some(old) = self.volumes.remove(name) {
            if self.volume_by_claim.get(&old.claim).map(String::as_str) == Some(name) {
                self.volume_by_claim.remove(&old.claim);
            }
        }
    }

    /// Records `va` (kube's `AddVolumeAttachment`): the attachment reaches its `spec.nodeName`.
    pub fn add_volume_attachment(&mut self, va: &VolumeAttachment) {
        let name = va.metadata.name.as_deref().unwrap_or_default();
        if va.spec.node_name.is_empty() {
            self.attachments.remove(name);
        } else {
            self.attachments
                .insert(name.to_string(), va.spec.node_name.clone());
        }
    }

    /// Forgets the attachment `name` (kube's `DeleteVolumeAttachment`).
    pub fn delete_volume_attachment(&mut self, name: &str) {
        self.attachments.remove(name);
    }

    /// Forgets every pod (before the pods are listed again).
    pub fn clear_pods(&mut self) {
        self.pods.clear();
        self.pods_by_node.clear();
    }

    /// Forgets every volume (before the volumes are listed again).
    pub fn clear_pvs(&mut self) {
        self.volumes.clear();
        self.volume_by_claim.clear();
    }

    /// Forgets every attachment (before the attachments are listed again).
    pub fn clear_volume_attachments(&mut self) {
        self.attachments.clear();
    }

    /// Whether the graph knows of `node` at all (some pod or attachment leads to it).
    pub fn has_node(&self, node: &str) -> bool {
        self.pods_by_node.contains_key(node) || self.attachments.values().any(|n| n == node)
    }

    fn pods_on<'a>(&'a self, node: &str) -> impl Iterator<Item = (&'a NsName, &'a PodEdges)> {
        self.pods_by_node
            .get(node)
            .into_iter()
            .flatten()
            .filter_map(|key| self.pods.get(key).map(|edges| (key, edges)))
    }

    /// Whether there is a path from the object `namespace/name` of `kind` to `node` (kube's
    /// `hasPathFrom`); the error is kube's explanation of why not.
    pub fn has_path(
        &self,
        node: &str,
        kind: VertexType,
        namespace: &str,
        name: &str,
    ) -> Result<(), String> {
        if !self.has_node(node) {
            return Err(format!(
                "unknown node '{node}' cannot get {} {namespace}/{name}",
                kind.as_str()
            ));
        }
        let in_ns = |key: &NsName| key.0 == namespace;
        let found = match kind {
            VertexType::Pod => self
                .pods
                .get(&ns_name(namespace, name))
                .is_some_and(|p| p.node == node),
            VertexType::ConfigMap => self
                .pods_on(node)
                .any(|(k, p)| in_ns(k) && p.config_maps.contains(name)),
            VertexType::PersistentVolumeClaim => self
                .pods_on(node)
                .any(|(k, p)| in_ns(k) && p.claims.contains(name)),
            VertexType::ServiceAccount => self
                .pods_on(node)
                .any(|(k, p)| in_ns(k) && p.service_account == name),
            VertexType::ResourceClaim => self
                .pods_on(node)
                .any(|(k, p)| in_ns(k) && p.resource_claims.contains(name)),
            VertexType::Secret => {
                self.pods_on(node)
                    .any(|(k, p)| in_ns(k) && p.secrets.contains(name))
                    || self.volumes_on(node).any(|v| {
                        v.secrets
                            .contains(&(namespace.to_string(), name.to_string()))
                    })
            }
            VertexType::PersistentVolume => self
                .volumes
                .get(name)
                .is_some_and(|v| self.claim_used_on(node, &v.claim)),
            VertexType::VolumeAttachment => {
                self.attachments.get(name).map(String::as_str) == Some(node)
            }
        };
        if found {
            Ok(())
        } else {
            Err(format!(
                "node '{node}' cannot get {} {namespace}/{name}, no relationship to this object was found in the node authorizer graph",
                kind.as_str()
            ))
        }
    }

    fn claim_used_on(&self, node: &str, claim: &NsName) -> bool {
        self.pods_on(node)
            .any(|(k, p)| k.0 == claim.0 && p.claims.contains(&claim.1))
    }

    /// The volumes bound to claims that pods on `node` use.
    fn volumes_on<'a>(&'a self, node: &'a str) -> impl Iterator<Item = &'a VolumeEdges> + 'a {
        self.pods_on(node).flat_map(move |(k, p)| {
            p.claims.iter().filter_map(move |c| {
                self.volume_by_claim
                    .get(&ns_name(&k.0, c))
                    .and_then(|v| self.volumes.get(v))
            })
        })
    }
}

/// The edges of a pod bound to a node; `None` for a pod not bound.
fn pod_edges(pod: &Pod) -> Option<PodEdges> {
    let spec = pod.spec.as_ref()?;
    let node = spec.node_name.clone().filter(|n| !n.is_empty())?;
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let mut edges = PodEdges {
        node,
        service_account: spec.service_account_name.clone().unwrap_or_default(),
        secrets: pod_secret_names(spec),
        config_maps: pod_config_map_names(spec),
        ..PodEdges::default()
    };
    for volume in spec.volumes.iter().flatten() {
        if let Some(claim) = &volume.persistent_volume_claim {
            edges.claims.insert(claim.claim_name.clone());
        } else if volume.ephemeral.is_some() {
            // `ephemeral.VolumeClaimName`: the claim of a generic ephemeral volume.
            edges.claims.insert(format!("{name}-{}", volume.name));
        }
    }
    for claim in spec.resource_claims.iter().flatten() {
        if let Some(n) = &claim.resource_claim_name {
            edges.resource_claims.insert(n.clone());
        }
    }
    // Claims made from templates are named in the status (`resourceClaimStatuses`).
    for status in pod
        .status
        .as_ref()
        .and_then(|s| s.resource_claim_statuses.as_ref())
        .into_iter()
        .flatten()
    {
        if let Some(n) = &status.resource_claim_name {
            edges.resource_claims.insert(n.clone());
        }
    }
    Some(edges)
}

fn all_containers(spec: &PodSpec) -> impl Iterator<Item = &Container> {
    spec.init_containers
        .iter()
        .flatten()
        .chain(spec.containers.iter())
}

/// The ephemeral containers' env, seen as plain containers' (same fields).
fn ephemeral_env(
    spec: &PodSpec,
) -> impl Iterator<
    Item = (
        Option<&Vec<k8s_openapi::api::core::v1::EnvVar>>,
        Option<&Vec<k8s_openapi::api::core::v1::EnvFromSource>>,
    ),
> {
    spec.ephemeral_containers
        .iter()
        .flatten()
        .map(|c| (c.env.as_ref(), c.env_from.as_ref()))
}

fn container_env(
    spec: &PodSpec,
) -> impl Iterator<
    Item = (
        Option<&Vec<k8s_openapi::api::core::v1::EnvVar>>,
        Option<&Vec<k8s_openapi::api::core::v1::EnvFromSource>>,
    ),
> {
    all_containers(spec)
        .map(|c| (c.env.as_ref(), c.env_from.as_ref()))
        .chain(ephemeral_env(spec))
}

/// The secrets a pod names (`podutil.VisitPodSecretNames` with all containers).
pub fn pod_secret_names(spec: &PodSpec) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |n: Option<&String>| {
        if let Some(n) = n.filter(|n| !n.is_empty()) {
            out.insert(n.clone());
        }
    };
    for s in spec.image_pull_secrets.iter().flatten() {
        add(Some(&s.name));
    }
    for (env, env_from) in container_env(spec) {
        for e in env_from.into_iter().flatten() {
            add(e.secret_ref.as_ref().map(|r| &r.name));
        }
        for e in env.into_iter().flatten() {
            add(e
                .value_from
                .as_ref()
                .and_then(|v| v.secret_key_ref.as_ref())
                .map(|r| &r.name));
        }
    }
    for v in spec.volumes.iter().flatten() {
        add(v.azure_file.as_ref().map(|s| &s.secret_name));
        add(v
            .cephfs
            .as_ref()
            .and_then(|s| s.secret_ref.as_ref())
            .map(|r| &r.name));
        add(v
            .cinder
            .as_ref()
            .and_then(|s| s.secret_ref.as_ref())
            .map(|r| &r.name));
        add(v
            .flex_volume
            .as_ref()
            .and_then(|s| s.secret_ref.as_ref())
            .map(|r| &r.name));
        for source in v
            .projected
            .as_ref()
            .and_then(|p| p.sources.as_ref())
            .into_iter()
            .flatten()
        {
            add(source.secret.as_ref().map(|s| &s.name));
        }
        add(v
            .rbd
            .as_ref()
            .and_then(|s| s.secret_ref.as_ref())
            .map(|r| &r.name));
        add(v.secret.as_ref().and_then(|s| s.secret_name.as_ref()));
        add(v.scale_io.as_ref().map(|s| &s.secret_ref.name));
        add(v
            .iscsi
            .as_ref()
            .and_then(|s| s.secret_ref.as_ref())
            .map(|r| &r.name));
        add(v
            .storageos
            .as_ref()
            .and_then(|s| s.secret_ref.as_ref())
            .map(|r| &r.name));
        add(v
            .csi
            .as_ref()
            .and_then(|s| s.node_publish_secret_ref.as_ref())
            .map(|r| &r.name));
    }
    out
}

/// The configmaps a pod names (`podutil.VisitPodConfigmapNames` with all containers).
pub fn pod_config_map_names(spec: &PodSpec) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |n: Option<&String>| {
        if let Some(n) = n.filter(|n| !n.is_empty()) {
            out.insert(n.clone());
        }
    };
    for (env, env_from) in container_env(spec) {
        for e in env_from.into_iter().flatten() {
            add(e.config_map_ref.as_ref().map(|r| &r.name));
        }
        for e in env.into_iter().flatten() {
            add(e
                .value_from
                .as_ref()
                .and_then(|v| v.config_map_key_ref.as_ref())
                .map(|r| &r.name));
        }
    }
    for v in spec.volumes.iter().flatten() {
        add(v.config_map.as_ref().map(|c| &c.name));
        for source in v
            .projected
            .as_ref()
            .and_then(|p| p.sources.as_ref())
            .into_iter()
            .flatten()
        {
            add(source.config_map.as_ref().map(|c| &c.name));
        }
    }
    out
}

/// The secrets a volume names, with their namespaces (`VisitPVSecretNames`): a reference
/// without a namespace means the claim's.
fn pv_secret_names(spec: &PersistentVolumeSpec, claim_namespace: &str) -> BTreeSet<NsName> {
    let mut out = BTreeSet::new();
    let mut add = |namespace: Option<&String>, name: Option<&String>| {
        if let Some(name) = name.filter(|n| !n.is_empty()) {
            let ns = namespace
                .filter(|n| !n.is_empty())
                .map(String::as_str)
                .unwrap_or(claim_namespace);
            out.insert(ns_name(ns, name));
        }
    };
    let mut add_ref = |r: Option<&SecretReference>| {
        if let Some(r) = r {
            add(r.namespace.as_ref(), r.name.as_ref());
        }
    };
    if let Some(s) = &spec.azure_file {
        add_ref(Some(&SecretReference {
            name: Some(s.secret_name.clone()),
            namespace: s.secret_namespace.clone(),
        }));
    }
    add_ref(spec.cephfs.as_ref().and_then(|s| s.secret_ref.as_ref()));
    add_ref(spec.cinder.as_ref().and_then(|s| s.secret_ref.as_ref()));
    add_ref(
        spec.flex_volume
            .as_ref()
            .and_then(|s| s.secret_ref.as_ref()),
    );
    add_ref(spec.rbd.as_ref().and_then(|s| s.secret_ref.as_ref()));
    add_ref(spec.scale_io.as_ref().map(|s| &s.secret_ref));
    add_ref(spec.iscsi.as_ref().and_then(|s| s.secret_ref.as_ref()));
    if let Some(s) = &spec.storageos {
        if let Some(r) = &s.secret_ref {
            add_ref(Some(&SecretReference {
                name: r.name.clone(),
                namespace: r.namespace.clone(),
            }));
        }
    }
    if let Some(csi) = &spec.csi {
        for r in [
            &csi.controller_publish_secret_ref,
            &csi.node_stage_secret_ref,
            &csi.node_publish_secret_ref,
            &csi.controller_expand_secret_ref,
            &csi.node_expand_secret_ref,
        ] {
            add_ref(r.as_ref());
        }
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// A pod bound to `node` in `ns`, using secret `s-<name>`, configmap `cm-<name>`, claim
    /// `pvc-<name>` and service account `sa-<name>`, as the pods of node_authorizer_test.go's
    /// `generate`.
    pub(crate) fn pod(ns: &str, name: &str, node: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"namespace": ns, "name": name},
            "spec": {
                "nodeName": node,
                "serviceAccountName": format!("sa-{name}"),
                "imagePullSecrets": [{"name": format!("pull-{name}")}],
                "containers": [{"name": "c", "envFrom": [{"secretRef": {"name": format!("env-{name}")}}],
                    "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": format!("envcm-{name}"), "key": "k"}}}]}],
                "initContainers": [{"name": "i", "env": [{"name": "Y", "valueFrom": {"secretKeyRef": {"name": format!("init-{name}"), "key": "k"}}}]}],
                "volumes": [
                    {"name": "s", "secret": {"secretName": format!("s-{name}")}},
                    {"name": "cm", "configMap": {"name": format!("cm-{name}")}},
                    {"name": "p", "projected": {"sources": [{"secret": {"name": format!("ps-{name}")}}, {"configMap": {"name": format!("pcm-{name}")}}]}},
                    {"name": "v", "persistentVolumeClaim": {"claimName": format!("pvc-{name}")}},
                    {"name": "e", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
                ],
                "resourceClaims": [{"name": "rc", "resourceClaimName": format!("claim-{name}")}]
            }
        }))
        .expect("pod")
    }

    /// A volume bound to claim `ns/claim` whose CSI driver names secret `pvsecret-<name>`.
    pub(crate) fn pv(name: &str, ns: &str, claim: &str) -> PersistentVolume {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "claimRef": {"namespace": ns, "name": claim},
                "csi": {"driver": "d", "volumeHandle": "h",
                    "nodePublishSecretRef": {"name": format!("pvsecret-{name}")},
                    "controllerPublishSecretRef": {"name": format!("other-{name}"), "namespace": "elsewhere"}}
            }
        }))
        .expect("pv")
    }

    pub(crate) fn attachment(name: &str, node: &str) -> VolumeAttachment {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"attacher": "a", "nodeName": node, "source": {"persistentVolumeName": "x"}}
        }))
        .expect("va")
    }

    fn allowed(g: &Graph, node: &str, kind: VertexType, ns: &str, name: &str) -> bool {
        g.has_path(node, kind, ns, name).is_ok()
    }

    #[test]
    fn a_node_reaches_what_the_pods_bound_to_it_use_and_nothing_else() {
        let mut g = Graph::new();
        g.add_pod(&pod("ns0", "pod0", "node0"));
        g.add_pod(&pod("ns0", "pod1", "node1"));
        use VertexType::*;
        for secret in ["s-pod0", "pull-pod0", "env-pod0", "init-pod0", "ps-pod0"] {
            assert!(allowed(&g, "node0", Secret, "ns0", secret), "{secret}");
        }
        for cm in ["cm-pod0", "envcm-pod0", "pcm-pod0"] {
            assert!(allowed(&g, "node0", ConfigMap, "ns0", cm), "{cm}");
        }
        assert!(allowed(
            &g,
            "node0",
            PersistentVolumeClaim,
            "ns0",
            "pvc-pod0"
        ));
        assert!(allowed(&g, "node0", PersistentVolumeClaim, "ns0", "pod0-e"));
        assert!(allowed(&g, "node0", ServiceAccount, "ns0", "sa-pod0"));
        assert!(allowed(&g, "node0", ResourceClaim, "ns0", "claim-pod0"));
        assert!(allowed(&g, "node0", Pod, "ns0", "pod0"));
        // Another node's pod, another namespace, another kind of object.
        assert!(!allowed(&g, "node0", Secret, "ns0", "s-pod1"));
        assert!(!allowed(&g, "node0", Pod, "ns0", "pod1"));
        assert!(!allowed(&g, "node0", Secret, "ns1", "s-pod0"));
        assert!(!allowed(&g, "node0", ConfigMap, "ns0", "s-pod0"));
        assert!(allowed(&g, "node1", Secret, "ns0", "s-pod1"));
    }

    #[test]
    fn an_unknown_node_is_named_in_the_refusal() {
        let g = Graph::new();
        assert_eq!(
            g.has_path("node9", VertexType::Secret, "ns", "s"),
            Err("unknown node 'node9' cannot get secret ns/s".to_string())
        );
        let mut g = Graph::new();
        g.add_pod(&pod("ns0", "pod0", "node0"));
        assert_eq!(
            g.has_path("node0", VertexType::Secret, "ns0", "nope"),
            Err("node 'node0' cannot get secret ns0/nope, no relationship to this object was found in the node authorizer graph".to_string())
        );
    }

    #[test]
    fn volumes_and_their_secrets_are_reached_through_the_claims_of_the_nodes_pods() {
        let mut g = Graph::new();
        g.add_pod(&pod("ns0", "pod0", "node0"));
        g.add_pod(&pod("ns0", "pod1", "node1"));
        g.add_pv(&pv("pv0", "ns0", "pvc-pod0"));
        use VertexType::*;
        assert!(allowed(&g, "node0", PersistentVolume, "", "pv0"));
        assert!(!allowed(&g, "node1", PersistentVolume, "", "pv0"));
        assert!(allowed(&g, "node0", Secret, "ns0", "pvsecret-pv0"));
        assert!(allowed(&g, "node0", Secret, "elsewhere", "other-pv0"));
        assert!(!allowed(&g, "node1", Secret, "ns0", "pvsecret-pv0"));
        // An unbound volume reaches nothing.
        let mut unbound = pv("pv1", "ns0", "pvc-pod0");
        unbound.spec.as_mut().expect("spec").claim_ref = None;
        g.add_pv(&unbound);
        assert!(!allowed(&g, "node0", PersistentVolume, "", "pv1"));
        g.delete_pv("pv0");
        assert!(!allowed(&g, "node0", PersistentVolume, "", "pv0"));
        assert!(!allowed(&g, "node0", Secret, "ns0", "pvsecret-pv0"));
    }

    #[test]
    fn attachments_reach_their_node_only() {
        let mut g = Graph::new();
        g.add_volume_attachment(&attachment("va0", "node0"));
        assert!(allowed(
            &g,
            "node0",
            VertexType::VolumeAttachment,
            "",
            "va0"
        ));
        assert!(g
            .has_path("node1", VertexType::VolumeAttachment, "", "va0")
            .is_err());
        g.delete_volume_attachment("va0");
        assert!(g
            .has_path("node0", VertexType::VolumeAttachment, "", "va0")
            .is_err());
    }

    /// `TestNodeAuthorizerAddEphemeralContainers` and the update cases of graph_test.go: a
    /// pod's edges follow its latest state, and a deleted or rebound pod no longer grants.
    #[test]
    fn updates_and_deletes_replace_a_pods_edges() {
        let mut g = Graph::new();
        let mut p = pod("ns0", "pod0", "node0");
        g.add_pod(&p);
        let spec = p.spec.as_mut().expect("spec");
        spec.ephemeral_containers = Some(vec![serde_json::from_value(json!({
            "name": "debug",
            "envFrom": [{"secretRef": {"name": "debug-secret"}}]
        }))
        .expect("ephemeral")]);
        g.add_pod(&p);
        assert!(allowed(
            &g,
            "node0",
            VertexType::Secret,
            "ns0",
            "debug-secret"
        ));
        p.spec.as_mut().expect("spec").node_name = Some("node1".into());
        g.add_pod(&p);
        assert!(!allowed(&g, "node0", VertexType::Secret, "ns0", "s-pod0"));
        assert!(allowed(&g, "node1", VertexType::Secret, "ns0", "s-pod0"));
        g.delete_pod("ns0", "pod0");
        assert!(!allowed(&g, "node1", VertexType::Secret, "ns0", "s-pod0"));
        assert!(!g.has_node("node1"));
        // An unscheduled pod grants nothing.
        let mut unbound = pod("ns0", "pod2", "node0");
        unbound.spec.as_mut().expect("spec").node_name = None;
        g.add_pod(&unbound);
        assert!(!g.has_node("node0"));
    }

    #[test]
    fn two_pods_sharing_a_secret_keep_it_reachable_until_both_are_gone() {
        let mut g = Graph::new();
        let mut a = pod("ns0", "a", "node0");
        let mut b = pod("ns0", "b", "node0");
        for p in [&mut a, &mut b] {
            p.spec.as_mut().expect("spec").image_pull_secrets =
                Some(vec![
                    serde_json::from_value(json!({"name": "shared"})).expect("ref")
                ]);
            g.add_pod(p);
        }
        g.delete_pod("ns0", "a");
        assert!(allowed(&g, "node0", VertexType::Secret, "ns0", "shared"));
        g.delete_pod("ns0", "b");
        assert!(!allowed(&g, "node0", VertexType::Secret, "ns0", "shared"));
    }
}
