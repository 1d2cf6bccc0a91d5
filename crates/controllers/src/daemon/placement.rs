//! Which nodes run a DaemonSet's pod: node name, node selector and required node affinity, and
//! taints against the template's tolerations plus the daemon ones.
//!
//! Mirrors `NodeShouldRunDaemonPod`, `predicates` and `NewPod` in
//! `pkg/controller/daemon/daemon_controller.go`.

use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::{Node, Pod};
use rkcm_runtime::scheduling::node_affinity;
use rkcm_runtime::scheduling::taints::find_matching_untolerated_taint;

use super::pod_template::add_or_update_daemon_pod_tolerations;

/// What a node means for a DaemonSet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// A daemon pod should be created on the node if it has none.
    pub should_run: bool,
    /// A daemon pod already on the node may stay (it tolerates the node's NoExecute taints).
    pub should_continue_running: bool,
}

/// The pod the DaemonSet would run on `node_name` (`NewPod`): the template, bound to the node,
/// with the daemon tolerations.
pub fn new_pod(ds: &DaemonSet, node_name: &str) -> Pod {
    let template = ds
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    let mut meta = template.metadata.unwrap_or_default();
    meta.namespace = ds.metadata.namespace.clone();
    let mut spec = template.spec.unwrap_or_default();
    spec.node_name = Some(node_name.to_string());
    add_or_update_daemon_pod_tolerations(&mut spec);
    Pod {
        metadata: meta,
        spec: Some(spec),
        status: None,
    }
}

