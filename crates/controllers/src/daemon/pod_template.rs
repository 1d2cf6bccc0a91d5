//! The pod a DaemonSet creates for a node: its template with the daemon tolerations, the
//! generation and revision labels, and the node-name affinity the scheduler binds it by.
//!
//! Mirrors `pkg/controller/daemon/util/daemonset_util.go` (`AddOrUpdateDaemonPodTolerations`,
//! `CreatePodTemplate`, `IsPodUpdated`, `ReplaceDaemonSetPodNodeNameNodeAffinity`,
//! `GetTemplateGeneration`).

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec,
    PodTemplateSpec, Toleration,
};

/// Label holding the DaemonSet's template generation on its pods (`DaemonSetTemplateGenerationKey`).
pub const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";
/// Label holding the hash of the ControllerRevision a pod was created from
/// (`DefaultDaemonSetUniqueLabelKey`, `ControllerRevisionHashLabelKey`).
pub const CONTROLLER_REVISION_HASH_LABEL: &str = "controller-revision-hash";
/// Annotation apps/v1 keeps the template generation in (`DeprecatedTemplateGeneration`).
pub const DEPRECATED_TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";
/// The field a node-affinity `matchFields` requirement selects a node by (`metav1.ObjectNameField`).
pub const OBJECT_NAME_FIELD: &str = "metadata.name";

/// Taint of a node whose Ready condition is False.
pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// Taint of a node whose Ready condition is Unknown.
pub const TAINT_NODE_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// Taint of a node under disk pressure.
pub const TAINT_NODE_DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
/// Taint of a node under memory pressure.
pub const TAINT_NODE_MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
/// Taint of a node under PID pressure.
pub const TAINT_NODE_PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
/// Taint of a cordoned node.
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// Taint of a node whose network is not configured.
pub const TAINT_NODE_NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";

/// A template generation annotation that is not an integer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("strconv.ParseInt: parsing {0:?}: invalid syntax")]
pub struct InvalidTemplateGeneration(pub String);

/// The template generation from the deprecated annotation: `None` without it
/// (`GetTemplateGeneration`).
pub fn template_generation(ds: &DaemonSet) -> Result<Option<i64>, InvalidTemplateGeneration> {
    match ds
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DEPRECATED_TEMPLATE_GENERATION))
    {
        None => Ok(None),
        Some(text) => text
            .parse()
            .map(Some)
            .map_err(|_| InvalidTemplateGeneration(text.clone())),
    }
}

/// Whether two tolerations are the same rule (`Toleration.MatchToleration`): key, operator,
/// value and effect all equal.
fn same_toleration(a: &Toleration, b: &Toleration) -> bool {
    let s = |o: &Option<String>| o.clone().unwrap_or_default();
    s(&a.key) == s(&b.key)
        && s(&a.operator) == s(&b.operator)
        && s(&a.value) == s(&b.value)
        && s(&a.effect) == s(&b.effect)
}

/// Adds `toleration` to the spec, replacing a toleration for the same rule
/// (`AddOrUpdateTolerationInPodSpec`).
fn add_or_update_toleration(spec: &mut PodSpec, toleration: Toleration) {
    let tolerations = spec.tolerations.get_or_insert_with(Vec::new);
    match tolerations
        .iter_mut()
        .find(|t| same_toleration(t, &toleration))
    {
        Some(existing) => *existing = toleration,
        None => tolerations.push(toleration),
    }
}

fn exists(key: &str, effect: &str) -> Toleration {
    Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        effect: Some(effect.into()),
        ..Default::default()
    }
}

/// The tolerations every daemon pod gets (`AddOrUpdateDaemonPodTolerations`): it survives a node
/// going not-ready or unreachable (NoExecute, no `tolerationSeconds`) and lands on nodes under
/// disk, memory or PID pressure, cordoned nodes, and, for host-network pods, nodes whose network
/// is unavailable.
pub fn add_or_update_daemon_pod_tolerations(spec: &mut PodSpec) {
    add_or_update_toleration(spec, exists(TAINT_NODE_NOT_READY, "NoExecute"));
    add_or_update_toleration(spec, exists(TAINT_NODE_UNREACHABLE, "NoExecute"));
    add_or_update_toleration(spec, exists(TAINT_NODE_DISK_PRESSURE, "NoSchedule"));
    add_or_update_toleration(spec, exists(TAINT_NODE_MEMORY_PRESSURE, "NoSchedule"));
    add_or_update_toleration(spec, exists(TAINT_NODE_PID_PRESSURE, "NoSchedule"));
    add_or_update_toleration(spec, exists(TAINT_NODE_UNSCHEDULABLE, "NoSchedule"));
    if spec.host_network == Some(true) {
        add_or_update_toleration(spec, exists(TAINT_NODE_NETWORK_UNAVAILABLE, "NoSchedule"));
    }
}

