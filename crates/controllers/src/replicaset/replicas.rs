//! Pure replica arithmetic: how many pods to create or delete, and which pods to delete first
//! (`manageReplicas`, `getPodsToDelete` and `ActivePodsWithRanks` of kube-controller-manager).

use std::collections::HashMap;
use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::Pod;

use super::pod_state::{
    is_pod_active, is_pod_ready, more_restarts, node_name, phase, ready_time, PHASE_RUNNING,
    PHASE_UNKNOWN,
};

/// Most pods one sync creates or deletes (`BurstReplicas`, "based off performance requirements
/// for kubernetes 1.0").
pub const BURST_REPLICAS: usize = 500;

/// Annotation a user sets to make a pod cheaper or dearer to delete (`PodDeletionCost`, on by
/// default since 1.22).
pub const POD_DELETION_COST_ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";

/// What one sync must do to move the number of active pods towards `spec.replicas`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicaDiff {
    /// Nothing: the count is right.
    None,
    /// Create this many pods.
    Create(usize),
    /// Delete this many pods.
    Delete(usize),
}

/// The creations or deletions for `active` pods when `desired` are wanted, capped at `burst`.
pub fn replica_diff(active: usize, desired: i32, burst: usize) -> ReplicaDiff {
    let desired = usize::try_from(desired).unwrap_or(0);
    if active < desired {
        ReplicaDiff::Create((desired - active).min(burst))
    } else if active > desired {
        ReplicaDiff::Delete((active - desired).min(burst))
    } else {
        ReplicaDiff::None
    }
}

/// The `diff` pods of `filtered` to delete first (`getPodsToDelete`).
///
/// Pods are ranked by the number of active `related` pods (the pods of every ReplicaSet with the
/// same controller) on their node, so scale-down spreads the survivors. `now` drives the
/// logarithmic bucketing of ready and creation times (`LogarithmicScaleDown`, GA).
pub fn pods_to_delete(
    filtered: &[Arc<Pod>],
    related: &[Arc<Pod>],
    diff: usize,
    now: Timestamp,
) -> Vec<Arc<Pod>> {
    let diff = diff.min(filtered.len());
    // No need to rank the pods if all of them go.
    if diff == filtered.len() {
        return filtered.to_vec();
    }
    let mut on_node: HashMap<&str, usize> = HashMap::new();
    for pod in related.iter().filter(|p| is_pod_active(p)) {
        *on_node.entry(node_name(pod)).or_default() += 1;
    }
    let mut ranked: Vec<RankedPod<'_>> = filtered
        .iter()
        .map(|pod| RankedPod {
            pod,
            rank: on_node.get(node_name(pod)).copied().unwrap_or(0),
        })
        .collect();
    merge_sort_by_less(&mut ranked, &|a, b| {
        delete_first(a.pod, a.rank, b.pod, b.rank, Some(now))
    });
    ranked
        .into_iter()
        .take(diff)
        .map(|r| Arc::clone(r.pod))
        .collect()
}

#[derive(Clone, Copy)]
struct RankedPod<'a> {
    pod: &'a Arc<Pod>,
    rank: usize,
}

