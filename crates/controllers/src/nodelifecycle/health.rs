//! Node health from the kubelet's two signals, the Ready condition's heartbeat and the node's
//! Lease in `kube-node-lease`: when neither moved for the grace period, the Ready, MemoryPressure,
//! DiskPressure and PIDPressure conditions become Unknown (`tryUpdateNodeHealth`).

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, NodeCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The condition types the controller sets Unknown (NetworkUnavailable is left alone: it belongs
/// to the control plane).
pub const MONITORED_CONDITIONS: [&str; 4] =
    ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"];

/// What the controller remembers of a node between passes (`nodeHealthData`).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeHealth {
    /// When the controller last saw the kubelet alive (a new heartbeat or lease renewal).
    pub probe_timestamp: Timestamp,
    /// When the controller last saw the Ready condition change.
    pub ready_transition_timestamp: Timestamp,
    /// The Ready condition as last seen.
    pub ready: Option<NodeCondition>,
    /// The lease's `renewTime` as last seen.
    pub lease_renew_time: Option<Timestamp>,
}

/// What one health check found.
#[derive(Clone, Debug, PartialEq)]
pub struct HealthCheck {
    /// The grace period the node is entitled to (startup grace when it never posted Ready).
    pub grace_period: Duration,
    /// The Ready condition as the node had it before this check (a fake Unknown one if none).
    pub observed_ready: NodeCondition,
    /// The Ready condition after this check (`None` if the node has none).
    pub current_ready: Option<NodeCondition>,
    /// The node's conditions to write with `UpdateStatus`, when the Ready condition changed.
    pub new_conditions: Option<Vec<NodeCondition>>,
    /// What to remember of the node (before a write of `new_conditions`; see
    /// [`HealthCheck::written`]).
    pub health: NodeHealth,
}

impl HealthCheck {
    /// What to remember once `new_conditions` were written at `now`.
    pub fn written(&self, now: Timestamp) -> NodeHealth {
        NodeHealth {
            ready: self.current_ready.clone(),
            ready_transition_timestamp: now,
            ..self.health.clone()
        }
    }
}

/// The node's condition of `type_`.
pub fn condition<'a>(node: &'a Node, type_: &str) -> Option<&'a NodeCondition> {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == type_))
}

fn after(t: Timestamp, d: Duration) -> Timestamp {
    t.checked_add(SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX))
        .unwrap_or(Timestamp::MAX)
}

