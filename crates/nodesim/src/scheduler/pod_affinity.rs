//! Required inter-pod affinity and anti-affinity (the InterPodAffinity filter).
//!
//! Mirrors `pkg/scheduler/framework/plugins/interpodaffinity/filtering.go`: the incoming pod's
//! affinity terms need a matching pod in the candidate node's topology domain (unless no pod matches
//! anywhere and the pod matches its own terms: the first of a group); its anti-affinity terms forbid
//! domains holding a matching pod; and existing pods' anti-affinity terms that match the incoming pod
//! forbid their domains. Only `requiredDuringSchedulingIgnoredDuringExecution` terms count.

use std::collections::{BTreeMap, HashMap, HashSet};

use k8s_openapi::api::core::v1::{Node, Pod, PodAffinityTerm};
use rkcm_labels::Selector;

use super::predicates::Reason;

/// A topology domain: a node label key and its value.
type TopologyPair = (String, String);

/// Required pod affinity terms of `pod`.
pub fn required_affinity_terms(pod: &Pod) -> &[PodAffinityTerm] {
    pod.spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.pod_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_deref()
        })
        .unwrap_or_default()
}

/// Required pod anti-affinity terms of `pod`.
pub fn required_anti_affinity_terms(pod: &Pod) -> &[PodAffinityTerm] {
    pod.spec
        .as_ref()
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.pod_anti_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_deref()
        })
        .unwrap_or_default()
}

/// Whether the term of `owner` selects `candidate`: namespace and label selector.
fn term_matches(term: &PodAffinityTerm, owner: &Pod, candidate: &Pod) -> bool {
    let candidate_ns = candidate.metadata.namespace.as_deref().unwrap_or_default();
    let listed = term.namespaces.as_deref().unwrap_or_default();
    let namespace_ok = match &term.namespace_selector {
        // `namespaceSelector: {}` selects every namespace.
        Some(selector) if rkcm_labels::selects_everything(selector) => true,
        // TODO: a non-empty namespaceSelector needs namespace labels (a namespace informer); only
        // the listed namespaces are honoured.
        Some(_) => listed.iter().any(|ns| ns == candidate_ns),
        None if listed.is_empty() => {
            owner.metadata.namespace.as_deref().unwrap_or_default() == candidate_ns
        }
        None => listed.iter().any(|ns| ns == candidate_ns),
    };
    if !namespace_ok {
        return false;
    }
    let selector = Selector::from_optional_label_selector(term.label_selector.as_ref())
        .unwrap_or_else(|_| Selector::nothing());
    let empty = BTreeMap::new();
    selector.matches(candidate.metadata.labels.as_ref().unwrap_or(&empty))
}

fn label<'a>(node: &'a Node, key: &str) -> Option<&'a str> {
    node.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

/// What the existing pods mean for placing one pod, computed once per scheduling attempt.
#[derive(Debug, Default)]
pub struct InterPodAffinity {
    affinity_terms: Vec<PodAffinityTerm>,
    anti_affinity_terms: Vec<PodAffinityTerm>,
    /// Domains holding a pod that matches every affinity term.
    affinity_counts: HashMap<TopologyPair, usize>,
    /// Domains holding a pod that matches some anti-affinity term.
    anti_affinity_counts: HashMap<TopologyPair, usize>,
    /// Domains forbidden by existing pods' anti-affinity terms that match the pod.
    existing_anti_affinity: HashSet<TopologyPair>,
    /// The pod matches all of its own affinity terms.
    matches_own_terms: bool,
}

