//! `NodeRestriction`: what a kubelet may change in the objects the Node authorizer lets it
//! write (`plugin/pkg/admission/noderestriction/admission.go`).
//!
//! A node (`system:node:<name>` in `system:nodes`) may create and delete only mirror pods bound
//! to itself, update the status of its own pods only (labels and resource-claim statuses
//! excepted), change only its own Node (not its taints, not labels outside kube's kubelet
//! labels, no `configSource`), write only the status conditions and capacity of claims, and
//! only its own Lease and CSINode. Other users pass untouched.

use std::collections::BTreeSet;

use async_trait::async_trait;
use serde_json::Value;

use super::plugins::NODE_RESTRICTION;
use crate::auth::node_identity::node_identity;
use rkcm_server::admission::attributes::{forbidden, Attributes, Operation};
use rkcm_server::admission::plugin::Plugin;
use rkcm_server::error::ApiResult;
use rkcm_storage::store::Store;

/// Annotation of mirror pods (`api.MirrorPodAnnotationKey`).
pub const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// The label namespace only administrators may set on nodes
/// (`v1.LabelNamespaceNodeRestriction`).
pub const NODE_RESTRICTION_LABEL_NAMESPACE: &str = "node-restriction.kubernetes.io";
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// Labels a kubelet sets on its Node (`kubeletapis.kubeletLabels`).
const KUBELET_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
    "kubernetes.io/os",
    "kubernetes.io/arch",
];
/// Label namespaces whose labels a kubelet may set (`kubeletapis.kubeletLabelNamespaces`).
const KUBELET_LABEL_NAMESPACES: &[&str] = &["kubelet.kubernetes.io", "node.kubernetes.io"];

/// Restricts what nodes write. Reads the pods a node deletes or evicts from the store (kube's
/// pod lister).
pub struct NodeRestriction {
    store: Store,
}

impl NodeRestriction {
    /// The plugin, reading pods from `store`.
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

/// How the plugin finds a stored pod (`podsGetter.Pods(ns).Get(name)`).
pub type PodLookup<'a> = &'a dyn Fn(&str, &str) -> Option<Value>;

#[async_trait]
impl Plugin for NodeRestriction {
    fn name(&self) -> &'static str {
        NODE_RESTRICTION
    }

    fn handles(&self, operation: Operation) -> bool {
        matches!(
            operation,
            Operation::Create | Operation::Update | Operation::Delete
        )
    }

    async fn admit(&self, attrs: &mut Attributes) -> ApiResult<()> {
        let lookup = |namespace: &str, name: &str| {
            let info = rkcm_apimachinery::catalog::by_kind("v1", "Pod")?;
            let key = rkcm_server::rest::key(info, Some(namespace), name);
            self.store.get(&key).map(|o| o.value())
        };
        match check(attrs, &lookup) {
            Ok(()) => Ok(()),
            Err(why) => Err(forbidden(attrs, &why)),
        }
    }
}

/// kube's `Admit`: `Err` carries the reason of the 403. The stored pod of a delete or eviction
/// comes from the attributes or, when they have none, from `pods`.
pub fn check(attrs: &Attributes, pods: PodLookup<'_>) -> Result<(), String> {
    let Some(node) = node_identity(&attrs.user) else {
        return Ok(());
    };
    if node.is_empty() {
        return Err(format!(
            "could not determine node from user {:?}",
            attrs.user.name
        ));
    }
    match (attrs.resource.group, attrs.resource.plural) {
        ("", "pods") => match attrs.subresource {
            "" => pod(node, attrs, pods),
            "status" => pod_status(node, attrs),
            "eviction" => pod_eviction(node, attrs, pods),
            other => Err(format!(
                "unexpected pod subresource {other:?}, only 'status' and 'eviction' are allowed"
            )),
        },
        ("", "nodes") => node_object(node, attrs),
        ("", "persistentvolumeclaims") => match attrs.subresource {
            "status" => pvc_status(node, attrs),
            _ => Err("may only update PVC status".to_string()),
        },
        ("", "serviceaccounts") => service_account(node, attrs, pods),
        ("coordination.k8s.io", "leases") => lease(node, attrs),
        ("storage.k8s.io", "csinodes") => csi_node(node, attrs),
        _ => Ok(()),
    }
}

