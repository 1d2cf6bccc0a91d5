//! Choosing a node for a pod among the feasible ones, or explaining why none fits.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{Node, Pod};

use super::pod_affinity::InterPodAffinity;
use super::predicates::{fits_requests, NodeUsage, Reason};
use super::resources::pod_requests;

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

/// kube-scheduler's floor on the feasible nodes it looks for (`minFeasibleNodesToFind`).
const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;

/// kube-scheduler's floor on the adaptive percentage of nodes (`minFeasibleNodesPercentageToFind`).
const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: usize = 5;

/// How many feasible nodes kube-scheduler looks for before it stops filtering, with the default
/// `percentageOfNodesToScore` (`numFeasibleNodesToFind`): every node below 100, else 50 % less
/// a point per 125 nodes (at least 5 %), and never fewer than 100.
pub fn num_feasible_nodes_to_find(num_all_nodes: usize) -> usize {
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND {
        return num_all_nodes;
    }
    let percentage = 50usize
        .saturating_sub(num_all_nodes / 125)
        .max(MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND);
    (num_all_nodes * percentage / 100).max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// The outcome of filtering and choosing, and how many nodes were looked at (kube-scheduler
/// starts the next pod's search after them).
#[derive(Debug)]
pub struct Selection<'a> {
    /// The chosen node, or why none fits.
    pub node: Result<&'a Node, FitError>,
    /// Nodes filtered before enough feasible ones were found (all of them when too few were).
    pub processed: usize,
}

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
    select_node_from(pod, nodes, affinity, 0).node
}

/// [`select_node`] as kube-scheduler's `findNodesThatPassFilters`: the nodes are filtered in
/// order from `start` (wrapping around) until [`num_feasible_nodes_to_find`] fit, and the pod
/// goes to the best of those; the caller starts the next search where this one stopped, so
/// every node gets its turn. In clusters under 100 nodes every node is filtered.
pub fn select_node_from<'a>(
    pod: &Pod,
    nodes: &'a [(&'a Node, NodeUsage)],
    affinity: &InterPodAffinity,
    start: usize,
) -> Selection<'a> {
    let to_find = num_feasible_nodes_to_find(nodes.len());
    let start = if nodes.is_empty() {
        0
    } else {
        start % nodes.len()
    };
    let requests = pod_requests(pod);
    let mut reasons = BTreeMap::new();
    let mut best: Option<(&Node, usize)> = None;
    let mut feasible = 0;
    let mut processed = 0;
    for (node, usage) in nodes[start..].iter().chain(&nodes[..start]) {
        if feasible >= to_find {
            break;
        }
        processed += 1;
        let verdict = fits_requests(pod, &requests, node, usage)
            .and_then(|()| affinity.check(node).map_err(|r| vec![r]));
        match verdict {
            Ok(()) => {
                feasible += 1;
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
    Selection {
        node: best.map(|(node, _)| node).ok_or(FitError {
            num_nodes: nodes.len(),
            reasons,
        }),
        processed,
    }
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

    #[test]
    fn feasible_nodes_to_find_follow_kube_schedulers_defaults() {
        assert_eq!(num_feasible_nodes_to_find(0), 0);
        assert_eq!(num_feasible_nodes_to_find(99), 99);
        assert_eq!(num_feasible_nodes_to_find(100), 100);
        // 50 - 203/125 = 49 %: 99 nodes, raised to the floor of 100.
        assert_eq!(num_feasible_nodes_to_find(203), 100);
        // 50 - 1000/125 = 42 %.
        assert_eq!(num_feasible_nodes_to_find(1000), 420);
        // 50 - 5000/125 = 10 %.
        assert_eq!(num_feasible_nodes_to_find(5000), 500);
        // 50 - 6250/125 = 0 %, floored at 5 %.
        assert_eq!(num_feasible_nodes_to_find(6250), 312);
    }

    #[test]
    fn large_clusters_are_searched_from_where_the_last_search_stopped() {
        let nodes: Vec<Node> = (0..250).map(|i| node(&format!("n{i:03}"), &[])).collect();
        let usage = NodeUsage::default();
        let candidates: Vec<(&Node, NodeUsage)> =
            nodes.iter().map(|n| (n, usage.clone())).collect();
        let pod = Pod::default();
        let affinity = InterPodAffinity::default();
        // 250 nodes: 50 - 2 = 48 % is 120 nodes to find; all fit and tie, the first name wins.
        let first = select_node_from(&pod, &candidates, &affinity, 0);
        assert_eq!(first.processed, 120);
        assert_eq!(
            first.node.expect("fits").metadata.name.as_deref(),
            Some("n000")
        );
        let second = select_node_from(&pod, &candidates, &affinity, 120);
        assert_eq!(second.processed, 120);
        assert_eq!(
            second.node.expect("fits").metadata.name.as_deref(),
            Some("n120")
        );
        // Wrapping around the end of the list.
        let third = select_node_from(&pod, &candidates, &affinity, 240);
        assert_eq!(
            third.node.expect("fits").metadata.name.as_deref(),
            Some("n000")
        );
    }
}
