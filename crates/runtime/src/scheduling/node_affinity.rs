//! Whether a node satisfies a pod's `nodeSelector` and required node affinity (the NodeAffinity filter).
//!
//! Mirrors `k8s.io/component-helpers/scheduling/corev1/nodeaffinity`: selector terms are ORed, the
//! expressions within a term are ANDed, and an empty term matches no node.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod,
};

/// True when the node's labels contain every `nodeSelector` pair and the node matches
/// `requiredDuringSchedulingIgnoredDuringExecution`, when the pod has them.
pub fn matches(pod: &Pod, node: &Node) -> bool {
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    let Some(spec) = &pod.spec else {
        return true;
    };
    let selector_ok = spec
        .node_selector
        .iter()
        .flatten()
        .all(|(key, value)| labels.get(key) == Some(value));
    if !selector_ok {
        return false;
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    match required {
        None => true,
        Some(selector) => selector
            .node_selector_terms
            .iter()
            .any(|term| term_matches(term, labels, node.metadata.name.as_deref().unwrap_or(""))),
    }
}

/// Whether the node matches a required node selector: its terms are ORed (a volume's node
/// affinity, `CheckNodeAffinity`).
pub fn selector_matches(selector: &NodeSelector, node: &Node) -> bool {
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    let name = node.metadata.name.as_deref().unwrap_or("");
    selector
        .node_selector_terms
        .iter()
        .any(|term| term_matches(term, labels, name))
}

fn term_matches(
    term: &NodeSelectorTerm,
    labels: &BTreeMap<String, String>,
    node_name: &str,
) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    expressions
        .iter()
        .all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
        && fields.iter().all(|r| {
            // The only field selectable in node affinity is metadata.name.
            r.key == "metadata.name" && requirement_matches(r, Some(node_name))
        })
}

fn requirement_matches(requirement: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = requirement.values.as_deref().unwrap_or_default();
    let number = |s: &str| s.parse::<i64>().ok();
    match requirement.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => !value.is_some_and(|v| values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(have), [want]) = (value.and_then(number), values) else {
                return false;
            };
            let Some(want) = number(want) else {
                return false;
            };
            if requirement.operator == "Gt" {
                have > want
            } else {
                have < want
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Affinity, NodeAffinity, NodeSelector, PodSpec};
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
            ..Default::default()
        }
    }

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    fn pod_with_terms(terms: Vec<NodeSelectorTerm>) -> Pod {
        Pod {
            spec: Some(PodSpec {
                affinity: Some(Affinity {
                    node_affinity: Some(NodeAffinity {
                        required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                            node_selector_terms: terms,
                        }),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn term(expressions: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: Some(expressions),
            match_fields: None,
        }
    }

    #[test]
    fn node_selector_needs_every_pair() {
        let n = node("n1", &[("disk", "ssd"), ("zone", "a")]);
        let mut pod = Pod {
            spec: Some(PodSpec::default()),
            ..Default::default()
        };
        assert!(matches(&pod, &n));
        pod.spec.as_mut().unwrap().node_selector =
            Some([("disk".to_string(), "ssd".to_string())].into());
        assert!(matches(&pod, &n));
        pod.spec.as_mut().unwrap().node_selector = Some(
            [
                ("disk".to_string(), "ssd".to_string()),
                ("zone".to_string(), "b".to_string()),
            ]
            .into(),
        );
        assert!(!matches(&pod, &n));
    }

    #[test]
    fn affinity_terms_are_ored_and_expressions_anded() {
        let n = node("n1", &[("zone", "a"), ("gen", "5")]);
        let cases = [
            (vec![term(vec![req("zone", "In", &["a", "b"])])], true),
            (vec![term(vec![req("zone", "NotIn", &["a"])])], false),
            (
                vec![term(vec![
                    req("zone", "In", &["a"]),
                    req("gen", "Gt", &["6"]),
                ])],
                false,
            ),
            (
                vec![
                    term(vec![req("zone", "In", &["b"])]),
                    term(vec![req("gen", "Lt", &["6"])]),
                ],
                true,
            ),
            (vec![term(vec![req("missing", "DoesNotExist", &[])])], true),
            (vec![term(vec![req("missing", "Exists", &[])])], false),
            (vec![term(vec![req("missing", "NotIn", &["x"])])], true),
            (vec![term(vec![])], false),
            (vec![], false),
        ];
        for (i, (terms, want)) in cases.into_iter().enumerate() {
            assert_eq!(matches(&pod_with_terms(terms), &n), want, "case {i}");
        }
    }

    #[test]
    fn match_fields_select_the_node_by_name() {
        let n = node("n1", &[]);
        let by_name = |name: &str| {
            pod_with_terms(vec![NodeSelectorTerm {
                match_expressions: None,
                match_fields: Some(vec![req("metadata.name", "In", &[name])]),
            }])
        };
        assert!(matches(&by_name("n1"), &n));
        assert!(!matches(&by_name("n2"), &n));
    }
}