fn spec_node_name(pod: &Value) -> &str {
    pod.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn object_of(attrs: &Attributes) -> Result<&Value, String> {
    attrs
        .object()
        .ok_or_else(|| format!("unexpected type {}", "<nil>"))
}

/// `admitPod`: create and delete only, of mirror pods bound to the node.
fn pod(node: &str, attrs: &Attributes, pods: PodLookup<'_>) -> Result<(), String> {
    match attrs.operation {
        Operation::Create => pod_create(node, object_of(attrs)?),
        Operation::Delete => match stored_pod(attrs, pods).as_ref() {
            // Without a stored pod the delete answers 404 on its own.
            None => Ok(()),
            Some(existing) if spec_node_name(existing) != node => Err(format!(
                "node {node:?} can only delete pods with spec.nodeName set to itself"
            )),
            Some(_) => Ok(()),
        },
        op => Err(format!(
            "unexpected operation {:?}, node {node:?} can only create and delete mirror pods",
            op.as_str()
        )),
    }
}

/// `admitPodCreate`: a mirror pod, bound to the node, owned by it, referring to no other
/// object.
pub fn pod_create(node: &str, pod: &Value) -> Result<(), String> {
    let annotated = pod
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(MIRROR_POD_ANNOTATION));
    if !annotated {
        return Err(format!(
            "pod does not have {MIRROR_POD_ANNOTATION:?} annotation, node {node:?} can only create mirror pods"
        ));
    }
    if spec_node_name(pod) != node {
        return Err(format!(
            "node {node:?} can only create pods with spec.nodeName set to itself"
        ));
    }
    let owners = pod
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    match owners {
        [] => {
            return Err(format!(
                "node {node:?} can only create pods with an owner reference set to itself"
            ))
        }
        [owner] => {
            let field = |f: &str| owner.get(f).and_then(Value::as_str).unwrap_or_default();
            if field("apiVersion") != "v1" || field("kind") != "Node" || field("name") != node {
                return Err(format!(
                    "node {node:?} can only create pods with an owner reference set to itself"
                ));
            }
            if owner.get("controller").and_then(Value::as_bool) != Some(true) {
                return Err(format!(
                    "node {node:?} can only create pods with a controller owner reference set to itself"
                ));
            }
            if owner.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true) {
                return Err(format!(
                    "node {node:?} must not set blockOwnerDeletion on an owner reference"
                ));
            }
        }
        _ => {
            return Err(format!(
                "node {node:?} can only create pods with a single owner reference set to itself"
            ))
        }
    }
    let typed: k8s_openapi::api::core::v1::Pod =
        serde_json::from_value(pod.clone()).map_err(|e| format!("unexpected type: {e}"))?;
    let spec = typed.spec.unwrap_or_default();
    if spec
        .service_account_name
        .as_deref()
        .is_some_and(|s| !s.is_empty())
    {
        return Err(format!(
            "node {node:?} can not create pods that reference a service account"
        ));
    }
    if !crate::auth::authorization::node::graph::pod_secret_names(&spec).is_empty() {
        return Err(format!(
            "node {node:?} can not create pods that reference secrets"
        ));
    }
    if !crate::auth::authorization::node::graph::pod_config_map_names(&spec).is_empty() {
        return Err(format!(
            "node {node:?} can not create pods that reference configmaps"
        ));
    }
    let volumes = spec.volumes.unwrap_or_default();
    let trust_bundles = volumes.iter().any(|v| {
        v.projected
            .as_ref()
            .and_then(|p| p.sources.as_ref())
            .is_some_and(|s| s.iter().any(|s| s.cluster_trust_bundle.is_some()))
    });
    if trust_bundles {
        return Err(format!(
            "node {node:?} can not create pods that reference clustertrustbundles"
        ));
    }
    if volumes.iter().any(|v| v.persistent_volume_claim.is_some()) {
        return Err(format!(
            "node {node:?} can not create pods that reference persistentvolumeclaims"
        ));
    }
    Ok(())
}

/// `admitPodStatus`: the node's own pods, without touching labels or resource-claim statuses.
fn pod_status(node: &str, attrs: &Attributes) -> Result<(), String> {
    if attrs.operation != Operation::Update {
        return Err(format!(
            "unexpected operation {:?}",
            attrs.operation.as_str()
        ));
    }
    let old = attrs
        .old_object()
        .ok_or_else(|| "unexpected type <nil>".to_string())?;
    if spec_node_name(old) != node {
        return Err(format!(
            "node {node:?} can only update pod status for pods with spec.nodeName set to itself"
        ));
    }
    let new = object_of(attrs)?;
    if string_map(old, "/metadata/labels") != string_map(new, "/metadata/labels") {
        return Err(format!(
            "node {node:?} cannot update labels through pod status"
        ));
    }
    if claim_statuses(old) != claim_statuses(new) {
        // kube's spelling.
        return Err(format!(
            "node {node:?} cannot update resource claim statues"
        ));
    }
    Ok(())
}

