//! The reconciler's decisions (`reconciler/reconciler.go`): which attached volumes to detach (no
//! pod on the node needs them and the node no longer mounts them, or a drain timeout passed on an
//! unhealthy node, or the node is out of service), which wanted volumes to attach, and which
//! attaches to refuse with kube's Multi-Attach error. Detaches come first, so that a volume whose
//! pod moved is freed before it is attached elsewhere.

use std::time::Duration;

use jiff::Timestamp;

use super::actual_state::{ActualStateOfWorld, AttachState};
use super::desired_state::{DesiredStateOfWorld, PodRef};
use super::pending::{OperationKind, PendingOperations};
use super::volume::{AttachableVolume, NodeName};

/// kube's `reconcilerMaxWaitForUnmountDuration`.
pub const MAX_WAIT_FOR_UNMOUNT_DURATION: Duration = Duration::from_secs(360);

/// What the reconciler knows of a node from the node cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeHealth {
    /// Ready is True (`nodeutil.IsNodeReady`); false for a node that is gone.
    pub ready: bool,
    /// It carries the `node.kubernetes.io/out-of-service` taint.
    pub out_of_service: bool,
}

/// The reconciler's settings.
#[derive(Clone, Copy, Debug)]
pub struct ReconcilerConfig {
    /// How long to wait for a node to unmount before a forced detach (6 minutes).
    pub max_wait_for_unmount: Duration,
    /// `--disable-force-detach-on-timeout`.
    pub disable_force_detach_on_timeout: bool,
}

impl Default for ReconcilerConfig {
    fn default() -> Self {
        Self {
            max_wait_for_unmount: MAX_WAIT_FOR_UNMOUNT_DURATION,
            disable_force_detach_on_timeout: false,
        }
    }
}

/// Why a detach skips the check that the node no longer uses the volume.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ForceDetachReason {
    /// `maxWaitForUnmountDuration` passed on an unhealthy node.
    Timeout,
    /// The node is tainted out of service.
    OutOfService,
}

/// An operation the controller should start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Detach `volume` from `node` once its status no longer lists it (already taken out of the
    /// report); `force` skips the in-use check.
    Detach {
        /// The volume.
        volume: AttachableVolume,
        /// The node.
        node: NodeName,
        /// Why the in-use check is skipped, if it is.
        force: Option<ForceDetachReason>,
    },
    /// Attach `volume` to `node` for `pods`.
    Attach {
        /// The volume.
        volume: AttachableVolume,
        /// The node.
        node: NodeName,
        /// The pods there that need it (they get the attach events).
        pods: Vec<PodRef>,
    },
    /// Warn each pod that the volume is exclusively attached elsewhere (`FailedAttachVolume`).
    MultiAttachError {
        /// The volume.
        volume: AttachableVolume,
        /// Each pod to warn, with its message.
        events: Vec<(PodRef, String)>,
    },
}

/// One pass of the reconciler (`reconcile`): updates the detach request times, the report of
/// attached volumes and the multi-attach flags in the states, marks the operations it returns
/// pending (the caller runs them and calls [`PendingOperations::finish`]).
pub fn reconcile(
    dsw: &mut DesiredStateOfWorld,
    asw: &mut ActualStateOfWorld,
    pending: &mut PendingOperations,
    node_health: impl Fn(&str) -> NodeHealth,
    now: Timestamp,
    config: ReconcilerConfig,
) -> Vec<Action> {
    let mut actions = Vec::new();
    for attached in asw.attached_volumes() {
        let (volume, node) = (&attached.volume, attached.node.as_str());
        if dsw.volume_exists(&volume.name, node) {
            continue;
        }
        let scope = volume.multi_attach_allowed.then_some(node);
        if !pending.safe_to_retry(&volume.name, scope, OperationKind::Detach, now) {
            continue;
        }
        if asw.attach_state(&volume.name, node) == AttachState::Detached {
            continue;
        }
        let Some(elapsed) = asw.set_detach_request_time(&volume.name, node, now) else {
            continue;
        };
        let expired = elapsed > config.max_wait_for_unmount;
        let health = node_health(node);
        let force_timeout = expired && !config.disable_force_detach_on_timeout;
        let force_detach = !health.ready && force_timeout;
        if attached.mounted_by_node && !force_detach && !health.out_of_service {
            continue;
        }
        asw.remove_volume_from_report_as_attached(&volume.name, node);
        let force = if force_timeout {
            Some(ForceDetachReason::Timeout)
        } else if health.out_of_service {
            Some(ForceDetachReason::OutOfService)
        } else {
            None
        };
        pending.start(&volume.name, node, OperationKind::Detach);
        actions.push(Action::Detach {
            volume: volume.clone(),
            node: node.to_string(),
            force,
        });
    }
    actions.extend(attach_desired_volumes(dsw, asw, pending, now));
    actions
}

