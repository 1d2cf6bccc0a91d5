//! The filters deciding whether a pod fits a node, with the reasons kube-scheduler reports when it does not.
//!
//! Filters run in kube-scheduler's default order (NodeUnschedulable, NodeName, TaintToleration,
//! NodeAffinity, NodeResourcesFit) and stop at the first one that fails, as the framework does.

use std::fmt;

use k8s_openapi::api::core::v1::{Node, Pod, Taint};

use super::node_affinity;
use super::resources::{node_allocatable, pod_requests, Resources, PODS};
use super::taints::{tolerates, untolerated};

/// The taint the node lifecycle puts on cordoned nodes; a pod tolerating it may still land there.
pub const UNSCHEDULABLE_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";
/// The taint of nodes whose Ready condition is False.
pub const NOT_READY_TAINT_KEY: &str = "node.kubernetes.io/not-ready";
/// The taint of nodes whose Ready condition is Unknown (the kubelet stopped reporting).
pub const UNREACHABLE_TAINT_KEY: &str = "node.kubernetes.io/unreachable";

/// Why a pod does not fit a node. `Display` gives kube-scheduler's wording.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// `spec.unschedulable` (cordoned) and the pod does not tolerate it.
    Unschedulable,
    /// The pod names another node in `spec.nodeName`.
    NodeName,
    /// A `NoSchedule`/`NoExecute` taint the pod does not tolerate.
    UntoleratedTaint {
        /// Taint key.
        key: String,
        /// Taint value ("" when unset).
        value: String,
    },
    /// `nodeSelector` or required node affinity does not match.
    NodeAffinity,
    /// The node already runs as many pods as it allows.
    TooManyPods,
    /// Not enough of a resource is left (`cpu`, `memory`, extended resources).
    Insufficient(String),
    /// A pod on the node (or in its topology domain) has anti-affinity against this pod.
    ExistingPodsAntiAffinity,
    /// The pod's required pod affinity is not met in the node's topology domain.
    PodAffinity,
    /// The pod's required pod anti-affinity forbids the node's topology domain.
    PodAntiAffinity,
    /// A bound volume's node affinity excludes the node (VolumeBinding `ErrReasonNodeConflict`).
    VolumeNodeAffinityConflict,
    /// A claim waiting for its first consumer can get no volume on the node
    /// (VolumeBinding `ErrReasonBindConflict`).
    VolumeBindConflict,
    /// A claim is bound to a volume that does not exist (VolumeBinding `ErrReasonPVNotExist`).
    VolumeNotExist,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Unschedulable => f.write_str("node(s) were unschedulable"),
            Reason::NodeName => f.write_str("node(s) didn't match the requested node name"),
            Reason::UntoleratedTaint { key, value } => {
                write!(f, "node(s) had untolerated taint {{{key}: {value}}}")
            }
            Reason::NodeAffinity => {
                f.write_str("node(s) didn't match Pod's node affinity/selector")
            }
            Reason::TooManyPods => f.write_str("Too many pods"),
            Reason::Insufficient(resource) => write!(f, "Insufficient {resource}"),
            Reason::ExistingPodsAntiAffinity => {
                f.write_str("node(s) didn't satisfy existing pods anti-affinity rules")
            }
            Reason::PodAffinity => f.write_str("node(s) didn't match pod affinity rules"),
            Reason::PodAntiAffinity => f.write_str("node(s) didn't match pod anti-affinity rules"),
            Reason::VolumeNodeAffinityConflict => {
                f.write_str("node(s) had volume node affinity conflict")
            }
            Reason::VolumeBindConflict => {
                f.write_str("node(s) didn't find available persistent volumes to bind")
            }
            Reason::VolumeNotExist => f.write_str(
                "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)",
            ),
        }
    }
}

/// What the pods already on a node use: summed requests and how many there are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeUsage {
    /// Sum of the requests of the non-terminal pods on the node.
    pub requested: Resources,
    /// Number of non-terminal pods on the node.
    pub pods: usize,
}

impl NodeUsage {
    /// Accounts for one more pod on the node.
    pub fn add_pod(&mut self, pod: &Pod) {
        self.requested.add(&pod_requests(pod));
        self.pods += 1;
    }

    /// The usage of `pods`, skipping those that finished (Succeeded or Failed), which hold no resources.
    pub fn of<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> Self {
        let mut usage = NodeUsage::default();
        for pod in pods.into_iter().filter(|p| !is_terminal(p)) {
            usage.add_pod(pod);
        }
        usage
    }
}

/// True when the pod has finished for good (phase Succeeded or Failed).
pub fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Checks whether `pod` fits `node` given what already runs there. On failure, returns the reasons
/// of the first failing filter (NodeResourcesFit may give several).
pub fn fits(pod: &Pod, node: &Node, usage: &NodeUsage) -> Result<(), Vec<Reason>> {
    fits_requests(pod, &pod_requests(pod), node, usage)
}