/// `resourceClaimStatusesEqual`: names and claim names, in order.
fn claim_statuses(pod: &Value) -> Vec<(String, Option<String>)> {
    pod.pointer("/status/resourceClaimStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| {
            (
                s.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                s.get("resourceClaimName")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            )
        })
        .collect()
}

/// `admitPodEviction`: only the node's own pods. The eviction names the pod by the path, or
/// by its own name.
fn pod_eviction(node: &str, attrs: &Attributes, pods: PodLookup<'_>) -> Result<(), String> {
    if attrs.operation != Operation::Create {
        return Err(format!("unexpected operation {}", attrs.operation.as_str()));
    }
    if attrs.name.is_empty()
        && attrs
            .object()
            .is_none_or(|e| rkcm_storage::object::name(e).is_empty())
    {
        return Err("could not determine pod from request data".to_string());
    }
    match stored_pod(attrs, pods).as_ref() {
        Some(existing) if spec_node_name(existing) != node => Err(format!(
            "node {node} can only evict pods with spec.nodeName set to itself"
        )),
        _ => Ok(()),
    }
}

/// The stored pod the request is about: the attributes' old object, else the pod the name
/// (or, for an eviction, the Eviction's name) gives.
fn stored_pod(attrs: &Attributes, pods: PodLookup<'_>) -> Option<Value> {
    if let Some(old) = attrs.old_object() {
        return Some(old.clone());
    }
    let name = if attrs.name.is_empty() {
        attrs
            .object()
            .map(rkcm_storage::object::name)
            .unwrap_or_default()
    } else {
        attrs.name.as_str()
    };
    pods(&attrs.namespace, name)
}

