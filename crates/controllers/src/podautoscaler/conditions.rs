//! HorizontalPodAutoscaler conditions (`setCondition`/`setConditionInList` of
//! `pkg/controller/podautoscaler/horizontal.go`).

use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscalerCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// `AbleToScale`.
pub const ABLE_TO_SCALE: &str = "AbleToScale";
/// `ScalingActive`.
pub const SCALING_ACTIVE: &str = "ScalingActive";
/// `ScalingLimited`.
pub const SCALING_LIMITED: &str = "ScalingLimited";

/// Sets condition `type_` in `list` (added when absent); `lastTransitionTime` moves only when the
/// status changes.
pub fn set_condition(
    list: &mut Vec<HorizontalPodAutoscalerCondition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: impl Into<String>,
    now: Timestamp,
) {
    let status = if status { "True" } else { "False" };
    let i = match list.iter().position(|c| c.type_ == type_) {
        Some(i) => i,
        None => {
            list.push(HorizontalPodAutoscalerCondition {
                type_: type_.into(),
                ..HorizontalPodAutoscalerCondition::default()
            });
            list.len() - 1
        }
    };
    let c = &mut list[i];
    if c.status != status {
        c.last_transition_time = Some(Time(now));
    }
    c.status = status.into();
    c.reason = Some(reason.into());
    c.message = Some(message.into());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_moves_only_with_the_status() {
        let t1: Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
        let t2: Timestamp = "2026-01-01T00:01:00Z".parse().expect("time");
        let mut list = Vec::new();
        set_condition(&mut list, ABLE_TO_SCALE, true, "A", "a", t1);
        set_condition(&mut list, ABLE_TO_SCALE, true, "B", "b", t2);
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].last_transition_time, Some(Time(t1)));
        assert_eq!(list[0].reason.as_deref(), Some("B"));
        set_condition(&mut list, ABLE_TO_SCALE, false, "C", "c", t2);
        assert_eq!(list[0].last_transition_time, Some(Time(t2)));
    }
}