/// [`fits`] of a pod whose requests (`pod_requests(pod)`) are already known: a scheduling
/// decision computes them once for all the nodes it looks at.
pub fn fits_requests(
    pod: &Pod,
    requests: &Resources,
    node: &Node,
    usage: &NodeUsage,
) -> Result<(), Vec<Reason>> {
    let spec = pod.spec.as_ref();
    let tolerations = spec
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default();
    let node_spec = node.spec.as_ref();

    if node_spec.and_then(|s| s.unschedulable).unwrap_or(false) {
        let cordon = Taint {
            key: UNSCHEDULABLE_TAINT_KEY.into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        };
        if !tolerations.iter().any(|t| tolerates(t, &cordon)) {
            return Err(vec![Reason::Unschedulable]);
        }
    }

    if let Some(wanted) = spec
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
    {
        if Some(wanted) != node.metadata.name.as_deref() {
            return Err(vec![Reason::NodeName]);
        }
    }

    // Only the node's real taints count: the node lifecycle controller puts the not-ready and
    // unreachable taints on nodes whose Ready condition is not True.
    let taints = node_spec.and_then(|s| s.taints.clone()).unwrap_or_default();
    if let Some(taint) = untolerated(&taints, tolerations) {
        return Err(vec![Reason::UntoleratedTaint {
            key: taint.key.clone(),
            value: taint.value.clone().unwrap_or_default(),
        }]);
    }

    if !node_affinity::matches(pod, node) {
        return Err(vec![Reason::NodeAffinity]);
    }

    let allocatable = node_allocatable(node);
    let mut reasons = Vec::new();
    if usage.pods as i128 + 1 > allocatable.get(PODS) / 1000 {
        reasons.push(Reason::TooManyPods);
    }
    for (resource, amount) in &requests.0 {
        if *amount <= 0 || resource == PODS {
            continue;
        }
        if *amount > allocatable.get(resource) - usage.requested.get(resource) {
            reasons.push(Reason::Insufficient(resource.clone()));
        }
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(reasons)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        Container, NodeSpec, NodeStatus, PodSpec, ResourceRequirements, Toleration,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn node(name: &str, cpu: &str, memory: &str, pods: &str) -> Node {
        let q = |s: &str| Quantity(s.into());
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some([("kubernetes.io/hostname".to_string(), name.to_string())].into()),
                ..Default::default()
            },
            spec: Some(NodeSpec::default()),
            status: Some(NodeStatus {
                allocatable: Some(
                    [("cpu", q(cpu)), ("memory", q(memory)), ("pods", q(pods))]
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect(),
                ),
                ..Default::default()
            }),
        }
    }

    fn pod(cpu: &str) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("p".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "c".into(),
                    resources: (!cpu.is_empty()).then(|| ResourceRequirements {
                        requests: Some([("cpu".to_string(), Quantity(cpu.into()))].into()),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_plain_pod_fits_an_empty_node() {
        assert_eq!(
            fits(
                &pod(""),
                &node("n1", "8", "32Gi", "110"),
                &NodeUsage::default()
            ),
            Ok(())
        );
    }

    #[test]
    fn resources_and_pod_count_are_checked_against_allocatable_minus_usage() {
        let n = node("n1", "1", "1Gi", "2");
        let mut usage = NodeUsage::default();
        usage.add_pod(&pod("600m"));
        assert_eq!(fits(&pod("400m"), &n, &usage), Ok(()));
        assert_eq!(
            fits(&pod("500m"), &n, &usage),
            Err(vec![Reason::Insufficient("cpu".into())])
        );
        usage.add_pod(&pod(""));
        assert_eq!(
            fits(&pod("500m"), &n, &usage),
            Err(vec![
                Reason::TooManyPods,
                Reason::Insufficient("cpu".into())
            ])
        );
    }

    #[test]
    fn terminal_pods_hold_no_resources() {
        let mut done = pod("1");
        done.status = Some(k8s_openapi::api::core::v1::PodStatus {
            phase: Some("Succeeded".into()),
            ..Default::default()
        });
        assert_eq!(NodeUsage::of([&done]), NodeUsage::default());
    }

    #[test]
    fn cordoned_nodes_refuse_pods_unless_tolerated() {
        let mut n = node("n1", "8", "32Gi", "110");
        n.spec.as_mut().unwrap().unschedulable = Some(true);
        let mut p = pod("");
        assert_eq!(
            fits(&p, &n, &NodeUsage::default()),
            Err(vec![Reason::Unschedulable])
        );
        p.spec.as_mut().unwrap().tolerations = Some(vec![Toleration {
            key: Some(UNSCHEDULABLE_TAINT_KEY.into()),
            operator: Some("Exists".into()),
            ..Default::default()
        }]);
        assert_eq!(fits(&p, &n, &NodeUsage::default()), Ok(()));
    }

    #[test]
    fn taints_are_checked_before_affinity() {
        let mut n = node("n1", "8", "32Gi", "110");
        n.spec.as_mut().unwrap().taints = Some(vec![Taint {
            key: "dedicated".into(),
            value: Some("db".into()),
            effect: "NoSchedule".into(),
            time_added: None,
        }]);
        let mut p = pod("");
        p.spec.as_mut().unwrap().node_selector = Some([("x".to_string(), "y".to_string())].into());
        let reasons = fits(&p, &n, &NodeUsage::default()).unwrap_err();
        assert_eq!(
            reasons[0].to_string(),
            "node(s) had untolerated taint {dedicated: db}"
        );
    }

    #[test]
    fn only_real_taints_keep_pods_off_a_not_ready_node() {
        let mut n = node("n1", "8", "32Gi", "110");
        n.status.as_mut().unwrap().conditions =
            Some(vec![k8s_openapi::api::core::v1::NodeCondition {
                type_: "Ready".into(),
                status: "Unknown".into(),
                ..Default::default()
            }]);
        let mut p = pod("");
        // The lifecycle controller has not tainted it yet.
        assert_eq!(fits(&p, &n, &NodeUsage::default()), Ok(()));
        n.spec.as_mut().unwrap().taints = Some(vec![Taint {
            key: UNREACHABLE_TAINT_KEY.into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        }]);
        assert_eq!(
            fits(&p, &n, &NodeUsage::default()).unwrap_err()[0].to_string(),
            "node(s) had untolerated taint {node.kubernetes.io/unreachable: }"
        );
        p.spec.as_mut().unwrap().tolerations = Some(vec![Toleration {
            key: Some(UNREACHABLE_TAINT_KEY.into()),
            operator: Some("Exists".into()),
            ..Default::default()
        }]);
        assert_eq!(fits(&p, &n, &NodeUsage::default()), Ok(()));
    }

    #[test]
    fn a_preset_node_name_only_fits_that_node() {
        let mut p = pod("");
        p.spec.as_mut().unwrap().node_name = Some("n2".into());
        assert_eq!(
            fits(&p, &node("n1", "8", "32Gi", "110"), &NodeUsage::default()),
            Err(vec![Reason::NodeName])
        );
    }

    /// A DaemonSet's pod as the controller creates it: pinned to `node` by a required
    /// `metadata.name` affinity, with the daemon tolerations (unschedulable among them).
    fn daemon_pod(node: &str, cpu: &str) -> Pod {
        use k8s_openapi::api::core::v1::{
            Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
        };
        let mut p = pod(cpu);
        let spec = p.spec.as_mut().unwrap();
        spec.affinity = Some(Affinity {
            node_affinity: Some(NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_expressions: None,
                        match_fields: Some(vec![NodeSelectorRequirement {
                            key: "metadata.name".into(),
                            operator: "In".into(),
                            values: Some(vec![node.into()]),
                        }]),
                    }],
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
        spec.tolerations = Some(vec![
            Toleration {
                key: Some(UNSCHEDULABLE_TAINT_KEY.into()),
                operator: Some("Exists".into()),
                effect: Some("NoSchedule".into()),
                ..Default::default()
            },
            Toleration {
                key: Some(NOT_READY_TAINT_KEY.into()),
                operator: Some("Exists".into()),
                effect: Some("NoExecute".into()),
                ..Default::default()
            },
        ]);
        p
    }

    /// kube-scheduler has no special case for daemon pods: the name affinity picks the node, the
    /// daemon tolerations admit a cordoned one, and resources are checked as for any pod (a full
    /// node leaves the pod Pending); a not-ready node's NoSchedule taint (put there by the node
    /// lifecycle controller) is not tolerated.
    #[test]
    fn daemon_pods_fit_only_their_node_tolerate_cordons_and_still_need_resources() {
        let mut n1 = node("n1", "1", "1Gi", "110");
        let n2 = node("n2", "8", "32Gi", "110");
        let p = daemon_pod("n1", "500m");
        assert_eq!(fits(&p, &n1, &NodeUsage::default()), Ok(()));
        assert_eq!(
            fits(&p, &n2, &NodeUsage::default()),
            Err(vec![Reason::NodeAffinity])
        );
        n1.spec.as_mut().unwrap().unschedulable = Some(true);
        assert_eq!(fits(&p, &n1, &NodeUsage::default()), Ok(()));
        let mut usage = NodeUsage::default();
        usage.add_pod(&pod("800m"));
        assert_eq!(
            fits(&p, &n1, &usage),
            Err(vec![Reason::Insufficient("cpu".into())])
        );
        n1.status.as_mut().unwrap().conditions =
            Some(vec![k8s_openapi::api::core::v1::NodeCondition {
                type_: "Ready".into(),
                status: "False".into(),
                ..Default::default()
            }]);
        assert_eq!(fits(&p, &n1, &NodeUsage::default()), Ok(()));
        n1.spec.as_mut().unwrap().taints = Some(vec![Taint {
            key: NOT_READY_TAINT_KEY.into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        }]);
        assert_eq!(
            fits(&p, &n1, &NodeUsage::default()),
            Err(vec![Reason::UntoleratedTaint {
                key: NOT_READY_TAINT_KEY.into(),
                value: String::new(),
            }])
        );
    }
}
