//! Pure ReplicaSet status arithmetic: counts, the `ReplicaFailure` condition, and whether the
//! status must be written (`calculateStatus` and the condition helpers of `replica_set_utils.go`).

use std::sync::Arc;

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetCondition, ReplicaSetStatus};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::pod_state::{is_pod_available, is_pod_ready};

/// Condition type set while creating or deleting pods fails.
pub const REPLICA_FAILURE: &str = "ReplicaFailure";

/// The status `rs` should have given its claimed active `filtered` pods and the outcome of this
/// sync's `manage_replicas` (`manage_error`: its message when it failed), at `now`.
///
/// `fullyLabeledReplicas` counts pods whose labels include every template label;
/// `availableReplicas` counts pods ready for longer than `spec.minReadySeconds`.
/// `observedGeneration` is left as it was: the writer sets it.
pub fn calculate_status(
    rs: &ReplicaSet,
    filtered: &[Arc<Pod>],
    manage_error: Option<&str>,
    now: Timestamp,
) -> ReplicaSetStatus {
    let mut status = rs.status.clone().unwrap_or_default();
    let spec = rs.spec.as_ref();
    let min_ready_seconds = spec.and_then(|s| s.min_ready_seconds).unwrap_or(0);
    let template_labels = spec
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.as_ref());

    let (mut fully_labeled, mut ready, mut available) = (0i32, 0i32, 0i32);
    for pod in filtered {
        let pod_labels = pod.metadata.labels.as_ref();
        let labeled = template_labels.is_none_or(|want| {
            want.iter()
                .all(|(k, v)| pod_labels.and_then(|l| l.get(k)) == Some(v))
        });
        if labeled {
            fully_labeled += 1;
        }
        if is_pod_ready(pod) {
            ready += 1;
            if is_pod_available(pod, min_ready_seconds, now) {
                available += 1;
            }
        }
    }

    let has_failure = condition(&status, REPLICA_FAILURE).is_some();
    match manage_error {
        Some(message) if !has_failure => {
            let desired = spec.and_then(|s| s.replicas).unwrap_or(1);
            let diff = i64::try_from(filtered.len()).unwrap_or(i64::MAX) - i64::from(desired);
            let reason = match diff {
                d if d < 0 => "FailedCreate",
                d if d > 0 => "FailedDelete",
                _ => "",
            };
            set_condition(
                &mut status,
                new_condition(REPLICA_FAILURE, "True", reason, message, now),
            );
        }
        None if has_failure => remove_condition(&mut status, REPLICA_FAILURE),
        _ => {}
    }

    status.replicas = i32::try_from(filtered.len()).unwrap_or(i32::MAX);
    status.fully_labeled_replicas = Some(fully_labeled);
    status.ready_replicas = Some(ready);
    status.available_replicas = Some(available);
    status
}

/// True if `new` differs from what `rs` reports, or `rs`'s generation is not yet observed: the
/// steady-state check of `updateReplicaSetStatus`.
pub fn status_needs_update(rs: &ReplicaSet, new: &ReplicaSetStatus) -> bool {
    let old = rs.status.clone().unwrap_or_default();
    let generation = rs.metadata.generation.unwrap_or(0);
    !(old.replicas == new.replicas
        && old.fully_labeled_replicas.unwrap_or(0) == new.fully_labeled_replicas.unwrap_or(0)
        && old.ready_replicas.unwrap_or(0) == new.ready_replicas.unwrap_or(0)
        && old.available_replicas.unwrap_or(0) == new.available_replicas.unwrap_or(0)
        && old.observed_generation.unwrap_or(0) == generation
        && conditions_or_empty(&old) == conditions_or_empty(new))
}

fn conditions_or_empty(status: &ReplicaSetStatus) -> &[ReplicaSetCondition] {
    status.conditions.as_deref().unwrap_or(&[])
}

/// A condition of type `type_` that changed at `now` (`NewReplicaSetCondition`).
pub fn new_condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> ReplicaSetCondition {
    ReplicaSetCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        last_transition_time: Some(Time(now)),
        reason: (!reason.is_empty()).then(|| reason.to_string()),
        message: (!message.is_empty()).then(|| message.to_string()),
    }
}

