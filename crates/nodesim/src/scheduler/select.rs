//! Choosing a node for a pod among the feasible ones, or explaining why none fits.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{Node, Pod};

use super::pod_affinity::InterPodAffinity;
use super::predicates::{fits, NodeUsage, Reason};

/// No node can take the pod. `Display` gives kube-scheduler's message, such as
/// `0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FitError {
    /// How many nodes were considered.
    pub num_nodes: usize,
    /// How many nodes failed for each reason.
    pub reasons: BTreeMap<Reason, usize>,
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.num_nodes == 0 {
            return f.write_str("no nodes available to schedule pods");
        }
        // framework.FitError.Error(): "<count> <reason>" strings, sorted as strings.
        let mut histogram: Vec<String> = self
            .reasons
            .iter()
            .map(|(reason, count)| format!("{count} {reason}"))
            .collect();
        histogram.sort();
        write!(
            f,
            "0/{} nodes are available: {}.",
            self.num_nodes,
            histogram.join(", ")
        )
    }
}

impl std::error::Error for FitError {}

/// Picks the node for `pod`: among the nodes it fits, the one running the fewest pods, ties broken
/// by name, which spreads pods evenly over identical simulated nodes.
///
/// `affinity` holds what the existing pods mean for this pod's inter-pod (anti-)affinity; it is
/// checked after the other filters, as InterPodAffinity runs last among kube-scheduler's filters.
pub fn select_node<'a>(
    pod: &Pod,
    nodes: &'a [(&'a Node, NodeUsage)],
    affinity: &InterPodAffinity,
) -> Result<&'a Node, FitError> {
    let mut reasons = BTreeMap::new();
    let mut best: Option<(&Node, usize)> = None;
    for (node, usage) in nodes {
        let verdict =
            fits(pod, node, usage).and_then(|()| affinity.check(node).map_err(|r| vec![r]));
        match verdict {
            Ok(()) => {
                let better = match best {
                    None => true,
                    Some((current, pods)) => {
                        (usage.pods, node.metadata.name.as_deref())
                            < (pods, current.metadata.name.as_deref())
                    }
                };
                if better {
                    best = Some((node, usage.pods));
                }
            }
            Err(failed) => {
                for reason in failed {
                    *reasons.entry(reason).or_insert(0) += 1;
                }
            }
        }
    }
    best.map(|(node, _)| node).ok_or(FitError {
        num_nodes: nodes.len(),
        reasons,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeStatus, PodSpec};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn node(name: &str, labels: &[(&str, &str)]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            },
            spec: None,
            status: Some(NodeStatus {
                allocatable: Some([("pods".to_string(), Quantity("2".into()))].into()),
                ..Default::default()
            }),
        }
    }

    fn usage(pods: usize) -> NodeUsage {
        NodeUsage {
            pods,
            ..Default::default()
        }
    }

    fn pod_selecting(labels: &[(&str, &str)]) -> Pod {
        Pod {
            spec: Some(PodSpec {
                node_selector: Some(
                    labels
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn picks_the_node_with_fewest_pods_then_by_name() {
        let (a, b, c) = (
            node("b-node", &[]),
            node("a-node", &[]),
            node("c-node", &[]),
        );
        let nodes = [(&a, usage(1)), (&b, usage(1)), (&c, usage(0))];
        let chosen =
            select_node(&pod_selecting(&[]), &nodes, &InterPodAffinity::default()).unwrap();
        assert_eq!(chosen.metadata.name.as_deref(), Some("c-node"));
        let nodes = [(&a, usage(0)), (&b, usage(0))];
        let chosen =
            select_node(&pod_selecting(&[]), &nodes, &InterPodAffinity::default()).unwrap();
        assert_eq!(chosen.metadata.name.as_deref(), Some("a-node"));
    }

    #[test]
    fn explains_unschedulable_pods_as_kube_scheduler_does() {
        let (a, b, c) = (node("n1", &[]), node("n2", &[]), node("n3", &[]));
        let nodes = [(&a, usage(0)), (&b, usage(0)), (&c, usage(0))];
        let err = select_node(
            &pod_selecting(&[("disk", "ssd")]),
            &nodes,
            &InterPodAffinity::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
        );

        let d = node("n4", &[("disk", "ssd")]);
        let nodes = [(&a, usage(0)), (&b, usage(0)), (&d, usage(2))];
        let err = select_node(
            &pod_selecting(&[("disk", "ssd")]),
            &nodes,
            &InterPodAffinity::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "0/3 nodes are available: 1 Too many pods, 2 node(s) didn't match Pod's node affinity/selector."
        );

        let err = select_node(&pod_selecting(&[]), &[], &InterPodAffinity::default()).unwrap_err();
        assert_eq!(err.to_string(), "no nodes available to schedule pods");
    }
}