/// True if pod `a` (with `rank_a` co-located related pods) should be deleted before pod `b`
/// (`ActivePodsWithRanks.Less`):
/// 1. unassigned < assigned; 2. Pending < Unknown < Running; 3. not ready < ready;
/// 4. lower pod-deletion-cost < higher; 5. more co-located related pods < fewer;
/// 6. ready for less time < more time (log₂ buckets, then UID);
/// 7. more restarts < fewer (regular containers, then restartable init containers);
/// 8. newer < older (log₂ buckets, then UID). `now` = `None` compares raw times.
pub fn delete_first(
    a: &Pod,
    rank_a: usize,
    b: &Pod,
    rank_b: usize,
    now: Option<Timestamp>,
) -> bool {
    // 1. Unassigned < assigned.
    let (node_a, node_b) = (node_name(a), node_name(b));
    if node_a != node_b && (node_a.is_empty() || node_b.is_empty()) {
        return node_a.is_empty();
    }
    // 2. PodPending < PodUnknown < PodRunning.
    let (ord_a, ord_b) = (phase_ordinal(phase(a)), phase_ordinal(phase(b)));
    if ord_a != ord_b {
        return ord_a < ord_b;
    }
    // 3. Not ready < ready.
    let (ready_a, ready_b) = (is_pod_ready(a), is_pod_ready(b));
    if ready_a != ready_b {
        return !ready_a;
    }
    // 4. Lower pod-deletion-cost < higher pod-deletion-cost.
    let (cost_a, cost_b) = (deletion_cost(a), deletion_cost(b));
    if cost_a != cost_b {
        return cost_a < cost_b;
    }
    // 5. Doubled up < not doubled up.
    if rank_a != rank_b {
        return rank_a > rank_b;
    }
    // 6. Been ready for empty time < less time < more time.
    if ready_a && ready_b {
        let (ta, tb) = (ready_time(a), ready_time(b));
        if ta != tb {
            return newer_first(ta, tb, now, a, b);
        }
    }
    // 7. Pods with containers with higher restart counts < lower restart counts (regular
    // containers first, then sidecars).
    if let Some(a_restarted_more) = more_restarts(a, b) {
        return a_restarted_more;
    }
    // 8. Empty creation time pods < newer pods < older pods.
    let created_a = a.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let created_b = b.metadata.creation_timestamp.as_ref().map(|t| t.0);
    if created_a != created_b {
        return newer_first(created_a, created_b, now, a, b);
    }
    false
}

/// `afterOrZero`, or with `now` the logarithmic rank comparison with a UID tie-break.
fn newer_first(
    ta: Option<Timestamp>,
    tb: Option<Timestamp>,
    now: Option<Timestamp>,
    a: &Pod,
    b: &Pod,
) -> bool {
    match (now, ta, tb) {
        (Some(now), Some(ta), Some(tb)) => {
            let rank_diff = log2_rank(ta, now) - log2_rank(tb, now);
            if rank_diff == 0 {
                return a.metadata.uid.as_deref().unwrap_or("")
                    < b.metadata.uid.as_deref().unwrap_or("");
            }
            rank_diff < 0
        }
        _ => after_or_zero(ta, tb),
    }
}

/// True if `t1` is after `t2`; a missing time counts as after any time (`afterOrZero`).
fn after_or_zero(t1: Option<Timestamp>, t2: Option<Timestamp>) -> bool {
    match (t1, t2) {
        (Some(t1), Some(t2)) => t1 > t2,
        (t1, _) => t1.is_none(),
    }
}

/// ⌊log₂(now − t in nanoseconds)⌋, or −1 when `t` is not in the past (`logarithmicRankDiff`).
fn log2_rank(t: Timestamp, now: Timestamp) -> i64 {
    let d = now.as_nanosecond() - t.as_nanosecond();
    if d > 0 {
        // Go computes int64(math.Log2(float64(d))); keep the float path so bucket edges agree.
        (d as f64).log2() as i64
    } else {
        -1
    }
}

fn phase_ordinal(phase: &str) -> u8 {
    match phase {
        PHASE_UNKNOWN => 1,
        PHASE_RUNNING => 2,
        // Pending, and anything else (Go's map lookup defaults to 0).
        _ => 0,
    }
}

/// The pod's deletion cost; 0 when the annotation is absent or invalid (`getPodDeletionCost`).
pub fn deletion_cost(pod: &Pod) -> i32 {
    pod.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(POD_DELETION_COST_ANNOTATION))
        .and_then(|v| parse_deletion_cost(v))
        .unwrap_or(0)
}

/// A pod-deletion-cost value as kube reads it (`GetDeletionCostFromPodAnnotations` of
/// `pkg/apis/core/helper`): a base-10 int32 in canonical form, or `None`. A leading `+` (`"+10"`)
/// or a leading zero (`"008"`) makes the value invalid; `"0"` and a leading `-` are fine.
pub fn parse_deletion_cost(value: &str) -> Option<i32> {
    // validFirstDigit: '-', the string "0" itself, or 1-9.
    let valid_first = matches!(value.as_bytes(), [b'-', ..] | [b'1'..=b'9', ..] | [b'0']);
    if !valid_first {
        return None;
    }
    // strconv.ParseInt(value, 10, 32): ASCII digits after an optional sign, within int32.
    value.parse::<i32>().ok()
}