/// The condition of type `type_`, if present (`GetCondition`).
pub fn condition<'a>(status: &'a ReplicaSetStatus, type_: &str) -> Option<&'a ReplicaSetCondition> {
    status
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// Adds or replaces `cond`; keeps the existing one when status and reason are unchanged
/// (`SetCondition`).
pub fn set_condition(status: &mut ReplicaSetStatus, cond: ReplicaSetCondition) {
    if let Some(current) = condition(status, &cond.type_) {
        if current.status == cond.status && current.reason == cond.reason {
            return;
        }
    }
    let mut conditions: Vec<_> = conditions_or_empty(status)
        .iter()
        .filter(|c| c.type_ != cond.type_)
        .cloned()
        .collect();
    conditions.push(cond);
    status.conditions = Some(conditions);
}

/// Removes the condition of type `type_` (`RemoveCondition`).
pub fn remove_condition(status: &mut ReplicaSetStatus, type_: &str) {
    let conditions: Vec<_> = conditions_or_empty(status)
        .iter()
        .filter(|c| c.type_ != type_)
        .cloned()
        .collect();
    status.conditions = (!conditions.is_empty()).then_some(conditions);
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::ReplicaSetSpec;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus, PodTemplateSpec};
    use kube::api::ObjectMeta;
    use std::collections::BTreeMap;

    use rkcm_labels::set as labels;

    fn replica_set(replicas: i32, min_ready: i32) -> ReplicaSet {
        ReplicaSet {
            metadata: ObjectMeta {
                name: Some("foobar".into()),
                namespace: Some("default".into()),
                generation: Some(1),
                ..Default::default()
            },
            spec: Some(ReplicaSetSpec {
                replicas: Some(replicas),
                min_ready_seconds: Some(min_ready),
                template: Some(PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(labels(&[("name", "foo"), ("type", "production")])),
                        ..Default::default()
                    }),
                    spec: None,
                }),
                ..Default::default()
            }),
            status: None,
        }
    }

    fn pod(pod_labels: BTreeMap<String, String>, ready_since: Option<Timestamp>) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta {
                labels: Some(pod_labels),
                ..Default::default()
            },
            spec: None,
            status: Some(PodStatus {
                phase: Some("Running".into()),
                conditions: ready_since.map(|t| {
                    vec![PodCondition {
                        type_: "Ready".into(),
                        status: "True".into(),
                        last_transition_time: Some(Time(t)),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
        })
    }

    /// Ported from replica_set_utils_test.go `TestCalculateStatus`.
    #[test]
    fn status_counts_fully_labeled_ready_and_available_pods() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let long_ago = now - jiff::SignedDuration::from_secs(3600);
        let full = labels(&[("name", "foo"), ("type", "production")]);
        let partial = labels(&[("name", "foo")]);
        let more = labels(&[("name", "foo"), ("type", "production"), ("extra", "x")]);

        // 1 fully labelled running pod
        let s = calculate_status(&replica_set(1, 0), &[pod(full.clone(), None)], None, now);
        assert_eq!(
            (
                s.replicas,
                s.fully_labeled_replicas,
                s.ready_replicas,
                s.available_replicas
            ),
            (1, Some(1), Some(0), Some(0))
        );

        // 1 not fully labelled running pod
        let s = calculate_status(&replica_set(1, 0), &[pod(partial.clone(), None)], None, now);
        assert_eq!((s.replicas, s.fully_labeled_replicas), (1, Some(0)));

        // 2 fully labelled pods (one with extra labels) and 2 partially labelled ones
        let pods = [
            pod(full.clone(), None),
            pod(more, None),
            pod(partial.clone(), None),
            pod(partial.clone(), None),
        ];
        let s = calculate_status(&replica_set(2, 0), &pods, None, now);
        assert_eq!((s.replicas, s.fully_labeled_replicas), (4, Some(2)));

        // 1 ready pod, minReadySeconds not yet elapsed
        let s = calculate_status(
            &replica_set(1, 3600),
            &[pod(full.clone(), Some(now))],
            None,
            now,
        );
        assert_eq!((s.ready_replicas, s.available_replicas), (Some(1), Some(0)));

        // 1 ready pod, ready long enough
        let s = calculate_status(
            &replica_set(1, 10),
            &[pod(full.clone(), Some(long_ago))],
            None,
            now,
        );
        assert_eq!((s.ready_replicas, s.available_replicas), (Some(1), Some(1)));

        // minReadySeconds 0: ready is available
        let s = calculate_status(&replica_set(1, 0), &[pod(full, Some(now))], None, now);
        assert_eq!((s.ready_replicas, s.available_replicas), (Some(1), Some(1)));
    }

    /// Ported from replica_set_utils_test.go `TestCalculateStatusConditions`.
    #[test]
    fn replica_failure_is_set_on_errors_and_cleared_after() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let full = labels(&[("name", "foo"), ("type", "production")]);

        // too few pods and an error: FailedCreate
        let rs = replica_set(2, 0);
        let s = calculate_status(
            &rs,
            &[pod(full.clone(), None)],
            Some("fake manageReplicasErr"),
            now,
        );
        let c = condition(&s, REPLICA_FAILURE).expect("condition set");
        assert_eq!(
            (c.status.as_str(), c.reason.as_deref(), c.message.as_deref()),
            ("True", Some("FailedCreate"), Some("fake manageReplicasErr"))
        );

        // too many pods and an error: FailedDelete
        let rs = replica_set(0, 0);
        let s = calculate_status(
            &rs,
            &[pod(full.clone(), None)],
            Some("fake manageReplicasErr"),
            now,
        );
        assert_eq!(
            condition(&s, REPLICA_FAILURE).and_then(|c| c.reason.as_deref()),
            Some("FailedDelete")
        );

        // an existing condition with no error: removed
        let mut rs = replica_set(1, 0);
        rs.status = Some(ReplicaSetStatus {
            conditions: Some(vec![new_condition(
                REPLICA_FAILURE,
                "True",
                "FakeReason",
                "msg",
                now,
            )]),
            ..Default::default()
        });
        let s = calculate_status(&rs, &[pod(full.clone(), None)], None, now);
        assert!(condition(&s, REPLICA_FAILURE).is_none());
        assert!(s.conditions.is_none());

        // an existing condition and an error: kept as it was
        let s = calculate_status(&rs, &[pod(full, None)], Some("another error"), now);
        let c = condition(&s, REPLICA_FAILURE).unwrap();
        assert_eq!(c.reason.as_deref(), Some("FakeReason"));
    }

    /// Ported from replica_set_test.go `TestSetCondition` and `TestRemoveCondition`.
    #[test]
    fn conditions_are_set_replaced_and_removed_by_type() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let pull = new_condition("ImagePullBackOff", "True", "NonExistentImage", "", now);
        let failure = new_condition(REPLICA_FAILURE, "True", "OtherFailure", "", now);
        let failure2 = new_condition(REPLICA_FAILURE, "True", "AnotherFailure", "", now);

        let mut s = ReplicaSetStatus::default();
        set_condition(&mut s, failure.clone());
        assert_eq!(s.conditions, Some(vec![failure.clone()]));

        let mut s = ReplicaSetStatus {
            conditions: Some(vec![pull.clone()]),
            ..Default::default()
        };
        set_condition(&mut s, failure.clone());
        assert_eq!(s.conditions, Some(vec![pull.clone(), failure.clone()]));

        let mut s = ReplicaSetStatus {
            conditions: Some(vec![failure.clone()]),
            ..Default::default()
        };
        set_condition(&mut s, failure2.clone());
        assert_eq!(s.conditions, Some(vec![failure2]));

        let mut s = ReplicaSetStatus::default();
        remove_condition(&mut s, REPLICA_FAILURE);
        assert_eq!(s.conditions, None);

        let mut s = ReplicaSetStatus {
            conditions: Some(vec![failure.clone()]),
            ..Default::default()
        };
        remove_condition(&mut s, "ImagePullBackOff");
        assert_eq!(s.conditions, Some(vec![failure]));
    }

    #[test]
    fn status_is_written_only_when_it_changed_or_the_generation_is_new() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let mut rs = replica_set(1, 0);
        let s = calculate_status(&rs, &[], None, now);
        assert!(
            status_needs_update(&rs, &s),
            "generation 1 not observed yet"
        );
        let mut written = s.clone();
        written.observed_generation = Some(1);
        rs.status = Some(written);
        let s = calculate_status(&rs, &[], None, now);
        assert!(!status_needs_update(&rs, &s));
        let s = calculate_status(&rs, &[pod(BTreeMap::new(), None)], None, now);
        assert!(status_needs_update(&rs, &s));
    }
}