/// `admitNode`: only its own Node; no `configSource`, no taint changes, kubelet labels only.
fn node_object(node: &str, attrs: &Attributes) -> Result<(), String> {
    let requested = match attrs.operation {
        // A create names the node in the object.
        Operation::Create if attrs.name.is_empty() => attrs
            .object()
            .map(rkcm_storage::object::name)
            .unwrap_or_default(),
        _ => attrs.name.as_str(),
    };
    if requested != node {
        return Err(format!(
            "node {node:?} is not allowed to modify node {requested:?}"
        ));
    }
    let present = |v: &Value, p: &str| v.pointer(p).is_some_and(|x| !x.is_null());
    match attrs.operation {
        Operation::Create => {
            let obj = object_of(attrs)?;
            if present(obj, "/spec/configSource") {
                return Err(format!(
                    "node {node:?} is not allowed to create pods with a non-nil configSource"
                ));
            }
            let forbidden =
                forbidden_labels(&modified_labels(&string_map(obj, "/metadata/labels"), &[]));
            if !forbidden.is_empty() {
                return Err(format!(
                    "node {node:?} is not allowed to set the following labels: {}",
                    forbidden.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        Operation::Update => {
            let new = object_of(attrs)?;
            let old = attrs
                .old_object()
                .ok_or_else(|| "unexpected type <nil>".to_string())?;
            if present(new, "/spec/configSource")
                && new.pointer("/spec/configSource") != old.pointer("/spec/configSource")
            {
                return Err(format!(
                    "node {node:?} is not allowed to update configSource to a new non-nil configSource"
                ));
            }
            if taints(new) != taints(old) {
                return Err(format!("node {node:?} is not allowed to modify taints"));
            }
            let forbidden = forbidden_labels(&modified_labels(
                &string_map(new, "/metadata/labels"),
                &string_map(old, "/metadata/labels"),
            ));
            if !forbidden.is_empty() {
                return Err(format!(
                    "is not allowed to modify labels: {}",
                    forbidden.into_iter().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// A node's taints, an absent list being an empty one (`apiequality.Semantic`).
fn taints(node: &Value) -> Vec<Value> {
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn string_map(obj: &Value, pointer: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = obj
        .pointer(pointer)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect();
    out.sort();
    out
}

/// `getModifiedLabels`: keys added, removed or changed between `a` and `b`.
pub fn modified_labels(a: &[(String, String)], b: &[(String, String)]) -> BTreeSet<String> {
    let get = |m: &[(String, String)], k: &str| {
        m.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone())
    };
    let mut out = BTreeSet::new();
    for (k, v) in a {
        if get(b, k).as_ref() != Some(v) {
            out.insert(k.clone());
        }
    }
    for (k, v) in b {
        if get(a, k).as_ref() != Some(v) {
            out.insert(k.clone());
        }
    }
    out
}

fn label_namespace(key: &str) -> &str {
    key.split_once('/').map(|(ns, _)| ns).unwrap_or_default()
}

fn in_namespace(ns: &str, domain: &str) -> bool {
    ns == domain || ns.strip_suffix(domain).is_some_and(|p| p.ends_with('.'))
}

/// `isKubernetesLabel`: in `kubernetes.io` or `k8s.io` or a subdomain of either.
fn is_kubernetes_label(key: &str) -> bool {
    let ns = label_namespace(key);
    in_namespace(ns, "kubernetes.io") || in_namespace(ns, "k8s.io")
}

/// `kubeletapis.IsKubeletLabel`.
pub fn is_kubelet_label(key: &str) -> bool {
    if KUBELET_LABELS.contains(&key) {
        return true;
    }
    let ns = label_namespace(key);
    KUBELET_LABEL_NAMESPACES
        .iter()
        .any(|allowed| in_namespace(ns, allowed))
}

/// `getForbiddenLabels`: of `modified`, those in `node-restriction.kubernetes.io`, and the
/// kubernetes.io and k8s.io labels that are not kubelet labels; sorted.
pub fn forbidden_labels(modified: &BTreeSet<String>) -> BTreeSet<String> {
    modified
        .iter()
        .filter(|label| {
            in_namespace(label_namespace(label), NODE_RESTRICTION_LABEL_NAMESPACE)
                || (is_kubernetes_label(label) && !is_kubelet_label(label))
        })
        .cloned()
        .collect()
}

/// `admitPVCStatus`: nothing but `status.capacity`, `status.conditions` and (with
/// `RecoverVolumeExpansionFailure`, on in 1.33) the allocated resources may change.
fn pvc_status(node: &str, attrs: &Attributes) -> Result<(), String> {
    if attrs.operation != Operation::Update {
        return Err(format!(
            "unexpected operation {:?}",
            attrs.operation.as_str()
        ));
    }
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
            meta.remove("managedFields");
        }
        if let Some(status) = v.get_mut("status").and_then(Value::as_object_mut) {
            for f in [
                "capacity",
                "conditions",
                "allocatedResourceStatuses",
                "allocatedResources",
            ] {
                status.remove(f);
            }
        }
        v
    };
    let old = strip(
        attrs
            .old_object()
            .ok_or_else(|| "unexpected type <nil>".to_string())?,
    );
    let new = strip(object_of(attrs)?);
    if old != new {
        let changed: Vec<&str> = ["metadata", "spec", "status"]
            .into_iter()
            .filter(|f| old.get(*f) != new.get(*f))
            .collect();
        return Err(format!(
            "node {node:?} is not allowed to update fields other than status.capacity and status.conditions: {}",
            changed.join(", ")
        ));
    }
    Ok(())
}

/// `admitServiceAccount`: a node's TokenRequest must be bound to a pod on the node, named with
/// its UID. A bound pod that does not exist is left to the TokenRequest itself (404).
fn service_account(node: &str, attrs: &Attributes, pods: PodLookup<'_>) -> Result<(), String> {
    if attrs.operation != Operation::Create || attrs.subresource != "token" {
        return Ok(());
    }
    let request = object_of(attrs)?;
    let bound = request
        .pointer("/spec/boundObjectRef")
        .unwrap_or(&Value::Null);
    let field = |f: &str| bound.get(f).and_then(Value::as_str).unwrap_or_default();
    if field("apiVersion") != "v1" || field("kind") != "Pod" || field("name").is_empty() {
        return Err("node requested token not bound to a pod".to_string());
    }
    let uid = field("uid");
    if uid.is_empty() {
        return Err("node requested token with a pod binding without a uid".to_string());
    }
    let Some(pod) = pods(&attrs.namespace, field("name")) else {
        return Ok(());
    };
    if rkcm_storage::object::uid(&pod) != uid {
        return Err(format!(
            "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
        ));
    }
    if spec_node_name(&pod) != node {
        return Err(
            "node requested token bound to a pod scheduled on a different node".to_string(),
        );
    }
    Ok(())
}

/// `admitLease`: only the node's own Lease in `kube-node-lease`.
fn lease(node: &str, attrs: &Attributes) -> Result<(), String> {
    if attrs.namespace != NODE_LEASE_NAMESPACE {
        return Err(format!(
            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
        ));
    }
    own_name(node, attrs, "node lease")
}

/// `admitCSINode`: only the node's own CSINode.
fn csi_node(node: &str, attrs: &Attributes) -> Result<(), String> {
    own_name(node, attrs, "CSINode")
}

fn own_name(node: &str, attrs: &Attributes, what: &str) -> Result<(), String> {
    let name = if attrs.operation == Operation::Create {
        // The name of a create is the object's.
        attrs
            .object()
            .map(rkcm_storage::object::name)
            .unwrap_or_default()
    } else {
        attrs.name.as_str()
    };
    if name != node {
        return Err(format!(
            "can only access {what} with the same name as the requesting node"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::auth::UserInfo;

    fn node_user(n: &str) -> Arc<UserInfo> {
        Arc::new(UserInfo::new(format!("system:node:{n}"), &["system:nodes"]))
    }

    #[allow(clippy::too_many_arguments)]
    fn attrs(
        user: Arc<UserInfo>,
        op: Operation,
        gv: &str,
        kind: &str,
        sub: &'static str,
        ns: &str,
        name: &str,
        obj: Option<Value>,
        old: Option<Value>,
    ) -> Attributes {
        let info = rkcm_apimachinery::catalog::by_kind(gv, kind).expect("kind");
        Attributes::new(
            op,
            info,
            sub,
            Some(ns),
            name,
            obj,
            old.map(Arc::new),
            user,
            false,
        )
    }

    fn mynode() -> Arc<UserInfo> {
        node_user("mynode")
    }

    fn pod(name: &str, node: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "ns", "labels": {"a": "b"}},
               "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}})
    }

    fn mirror_pod(node: &str) -> Value {
        json!({"metadata": {"name": "mirror", "namespace": "ns",
                "annotations": {MIRROR_POD_ANNOTATION: "x"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node, "uid": "u", "controller": true}]},
               "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}})
    }

    fn run(a: &Attributes) -> Result<(), String> {
        check(a, &|ns, name| {
            (ns == "ns" && name == "stored").then(|| pod("stored", "othernode"))
        })
    }

    /// The pod cases of `Test_nodePlugin_Admit` (admission_test.go).
    #[test]
    fn nodes_create_and_delete_only_their_own_mirror_pods() {
        let create = |obj: Value| {
            run(&attrs(
                mynode(),
                Operation::Create,
                "v1",
                "Pod",
                "",
                "ns",
                "",
                Some(obj),
                None,
            ))
        };
        assert_eq!(create(mirror_pod("mynode")), Ok(()));
        assert_eq!(
            create(pod("p", "mynode")),
            Err("pod does not have \"kubernetes.io/config.mirror\" annotation, node \"mynode\" can only create mirror pods".into())
        );
        assert_eq!(
            create(mirror_pod("othernode")),
            Err("node \"mynode\" can only create pods with spec.nodeName set to itself".into())
        );
        let mut with_secret = mirror_pod("mynode");
        with_secret["spec"]["volumes"] = json!([{"name": "s", "secret": {"secretName": "foo"}}]);
        assert_eq!(
            create(with_secret),
            Err("node \"mynode\" can not create pods that reference secrets".into())
        );
        let mut with_sa = mirror_pod("mynode");
        with_sa["spec"]["serviceAccountName"] = json!("foo");
        assert_eq!(
            create(with_sa),
            Err("node \"mynode\" can not create pods that reference a service account".into())
        );
        let mut with_cm = mirror_pod("mynode");
        with_cm["spec"]["volumes"] = json!([{"name": "c", "configMap": {"name": "foo"}}]);
        assert_eq!(
            create(with_cm),
            Err("node \"mynode\" can not create pods that reference configmaps".into())
        );
        let mut with_pvc = mirror_pod("mynode");
        with_pvc["spec"]["volumes"] =
            json!([{"name": "c", "persistentVolumeClaim": {"claimName": "foo"}}]);
        assert_eq!(
            create(with_pvc),
            Err("node \"mynode\" can not create pods that reference persistentvolumeclaims".into())
        );
        let mut unowned = mirror_pod("mynode");
        unowned["metadata"]["ownerReferences"] = json!([]);
        assert_eq!(
            create(unowned),
            Err(
                "node \"mynode\" can only create pods with an owner reference set to itself".into()
            )
        );
        let mut not_controller = mirror_pod("mynode");
        not_controller["metadata"]["ownerReferences"][0]["controller"] = json!(false);
        assert_eq!(
            create(not_controller),
            Err("node \"mynode\" can only create pods with a controller owner reference set to itself".into())
        );
        let mut blocking = mirror_pod("mynode");
        blocking["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] = json!(true);
        assert_eq!(
            create(blocking),
            Err("node \"mynode\" must not set blockOwnerDeletion on an owner reference".into())
        );

        let delete = |old: Value| {
            run(&attrs(
                mynode(),
                Operation::Delete,
                "v1",
                "Pod",
                "",
                "ns",
                "p",
                None,
                Some(old),
            ))
        };
        assert_eq!(delete(pod("p", "mynode")), Ok(()));
        assert_eq!(
            delete(pod("p", "othernode")),
            Err("node \"mynode\" can only delete pods with spec.nodeName set to itself".into())
        );
        assert_eq!(
            run(&attrs(
                mynode(),
                Operation::Delete,
                "v1",
                "Pod",
                "",
                "ns",
                "stored",
                None,
                None
            )),
            Err("node \"mynode\" can only delete pods with spec.nodeName set to itself".into()),
            "the stored pod is looked up when the request carries none"
        );
        assert_eq!(
            run(&attrs(
                mynode(),
                Operation::Create,
                "v1",
                "Pod",
                "eviction",
                "ns",
                "stored",
                Some(json!({"metadata": {"name": "stored"}})),
                None
            )),
            Err("node mynode can only evict pods with spec.nodeName set to itself".into())
        );
        assert_eq!(
            run(&attrs(mynode(), Operation::Update, "v1", "Pod", "", "ns", "p",
                Some(pod("p", "mynode")), Some(pod("p", "mynode")))),
            Err("unexpected operation \"UPDATE\", node \"mynode\" can only create and delete mirror pods".into())
        );
    }

    #[test]
    fn nodes_update_the_status_of_their_own_pods_without_relabelling_them() {
        let status = |new: Value, old: Value| {
            run(&attrs(
                mynode(),
                Operation::Update,
                "v1",
                "Pod",
                "status",
                "ns",
                "p",
                Some(new),
                Some(old),
            ))
        };
        assert_eq!(status(pod("p", "mynode"), pod("p", "mynode")), Ok(()));
        assert_eq!(
            status(pod("p", "othernode"), pod("p", "othernode")),
            Err("node \"mynode\" can only update pod status for pods with spec.nodeName set to itself".into())
        );
        let mut relabelled = pod("p", "mynode");
        relabelled["metadata"]["labels"]["a"] = json!("c");
        assert_eq!(
            status(relabelled, pod("p", "mynode")),
            Err("node \"mynode\" cannot update labels through pod status".into())
        );
        let mut claims = pod("p", "mynode");
        claims["status"] =
            json!({"resourceClaimStatuses": [{"name": "x", "resourceClaimName": "y"}]});
        assert_eq!(
            status(claims, pod("p", "mynode")),
            Err("node \"mynode\" cannot update resource claim statues".into())
        );
        assert_eq!(
            run(&attrs(mynode(), Operation::Update, "v1", "Pod", "ephemeralcontainers", "ns", "p",
                Some(pod("p", "mynode")), Some(pod("p", "mynode")))),
            Err("unexpected pod subresource \"ephemeralcontainers\", only 'status' and 'eviction' are allowed".into())
        );
        // Other users are not restricted.
        let admin = Arc::new(UserInfo::new("admin", &["system:masters"]));
        assert_eq!(
            run(&attrs(
                admin,
                Operation::Update,
                "v1",
                "Pod",
                "status",
                "ns",
                "p",
                Some(pod("p", "othernode")),
                Some(pod("p", "othernode"))
            )),
            Ok(())
        );
    }

    fn node(name: &str, labels: Value, taints: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}})
    }

    /// The node cases of `Test_nodePlugin_Admit`.
    #[test]
    fn nodes_change_only_their_own_node_and_only_kubelet_labels() {
        let update = |name: &str, new: Value, old: Value| {
            run(&attrs(
                mynode(),
                Operation::Update,
                "v1",
                "Node",
                "",
                "",
                name,
                Some(new),
                Some(old),
            ))
        };
        let base = node("mynode", json!({}), json!(null));
        assert_eq!(update("mynode", base.clone(), base.clone()), Ok(()));
        assert_eq!(
            update(
                "othernode",
                node("othernode", json!({}), json!(null)),
                node("othernode", json!({}), json!(null))
            ),
            Err("node \"mynode\" is not allowed to modify node \"othernode\"".into())
        );
        assert_eq!(
            update("mynode", node("mynode", json!({}), json!([])), base.clone()),
            Ok(()),
            "an empty taint list is no taint"
        );
        assert_eq!(
            update(
                "mynode",
                node(
                    "mynode",
                    json!({}),
                    json!([{"key": "k", "effect": "NoSchedule"}])
                ),
                base.clone()
            ),
            Err("node \"mynode\" is not allowed to modify taints".into())
        );
        let allowed = json!({
            "kubernetes.io/hostname": "h", "node.kubernetes.io/instance-type": "t",
            "kubelet.kubernetes.io/x": "y", "sub.node.kubernetes.io/x": "y", "example.com/x": "y",
            "topology.kubernetes.io/zone": "z"
        });
        assert_eq!(
            update("mynode", node("mynode", allowed, json!(null)), base.clone()),
            Ok(())
        );
        let forbidden = json!({
            "node-restriction.kubernetes.io/x": "y", "foo.node-restriction.kubernetes.io/x": "y",
            "kubernetes.io/role": "master", "k8s.io/x": "y", "other.k8s.io/x": "y"
        });
        assert_eq!(
            update("mynode", node("mynode", forbidden.clone(), json!(null)), base.clone()),
            Err("is not allowed to modify labels: foo.node-restriction.kubernetes.io/x, k8s.io/x, kubernetes.io/role, node-restriction.kubernetes.io/x, other.k8s.io/x".into())
        );
        // Removing such a label is a modification too.
        assert_eq!(
            update(
                "mynode",
                base.clone(),
                node("mynode", json!({"kubernetes.io/role": "x"}), json!(null))
            ),
            Err("is not allowed to modify labels: kubernetes.io/role".into())
        );
        let create = |obj: Value| {
            run(&attrs(
                mynode(),
                Operation::Create,
                "v1",
                "Node",
                "",
                "",
                "",
                Some(obj),
                None,
            ))
        };
        assert_eq!(create(base.clone()), Ok(()));
        assert_eq!(
            create(node(
                "mynode",
                json!({"kubernetes.io/role": "x"}),
                json!(null)
            )),
            Err(
                "node \"mynode\" is not allowed to set the following labels: kubernetes.io/role"
                    .into()
            )
        );
        let mut config = base.clone();
        config["spec"]["configSource"] = json!({"configMap": {"name": "x"}});
        assert_eq!(
            create(config),
            Err("node \"mynode\" is not allowed to create pods with a non-nil configSource".into())
        );
        assert_eq!(
            create(node("othernode", json!({}), json!(null))),
            Err("node \"mynode\" is not allowed to modify node \"othernode\"".into())
        );
    }

    #[test]
    fn nodes_write_only_their_own_lease_and_csinode() {
        let lease = |op: Operation, ns: &str, name: &str, obj: Option<Value>| {
            run(&attrs(
                mynode(),
                op,
                "coordination.k8s.io/v1",
                "Lease",
                "",
                ns,
                name,
                obj,
                None,
            ))
        };
        let obj = |n: &str| Some(json!({"metadata": {"name": n, "namespace": "kube-node-lease"}}));
        assert_eq!(
            lease(Operation::Create, "kube-node-lease", "", obj("mynode")),
            Ok(())
        );
        assert_eq!(
            lease(Operation::Create, "kube-node-lease", "", obj("othernode")),
            Err("can only access node lease with the same name as the requesting node".into())
        );
        assert_eq!(
            lease(
                Operation::Update,
                "kube-node-lease",
                "mynode",
                obj("mynode")
            ),
            Ok(())
        );
        assert_eq!(
            lease(
                Operation::Update,
                "kube-node-lease",
                "othernode",
                obj("othernode")
            ),
            Err("can only access node lease with the same name as the requesting node".into())
        );
        assert_eq!(
            lease(Operation::Update, "default", "mynode", obj("mynode")),
            Err("can only access leases in the \"kube-node-lease\" system namespace".into())
        );
        let csi = |op: Operation, name: &str, obj: Option<Value>| {
            run(&attrs(
                mynode(),
                op,
                "storage.k8s.io/v1",
                "CSINode",
                "",
                "",
                name,
                obj,
                None,
            ))
        };
        assert_eq!(
            csi(
                Operation::Create,
                "",
                Some(json!({"metadata": {"name": "mynode"}}))
            ),
            Ok(())
        );
        assert_eq!(
            csi(Operation::Delete, "othernode", None),
            Err("can only access CSINode with the same name as the requesting node".into())
        );
    }

    #[test]
    fn nodes_change_only_the_status_conditions_and_capacity_of_claims() {
        let claim = json!({"metadata": {"name": "c", "namespace": "ns", "resourceVersion": "1"},
            "spec": {"resources": {"requests": {"storage": "1Gi"}}}, "status": {"phase": "Bound"}});
        let pvc = |sub: &'static str, new: Value| {
            run(&attrs(
                mynode(),
                Operation::Update,
                "v1",
                "PersistentVolumeClaim",
                sub,
                "ns",
                "c",
                Some(new),
                Some(claim.clone()),
            ))
        };
        let mut resized = claim.clone();
        resized["status"]["capacity"] = json!({"storage": "2Gi"});
        resized["status"]["conditions"] = json!([{"type": "Resizing", "status": "True"}]);
        resized["metadata"]["resourceVersion"] = json!("2");
        assert_eq!(pvc("status", resized), Ok(()));
        let mut phase = claim.clone();
        phase["status"]["phase"] = json!("Lost");
        assert_eq!(
            pvc("status", phase),
            Err("node \"mynode\" is not allowed to update fields other than status.capacity and status.conditions: status".into())
        );
        assert_eq!(
            pvc("", claim.clone()),
            Err("may only update PVC status".into())
        );
    }

    /// The TokenRequest cases of `Test_nodePlugin_Admit`.
    #[test]
    fn nodes_request_tokens_only_bound_to_their_own_pods() {
        let token = |bound: Value| {
            run(&attrs(
                mynode(),
                Operation::Create,
                "v1",
                "ServiceAccount",
                "token",
                "ns",
                "sa",
                Some(json!({"spec": {"boundObjectRef": bound}})),
                None,
            ))
        };
        let lookup_pods = |bound: Value, stored: Value| {
            let a = attrs(
                mynode(),
                Operation::Create,
                "v1",
                "ServiceAccount",
                "token",
                "ns",
                "sa",
                Some(json!({"spec": {"boundObjectRef": bound}})),
                None,
            );
            check(&a, &|_, _| Some(stored.clone()))
        };
        assert_eq!(
            token(Value::Null),
            Err("node requested token not bound to a pod".into())
        );
        assert_eq!(
            token(json!({"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u"})),
            Err("node requested token not bound to a pod".into())
        );
        assert_eq!(
            token(json!({"apiVersion": "v1", "kind": "Pod", "name": "p"})),
            Err("node requested token with a pod binding without a uid".into())
        );
        let mut mine = pod("p", "mynode");
        mine["metadata"]["uid"] = json!("u1");
        let bound = json!({"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u1"});
        assert_eq!(lookup_pods(bound.clone(), mine.clone()), Ok(()));
        let mut theirs = mine.clone();
        theirs["spec"]["nodeName"] = json!("othernode");
        assert_eq!(
            lookup_pods(bound.clone(), theirs),
            Err("node requested token bound to a pod scheduled on a different node".into())
        );
        let mut recreated = mine.clone();
        recreated["metadata"]["uid"] = json!("u2");
        assert_eq!(
            lookup_pods(bound, recreated),
            Err("the UID in the bound object reference (u1) does not match the UID in record. The object might have been deleted and then recreated".into())
        );
    }

    #[test]
    fn kubelet_labels_are_kubes_list_and_namespaces() {
        assert!(is_kubelet_label("kubernetes.io/hostname"));
        assert!(is_kubelet_label(
            "node.kubernetes.io/exclude-from-external-load-balancers"
        ));
        assert!(is_kubelet_label("a.kubelet.kubernetes.io/x"));
        assert!(!is_kubelet_label("kubernetes.io/role"));
        assert!(!is_kubelet_label("node-role.kubernetes.io/master"));
        assert!(!is_kubelet_label("xnode.kubernetes.io/x"));
        let empty: BTreeSet<String> = BTreeSet::new();
        assert_eq!(forbidden_labels(&empty), empty);
    }

    #[test]
    fn a_node_without_a_name_is_refused() {
        let nameless = Arc::new(UserInfo::new("system:node:", &["system:nodes"]));
        assert_eq!(
            run(&attrs(
                nameless,
                Operation::Create,
                "v1",
                "ConfigMap",
                "",
                "ns",
                "x",
                Some(json!({})),
                None
            )),
            Err("could not determine node from user \"system:node:\"".into())
        );
    }
}