/// A stable merge sort driven by a `less` predicate.
///
/// The ranking above is not a total order (its log-bucket tie-break on UID skips the later
/// rules), and `slice::sort_by` may panic on such comparators; this sort never does.
fn merge_sort_by_less<T: Copy>(v: &mut [T], less: &dyn Fn(&T, &T) -> bool) {
    let n = v.len();
    if n < 2 {
        return;
    }
    let mut buf: Vec<T> = v.to_vec();
    let mut width = 1;
    while width < n {
        let mut start = 0;
        while start < n {
            let mid = (start + width).min(n);
            let end = (start + 2 * width).min(n);
            let (mut i, mut j, mut k) = (start, mid, start);
            while i < mid && j < end {
                // Take from the right only if it is strictly less: keeps equal items in order.
                if less(&v[j], &v[i]) {
                    buf[k] = v[j];
                    j += 1;
                } else {
                    buf[k] = v[i];
                    i += 1;
                }
                k += 1;
            }
            buf[k..k + (mid - i)].copy_from_slice(&v[i..mid]);
            k += mid - i;
            buf[k..k + (end - j)].copy_from_slice(&v[j..end]);
            start = end;
        }
        v.copy_from_slice(&buf);
        width *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        Container, ContainerStatus, PodCondition, PodSpec, PodStatus,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use kube::api::ObjectMeta;
    use std::collections::BTreeMap;

    fn secs(s: i64) -> jiff::SignedDuration {
        jiff::SignedDuration::from_secs(s)
    }

    #[allow(clippy::too_many_arguments)]
    fn pod(
        name: &str,
        node: &str,
        phase: &str,
        ready: bool,
        restarts: i32,
        ready_since: Option<Timestamp>,
        created: Option<Timestamp>,
        annotations: Option<BTreeMap<String, String>>,
    ) -> Arc<Pod> {
        let (conditions, statuses) = if ready {
            (
                Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_transition_time: ready_since.map(Time),
                    ..Default::default()
                }]),
                Some(vec![ContainerStatus {
                    restart_count: restarts,
                    ..Default::default()
                }]),
            )
        } else {
            (None, None)
        };
        Arc::new(Pod {
            metadata: ObjectMeta {
                name: Some(name.into()),
                creation_timestamp: created.map(Time),
                annotations,
                ..Default::default()
            },
            spec: Some(PodSpec {
                node_name: (!node.is_empty()).then(|| node.to_string()),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: Some(phase.into()),
                conditions,
                container_statuses: statuses,
                ..Default::default()
            }),
        })
    }

    fn cost(v: &str) -> Option<BTreeMap<String, String>> {
        Some(BTreeMap::from([(
            POD_DELETION_COST_ANNOTATION.to_string(),
            v.to_string(),
        )]))
    }

    /// Ported from controller_utils_test.go `TestSortingActivePodsWithRanks`.
    #[test]
    fn ranking_orders_pods_as_kube_does() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let then_1_month = now - secs(30 * 24 * 3600);
        let then_2h = now - secs(2 * 3600);
        let then_5h = now - secs(5 * 3600);
        let then_8h = now - secs(8 * 3600);
        let (p, r, u) = ("Pending", "Running", "Unknown");
        let unscheduled = pod("unscheduled", "", p, false, 0, None, None, None);
        let scheduled_pending = pod("pending", "node", p, false, 0, None, None, None);
        let unknown_phase = pod("unknown-phase", "node", u, false, 0, None, None, None);
        let running_not_ready = pod("not-ready", "node", r, false, 0, None, None, None);
        let ready_no_ltt = pod("ready-no-ltt", "node", r, true, 0, None, None, None);
        let ready_now = pod("ready-now", "node", r, true, 0, Some(now), Some(now), None);
        let ready_then = pod(
            "ready-then",
            "node",
            r,
            true,
            0,
            Some(then_1_month),
            Some(then_1_month),
            None,
        );
        let ready_high_restarts = pod(
            "ready-high-restarts",
            "node",
            r,
            true,
            9001,
            Some(now),
            Some(now),
            None,
        );
        let ready_now_created_then = pod(
            "ready-now-created-then",
            "node",
            r,
            true,
            0,
            Some(now),
            Some(then_1_month),
            None,
        );
        let low_cost = pod(
            "low-deletion-cost",
            "node",
            r,
            true,
            0,
            Some(now),
            Some(then_1_month),
            cost("10"),
        );
        let high_cost = pod(
            "high-deletion-cost",
            "node",
            r,
            true,
            0,
            Some(now),
            Some(then_1_month),
            cost("100"),
        );
        let unscheduled_5h = pod(
            "unscheduled-5-hours",
            "",
            p,
            false,
            0,
            Some(then_5h),
            Some(then_5h),
            None,
        );
        let unscheduled_8h = pod(
            "unscheduled-8-hours",
            "",
            p,
            false,
            0,
            Some(then_8h),
            Some(then_8h),
            None,
        );
        let ready_2h = pod(
            "ready-2-hours",
            "",
            r,
            true,
            0,
            Some(then_2h),
            Some(then_1_month),
            None,
        );
        let ready_5h = pod(
            "ready-5-hours",
            "",
            r,
            true,
            0,
            Some(then_5h),
            Some(then_1_month),
            None,
        );
        let ready_8h = pod(
            "ready-8-hours",
            "",
            r,
            true,
            0,
            Some(then_8h),
            Some(then_1_month),
            None,
        );

        // kubernetes#124952: restarts of restartable init containers (sidecars) break ties
        // between equal regular restart counts; other init containers do not count.
        let with_init = |pod: &Arc<Pod>, name: &str, policy: Option<&str>, restarts: i32| {
            let mut pod = (**pod).clone();
            pod.metadata.name = Some(name.into());
            pod.spec
                .get_or_insert_with(Default::default)
                .init_containers = Some(vec![Container {
                name: "init".into(),
                restart_policy: policy.map(String::from),
                ..Default::default()
            }]);
            pod.status
                .get_or_insert_with(Default::default)
                .init_container_statuses = Some(vec![ContainerStatus {
                name: "init".into(),
                restart_count: restarts,
                ..Default::default()
            }]);
            Arc::new(pod)
        };
        let ready_sidecar_restarts =
            with_init(&ready_now, "ready-sidecar-restarts", Some("Always"), 9001);
        let ready_init_restarts = with_init(&ready_now, "ready-init-restarts", None, 9001);
        let ready_high_restarts_and_sidecar =
            with_init(&ready_high_restarts, "ready-high-both", Some("Always"), 1);

        let equal = [
            (&ready_init_restarts, &ready_now),
            (&unscheduled, &unscheduled),
            (&scheduled_pending, &scheduled_pending),
            (&unknown_phase, &unknown_phase),
            (&running_not_ready, &running_not_ready),
            (&ready_now_created_then, &ready_now_created_then),
            (&ready_now, &ready_now),
            (&ready_then, &ready_then),
            (&ready_high_restarts, &ready_high_restarts),
            (&unscheduled_5h, &unscheduled_8h),
            (&ready_5h, &ready_8h),
        ];
        for (a, b) in equal {
            let name = a.metadata.name.as_deref().unwrap();
            assert!(
                !delete_first(a, 1, b, 1, Some(now)),
                "{name} should equal its peer"
            );
            assert!(
                !delete_first(b, 1, a, 1, Some(now)),
                "{name} should equal its peer"
            );
        }

        let lesser_greater = [
            ((&unscheduled, 1), (&scheduled_pending, 2)),
            ((&unscheduled, 2), (&scheduled_pending, 1)),
            ((&scheduled_pending, 1), (&unknown_phase, 2)),
            ((&unknown_phase, 1), (&running_not_ready, 2)),
            ((&running_not_ready, 1), (&ready_no_ltt, 1)),
            ((&ready_no_ltt, 1), (&ready_now, 1)),
            ((&ready_now, 2), (&ready_no_ltt, 1)),
            ((&ready_now, 1), (&ready_then, 1)),
            ((&ready_now, 2), (&ready_then, 1)),
            ((&ready_high_restarts, 1), (&ready_now, 1)),
            ((&ready_now, 2), (&ready_high_restarts, 1)),
            ((&ready_now, 1), (&ready_now_created_then, 1)),
            ((&ready_now_created_then, 2), (&ready_now, 1)),
            ((&low_cost, 2), (&high_cost, 1)),
            ((&ready_sidecar_restarts, 1), (&ready_now, 1)),
            ((&ready_sidecar_restarts, 1), (&ready_init_restarts, 1)),
            ((&ready_high_restarts, 1), (&ready_sidecar_restarts, 1)),
            (
                (&ready_high_restarts_and_sidecar, 1),
                (&ready_high_restarts, 1),
            ),
            ((&ready_2h, 1), (&ready_5h, 1)),
        ];
        for ((lesser, lr), (greater, gr)) in lesser_greater {
            let (ln, gn) = (
                lesser.metadata.name.as_deref().unwrap(),
                greater.metadata.name.as_deref().unwrap(),
            );
            assert!(
                delete_first(lesser, lr, greater, gr, Some(now)),
                "{ln}/{lr} should go before {gn}/{gr}"
            );
            assert!(
                !delete_first(greater, gr, lesser, lr, Some(now)),
                "{gn}/{gr} should not go before {ln}/{lr}"
            );
        }
    }

    /// Ported from replica_set_test.go `TestGetPodsToDelete`.
    #[test]
    fn pods_to_delete_prefers_unscheduled_then_pending_then_not_ready_then_doubled_up() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let unscheduled_pending = pod(
            "unscheduled-pending",
            "",
            "Pending",
            false,
            0,
            None,
            None,
            None,
        );
        let scheduled_pending = pod(
            "scheduled-pending",
            "fake-node",
            "Pending",
            false,
            0,
            None,
            None,
            None,
        );
        let mut not_ready = (*pod(
            "running-not-ready",
            "fake-node",
            "Running",
            false,
            0,
            None,
            None,
            None,
        ))
        .clone();
        not_ready.status.as_mut().unwrap().conditions = Some(vec![PodCondition {
            type_: "Ready".into(),
            status: "False".into(),
            ..Default::default()
        }]);
        let not_ready = Arc::new(not_ready);
        let ready_node1 = pod(
            "ready-on-node-1",
            "fake-node-1",
            "Running",
            true,
            0,
            None,
            None,
            None,
        );
        let ready_node2 = pod(
            "ready-on-node-2",
            "fake-node-2",
            "Running",
            true,
            0,
            None,
            None,
            None,
        );

        struct Case {
            name: &'static str,
            pods: Vec<Arc<Pod>>,
            related: Option<Vec<Arc<Pod>>>,
            diff: usize,
            expected: Vec<Arc<Pod>>,
        }
        let cases = vec![
            Case {
                name: "no pods",
                pods: vec![],
                related: None,
                diff: 0,
                expected: vec![],
            },
            Case {
                name: "diff = len(pods)",
                pods: vec![not_ready.clone(), ready_node1.clone()],
                related: None,
                diff: 2,
                expected: vec![not_ready.clone(), ready_node1.clone()],
            },
            Case {
                name: "diff < len(pods)",
                pods: vec![ready_node1.clone(), not_ready.clone()],
                related: None,
                diff: 1,
                expected: vec![not_ready.clone()],
            },
            Case {
                name: "various phases, diff = len(pods), order kept",
                pods: vec![
                    ready_node1.clone(),
                    ready_node1.clone(),
                    ready_node2.clone(),
                    not_ready.clone(),
                    scheduled_pending.clone(),
                    unscheduled_pending.clone(),
                ],
                related: Some(vec![]),
                diff: 6,
                expected: vec![
                    ready_node1.clone(),
                    ready_node1.clone(),
                    ready_node2.clone(),
                    not_ready.clone(),
                    scheduled_pending.clone(),
                    unscheduled_pending.clone(),
                ],
            },
            Case {
                name: "scheduled vs unscheduled",
                pods: vec![scheduled_pending.clone(), unscheduled_pending.clone()],
                related: None,
                diff: 1,
                expected: vec![unscheduled_pending.clone()],
            },
            Case {
                name: "ready vs not ready",
                pods: vec![ready_node1.clone(), not_ready.clone(), not_ready.clone()],
                related: None,
                diff: 2,
                expected: vec![not_ready.clone(), not_ready.clone()],
            },
            Case {
                name: "ready and colocated with another ready pod vs not colocated",
                pods: vec![ready_node1.clone(), ready_node2.clone()],
                related: Some(vec![
                    ready_node1.clone(),
                    ready_node2.clone(),
                    ready_node2.clone(),
                ]),
                diff: 1,
                expected: vec![ready_node2.clone()],
            },
            Case {
                name: "pending vs running",
                pods: vec![scheduled_pending.clone(), not_ready.clone()],
                related: None,
                diff: 1,
                expected: vec![scheduled_pending.clone()],
            },
            Case {
                name: "various phases, diff < len(pods)",
                pods: vec![
                    ready_node1.clone(),
                    ready_node2.clone(),
                    not_ready.clone(),
                    scheduled_pending.clone(),
                    unscheduled_pending.clone(),
                ],
                related: None,
                diff: 3,
                expected: vec![
                    unscheduled_pending.clone(),
                    scheduled_pending.clone(),
                    not_ready.clone(),
                ],
            },
        ];
        for case in cases {
            let related = case.related.clone().unwrap_or_else(|| case.pods.clone());
            let got = pods_to_delete(&case.pods, &related, case.diff, now);
            let names = |v: &[Arc<Pod>]| {
                v.iter()
                    .map(|p| p.metadata.name.clone().unwrap())
                    .collect::<Vec<_>>()
            };
            assert_eq!(names(&got), names(&case.expected), "{}", case.name);
        }
    }

    #[test]
    fn replica_diff_is_capped_by_burst() {
        assert_eq!(replica_diff(0, 3, BURST_REPLICAS), ReplicaDiff::Create(3));
        assert_eq!(
            replica_diff(0, 1000, BURST_REPLICAS),
            ReplicaDiff::Create(500)
        );
        assert_eq!(
            replica_diff(1000, 0, BURST_REPLICAS),
            ReplicaDiff::Delete(500)
        );
        assert_eq!(replica_diff(10, 1, BURST_REPLICAS), ReplicaDiff::Delete(9));
        assert_eq!(replica_diff(2, 2, BURST_REPLICAS), ReplicaDiff::None);
    }

    #[test]
    fn sorting_with_an_inconsistent_comparator_never_panics() {
        let mut v: Vec<u32> = (0..200).rev().collect();
        merge_sort_by_less(&mut v, &|a, b| (a * 7 + b * 3) % 5 == 0);
        assert_eq!(v.len(), 200);
        let mut w: Vec<u32> = (0..100).rev().collect();
        merge_sort_by_less(&mut w, &|a, b| a < b);
        assert_eq!(w, (0..100).collect::<Vec<_>>());
    }

    /// The cases of kube's `GetDeletionCostFromPodAnnotations` and its validation tests.
    #[test]
    fn deletion_cost_accepts_only_canonical_int32_values() {
        let cases: [(&str, Option<i32>); 20] = [
            ("0", Some(0)),
            ("100", Some(100)),
            ("-5", Some(-5)),
            ("-0", Some(0)),
            ("2147483647", Some(i32::MAX)),
            ("-2147483648", Some(i32::MIN)),
            ("+100", None),
            ("+0", None),
            ("007", None),
            ("00", None),
            ("2147483648", None),
            ("-2147483649", None),
            ("9223372036854775807", None),
            ("", None),
            ("-", None),
            ("abc", None),
            ("10a", None),
            (" 10", None),
            ("1_000", None),
            ("1.5", None),
        ];
        for (value, want) in cases {
            assert_eq!(parse_deletion_cost(value), want, "{value:?}");
            let p = pod("p", "", "Pending", false, 0, None, None, cost(value));
            assert_eq!(deletion_cost(&p), want.unwrap_or(0), "{value:?}");
        }
        let unannotated = pod("p", "", "Pending", false, 0, None, None, None);
        assert_eq!(deletion_cost(&unannotated), 0);
    }

    #[test]
    fn an_invalid_deletion_cost_ranks_as_zero() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let ranked = |name: &str, value: &str| {
            pod(
                name,
                "node",
                "Running",
                true,
                0,
                Some(now),
                Some(now),
                cost(value),
            )
        };
        // "+100" is not 100: it ranks as 0, below a cost of 1.
        assert!(delete_first(
            &ranked("plus", "+100"),
            1,
            &ranked("one", "1"),
            1,
            Some(now)
        ));
        assert!(delete_first(
            &ranked("zero-padded", "007"),
            1,
            &ranked("one", "1"),
            1,
            Some(now)
        ));
    }
}
