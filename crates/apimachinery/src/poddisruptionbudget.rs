//! The `DisruptionAllowed` condition of a PodDisruptionBudget, which the disruption controller
//! and the eviction subresource both keep (`k8s.io/component-helpers/apps/poddisruptionbudget`
//! and apimachinery's `meta.SetStatusCondition`).

use jiff::Timestamp;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// `policy.DisruptionAllowedCondition`.
pub const DISRUPTION_ALLOWED_CONDITION: &str = "DisruptionAllowed";
/// `policy.SyncFailedReason`: the controller could not compute the budget's status.
pub const SYNC_FAILED_REASON: &str = "SyncFailed";
/// `policy.SufficientPodsReason`: at least one disruption is allowed.
pub const SUFFICIENT_PODS_REASON: &str = "SufficientPods";
/// `policy.InsufficientPodsReason`: no disruption is allowed.
pub const INSUFFICIENT_PODS_REASON: &str = "InsufficientPods";

/// `now` truncated to whole seconds, as a `metav1.Time` is serialized.
pub fn to_seconds(now: Timestamp) -> Timestamp {
    Timestamp::from_second(now.as_second()).unwrap_or(now)
}

/// Sets `new` in `conditions` (`meta.SetStatusCondition`): a condition of a new type is appended;
/// an existing one takes the new status, reason, message and observed generation, and its
/// transition time moves to `now` only when the status changes. Returns whether anything changed.
pub fn set_status_condition(
    conditions: &mut Vec<Condition>,
    new: Condition,
    now: Timestamp,
) -> bool {
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == new.type_) else {
        let mut new = new;
        if new.last_transition_time.0 == Timestamp::UNIX_EPOCH {
            new.last_transition_time = Time(to_seconds(now));
        }
        conditions.push(new);
        return true;
    };
    let mut changed = false;
    if existing.status != new.status {
        existing.status = new.status;
        existing.last_transition_time = if new.last_transition_time.0 == Timestamp::UNIX_EPOCH {
            Time(to_seconds(now))
        } else {
            new.last_transition_time
        };
        changed = true;
    }
    if existing.reason != new.reason {
        existing.reason = new.reason;
        changed = true;
    }
    if existing.message != new.message {
        existing.message = new.message;
        changed = true;
    }
    if existing.observed_generation.unwrap_or(0) != new.observed_generation.unwrap_or(0) {
        existing.observed_generation = new.observed_generation;
        changed = true;
    }
    changed
}

/// A `DisruptionAllowed` condition with `status`, `reason` and `message`, observed at the
/// budget's `status.observedGeneration`; its transition time is left for
/// [`set_status_condition`] to fill in.
pub fn disruption_allowed_condition(
    pdb: &PodDisruptionBudget,
    status: &str,
    reason: &str,
    message: String,
) -> Condition {
    let observed = pdb.status.as_ref().and_then(|s| s.observed_generation);
    Condition {
        type_: DISRUPTION_ALLOWED_CONDITION.to_string(),
        status: status.to_string(),
        reason: reason.to_string(),
        message,
        observed_generation: observed.filter(|g| *g != 0),
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
    }
}

/// Sets the `DisruptionAllowed` condition from `status.disruptionsAllowed`
/// (`UpdateDisruptionAllowedCondition`): `True`/`SufficientPods` when it is positive,
/// `False`/`InsufficientPods` otherwise.
pub fn update_disruption_allowed_condition(pdb: &mut PodDisruptionBudget, now: Timestamp) {
    let allowed = pdb.status.as_ref().map_or(0, |s| s.disruptions_allowed);
    let condition = if allowed > 0 {
        disruption_allowed_condition(pdb, "True", SUFFICIENT_PODS_REASON, String::new())
    } else {
        disruption_allowed_condition(pdb, "False", INSUFFICIENT_PODS_REASON, String::new())
    };
    let status = pdb.status.get_or_insert_with(Default::default);
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    set_status_condition(conditions, condition, now);
}

/// Whether the `DisruptionAllowed` condition matches `status.disruptionsAllowed` and the
/// status observed the budget's generation (`ConditionsAreUpToDate`).
pub fn conditions_are_up_to_date(pdb: &PodDisruptionBudget) -> bool {
    let Some(status) = pdb.status.as_ref() else {
        return false;
    };
    let Some(cond) = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == DISRUPTION_ALLOWED_CONDITION)
    else {
        return false;
    };
    if status.observed_generation.unwrap_or(0) != pdb.metadata.generation.unwrap_or(0) {
        return false;
    }
    if status.disruptions_allowed > 0 {
        cond.status == "True" && cond.reason == SUFFICIENT_PODS_REASON
    } else {
        cond.status == "False" && cond.reason == INSUFFICIENT_PODS_REASON
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus;

    fn ts(s: &str) -> Timestamp {
        s.parse().expect("a timestamp")
    }

    fn pdb(allowed: i32, generation: i64, observed: i64) -> PodDisruptionBudget {
        let mut pdb = PodDisruptionBudget::default();
        pdb.metadata.generation = Some(generation);
        pdb.status = Some(PodDisruptionBudgetStatus {
            disruptions_allowed: allowed,
            observed_generation: Some(observed),
            ..Default::default()
        });
        pdb
    }

    #[test]
    fn the_condition_follows_disruptions_allowed_and_moves_its_time_only_on_a_status_change() {
        let t0 = ts("2025-01-01T00:00:00.700Z");
        let mut p = pdb(1, 2, 2);
        update_disruption_allowed_condition(&mut p, t0);
        let c = &p.status.as_ref().unwrap().conditions.as_ref().unwrap()[0];
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("True", "SufficientPods")
        );
        assert_eq!(c.last_transition_time.0, ts("2025-01-01T00:00:00Z"));
        assert_eq!(c.observed_generation, Some(2));
        assert!(conditions_are_up_to_date(&p));

        let t1 = ts("2025-01-01T00:01:00Z");
        update_disruption_allowed_condition(&mut p, t1);
        let c = &p.status.as_ref().unwrap().conditions.as_ref().unwrap()[0];
        assert_eq!(c.last_transition_time.0, ts("2025-01-01T00:00:00Z"));

        p.status.as_mut().unwrap().disruptions_allowed = 0;
        assert!(!conditions_are_up_to_date(&p));
        update_disruption_allowed_condition(&mut p, t1);
        let c = &p.status.as_ref().unwrap().conditions.as_ref().unwrap()[0];
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", "InsufficientPods")
        );
        assert_eq!(c.last_transition_time.0, t1);
        assert!(conditions_are_up_to_date(&p));
    }

    #[test]
    fn conditions_are_stale_without_the_condition_or_with_an_unobserved_generation() {
        assert!(!conditions_are_up_to_date(&pdb(0, 1, 1)));
        let mut p = pdb(0, 2, 1);
        update_disruption_allowed_condition(&mut p, ts("2025-01-01T00:00:00Z"));
        assert!(!conditions_are_up_to_date(&p));
        let mut failed = pdb(0, 1, 1);
        let cond =
            disruption_allowed_condition(&failed, "False", SYNC_FAILED_REASON, "boom".into());
        let status = failed.status.as_mut().unwrap();
        set_status_condition(
            status.conditions.get_or_insert_with(Vec::new),
            cond,
            ts("2025-01-01T00:00:00Z"),
        );
        assert!(!conditions_are_up_to_date(&failed));
    }
}
