//! The taints the node lifecycle controller owns: the NoExecute not-ready/unreachable pair and the
//! NoSchedule taints mirroring node conditions (`doNoScheduleTaintingPass`,
//! `controllerutil.SwapNodeControllerTaint`), as pure functions over taint lists.

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// `node.kubernetes.io/not-ready`: the Ready condition is False.
pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// `node.kubernetes.io/unreachable`: the Ready condition is Unknown.
pub const TAINT_NODE_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// `node.kubernetes.io/unschedulable`: `spec.unschedulable` is set.
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// `node.kubernetes.io/memory-pressure`.
pub const TAINT_NODE_MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
/// `node.kubernetes.io/disk-pressure`.
pub const TAINT_NODE_DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
/// `node.kubernetes.io/network-unavailable`.
pub const TAINT_NODE_NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";
/// `node.kubernetes.io/pid-pressure`.
pub const TAINT_NODE_PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";

/// `NoExecute`.
pub const NO_EXECUTE: &str = "NoExecute";
/// `NoSchedule`.
pub const NO_SCHEDULE: &str = "NoSchedule";

/// The taint key a condition of `type_` in `status` maps to (`nodeConditionToTaintKeyStatusMap`).
pub fn condition_taint_key(type_: &str, status: &str) -> Option<&'static str> {
    match (type_, status) {
        ("Ready", "False") => Some(TAINT_NODE_NOT_READY),
        ("Ready", "Unknown") => Some(TAINT_NODE_UNREACHABLE),
        ("MemoryPressure", "True") => Some(TAINT_NODE_MEMORY_PRESSURE),
        ("DiskPressure", "True") => Some(TAINT_NODE_DISK_PRESSURE),
        ("NetworkUnavailable", "True") => Some(TAINT_NODE_NETWORK_UNAVAILABLE),
        ("PIDPressure", "True") => Some(TAINT_NODE_PID_PRESSURE),
        _ => None,
    }
}

/// Whether `key` is one of the condition taints (`taintKeyToNodeConditionMap`).
fn is_condition_taint_key(key: &str) -> bool {
    matches!(
        key,
        TAINT_NODE_NOT_READY
            | TAINT_NODE_UNREACHABLE
            | TAINT_NODE_MEMORY_PRESSURE
            | TAINT_NODE_DISK_PRESSURE
            | TAINT_NODE_NETWORK_UNAVAILABLE
            | TAINT_NODE_PID_PRESSURE
    )
}

/// A taint with `key` and `effect`, no value.
pub fn taint(key: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        effect: effect.into(),
        ..Taint::default()
    }
}

/// `NotReadyTaintTemplate`: `node.kubernetes.io/not-ready:NoExecute`.
pub fn not_ready_no_execute() -> Taint {
    taint(TAINT_NODE_NOT_READY, NO_EXECUTE)
}

/// `UnreachableTaintTemplate`: `node.kubernetes.io/unreachable:NoExecute`.
pub fn unreachable_no_execute() -> Taint {
    taint(TAINT_NODE_UNREACHABLE, NO_EXECUTE)
}

/// The node's taints (empty when it has none).
pub fn node_taints(node: &Node) -> &[Taint] {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or_default()
}

/// Whether two taints are the same taint: same key and effect (`Taint.MatchTaint`).
pub fn matches(a: &Taint, b: &Taint) -> bool {
    a.key == b.key && a.effect == b.effect
}

/// Whether `taints` holds one matching `t` (`taintutils.TaintExists`).
pub fn taint_exists(taints: &[Taint], t: &Taint) -> bool {
    taints.iter().any(|x| matches(x, t))
}

/// The NoSchedule taints the node's conditions and `spec.unschedulable` call for.
pub fn desired_no_schedule_taints(node: &Node) -> Vec<Taint> {
    let mut taints: Vec<Taint> = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default()
        .iter()
        .filter_map(|c| condition_taint_key(&c.type_, &c.status))
        .map(|key| taint(key, NO_SCHEDULE))
        .collect();
    if node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
    {
        taints.push(taint(TAINT_NODE_UNSCHEDULABLE, NO_SCHEDULE));
    }
    taints
}

/// The NoSchedule taints to add and to remove so that the node's controller-owned NoSchedule
/// taints match its conditions (`doNoScheduleTaintingPass`: `TaintSetDiff` of the desired set
/// against the node's NoSchedule taints with a condition or unschedulable key).
pub fn no_schedule_diff(node: &Node) -> (Vec<Taint>, Vec<Taint>) {
    let desired = desired_no_schedule_taints(node);
    let owned: Vec<&Taint> = node_taints(node)
        .iter()
        .filter(|t| {
            t.effect == NO_SCHEDULE
                && (t.key == TAINT_NODE_UNSCHEDULABLE || is_condition_taint_key(&t.key))
        })
        .collect();
    let add = desired
        .iter()
        .filter(|d| !owned.iter().any(|o| matches(o, d)))
        .cloned()
        .collect();
    let del = owned
        .into_iter()
        .filter(|o| !desired.iter().any(|d| matches(o, d)))
        .cloned()
        .collect();
    (add, del)
}