impl InterPodAffinity {
    /// Prepares the checks for `pod`. `bound` are the unfinished pods bound to nodes with their node,
    /// needed only when the pod has affinity terms; `with_anti_affinity` are the bound pods that have
    /// required anti-affinity terms.
    pub fn new<'a>(
        pod: &Pod,
        bound: impl IntoIterator<Item = (&'a Pod, &'a Node)>,
        with_anti_affinity: impl IntoIterator<Item = (&'a Pod, &'a Node)>,
    ) -> Self {
        let mut state = InterPodAffinity {
            affinity_terms: required_affinity_terms(pod).to_vec(),
            anti_affinity_terms: required_anti_affinity_terms(pod).to_vec(),
            ..Default::default()
        };
        state.matches_own_terms = state
            .affinity_terms
            .iter()
            .all(|t| term_matches(t, pod, pod));
        if !state.affinity_terms.is_empty() || !state.anti_affinity_terms.is_empty() {
            for (existing, node) in bound {
                if existing.metadata.uid == pod.metadata.uid {
                    continue;
                }
                if !state.affinity_terms.is_empty()
                    && state
                        .affinity_terms
                        .iter()
                        .all(|t| term_matches(t, pod, existing))
                {
                    for term in &state.affinity_terms {
                        if let Some(value) = label(node, &term.topology_key) {
                            *state
                                .affinity_counts
                                .entry((term.topology_key.clone(), value.to_string()))
                                .or_insert(0) += 1;
                        }
                    }
                }
                for term in &state.anti_affinity_terms {
                    if term_matches(term, pod, existing) {
                        if let Some(value) = label(node, &term.topology_key) {
                            *state
                                .anti_affinity_counts
                                .entry((term.topology_key.clone(), value.to_string()))
                                .or_insert(0) += 1;
                        }
                    }
                }
            }
        }
        for (existing, node) in with_anti_affinity {
            if existing.metadata.uid == pod.metadata.uid {
                continue;
            }
            for term in required_anti_affinity_terms(existing) {
                if term_matches(term, existing, pod) {
                    if let Some(value) = label(node, &term.topology_key) {
                        state
                            .existing_anti_affinity
                            .insert((term.topology_key.clone(), value.to_string()));
                    }
                }
            }
        }
        state
    }

    /// Whether the pod may go to `node` as far as inter-pod (anti-)affinity is concerned.
    pub fn check(&self, node: &Node) -> Result<(), Reason> {
        let labels = node.metadata.labels.clone().unwrap_or_default();
        if labels.iter().any(|(k, v)| {
            self.existing_anti_affinity
                .contains(&(k.clone(), v.clone()))
        }) {
            return Err(Reason::ExistingPodsAntiAffinity);
        }
        let mut pods_exist = true;
        for term in &self.affinity_terms {
            let Some(value) = labels.get(&term.topology_key) else {
                return Err(Reason::PodAffinity);
            };
            if self
                .affinity_counts
                .get(&(term.topology_key.clone(), value.clone()))
                .copied()
                .unwrap_or(0)
                == 0
            {
                pods_exist = false;
            }
        }
        // The first pod of a group with affinity to itself may go anywhere.
        let first_of_group = self.affinity_counts.is_empty() && self.matches_own_terms;
        if !pods_exist && !first_of_group {
            return Err(Reason::PodAffinity);
        }
        for term in &self.anti_affinity_terms {
            if let Some(value) = labels.get(&term.topology_key) {
                if self
                    .anti_affinity_counts
                    .get(&(term.topology_key.clone(), value.clone()))
                    .is_some_and(|n| *n > 0)
                {
                    return Err(Reason::PodAntiAffinity);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Affinity, PodAffinity, PodAntiAffinity, PodSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};

    const HOST: &str = "kubernetes.io/hostname";

    fn node(name: &str) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some([(HOST.to_string(), name.to_string())].into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn term(app: &str) -> PodAffinityTerm {
        PodAffinityTerm {
            label_selector: Some(LabelSelector {
                match_labels: Some([("app".to_string(), app.to_string())].into()),
                ..Default::default()
            }),
            topology_key: HOST.into(),
            ..Default::default()
        }
    }

    fn pod(
        uid: &str,
        app: &str,
        affinity: Vec<PodAffinityTerm>,
        anti: Vec<PodAffinityTerm>,
    ) -> Pod {
        Pod {
            metadata: ObjectMeta {
                uid: Some(uid.into()),
                namespace: Some("default".into()),
                labels: Some([("app".to_string(), app.to_string())].into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                affinity: Some(Affinity {
                    pod_affinity: (!affinity.is_empty()).then(|| PodAffinity {
                        required_during_scheduling_ignored_during_execution: Some(affinity),
                        ..Default::default()
                    }),
                    pod_anti_affinity: (!anti.is_empty()).then(|| PodAntiAffinity {
                        required_during_scheduling_ignored_during_execution: Some(anti),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn anti_affinity_keeps_replicas_on_different_hosts() {
        let (n1, n2) = (node("n1"), node("n2"));
        let existing = pod("a", "web", vec![], vec![term("web")]);
        let incoming = pod("b", "web", vec![], vec![term("web")]);
        let state = InterPodAffinity::new(&incoming, [(&existing, &n1)], [(&existing, &n1)]);
        assert_eq!(state.check(&n1), Err(Reason::ExistingPodsAntiAffinity));
        assert_eq!(state.check(&n2), Ok(()));

        // Without the existing pod's own term, the incoming pod's term still forbids n1.
        let plain = pod("a", "web", vec![], vec![]);
        let state = InterPodAffinity::new(&incoming, [(&plain, &n1)], []);
        assert_eq!(state.check(&n1), Err(Reason::PodAntiAffinity));
    }

    #[test]
    fn affinity_follows_matching_pods_but_lets_the_first_of_a_group_anywhere() {
        let (n1, n2) = (node("n1"), node("n2"));
        let first = pod("a", "cache", vec![term("cache")], vec![]);
        let state = InterPodAffinity::new(&first, [], []);
        assert_eq!(state.check(&n1), Ok(()));

        let web = pod("b", "web", vec![term("cache")], vec![]);
        let state = InterPodAffinity::new(&web, [(&first, &n2)], []);
        assert_eq!(state.check(&n1), Err(Reason::PodAffinity));
        assert_eq!(state.check(&n2), Ok(()));

        let lonely = pod("c", "web", vec![term("db")], vec![]);
        let state = InterPodAffinity::new(&lonely, [(&first, &n2)], []);
        assert_eq!(state.check(&n2), Err(Reason::PodAffinity));
    }

    #[test]
    fn terms_select_the_owners_namespace_by_default() {
        let n1 = node("n1");
        let mut elsewhere = pod("a", "web", vec![], vec![]);
        elsewhere.metadata.namespace = Some("other".into());
        let incoming = pod("b", "web", vec![], vec![term("web")]);
        let state = InterPodAffinity::new(&incoming, [(&elsewhere, &n1)], []);
        assert_eq!(state.check(&n1), Ok(()));
    }
}