/// The template pods are created from (`CreatePodTemplate`): the daemon tolerations, the
/// `pod-template-generation` label when there is a generation and `controller-revision-hash`
/// when `hash` is not empty.
pub fn create_pod_template(
    template: &PodTemplateSpec,
    generation: Option<i64>,
    hash: &str,
) -> PodTemplateSpec {
    let mut new = template.clone();
    add_or_update_daemon_pod_tolerations(new.spec.get_or_insert_with(Default::default));
    let labels = new
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(Default::default);
    if let Some(generation) = generation {
        labels.insert(TEMPLATE_GENERATION_LABEL.into(), generation.to_string());
    }
    if !hash.is_empty() {
        labels.insert(CONTROLLER_REVISION_HASH_LABEL.into(), hash.into());
    }
    new
}

/// Whether the pod was created from the current template: its revision hash or its template
/// generation label matches (`IsPodUpdated`).
pub fn is_pod_updated(pod: &Pod, hash: &str, generation: Option<i64>) -> bool {
    let label = |key: &str| pod.metadata.labels.as_ref().and_then(|l| l.get(key));
    let template_matches = generation.is_some_and(|g| {
        label(TEMPLATE_GENERATION_LABEL).map(String::as_str) == Some(&*g.to_string())
    });
    let hash_matches =
        !hash.is_empty() && label(CONTROLLER_REVISION_HASH_LABEL).map(String::as_str) == Some(hash);
    hash_matches || template_matches
}

/// `affinity` with its required node affinity replaced by one term selecting `node_name` by
/// `metadata.name` (`ReplaceDaemonSetPodNodeNameNodeAffinity`); preferred terms and pod
/// (anti-)affinity are kept.
pub fn replace_node_name_affinity(affinity: Option<Affinity>, node_name: &str) -> Affinity {
    let selector = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![NodeSelectorRequirement {
                key: OBJECT_NAME_FIELD.into(),
                operator: "In".into(),
                values: Some(vec![node_name.into()]),
            }]),
        }],
    };
    let mut affinity = affinity.unwrap_or_default();
    affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default)
        .required_during_scheduling_ignored_during_execution = Some(selector);
    affinity
}

/// Why the target node of a daemon pod cannot be told.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetNodeError {
    /// The pod has no required node affinity.
    #[error(
        "no spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution for pod {0}"
    )]
    NoRequiredAffinity(String),
    /// The required node affinity has no terms.
    #[error("no nodeSelectorTerms in requiredDuringSchedulingIgnoredDuringExecution of pod {0}")]
    NoTerms(String),
    /// The `metadata.name` requirement names more than one node.
    #[error("the matchFields value of 'metadata.name' is not unique for pod {0}")]
    NotUnique(String),
    /// No term names a node.
    #[error("no node name found for pod {0}")]
    NoNodeName(String),
}