/// The node's taints after removing `remove` and adding `add` (each new taint stamped
/// `timeAdded = now`, as `AddOrUpdateTaintOnNode` does), or `None` when nothing changes.
pub fn swap_taints(
    current: &[Taint],
    add: &[Taint],
    remove: &[Taint],
    now: Timestamp,
) -> Option<Vec<Taint>> {
    let mut out: Vec<Taint> = current
        .iter()
        .filter(|t| !remove.iter().any(|r| matches(t, r)))
        .cloned()
        .collect();
    for a in add {
        if out.iter().any(|t| matches(t, a)) {
            continue;
        }
        let mut a = a.clone();
        a.time_added = Some(Time(now));
        out.push(a);
    }
    let same = out.len() == current.len() && out.iter().all(|t| taint_exists(current, t));
    (!same).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeCondition, NodeSpec, NodeStatus};

    fn node(conditions: &[(&str, &str)], taints: Vec<Taint>, unschedulable: bool) -> Node {
        Node {
            spec: Some(NodeSpec {
                taints: Some(taints),
                unschedulable: Some(unschedulable),
                ..NodeSpec::default()
            }),
            status: Some(NodeStatus {
                conditions: Some(
                    conditions
                        .iter()
                        .map(|(t, s)| NodeCondition {
                            type_: (*t).into(),
                            status: (*s).into(),
                            ..NodeCondition::default()
                        })
                        .collect(),
                ),
                ..NodeStatus::default()
            }),
            ..Node::default()
        }
    }

    fn keys(taints: &[Taint]) -> Vec<&str> {
        taints.iter().map(|t| t.key.as_str()).collect()
    }

    /// (conditions, unschedulable, expected taint keys).
    type Case<'a> = (&'a [(&'a str, &'a str)], bool, &'a [&'a str]);

    // TestTaintsNodeByCondition: each condition maps to its NoSchedule taint.
    #[test]
    fn conditions_map_to_their_no_schedule_taints() {
        let cases: &[Case] = &[
            (&[("Ready", "True")], false, &[]),
            (
                &[("Ready", "True"), ("MemoryPressure", "True")],
                false,
                &[TAINT_NODE_MEMORY_PRESSURE],
            ),
            (
                &[("Ready", "True"), ("DiskPressure", "True")],
                false,
                &[TAINT_NODE_DISK_PRESSURE],
            ),
            (
                &[("Ready", "True"), ("NetworkUnavailable", "True")],
                false,
                &[TAINT_NODE_NETWORK_UNAVAILABLE],
            ),
            (
                &[("Ready", "True"), ("PIDPressure", "True")],
                false,
                &[TAINT_NODE_PID_PRESSURE],
            ),
            (&[("Ready", "False")], false, &[TAINT_NODE_NOT_READY]),
            (&[("Ready", "Unknown")], false, &[TAINT_NODE_UNREACHABLE]),
            (&[("Ready", "True")], true, &[TAINT_NODE_UNSCHEDULABLE]),
            (
                &[("Ready", "False"), ("MemoryPressure", "False")],
                false,
                &[TAINT_NODE_NOT_READY],
            ),
        ];
        for (i, (conditions, unschedulable, want)) in cases.iter().enumerate() {
            let n = node(conditions, vec![], *unschedulable);
            let (add, del) = no_schedule_diff(&n);
            assert_eq!(keys(&add), *want, "case {i}");
            assert!(add.iter().all(|t| t.effect == NO_SCHEDULE), "case {i}");
            assert!(del.is_empty(), "case {i}");
        }
    }

    #[test]
    fn stale_condition_taints_are_removed_and_foreign_taints_kept() {
        let n = node(
            &[("Ready", "True")],
            vec![
                taint(TAINT_NODE_NOT_READY, NO_SCHEDULE),
                taint(TAINT_NODE_UNSCHEDULABLE, NO_SCHEDULE),
                taint("dedicated", NO_SCHEDULE),
                unreachable_no_execute(),
            ],
            false,
        );
        let (add, del) = no_schedule_diff(&n);
        assert!(add.is_empty());
        assert_eq!(keys(&del), [TAINT_NODE_NOT_READY, TAINT_NODE_UNSCHEDULABLE]);
    }

    // TestSwapUnreachableNotReadyTaints: swapping replaces one NoExecute taint by the other.
    #[test]
    fn swapping_replaces_unreachable_by_not_ready_and_stamps_the_time() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let current = [unreachable_no_execute(), taint("dedicated", NO_SCHEDULE)];
        let out = swap_taints(
            &current,
            &[not_ready_no_execute()],
            &[unreachable_no_execute()],
            now,
        )
        .unwrap();
        assert_eq!(keys(&out), ["dedicated", TAINT_NODE_NOT_READY]);
        assert_eq!(out[1].time_added, Some(Time(now)));
        assert_eq!(out[1].effect, NO_EXECUTE);
    }

    #[test]
    fn swapping_to_what_is_already_there_changes_nothing() {
        let now = Timestamp::UNIX_EPOCH;
        let current = [not_ready_no_execute()];
        assert!(swap_taints(
            &current,
            &[not_ready_no_execute()],
            &[unreachable_no_execute()],
            now
        )
        .is_none());
        assert!(swap_taints(&[], &[], &[unreachable_no_execute()], now).is_none());
    }

    #[test]
    fn a_no_schedule_taint_with_the_same_key_is_not_the_no_execute_one() {
        let current = [taint(TAINT_NODE_UNREACHABLE, NO_SCHEDULE)];
        assert!(!taint_exists(&current, &unreachable_no_execute()));
    }
}