/// Whether `ds` should run on `node` and whether a pod already there may keep running
/// (`NodeShouldRunDaemonPod`).
pub fn node_should_run_daemon_pod(node: &Node, ds: &DaemonSet) -> Placement {
    let node_name = node.metadata.name.as_deref().unwrap_or("");
    let wanted = ds
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("");
    if !(wanted.is_empty() || wanted == node_name) {
        return Placement::default();
    }
    let pod = new_pod(ds, node_name);
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default();
    let taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default();
    // predicates: the node name always fits here (the pod is built for this node).
    if !node_affinity::matches(&pod, node) {
        return Placement::default();
    }
    let fits_taints = find_matching_untolerated_taint(taints, tolerations, |t| {
        t.effect == "NoExecute" || t.effect == "NoSchedule"
    })
    .is_none();
    if !fits_taints {
        // A pod already there keeps running if it tolerates every NoExecute taint.
        let untolerated_no_execute =
            find_matching_untolerated_taint(taints, tolerations, |t| t.effect == "NoExecute")
                .is_some();
        return Placement {
            should_run: false,
            should_continue_running: !untolerated_no_execute,
        };
    }
    Placement {
        should_run: true,
        should_continue_running: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template_spec(ds: &mut DaemonSet) -> &mut k8s_openapi::api::core::v1::PodSpec {
        ds.spec
            .as_mut()
            .expect("a spec")
            .template
            .spec
            .as_mut()
            .expect("a pod spec")
    }
    use crate::daemon::fixtures::{new_daemon_set, new_node, taint, toleration};
    use k8s_openapi::api::core::v1::{
        Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    };
    use std::collections::BTreeMap;

    fn both(v: bool) -> Placement {
        Placement {
            should_run: v,
            should_continue_running: v,
        }
    }

    fn affinity(terms: Vec<NodeSelectorTerm>) -> Affinity {
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

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    /// Ported from daemon_controller_test.go `TestNodeShouldRunDaemonPod`: a plain node, a node
    /// selector that matches or not, a template node name, node affinity, taints.
    #[test]
    fn nodes_run_daemon_pods_by_selector_name_affinity_and_taints() {
        let node = new_node("node1", Some(&[("type", "production")]));
        let ds = new_daemon_set("ds");
        assert_eq!(node_should_run_daemon_pod(&node, &ds), both(true));

        let mut selected = ds.clone();
        template_spec(&mut selected).node_selector = Some(BTreeMap::from([(
            "type".to_string(),
            "production".to_string(),
        )]));
        assert_eq!(node_should_run_daemon_pod(&node, &selected), both(true));
        template_spec(&mut selected).node_selector =
            Some(BTreeMap::from([("type".to_string(), "test".to_string())]));
        assert_eq!(node_should_run_daemon_pod(&node, &selected), both(false));

        let mut named = ds.clone();
        template_spec(&mut named).node_name = Some("node1".into());
        assert_eq!(node_should_run_daemon_pod(&node, &named), both(true));
        template_spec(&mut named).node_name = Some("other".into());
        assert_eq!(node_should_run_daemon_pod(&node, &named), both(false));

        let mut with_affinity = ds.clone();
        template_spec(&mut with_affinity).affinity = Some(affinity(vec![NodeSelectorTerm {
            match_expressions: Some(vec![req("type", "In", &["production"])]),
            match_fields: None,
        }]));
        assert_eq!(
            node_should_run_daemon_pod(&node, &with_affinity),
            both(true)
        );
        template_spec(&mut with_affinity).affinity = Some(affinity(vec![NodeSelectorTerm {
            match_expressions: Some(vec![req("type", "In", &["test"])]),
            match_fields: None,
        }]));
        assert_eq!(
            node_should_run_daemon_pod(&node, &with_affinity),
            both(false)
        );
        // matchFields on the node's name.
        template_spec(&mut with_affinity).affinity = Some(affinity(vec![NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(vec![req("metadata.name", "In", &["node1"])]),
        }]));
        assert_eq!(
            node_should_run_daemon_pod(&node, &with_affinity),
            both(true)
        );
    }

    /// Ported from daemon_controller_test.go `TestNodeShouldRunDaemonPod` ("with taint") and
    /// `TestTaintedNodeDaemonPods`, `TestNodeDaemonLaunchesToleratePod`.
    #[test]
    fn taints_stop_new_pods_and_only_no_execute_ones_evict() {
        let ds = new_daemon_set("ds");
        let mut node = new_node("node1", None);
        node.spec.get_or_insert_with(Default::default).taints =
            Some(vec![taint("dedicated", "gpu", "NoSchedule")]);
        assert_eq!(
            node_should_run_daemon_pod(&node, &ds),
            Placement {
                should_run: false,
                should_continue_running: true
            }
        );
        node.spec.as_mut().unwrap().taints = Some(vec![taint("dedicated", "gpu", "NoExecute")]);
        assert_eq!(node_should_run_daemon_pod(&node, &ds), both(false));
        // PreferNoSchedule never matters.
        node.spec.as_mut().unwrap().taints =
            Some(vec![taint("dedicated", "gpu", "PreferNoSchedule")]);
        assert_eq!(node_should_run_daemon_pod(&node, &ds), both(true));
        // A toleration in the template lets it run.
        node.spec.as_mut().unwrap().taints = Some(vec![taint("dedicated", "gpu", "NoExecute")]);
        let mut tolerant = ds.clone();
        template_spec(&mut tolerant).tolerations =
            Some(vec![toleration("dedicated", "Equal", "gpu", "NoExecute")]);
        assert_eq!(node_should_run_daemon_pod(&node, &tolerant), both(true));
    }

    /// Ported from daemon_controller_test.go `TestTaintPressureNodeDaemonLaunchesPod`,
    /// `TestNotReadyNodeDaemonLaunchesPod`, `TestUnreachableNodeDaemonLaunchesPod` and
    /// `TestDaemonSetRespectsTermination`-style cordon cases: the daemon tolerations apply.
    #[test]
    fn daemon_tolerations_cover_pressure_not_ready_unreachable_and_cordon() {
        let ds = new_daemon_set("ds");
        for (key, effect) in [
            ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"),
            ("node.kubernetes.io/unschedulable", "NoSchedule"),
            ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
        ] {
            let mut node = new_node("node1", None);
            node.spec.get_or_insert_with(Default::default).taints =
                Some(vec![taint(key, "", effect)]);
            assert_eq!(node_should_run_daemon_pod(&node, &ds), both(true), "{key}");
        }
        // network-unavailable only for host-network pods.
        let mut node = new_node("node1", None);
        node.spec.get_or_insert_with(Default::default).taints = Some(vec![taint(
            "node.kubernetes.io/network-unavailable",
            "",
            "NoSchedule",
        )]);
        assert!(!node_should_run_daemon_pod(&node, &ds).should_run);
        let mut host = ds.clone();
        host.spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap()
            .host_network = Some(true);
        assert_eq!(node_should_run_daemon_pod(&node, &host), both(true));
        // Not-ready NoSchedule (added by the node lifecycle controller) is not tolerated.
        node.spec.as_mut().unwrap().taints = Some(vec![taint(
            "node.kubernetes.io/not-ready",
            "",
            "NoSchedule",
        )]);
        assert_eq!(
            node_should_run_daemon_pod(&node, &ds),
            Placement {
                should_run: false,
                should_continue_running: true
            }
        );
        // A cordoned node without the taint is not a reason either.
        let mut cordoned = new_node("node1", None);
        cordoned
            .spec
            .get_or_insert_with(Default::default)
            .unschedulable = Some(true);
        assert_eq!(node_should_run_daemon_pod(&cordoned, &ds), both(true));
    }
}