/// The attach half (`attachDesiredVolumes`).
fn attach_desired_volumes(
    dsw: &mut DesiredStateOfWorld,
    asw: &mut ActualStateOfWorld,
    pending: &mut PendingOperations,
    now: Timestamp,
) -> Vec<Action> {
    let mut actions = Vec::new();
    for to_attach in dsw.volumes_to_attach() {
        let (volume, node) = (&to_attach.volume, to_attach.node.as_str());
        let scope = volume.multi_attach_allowed.then_some(node);
        if pending.is_pending(&volume.name, scope) {
            continue;
        }
        if asw.attach_state(&volume.name, node) == AttachState::Attached {
            asw.reset_detach_request_time(&volume.name, node);
            continue;
        }
        if !volume.multi_attach_allowed {
            let nodes = asw.nodes_for_attached_volume(&volume.name);
            if !nodes.is_empty() {
                if !to_attach.multi_attach_error_reported {
                    actions.push(Action::MultiAttachError {
                        volume: volume.clone(),
                        events: multi_attach_messages(
                            dsw,
                            volume,
                            node,
                            &to_attach.scheduled_pods,
                            &nodes,
                        ),
                    });
                    dsw.set_multi_attach_error(&volume.name, node);
                }
                continue;
            }
        }
        if !pending.safe_to_retry(&volume.name, scope, OperationKind::Attach, now) {
            continue;
        }
        pending.start(&volume.name, node, OperationKind::Attach);
        actions.push(Action::Attach {
            volume: volume.clone(),
            node: node.to_string(),
            pods: to_attach.scheduled_pods.clone(),
        });
    }
    actions
}

