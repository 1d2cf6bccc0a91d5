//! Pods on a node that is not ready are marked not ready: their Ready condition becomes False
//! (`controllerutil.MarkPodsNotReady`).

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The pod's status with its Ready condition False, or `None` when the pod is not on `node_name`,
/// has no Ready condition, or it is False already. The transition time moves only when the
/// status changes (`UpdatePodCondition`).
pub fn not_ready_status(pod: &Pod, node_name: &str, now: Timestamp) -> Option<PodStatus> {
    let on_node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node_name);
    if !on_node {
        return None;
    }
    let mut status = pod.status.clone()?;
    let ready = status
        .conditions
        .as_mut()?
        .iter_mut()
        .find(|c| c.type_ == "Ready")?;
    if ready.status == "False" {
        return None;
    }
    ready.status = "False".into();
    ready.last_transition_time = Some(Time(now));
    Some(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodSpec};

    fn pod(node: &str, ready: Option<&str>) -> Pod {
        Pod {
            spec: Some(PodSpec {
                node_name: Some(node.into()),
                ..PodSpec::default()
            }),
            status: Some(PodStatus {
                conditions: ready.map(|s| {
                    vec![
                        PodCondition {
                            type_: "PodScheduled".into(),
                            status: "True".into(),
                            ..PodCondition::default()
                        },
                        PodCondition {
                            type_: "Ready".into(),
                            status: s.into(),
                            ..PodCondition::default()
                        },
                    ]
                }),
                ..PodStatus::default()
            }),
            ..Pod::default()
        }
    }

    // TestMonitorNodeHealthMarkPodsNotReady: pods of a node gone unknown lose Ready.
    #[test]
    fn a_ready_pod_on_the_node_is_marked_not_ready() {
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let status = not_ready_status(&pod("node0", Some("True")), "node0", now).unwrap();
        let conditions = status.conditions.unwrap();
        assert_eq!(conditions[0].status, "True");
        assert_eq!(conditions[1].status, "False");
        assert_eq!(conditions[1].last_transition_time, Some(Time(now)));
    }

    #[test]
    fn pods_elsewhere_already_not_ready_or_without_ready_are_left_alone() {
        let now = Timestamp::UNIX_EPOCH;
        assert!(not_ready_status(&pod("node1", Some("True")), "node0", now).is_none());
        assert!(not_ready_status(&pod("node0", Some("False")), "node0", now).is_none());
        assert!(not_ready_status(&pod("node0", None), "node0", now).is_none());
    }
}