/// One health check of `node` at `now` (`tryUpdateNodeHealth`), given what was remembered and the
/// `renewTime` of its lease.
pub fn check_node_health(
    node: &Node,
    saved: Option<&NodeHealth>,
    lease_renew_time: Option<Timestamp>,
    now: Timestamp,
    monitor_grace: Duration,
    startup_grace: Duration,
) -> HealthCheck {
    let created = node
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(now, |t| t.0);
    let current_ready = condition(node, "Ready").cloned();
    let (observed_ready, grace_period) = match &current_ready {
        Some(c) => (c.clone(), monitor_grace),
        None => (
            NodeCondition {
                type_: "Ready".into(),
                status: "Unknown".into(),
                last_heartbeat_time: Some(Time(created)),
                last_transition_time: Some(Time(created)),
                ..NodeCondition::default()
            },
            startup_grace,
        ),
    };

    let fresh = |probe: Timestamp, transition: Timestamp| NodeHealth {
        probe_timestamp: probe,
        ready_transition_timestamp: transition,
        ready: current_ready.clone(),
        lease_renew_time: saved.and_then(|s| s.lease_renew_time),
    };
    let saved_ready = saved.and_then(|s| s.ready.as_ref());
    let mut health = match (saved, saved_ready, &current_ready) {
        // First sight of a node that never posted Ready: count from its creation.
        (None, _, None) => fresh(created, created),
        (None, _, Some(_)) => fresh(now, now),
        (Some(s), None, None) => NodeHealth {
            ready: None,
            ..s.clone()
        },
        // The controller restarted with the node already there, or Ready was removed.
        (Some(_), None, Some(_)) | (Some(_), Some(_), None) => fresh(now, now),
        (Some(s), Some(old), Some(cur)) => {
            if old.last_heartbeat_time != cur.last_heartbeat_time {
                let transition = if old.last_transition_time != cur.last_transition_time {
                    now
                } else {
                    s.ready_transition_timestamp
                };
                fresh(now, transition)
            } else {
                s.clone()
            }
        }
    };

    // A renewed lease counts as a heartbeat.
    if let Some(renew) = lease_renew_time {
        if health.lease_renew_time.is_none_or(|saved| saved < renew) {
            health.lease_renew_time = Some(renew);
            health.probe_timestamp = now;
        }
    }

    let mut check = HealthCheck {
        grace_period,
        observed_ready,
        current_ready,
        new_conditions: None,
        health,
    };
    if now <= after(check.health.probe_timestamp, grace_period) {
        return check;
    }
    let mut conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    for type_ in MONITORED_CONDITIONS {
        match conditions.iter_mut().find(|c| c.type_ == type_) {
            None => conditions.push(NodeCondition {
                type_: type_.into(),
                status: "Unknown".into(),
                reason: Some("NodeStatusNeverUpdated".into()),
                message: Some("Kubelet never posted node status.".into()),
                last_heartbeat_time: Some(Time(created)),
                last_transition_time: Some(Time(now)),
            }),
            Some(c) if c.status != "Unknown" => {
                c.status = "Unknown".into();
                c.reason = Some("NodeStatusUnknown".into());
                c.message = Some("Kubelet stopped posting node status.".into());
                c.last_transition_time = Some(Time(now));
            }
            Some(_) => {}
        }
    }
    let current = conditions.iter().find(|c| c.type_ == "Ready").cloned();
    if current.as_ref() != Some(&check.observed_ready) {
        check.current_ready = current;
        check.new_conditions = Some(conditions);
    }
    check
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NodeStatus;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    const GRACE: Duration = Duration::from_secs(40);
    const STARTUP: Duration = Duration::from_secs(60);

    fn at(s: i64) -> Timestamp {
        // fakeNow of the Go tests: 2015-01-01 12:00:00 UTC.
        Timestamp::from_second(1_420_113_600 + s).unwrap()
    }

    fn cond(type_: &str, status: &str, heartbeat: i64, transition: i64) -> NodeCondition {
        NodeCondition {
            type_: type_.into(),
            status: status.into(),
            last_heartbeat_time: Some(Time(at(heartbeat))),
            last_transition_time: Some(Time(at(transition))),
            ..NodeCondition::default()
        }
    }

    fn node(created: i64, conditions: Vec<NodeCondition>) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some("node0".into()),
                creation_timestamp: Some(Time(at(created))),
                ..ObjectMeta::default()
            },
            status: Some(NodeStatus {
                conditions: Some(conditions),
                ..NodeStatus::default()
            }),
            ..Node::default()
        }
    }

    fn healthy(heartbeat: i64) -> Vec<NodeCondition> {
        vec![
            cond("Ready", "True", heartbeat, 0),
            cond("MemoryPressure", "False", heartbeat, 0),
            cond("DiskPressure", "False", heartbeat, 0),
            cond("PIDPressure", "False", heartbeat, 0),
        ]
    }

    /// Two passes as the Go tests run them: one at `first`, one at `second`, the node as given.
    fn two_passes(n: &Node, first: i64, second: i64, lease: [Option<i64>; 2]) -> HealthCheck {
        let one = check_node_health(n, None, lease[0].map(at), at(first), GRACE, STARTUP);
        let saved = match &one.new_conditions {
            Some(_) => one.written(at(first)),
            None => one.health.clone(),
        };
        check_node_health(
            n,
            Some(&saved),
            lease[1].map(at),
            at(second),
            GRACE,
            STARTUP,
        )
    }

    // TestMonitorNodeHealthUpdateStatus: "Node created long time ago, without status".
    #[test]
    fn a_node_that_never_posted_status_gets_unknown_conditions_after_the_startup_grace() {
        let n = node(-3600, vec![]);
        let check = check_node_health(&n, None, None, at(0), GRACE, STARTUP);
        let conditions = check.new_conditions.expect("status update");
        assert_eq!(conditions.len(), 4);
        for (c, type_) in conditions.iter().zip(MONITORED_CONDITIONS) {
            assert_eq!(c.type_, type_);
            assert_eq!(c.status, "Unknown");
            assert_eq!(c.reason.as_deref(), Some("NodeStatusNeverUpdated"));
            assert_eq!(
                c.message.as_deref(),
                Some("Kubelet never posted node status.")
            );
            assert_eq!(c.last_heartbeat_time, Some(Time(at(-3600))));
            assert_eq!(c.last_transition_time, Some(Time(at(0))));
        }
        assert_eq!(check.observed_ready.status, "Unknown");
        assert_eq!(check.grace_period, STARTUP);
    }

    // "Node created recently, without status": within the startup grace nothing is written.
    #[test]
    fn a_new_node_without_status_is_left_alone_within_the_startup_grace() {
        let n = node(0, vec![]);
        let check = check_node_health(&n, None, None, at(30), GRACE, STARTUP);
        assert!(check.new_conditions.is_none());
    }

    // "Node created long time ago, with status updated by kubelet exceeds grace period".
    #[test]
    fn a_stale_heartbeat_turns_every_condition_unknown_with_kubes_reason() {
        let n = node(-3600, healthy(0));
        let check = two_passes(&n, 0, 41, [None, None]);
        let conditions = check.new_conditions.expect("status update");
        for c in &conditions {
            assert_eq!(c.status, "Unknown", "{}", c.type_);
            assert_eq!(c.reason.as_deref(), Some("NodeStatusUnknown"));
            assert_eq!(
                c.message.as_deref(),
                Some("Kubelet stopped posting node status.")
            );
            assert_eq!(c.last_heartbeat_time, Some(Time(at(0))));
            assert_eq!(c.last_transition_time, Some(Time(at(41))));
        }
        assert_eq!(check.observed_ready.status, "True");
        assert_eq!(check.current_ready.unwrap().status, "Unknown");
    }

    // "Node created long time ago, with status updated recently".
    #[test]
    fn a_recent_heartbeat_keeps_the_node_as_it_is() {
        let n = node(-3600, healthy(0));
        let check = two_passes(&n, 0, 30, [None, None]);
        assert!(check.new_conditions.is_none());
        assert_eq!(check.current_ready.unwrap().status, "True");
    }

    // TestMonitorNodeHealthUpdateNodeAndPodStatusWithLease: a renewed lease is a heartbeat.
    #[test]
    fn a_renewed_lease_keeps_a_node_with_a_stale_status_healthy() {
        let n = node(-3600, healthy(-3600));
        let check = two_passes(&n, 0, 41, [Some(0), Some(40)]);
        assert!(check.new_conditions.is_none());
        assert_eq!(check.health.probe_timestamp, at(41));
    }

    #[test]
    fn a_lease_that_stopped_being_renewed_lets_the_node_go_unknown() {
        let n = node(-3600, healthy(-3600));
        let check = two_passes(&n, 0, 41, [Some(0), Some(0)]);
        let conditions = check.new_conditions.expect("status update");
        assert!(conditions.iter().all(|c| c.status == "Unknown"));
    }

    // "Node created long time ago, with status updated by kubelet recently; lease expired":
    // a new heartbeat on the condition alone also counts.
    #[test]
    fn a_new_condition_heartbeat_counts_without_a_lease() {
        let n0 = node(-3600, healthy(0));
        let first = check_node_health(&n0, None, None, at(0), GRACE, STARTUP);
        let n1 = node(-3600, healthy(35));
        let second = check_node_health(&n1, Some(&first.health), None, at(41), GRACE, STARTUP);
        assert!(second.new_conditions.is_none());
        assert_eq!(second.health.probe_timestamp, at(41));
    }

    // Already Unknown: nothing left to write (no update storm every period).
    #[test]
    fn a_node_already_unknown_is_not_written_again() {
        let mut conditions = healthy(0);
        for c in &mut conditions {
            c.status = "Unknown".into();
        }
        let n = node(-3600, conditions);
        let check = two_passes(&n, 0, 100, [None, None]);
        assert!(check.new_conditions.is_none());
    }

    #[test]
    fn a_transition_seen_with_a_new_heartbeat_moves_the_transition_timestamp() {
        let n0 = node(-3600, healthy(0));
        let first = check_node_health(&n0, None, None, at(0), GRACE, STARTUP);
        let mut conditions = healthy(20);
        conditions[0] = cond("Ready", "False", 20, 20);
        let n1 = node(-3600, conditions);
        let second = check_node_health(&n1, Some(&first.health), None, at(21), GRACE, STARTUP);
        assert_eq!(second.health.ready_transition_timestamp, at(21));
        assert_eq!(second.observed_ready.status, "False");
    }
}