/// The Multi-Attach event of each scheduled pod (`reportMultiAttachError`): the pods of its own
/// namespace that hold the volume on the other nodes are named, the others only counted.
pub fn multi_attach_messages(
    dsw: &DesiredStateOfWorld,
    volume: &AttachableVolume,
    node: &str,
    scheduled: &[PodRef],
    attached_to: &[NodeName],
) -> Vec<(PodRef, String)> {
    let others: Vec<NodeName> = attached_to
        .iter()
        .filter(|n| n.as_str() != node)
        .cloned()
        .collect();
    let holders = dsw.volume_pods_on_nodes(&others, &volume.name);
    let message = |suffix: &str| {
        format!(
            "Multi-Attach error for volume {:?} {suffix}",
            volume.pv_name
        )
    };
    if holders.is_empty() {
        let msg = message(
            "Volume is already exclusively attached to one node and can't be attached to another",
        );
        return scheduled.iter().map(|p| (p.clone(), msg.clone())).collect();
    }
    scheduled
        .iter()
        .map(|pod| {
            let local: Vec<&str> = holders
                .iter()
                .filter(|h| h.namespace == pod.namespace)
                .map(|h| h.name.as_str())
                .collect();
            let other = holders.len() - local.len();
            let suffix = if local.is_empty() {
                format!("Volume is already used by {other} pod(s) in different namespaces")
            } else if other > 0 {
                format!(
                    "Volume is already used by pod(s) {} and {other} pod(s) in different namespaces",
                    local.join(", ")
                )
            } else {
                format!("Volume is already used by pod(s) {}", local.join(", "))
            };
            (pod.clone(), message(&suffix))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::super::volume::fixtures::volume;
    use super::*;

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap()
    }

    fn pod(ns: &str, name: &str) -> PodRef {
        PodRef {
            uid: format!("{ns}-{name}"),
            namespace: ns.into(),
            name: name.into(),
        }
    }

    const HEALTHY: NodeHealth = NodeHealth {
        ready: true,
        out_of_service: false,
    };
    const UNHEALTHY: NodeHealth = NodeHealth {
        ready: false,
        out_of_service: false,
    };

    struct World {
        dsw: DesiredStateOfWorld,
        asw: ActualStateOfWorld,
        pending: PendingOperations,
        health: NodeHealth,
        config: ReconcilerConfig,
    }

    impl World {
        fn new(nodes: &[&str]) -> Self {
            let mut dsw = DesiredStateOfWorld::default();
            for n in nodes {
                dsw.add_node(n, false);
            }
            Self {
                dsw,
                asw: ActualStateOfWorld::default(),
                pending: PendingOperations::default(),
                health: HEALTHY,
                config: ReconcilerConfig::default(),
            }
        }

        fn reconcile(&mut self, now: Timestamp) -> Vec<Action> {
            let health = self.health;
            reconcile(
                &mut self.dsw,
                &mut self.asw,
                &mut self.pending,
                |_| health,
                now,
                self.config,
            )
        }

        /// Runs the operations as a fake attacher that always succeeds at once.
        fn run(&mut self, actions: &[Action]) {
            for a in actions {
                match a {
                    Action::Attach { volume, node, .. } => {
                        self.asw.mark_attached(volume, node);
                        self.pending.finish(&volume.name, node, true, t(0));
                    }
                    Action::Detach { volume, node, .. } => {
                        self.asw.mark_detached(&volume.name, node);
                        self.pending.finish(&volume.name, node, true, t(0));
                    }
                    Action::MultiAttachError { .. } => {}
                }
            }
        }
    }

    fn attaches(actions: &[Action]) -> Vec<(String, String)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Attach { volume, node, .. } => Some((volume.pv_name.clone(), node.clone())),
                _ => None,
            })
            .collect()
    }

    fn detaches(actions: &[Action]) -> Vec<(String, String, Option<ForceDetachReason>)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Detach {
                    volume,
                    node,
                    force,
                } => Some((volume.pv_name.clone(), node.clone(), *force)),
                _ => None,
            })
            .collect()
    }

    fn pair(v: &str, n: &str) -> (String, String) {
        (v.to_string(), n.to_string())
    }

    // reconciler_test.go Test_Run_Positive_DoNothing.
    #[test]
    fn nothing_wanted_nothing_attached_does_nothing() {
        let mut w = World::new(&["n1"]);
        assert!(w.reconcile(t(0)).is_empty());
    }

    // Test_Run_Positive_OneDesiredVolumeAttach.
    #[test]
    fn a_wanted_volume_is_attached_once() {
        let mut w = World::new(&["n1"]);
        let v = volume("v1", false);
        w.dsw.add_pod(&pod("ns", "p1"), &v, "n1").unwrap();
        let actions = w.reconcile(t(0));
        assert_eq!(attaches(&actions), [pair("v1", "n1")]);
        // While the attach runs nothing more is started.
        assert!(w.pending.is_pending(&v.name, Some("n1")));
        assert!(w.reconcile(t(1)).is_empty());
        w.run(&actions);
        assert!(w.reconcile(t(2)).is_empty());
    }

    // Test_Run_Positive_OneDesiredVolumeAttachThenDetachWithUnmountedVolume.
    #[test]
    fn an_unmounted_volume_no_pod_needs_is_detached() {
        let mut w = World::new(&["n1"]);
        let v = volume("v1", false);
        w.dsw.add_pod(&pod("ns", "p1"), &v, "n1").unwrap();
        let a = w.reconcile(t(0));
        w.run(&a);
        w.dsw.delete_pod("ns-p1", &v.name, "n1");
        w.asw.set_volumes_mounted_by_node("n1", &BTreeSet::new());
        let actions = w.reconcile(t(1));
        assert_eq!(detaches(&actions), [("v1".into(), "n1".into(), None)]);
        // The node's status no longer lists it before the detach starts.
        assert!(w.asw.take_volumes_to_report_attached()["n1"].is_empty());
    }

    // Test_Run_Positive_OneDesiredVolumeAttachThenDetachWithMountedVolume (1.33: the timeout
    // forces a detach only from an unhealthy node).
    #[test]
    fn a_mounted_volume_waits_and_is_force_detached_only_from_an_unhealthy_node_after_six_minutes()
    {
        let mut w = World::new(&["n1"]);
        let v = volume("v1", false);
        w.dsw.add_pod(&pod("ns", "p1"), &v, "n1").unwrap();
        let a = w.reconcile(t(0));
        w.run(&a);
        w.dsw.delete_pod("ns-p1", &v.name, "n1");
        // Mounted (the default until the node reports), healthy: no detach, even after 6 minutes.
        assert!(detaches(&w.reconcile(t(10))).is_empty());
        assert!(detaches(&w.reconcile(t(10 + 361))).is_empty());
        // Test_Run_OneVolumeDetachOnUnhealthyNode: unhealthy and past the timeout: forced.
        w.health = UNHEALTHY;
        assert_eq!(
            detaches(&w.reconcile(t(10 + 362))),
            [("v1".into(), "n1".into(), Some(ForceDetachReason::Timeout))]
        );
    }

    #[test]
    fn an_unhealthy_node_still_waits_for_the_timeout() {
        let mut w = World::new(&["n1"]);
        w.health = UNHEALTHY;
        let v = volume("v1", false);
        w.asw.mark_attached(&v, "n1");
        assert!(detaches(&w.reconcile(t(0))).is_empty());
        assert!(detaches(&w.reconcile(t(360))).is_empty());
        assert_eq!(detaches(&w.reconcile(t(361))).len(), 1);
    }

    // Test_Run_OneVolumeDetachFailNodeWithReadWriteOnce with disableForceDetachOnTimeout.
    #[test]
    fn force_detach_can_be_disabled() {
        let mut w = World::new(&["n1"]);
        w.health = UNHEALTHY;
        w.config.disable_force_detach_on_timeout = true;
        let v = volume("v1", false);
        w.asw.mark_attached(&v, "n1");
        w.reconcile(t(0));
        assert!(detaches(&w.reconcile(t(1000))).is_empty());
    }

    // Test_Run_OneVolumeDetachOnOutOfServiceTaintedNode / _OnNoOutOfServiceTaintedNode.
    #[test]
    fn an_out_of_service_node_loses_its_volumes_at_once() {
        let mut w = World::new(&["n1"]);
        let v = volume("v1", false);
        w.asw.mark_attached(&v, "n1");
        assert!(detaches(&w.reconcile(t(0))).is_empty());
        w.health = NodeHealth {
            ready: true,
            out_of_service: true,
        };
        assert_eq!(
            detaches(&w.reconcile(t(1))),
            [(
                "v1".into(),
                "n1".into(),
                Some(ForceDetachReason::OutOfService)
            )]
        );
    }

    // A pod needing the volume again clears the detach timer (ResetDetachRequestTime).
    #[test]
    fn a_new_pod_clears_the_detach_timer() {
        let mut w = World::new(&["n1"]);
        w.health = UNHEALTHY;
        let v = volume("v1", false);
        w.asw.mark_attached(&v, "n1");
        w.reconcile(t(0));
        w.dsw.add_pod(&pod("ns", "p2"), &v, "n1").unwrap();
        w.reconcile(t(300));
        w.dsw.delete_pod("ns-p2", &v.name, "n1");
        assert!(detaches(&w.reconcile(t(400))).is_empty());
        assert_eq!(detaches(&w.reconcile(t(761))).len(), 1);
    }

    // A detach in flight or backing off is not started again.
    #[test]
    fn a_pending_or_backing_off_detach_is_not_restarted() {
        let mut w = World::new(&["n1"]);
        let v = volume("v1", false);
        w.asw.mark_attached(&v, "n1");
        w.asw.set_volumes_mounted_by_node("n1", &BTreeSet::new());
        assert_eq!(detaches(&w.reconcile(t(0))).len(), 1);
        assert!(w.reconcile(t(0)).is_empty());
        w.pending.finish(&v.name, "n1", false, t(0));
        w.asw.add_volume_to_report_as_attached(&v.name, "n1");
        assert!(w.reconcile(t(0)).is_empty());
        assert_eq!(detaches(&w.reconcile(t(1))).len(), 1);
    }

    // Test_Run_OneVolumeAttachAndDetachMultipleNodesWithReadWriteMany.
    #[test]
    fn a_read_write_many_volume_is_attached_to_every_node_that_needs_it() {
        let mut w = World::new(&["n1", "n2"]);
        let v = volume("v1", true);
        w.dsw.add_pod(&pod("ns", "p1"), &v, "n1").unwrap();
        w.dsw.add_pod(&pod("ns", "p2"), &v, "n2").unwrap();
        let a = w.reconcile(t(0));
        assert_eq!(attaches(&a), [pair("v1", "n1"), pair("v1", "n2")]);
        w.run(&a);
        w.dsw.delete_pod("ns-p1", &v.name, "n1");
        w.asw.set_volumes_mounted_by_node("n1", &BTreeSet::new());
        assert_eq!(
            detaches(&w.reconcile(t(1))),
            [("v1".into(), "n1".into(), None)]
        );
    }

    // Test_Run_OneVolumeAttachAndDetachMultipleNodesWithReadWriteOnce.
    #[test]
    fn a_read_write_once_volume_moves_only_after_its_detach() {
        let mut w = World::new(&["n1", "n2"]);
        let v = volume("v1", false);
        w.dsw.add_pod(&pod("ns", "p1"), &v, "n1").unwrap();
        w.dsw.add_pod(&pod("ns", "p2"), &v, "n2").unwrap();
        // Both want it: the first node gets it.
        let a = w.reconcile(t(0));
        assert_eq!(attaches(&a), [pair("v1", "n1")]);
        w.run(&a);
        // The second is refused, once, naming the pod that holds it.
        let a = w.reconcile(t(1));
        assert!(attaches(&a).is_empty());
        assert_eq!(
            a,
            [Action::MultiAttachError {
                volume: v.clone(),
                events: vec![(
                    pod("ns", "p2"),
                    "Multi-Attach error for volume \"v1\" Volume is already used by pod(s) p1"
                        .into()
                )],
            }]
        );
        assert!(w.reconcile(t(2)).is_empty());
        // The first pod goes and the node unmounts: detach, then attach to the second node.
        w.dsw.delete_pod("ns-p1", &v.name, "n1");
        w.asw.set_volumes_mounted_by_node("n1", &BTreeSet::new());
        let a = w.reconcile(t(3));
        assert_eq!(detaches(&a), [("v1".into(), "n1".into(), None)]);
        w.run(&a);
        assert_eq!(attaches(&w.reconcile(t(4))), [pair("v1", "n2")]);
    }

    // An uncertain attachment (found at start) is attached again when wanted and does not count
    // as holding a read-write-once volume.
    #[test]
    fn an_uncertain_attachment_is_confirmed_by_attaching_again() {
        let mut w = World::new(&["n1"]);
        let v = volume("v1", false);
        w.asw.mark_uncertain(&v, "n1");
        w.dsw.add_pod(&pod("ns", "p1"), &v, "n1").unwrap();
        assert_eq!(attaches(&w.reconcile(t(0))), [pair("v1", "n1")]);
    }

    // Test_ReportMultiAttachError.
    #[test]
    fn multi_attach_messages_name_only_pods_of_the_same_namespace() {
        let v = volume("volume-name", false);
        type Holders<'a> = &'a [(&'a str, &'a [(&'a str, &'a str)])];
        let cases: &[(&str, Holders, &str)] = &[
            (
                "no pods use the volume",
                &[],
                "Multi-Attach error for volume \"volume-name\" Volume is already exclusively attached to one node and can't be attached to another",
            ),
            (
                "pods in the same namespace use the volume",
                &[("node1", &[("ns1", "pod1")])],
                "Multi-Attach error for volume \"volume-name\" Volume is already used by pod(s) pod1",
            ),
            (
                "pods in another namespace use the volume",
                &[("node1", &[("ns2", "pod2")])],
                "Multi-Attach error for volume \"volume-name\" Volume is already used by 1 pod(s) in different namespaces",
            ),
            (
                "pods both in the same and another namespace use the volume",
                &[
                    ("node1", &[("ns1", "pod3"), ("ns2", "pod4")]),
                    ("node2", &[("ns1", "pod5"), ("ns2", "pod6")]),
                ],
                "Multi-Attach error for volume \"volume-name\" Volume is already used by pod(s) pod3, pod5 and 2 pod(s) in different namespaces",
            ),
        ];
        for (name, holders, want) in cases {
            let mut dsw = DesiredStateOfWorld::default();
            dsw.add_node("node1", false);
            dsw.add_node("node2", false);
            dsw.add_node("node3", false);
            let mut nodes = vec!["node1".to_string()];
            for (node, pods) in *holders {
                for (ns, p) in *pods {
                    dsw.add_pod(&pod(ns, p), &v, node).unwrap();
                }
                if !nodes.contains(&node.to_string()) {
                    nodes.push(node.to_string());
                }
            }
            let scheduled = [pod("ns1", "pod0")];
            let got = multi_attach_messages(&dsw, &v, "node3", &scheduled, &nodes);
            assert_eq!(got, [(pod("ns1", "pod0"), want.to_string())], "{name}");
        }
    }
}