/// The node a daemon pod is for: `spec.nodeName` once bound, else the node its required
/// node affinity names (`GetTargetNodeName`).
pub fn target_node_name(pod: &Pod) -> Result<String, TargetNodeError> {
    let spec = pod.spec.as_ref();
    if let Some(name) = spec
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
    {
        return Ok(name.to_string());
    }
    let who = format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or(""),
        pod.metadata.name.as_deref().unwrap_or("")
    );
    let Some(required) = spec
        .and_then(|s| s.affinity.as_ref())
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
    else {
        return Err(TargetNodeError::NoRequiredAffinity(who));
    };
    if required.node_selector_terms.is_empty() {
        return Err(TargetNodeError::NoTerms(who));
    }
    for term in &required.node_selector_terms {
        for req in term.match_fields.iter().flatten() {
            if req.key == OBJECT_NAME_FIELD && req.operator == "In" {
                return match req.values.as_deref().unwrap_or_default() {
                    [one] => Ok(one.clone()),
                    _ => Err(TargetNodeError::NotUnique(who)),
                };
            }
        }
    }
    Err(TargetNodeError::NoNodeName(who))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PreferredSchedulingTerm;
    use kube::api::ObjectMeta;
    use std::collections::BTreeMap;

    fn pod_with_labels(labels: &[(&str, &str)]) -> Pod {
        Pod {
            metadata: ObjectMeta {
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

    /// Ported from daemonset_util_test.go `TestIsPodUpdated`.
    #[test]
    fn a_pod_is_updated_when_its_hash_or_template_generation_matches() {
        let generation = Some(12345);
        let hash = "55555";
        let cases: Vec<(&str, Pod, &str, Option<i64>, bool)> = vec![
            (
                "templateGeneration and hash both match",
                pod_with_labels(&[
                    (TEMPLATE_GENERATION_LABEL, "12345"),
                    (CONTROLLER_REVISION_HASH_LABEL, hash),
                ]),
                hash,
                generation,
                true,
            ),
            (
                "templateGeneration matches, hash doesn't",
                pod_with_labels(&[
                    (TEMPLATE_GENERATION_LABEL, "12345"),
                    (CONTROLLER_REVISION_HASH_LABEL, "55556"),
                ]),
                hash,
                generation,
                true,
            ),
            (
                "templateGeneration matches, no hash label, has hash",
                pod_with_labels(&[(TEMPLATE_GENERATION_LABEL, "12345")]),
                hash,
                generation,
                true,
            ),
            (
                "templateGeneration matches, no hash label, no hash",
                pod_with_labels(&[(TEMPLATE_GENERATION_LABEL, "12345")]),
                "",
                generation,
                true,
            ),
            (
                "templateGeneration matches, has hash label, no hash",
                pod_with_labels(&[
                    (TEMPLATE_GENERATION_LABEL, "12345"),
                    (CONTROLLER_REVISION_HASH_LABEL, hash),
                ]),
                "",
                generation,
                true,
            ),
            (
                "templateGeneration doesn't match, hash does",
                pod_with_labels(&[
                    (TEMPLATE_GENERATION_LABEL, "12346"),
                    (CONTROLLER_REVISION_HASH_LABEL, hash),
                ]),
                hash,
                generation,
                true,
            ),
            (
                "templateGeneration and hash don't match",
                pod_with_labels(&[
                    (TEMPLATE_GENERATION_LABEL, "12346"),
                    (CONTROLLER_REVISION_HASH_LABEL, "55556"),
                ]),
                hash,
                generation,
                false,
            ),
            (
                "empty labels, no hash",
                pod_with_labels(&[]),
                "",
                generation,
                false,
            ),
            (
                "empty labels",
                pod_with_labels(&[]),
                hash,
                generation,
                false,
            ),
            ("no labels", Pod::default(), hash, generation, false),
            (
                "no template generation",
                pod_with_labels(&[(TEMPLATE_GENERATION_LABEL, "12345")]),
                "",
                None,
                false,
            ),
        ];
        for (name, pod, hash, generation, want) in cases {
            assert_eq!(is_pod_updated(&pod, hash, generation), want, "{name}");
        }
    }

    /// Ported from daemonset_util_test.go `TestCreatePodTemplate`.
    #[test]
    fn the_pod_template_carries_generation_hash_and_daemon_tolerations() {
        let cases = [
            (Some(1), "", None::<&str>),
            (Some(2), "3242341807", Some("3242341807")),
            (None, "3242341807", Some("3242341807")),
        ];
        for (generation, hash, want_hash) in cases {
            let t = create_pod_template(&PodTemplateSpec::default(), generation, hash);
            let labels = t.metadata.and_then(|m| m.labels).unwrap_or_default();
            assert_eq!(
                labels.get(TEMPLATE_GENERATION_LABEL).cloned(),
                generation.map(|g| g.to_string())
            );
            assert_eq!(
                labels
                    .get(CONTROLLER_REVISION_HASH_LABEL)
                    .map(String::as_str),
                want_hash
            );
            let tolerations = t.spec.and_then(|s| s.tolerations).unwrap_or_default();
            assert_eq!(tolerations.len(), 6);
        }
    }

    #[test]
    fn daemon_tolerations_replace_the_same_rule_and_add_network_for_host_network_pods() {
        let mut spec = PodSpec {
            host_network: Some(true),
            tolerations: Some(vec![
                exists(TAINT_NODE_NOT_READY, "NoExecute"),
                Toleration {
                    key: Some("dedicated".into()),
                    operator: Some("Equal".into()),
                    value: Some("x".into()),
                    effect: Some("NoSchedule".into()),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        };
        add_or_update_daemon_pod_tolerations(&mut spec);
        let tolerations = spec.tolerations.unwrap_or_default();
        let keys: Vec<_> = tolerations
            .iter()
            .map(|t| t.key.clone().unwrap_or_default())
            .collect();
        assert_eq!(
            keys,
            [
                TAINT_NODE_NOT_READY,
                "dedicated",
                TAINT_NODE_UNREACHABLE,
                TAINT_NODE_DISK_PRESSURE,
                TAINT_NODE_MEMORY_PRESSURE,
                TAINT_NODE_PID_PRESSURE,
                TAINT_NODE_UNSCHEDULABLE,
                TAINT_NODE_NETWORK_UNAVAILABLE,
            ]
        );
        // NoExecute tolerations last forever: no tolerationSeconds.
        assert!(tolerations.iter().all(|t| t.toleration_seconds.is_none()));
    }

    fn name_term(names: &[&str]) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![NodeSelectorRequirement {
                key: OBJECT_NAME_FIELD.into(),
                operator: "In".into(),
                values: Some(names.iter().map(|n| n.to_string()).collect()),
            }]),
        }
    }

    fn label_term(key: &str, values: &[&str]) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: Some(vec![NodeSelectorRequirement {
                key: key.into(),
                operator: "In".into(),
                values: Some(values.iter().map(|n| n.to_string()).collect()),
            }]),
            match_fields: None,
        }
    }

    fn required(terms: Vec<NodeSelectorTerm>) -> Affinity {
        Affinity {
            node_affinity: Some(NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                    node_selector_terms: terms,
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    /// Ported from daemonset_util_test.go `TestReplaceDaemonSetPodNodeNameNodeAffinity`.
    #[test]
    fn the_required_node_affinity_is_replaced_by_the_node_name() {
        let want = required(vec![name_term(&["host_1"])]);
        // No affinity at all.
        assert_eq!(replace_node_name_affinity(None, "host_1"), want);
        // Label terms are replaced.
        assert_eq!(
            replace_node_name_affinity(
                Some(required(vec![label_term(
                    "kubernetes.io/hostname",
                    &["host_1"]
                )])),
                "host_1"
            ),
            want
        );
        // Another node's name is replaced.
        assert_eq!(
            replace_node_name_affinity(Some(required(vec![name_term(&["host_2"])])), "host_1"),
            want
        );
        // Several names are replaced by one.
        assert_eq!(
            replace_node_name_affinity(
                Some(required(vec![name_term(&["host_1", "host_2"])])),
                "host_1"
            ),
            want
        );
        // Preferred terms stay.
        let preferred = vec![PreferredSchedulingTerm {
            weight: 100,
            preference: label_term("zone", &["a"]),
        }];
        let with_preferred = Affinity {
            node_affinity: Some(NodeAffinity {
                preferred_during_scheduling_ignored_during_execution: Some(preferred.clone()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let got = replace_node_name_affinity(Some(with_preferred), "host_1");
        let node_affinity = got.node_affinity.expect("node affinity");
        assert_eq!(
            node_affinity.preferred_during_scheduling_ignored_during_execution,
            Some(preferred)
        );
        assert_eq!(
            node_affinity.required_during_scheduling_ignored_during_execution,
            want.node_affinity
                .and_then(|a| a.required_during_scheduling_ignored_during_execution)
        );
    }

    /// Ported from daemonset_util_test.go `TestGetTargetNodeName`.
    #[test]
    fn the_target_node_comes_from_node_name_or_the_name_affinity() {
        let pod = |node_name: Option<&str>, affinity: Option<Affinity>| Pod {
            metadata: ObjectMeta {
                name: Some("pod1".into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: node_name.map(Into::into),
                affinity,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            target_node_name(&pod(Some("node-1"), None)),
            Ok("node-1".into())
        );
        assert_eq!(
            target_node_name(&pod(None, Some(required(vec![name_term(&["node-1"])])))),
            Ok("node-1".into())
        );
        assert_eq!(
            target_node_name(&pod(
                None,
                Some(required(vec![name_term(&["node-1", "node-2"])]))
            )),
            Err(TargetNodeError::NotUnique("default/pod1".into()))
        );
        assert_eq!(
            target_node_name(&pod(None, None)),
            Err(TargetNodeError::NoRequiredAffinity("default/pod1".into()))
        );
        assert_eq!(
            target_node_name(&pod(None, Some(required(vec![label_term("a", &["b"])])))),
            Err(TargetNodeError::NoNodeName("default/pod1".into()))
        );
    }

    #[test]
    fn the_template_generation_comes_from_the_deprecated_annotation() {
        let mut ds = DaemonSet::default();
        assert_eq!(template_generation(&ds), Ok(None));
        ds.metadata.annotations = Some(BTreeMap::from([(
            DEPRECATED_TEMPLATE_GENERATION.to_string(),
            "7".to_string(),
        )]));
        assert_eq!(template_generation(&ds), Ok(Some(7)));
        ds.metadata.annotations = Some(BTreeMap::from([(
            DEPRECATED_TEMPLATE_GENERATION.to_string(),
            "x".to_string(),
        )]));
        assert!(template_generation(&ds).is_err());
    }
}
